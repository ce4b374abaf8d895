"""Atomic file writes, and the write area that holds memrouter's lock and temporary files.

The write area (``<root>/.memrouter-write/``) holds a ``.gitignore`` of ``*``,
so git never shows what is inside. A writer killed after making the folder
and before its ``.gitignore`` was complete must not leave lock files that git
would offer to commit: every store checks the ``.gitignore`` once, by
content, and writes it again (atomically) when it is missing or wrong.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from memrouter.core.processes import process_alive

__all__ = [
    "STALE_TEMP_AGE", "TEMP_SUFFIX", "WRITE_AREA",
    "atomic_write", "fsync_folder", "remove_empty_parents", "remove_stale_temps", "write_area",
]  # fmt: skip

WRITE_AREA = ".memrouter-write"
# A temporary file whose writer is gone, or older than this, is removed (seconds).
STALE_TEMP_AGE = 3600.0
TEMP_SUFFIX = ".tmp"
_IGNORE = b"# memrouter's lock and temporary files: never commit them\n*\n"


def write_area(root: Path) -> Path:
    """The write area under ``root``, made if missing, with its ``.gitignore`` checked and repaired."""
    area = root / WRITE_AREA
    area.mkdir(parents=True, exist_ok=True)
    ignore = area / ".gitignore"
    try:
        if ignore.read_bytes() == _IGNORE:
            return area
    except FileNotFoundError:
        pass  # no ignore file yet (a new area, or a writer killed before it wrote one): written below
    # Through a temporary file and a rename: git never reads a half-written ignore file. The temporary
    # file of a writer killed here is covered by the rule once the next writer completes it.
    temp = area / f".gitignore.{os.getpid()}{TEMP_SUFFIX}"
    temp.write_bytes(_IGNORE)
    os.replace(temp, ignore)
    return area


def remove_stale_temps(folder: Path, stray: list[str]) -> None:
    """Remove temporary files whose writer died (``<pid>.<random>.tmp``), or that are old.

    ``stray`` lists the in-tree temporary files of older memrouter versions;
    they are removed once they are older than ``STALE_TEMP_AGE``.
    """
    import time

    now = time.time()
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        pid_text = entry.name.split(".", 1)[0]
        try:
            old = now - entry.stat().st_mtime > STALE_TEMP_AGE
            if old or (pid_text.isdigit() and not process_alive(int(pid_text))):
                os.unlink(entry.path)
        except OSError:
            continue  # gone already, or not ours to remove
    for path in stray:
        try:
            if now - os.stat(path).st_mtime > STALE_TEMP_AGE:
                os.unlink(path)
        except OSError:
            continue


def atomic_write(path: Path, data: bytes, temp_dir: Path) -> tuple[int, int]:
    """Write to a temporary file, fsync, rename over the target, fsync the folder.

    Returns the new file's ``(mtime_ns, size)``, taken from the temporary file
    itself, so a later writer's file is never mistaken for this one.
    """
    import tempfile  # lazy: only writes need it

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f"{os.getpid()}.", suffix=TEMP_SUFFIX, dir=temp_dir)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            if path.exists():
                os.fchmod(handle.fileno(), path.stat().st_mode & 0o777)
            else:
                os.fchmod(handle.fileno(), 0o644)
            written = os.fstat(handle.fileno())
        try:
            _replace(temp, path)
        except OSError as exc:
            if exc.errno != errno.EXDEV:
                raise
            # The folder is another file system (a mount inside the root): write beside the file.
            os.unlink(temp)
            return atomic_write(path, data, path.parent)
    except BaseException:
        try:
            os.unlink(temp)
        except FileNotFoundError:
            pass  # already renamed or never created: nothing to clean up
        raise
    fsync_folder(path.parent)
    return written.st_mtime_ns, written.st_size


def _replace(temp: str, path: Path) -> None:
    """``os.replace``, making the folder again if a concurrent delete just removed it as empty."""
    for _ in range(5):
        try:
            os.replace(temp, path)
            return
        except FileNotFoundError:
            if not os.path.exists(temp):
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
    os.replace(temp, path)


def fsync_folder(folder: Path) -> None:
    try:
        dir_fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError as exc:  # some file systems cannot fsync a folder; the rename is done
        if exc.errno not in (errno.EINVAL, errno.EBADF):
            raise
    finally:
        os.close(dir_fd)


def remove_empty_parents(folder: Path, root: Path) -> None:
    """Drop folders emptied by a delete, up to (not including) the root."""
    while folder != root and folder.is_relative_to(root):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent
