"""The sync mapping in PostgreSQL: machines syncing one repository to one service share it.

Each "machine" is a clone of one repository in its own folder (the same
project key and folder name, its own local index), syncing to the fake
Forgetful over HTTP; the database is a real PostgreSQL.
"""

from __future__ import annotations

import threading
from pathlib import Path

import psycopg
import pytest
from helpers import write
from sync.conftest import fake_http, inspector  # the fake Forgetful over HTTP, per module
from sync.synchelp import git, http_toml, live_by_context, make_project, remote_memories

from memrouter import Router
from memrouter.core.errors import BackendUnavailable
from memrouter.external.backends.forgetful import ForgetfulBackend
from memrouter.external.sync import state
from memrouter.testing.servers import FakeServer

__all__ = ["fake_http", "inspector"]  # fixtures used here


def _toml(fake_http: FakeServer, url: str | None) -> str:
    index = f'[index]\nurl = "{url}"\nproject = "shared"\n' if url else ""
    return index + http_toml(fake_http.url)


def _machines(tmp_path: Path, fake_http: FakeServer, url: str, count: int = 2) -> list[Path]:
    """``count`` clones of one repository, each in a folder of the same name (the service's source repo)."""
    origin = make_project(tmp_path / "origin", _toml(fake_http, url))
    clones = []
    for number in range(count):
        clone = tmp_path / f"machine{number}" / origin.name
        clone.parent.mkdir(parents=True)
        git(tmp_path, "clone", "-q", str(origin), str(clone))
        clones.append(clone)
    return clones


def _open(project: Path) -> Router:
    return Router.open(root=project / ".serena" / "memories", watch=False)


def _both(projects: list[Path], name: str, text: str) -> None:
    """The same new memory on every machine (as after a pull)."""
    for project in projects:
        write(project / ".serena" / "memories", name, text)


def test_a_memory_one_machine_synced_is_never_created_again_by_another(
    tmp_path: Path, fake_http: FakeServer, inspector: ForgetfulBackend, database_url: str
) -> None:
    first, second = _machines(tmp_path, fake_http, database_url)
    with _open(first) as a, _open(second) as b:
        made = a.sync()[0]
        assert made.ok and len(made.created) == 6
        again = b.sync()[0]
        assert again.ok and again.created == [] and again.skipped == 6
        assert state.load_records(b.workspace.conn, "forgetful") == {}  # nothing kept locally: the database holds it

        _both([first, second], "notes/added", "# Added\n\nA note both machines have after a pull.\n")
        assert a.sync()[0].created == ["notes/added"]
        later = b.sync()[0]
        assert later.ok and later.created == [] and later.skipped == 7

        path = second / ".serena" / "memories" / "notes" / "added.md"
        path.write_text(path.read_text() + "\nEdited on the second machine.\n")
        assert b.sync()[0].updated == ["notes/added"]  # in place, on the copy the first machine made
        status = {entry["name"]: entry["synced"] for entry in b.status()["backends"]}
        assert status["forgetful"] == 7
    live = live_by_context(inspector, first)
    assert len(live) == 7 and all(len(ids) == 1 for ids in live.values()), live
    assert len(remote_memories(inspector, first)) == 7


def test_two_machines_syncing_at_once_create_each_memory_once(
    tmp_path: Path, fake_http: FakeServer, inspector: ForgetfulBackend, database_url: str
) -> None:
    machines = _machines(tmp_path, fake_http, database_url)
    for n in range(12):
        _both(machines, f"batch/n{n:02}", f"# Batch {n}\n\nnote number {n} of a batch both machines sync\n")
    routers = [_open(project) for project in machines]
    try:
        reports: list[object] = []
        threads = [threading.Thread(target=lambda r=router: reports.extend(r.sync())) for router in routers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert len(reports) == 2 and all(report.ok for report in reports)  # type: ignore[attr-defined]
        assert sum(len(report.created) for report in reports) == 18  # type: ignore[attr-defined]
    finally:
        for router in routers:
            router.close()
    live = live_by_context(inspector, machines[0])
    assert len(live) == 18 and all(len(ids) == 1 for ids in live.values())


def test_moving_to_the_database_takes_the_local_mapping_along(
    tmp_path: Path, fake_http: FakeServer, inspector: ForgetfulBackend, database_url: str
) -> None:
    project = make_project(tmp_path, _toml(fake_http, None))
    with _open(project) as router:
        assert len(router.sync()[0].created) == 6  # kept in the local index
    (project / "memrouter.toml").write_text(_toml(fake_http, database_url), encoding="utf-8")
    with _open(project) as router:
        report = router.sync()[0]
        assert report.ok and report.created == [] and report.skipped == 6
    with psycopg.connect(database_url) as conn:
        rows = conn.execute("SELECT count(*) FROM sync_state WHERE project = 'shared'").fetchone()
    assert rows == (6,)
    assert len(remote_memories(inspector, project)) == 6


def test_with_the_database_down_sync_refuses_and_reads_fall_back(
    tmp_path: Path, fake_http: FakeServer, database_url: str
) -> None:
    project = make_project(tmp_path, _toml(fake_http, database_url))
    with _open(project) as router:
        assert len(router.sync()[0].created) == 6
    nowhere = database_url.rsplit(":", 1)[0] + ":1/none"
    (project / "memrouter.toml").write_text(_toml(fake_http, nowhere), encoding="utf-8")
    with _open(project) as router:
        with pytest.raises(BackendUnavailable, match="sync mapping is in PostgreSQL"):
            router.sync()
        assert state.load_records(router.workspace.conn, "forgetful") == {}  # nothing was written locally meanwhile
        backends = router.status()["backends"]  # still answers, from the local mapping
        assert [entry["name"] for entry in backends] == ["forgetful"]


def test_projects_keep_their_own_mappings(
    tmp_path: Path, fake_http: FakeServer, inspector: ForgetfulBackend, database_url: str
) -> None:
    one = make_project(tmp_path / "one", _toml(fake_http, database_url))
    other = make_project(tmp_path / "other", _toml(fake_http, database_url).replace('"shared"', '"other"'))
    with _open(one) as first, _open(other) as second:
        assert len(first.sync()[0].created) == 6
        assert len(second.sync()[0].created) == 6  # the same names, another project: its own copies
    with psycopg.connect(database_url) as conn:
        counts = dict(conn.execute("SELECT project, count(*) FROM sync_state GROUP BY project").fetchall())
        shared = conn.execute(
            "SELECT count(*) FROM sync_remote a JOIN sync_remote b ON a.remote_id = b.remote_id "
            "AND a.backend = b.backend AND a.project <> b.project"
        ).fetchone()
    assert counts == {"shared": 6, "other": 6} and shared == (0,)
