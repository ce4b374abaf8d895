"""Which commits changed which paths: the whole history read once, then only the new commits.

``PathHistory`` answers what anchor freshness asks of git without one
subprocess per file: the commits that touched a path after a given commit,
whether a path existed at a commit, and where a renamed path went. It is
built from one ``git log -z --name-status -M`` pass over ``HEAD`` and
brought up to a later ``HEAD`` by reading ``OLD..HEAD`` alone (history that
was rewritten, so that ``OLD`` is no ancestor of ``HEAD``, is read again
whole). Commits are numbered oldest first (``seq`` 1, 2, ...), so the
numbers already given never change when new commits arrive; the state is
plain data (``to_data`` / ``from_data``) that the local index caches.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from memrouter.repo.git import GitError, GitSession

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from typing import IO

__all__ = ["PathHistory", "RunningLog", "UnreadHistory", "finish_log", "read_history", "start_log"]

# A path's events: +seq when a commit added, changed or renamed into it; -seq when one deleted or renamed it away.
_START = "\x01"


@dataclass
class PathHistory:
    """The history of every path on one line of commits (see the module docstring)."""

    head: str | None = None
    commits: list[str] = field(default_factory=list)  # seq - 1 -> full commit id, oldest first
    times: list[int] = field(default_factory=list)  # seq - 1 -> commit time (Unix seconds)
    events: dict[str, list[int]] = field(default_factory=dict)  # path -> signed seqs, ascending by |seq|
    renames: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # old path -> [(seq, new path)]
    shallow: bool = False
    _order: dict[str, int] | None = field(default=None, repr=False, compare=False)

    # -- questions -----------------------------------------------------------
    @property
    def last(self) -> int:
        """The seq of ``head`` (0 when there is no commit)."""
        return len(self.commits)

    def seq_of(self, commit: str) -> int | None:
        """The seq of a commit given in full or as a prefix of at least 7 hex digits (None when unknown or ambiguous)."""
        if self._order is None:
            self._order = {sha: at for at, sha in enumerate(self.commits, 1)}
        found = self._order.get(commit)
        if found is not None or len(commit) >= 40 or len(commit) < 7:
            return found
        matches = [at for sha, at in self._order.items() if sha.startswith(commit)]
        return matches[0] if len(matches) == 1 else None

    def commit(self, seq: int) -> str:
        """The full id of commit ``seq``."""
        return self.commits[seq - 1]

    def changed_after(self, path: str, seq: int) -> list[int]:
        """The seqs of the commits after ``seq`` that touched ``path`` (added, changed, deleted, renamed), oldest first."""
        return [abs(event) for event in self.events.get(path, ()) if abs(event) > seq]

    def last_change(self, path: str) -> int | None:
        """The seq of the newest commit that touched ``path``."""
        events = self.events.get(path)
        return abs(events[-1]) if events else None

    def existed_at(self, path: str, seq: int) -> bool:
        """Whether ``path`` was a file in commit ``seq``."""
        state = False
        for event in self.events.get(path, ()):
            if abs(event) > seq:
                break
            state = event > 0
        return state

    def known(self, path: str) -> bool:
        """Whether any commit ever touched ``path``."""
        return path in self.events

    def renamed_after(self, path: str, seq: int) -> tuple[str, int] | None:
        """Where ``path`` went in the first rename after ``seq``: (new path, the rename's seq), or None."""
        later = [item for item in self.renames.get(path, ()) if item[0] > seq]
        if not later:
            return None
        at, new = min(later)
        return new, at

    def follow(self, path: str, seq: int) -> list[tuple[str, int]]:
        """The chain of renames of ``path`` after ``seq``: [(new path, rename seq), ...], oldest first."""
        chain: list[tuple[str, int]] = []
        seen = {path}
        while True:
            step = self.renamed_after(path, seq)
            if step is None or step[0] in seen:
                return chain
            chain.append(step)
            path, seq = step
            seen.add(path)

    # -- building ------------------------------------------------------------
    def extend(self, output: bytes) -> set[str]:
        """Add the commits of ``git log -z --name-status -M`` output (newest first), numbered after those known;
        returns the paths they touched."""
        touched: set[str] = set()
        records = output.split(_START.encode())[1:]
        self._order = None
        for record in reversed(records):
            head, _, rest = record.partition(b"\0")
            parts = head.decode("ascii", "replace").split()
            if len(parts) < 2:
                continue
            self.commits.append(parts[0])
            self.times.append(int(parts[1]))
            seq = len(self.commits)
            fields = rest.strip(b"\0\n").split(b"\0") if rest.strip(b"\0\n") else []
            at = 0
            while at < len(fields):
                status = fields[at].decode("ascii", "replace").strip()
                if not status:
                    at += 1
                    continue
                if status[0] in "RC" and at + 2 < len(fields):
                    old, new = _path(fields[at + 1]), _path(fields[at + 2])
                    at += 3
                    if status[0] == "R":
                        self._event(old, -seq)
                        self.renames.setdefault(old, []).append((seq, new))
                        touched.add(old)
                    self._event(new, seq)
                    touched.add(new)
                    continue
                path = _path(fields[at + 1]) if at + 1 < len(fields) else ""
                at += 2
                if path:
                    self._event(path, -seq if status[0] == "D" else seq)
                    touched.add(path)
        if records:
            self.head = self.commits[-1]
        return touched

    def _event(self, path: str, event: int) -> None:
        events = self.events.setdefault(path, [])
        if events and abs(events[-1]) == abs(event):
            events[-1] = event  # one commit, two entries for a path (a copy and a change): the last one says
        else:
            events.append(event)

    # -- caching -------------------------------------------------------------
    def to_data(self) -> dict[str, object]:
        """Plain data (JSON-ready) from which ``from_data`` makes the same history."""
        return {
            "head": self.head, "commits": self.commits, "times": self.times, "events": self.events,
            "renames": {old: [[seq, new] for seq, new in items] for old, items in self.renames.items()},
            "shallow": self.shallow,
        }  # fmt: skip

    @classmethod
    def from_data(cls, data: dict[str, object]) -> PathHistory:
        """The history ``to_data`` described (``ValueError`` when the data is not such a description)."""
        try:
            renames = {str(old): [(int(s), str(n)) for s, n in items] for old, items in data["renames"].items()}  # type: ignore[attr-defined]
            return cls(
                head=data["head"] if isinstance(data["head"], str) else None,
                commits=[str(c) for c in data["commits"]],  # type: ignore[attr-defined]
                times=[int(t) for t in data["times"]],  # type: ignore[attr-defined]
                events={str(p): [int(e) for e in ev] for p, ev in data["events"].items()},  # type: ignore[attr-defined]
                renames=renames,
                shallow=bool(data.get("shallow", False)),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a path history: {exc}") from exc


def _path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


_LOG = ["log", "-z", "--name-status", "-M", f"--format={_START}%H %ct"]


class UnreadHistory(PathHistory):
    """A history while git still reads it: no path is known yet, and each path asked about is noted (so what
    asked can be done again once the history is read)."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: set[str] = set()

    def known(self, path: str) -> bool:
        self.asked.add(path)
        return False


class RunningLog:
    """A ``git log`` started by ``start_log``, its output taken in by threads as git writes it: a pipe nobody
    reads stops git once the pipe's buffer is full, so without them git would wait for ``finish_log``."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        import threading  # only a verification reads the history

        self.process = process
        self.output: list[bytes] = []
        self.errors: list[bytes] = []
        self.readers = [
            threading.Thread(target=_drain, args=(stream, into), daemon=True)
            for stream, into in ((process.stdout, self.output), (process.stderr, self.errors))
        ]
        for reader in self.readers:
            reader.start()

    def stop(self) -> None:
        """End git (what it writes is not wanted) and its readers."""
        self.process.kill()
        self.process.wait()
        for reader in self.readers:
            reader.join()


def _drain(stream: IO[bytes], into: list[bytes]) -> None:
    """Append what ``stream`` gives to ``into`` until it ends (the read waits without holding the GIL)."""
    with stream:
        for chunk in iter(lambda: stream.read(1 << 16), b""):
            into.append(chunk)


def start_log(top: Path, since: str | None, head: str) -> RunningLog:
    """Start ``git log`` for the commits of ``since..head`` (all of ``head`` when ``since`` is None), so other
    work runs while git reads; ``finish_log`` collects it."""
    command = ["git", "--no-pager", "-c", "core.quotepath=off", *_LOG, f"{since}..{head}" if since else head, "--"]
    try:
        process = subprocess.Popen(
            command, cwd=top, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=GitSession.environment(),
        )  # fmt: skip
    except OSError as exc:
        raise GitError(f"cannot run git in {top}: {exc.strerror or exc}") from exc
    return RunningLog(process)


def finish_log(running: RunningLog, timeout: float = 120.0) -> bytes:
    """The output of a ``start_log`` run (``GitError`` if git failed or took longer than ``timeout``)."""
    process = running.process
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        process.kill()
        process.wait()
        raise GitError(f"git log took longer than {timeout:g} s") from exc
    finally:
        for reader in running.readers:
            reader.join()
    if process.returncode != 0:
        message = (b"".join(running.errors).decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        raise GitError(f"git log failed: {message}")
    return b"".join(running.output)


def read_history(
    session: GitSession, head: str, cached: PathHistory | None = None
) -> tuple[PathHistory, set[str] | None]:
    """``cached`` brought up to ``head`` (read whole when there is none or history was rewritten): the history
    and the paths the new commits touched (None when it was read whole)."""
    if cached is not None and cached.head == head:
        return cached, set()
    top = session.toplevel
    if cached is not None and cached.head is not None:
        ancestor = session.run("merge-base", "--is-ancestor", cached.head, head, check=False).returncode == 0
        if ancestor:
            touched = cached.extend(finish_log(start_log(top, cached.head, head)))
            return cached, touched
    history = PathHistory(
        shallow=(session.run("rev-parse", "--is-shallow-repository", check=False).stdout.strip() == "true")
    )
    history.extend(finish_log(start_log(top, None, head)))
    return history, None
