"""A repository's key in a shared database: ``[index] project``, else its git remote, else refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import git, write

from memrouter.config.projectkey import MAX_KEY, derived_key, normalise_remote
from memrouter.config.settings import Config
from memrouter.core.errors import ConfigError

URL = "postgresql://memrouter@db.internal:5432/memory"


@pytest.mark.parametrize(
    ("remote", "key"),
    [
        ("git@github.com:Org/API.git", "github.com/Org/API"),
        ("https://github.com/Org/API", "github.com/Org/API"),
        ("https://x-token:secret@GitHub.com/Org/API.git/", "github.com/Org/API"),
        ("ssh://git@github.com:22/Org/API.git", "github.com/Org/API"),
        ("git+ssh://git@gitlab.example.com/group/sub/api.git", "gitlab.example.com/group/sub/api"),
        ("github.com:Org/API", "github.com/Org/API"),
        ("/srv/git/api.git", "file:/srv/git/api"),
        ("file:///srv/git/api.git", "file:/srv/git/api"),
        ("https://github.com/", ""),
    ],
)
def test_remotes_of_one_repository_share_a_key(remote: str, key: str) -> None:
    assert normalise_remote(remote) == key
    assert "secret" not in normalise_remote(remote) and "token" not in normalise_remote(remote)


def test_a_very_long_remote_is_still_one_key_of_its_own() -> None:
    first, second = (normalise_remote(f"https://example.com/{'a' * 300}/{end}") for end in ("x", "y"))
    assert len(first) == len(second) == MAX_KEY and first != second


def repository(base: Path, *remotes: tuple[str, str]) -> Path:
    """A project folder named ``api`` under ``base`` with these git remotes (name, URL)."""
    project = base / "api"
    write(project / ".serena" / "memories", "note", "# Note\n\nhello\n")
    git(project, "init", "-q")
    for name, url in remotes:
        git(project, "remote", "add", name, url)
    return project / ".serena" / "memories"


def test_two_folders_of_one_name_get_their_remotes_keys(tmp_path: Path) -> None:
    keys = set()
    for owner in ("alpha", "beta"):
        memories = repository(tmp_path / owner, ("origin", f"git@github.com:{owner}/api.git"))
        config = Config.load(root=memories, index_dir=tmp_path / owner / "idx", env={"MEMROUTER_DATABASE_URL": URL})
        keys.add(config.project_key)
        assert config.summary()["project_key"] == config.project_key
    assert keys == {"github.com/alpha/api", "github.com/beta/api"}


def test_origin_wins_and_a_lone_remote_serves(tmp_path: Path) -> None:
    both = repository(
        tmp_path / "a", ("upstream", "https://example.com/up/api"), ("origin", "https://example.com/me/api")
    )
    assert derived_key(both) == "example.com/me/api"
    lone = repository(tmp_path / "b", ("upstream", "https://example.com/up/api"))
    assert derived_key(lone) == "example.com/up/api"


@pytest.mark.parametrize("remotes", [(), (("one", "https://e.com/1/api"), ("two", "https://e.com/2/api"))])
def test_no_safe_key_is_refused_with_the_fix(tmp_path: Path, remotes: tuple[tuple[str, str], ...]) -> None:
    memories = repository(tmp_path, *remotes)
    with pytest.raises(ConfigError, match=r"no git remote.*\[index\].*MEMROUTER_PROJECT"):
        Config.load(root=memories, index_dir=tmp_path / "idx", env={"MEMROUTER_DATABASE_URL": URL})


def test_a_given_key_needs_no_remote_and_the_environment_wins(tmp_path: Path) -> None:
    memories = repository(tmp_path)
    (memories.parent.parent / "memrouter.toml").write_text(f'[index]\nurl = "{URL}"\nproject = "api-service"\n')
    assert Config.load(root=memories, index_dir=tmp_path / "idx", env={}).project_key == "api-service"
    env = {"MEMROUTER_PROJECT": "from-env"}
    assert Config.load(root=memories, index_dir=tmp_path / "idx", env=env).project_key == "from-env"


def test_without_a_database_nothing_is_derived_or_refused(tmp_path: Path) -> None:
    memories = repository(tmp_path)
    config = Config.load(root=memories, index_dir=tmp_path / "idx", env={})
    assert config.summary()["project_key"] is None
    with pytest.raises(ConfigError, match="no git remote"):  # `memrouter index --database URL` asks for it
        _ = config.project_key
