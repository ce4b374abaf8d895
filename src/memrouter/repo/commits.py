"""A repository's history as data: commits with the files they changed, and file texts at any commit.

What ``memrouter eval --from-git`` mines reads the history through these two
calls (``memrouter.ops.mining``). Both run ``git`` read-only, in a bare or
non-bare repository alike, with a timeout; a folder is a pathspec given after
``--`` and read literally.
"""

from __future__ import annotations

import io
import subprocess
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from memrouter.repo.git import GitError, GitSession

__all__ = ["Change", "Commit", "commits", "is_repository", "read_files", "read_tree"]

_RECORD = "\x1e"
_FIELD = "\x1f"


@dataclass(frozen=True, slots=True)
class Change:
    """One file a commit changed: ``status`` is A (added), M (modified), D (deleted) or R (renamed from
    ``old_path``)."""

    status: str
    path: str
    old_path: str | None = None


@dataclass(frozen=True, slots=True)
class Commit:
    """A commit without merges: its id, commit time (seconds since the epoch), subject, body and changes."""

    sha: str
    time: int
    subject: str
    body: str
    changes: tuple[Change, ...]


def is_repository(repo: Path) -> bool:
    """Whether ``repo`` is a git repository (bare or not) with at least one commit."""
    found = GitSession(repo).run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", check=False)
    return found.returncode == 0


def commits(repo: Path, folder: str, *, timeout: float = 600.0) -> list[Commit]:
    """Every commit reachable from ``HEAD`` that is not a merge, oldest first, with the files it changed;
    renames are detected under ``folder`` only (detecting them elsewhere reads every large file, and a
    partial clone may lack some). ``GitError`` when ``repo`` is not a repository or has no commit."""
    session = GitSession(repo, timeout=timeout)
    everything = _log(session, "--no-renames")
    inside = {commit.sha: commit for commit in _log(session, "--find-renames", "--", folder.strip("/"))}
    prefix = folder.strip("/") + "/"
    merged = []
    for commit in everything:
        found = inside.get(commit.sha)
        if found is not None:
            outside = tuple(c for c in commit.changes if not c.path.startswith(prefix))
            commit = Commit(commit.sha, commit.time, commit.subject, commit.body, (*found.changes, *outside))
        merged.append(commit)
    return merged


def _log(session: GitSession, *args: str) -> list[Commit]:
    fields = _FIELD.join(("%H", "%ct", "%s", "%b"))
    output = session.run(
        "log", "--reverse", "--no-merges", "--name-status", f"--format={_RECORD}{fields}{_FIELD}", *args[:1], "HEAD",
        *args[1:],
    ).stdout  # fmt: skip
    found: list[Commit] = []
    for record in output.split(_RECORD)[1:]:
        parts = record.split(_FIELD)
        if len(parts) != 5:
            continue
        sha, when, subject, body, listing = parts
        changes = []
        for line in listing.splitlines():
            columns = line.split("\t")
            if len(columns) < 2 or not columns[0]:
                continue
            status = columns[0][0]
            if status in ("R", "C") and len(columns) == 3:
                changes.append(Change("R" if status == "R" else "A", columns[2], columns[1] if status == "R" else None))
            elif status in ("A", "M", "D", "T"):
                changes.append(Change("M" if status == "T" else status, columns[1]))
        found.append(Commit(sha, int(when), subject.strip(), body.strip(), tuple(changes)))
    return found


def read_tree(repo: Path, commit: str, folder: str, *, suffix: str = ".md", timeout: float = 600.0) -> dict[str, str]:
    """The texts of the files under ``folder`` at ``commit`` whose names end in ``suffix``, by path relative
    to ``folder`` (POSIX; undecodable bytes replaced)."""
    folder = folder.strip("/")
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", commit, "--", folder],
            cwd=repo, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"cannot read {folder} at {commit[:12]} in {repo}: {exc}") from exc
    if archive.returncode != 0:
        message = archive.stderr.decode("utf-8", "replace").strip().splitlines() or ["no message"]
        raise GitError(f"git archive failed in {repo}: {message[-1]}")
    texts: dict[str, str] = {}
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.endswith(suffix):
                continue
            handle = tar.extractfile(member)
            if handle is not None:
                texts[member.name[len(folder) + 1 :]] = handle.read().decode("utf-8", "replace")
    return texts


def read_files(repo: Path, wanted: Iterable[tuple[str, str]], *, timeout: float = 600.0) -> dict[tuple[str, str], str]:
    """The texts of ``(commit, path)`` pairs, read by one ``git cat-file --batch``; pairs that do not exist
    are left out."""
    asked = list(dict.fromkeys(wanted))
    if not asked:
        return {}
    request = "".join(f"{commit}:{path}\n" for commit, path in asked).encode("utf-8")
    try:
        done = subprocess.run(
            ["git", "cat-file", "--batch"], cwd=repo, input=request, capture_output=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"cannot read files in {repo}: {exc}") from exc
    if done.returncode != 0:
        raise GitError(f"git cat-file failed in {repo}: {done.stderr.decode('utf-8', 'replace').strip()}")
    out, at, texts = done.stdout, 0, {}
    for key in asked:
        end = out.index(b"\n", at)
        header = out[at:end].split()
        at = end + 1
        if len(header) != 3 or header[1] != b"blob":
            continue  # "<name> missing" (or not a file): nothing follows
        size = int(header[2])
        texts[key] = out[at : at + size].decode("utf-8", "replace")
        at += size + 1
    return texts
