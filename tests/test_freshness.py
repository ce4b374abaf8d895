"""Edits made behind the router's back are visible on the next search."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import write

from memrouter import Router
from memrouter.config.settings import Config, SearchConfig


def names(router: Router, query: str) -> list[str]:
    return [hit.name for hit in router.search(query, mode="lexical")]


def test_hand_edits_show_up_on_the_next_search(router: Router, memories: Path) -> None:
    assert names(router, "postgres")[0] == "adr/adr-001-postgres"
    write(memories, "new-topic/zebra", "# Zebra crossings\n\nzebra facts\n")
    assert names(router, "zebra") == ["new-topic/zebra"]
    # In-place rewrite (no rename), in a folder created after the router started.
    path = memories / "new-topic" / "zebra.md"
    with path.open("w", encoding="utf-8") as handle:
        handle.write("# Giraffes now\n\ngiraffe facts\n")
    assert names(router, "giraffe") == ["new-topic/zebra"]
    path.unlink()
    assert "new-topic/zebra" not in names(router, "giraffe")


def test_polling_fallback_without_a_watcher(memories: Path, tmp_path: Path) -> None:
    base = Config.load(root=memories, index_dir=tmp_path / "idx")
    config = Config(base.root, base.index_dir, base.project_dir, SearchConfig(refresh_interval=0.0))
    with Router(config, watch=False) as router:
        assert names(router, "postgres")
        write(memories, "late", "# Late arrival\n\nokapi\n")
        assert names(router, "okapi") == ["late"]


def test_polling_keeps_its_scans_to_a_share_of_the_time(memories: Path, tmp_path: Path) -> None:
    """Without a watcher, a scan that takes long (a store of 100,000 files) is not repeated before
    ``RESCAN_SHARE`` of the time since would pay for it; edits are seen once that time has passed."""
    from memrouter.index.sqlite.keeper import RESCAN_SHARE

    base = Config.load(root=memories, index_dir=tmp_path / "idx")
    config = Config(base.root, base.index_dir, base.project_dir, SearchConfig(refresh_interval=0.01))
    with Router(config, watch=False) as router:
        store = router.workspace.index.store
        scan = store.stat_files

        scans = []

        def slow_scan() -> list[tuple[str, str, int, int]]:  # as a large store's scan takes
            time.sleep(0.04)
            scans.append(1)
            return scan()

        store.stat_files = slow_scan  # type: ignore[method-assign]
        assert names(router, "postgres")
        assert len(scans) == 1
        write(memories, "late", "# Late arrival\n\nokapi\n")
        misses = 0
        for _ in range(round(4 / RESCAN_SHARE)):  # polls every 50 ms, well past the share's wait
            if names(router, "okapi"):
                break
            misses += 1
            time.sleep(0.05)
        else:
            pytest.fail("the edit was never seen")
        assert misses >= 1  # the searches right after a scan did not scan again
        assert len(scans) == 2  # and the one scan since, once the share allowed it, saw the edit
        assert names(router, "okapi") == ["late"]


@pytest.mark.skipif(not os.path.exists("/proc/sys/fs/inotify"), reason="inotify is Linux-only")
def test_watcher_reports_changes_once(memories: Path) -> None:
    from memrouter.store.watch import ChangeWatcher

    watcher = ChangeWatcher(memories)
    assert watcher.available
    assert watcher.changed() is False
    write(memories, "x", "# x\n")
    deadline = time.monotonic() + 5
    while not watcher.changed():
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert watcher.changed() is False
    watcher.close()
