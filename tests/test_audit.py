"""The audit log (every write path, never content, rotation, many processes) and provenance."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import SAMPLE, commit_all_as, git, write

from memrouter import Router
from memrouter.cli import main
from memrouter.core.errors import InvalidInput
from memrouter.ops.audit import MemoryAudit, acting_as, read_audit
from memrouter.team.audit import AuditLog

SECRET_WORDS = "zebra-quartz-lantern"  # in every body written below: must never reach the log


@pytest.fixture
def project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    root = project / ".serena" / "memories"
    for name, text in SAMPLE.items():
        write(root, name, text)
    (project / ".gitignore").write_text(".memrouter/\n")
    commit_all_as(project, "Grace", "grace@example.com")
    return project


def lines(router: Router) -> list[dict[str, object]]:
    return [json.loads(line) for line in (router.config.index_dir / "audit.jsonl").read_text().splitlines()]


def test_every_write_path_is_a_line_without_the_content(project: Path) -> None:
    with Router.open(root=project / ".serena" / "memories", watch=False) as router:
        with acting_as("agent:a1"):
            saved = router.save(f"# Queue\n\nThe queue {SECRET_WORDS} drains hourly.", "ops/queue")
        edited, _ = router.edit("ops/queue", "hourly", "daily")
        moved, _ = router.rename("ops/queue", "ops/jobs")
        router.lifecycle.start("s1", weeks=2, goal=None)
        sprint_note = router.save(f"# Finding\n\nSprint {SECRET_WORDS} finding.", kind="research")
        promoted = router.promote(sprint_note.name, reason="it held up")
        router.invalidate("ci/flaky-tests", "replaced by the new policy")
        router.lifecycle.close()
        router.delete("ops/jobs", "no longer used")
        logged = lines(router)
    ops = [(line["op"], line["name"]) for line in logged]
    assert ops[:4] == [("save", "ops/queue"), ("edit", "ops/queue"), ("rename", "ops/jobs"), ("rename", "ops/queue")]
    assert ("promote", promoted.target) in ops and ("invalidate", "ci/flaky-tests") in ops
    assert any(op == "sprint_start" for op, _ in ops) and any(op == "sprint_close" for op, _ in ops)
    assert ops[-1] == ("delete", "ops/jobs")
    first, second = logged[0], logged[1]
    assert (first["who"], first.get("before"), first["after"], first["verdict"]) == ("agent:a1", None, saved.hash, "ok")
    assert (second["who"], second["before"], second["after"]) == ("user:Grace", saved.hash, edited.hash)
    assert logged[-1]["before"] == moved.hash and "after" not in logged[-1]
    text = (router.config.index_dir / "audit.jsonl").read_text()
    assert SECRET_WORDS not in text and "drains" not in text


def test_audit_reads_filter_by_name_actor_and_time(project: Path) -> None:
    with Router.open(root=project / ".serena" / "memories", watch=False) as router:
        with acting_as("agent:a1"):
            router.save("# One\n\nfirst", "one")
        router.save("# Two\n\nsecond", "two")
        assert [e.name for e in router.audit(actor="agent:a1")] == ["one"]
        assert [e.actor for e in router.audit(name="two")] == ["user:Grace"]
        assert len(router.audit(since="2000-01-01")) == 2 and router.audit(since="2999-01-01T00:00") == []
        assert [e.name for e in router.audit(limit=1)] == ["two"]
        with pytest.raises(InvalidInput, match="since"):
            router.audit(since="yesterday")
    runner = CliRunner()
    base = ["--root", str(project / ".serena" / "memories")]
    result = runner.invoke(main, [*base, "audit", "--actor", "agent:a1", "--format", "json"], catch_exceptions=False)
    assert [e["name"] for e in json.loads(result.output)["entries"]] == ["one"]
    text = runner.invoke(main, [*base, "audit", "--name", "two"], catch_exceptions=False).output
    assert "user:Grace  save  two  - -> " in text


def test_the_log_rotates_by_size_and_reads_across_the_rotation(tmp_path: Path) -> None:
    audit = MemoryAudit(tmp_path, None, max_bytes=2_000)
    for number in range(60):
        audit.record("save", f"m{number:02d}", None, f"{number:064x}", "ok")
    current, rotated = tmp_path / "audit.jsonl", tmp_path / "audit.jsonl.1"
    assert current.stat().st_size <= 2_000 and 0 < rotated.stat().st_size <= 2_000
    names = [entry.name for entry in read_audit(tmp_path, limit=1_000)]
    assert names == sorted(names) and names[-1] == "m59" and len(names) < 60  # the oldest are gone


def _append_many(path: str, worker: int) -> None:
    log = AuditLog(Path(path), max_bytes=20_000)
    for number in range(300):
        log.append(float(number), f"agent:w{worker}", "save", name=f"w{worker}-{number}", after="f" * 64)
    log.close()


def test_many_processes_append_whole_lines_through_rotations(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_append_many, args=(str(path), n)) for n in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(60)
        assert process.exitcode == 0
    rotated = path.with_name("audit.jsonl.1")
    assert rotated.exists()  # 1,200 lines of ~150 bytes went past 20 KB several times
    for part in (rotated, path):
        for line in part.read_text().splitlines():
            record = json.loads(line)  # every line whole: never two interleaved
            assert record["name"].startswith(record["who"].removeprefix("agent:") + "-")
    last = {json.loads(line)["who"]: json.loads(line)["name"] for line in path.read_text().splitlines()}
    assert all(name.endswith("-299") for name in last.values())  # each worker's last line is in the live file


def test_many_threads_share_one_log_without_losing_or_blocking(tmp_path: Path) -> None:
    """The threads of one server append through one ``AuditLog`` from its very first line (opened lazily)."""
    import threading
    import time

    from memrouter.team.audit import AuditLog

    for attempt in range(5):  # the first append races to open the file: try it a few times
        path = tmp_path / f"audit-{attempt}.jsonl"
        log = AuditLog(path, max_bytes=4_000)
        start = threading.Barrier(16)

        def work(worker: int, log: AuditLog = log, start: threading.Barrier = start) -> None:
            start.wait()
            for number in range(50):
                log.append(float(number), f"agent:t{worker}", "save", name=f"t{worker}-{number}")

        threads = [threading.Thread(target=work, args=(n,), daemon=True) for n in range(16)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        assert not any(thread.is_alive() for thread in threads), "an append never returned"
        lines = [line for part in (path.with_name(path.name + ".1"), path) if part.exists()
                 for line in part.read_text().splitlines()]  # fmt: skip
        assert all(json.loads(line)["op"] == "save" for line in lines) and log.failures == 0
        log.close()


def test_cli_save_stamps_the_author_and_keeps_one_already_there(project: Path) -> None:
    runner = CliRunner()
    base = ["--root", str(project / ".serena" / "memories")]

    def save(*args: str) -> dict[str, object]:
        result = runner.invoke(main, [*base, "save", *args, "--format", "json"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return dict(json.loads(result.output))

    mine = save("mine", "--content", "# Mine\n\nwritten by a person", "--source", "ADR-001")
    assert mine["author"] == "user:Grace" and mine["source"] == "ADR-001" and str(mine["created"]).endswith("Z")
    bot = save("bot", "--content", "# Bot\n\nwritten by an agent", "--agent", "claude-code")
    assert bot["author"] == "agent:claude-code"
    kept = save("kept", "--content", "---\nauthor: user:linus\n---\n# Kept\n\ntext", "--agent", "x")
    assert kept["author"] == "user:linus"
    again = save("mine", "--content", "# Mine\n\nrewritten by an agent", "--agent", "other")
    assert again["author"] == "user:Grace" and again["created"] == mine["created"]  # replaced, not re-authored


def test_provenance_of_a_hand_edited_file_comes_from_git(project: Path) -> None:
    root = project / ".serena" / "memories"
    with Router.open(root=root, watch=False) as router:
        by_hand = router.provenance("ci/flaky-tests")
        assert by_hand.author == "user:Grace" and by_hand.created and by_hand.updated is None
        assert set(by_hand.from_git) == {"author", "created"}
        write(root, "ci/flaky-tests", SAMPLE["ci/flaky-tests"] + "\nAnd log the seed.\n")
        git(project, "-c", "user.name=Hopper", "commit", "-qam", "edit by hand")
        edited = router.provenance("ci/flaky-tests")
        assert edited.author == "user:Grace" and edited.updated and edited.updated >= edited.created
        write(root, "loose", "---\nauthor: agent:z\nconfidence: 0.4\n---\n# Loose\n\nnot committed\n")
        loose = router.provenance("loose")
        assert (loose.author, loose.created, loose.confidence, loose.from_git) == ("agent:z", None, 0.4, ())
        [hit] = router.search("adr-001 postgresql orders", limit=1, mode="lexical")
        assert hit.provenance is not None and hit.provenance.source == "ADR-001"
        assert hit.to_dict()["provenance"]["source"] == "ADR-001"
