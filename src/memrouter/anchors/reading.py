"""Reading a repository for anchor checks: files now (work tree or staging area), files then, definitions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memrouter.anchors.symbols import Definition, Parsers, language_for
from memrouter.anchors.text import is_binary
from memrouter.repo.history import PathHistory
from memrouter.repo.tree import BlobReader, WorkTree, blob_id

__all__ = ["MAX_PARSE", "Blob", "Repository"]

Blob = tuple[str, bytes]
MAX_PARSE = 1_000_000  # bytes: a larger file (generated code, data) is checked at file level


@dataclass
class Repository:
    """One repository as anchors are checked against it: its history, its work tree (or staging area) and its
    blobs, each file's definitions parsed once per blob (and looked up in the index's cache first)."""

    top: Path
    history: PathHistory
    tree: WorkTree
    blobs: BlobReader
    parsers: Parsers
    lookup: Callable[[str], dict[str, Definition] | None] = lambda blob: None  # cached definitions by blob id
    staged: bool = False  # "now" is the staging area (what the next commit records)
    learned: dict[str, tuple[str, dict[str, Definition]]] = field(default_factory=dict)  # new cache entries
    _now: dict[str, Blob | None] = field(default_factory=dict)
    _definitions: dict[str, dict[str, Definition] | None] = field(default_factory=dict)

    def now(self, path: str) -> Blob | None:
        """(blob id, bytes) of ``path`` now: the work tree (or the staging area); None when it is no file."""
        if path not in self._now:
            if self.staged:
                self._now[path] = self.blobs.read(f":{path}")
            else:
                file = self.top / path
                try:
                    data = file.read_bytes() if file.is_file() else None
                except OSError:
                    data = None
                self._now[path] = (blob_id(data), data) if data is not None else None
        return self._now[path]

    def at(self, seq: int, path: str) -> Blob | None:
        """(blob id, bytes) of ``path`` in commit ``seq``."""
        return self.blobs.read(f"{self.history.commit(seq)}:{path}")

    def id_at(self, seq: int, path: str) -> str | None:
        """The blob id of ``path`` in commit ``seq`` (the blob itself is not read)."""
        return self.blobs.blob_id(f"{self.history.commit(seq)}:{path}")

    def prefetch(self, wanted: list[tuple[int, str]]) -> None:
        """Read these (seq, path) blobs in one exchange with git."""
        self.blobs.read_many([f"{self.history.commit(seq)}:{path}" for seq, path in wanted])

    def definitions(self, blob: Blob, language: str) -> dict[str, Definition] | None:
        """The definitions in a blob (cached by its id); None without a grammar."""
        key = blob[0]
        if key not in self._definitions:
            found = self.lookup(key)
            if found is None:
                found = self.parsers.definitions(blob[1], language)
                if found is not None:
                    self.learned[key] = (language, found)
            self._definitions[key] = found
        return self._definitions[key]

    def parse_ahead(self, paths: Iterable[str], going: Callable[[], bool]) -> int:
        """Parse the files at ``paths`` as they are now while ``going()`` says there is time: a check will likely
        want their definitions and finds them parsed. How many were parsed."""
        parsed = 0
        for path in dict.fromkeys(paths):
            if not going():
                break
            blob = self.now(path)
            if blob is None or blob[0] in self._definitions or len(blob[1]) > MAX_PARSE or is_binary(blob[1]):
                continue  # no file, parsed already, or one a check does not parse
            language = language_for(path, blob[1][:200])
            if language and self.parsers.available(language):
                self.definitions(blob, language)
                parsed += 1
        return parsed

    def uncommitted(self, path: str) -> bool:
        if self.staged:
            return self.tree.staged(path)
        return self.tree.uncommitted(path)

    def exists_now(self, path: str) -> bool:
        return self.now(path) is not None
