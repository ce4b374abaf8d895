"""Running a sync or a freshness report for the Router: which changes, which backends, the queue.

The rules of one backend's sync are ``memrouter.external.sync.engine``'s; this module
picks the change set (every memory, what git has staged, or the hook's queue),
runs it against each target and drains the queue of what every target took.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memrouter.config.settings import Config
from memrouter.core.errors import BackendUnavailable, InvalidInput
from memrouter.core.model import Memory
from memrouter.external.sync.engine import Syncer
from memrouter.external.sync.queue import QUEUE_FILE, changes_from_entries, read_queue, remove_done, staged_changes
from memrouter.external.sync.validate import validate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from memrouter.external.sync.state import SyncState

__all__ = ["CHANGE_SETS", "run_sync", "run_validate"]

CHANGE_SETS = ("all", "staged", "queue")


def run_sync(
    targets: Sequence[Any],
    mapping: SyncState,
    config: Config,
    read: Callable[[str], Memory],
    current_hashes: Callable[[], dict[str, str]],
    lock: Any,
    *,
    changes: str = "all",
    dry_run: bool = False,
    force: bool = False,
) -> list[Any]:
    """Sync the memories one way to ``targets``; one ``SyncReport`` per target (see ``Router.sync``)."""

    if changes not in CHANGE_SETS:
        raise InvalidInput(f"unknown change set {changes!r}; use {', '.join(CHANGE_SETS)}")
    queue_path = Path(config.index_dir) / QUEUE_FILE
    entries: list[dict[str, Any]] = []
    listed: list[Any] = []
    if changes == "staged":
        listed = staged_changes(config.root)
    elif changes == "queue":
        entries = read_queue(queue_path)
        listed = changes_from_entries(entries)
    if changes != "all":
        current_hashes()  # the index must know the files before state is compared
    reports: list[Any] = []
    source_repo = config.project_dir.name if config.project_dir else None
    for target in targets:
        syncer = Syncer(
            target, mapping, read, current_hashes, lock=lock, project_dir=config.project_dir, source_repo=source_repo
        )
        with mapping.exclusive(target.name):  # another machine's run of this project waits here
            if changes == "all":
                reports.append(syncer.sync_all(dry_run=dry_run, force=force))
            else:
                reports.append(syncer.run(listed, dry_run=dry_run, force=force))
    if changes == "queue" and entries and not dry_run:
        done = set.intersection(*(report.done for report in reports))
        remove_done(queue_path, entries, done)
    return reports


def run_validate(
    targets: Sequence[Any],
    mapping: SyncState,
    current: dict[str, str],
    lock: Any,
    *,
    check_remote: bool = False,
) -> list[Any]:
    """The freshness report per target (``memrouter.external.sync.validate``): local state only unless ``check_remote``."""

    reports: list[Any] = []
    for target in targets:
        remote = None
        if check_remote:
            if not target.available(force=True):
                raise BackendUnavailable(f"{target.name} is unavailable at {target.endpoint}")
            remote = target
        with lock:
            reports.append(validate(mapping, target.name, current, remote=remote))
    return reports
