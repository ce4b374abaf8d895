"""A bad database URL is a clear error from memrouter.core.errors, and nothing is changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from memrouter import Router
from memrouter.core.errors import BackendContractError, BackendUnavailable, ConfigError, MemoryRouterError
from memrouter.index.postgres.connect import Database
from memrouter.testing.postgres_server import PostgresServer
from memrouter.testing.servers import free_port


@pytest.mark.parametrize(
    ("url", "error", "says"),
    [
        ("mysql://db/x", ConfigError, "must start with postgresql://"),
        ("postgresql://db.example:notaport/x", ConfigError, "port must be a number"),
        ("postgresql://[::1/x", ConfigError, "bad database URL"),
        ("postgresql://127.0.0.1/x?sslmode=sometimes", ConfigError, "sslmode must be one of"),
        ("postgresql://u:hunter2@127.0.0.1:PORT/x", BackendUnavailable, "cannot be reached"),
    ],
)
def test_bad_urls_are_clear_errors(url: str, error: type[MemoryRouterError], says: str) -> None:
    # the free port is chosen when the test runs: chosen while collecting, it would differ between workers
    with pytest.raises(error, match=says) as raised:
        Database(url.replace(":PORT/", f":{free_port()}/"))
    assert "hunter2" not in str(raised.value)


def test_a_missing_database_is_unavailable_not_a_crash(database_url: str) -> None:
    with pytest.raises(BackendUnavailable, match="does not exist"):
        Database(database_url.rsplit("/", 1)[0] + "/no_such_database")


def test_index_with_a_bad_database_exits_with_the_error_and_keeps_the_local_index(
    memories: Path, tmp_path: Path
) -> None:
    base = [sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(tmp_path / "idx"), "index",
            "--lexical-only"]  # fmt: skip
    env = {**os.environ, "MEMROUTER_PROJECT": "project"}
    refused = subprocess.run(
        [*base, "--database", f"postgresql://127.0.0.1:{free_port()}/x"], capture_output=True, text=True, env=env
    )
    assert refused.returncode == 3, refused.stderr
    assert "cannot be reached" in refused.stderr and "Traceback" not in refused.stderr
    malformed = subprocess.run([*base, "--database", "postgresql://h:port/x"], capture_output=True, text=True, env=env)
    assert malformed.returncode == 2 and "port must be a number" in malformed.stderr
    with Router.open(root=memories, index_dir=tmp_path / "idx") as router:  # the local index was built regardless
        assert router.status()["memories"]["total"] == len(router.list()) > 0


def test_a_malformed_configured_url_is_refused_on_load(memories: Path, tmp_path: Path) -> None:
    (memories.parent.parent / "memrouter.toml").write_text('[index]\nurl = "sqlite:///x"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[index\] url"):
        Router.open(root=memories, index_dir=tmp_path / "idx")


def test_a_server_that_cannot_hold_the_index_is_a_contract_error(
    postgres_server: PostgresServer, database_url: str
) -> None:
    """A role that may not create tables (nor the vector extension) gets a clear error, not a driver one."""
    with psycopg.connect(postgres_server.url, autocommit=True) as conn:
        conn.execute(b"CREATE ROLE reader LOGIN")
    with pytest.raises(BackendContractError, match="cannot hold the memrouter index"):
        Database(database_url.replace("postgres@", "reader@"))


def test_a_memory_holding_nul_characters_is_pushed_and_found(
    memories: Path, tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "project")
    text = "---\ntags: [ok, 'x\\0y']\n---\n# Nul\x00title\n\n## Part\x00two\n\nzanzibar quokka \x00 payload\n"
    (memories / "nul.md").write_text(text, encoding="utf-8")
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        assert [hit.name for hit in router.search("zanzibar quokka", mode="lexical")] == ["nul"]
        assert not router.warnings  # answered by PostgreSQL, which holds the memory
        assert (memories / "nul.md").read_text(encoding="utf-8") == text  # the file keeps its NULs
    with psycopg.connect(database_url) as conn:
        title, body = conn.execute("SELECT title, body FROM memories WHERE name = 'nul'").fetchone()  # type: ignore[misc]
    assert title == "Nul\ufffdtitle" and "quokka \ufffd payload" in body
