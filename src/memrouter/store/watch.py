"""Notice file changes under the memories root without scanning it.

A long-running process (the MCP server, a warm Router) must see an edit made
by a person or another tool on its next search, yet a stat scan of a
thousand files costs milliseconds. On Linux, inotify tells us cheaply: one
non-blocking read per search. Elsewhere (or when the kernel refuses more
watches) ``available`` is False and the router falls back to scanning at most
every ``refresh_interval`` seconds.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from memrouter.core.lazylog import LazyLogger

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = ["ChangeWatcher"]

log = LazyLogger(__name__)

_IN_MODIFY = 0x002
_IN_ATTRIB = 0x004
_IN_CLOSE_WRITE = 0x008
_IN_MOVED_FROM = 0x040
_IN_MOVED_TO = 0x080
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_ONLYDIR = 0x01000000
_MASK = (
    _IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO
    | _IN_CREATE | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR
)  # fmt: skip
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = os.O_CLOEXEC


class ChangeWatcher:
    """Watches every folder under a root; ``changed()`` says whether anything moved."""

    def __init__(self, root: Path, also: Iterable[tuple[Path, bool]] = ()) -> None:
        """``also``: more folders to watch (the source files' folders), each with its subfolders or alone."""
        self.root = root
        self.also = list(also)
        self._fd = -1
        self._watched: set[str] = set()
        self._libc: Any = None  # ctypes.CDLL, imported only where inotify exists
        if sys.platform.startswith("linux"):
            self._start()

    @property
    def available(self) -> bool:
        return self._fd >= 0

    def _start(self) -> None:
        import ctypes
        import ctypes.util

        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        except (OSError, AttributeError) as exc:
            log.debug("inotify unavailable: %s", exc)
            return
        if fd < 0:
            log.debug("inotify_init1 failed: %s", os.strerror(ctypes.get_errno()))
            return
        self._libc, self._fd = libc, fd
        self.watch_tree()

    def watch_tree(self) -> None:
        """Add watches for folders not yet watched (call after a refresh scan)."""
        if self._fd < 0 or self._libc is None:
            return
        folders = [str(self.root)]
        for current, dirs, _files in os.walk(self.root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            folders.extend(os.path.join(current, d) for d in dirs)
        for extra, deep in self.also:
            if not extra.is_dir():
                continue  # made later: the next change seen adds it (watch_tree runs again)
            folders.append(str(extra))
            for current, dirs, _files in os.walk(extra) if deep else ():
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                folders.extend(os.path.join(current, d) for d in dirs)
        # Adding a watch that exists is cheap and idempotent, and re-adding
        # covers folders deleted and created again under the same path.
        for folder in folders:
            result = self._libc.inotify_add_watch(self._fd, os.fsencode(folder), _MASK)
            if result < 0:
                import ctypes

                log.info(
                    "cannot watch %s (%s); falling back to periodic scans", folder, os.strerror(ctypes.get_errno())
                )
                self.close()
                return
            self._watched.add(folder)

    def changed(self) -> bool:
        """True if any event arrived since the last call (events are drained)."""
        if self._fd < 0:
            return True
        seen = False
        while True:
            try:
                data = os.read(self._fd, 65536)
            except BlockingIOError:
                return seen
            except OSError as exc:
                log.info("inotify read failed (%s); falling back to periodic scans", exc)
                self.close()
                return True
            if not data:
                return seen
            seen = True

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        self._fd = -1
        self._watched.clear()

    def __del__(self) -> None:
        self.close()
