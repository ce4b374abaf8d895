"""The projects file of ``memrouter serve --projects FILE``: the repositories one server serves, and who may use them.

```toml
database = "postgresql://memrouter@db.internal:5432/memory"   # optional, see below

[projects.payments]                   # the key: the URL path /mcp/payments and the project's key in the database
path = "/srv/repos/payments-service"  # the repository (or its .serena/memories folder)

[tokens.ci]                           # a name for the token, for the reader of this file
token_env = "MEMROUTER_TOKEN_CI"      # read the token from this environment variable (or: token = "...")
projects = ["payments"]               # the projects this token may read and write
read_only = ["web"]                   # optional: projects it may only read (search, get, list, status)
```

The shared index is ``database``, else ``MEMROUTER_DATABASE_URL``, else each
repository's own ``[index] url`` (none: each project's local SQLite index).
Anything the file gets wrong (an unknown key, a missing folder, a token given
twice, a token naming a project the file does not list) is a ``ConfigError``
before the server binds its address: a typo here must never widen access.
"""

from __future__ import annotations

import hmac
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrouter.config.settings import MEMORIES, Config
from memrouter.core.errors import ConfigError
from memrouter.core.records import replace

__all__ = ["PROJECT_KEY", "Grant", "ProjectEntry", "ServedProjects", "load_projects"]

# A project key is one URL path segment: it names the project in /mcp/<key> and in the database.
PROJECT_KEY = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")
_TOP_KEYS = {"database", "projects", "tokens"}
_PROJECT_KEYS = {"path", "index_dir"}
_TOKEN_KEYS = {"token", "token_env", "projects", "read_only"}


@dataclass(frozen=True, slots=True)
class ProjectEntry:
    """One served repository: its key, its memories folder and, optionally, where its local index lives."""

    key: str
    root: Path
    index_dir: Path | None = None


@dataclass(frozen=True, slots=True)
class Grant:
    """A bearer token, the projects it may use, and those of them it may also write."""

    name: str
    secret: bytes
    projects: frozenset[str]
    writable: frozenset[str]


@dataclass(frozen=True, slots=True)
class ServedProjects:
    """What ``serve --projects`` serves: the projects, the tokens, the shared database (None: per repository)."""

    projects: Mapping[str, ProjectEntry]
    grants: tuple[Grant, ...]
    database: str | None = None

    def grant_for(self, token: bytes) -> Grant | None:
        """The grant whose token is ``token`` (every token compared in constant time), else None."""
        found = None
        for grant in self.grants:
            if hmac.compare_digest(token, grant.secret):
                found = grant
        return found

    def config(self, key: str, env: Mapping[str, str] | None = None) -> Config:
        """Project ``key``'s configuration: its repository's, with the shared database and this key in it."""
        entry = self.projects[key]
        env = os.environ if env is None else env
        # The server's own MEMROUTER_ROOT / MEMROUTER_INDEX_DIR must not send every project to one place.
        scoped = {name: value for name, value in env.items() if name not in ("MEMROUTER_ROOT", "MEMROUTER_INDEX_DIR")}
        scoped["MEMROUTER_PROJECT"] = key  # the file's key, even for a repository with no git remote to name it
        config = Config.load(root=entry.root, index_dir=entry.index_dir, env=scoped)
        return replace(config, index=replace(config.index, url=self.database or config.index.url, project=key))


def load_projects(path: str | Path, env: Mapping[str, str] | None = None) -> ServedProjects:
    """Read and check the projects file at ``path`` (see the module docstring)."""
    import tomllib

    env = os.environ if env is None else env
    file = Path(path)
    try:
        settings = tomllib.loads(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the projects file {file}: {exc.strerror or exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"the projects file {file} is not valid TOML: {exc}") from exc
    _only(settings, _TOP_KEYS, "the projects file")
    base = file.resolve().parent
    projects = _projects(settings.get("projects"), base)
    grants = _grants(settings.get("tokens"), projects, env)
    database = settings.get("database", env.get("MEMROUTER_DATABASE_URL") or None)
    if database is not None and (not isinstance(database, str) or not database.startswith(("postgresql://", "postgres://"))):  # fmt: skip
        raise ConfigError("database in the projects file must be a postgresql:// URL")
    return ServedProjects(projects, grants, database)


def _only(section: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(section) - allowed)
    if unknown:
        raise ConfigError(f"unknown key(s) in {where}: {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"the projects file needs at least one [{where}.<name>] table")
    return value


def _projects(section: Any, base: Path) -> dict[str, ProjectEntry]:
    projects: dict[str, ProjectEntry] = {}
    roots: dict[Path, str] = {}
    for key, table in _table(section, "projects").items():
        where = f"[projects.{key}]"
        if not PROJECT_KEY.fullmatch(key):
            raise ConfigError(f"{where}: a project key is 1 to 100 of a-z, 0-9, '.', '_', '-', starting alphanumeric")
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table")
        _only(table, _PROJECT_KEYS, where)
        if not isinstance(table.get("path"), str):
            raise ConfigError(f"{where} needs path = the repository's folder")
        folder = (base / table["path"]).resolve()
        root = folder / MEMORIES if (folder / MEMORIES).is_dir() else folder
        if not root.is_dir():
            raise ConfigError(f"{where}: {folder} is not a folder")
        if root in roots:
            raise ConfigError(f"{where}: {root} is served already as {roots[root]!r}")
        roots[root] = key
        index_dir = table.get("index_dir")
        if index_dir is not None and not isinstance(index_dir, str):
            raise ConfigError(f"{where}: index_dir must be a folder name")
        projects[key] = ProjectEntry(key, root, (base / index_dir).resolve() if index_dir else None)
    return projects


def _grants(section: Any, projects: Mapping[str, ProjectEntry], env: Mapping[str, str]) -> tuple[Grant, ...]:
    grants: list[Grant] = []
    for name, table in _table(section, "tokens").items():
        where = f"[tokens.{name}]"
        if not isinstance(table, dict):
            raise ConfigError(f"{where} must be a table")
        _only(table, _TOKEN_KEYS, where)
        if ("token" in table) == ("token_env" in table):
            raise ConfigError(f'{where} needs exactly one of token = "..." or token_env = "VARIABLE"')
        if "token_env" in table:
            secret = env.get(str(table["token_env"]), "")
            if not secret.strip():
                raise ConfigError(f"{where}: the environment variable {table['token_env']} is not set")
        else:
            secret = table["token"]
            if not isinstance(secret, str) or not secret.strip():
                raise ConfigError(f"{where}: the token must not be empty")
        writable, read_only = _keys(table, "projects", where), _keys(table, "read_only", where)
        if not writable and not read_only:
            raise ConfigError(f'{where} needs projects = ["<key>", ...] (read and write) or read_only = [...]')
        missing = sorted((writable | read_only) - set(projects))
        if missing:
            raise ConfigError(f"{where}: no such project(s): {', '.join(missing)}")
        if writable & read_only:
            raise ConfigError(f"{where}: {', '.join(sorted(writable & read_only))} in both projects and read_only")
        encoded = secret.encode("utf-8")
        if any(hmac.compare_digest(encoded, other.secret) for other in grants):
            raise ConfigError(f"{where}: the same token is given twice")
        grants.append(Grant(name, encoded, writable | read_only, writable))
    return tuple(grants)


def _keys(table: Mapping[str, Any], field: str, where: str) -> frozenset[str]:
    keys = table.get(field, [])
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise ConfigError(f"{where}: {field} must be a list of project keys")
    return frozenset(keys)
