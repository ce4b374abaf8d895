"""What inference checks a memory's text against in one repository: its files, their names, their definitions."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from memrouter.anchors.infer import Known, infer_anchors
from memrouter.anchors.names import NameIndex
from memrouter.anchors.reading import Repository
from memrouter.anchors.spec import Anchor
from memrouter.anchors.symbols import language_for
from memrouter.store import frontmatter

__all__ = ["RepositoryKnown"]


class RepositoryKnown:
    """Files (in the work tree or in history), file names and defined names (``NameIndex``, confirmed by a parse)
    of ``repository``, for ``infer_anchors``; ``memories`` is the memories folder, relative to the repository."""

    def __init__(self, repository: Repository, names: NameIndex | None, memories: str) -> None:
        self.repository = repository
        self.names = names
        self.memories = memories
        self._basenames: dict[str, list[str]] | None = None
        self.known = Known(
            is_file=lambda path: path in repository.tree.files or repository.history.known(path),
            by_basename=self.by_basename, memories=memories, definitions=self.definitions,
        )  # fmt: skip

    def anchors(self, file: Path, memory_path: str) -> list[Anchor]:
        """The anchors the memory file ``file`` (``memory_path`` in the repository) infers, with its line numbers."""
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        return self.anchors_of_text(text, memory_path)

    def anchors_of_text(self, text: str, memory_path: str) -> list[Anchor]:
        """The anchors a memory's whole text (front matter and body) infers, were it the file ``memory_path``."""
        _, body = frontmatter.split(text)
        first_line = text[: len(text) - len(body)].count("\n") + 1
        folder = PurePosixPath(memory_path).parent.as_posix()
        return infer_anchors(body, "" if folder == "." else folder, self.known, first_line=first_line)

    def by_basename(self, name: str) -> list[str]:
        """The files named ``name`` (in any folder)."""
        if self._basenames is None:
            found: dict[str, list[str]] = {}
            for path in self.repository.tree.files:
                found.setdefault(path.rsplit("/", 1)[-1], []).append(path)
            self._basenames = found
        return self._basenames.get(name, [])

    def definitions(self, symbol: str) -> list[tuple[str, str]]:
        """(path, dotted name) of each definition ``symbol`` names in the work tree (two at most: enough to
        tell "exactly one")."""
        if self.names is None:
            return []
        parts = symbol.split(".")
        paths = sorted(self.names.paths(parts[-1]))
        if len(parts) > 1:  # `module.name` names a file by its stem
            paths = [path for path in paths if PurePosixPath(path).stem == parts[0]] or paths
        if len(paths) > 1:  # defined in several files: not "exactly one" (no need to parse them to know)
            return [(paths[0], symbol), (paths[1], symbol)]
        if len(parts) == 1 and len(paths) == 1 and self.names.top_level_only(paths[0], symbol):
            return [(paths[0], symbol)]  # one top-level definition: named as written, no parse needed
        found: list[tuple[str, str]] = []
        for path in paths:
            blob = self.repository.now(path)
            language = language_for(path, blob[1][:200]) if blob else None
            if blob is None or not language or not self.repository.parsers.available(language):
                continue
            defined = self.repository.definitions(blob, language) or {}
            tail = ".".join(parts[1:]) if len(parts) > 1 and PurePosixPath(path).stem == parts[0] else symbol
            found += [
                (path, dotted) for dotted in defined
                if dotted == tail or dotted.endswith("." + tail) or (language == "powershell" and dotted.lower() == tail.lower())
            ]  # fmt: skip
        return found[:2]
