"""What the git repository says right now: branch, recent commits, changes, diff, history.

Every answer comes from a ``git`` subprocess with a timeout, no pager, no
prompts and no optional locks. Arguments from callers are data, never
options: free text goes in attached forms (``--grep=<text>`` with
``--fixed-strings``), paths come after ``--`` with ``--literal-pathspecs`` and
must stay inside the repository, dates are computed here, numbers are
range-checked.
"""

from __future__ import annotations

import os
import subprocess
import unicodedata
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any

from memrouter.core.errors import InvalidInput, MemoryRouterError

__all__ = ["GitError", "GitSession", "MAX_COMMITS", "MAX_DIFF_CHARS"]

MAX_COMMITS = 200
MAX_DIFF_CHARS = 200_000
MAX_QUERY_CHARS = 500
MAX_PATH_CHARS = 1000
MAX_HOURS = 24 * 365 * 10
# Unit and record separators never appear in commit metadata we print.
_FIELD = "\x1f"
_RECORD = "\x1e"
_LOG_FORMAT = f"--format=%H{_FIELD}%h{_FIELD}%an{_FIELD}%aI{_FIELD}%s{_RECORD}"


class GitError(MemoryRouterError):
    """git is missing, timed out, failed, or the folder is not in a repository."""


class GitSession:
    """Read-only git queries for the repository holding ``folder``."""

    def __init__(self, folder: Path, *, timeout: float = 10.0) -> None:
        self.folder = Path(folder)
        self.timeout = timeout
        self._toplevel: Path | None = None

    # -- plumbing ------------------------------------------------------------
    @staticmethod
    def environment() -> dict[str, str]:
        """The environment every git subprocess runs in: no prompts, no optional locks, no pager, C locale."""
        env = dict(os.environ)
        env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_PAGER="cat")
        return env

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = self.environment()
        command = ["git", "--no-pager", "--literal-pathspecs", "-c", "core.quotepath=off", "-c", "color.ui=false"]
        try:
            result = subprocess.run(
                [*command, *args],
                cwd=self.folder,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=self.timeout,
                env=env,
                stdin=subprocess.DEVNULL,
            )
        except FileNotFoundError as exc:
            raise GitError("git is not installed (or not on PATH)") from exc
        except subprocess.TimeoutExpired as exc:
            raise GitError(f"git {args[0]} took longer than {self.timeout:g} s") from exc
        except OSError as exc:
            raise GitError(f"cannot run git in {self.folder}: {exc.strerror or exc}") from exc
        if check and result.returncode != 0:
            message = (result.stderr.strip().splitlines() or ["no message"])[-1]
            if "not a git repository" in result.stderr:
                raise GitError(f"{self.folder} is not inside a git repository")
            raise GitError(f"git {args[0]} failed: {message}")
        return result

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``git *args`` here, read-only by convention (``GitError`` on failure when ``check``)."""
        return self._git(*args, check=check)

    @property
    def toplevel(self) -> Path:
        """The repository's top folder (``GitError`` outside a repository)."""
        if self._toplevel is None:
            self._toplevel = Path(self._git("rev-parse", "--show-toplevel").stdout.strip())
        return self._toplevel

    def _require_repo(self) -> None:
        """Fail with a clear "not inside a git repository" before anything else."""
        _ = self.toplevel

    def _head(self) -> str | None:
        result = self._git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
        return result.stdout.strip() or None

    def _log(self, *args: str) -> list[dict[str, str]]:
        self._require_repo()
        if self._head() is None:
            return []
        output = self._git("log", _LOG_FORMAT, *args).stdout
        commits = []
        for record in output.split(_RECORD):
            fields = record.strip("\n").split(_FIELD)
            if len(fields) != 5:
                continue
            full, short, author, date, subject = fields
            commits.append({"commit": full, "short": short, "author": author, "date": date, "subject": subject})
        return commits

    # -- queries ---------------------------------------------------------------
    def get_current_branch(self) -> dict[str, Any]:
        """The checked-out branch (None when detached), HEAD's commit and how many files are changed."""
        self._require_repo()
        branch = self._git("symbolic-ref", "--quiet", "--short", "HEAD", check=False).stdout.strip() or None
        head = self._head()
        status = self._git("status", "--porcelain=v1", "-z", "--untracked-files=normal").stdout
        changed = len(_parse_status(status))
        return {
            "branch": branch,
            "detached": branch is None and head is not None,
            "commit": head,
            "changed_files": changed,
            "repository": str(self.toplevel),
        }

    def get_recent_commits(self, limit: int = 10) -> dict[str, Any]:
        """The last ``limit`` commits on HEAD, newest first."""
        limit = _check_limit(limit)
        return {"commits": self._log(f"--max-count={limit}")}

    def get_changed_files(self, since_hours: float = 24) -> dict[str, Any]:
        """Files touched by commits in the last ``since_hours`` hours, and files changed but not committed."""
        if isinstance(since_hours, bool) or not isinstance(since_hours, (int, float)):
            raise InvalidInput("since_hours must be a number")
        if not 0 < since_hours <= MAX_HOURS:
            raise InvalidInput(f"since_hours must be more than 0 and at most {MAX_HOURS}")
        self._require_repo()
        since = (datetime.now(UTC) - timedelta(hours=float(since_hours))).strftime("%Y-%m-%dT%H:%M:%SZ")
        committed: list[str] = []
        if self._head() is not None:
            output = self._git("log", f"--since={since}", "--name-only", "--format=", "-z").stdout
            seen: set[str] = set()
            for path in output.replace("\n", "\x00").split("\x00"):
                if path and path not in seen:
                    seen.add(path)
                    committed.append(path)
        status = self._git("status", "--porcelain=v1", "-z", "--untracked-files=normal").stdout
        uncommitted = [{"path": path, "status": code} for code, path in _parse_status(status)]
        return {"since": since, "committed": sorted(committed), "uncommitted": uncommitted}

    def get_current_diff(self, max_chars: int = 20_000) -> dict[str, Any]:
        """Uncommitted changes against HEAD (staged and not), as a summary and a patch cut at ``max_chars``."""
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 1 <= max_chars <= MAX_DIFF_CHARS:
            raise InvalidInput(f"max_chars must be a whole number between 1 and {MAX_DIFF_CHARS}")
        self._require_repo()
        base = ["HEAD"] if self._head() is not None else ["--cached"]
        stat = self._git("diff", "--no-ext-diff", "--stat", *base).stdout
        patch = self._git("diff", "--no-ext-diff", *base).stdout
        untracked = self._git("ls-files", "--others", "--exclude-standard", "-z").stdout
        return {
            "stat": stat.rstrip("\n"),
            "diff": patch[:max_chars],
            "truncated": len(patch) > max_chars,
            "untracked": [path for path in untracked.split("\x00") if path],
        }

    def search_commits(self, query: str, limit: int = 10) -> dict[str, Any]:
        """Commits whose message contains ``query`` (plain text, case-insensitive), newest first."""
        query = _check_text("query", query, MAX_QUERY_CHARS)
        limit = _check_limit(limit)
        commits = self._log(f"--max-count={limit}", "--fixed-strings", "--regexp-ignore-case", f"--grep={query}")
        return {"query": query, "commits": commits}

    def get_file_history(self, path: str, limit: int = 10) -> dict[str, Any]:
        """Commits that changed ``path`` (a file relative to the repository), following renames."""
        path = _check_text("path", path, MAX_PATH_CHARS)
        limit = _check_limit(limit)
        relative = self._inside(path)
        commits = self._log(f"--max-count={limit}", "--follow", "--", relative)
        return {"path": relative, "commits": commits}

    def _inside(self, path: str) -> str:
        if "\\" in path:
            raise InvalidInput(f"path {path!r}: use '/' to separate folders")
        pure = PurePosixPath(path)
        if pure.is_absolute():
            raise InvalidInput(f"path {path!r} must be relative to the repository")
        top = self.toplevel.resolve()
        try:
            relative = (top / pure).resolve().relative_to(top)
        except ValueError as exc:
            raise InvalidInput(f"path {path!r} is outside the repository") from exc
        if str(relative) == ".":
            raise InvalidInput("path must name a file in the repository")
        return relative.as_posix()


def _check_limit(limit: object) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_COMMITS:
        raise InvalidInput(f"limit must be a whole number between 1 and {MAX_COMMITS}")
    return limit


def _check_text(label: str, value: object, longest: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{label} must be non-empty text")
    if len(value) > longest:
        raise InvalidInput(f"{label} is {len(value)} characters; the limit is {longest}")
    for char in value:
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise InvalidInput(f"{label} contains a control character (U+{ord(char):04X})")
    return value.strip() if label == "query" else value


def _parse_status(output: str) -> list[tuple[str, str]]:
    """``git status --porcelain=v1 -z`` entries as (two-letter code, path); renames give the new path."""
    entries: list[tuple[str, str]] = []
    parts = output.split("\x00")
    index = 0
    while index < len(parts):
        entry = parts[index]
        index += 1
        if len(entry) < 4:
            continue
        code, path = entry[:2], entry[3:]
        if code[0] in "RC":
            index += 1  # the original path follows a rename or copy
        entries.append((code.strip() or code, path))
    return entries
