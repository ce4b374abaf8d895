"""The work tree and the object store, read in bulk: files, uncommitted changes, blobs, definition lines.

Each call is one git process whatever the number of paths: ``read_blobs``
sends every ``<commit>:<path>`` (or blob id) to one ``git cat-file --batch``;
``work_tree`` reads ``git ls-files`` and ``git status`` once. Paths are
repository-relative POSIX text, as git prints them with ``core.quotepath=off``.
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from memrouter.repo.git import GitError, GitSession

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import threading

__all__ = [
    "BlobReader",
    "WorkTree",
    "blob_id",
    "collect",
    "grep_lines",
    "parse_work_tree",
    "read_blobs",
    "start",
    "work_tree",
]


FEW_IDS = 32  # fewer blob ids than this are read with their blobs (see ``BlobReader.read_ids``)


def blob_id(data: bytes) -> str:
    """The id git gives a blob of ``data`` (SHA-1 of ``blob <size>\\0`` and the bytes)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class WorkTree:
    """The files of the work tree as git sees them now: tracked, changed but not committed, untracked."""

    files: frozenset[str]  # tracked paths (in the index), and untracked ones not ignored
    changed: dict[str, str] = field(default_factory=dict)  # path -> two-letter status (staged, then unstaged)
    untracked: frozenset[str] = frozenset()

    def uncommitted(self, path: str) -> bool:
        """Whether ``path`` differs from ``HEAD`` in the work tree (or the staging area), or is untracked."""
        return path in self.changed or path in self.untracked

    def staged(self, path: str) -> bool:
        """Whether the staging area holds a change of ``path`` (what the next commit records)."""
        code = self.changed.get(path, "  ")
        return code[0] not in " ?"


def _command(*args: str) -> list[str]:
    return ["git", "--no-pager", "--literal-pathspecs", "-c", "core.quotepath=off", *args]


def start(
    top: Path, *args: str, stdin: int = subprocess.DEVNULL, stderr: int = subprocess.PIPE
) -> subprocess.Popen[bytes]:
    """Start ``git *args`` in ``top`` (its output read later with ``collect``), so other work runs meanwhile."""
    try:
        return subprocess.Popen(
            _command(*args), cwd=top, stdout=subprocess.PIPE, stderr=stderr, stdin=stdin,
            env=GitSession.environment(),
        )  # fmt: skip
    except OSError as exc:
        raise GitError(f"cannot run git in {top}: {exc.strerror or exc}") from exc


def collect(
    process: subprocess.Popen[bytes], what: str, *, ok: tuple[int, ...] = (0,), timeout: float = 120.0
) -> bytes:
    """The output of a ``start`` process (``GitError`` when it failed or took longer than ``timeout``)."""
    try:
        output, errors = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        process.kill()
        process.communicate()
        raise GitError(f"git {what} took longer than {timeout:g} s") from exc
    if process.returncode not in ok:
        message = (errors.decode("utf-8", "replace").strip().splitlines() or ["no message"])[-1]
        raise GitError(f"git {what} failed: {message}")
    return output


def work_tree(top: Path) -> WorkTree:
    """The tracked files, the uncommitted changes and the untracked files of the work tree at ``top``."""
    listing = start(top, "ls-files", "-z")
    status = start(top, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames")
    return parse_work_tree(collect(listing, "ls-files"), collect(status, "status"))


def parse_work_tree(listing: bytes, status: bytes) -> WorkTree:
    """The work tree from ``git ls-files -z`` (``listing``) and ``git status --porcelain=v1 -z`` (``status``)."""
    files = {_text(item) for item in listing.split(b"\0") if item}
    changed: dict[str, str] = {}
    untracked: set[str] = set()
    for entry in status.split(b"\0"):
        if len(entry) < 4:
            continue
        code, path = entry[:2].decode("ascii", "replace"), _text(entry[3:])
        if code == "??":
            untracked.add(path)
        else:
            changed[path] = code
    return WorkTree(frozenset(files | untracked), changed, frozenset(untracked))


def read_blobs(top: Path, specs: list[str], *, timeout: float = 120.0) -> dict[str, tuple[str, bytes] | None]:
    """Each spec (``<commit>:<path>``, ``:<path>`` for the staging area, or a blob id) -> (blob id, bytes),
    or None when it names no blob; one ``git cat-file --batch`` for all of them."""
    wanted = [spec for spec in dict.fromkeys(specs) if spec and "\n" not in spec]
    if not wanted:
        return {}
    try:
        done = subprocess.run(
            _command("cat-file", "--batch"), cwd=top, input="\n".join(wanted).encode("utf-8", "surrogateescape") + b"\n",
            capture_output=True, timeout=timeout, env=GitSession.environment(),
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"git cat-file took longer than {timeout:g} s") from exc
    except OSError as exc:
        raise GitError(f"cannot run git in {top}: {exc.strerror or exc}") from exc
    if done.returncode != 0:
        raise GitError(f"git cat-file failed: {done.stderr.decode('utf-8', 'replace').strip()[-200:]}")
    found: dict[str, tuple[str, bytes] | None] = {}
    output, at = done.stdout, 0
    for spec in wanted:
        end = output.find(b"\n", at)
        if end < 0:
            break
        header = output[at:end].split(b" ")
        at = end + 1
        if len(header) != 3 or header[1] != b"blob":
            if len(header) == 3:  # a tree or another object: its content follows and is skipped
                at += int(header[2]) + 1
            found[spec] = None
            continue
        size = int(header[2])
        found[spec] = (header[0].decode("ascii"), output[at : at + size])
        at += size + 1
    return found


def grep_lines(
    top: Path, pattern: str, paths: list[str] | None = None, *, globs: tuple[str, ...] = (), perl: bool = True
) -> subprocess.Popen[bytes]:
    """Start ``git grep`` for the lines of the work tree's tracked text files matching ``pattern`` (a regular
    expression both POSIX extended and Perl syntax read alike: Perl's engine, when git has it, is many times
    faster), in ``paths`` when given, else in the files matching ``globs``; ``collect(process, "grep", ok=(0, 1))``
    reads ``path\\0line\\0text`` lines (``GitError`` naming Perl when git lacks it: start again with ``perl=False``)."""
    syntax = "-P" if perl else "-E"
    command = [
        "git",
        "--no-pager",
        "-c",
        "core.quotepath=off",
        "grep",
        "-I",
        "-n",
        "-z",
        "--no-color",
        syntax,
        "-e",
        pattern,
    ]
    if paths is not None:
        command += ["--", *(f":(literal){path}" for path in paths)]
    elif globs:
        command += ["--", *globs]
    try:
        return subprocess.Popen(
            command, cwd=top, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=GitSession.environment(),
        )  # fmt: skip
    except OSError as exc:
        raise GitError(f"cannot run git in {top}: {exc.strerror or exc}") from exc


def _send(process: subprocess.Popen[bytes], specs: list[str]) -> threading.Thread | None:
    """Write ``specs`` to a ``cat-file`` process, one a line: a long list from a thread (it would fill the pipe
    while git's answers wait to be read), which the caller joins once it has read the answers."""
    assert process.stdin is not None
    stdin = process.stdin
    payload = "".join(f"{spec}\n" for spec in specs).encode("utf-8", "surrogateescape")
    if len(payload) < 32_768:
        stdin.write(payload)
        stdin.flush()
        return None
    import threading  # only a long list needs one

    writer = threading.Thread(target=lambda: (stdin.write(payload), stdin.flush()))
    writer.start()
    return writer


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


class BlobReader:
    """One ``git cat-file --batch`` process for a verification: blobs read in batches or one at a time,
    each remembered (a blob never changes); and, for many blob ids wanted without the blobs, one
    ``git cat-file --batch-check``. Close it when done."""

    def __init__(self, top: Path) -> None:
        self.top = top
        self._process: subprocess.Popen[bytes] | None = None
        self._checker: subprocess.Popen[bytes] | None = None  # ``cat-file --batch-check``: ids, not contents
        self._known: dict[str, tuple[str, bytes] | None] = {}
        self._ids: dict[str, str | None] = {}

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            self._process = start(self.top, "cat-file", "--batch", stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
            if self._process.stdin is None or self._process.stdout is None:  # pragma: no cover - Popen gave pipes
                raise GitError("git cat-file has no pipes")
        return self._process

    def read(self, spec: str) -> tuple[str, bytes] | None:
        """(blob id, bytes) of ``<commit>:<path>``, ``:<path>`` or a blob id; None when that is no blob."""
        if spec not in self._known:
            self.read_many([spec])
        return self._known.get(spec)

    def read_many(self, specs: list[str]) -> None:
        """Read every spec not read yet, in one exchange (a thread writes while this one reads)."""
        wanted = [spec for spec in dict.fromkeys(specs) if spec not in self._known]
        for spec in [spec for spec in wanted if not spec or "\n" in spec]:
            self._known[spec] = None
            wanted.remove(spec)
        if not wanted:
            return
        process = self._start()
        assert process.stdin is not None and process.stdout is not None
        writer = _send(process, wanted)
        out = process.stdout
        try:
            for spec in wanted:
                header = out.readline().split(b" ")
                if len(header) != 3 or not header[2].strip().isdigit():  # "<spec> missing": a spec may hold spaces
                    if not header[0]:
                        raise GitError("git cat-file --batch ended")
                    self._known[spec] = None
                    continue
                size = int(header[2])
                data = out.read(size)
                out.read(1)
                self._known[spec] = (header[0].decode("ascii"), data) if header[1] == b"blob" else None
        except (OSError, ValueError) as exc:
            raise GitError(f"git cat-file stopped answering: {exc}") from exc
        if writer is not None:
            writer.join()

    def blob_id(self, spec: str) -> str | None:
        """The blob id of ``spec`` (as ``read`` takes it), without reading the blob when it was not read yet."""
        if spec not in self._known and spec not in self._ids:
            self.read_ids([spec])
        if spec in self._known:
            found = self._known[spec]
            return found[0] if found is not None else None
        return self._ids.get(spec)

    def read_ids(self, specs: list[str]) -> None:
        """Look up the blob id of every spec not known yet, in one exchange with ``git cat-file --batch-check``
        (git finds the ids without inflating the blobs): whether a file is the same needs no more. A few, while
        that process is not running, are read whole instead: starting a second git costs more than they do."""
        wanted = [spec for spec in dict.fromkeys(specs) if spec not in self._ids and spec not in self._known]
        for spec in [spec for spec in wanted if not spec or "\n" in spec]:
            self._ids[spec] = None
            wanted.remove(spec)
        if not wanted:
            return
        if self._checker is None and len(wanted) < FEW_IDS:
            self.read_many(wanted)
            return
        if self._checker is None:
            self._checker = start(
                self.top, "cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )  # fmt: skip
        process = self._checker
        assert process.stdout is not None
        writer = _send(process, wanted)
        try:
            for spec in wanted:  # "<id> blob", or "<spec> missing" (or "ambiguous")
                answer = process.stdout.readline().rstrip(b"\n").split(b" ")
                if not answer[0]:
                    raise GitError("git cat-file --batch-check ended")
                self._ids[spec] = answer[0].decode("ascii") if answer[1:] == [b"blob"] else None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise GitError(f"git cat-file stopped answering: {exc}") from exc
        finally:
            if writer is not None:
                writer.join()

    def close(self) -> None:
        """End the git processes."""
        for process in (self._process, self._checker):
            if process is None:
                continue
            if process.stdin is not None:
                process.stdin.close()
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
            if process.stderr is not None:
                process.stderr.close()
        self._process = self._checker = None

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
