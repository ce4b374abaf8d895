"""Whether a process runs: the one check every lock, claim and server helper asks."""

from __future__ import annotations

import os

__all__ = ["process_alive"]


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs on this host (as any user: one we may not signal runs too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
