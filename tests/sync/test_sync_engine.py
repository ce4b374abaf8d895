"""One-way sync against the fake Forgetful over HTTP: create, skip, update, split, delete, rename, crash."""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path

import pytest
from helpers import SAMPLE
from sync.synchelp import git, http_toml, live_by_context, make_project, mapping, remote_memories

from memrouter import Router
from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.external.sync.engine import SyncReport, draft_for
from memrouter.testing.servers import FakeServer, start_http

LONG = "# Long runbook\n\n" + "\n\n".join(f"## Step {i}\n\n" + f"do thing {i} carefully " * 40 for i in range(6))


@pytest.fixture
def project(tmp_path: Path, fake_http: FakeServer) -> Path:
    return make_project(tmp_path, http_toml(fake_http.url))


def open_router(project: Path) -> Router:
    return Router.open(root=project / ".serena" / "memories", watch=False)


def test_sync_creates_once_then_skips_then_updates_changed(project: Path, inspector: ForgetfulBackend) -> None:
    with open_router(project) as router:
        first = router.sync()[0]
        assert first.ok and len(first.created) == 6 and first.skipped == 0
        live = live_by_context(inspector, project)
        assert sorted(live) == sorted(f"memrouter:{name}" for name in first.created)
        assert all(len(ids) == 1 for ids in live.values())

        again = router.sync()[0]
        assert again.ok and again.created == [] and again.updated == [] and again.skipped == 6
        assert again.remote_calls == 0

        path = project / ".serena" / "memories" / "ci" / "flaky-tests.md"
        path.write_text(path.read_text() + "\nAlso pin the browser version.\n")
        changed = router.sync()[0]
        assert changed.updated == ["ci/flaky-tests"] and changed.skipped == 5
        remote_id = mapping(router).records("forgetful")["ci/flaky-tests"].remote_ids[0]
        remote = inspector.get(remote_id)
        assert remote.content == path.read_text() and remote.hash == router.get("ci/flaky-tests").hash
        assert remote.context == "memrouter:ci/flaky-tests"

        forced = router.sync(force=True)[0]
        assert len(forced.updated) == 6 and forced.skipped == 0
    assert len(remote_memories(inspector, project)) == 6  # updates never duplicate


def test_dry_run_says_what_would_happen_and_changes_nothing(project: Path, inspector: ForgetfulBackend) -> None:
    with open_router(project) as router:
        report = router.sync(dry_run=True)[0]
        assert len(report.created) == 6 and report.dry_run
        assert remote_memories(inspector, project) == []
        assert mapping(router).records("forgetful") == {}


def test_long_memory_is_split_into_linked_parts_tracked_as_a_group(project: Path, inspector: ForgetfulBackend) -> None:
    path = project / ".serena" / "memories" / "ops" / "deep" / "runbook.md"
    path.parent.mkdir(parents=True)
    path.write_text(LONG)
    with open_router(project) as router:
        assert router.sync()[0].ok
        ids = mapping(router).records("forgetful")["ops/deep/runbook"].remote_ids
        assert len(ids) > 1
        parts = [inspector.get(i) for i in ids]
        assert "".join(p.content for p in parts) == LONG
        assert all(len(p.content) <= 2000 for p in parts)
        assert parts[0].title.startswith("Long runbook (part 1/")
        assert set(parts[0].linked_ids) == set(ids[1:])

        path.write_text("# Long runbook\n\nNow short.\n")
        report = router.sync()[0]
        assert report.updated == ["ops/deep/runbook"]
        record = mapping(router).records("forgetful")["ops/deep/runbook"]
        assert record.remote_ids == ids[:1]
        assert all(inspector.get(i).is_obsolete for i in ids[1:])


def test_delete_marks_obsolete_with_the_reason(project: Path, inspector: ForgetfulBackend) -> None:
    with open_router(project) as router:
        router.sync()
        remote_id = mapping(router).records("forgetful")["incidents/flaky-tests"].remote_ids[0]
        (project / ".serena" / "memories" / "incidents" / "flaky-tests.md").unlink()
        report = router.sync()[0]
        assert report.obsoleted == ["incidents/flaky-tests"]
        remote = inspector.get(remote_id)
        assert remote.is_obsolete and "incidents/flaky-tests" in (remote.obsolete_reason or "")
        assert "incidents/flaky-tests" not in mapping(router).records("forgetful")
        assert router.validate()[0].orphaned == 0


def test_git_rename_moves_the_mapping_without_duplicates(project: Path, inspector: ForgetfulBackend) -> None:
    with open_router(project) as router:
        router.sync()
        before = mapping(router).records("forgetful")["ci/flaky-tests"].remote_ids
        (project / ".serena" / "memories" / "ci" / "old").mkdir()
        git(project, "mv", ".serena/memories/ci/flaky-tests.md", ".serena/memories/ci/old/flaky-ci.md")
        report = router.sync(changes="staged")[0]
        assert report.renamed == [("ci/flaky-tests", "ci/old/flaky-ci")]
        records = mapping(router).records("forgetful")
        assert "ci/flaky-tests" not in records
        assert records["ci/old/flaky-ci"].remote_ids == before
        assert inspector.get(before[0]).context == "memrouter:ci/old/flaky-ci"
    assert len(remote_memories(inspector, project)) == 6


def test_rename_without_git_is_found_by_hash(project: Path, inspector: ForgetfulBackend) -> None:
    root = project / ".serena" / "memories"
    with open_router(project) as router:
        router.sync()
        before = mapping(router).records("forgetful")["plain-no-heading"].remote_ids
        (root / "notes").mkdir()
        (root / "plain-no-heading.md").rename(root / "notes" / "deploy.md")
        report = router.sync()[0]
        assert report.renamed == [("plain-no-heading", "notes/deploy")]
        assert report.obsoleted == [] and report.created == []
        assert mapping(router).records("forgetful")["notes/deploy"].remote_ids == before
    assert len(remote_memories(inspector, project)) == 6


def test_crash_after_remote_create_before_state_write_converges(project: Path, inspector: ForgetfulBackend) -> None:
    """The exact state a process killed between the remote create and the local write leaves."""
    root = project / ".serena" / "memories"
    (root / "ops").mkdir()
    (root / "ops" / "runbook.md").write_text(LONG)
    with open_router(project) as router:
        router.sync(dry_run=True)  # the index knows the files
        backend = router.backend("forgetful")
        for name in ("ci/flaky-tests", "ops/runbook"):
            memory = router.get(name)
            mapping(router).set_pending("forgetful", name, memory.hash)
            draft = draft_for(memory, project_dir=project, source_repo=project.name)
            from memrouter.external.backends.split import split_content

            first_part = split_content(memory.text, 2000)[0]
            title = draft.title if first_part == memory.text else f"{draft.title} (part 1/3)"
            backend.upsert(MemoryDraft(title=title, content=first_part, context=draft.context,
                                       source_repo=project.name))  # fmt: skip
        assert router.validate()[0].missing == 7  # nothing recorded: 6 samples + the runbook
        report = router.sync()[0]
        assert report.ok
        assert sorted(report.recovered) == ["ci/flaky-tests", "ops/runbook"]
        live = live_by_context(inspector, project)
        assert all(len(ids) == 1 for ctx, ids in live.items() if ctx != "memrouter:ops/runbook")
        parts = mapping(router).records("forgetful")["ops/runbook"].remote_ids
        assert sorted(live["memrouter:ops/runbook"]) == sorted(int(i) for i in parts)
        assert router.validate()[0].in_sync == 7
        assert router.sync()[0].skipped == 7


def test_server_killed_mid_sync_then_rerun_converges(tmp_path: Path) -> None:
    """A real crash of the service in the middle of a run; the re-run creates no duplicates."""
    db = str(tmp_path / "forgetful.sqlite")
    memories = {f"topic-{i % 4}/note-{i:03d}": f"# Note {i}\n\nFact number {i} about the system.\n" for i in range(20)}
    server = start_http(db=db)
    project = make_project(tmp_path, http_toml(server.url, timeout=2.0), memories=memories)
    server.set_fault("slow", 0.03)  # each call takes a little while, so the kill lands mid-run
    try:
        with open_router(project) as router:
            reports: list[object] = []
            worker = threading.Thread(target=lambda: reports.extend(router.sync()))
            worker.start()
            deadline = time.monotonic() + 20
            with ForgetfulBackend(ForgetfulConfig(url=server.url)) as watcher:
                while len(remote_memories(watcher, project)) < 3 and time.monotonic() < deadline:
                    time.sleep(0.02)
            server.kill()
            worker.join(timeout=30)
            assert reports, "the sync did not return within 30 s of the kill"
            first = reports[0]
            assert isinstance(first, SyncReport)
            assert first.error is not None and 0 < len(first.created) < 20, first.to_dict()
            assert router.status()["backends"][0]["available"] is False

            server = start_http(db=db, port=server.port)
            router.backend("forgetful").available(force=True)
            second = router.sync()[0]
            assert second.ok, second.to_dict()
            assert len(first.created) + len(second.created) >= 20, (first.to_dict(), second.to_dict())
            with ForgetfulBackend(ForgetfulConfig(url=server.url)) as inspector:
                live = live_by_context(inspector, project)
            assert len(live) == 20 and all(len(ids) == 1 for ids in live.values()), live
            assert router.validate()[0].in_sync == 20
    finally:
        server.stop()


def test_slow_server_beyond_the_timeout_stops_the_run_and_keeps_progress(tmp_path: Path, fake_http: FakeServer) -> None:
    project = make_project(tmp_path, http_toml(fake_http.url, timeout=0.5))
    try:
        fake_http.set_fault("slow", 3.0)
        with open_router(project) as router:
            report = router.sync()[0]
            assert report.error is not None and "0.5" in report.error
            assert report.created == []
            health = router.backend("forgetful").health
            probes = health.probes
            assert len(router.search("flaky tests", limit=20)) >= 1  # canonical answers
            assert health.probes == probes  # the failure is cached: the search did not wait on the service
            fake_http.set_fault("none")
            router.backend("forgetful").available(force=True)
            assert router.sync()[0].ok
    finally:
        fake_http.set_fault("none")


def test_malformed_replies_are_reported_per_memory(tmp_path: Path, fake_http: FakeServer) -> None:
    project = make_project(tmp_path, http_toml(fake_http.url))
    try:
        fake_http.set_fault("bad-shape")
        with open_router(project) as router:
            report = router.sync()[0]
            assert len(report.failed) == 6 and report.created == []
            assert all("create_memory" in why for why in report.failed.values())
            fake_http.set_fault("none")
            assert len(router.sync()[0].created) == 6
    finally:
        fake_http.set_fault("none")


def test_a_run_stops_when_every_memory_fails_the_same_way(tmp_path: Path, fake_http: FakeServer) -> None:
    from memrouter.external.sync.engine import MAX_SAME_FAILURES

    memories = {f"bulk/note-{i:02}": f"# Note {i}\n\nbody {i}\n" for i in range(MAX_SAME_FAILURES + 4)}
    project = make_project(tmp_path, http_toml(fake_http.url), memories=memories)
    try:
        fake_http.set_fault("bad-shape")
        with open_router(project) as router:
            report = router.sync()[0]
            assert len(report.failed) == MAX_SAME_FAILURES and report.created == []
            assert report.error is not None and "in a row failed with the same error" in report.error
            fake_http.set_fault("none")
            assert router.sync()[0].ok
    finally:
        fake_http.set_fault("none")


def test_over_limit_fields_are_clipped_and_sync_succeeds(tmp_path: Path, inspector: ForgetfulBackend,
                                                        fake_http: FakeServer) -> None:  # fmt: skip
    tags = ", ".join(f"t{i}" for i in range(15))
    text = f"---\ntitle: {'T' * 300}\ntags: [{tags}]\n---\n\n" + "x " * 1500
    project = make_project(tmp_path, http_toml(fake_http.url), memories={"big/limits": text})
    with open_router(project) as router:
        report = router.sync()[0]
        assert report.ok, report.failed
        ids = mapping(router).records("forgetful")["big/limits"].remote_ids
        first = inspector.get(ids[0])
        assert len(first.title) <= 200 and len(first.tags) == 10
        assert "".join(inspector.get(i).content for i in ids) == text


def test_sync_process_killed_mid_run_then_rerun_converges(tmp_path: Path, fake_http: FakeServer) -> None:
    """``memrouter sync`` killed with SIGKILL at an arbitrary point; the next run leaves no duplicates."""
    import os
    import signal
    import subprocess
    import sys

    memories = {f"k/{i:03d}": f"# Killed {i}\n\nRecord {i} of the killed run.\n" for i in range(15)}
    project = make_project(tmp_path, http_toml(fake_http.url), memories=memories)
    try:
        fake_http.set_fault("slow", 0.03)
        process = subprocess.Popen([sys.executable, "-m", "memrouter", "sync"], cwd=project,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        deadline = time.monotonic() + 20
        with ForgetfulBackend(ForgetfulConfig(url=fake_http.url)) as inspector:
            while len(remote_memories(inspector, project)) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
            fake_http.set_fault("none")
            created_before = len(remote_memories(inspector, project))
            assert 3 <= created_before < 15
            with open_router(project) as router:
                report = router.sync()[0]
                assert report.ok, report.failed
                assert router.validate()[0].in_sync == 15
            live = live_by_context(inspector, project)
            assert len(live) == 15 and all(len(ids) == 1 for ids in live.values()), live
    finally:
        fake_http.set_fault("none")


@pytest.mark.sqlite_only(
    "PostgreSQL keeps the mapping when the local index is deleted (tests/postgres/test_sync_mapping.py)"
)
def test_a_deleted_index_adopts_the_remote_copies_instead_of_duplicating_them(
    project: Path, inspector: ForgetfulBackend
) -> None:
    root = project / ".serena" / "memories"
    (root / "ops").mkdir()
    (root / "ops" / "runbook.md").write_text(LONG)
    with open_router(project) as router:
        assert router.sync()[0].ok
    before = live_by_context(inspector, project)
    shutil.rmtree(project / ".memrouter")  # the index is derived: deleting it is allowed
    (root / "ci" / "flaky-tests.md").write_text("# Flaky tests in CI\n\nRetry once, then quarantine.\n")
    with open_router(project) as router:
        report = router.sync()[0]
        assert report.ok and sorted(report.recovered) == sorted([*SAMPLE, "ops/runbook"])
        assert live_by_context(inspector, project) == before  # same remote ids, nothing new
        flaky = mapping(router).records("forgetful")["ci/flaky-tests"].remote_ids
        assert inspector.get(flaky[0]).content.endswith("Retry once, then quarantine.\n")  # updated in place
        assert router.validate(check_remote=True)[0].in_sync == 7
        assert router.sync()[0].skipped == 7


@pytest.mark.sqlite_only(
    "the run names one project key for every repository (tests/postgres/test_sync_mapping.py: two projects)"
)
def test_a_same_named_memory_of_another_project_is_never_adopted(
    tmp_path: Path, fake_http: FakeServer, inspector: ForgetfulBackend
) -> None:
    first = make_project(tmp_path, http_toml(fake_http.url))
    second = make_project(tmp_path, http_toml(fake_http.url))  # the same names, another repository
    with open_router(first) as router:
        assert router.sync()[0].ok
    with open_router(second) as router:
        report = router.sync()[0]
        assert report.ok and report.recovered == [] and len(report.created) == 6
    assert len(live_by_context(inspector, second)) == 6
    assert all(len(ids) == 1 for ids in live_by_context(inspector, first).values())
