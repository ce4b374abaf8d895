"""Loggers that import :mod:`logging` on first use.

Importing ``logging`` (with ``string``, ``traceback`` and their regular
expressions) costs about a tenth of a cold ``memrouter search`` process. The
modules on that path log only on rare events, so they hold a
:class:`LazyLogger`, which creates the real logger when it first logs.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from typing import Any


__all__ = ["LazyLogger"]


class LazyLogger:
    """Stands in for ``logging.getLogger(name)`` until a message is logged."""

    __slots__ = ("name", "_logger")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def _get(self) -> Any:
        if self._logger is None:
            import logging

            self._logger = logging.getLogger(self.name)
        return self._logger

    # stacklevel=2: the record names the caller of these methods, not this module
    def debug(self, msg: str, *args: object) -> None:
        self._get().debug(msg, *args, stacklevel=2)

    def info(self, msg: str, *args: object) -> None:
        self._get().info(msg, *args, stacklevel=2)

    def warning(self, msg: str, *args: object) -> None:
        self._get().warning(msg, *args, stacklevel=2)

    def error(self, msg: str, *args: object) -> None:
        self._get().error(msg, *args, stacklevel=2)
