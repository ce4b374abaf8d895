"""The command line: a plain search runs on the fast path (``fast_search``, no click); the click group
(``app``) runs everything else. ``main`` (the group) is loaded on first use, so the fast path never imports click."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["main"]


def __getattr__(name: str) -> Any:
    if name != "main":
        raise AttributeError(f"module 'memrouter.cli' has no attribute {name!r}")
    from memrouter.cli.app import main

    return main
