"""The canonical layer: markdown files under the memories root.

Reads never change a memory file. Writes are atomic and safe between
processes:

- every change of a memory holds that memory's lock (``fcntl.flock`` on a
  lock file) from the hash check to the rename, so two writers that both
  pass ``expected_hash`` get one success and one ``Conflict``, never two
  successes, and no acknowledged write is lost;
- the new text goes to a temporary file, is flushed to disk, and replaces
  the old file with one rename, so a reader sees the old or the new file,
  never half of one.

Lock and temporary files live in ``<root>/.memrouter-write/``, which holds a
``.gitignore`` of ``*`` (git never picks them up; ``memrouter.store.atomic``)
and is skipped by every scan (it starts with a dot). Temporary files left by a
killed writer are removed by the next writer.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
from pathlib import Path

from memrouter.core.errors import Conflict, InvalidInput, MemoryRouterError, NotFound
from memrouter.core.model import Memory
from memrouter.core.names import SUFFIX, name_for_path, normalize_name, path_for_name, validate_name
from memrouter.core.records import record, replace
from memrouter.store.atomic import (
    TEMP_SUFFIX,
    WRITE_AREA,
    atomic_write,
    remove_empty_parents,
    remove_stale_temps,
    write_area,
)
from memrouter.store.sources import SourceFiles, is_source_name, read_section, refuse_read_only

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = ["FileStat", "MemoryStore", "Written", "WRITE_AREA", "decode", "read_regular", "MAX_FILE_BYTES"]

MAX_FILE_BYTES = 8 * 1024 * 1024


@record
class FileStat:
    """What a stat scan sees of one memory file."""

    name: str
    path: str
    mtime_ns: int
    size: int


@record
class Written:
    """A memory as just written, with the stat of the very file this write made."""

    memory: Memory
    mtime_ns: int
    size: int


def decode(raw: bytes) -> tuple[str, str | None]:
    """Decode file bytes as UTF-8; undecodable bytes are replaced and reported."""
    try:
        return raw.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return raw.decode("utf-8", errors="replace"), f"not valid UTF-8 (byte {exc.start}); read with replacements"


def read_regular(path: str | Path) -> bytes:
    """The bytes of a regular file; ``IsADirectoryError`` or ``OSError(EINVAL)`` for anything else.

    Opened without blocking, so a FIFO or device named ``*.md`` is refused
    instead of hanging the reader.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat_module.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder", str(path))
        if not stat_module.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class MemoryStore:
    """The memories root on disk: scan, read, write and delete memory files."""

    def __init__(self, root: Path, *, readonly: bool = False, sources: SourceFiles | None = None) -> None:
        self.root = root
        self.readonly = readonly
        self.sources = sources  # the repository's files, read in place as read-only memories
        # Files named ``*.md.md`` (no name reaches them: ``x.md`` means ``x``) and
        # temporary files of an older memrouter, seen by the last scan.
        self.misnamed: list[str] = []
        self.stray_temps: list[str] = []
        self._held: dict[str, int] = {}  # name -> lock fd, for locks this store holds now
        self._resolved_root: Path | None = None  # the root's real path, once it exists
        self._doomed: set[str] = set()  # names whose lock file goes when released (deleted memories)
        self._cleaned = False
        self._area: Path | None = None  # the write area, once made and checked
        # Told of every change this store makes: (name, hash before or None, memory after or None).
        # The audit log listens here (``memrouter.ops.audit``), so no write path can skip it.
        self.observer: Callable[[str, str | None, Memory | None], None] | None = None

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
        misnamed: list[str] = []
        stray: list[str] = []
        resolved_root: Path | None = None
        stack: list[tuple[str, str]] = [(str(self.root), "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=_entry_name)  # one order on every file system
            except OSError:
                continue
            for entry in entries:
                entry_name = entry.name
                if entry_name[0] == ".":
                    if entry_name.endswith(TEMP_SUFFIX) and SUFFIX + "." in entry_name:
                        stray.append(entry.path)  # ``.<name>.md.<random>.tmp`` of an older writer
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
                except (OSError, RuntimeError):  # RuntimeError: a symbolic link loop (pathlib)
                    continue
                if entry_name.endswith(SUFFIX + SUFFIX) or ("#" in entry_name and is_source_name(entry_name)):
                    misnamed.append(prefix + entry_name)  # a name no memory file may have (a source section's)
                    continue
                found.append((prefix + entry_name[:-3], entry.path, stat.st_mtime_ns, stat.st_size))
        self.misnamed = misnamed
        self.stray_temps = stray
        return found

    def path_for(self, name: str, *, strict: bool = False) -> Path:
        """The file for ``name``; existing files may have looser names than new ones."""
        if self._resolved_root is None and self.root.is_dir():
            self._resolved_root = self.root.resolve()  # kept: resolving walks every folder of the root's path
        return path_for_name(self.root, name, strict=strict, resolved_root=self._resolved_root)

    def exists(self, name: str) -> bool:
        """True when ``name``'s file is there (a regular file or a link to one)."""
        try:
            return self.path_for(name).is_file()
        except (InvalidInput, OSError):
            return False

    def read_bytes(self, name: str, path: Path | None = None) -> bytes:  # ``path``: from ``path_for``, if known
        path = path or self.path_for(name)
        try:
            return read_regular(path)
        except FileNotFoundError as exc:
            raise NotFound(f"memory {validate_name(name, strict=False)!r} not found") from exc
        except IsADirectoryError as exc:
            raise NotFound(f"memory {name!r} not found ({name!r} is a folder)") from exc
        except OSError as exc:
            if exc.errno == errno.EINVAL:
                raise NotFound(f"memory {name!r} not found ({path.name} is not a regular file)") from exc
            raise MemoryRouterError(f"cannot read memory {name!r}: {exc.strerror or exc}") from exc

    def read(self, name: str) -> Memory:
        """The memory named ``name``, parsed; ``NotFound`` if there is no such file (or source section)."""
        name = validate_name(name, strict=False)
        if is_source_name(name):
            return read_section(self.sources, name)
        path = self.path_for(name)
        return self.parse_bytes(name, path, self.read_bytes(name, path))

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

    # -- locking -------------------------------------------------------------
    def lock(self, *names: str) -> _MemoryLocks:
        """Hold the locks of ``names`` (validated names) for a ``with`` block.

        Locks are taken in sorted order (no deadlock between two writers of
        the same pair) and are re-entrant within this store, so a caller may
        hold a memory's lock around several writes and its index update.
        Every write path takes its names' locks first: a source section is refused here, before any change.
        """
        for name in names:
            refuse_read_only(name)
        return _MemoryLocks(self, sorted(set(names)))

    def _acquire(self, name: str) -> bool:
        """Take ``name``'s lock unless this store holds it already; True if taken now."""
        if name in self._held:
            return False
        import fcntl  # lazy: only writes lock

        path = self._locks_dir() / f"{_lock_key(name)}.lock"
        while True:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                # A deleting writer unlinks the lock file while holding it: a
                # waiter that got the old file must take the new one instead.
                if os.path.samestat(os.fstat(fd), os.stat(path)):
                    self._held[name] = fd
                    return True
            except FileNotFoundError:
                # The lock file was unlinked by a delete after we opened it: take the new one (loop).
                pass
            except BaseException:
                os.close(fd)
                raise
            os.close(fd)

    def _release(self, name: str) -> None:
        fd = self._held.pop(name, None)
        if fd is None:
            return
        if name in self._doomed:
            self._doomed.discard(name)
            (self._locks_dir() / f"{_lock_key(name)}.lock").unlink(missing_ok=True)
        os.close(fd)  # closing drops the flock

    def _work_dir(self) -> Path:
        if self._area is None or not self._area.is_dir():
            self._area = write_area(self.root)  # checks the area's .gitignore once per store
        return self._area

    def _locks_dir(self) -> Path:
        folder = self._work_dir() / "locks"
        folder.mkdir(exist_ok=True)
        return folder

    def _temp_dir(self) -> Path:
        folder = self._work_dir() / "tmp"
        folder.mkdir(exist_ok=True)
        if not self._cleaned:
            self._cleaned = True
            remove_stale_temps(folder, self.stray_temps)
        return folder

    # -- writing -----------------------------------------------------------
    def _check_writable(self, name: str) -> None:
        refuse_read_only(normalize_name(name))
        if self.readonly:
            raise InvalidInput(f"the memories root {self.root} is read-only")

    def write(self, name: str, text: str, *, expected_hash: str | None = None, record: bool = False) -> Written:
        """Atomically write ``text`` as memory ``name`` (a new, strictly valid name or an existing file).

        ``expected_hash`` is the hash the caller last read, or ``""`` to
        require that the memory does not exist yet; the check and the rename
        happen under the memory's lock. ``record`` admits a reserved name
        outside the strict alphabet (a sprint's ``_sprint`` record).
        """
        self._check_writable(name)
        from memrouter.store.compose import check_content

        check_content(text)
        data = text.encode("utf-8")
        path = self.path_for(name) if record else self._path_for_write(name)
        name = name_for_path(self.root, path)
        with self.lock(name):
            current = self.current_hash(name) if expected_hash is not None or self.observer else None
            if expected_hash is not None and (current or "") != expected_hash:
                state = "does not exist" if current is None else f"has hash {current[:12]}"
                raise Conflict(f"memory {name!r} changed since it was read (it now {state}); read it again and retry")
            from memrouter.store.parse import parse_memory

            mtime_ns, size = atomic_write(path, data, self._temp_dir())
            written = Written(parse_memory(name, str(path), text), mtime_ns, size)
            if self.observer is not None:
                self.observer(name, current, written.memory)
            return written

    def _path_for_write(self, name: str) -> Path:
        try:
            return self.path_for(name, strict=True)
        except InvalidInput as strict_error:
            path = self.path_for(name)  # a file that already exists under a looser name may be rewritten in place
            if path.is_file():
                return path
            raise strict_error from None

    def delete(self, name: str, *, expected_hash: str | None = None) -> Memory:
        """Remove the memory file and return what it held (for the caller's records)."""
        self._check_writable(name)
        name = validate_name(name, strict=False)
        self.read_bytes(name)  # NotFound before any lock file is made
        with self.lock(name):
            memory = self.read(name)
            if expected_hash is not None and memory.hash != expected_hash:
                raise Conflict(f"memory {memory.name!r} changed since it was read; read it again and retry")
            try:
                Path(memory.path).unlink()
            except FileNotFoundError as exc:
                raise NotFound(f"memory {memory.name!r} not found") from exc
            self._doomed.add(name)
            if self.observer is not None:
                self.observer(name, memory.hash, None)
        remove_empty_parents(Path(memory.path).parent, self.root)
        return memory


class _MemoryLocks:
    """The context manager ``MemoryStore.lock`` returns."""

    def __init__(self, store: MemoryStore, names: list[str]) -> None:
        self.store = store
        self.names = names
        self.taken: list[str] = []

    def __enter__(self) -> _MemoryLocks:
        try:
            for name in self.names:
                if self.store._acquire(name):
                    self.taken.append(name)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for name in reversed(self.taken):
            self.store._release(name)
        self.taken = []


def _entry_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _lock_key(name: str) -> str:
    import hashlib

    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:32]
