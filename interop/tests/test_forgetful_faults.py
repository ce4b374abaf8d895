"""Faults with the real Forgetful: killed mid-sync, embeddings endpoint down, restarted on the same data."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_peers import EmbedServer, RealForgetful, start_forgetful
from sync.synchelp import http_toml, live_by_context, make_project, remote_memories

from memrouter import Router
from memrouter.core.errors import BackendError
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig

MANY = {f"notes/topic-{i:02d}": f"# Topic {i}\n\nNote number {i} about caching and deploys.\n" for i in range(40)}


def open_router(project: Path) -> Router:
    return Router.open(root=project / ".serena" / "memories", watch=False)


def test_killed_mid_sync_then_restarted_rerun_converges(own_forgetful: RealForgetful, tmp_path: Path) -> None:
    project = make_project(tmp_path, http_toml(own_forgetful.url, 10.0), memories=MANY)
    outcome: dict[str, Any] = {}

    def run_sync() -> None:
        try:
            with open_router(project) as router:
                outcome["report"] = router.sync()[0]
        except BackendError as exc:
            outcome["error"] = exc

    with ForgetfulBackend(ForgetfulConfig(url=own_forgetful.url, timeout=10.0)) as watcher:
        thread = threading.Thread(target=run_sync)
        thread.start()
        deadline = time.monotonic() + 120
        while len(remote_memories(watcher, project)) < 5:
            assert thread.is_alive() and time.monotonic() < deadline, "sync finished before it could be killed"
            time.sleep(0.05)
    own_forgetful.kill()
    thread.join(timeout=120)
    assert not thread.is_alive()
    report = outcome.get("report")
    assert "error" in outcome or (report is not None and not report.ok)

    own_forgetful.start()  # the same data file
    with open_router(project) as router:
        report = router.sync()[0]
        assert report.ok, (report.error, report.failed)
        assert router.validate(check_remote=True)[0].in_sync == len(MANY)
        assert router.sync()[0].skipped == len(MANY)
    with ForgetfulBackend(ForgetfulConfig(url=own_forgetful.url, timeout=10.0)) as inspector:
        live = live_by_context(inspector, project)
    assert set(live) == {f"memrouter:{name}" for name in MANY}
    assert all(len(ids) == 1 for ids in live.values()), {k: v for k, v in live.items() if len(v) > 1}


@pytest.fixture
def own_embeddings(tmp_path: Path) -> Iterator[EmbedServer]:
    folder = tmp_path / "embed"
    folder.mkdir()
    server = EmbedServer(folder)
    try:
        server.start()
        yield server
    finally:
        server.stop()


def test_embeddings_down_reaches_status_and_canonical_search_is_unaffected(
    forgetful_available: None, own_embeddings: EmbedServer, tmp_path: Path
) -> None:
    server = start_forgetful(tmp_path / "forgetful", own_embeddings.url)
    try:
        project = make_project(tmp_path, http_toml(server.url, 15.0) + "health_ttl = 0.2\n")
        with open_router(project) as router:
            assert router.sync()[0].ok
            canonical = [h.name for h in router.search("flaky tests", limit=20, origin="canonical")]
            own_embeddings.stop()
            hits = router.search("flaky tests", limit=20)
            assert [h.name for h in hits] == canonical
            (status,) = router.status()["backends"]
            assert status["last_error"] and "connection error" in status["last_error"].lower(), status
            with pytest.raises(BackendError):
                router.search("flaky tests", origin="forgetful")
            (project / ".serena" / "memories" / "new.md").write_text("# New\n\nWhile embeddings are down.\n")
            assert not router.sync()[0].ok  # the create fails in Forgetful; nothing is recorded as synced

            own_embeddings.start()  # back on the same port: the service recovers
            time.sleep(0.3)
            assert router.sync()[0].ok
            assert router.validate(check_remote=True)[0].in_sync == 7
    finally:
        server.stop()


def test_restarted_on_the_same_data_keeps_everything(own_forgetful: RealForgetful, tmp_path: Path) -> None:
    project = make_project(tmp_path, http_toml(own_forgetful.url, 15.0))
    with open_router(project) as router:
        assert router.sync()[0].ok
    own_forgetful.restart()
    with open_router(project) as router:
        assert router.validate(check_remote=True)[0].in_sync == 6
        assert router.sync()[0].skipped == 6
        assert any(h.source == "forgetful" for h in router.search("flaky tests", limit=40, origin="forgetful"))
