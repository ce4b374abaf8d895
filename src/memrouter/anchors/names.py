"""Which files define a name: a map from ``git grep`` over the lines that define something.

Resolving a backticked name to "exactly one definition" by parsing every
file of a repository is too slow (seconds); git finds the lines that
define something (``memrouter.anchors.infer.DEFINITION_LINE``) in C, and
only the few files a name points to are parsed, to learn its dotted name.
The map is kept with the commit it was read at and, when ``HEAD`` moves,
only the files the new commits touched are read again.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from memrouter.anchors.infer import DEFINITION_LINE, definition_names
from memrouter.anchors.symbols import EXTENSIONS, language_for
from memrouter.repo.git import GitError
from memrouter.repo.history import RunningLog, finish_log
from memrouter.repo.tree import collect, grep_lines

__all__ = ["NameIndex"]

_UNSEEN: dict[str, None] = {}  # a path not met yet in ``read``
_SOURCES = tuple(f"*{suffix}" for suffix, language in EXTENSIONS.items() if language)


@dataclass
class NameIndex:
    """Name (case as written; PowerShell names also lower-cased) -> the source files defining it; a name written
    at the start of its line is kept as ``^name`` (top-level)."""

    head: str | None = None
    files: dict[str, list[str]] = field(default_factory=dict)  # path -> names it defines

    _by_name: dict[str, set[str]] | None = field(default=None, repr=False, compare=False)

    def paths(self, name: str) -> set[str]:
        """The files that define ``name``."""
        if self._by_name is None:
            by_name: dict[str, set[str]] = {}
            for path, names in self.files.items():
                for item in names:
                    by_name.setdefault(item.removeprefix("^"), set()).add(path)
            self._by_name = by_name
        return self._by_name.get(name, set()) | self._by_name.get(name.lower(), set())

    def top_level_only(self, path: str, name: str) -> bool:
        """Whether every definition of ``name`` the lines of ``path`` show is top-level (its dotted name is
        ``name``, no parse needed)."""
        entries = [item for item in self.files.get(path, ()) if item.removeprefix("^") in (name, name.lower())]
        return bool(entries) and all(item.startswith("^") for item in entries)

    @staticmethod
    def start(top: Path, paths: list[str] | None = None, *, perl: bool = True) -> subprocess.Popen[bytes]:
        """Start the ``git grep`` that ``read`` takes in (every source file, or only ``paths``)."""
        return grep_lines(top, DEFINITION_LINE, paths, globs=_SOURCES, perl=perl)

    def read(
        self,
        process: subprocess.Popen[bytes],
        head: str | None,
        paths: list[str] | None = None,
        *,
        top: Path | None = None,
    ) -> None:
        """Take in the output of ``start`` (replacing what ``paths`` defined; everything when it is None)."""
        try:
            output = collect(process, "grep", ok=(0, 1))
        except GitError as exc:
            if top is None or "perl" not in str(exc).lower():
                raise
            output = collect(self.start(top, paths, perl=False), "grep", ok=(0, 1))  # a git built without PCRE
        self.take(output, head, paths)

    @classmethod
    def start_drained(cls, top: Path) -> RunningLog:
        """``start`` over every source file, its output taken in by threads as git writes it (``RunningLog``):
        started before the names are needed, git goes on instead of waiting for its pipe to be read."""
        return RunningLog(cls.start(top))

    def read_drained(self, running: RunningLog, head: str | None, top: Path) -> None:
        """Take in what ``start_drained`` read (read again as ``read`` does, with its fallback, if git failed)."""
        try:
            output = finish_log(running)
        except GitError:
            if running.process.returncode != 1:  # 1: nothing matched
                return self.read(self.start(top), head, top=top)
            output = b""
        self.take(output, head, None)

    def take(self, output: bytes, head: str | None, paths: list[str] | None) -> None:
        """Take in ``git grep`` output (``start``'s), replacing what ``paths`` defined (everything when None)."""
        if paths is None:
            self.files = {}
        else:
            for path in paths:
                self.files.pop(path, None)
        # Each file's lines come together: its path is decoded and its language looked up once, and its names are
        # kept in a dict (in order, each once).
        found: dict[bytes, dict[str, None] | None] = {}  # path as git wrote it -> its names (None: no source file)
        for record in output.split(b"\n"):
            parts = record.split(b"\0", 2)
            if len(parts) != 3:
                continue
            names = found.get(parts[0], _UNSEEN)
            if names is _UNSEEN:
                path = parts[0].decode("utf-8", "surrogateescape")
                names = None if language_for(path) is None and PurePosixPath(path).suffix else {}
                found[parts[0]] = names
            if names is None:
                continue
            text = parts[2].decode("utf-8", "replace")
            name = definition_names(text)
            if name is None:
                continue
            # A definition at the start of its line (not a Go method) is top-level: its dotted name is its name.
            outermost = text[:1] not in (" ", "\t") and not text.startswith("func (")
            for item in (name, name.lower()) if "-" in name else (name,):
                names[f"^{item}" if outermost else item] = None
        for raw, names in found.items():
            if names:
                self.files[raw.decode("utf-8", "surrogateescape")] = list(names)
        self.head = head
        self._by_name = None

    def to_data(self) -> dict[str, object]:
        return {"head": self.head, "files": self.files}

    @classmethod
    def from_data(cls, data: dict[str, object]) -> NameIndex:
        files = data.get("files")
        if not isinstance(files, dict):
            raise ValueError("not a name index")
        return cls(head=data.get("head") if isinstance(data.get("head"), str) else None,  # type: ignore[arg-type]
                   files={str(p): [str(n) for n in names] for p, names in files.items()})  # fmt: skip
