"""The test PostgreSQL itself: started as an unprivileged user when we are root, stopped by its PID."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psycopg
import pytest

from memrouter.testing import postgres_server
from memrouter.testing.postgres_server import PostgresServer, running_postgres


def test_the_session_server_has_pgvector_and_runs_as_someone_else_than_root(postgres_server: PostgresServer) -> None:
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(b"CREATE EXTENSION IF NOT EXISTS vector")
        assert conn.execute(b"SELECT '[1,0]'::vector <=> '[0,1]'::vector").fetchone() == (1.0,)
        assert conn.execute(b"SHOW server_version").fetchone()[0].startswith("18")  # type: ignore[index]
    assert int((postgres_server.data / "postmaster.pid").read_text().split()[0]) == postgres_server.pid
    assert Path(f"/proc/{postgres_server.pid}").stat().st_uid != 0


@pytest.mark.skipif(os.geteuid() != 0, reason="only root must hand the server to another user")
def test_binaries_the_server_user_cannot_reach_are_copied_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = postgres_server._binaries()
    hidden = tmp_path / "private" / "site"  # pytest's temporary folders are root's alone (0700)
    shutil.copytree(wheel.parent, hidden / wheel.parent.parent.name / wheel.parent.name, symlinks=True)
    libs = wheel.parent.parent.parent / f"{wheel.parent.parent.name}.libs"
    shutil.copytree(libs, hidden / libs.name, symlinks=True)
    monkeypatch.setattr(
        postgres_server, "_binaries", lambda: hidden / wheel.parent.parent.name / wheel.parent.name / "bin"
    )
    with running_postgres() as server:
        assert not server.binaries.is_relative_to(tmp_path)
        with psycopg.connect(server.url) as conn:
            assert conn.execute(b"SELECT 1").fetchone() == (1,)
        pid = server.pid
    assert not Path(f"/proc/{pid}").exists()
    assert not server.data.parent.exists()  # the temporary folder is gone
