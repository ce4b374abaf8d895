"""A repository's key in a shared database when ``[index] project`` names none: its git remote, normalised.

The folder's name is not a key: two repositories checked out in folders of
the same name (``~/a/api`` and ``~/b/api``) would share it, and a push from
one would drop the other's rows. The remote is what the clones of one
repository share and other repositories do not: ``origin``'s URL (or the only
remote's) without scheme, credentials, port, ``.git`` and trailing slashes,
host in lower case, so ``git@github.com:Org/API.git``,
``https://token@github.com/Org/API`` and ``ssh://git@github.com:22/Org/API.git``
are all ``github.com/Org/API``. Without a remote there is no safe default:
``ConfigError`` asks for ``[index] project``.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path
from urllib.parse import urlsplit

from memrouter.core.errors import ConfigError

__all__ = ["MAX_KEY", "derived_key", "normalise_remote", "remote_url"]

MAX_KEY = 200
_SCP = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")  # user@host:path, git's scp-like syntax


def normalise_remote(url: str) -> str:
    """The key of a remote URL (see the module docstring); '' when it holds no path."""
    url = url.strip()
    scp = _SCP.match(url) if "://" not in url else None
    if scp:
        host, path = scp.group(1), scp.group(2)
    elif "://" in url:
        parts = urlsplit(url)
        host, path = (parts.hostname or "") if parts.scheme != "file" else "file:", parts.path
    else:
        host, path = "file:", url  # a local path
    path = re.sub(r"/+", "/", path).strip("/")
    path = path.removesuffix(".git").rstrip("/")
    if not path:
        return ""
    key = f"{host.lower()}/{path}" if host != "file:" else f"file:/{path}"
    if len(key) > MAX_KEY:  # still one key per remote: a prefix and a digest of the whole
        key = f"{key[: MAX_KEY - 17]}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"
    return key


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=10, check=False
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def remote_url(folder: Path) -> str | None:
    """The URL of ``origin``, else of the repository's only remote; None without git, a repository or a remote."""
    names = (_git(folder, "remote") or "").split()
    name = "origin" if "origin" in names else (names[0] if len(names) == 1 else None)
    return _git(folder, "remote", "get-url", name) if name else None


def derived_key(folder: Path) -> str:
    """The key of the repository holding ``folder``, from its remote; ``ConfigError`` when it has none."""
    url = remote_url(folder)
    key = normalise_remote(url) if url else ""
    if not key:
        raise ConfigError(
            f"{folder} has no git remote (origin) to name it in the shared database by, and the folder's name "
            "is not safe (two repositories in folders of the same name would overwrite each other's rows): "
            'set `project = "<a key unique to this repository>"` under [index] in memrouter.toml, '
            "or MEMROUTER_PROJECT"
        )
    return key
