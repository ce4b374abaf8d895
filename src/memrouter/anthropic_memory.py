"""Anthropic's memory tool (``memory_20250818``) served from memrouter's store.

``MemrouterMemoryTool`` is a ``anthropic.tools.BetaAbstractMemoryTool``: give
it to the SDK's tool runner and Claude's ``view``, ``create``,
``str_replace``, ``insert``, ``delete`` and ``rename`` commands on
``/memories`` read and change the project's memories. It answers as the SDK's
own ``BetaLocalFilesystemMemoryTool`` does, word for word, for the same
commands; what differs is that each write is a memory write (the write guard,
the index, the audit log: ``memrouter.ops.memory_files``), so a secret or a
near-copy of another memory is refused, and what Claude writes is found by
``memrouter search``, the MCP server and ``search_tool()`` at once.

Paths: ``/memories/<p>`` is the memories root's ``<p>``, confined to the
root (``..`` and links that leave it are refused with the SDK's words). A
memory is a markdown file, so a file is named ``.md`` or with one of
``TEXT_SUFFIXES`` (``notes.txt`` is kept as ``notes.txt.md`` and listed as
``notes.txt``); other names, ``x.txt.md`` (which ``x.txt`` already maps to),
dot names and, for new files, names outside memrouter's alphabet (lower-case
``[a-z0-9][a-z0-9._-]*`` segments) are refused with a message saying so.

Needs the ``anthropic`` extra: ``pip install 'memrouter[anthropic]'``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from memrouter.core.errors import InvalidInput, MemoryRouterError, NotFound, NotInstalled
from memrouter.core.names import SUFFIX, validate_name
from memrouter.ops import memory_files
from memrouter.ops.audit import acting_as

try:
    from anthropic import beta_tool
    from anthropic.tools import BetaAbstractMemoryTool, ToolError
except ImportError as exc:  # the optional extra
    raise NotInstalled("anthropic", "pip install 'memrouter[anthropic]'") from exc

if TYPE_CHECKING:
    from anthropic.lib.tools import BetaFunctionTool
    from anthropic.types.beta import (
        BetaCacheControlEphemeralParam,
        BetaMemoryTool20250818CreateCommand,
        BetaMemoryTool20250818DeleteCommand,
        BetaMemoryTool20250818InsertCommand,
        BetaMemoryTool20250818RenameCommand,
        BetaMemoryTool20250818StrReplaceCommand,
        BetaMemoryTool20250818ViewCommand,
    )

    from memrouter.router import Router

__all__ = ["MemrouterMemoryTool", "PREFIX", "TEXT_SUFFIXES"]

PREFIX = "/memories"
# Besides .md, the suffixes a file of the memory tool may have; ``notes.txt`` is the memory ``notes.txt``.
TEXT_SUFFIXES = (".txt", ".xml", ".json", ".yaml", ".yml", ".csv", ".html", ".rst", ".toml", ".log")
# What the reference implementation shows: folders two levels deep, line numbers six wide, at most this many lines.
LISTING_DEPTH = 2
NUMBER_WIDTH = 6
MAX_LINES = 999_999
SEARCH_LIMIT = 5

T = TypeVar("T")


class MemrouterMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool over ``router``'s memories (see the module docstring).

    ``agent`` names who writes (the audit log's ``agent:<agent>``; the guard
    treats it as an agent). ``search(query)`` and ``search_tool()`` search the
    same memories through memrouter.
    """

    def __init__(
        self, router: Router, *, agent: str = "claude", cache_control: BetaCacheControlEphemeralParam | None = None
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.router = router
        self.actor = f"agent:{agent}"

    # -- the six commands -----------------------------------------------------
    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        """A folder's files and folders two levels deep, with sizes; or a file's lines, numbered."""
        with self._acting():
            relative = self._relative(command.path)
            if self._is_folder(relative):
                return self._listing(command.path, relative)
            name = self._existing(relative)
            if name is None:
                raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")
            lines = self._call(lambda: memory_files.read_text(self.router.workspace, name)).split("\n")
            if len(lines) > MAX_LINES:
                raise ToolError(f"File {command.path} exceeds maximum line limit of 999,999 lines.")
            first, shown = 1, lines
            if command.view_range and len(command.view_range) == 2:
                start, end = command.view_range
                first = max(1, start)
                shown = lines[first - 1 : len(lines) if end == -1 else end]
            numbered = "\n".join(_numbered(first + index, line) for index, line in enumerate(shown))
            return f"Here's the content of {command.path} with line numbers:\n{numbered}"

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        """A new file (never over an existing one)."""
        with self._acting():
            relative = self._relative(command.path)
            if self._is_folder(relative):
                raise ToolError(f"File {command.path} already exists")
            name = self._new_file(command.path, relative)
            if self.router.store.exists(name):
                raise ToolError(f"File {command.path} already exists")
            self._call(
                lambda: memory_files.write_text(
                    self.router.workspace, name, command.file_text, expected_hash="", actor=self.actor
                )
            )
            return f"File created successfully at: {command.path}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        """Replace the one occurrence of ``old_str``; answer the changed lines with two either side."""
        with self._acting():
            name, memory = self._file_for_edit(command.path)
            text, old = memory.text, command.old_str
            count = text.count(old)
            if count == 0:
                raise ToolError(
                    f"No replacement was performed, old_str `{old}` did not appear verbatim in {command.path}."
                )
            if count > 1:
                lines = [text.count("\n", 0, at) + 1 for at in _occurrences(text, old)]
                raise ToolError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                    f"{', '.join(map(str, lines))}. Please ensure it is unique"
                )
            changed_line = text.count("\n", 0, text.find(old))
            new_text = text.replace(old, command.new_str)
            self._write(name, new_text, memory.hash)
            new_lines = new_text.split("\n")
            start, end = max(0, changed_line - 2), min(len(new_lines), changed_line + 3)
            snippet = "\n".join(_numbered(number, new_lines[number - 1]) for number in range(start + 1, end + 1))
            return f"The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{snippet}"

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        """Insert ``insert_text`` as a line after line ``insert_line`` (0: before the first)."""
        with self._acting():
            name, memory = self._file_for_edit(command.path)
            lines = memory.text.split("\n")
            if lines[-1] == "":
                lines.pop()
            if not 0 <= command.insert_line <= len(lines):
                raise ToolError(
                    f"Invalid `insert_line` parameter: {command.insert_line}. "
                    f"It should be within the range [0, {len(lines)}]."
                )
            lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
            new_text = "\n".join(lines)
            self._write(name, new_text if new_text.endswith("\n") else new_text + "\n", memory.hash)
            return f"The file {command.path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        """Delete a file, or a folder and everything in it."""
        with self._acting():
            relative = self._relative(command.path)
            workspace = self.router.workspace
            if relative == "":
                raise ToolError("Cannot delete the /memories directory itself")
            if self._is_folder(relative):
                self._call(lambda: memory_files.delete_folder(workspace, relative))
            else:
                name = self._existing(relative)
                if name is None:
                    raise ToolError(f"The path {command.path} does not exist")
                self._call(lambda: memory_files.delete_file(workspace, name))
            return f"Successfully deleted {command.path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        """Move a file or a folder to a path that does not exist yet."""
        with self._acting():
            old, new = self._relative(command.old_path), self._relative(command.new_path)
            workspace = self.router.workspace
            if old == "":
                raise ToolError("Cannot rename the /memories directory itself")
            if self._is_folder(new) or self._existing(new) is not None:
                raise ToolError(f"The destination {command.new_path} already exists")
            if self._is_folder(old):
                self._check_folder(command.new_path, new)
                self._check_parents(command.new_path, new)
                (self.router.store.root / new).parent.mkdir(parents=True, exist_ok=True)  # as the reference does
                self._call(lambda: memory_files.move_folder(workspace, old, new, actor=self.actor))
                return f"Successfully renamed {command.old_path} to {command.new_path}"
            source = self._existing(old)
            if source is None:
                if "/" in new:  # the reference makes the destination's folder first, where it can
                    try:
                        (self.router.store.root / new).parent.mkdir(parents=True, exist_ok=True)
                    except OSError:
                        pass  # a file where a folder would go: nothing made, as in the reference
                raise ToolError(f"The path {command.old_path} does not exist")
            target = self._new_file(command.new_path, new)
            self._call(lambda: memory_files.move_file(workspace, source, target, actor=self.actor))
            return f"Successfully renamed {command.old_path} to {command.new_path}"

    # -- search through memrouter ---------------------------------------------
    def search(self, query: str, limit: int = SEARCH_LIMIT) -> str:
        """The memories best matching ``query`` (memrouter's search), as JSON: path, title, snippet, score."""
        hits = self._call(lambda: self.router.search(query, limit=limit))
        found = [
            {"path": f"{PREFIX}/{_shown(hit.name + SUFFIX)}", "title": hit.title, "snippet": hit.snippet,
             "score": round(hit.score, 4)}
            for hit in hits
        ]  # fmt: skip
        return json.dumps(found, ensure_ascii=False)

    def search_tool(self) -> BetaFunctionTool[Callable[[str], str]]:
        """A function tool for the same runner, ``memory_search``: Claude searches /memories by meaning and words."""

        def memory_search(query: str) -> str:
            """Search the files in /memories by meaning and words; the best matches first, with their paths.

            Args:
                query: what to look for, in a few words
            """
            return self.search(query)

        return beta_tool(memory_search)

    # -- paths ----------------------------------------------------------------
    def _relative(self, path: str) -> str:
        """The path under the root that ``path`` names (``""``: the root), with the reference's checks and words."""
        if not path.startswith(PREFIX):
            raise ToolError(f"Path must start with /memories, got: {path}")
        root = os.path.realpath(self.router.store.root)
        rest = path[len(PREFIX) :].lstrip("/")
        resolved = os.path.realpath(os.path.join(root, rest)) if rest else root
        if resolved != root and not resolved.startswith(root + os.sep):
            raise ToolError(f"Path {path} would escape /memories directory")
        return "" if resolved == root else Path(resolved).relative_to(root).as_posix()

    def _is_folder(self, relative: str) -> bool:
        return (self.router.store.root / relative).is_dir() if relative else True

    def _existing(self, relative: str) -> str | None:
        """The memory an existing file ``relative`` is (None when there is none, or it cannot be one)."""
        name = _memory_name(relative)
        if name is None:
            return None
        try:
            return name if self.router.store.exists(validate_name(name, strict=False)) else None
        except InvalidInput:
            return None

    def _new_file(self, path: str, relative: str) -> str:
        """The memory a new file ``relative`` becomes; a ToolError saying why when it cannot be one."""
        name = _memory_name(relative)
        if name is None:
            if relative.endswith(SUFFIX):
                raise ToolError(
                    f"{path}: memrouter keeps {PREFIX}/{relative[: -len(SUFFIX)]} in this file, so it cannot be "
                    f"a file of its own; name it {PREFIX}/{relative.rsplit('.', 2)[0]}.md"
                )
            raise ToolError(
                f"{path}: memrouter keeps memories as text files; name the file with .md "
                f"(or {', '.join(TEXT_SUFFIXES)})"
            )
        try:
            validate_name(name, strict=True)
        except InvalidInput as exc:
            raise ToolError(f"{path}: memrouter cannot create this file: {exc}") from exc
        self._check_parents(path, relative)
        return name

    def _check_parents(self, path: str, relative: str) -> None:
        """Refuse a path whose folders include a file, or a new folder named like a file."""
        parts = relative.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth])
            if self._existing(folder) is not None:
                raise ToolError(f"{path}: {PREFIX}/{folder} is a file, not a folder")
            if not self._is_folder(folder):
                self._check_folder(path, folder)

    @staticmethod
    def _check_folder(path: str, relative: str) -> None:
        """Refuse a new folder memrouter could not tell from a file, or whose name it cannot hold."""
        last = relative.rsplit("/", 1)[-1]
        if last.endswith(SUFFIX) or _text_suffix(last):
            raise ToolError(f"{path}: memrouter cannot name a folder {last!r}: it names files so")
        try:
            validate_name(relative, strict=True)
        except InvalidInput as exc:
            raise ToolError(f"{path}: memrouter cannot create this folder: {exc}") from exc

    def _file_for_edit(self, path: str) -> tuple[str, Any]:
        relative = self._relative(path)
        if self._is_folder(relative):
            raise ToolError(f"The path {path} is not a file.")
        name = self._existing(relative)
        if name is None:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        memory = self._call(lambda: self.router.store.read(name))
        if memory.problems and memory.problems[0].startswith("not valid UTF-8"):
            raise ToolError(f"{path} is not UTF-8 text")
        return name, memory

    def _listing(self, path: str, relative: str) -> str:
        folder = self.router.store.root / relative
        found = self._call(lambda: memory_files.entries(self.router.workspace, relative, LISTING_DEPTH, label=_shown))
        lines = [f"{_size(folder.lstat().st_size)}\t{path}"]
        lines += [f"{_size(entry.size)}\t{path}/{entry.path}{'/' if entry.is_folder else ''}" for entry in found]
        header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        return header + "\n" + "\n".join(lines)

    def _write(self, name: str, text: str, expected_hash: str) -> None:
        self._call(
            lambda: memory_files.write_text(
                self.router.workspace, name, text, expected_hash=expected_hash, actor=self.actor
            )
        )

    @contextmanager
    def _acting(self) -> Iterator[None]:
        with acting_as(self.actor):
            yield

    @staticmethod
    def _call(call: Callable[[], T]) -> T:
        """Run a store call; memrouter's refusals and errors become the tool's errors, with their message."""
        try:
            return call()
        except NotFound as exc:
            raise ToolError(str(exc)) from exc
        except MemoryRouterError as exc:
            raise ToolError(str(exc)) from exc
        except OSError as exc:
            raise ToolError(f"file system error: {exc.strerror or exc}") from exc


def _memory_name(relative: str) -> str | None:
    """The memory a file path names: ``x.md`` is ``x``, ``x.txt`` is ``x.txt``; None for any other file name
    (no suffix, another suffix, ``x.txt.md``: the file ``x.txt`` already is)."""
    last = relative.rsplit("/", 1)[-1]
    if not relative or last.startswith("."):
        return None
    if last.endswith(SUFFIX):
        stem = relative[: -len(SUFFIX)]
        return None if _text_suffix(stem) else stem
    return relative if _text_suffix(relative) else None


def _shown(disk: str) -> str:
    """How a file on disk is named to the client: ``notes.txt.md`` is ``notes.txt``; ``x.md`` stays."""
    if disk.endswith(SUFFIX) and _text_suffix(disk[: -len(SUFFIX)]):
        return disk[: -len(SUFFIX)]
    return disk


def _text_suffix(path: str) -> bool:
    last = path.rsplit("/", 1)[-1]
    return "." in last[1:] and last[last.rindex(".") :].lower() in TEXT_SUFFIXES


def _occurrences(text: str, old: str) -> Iterator[int]:
    """Where each occurrence of ``old`` starts, overlapping ones too."""
    at = text.find(old)
    while at != -1:
        yield at
        at = text.find(old, at + 1)


def _numbered(number: int, line: str) -> str:
    return f"{str(number).rjust(NUMBER_WIDTH)}\t{line}"


def _size(size: int) -> str:
    """A size as the reference writes it: ``0B``, ``512B``, ``4K``, ``1.5M``."""
    if size == 0:
        return "0B"
    unit = min((size.bit_length() - 1) // 10, 3)
    value = size / 1024**unit
    return f"{int(value) if value == int(value) else f'{value:.1f}'}{'BKMG'[unit]}"
