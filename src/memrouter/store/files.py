"""The canonical layer: markdown files under the memories root.

Reads never change a file. Writes are atomic: the new text goes to a
temporary file in the same folder, is flushed to disk, and replaces the old
file with one rename, so a reader sees the old or the new file, never half of
one. A write may carry the hash the caller last saw; if the file changed
since, the write is refused with ``Conflict``.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, replace
from pathlib import Path

from memrouter.errors import Conflict, InvalidInput, MemoryRouterError, NotFound
from memrouter.model import Memory
from memrouter.store.names import SUFFIX, name_for_path, path_for_name, validate_name

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["FileStat", "MemoryStore", "decode", "MAX_FILE_BYTES"]

MAX_FILE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class FileStat:
    """What a stat scan sees of one memory file."""

    name: str
    path: str
    mtime_ns: int
    size: int


def decode(raw: bytes) -> tuple[str, str | None]:
    """Decode file bytes as UTF-8; undecodable bytes are replaced and reported."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return raw.decode("utf-8", errors="replace"), f"not valid UTF-8 (byte {exc.start}); read with replacements"


class MemoryStore:
    """The memories root on disk: scan, read, write and delete memory files."""

    def __init__(self, root: Path, *, readonly: bool = False) -> None:
        self.root = root
        self.readonly = readonly

    # -- reading -----------------------------------------------------------
    def scan(self) -> Iterator[FileStat]:
        """Every ``*.md`` file under the root, recursively, skipping dot entries.

        Symbolic links are followed only while they stay inside the root.
        """
        for name, path, mtime_ns, size in self.stat_files():
            yield FileStat(name, path, mtime_ns, size)

    def stat_files(self) -> list[tuple[str, str, int, int]]:
        """``scan()`` as plain ``(name, path, mtime_ns, size)`` tuples.

        The refresh before every search compares these with the index, so this
        stays close to the bare system calls and builds no records.
        """
        found: list[tuple[str, str, int, int]] = []
        resolved_root: Path | None = None
        stack: list[tuple[str, str]] = [(str(self.root), "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            for entry in entries:
                entry_name = entry.name
                if entry_name[0] == ".":
                    continue
                try:
                    if entry.is_symlink():
                        resolved_root = resolved_root or self.root.resolve()
                        if not Path(entry.path).resolve().is_relative_to(resolved_root):
                            continue
                        if entry.is_dir():
                            continue  # linked folders could loop; their files are reached directly
                    elif entry.is_dir():
                        stack.append((entry.path, prefix + entry_name + "/"))
                        continue
                    if not entry_name.endswith(SUFFIX) or not entry.is_file():
                        continue
                    stat = entry.stat()
                except OSError:
                    continue
                found.append((prefix + entry_name[:-3], entry.path, stat.st_mtime_ns, stat.st_size))
        return found

    def path_for(self, name: str, *, strict: bool = False) -> Path:
        """The file for ``name``; existing files may have looser names than new ones."""
        return path_for_name(self.root, name, strict=strict)

    def read_bytes(self, name: str) -> bytes:
        path = self.path_for(name)
        try:
            return path.read_bytes()
        except FileNotFoundError as exc:
            raise NotFound(f"memory {validate_name(name, strict=False)!r} not found") from exc
        except IsADirectoryError as exc:
            raise NotFound(f"memory {name!r} not found ({name!r} is a folder)") from exc
        except OSError as exc:
            raise MemoryRouterError(f"cannot read memory {name!r}: {exc.strerror or exc}") from exc

    def read(self, name: str) -> Memory:
        """The memory named ``name``, parsed; ``NotFound`` if there is no such file."""
        name = validate_name(name, strict=False)
        raw = self.read_bytes(name)
        return self.parse_bytes(name, self.path_for(name), raw)

    @staticmethod
    def parse_bytes(name: str, path: Path | str, raw: bytes) -> Memory:
        from memrouter.store.parse import parse_memory, sha256_hex  # parsing loads when a file changed

        text, problem = decode(raw)
        memory = parse_memory(name, str(path), text)
        if problem is None:
            return memory
        # The identity of a file is its stored bytes, even when they are not UTF-8.
        return replace(
            memory,
            hash=sha256_hex(raw),
            problems=(problem, *memory.problems),
        )

    def current_hash(self, name: str) -> str | None:
        """Hash of the stored file, or None if it does not exist."""
        try:
            raw = self.read_bytes(name)
        except NotFound:
            return None
        from memrouter.store.parse import sha256_hex

        # Equal to content_hash(text) for UTF-8 files; the stored bytes otherwise.
        return sha256_hex(raw)

    # -- writing -----------------------------------------------------------
    def _check_writable(self) -> None:
        if self.readonly:
            raise InvalidInput(f"the memories root {self.root} is read-only")

    def write(self, name: str, text: str, *, expected_hash: str | None = None) -> Memory:
        """Atomically write ``text`` as memory ``name`` (a new, strictly valid name or an existing file).

        ``expected_hash`` is the hash the caller last read, or ``""`` to
        require that the memory does not exist yet.
        """
        self._check_writable()
        if "\x00" in text:
            raise InvalidInput("memory content must not contain NUL characters")
        path = self._path_for_write(name)
        name = name_for_path(self.root, path)
        if expected_hash is not None:
            current = self.current_hash(name)
            if (current or "") != expected_hash:
                state = "does not exist" if current is None else f"has hash {current[:12]}"
                raise Conflict(
                    f"memory {name!r} changed since it was read (it now {state}); read it again and retry"
                )
        from memrouter.store.parse import parse_memory

        data = text.encode("utf-8")
        _atomic_write(path, data)
        return parse_memory(name, str(path), text)

    def _path_for_write(self, name: str) -> Path:
        strict_error: InvalidInput | None = None
        try:
            return path_for_name(self.root, name, strict=True)
        except InvalidInput as exc:
            strict_error = exc
        # A file that already exists under a looser name may be rewritten in place.
        path = path_for_name(self.root, name, strict=False)
        if path.is_file():
            return path
        raise strict_error

    def delete(self, name: str, *, expected_hash: str | None = None) -> Memory:
        """Remove the memory file and return what it held (for the caller's records)."""
        self._check_writable()
        memory = self.read(name)
        if expected_hash is not None and memory.hash != expected_hash:
            raise Conflict(f"memory {memory.name!r} changed since it was read; read it again and retry")
        try:
            Path(memory.path).unlink()
        except FileNotFoundError as exc:
            raise NotFound(f"memory {memory.name!r} not found") from exc
        _remove_empty_parents(Path(memory.path).parent, self.root)
        return memory


def _atomic_write(path: Path, data: bytes) -> None:
    """Write to a temporary sibling, fsync, rename over the target, fsync the folder."""
    import tempfile  # lazy: only writes need it

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(temp, path.stat().st_mode & 0o777)
        else:
            os.chmod(temp, 0o644)
        os.replace(temp, path)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass  # already renamed or never created: nothing to clean up
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError as exc:  # some file systems cannot fsync a folder; the rename is done
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(dir_fd)


def _remove_empty_parents(folder: Path, root: Path) -> None:
    """Drop folders emptied by a delete, up to (not including) the root."""
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
