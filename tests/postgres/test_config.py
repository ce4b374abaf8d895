"""The [index] url and project keys (and MEMROUTER_DATABASE_URL) each have their effect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest
from helpers import SAMPLE, write

from memrouter import Router


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


def test_without_a_project_key_the_folder_name_is_the_key(tmp_path: Path, database_url: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    memories = repo(tmp_path, "")
    with Router.open(root=memories, index_dir=tmp_path / "idx") as router:
        router.search("flaky")
    assert projects_in(database_url) == {"service": len(SAMPLE)}
    shown = subprocess.run([sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(tmp_path / "idx"),
                            "status"], capture_output=True, text=True, check=True, env=os.environ)  # fmt: skip
    assert f"database: {database_url} project 'service' ({len(SAMPLE)} memories)" in shown.stdout
