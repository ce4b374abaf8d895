"""Faults with the real Pixeltable, memrouter run as the CLI in new processes: killed mid-sync, the store
deleted, its PostgreSQL killed and restarted, a router whose Pixeltable goes away, and one whose Pixeltable cannot
set its PostgreSQL up."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from conftest import (
    PixeltableHome,
    inspect_table,
    make_project,
    memrouter,
    pixeltable_toml,
    start_memrouter,
    subprocess_env,
    synced_count,
)

CORPUS = "ai-agents-466"
MEMORIES = 120  # the first of the corpus: enough to stop a sync part way


def converged(home: PixeltableHome, root: Path, table: str, names: set[str]) -> dict[str, Any]:
    """Sync again until done; then one live row per memory, the mapping right, and a re-sync writes nothing."""
    code, answer = memrouter(root, "sync")
    assert code == 0, answer
    code, freshness = memrouter(root, "validate", "--remote")  # one backend: its report alone
    assert code == 0, freshness
    assert (freshness["in_sync"], freshness["missing"], freshness["orphaned"]) == (len(names), 0, 0), freshness
    held = inspect_table(home.path, table)
    assert held is not None and set(held["names"]) == names
    assert all(len(ids) == 1 for ids in held["names"].values()), {k: v for k, v in held["names"].items() if len(v) > 1}
    code, again = memrouter(root, "sync")
    (quiet,) = again["backends"]
    assert code == 0 and quiet["skipped"] == len(names) and quiet["created"] == quiet["updated"] == 0, quiet
    after = inspect_table(home.path, table)
    assert after is not None and after["version"] == held["version"]  # nothing was written
    return answer


def memory_names(root: Path) -> set[str]:
    return {path.relative_to(root).with_suffix("").as_posix() for path in root.rglob("*.md")}


def wait_for_progress(root: Path, process: subprocess.Popen[str], at_least: int) -> None:
    deadline = time.monotonic() + 300
    while synced_count(root) < at_least:
        assert process.poll() is None, f"the sync ended before it could be stopped: {process.communicate()}"
        assert time.monotonic() < deadline, "no progress"
        time.sleep(0.05)


def test_a_sync_killed_mid_run_converges_on_the_next(own_home: PixeltableHome, tmp_path: Path) -> None:
    table = f"t{uuid.uuid4().hex[:8]}.memories"
    root = make_project(tmp_path, pixeltable_toml(own_home.path, table), corpus=CORPUS, limit=MEMORIES)
    names = memory_names(root)
    process = start_memrouter(root, "sync")
    wait_for_progress(root, process, 30)
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=60)
    assert 30 <= synced_count(root) < len(names)
    answer = converged(own_home, root, table, names)
    (report,) = answer["backends"]
    assert report["created"] + report["skipped"] == len(names) and report["skipped"] >= 30


def test_a_deleted_store_is_filled_again_by_the_next_sync(own_home: PixeltableHome, tmp_path: Path) -> None:
    table = f"t{uuid.uuid4().hex[:8]}.memories"
    root = make_project(tmp_path, pixeltable_toml(own_home.path, table), corpus=CORPUS, limit=40)
    names = memory_names(root)
    code, first = memrouter(root, "sync")
    assert code == 0 and first["backends"][0]["created"] == len(names)
    old = own_home.postmaster()
    assert old is not None
    own_home.stop()
    shutil.rmtree(own_home.path)  # the data folder is gone; the mapping in the index says all is there
    code, local = memrouter(root, "validate")
    assert code == 0 and local["in_sync"] == len(names)  # the local view cannot tell
    answer = converged(own_home, root, table, names)
    (report,) = answer["backends"]
    assert report["created"] == len(names) and sorted(report["restored"]) == sorted(names)


def test_postgres_killed_mid_sync_then_restarted_by_the_next_run(own_home: PixeltableHome, tmp_path: Path) -> None:
    table = f"t{uuid.uuid4().hex[:8]}.memories"
    root = make_project(tmp_path, pixeltable_toml(own_home.path, table), corpus=CORPUS, limit=MEMORIES)
    names = memory_names(root)
    process = start_memrouter(root, "sync")
    wait_for_progress(root, process, 30)
    killed = own_home.kill_postmaster()
    out, err = process.communicate(timeout=300)
    assert process.returncode == 3, (process.returncode, err[-2000:])  # "unavailable": the run stopped
    (report,) = json.loads(out)["backends"]
    assert report["error"] and report["created"] < len(names), report
    converged(own_home, root, table, names)  # the next process started PostgreSQL again, with recovery
    assert own_home.postmaster() not in (None, killed)


DEGRADE = """
import json, os, signal, sys, time
from memrouter import Router
router = Router.open(root=sys.argv[1], watch=False)
backend = router.backend("pixeltable")
out = {}
from datetime import datetime, timezone
backend.call(lambda store: store.table.insert([{"id": "team-note-1", "title": "Wombat runbook", "content": "The wombat "
    "cluster restores from quokka dumps.", "content_hash": "x", "obsolete": False, "synced_at": datetime.now(timezone.utc)}]))
out["up"] = [h.source for h in router.search(sys.argv[2], limit=10, mode="lexical")]
out["canonical"] = [h.name for h in router.search(sys.argv[2], limit=10, mode="lexical", origin="canonical")]
pid = int(open(os.path.join(sys.argv[3], "pgdata", "postmaster.pid")).read().split()[0])
os.kill(pid, signal.SIGKILL)
while True:
    try:
        os.kill(pid, 0); time.sleep(0.05)
    except ProcessLookupError:
        break
out["first_down"] = [h.name for h in router.search(sys.argv[2], limit=10, mode="lexical")]
backend.health.check(force=True)
probes = backend.health.probes
out["down"] = [[h.name for h in router.search(sys.argv[2], limit=10, mode="lexical")] for _ in range(5)]
out["probes_after"] = backend.health.probes - probes
out["status"] = router.status()["backends"][0]
out["sync_error"] = router.sync()[0].error
router.close()
print(json.dumps(out, default=str))
"""


def test_a_router_whose_pixeltable_dies_answers_from_the_files(own_home: PixeltableHome, tmp_path: Path) -> None:
    table = f"t{uuid.uuid4().hex[:8]}.memories"
    root = make_project(tmp_path, pixeltable_toml(own_home.path, table), corpus=CORPUS, limit=40)
    code, _ = memrouter(root, "sync")
    assert code == 0
    # lexical, on a row only Pixeltable holds: the files have no hit, so the augmenter is asked and adds it
    query = "wombat quokka dumps"
    done = subprocess.run([sys.executable, "-c", DEGRADE, str(root), query, str(own_home.path)], capture_output=True,
                          text=True, env=subprocess_env(), timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert "pixeltable" in seen["up"] and seen["first_down"] == seen["canonical"]
    assert all(names == seen["canonical"] for names in seen["down"])
    assert seen["probes_after"] == 0  # the failure is cached: no probe per search
    status = seen["status"]
    assert status["available"] is False and "stopped" in (status["last_error"] or ""), status
    assert seen["sync_error"] and "unavailable" in seen["sync_error"]


UNSTARTABLE = """
import json, sys
from memrouter import Router
router = Router.open(root=sys.argv[1], watch=False)
out = {"syncs": []}
for _ in range(2):
    report = router.sync()[0]
    out["syncs"].append({"error": report.error, "failed": sorted(set(report.failed.values())), "created": report.created})
out["found"] = [h.name for h in router.search(sys.argv[2], limit=5, mode="lexical")]
out["status"] = router.status()["backends"][0]
router.close()
print(json.dumps(out, default=str))
"""


def test_a_postgres_that_cannot_be_set_up_is_reported_with_its_own_message_at_every_call(
    own_home: PixeltableHome, tmp_path: Path
) -> None:
    # a data folder initdb refuses (not empty, no cluster): Pixeltable cannot start in the process, and never
    # will in that process; every call says why, in PostgreSQL's words, and the files still answer
    (own_home.path / "pgdata").mkdir()
    (own_home.path / "pgdata" / "left-behind").write_text("not a cluster", encoding="utf-8")
    table = f"t{uuid.uuid4().hex[:8]}.memories"
    root = make_project(tmp_path, pixeltable_toml(own_home.path, table), memories={"ops/wombat": "The wombat runbook."})
    done = subprocess.run([sys.executable, "-c", UNSTARTABLE, str(root), "wombat runbook"], capture_output=True,
                          text=True, env=subprocess_env(), timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    for sync in seen["syncs"]:
        said = " ".join([sync["error"] or "", *sync["failed"]])
        assert sync["created"] == [] and said, sync
        assert "initdb exited with status 1" in said and "exists but is not empty" in said, said
        assert "AssertionError" not in said, said
    assert seen["found"] == ["ops/wombat"]
    assert "exists but is not empty" in (seen["status"]["last_error"] or ""), seen["status"]
    assert (root / "ops" / "wombat.md").read_text(encoding="utf-8") == "The wombat runbook."
