"""The freshness report: in_sync, stale, missing, orphaned over nested folders; local and --remote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sync.synchelp import http_toml, make_project, mapping

from memrouter import Router
from memrouter.cli import main
from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.testing.servers import FakeServer, serve_http, stdio_command


def test_report_counts_every_state_over_nested_folders(
    tmp_path: Path, fake_http: FakeServer, inspector: ForgetfulBackend
) -> None:
    project = make_project(tmp_path, http_toml(fake_http.url))
    root = project / ".serena" / "memories"
    with Router.open(root=root, watch=False) as router:
        report = router.validate()[0]
        assert (report.total, report.missing, report.in_sync) == (6, 6, 0)
        router.sync()
        assert router.validate()[0].in_sync == 6

        (root / "a" / "b" / "c").mkdir(parents=True)
        (root / "a" / "b" / "c" / "deep.md").write_text("# Deep\n\nNested memory.\n")  # missing
        (root / "ci" / "flaky-tests.md").write_text("# Flaky\n\nChanged.\n")  # stale
        (root / "incidents" / "flaky-tests.md").unlink()  # orphaned
        report = router.validate()[0]
        assert {k: report.to_dict()[k] for k in ("total", "in_sync", "stale", "missing", "orphaned")} == {
            "total": 6, "in_sync": 4, "stale": 1, "missing": 1, "orphaned": 1,
        }  # fmt: skip
        states = {d.name: d.state for d in report.details}
        assert states == {"a/b/c/deep": "missing", "ci/flaky-tests": "stale", "incidents/flaky-tests": "orphaned"}
        assert report.checked_remote is False and report.duration_ms >= 0

        # --remote: a copy obsoleted behind memrouter's back is missing again
        remote_id = mapping(router).records("forgetful")["conventions/commit-messages"].remote_ids[0]
        inspector.mark_obsolete(remote_id, "removed by hand")
        assert router.validate()[0].in_sync == 4
        remote = router.validate(check_remote=True)[0]
        assert remote.in_sync == 3 and remote.missing == 2
        assert remote.orphaned_remote_ids == (remote_id,)

        router.sync(force=True)
        assert router.validate()[0].missing == 0


def counted_calls(backend: ForgetfulBackend, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The Forgetful tools ``backend`` runs from now on, in order (each call still reaches the server)."""
    calls: list[str] = []
    execute = backend.execute

    def counting(tool: str, arguments: Any) -> dict[str, Any]:
        calls.append(tool)
        return execute(tool, arguments)

    monkeypatch.setattr(backend, "execute", counting)
    return calls


def test_remote_validation_lists_the_copies_and_fetches_only_what_the_listing_does_not_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with serve_http() as server:  # a server of its own: the listing's size is this test's
        project = make_project(tmp_path, http_toml(server.url))
        with Router.open(root=project / ".serena" / "memories", watch=False) as router:
            router.sync()
            backend = router.backend("forgetful")
            calls = counted_calls(backend, monkeypatch)
            assert router.validate(check_remote=True)[0].in_sync == 6
            assert calls == ["get_recent_memories"]  # six copies, one page, none fetched

            records = mapping(router).records("forgetful")
            gone, kept = records["conventions/commit-messages"].remote_ids[0], records["ci/flaky-tests"].remote_ids[0]
            backend.mark_obsolete(gone, "removed by hand")
            calls.clear()
            report = router.validate(check_remote=True)[0]
            assert (report.in_sync, report.missing, report.orphaned_remote_ids) == (5, 1, (gone,))
            assert calls == ["get_recent_memories", "get_memory"]  # the obsolete copy is not listed: fetched

            # a listing that raced a write and missed a live copy: the copy is fetched and found
            listing = backend.live_ids
            monkeypatch.setattr(backend, "live_ids", lambda most_calls: (listing(most_calls) or set()) - {kept})
            calls.clear()
            assert router.validate(check_remote=True)[0].in_sync == 5
            assert calls == ["get_recent_memories", "get_memory", "get_memory"]


def test_the_listing_is_skipped_when_fetching_each_copy_takes_fewer_calls(tmp_path: Path) -> None:
    with serve_http() as server:
        backend = ForgetfulBackend(ForgetfulConfig(url=server.url, timeout=10.0))
        try:
            ids = [backend.upsert(MemoryDraft(title=f"Note {n}", content=f"note {n}", context="c")) for n in range(101)]
            assert backend.live_ids(most_calls=2) == set(ids)  # 101 memories: two pages
            assert backend.live_ids(most_calls=1) is None  # more than one page: fetching one copy is cheaper
            backend.mark_obsolete(ids[0], "gone")
            assert backend.live_ids(most_calls=2) == set(ids[1:])
        finally:
            backend.close()


def test_one_memorys_sync_state_agrees_with_the_report(tmp_path: Path, fake_http: FakeServer) -> None:
    project = make_project(tmp_path, http_toml(fake_http.url))
    root = project / ".serena" / "memories"
    with Router.open(root=root, watch=False) as router:

        def one(name: str) -> tuple[str, str]:
            [(backend, found, why)] = router.sync_states(name, router.get(name).hash)
            assert backend == "forgetful"
            return found, why

        assert one("ci/flaky-tests") == ("missing", "never synced")
        router.sync()
        assert one("ci/flaky-tests") == ("in_sync", "")
        (root / "ci" / "flaky-tests.md").write_text("# Flaky\n\nChanged.\n")
        assert one("ci/flaky-tests") == ("stale", "changed since the last sync")
        report = {d.name: (d.state, d.reason) for d in router.validate()[0].details}
        assert report == {"ci/flaky-tests": one("ci/flaky-tests")}
        assert one("conventions/commit-messages") == ("in_sync", "")


def test_cli_validate_json_and_missing_backend_config(
    tmp_path: Path, fake_http: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path, http_toml(fake_http.url))
    monkeypatch.chdir(project)
    runner = CliRunner()
    done = runner.invoke(main, ["validate", "--format", "json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.output)
    assert set(data) >= {"total", "in_sync", "stale", "missing", "orphaned", "duration_ms", "details"}
    assert runner.invoke(main, ["validate"]).output.startswith("forgetful: 6 memories: 0 in sync")
    done = runner.invoke(main, ["validate", "--backend", "nope"])
    assert done.exit_code == 2 and "no backend 'nope'" in done.stderr


def test_sync_and_validate_over_stdio(tmp_path: Path) -> None:
    command = json.dumps(stdio_command(db=str(tmp_path / "fg.sqlite")))
    project = make_project(tmp_path, f"[backends.forgetful]\ncommand = {command}\ntimeout = 15\n")
    with Router.open(root=project / ".serena" / "memories", watch=False) as router:
        report = router.sync()[0]
        assert report.ok and len(report.created) == 6
        assert router.validate(check_remote=True)[0].in_sync == 6
        hits = router.search("payment suite timed out", limit=20, origin="forgetful")
        assert hits and hits[0].source == "forgetful"
