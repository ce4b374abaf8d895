"""Canonical -> external backend sync: the engine, its state, the queue, the hook, the freshness report.

Importing this package is cheap (no MCP SDK): backends are handed in by the
router, which builds them from configuration.
"""

from __future__ import annotations

from memrouter.external.sync.engine import CONTEXT_PREFIX, Change, Syncer, SyncReport, draft_for, marker_for
from memrouter.external.sync.hook import HookResult, install_hook, uninstall_hook
from memrouter.external.sync.queue import QUEUE_FILE, changes_from_entries, read_queue, staged_changes
from memrouter.external.sync.state import SyncRecord, load_records
from memrouter.external.sync.validate import validate

__all__ = [
    "CONTEXT_PREFIX",
    "Change",
    "HookResult",
    "QUEUE_FILE",
    "SyncRecord",
    "SyncReport",
    "Syncer",
    "changes_from_entries",
    "draft_for",
    "install_hook",
    "load_records",
    "marker_for",
    "read_queue",
    "staged_changes",
    "uninstall_hook",
    "validate",
]
