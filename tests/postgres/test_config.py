"""The [index] url and project keys (and MEMROUTER_DATABASE_URL) each have their effect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from helpers import SAMPLE, git, write

from memrouter import Router
from memrouter.config.settings import IndexConfig
from memrouter.core.errors import ConfigError
from memrouter.index.postgres.connect import EF_SEARCH


def projects_in(url: str) -> dict[str, int]:
    with psycopg.connect(url) as conn:
        return dict(conn.execute("SELECT project, count(*) FROM memories GROUP BY project").fetchall())


def repo(base: Path, toml: str) -> Path:
    memories = base / "service" / ".serena" / "memories"
    for name, text in SAMPLE.items():
        write(memories, name, text)
    (base / "service" / "memrouter.toml").write_text(toml, encoding="utf-8")
    return memories


def test_index_url_and_project_put_each_repository_under_its_key(tmp_path: Path, database_url: str) -> None:
    password_url = database_url.replace("postgres@", "postgres:secret@")  # trust auth ignores it
    for key in ("payments", "checkout"):
        memories = repo(tmp_path / key, f'[index]\nurl = "{password_url}"\nproject = "{key}"\n')
        with Router.open(root=memories, index_dir=tmp_path / key / "idx") as router:
            assert len(router.list()) == len(SAMPLE)
            config = router.status()["config"]
            assert config["project_key"] == key and "secret" not in config["database"]
    assert projects_in(database_url) == {"payments": len(SAMPLE), "checkout": len(SAMPLE)}


def test_without_a_project_key_the_git_remote_is_the_key(tmp_path: Path, database_url: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Two repositories in folders of the same name keep their own rows: the key comes from each remote."""
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    keys = {}
    for owner in ("team-a", "team-b"):
        memories = repo(tmp_path / owner, "")  # both folders are named ``service``
        git(memories.parent.parent, "init", "-q")
        git(memories.parent.parent, "remote", "add", "origin", f"git@github.com:{owner}/service.git")
        with Router.open(root=memories, index_dir=tmp_path / owner / "idx") as router:
            router.search("flaky")
            keys[owner] = router.config.project_key
        shown = subprocess.run([sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir",
                                str(tmp_path / owner / "idx"), "status"], capture_output=True, text=True, check=True,
                               env=os.environ)  # fmt: skip
        assert f"database: {database_url} project 'github.com/{owner}/service' ({len(SAMPLE)} memories)" in shown.stdout
    assert keys == {"team-a": "github.com/team-a/service", "team-b": "github.com/team-b/service"}
    assert projects_in(database_url) == {key: len(SAMPLE) for key in keys.values()}


def test_without_a_project_key_or_a_remote_nothing_is_pushed(tmp_path: Path, database_url: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    memories = repo(tmp_path, "")
    with pytest.raises(ConfigError, match=r"\[index\]"):
        Router.open(root=memories, index_dir=tmp_path / "idx")
    done = subprocess.run([sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(tmp_path / "idx"),
                           "search", "flaky"], capture_output=True, text=True, env=os.environ)  # fmt: skip
    assert done.returncode == 2 and "no git remote" in done.stderr and "MEMROUTER_PROJECT" in done.stderr
    with psycopg.connect(database_url) as conn:  # refused before connecting: not even the tables were made
        assert conn.execute("SELECT to_regclass('memories')").fetchone() == (None,)


def test_index_ef_search_is_set_for_each_dense_search(tmp_path: Path, database_url: str, postgres_server) -> None:  # type: ignore[no-untyped-def]
    """PostgreSQL logs every statement of this database: the dense search ran with the configured ef_search."""
    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET log_statement = 'all'".encode())
    log = postgres_server.data.parent / "server.log"
    for ef_search in (321, EF_SEARCH):  # the default is the pool's own setting: no statement of its own
        memories = repo(tmp_path / str(ef_search), f'[index]\nurl = "{database_url}"\nproject = "p{ef_search}"\n'
                        f'ef_search = {ef_search}\n[embed]\nmodel = "hash"\n')  # fmt: skip
        before = log.stat().st_size
        with Router.open(root=memories, index_dir=tmp_path / str(ef_search) / "idx") as router:
            assert router.status()["config"]["ef_search"] == ef_search
            assert router.search("flaky tests", mode="semantic")
        with log.open(encoding="utf-8", errors="replace") as lines:
            lines.seek(before)
            logged = lines.read()
        if ef_search == 321:
            assert "SET LOCAL hnsw.ef_search = 321" in logged
        else:
            assert f"SET hnsw.ef_search = {EF_SEARCH}" in logged and "SET LOCAL hnsw.ef_search" not in logged
    assert IndexConfig().ef_search == EF_SEARCH


@pytest.mark.parametrize("value", ["0", "1001", "2.5", '"many"', "true"])
def test_index_ef_search_outside_its_range_is_refused(tmp_path: Path, value: str) -> None:
    memories = repo(tmp_path, f"[index]\nef_search = {value}\n")
    with pytest.raises(ConfigError, match="ef_search"):
        Router.open(root=memories, index_dir=tmp_path / "idx")
