"""A memory's versions from git: record time, without touching the work tree.

``versions`` lists the commits that changed a memory's file (following
renames), newest first; ``version_at`` reads the memory as it was committed at
a date or a commit (``git show <commit>:<path>``). Both only read the
repository's history; nothing here changes a file or the index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from memrouter.core.errors import InvalidInput, NotFound
from memrouter.core.model import Memory
from memrouter.repo.git import GitSession
from memrouter.store.files import MemoryStore

__all__ = ["DATE", "MAX_VERSIONS", "Version", "resolve_revision", "version_at", "versions"]

MAX_VERSIONS = 200
_FIELD = "\x1f"
_FORMAT = f"--format=%x1e%H{_FIELD}%h{_FIELD}%an{_FIELD}%aI{_FIELD}%s"
# A date (2026-01-05, optionally with a time) or a commit-ish of safe characters (never an option).
DATE = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2})?(Z|[+-]\d{2}:?\d{2})?)?")
_REVISION = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/~^@{}-]{0,99}")


@dataclass(frozen=True, slots=True)
class Version:
    """One committed version of a memory: the commit, its author, date and subject, and the file's path then."""

    commit: str
    short: str
    author: str
    date: str
    subject: str
    path: str
    change: str  # A added, M modified, R renamed, D deleted

    def to_dict(self) -> dict[str, object]:
        return {
            "commit": self.commit, "short": self.short, "author": self.author, "date": self.date,
            "subject": self.subject, "path": self.path, "change": self.change,
        }  # fmt: skip


def versions(file: Path, limit: int = 20, *, start: str | None = None) -> list[Version]:
    """The commits that changed ``file`` (renames followed), newest first: in ``HEAD``'s history, or in
    ``start``'s (a commit resolved by ``resolve_revision``: another branch's)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_VERSIONS:
        raise InvalidInput(f"limit must be a whole number between 1 and {MAX_VERSIONS}")

    top = _session(file).toplevel.resolve()
    session = GitSession(top)  # pathspecs are relative to the working folder: run from the top
    try:
        relative = file.resolve().relative_to(top).as_posix()
    except ValueError as exc:
        raise InvalidInput(f"{file} is not inside the git repository {top}") from exc
    since = [start] if start is not None else []
    output = session.run(
        "log", *since, _FORMAT, "--name-status", "--follow", f"--max-count={limit}", "--", relative
    ).stdout
    found: list[Version] = []
    for record in output.split("\x1e")[1:]:
        head, _, changes = record.partition("\n")
        fields = head.split(_FIELD)
        if len(fields) != 5:
            continue
        status_line = next((line for line in changes.splitlines() if line.strip()), "")
        parts = status_line.split("\t")
        change = parts[0][:1] if parts and parts[0] else "M"
        path = parts[-1] if len(parts) > 1 else relative
        commit, short, author, date, subject = fields
        found.append(Version(commit, short, author, date, subject, path, change))
    return found


def _session(file: Path) -> GitSession:
    """A git session in the nearest existing folder of ``file`` (a deleted memory's folder may be gone)."""

    folder = next((p for p in (file.parent, *file.parent.parents) if p.is_dir()), Path.cwd())
    return GitSession(folder)


def resolve_revision(session: GitSession, as_of: str) -> str:
    """The commit ``as_of`` names: the last commit at or before a date, or a commit-ish."""
    if not isinstance(as_of, str) or not as_of.strip():
        raise InvalidInput("as_of must be a date (2026-01-05) or a commit")
    as_of = as_of.strip()
    if DATE.fullmatch(as_of):
        day_end = as_of if "T" in as_of or " " in as_of else f"{as_of}T23:59:59"
        commit = session.run("rev-list", "-1", f"--before={day_end}", "HEAD", check=False).stdout.strip()
        if not commit:
            raise NotFound(f"no commit at or before {as_of}")
        return commit
    if not _REVISION.fullmatch(as_of):
        raise InvalidInput(f"as_of {as_of!r} is neither a date (2026-01-05) nor a commit")
    result = session.run("rev-parse", "--verify", "--quiet", f"{as_of}^{{commit}}", check=False)
    if result.returncode != 0 or not result.stdout.strip():
        raise InvalidInput(f"as_of {as_of!r} is neither a date (2026-01-05) nor a commit of this repository")
    return result.stdout.strip()


def _reaches(session: GitSession, ancestor: str, commit: str) -> bool:
    return session.run("merge-base", "--is-ancestor", ancestor, commit, check=False).returncode == 0


def version_at(name: str, file: Path, as_of: str) -> tuple[Memory, Version]:
    """Memory ``name`` as committed at ``as_of`` (a date or a commit), and the version it came from."""

    session = GitSession(_session(file).toplevel)
    commit = resolve_revision(session, as_of)
    # The file's versions as followed back from today (so renames after ``as_of`` are
    # crossed), newest first: the first one inside ``commit``'s history is the one then.
    version = next((v for v in versions(file, MAX_VERSIONS) if _reaches(session, v.commit, commit)), None)
    if version is None:  # never on HEAD's side (a memory only another branch has): follow back from ``commit``
        version = next(iter(versions(file, 1, start=commit)), None)
    if version is None or version.change == "D":
        raise NotFound(f"memory {name!r} did not exist as of {as_of}")
    shown = session.run("show", f"{commit}:{version.path}", check=False)
    if shown.returncode != 0:
        raise NotFound(f"memory {name!r} did not exist as of {as_of}")
    memory = MemoryStore.parse_bytes(name, version.path, shown.stdout.encode("utf-8"))
    return memory, version
