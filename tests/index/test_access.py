"""Access counts: noted by get and search, written in batches to usage.sqlite (never the index), feeding the decay."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import write

from memrouter import Router
from memrouter.index.sqlite.access import FLUSH_SECONDS, Access, decay_factor


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def rows(index_dir: Path) -> dict[str, tuple[int, float]]:
    if not (index_dir / "usage.sqlite").exists():
        return {}
    with sqlite3.connect(index_dir / "usage.sqlite") as conn:
        return {name: (count, last) for name, count, last in conn.execute("SELECT * FROM memory_access")}


def test_get_and_search_are_counted_in_one_batch_written_at_close(memories: Path, tmp_path: Path) -> None:
    clock = Clock()
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False, clock=clock) as router:
        router.get("conventions/commit-messages")
        names = [hit.name for hit in router.search("flaky", mode="lexical")]
        assert names and rows(tmp_path / "idx") == {}  # noted in memory: no write per read
        stats = router.workspace.index.access.stats()
        assert stats["conventions/commit-messages"] == Access(1, clock.now)
        assert {name for name in names} <= set(stats)
    written = rows(tmp_path / "idx")
    assert written["conventions/commit-messages"] == (1, clock.now)
    assert {name: written[name][0] for name in names} == dict.fromkeys(names, 1)


def test_a_batch_is_written_once_it_is_old_enough_and_counts_add_up(memories: Path, tmp_path: Path) -> None:
    clock = Clock()
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False, clock=clock) as router:
        router.get("ci/flaky-tests")
        clock.now += FLUSH_SECONDS
        router.get("ci/flaky-tests")  # the batch is old enough: this read writes it
        assert rows(tmp_path / "idx") == {"ci/flaky-tests": (2, clock.now)}
        assert router.workspace.index.access.pending == 0
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False, clock=clock) as router:
        clock.now += 10
        router.get("ci/flaky-tests")
    assert rows(tmp_path / "idx") == {"ci/flaky-tests": (3, clock.now)}


def test_a_busy_index_keeps_the_notes_for_the_next_flush(memories: Path, tmp_path: Path) -> None:
    clock = Clock()
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False, clock=clock) as router:
        router.get("ci/flaky-tests")
        other = sqlite3.connect(tmp_path / "idx" / "usage.sqlite")
        other.execute("BEGIN IMMEDIATE")  # another process holds the counts' write lock
        try:
            assert router.workspace.index.access.flush() is False
            assert router.workspace.index.access.pending == 1
        finally:
            other.rollback()
            other.close()
        assert router.workspace.index.access.flush() is True
    assert rows(tmp_path / "idx") == {"ci/flaky-tests": (1, clock.now)}


def test_decay_factor_halves_its_loss_after_stale_days_and_slows_with_use() -> None:
    day = 86400.0
    assert decay_factor(Access(0, None), 0.0, 90 * day, 0.0, 90.0) == 1.0  # off
    assert decay_factor(Access(0, None), 0.0, 90 * day, 0.5, 90.0) == pytest.approx(0.75)
    assert decay_factor(Access(1, 0.0), 0.0, 0.0, 0.5, 90.0) == 1.0  # just used
    assert decay_factor(Access(3, 0.0), 0.0, 90 * day, 0.5, 90.0) > decay_factor(
        Access(0, None), 0.0, 90 * day, 0.5, 90.0
    )


def test_janitor_decay_reorders_search_by_use_only_when_configured(tmp_path: Path) -> None:
    root = tmp_path / "project" / ".serena" / "memories"
    write(root, "old-used", "# Deploy notes\n\ndeploy checklist for the release train\n")
    write(root, "old-idle", "# Deploy checklist\n\nthe deploy checklist for the release train\n")
    clock = Clock()
    for decay, expected_first in ((None, None), (0.9, "old-used")):
        if decay is not None:
            (tmp_path / "project" / "memrouter.toml").write_text(f"[janitor]\ndecay = {decay}\nstale_days = 30\n")
        with Router.open(root=root, index_dir=tmp_path / f"idx-{decay}", watch=False, clock=clock) as router:
            plain = [hit.name for hit in router.search("deploy checklist", mode="lexical")]
            assert plain[0] == "old-idle"  # the better match while neither is idle
            clock.now += 200 * 86400  # both idle for 200 days ...
            router.get("old-used")  # ... but one of them was just read
            ranked = [hit.name for hit in router.search("deploy checklist", mode="lexical")]
            if expected_first is None:
                assert ranked == plain  # no decay: use never changes the ranking
            else:
                assert ranked[0] == expected_first and router.status()["config"]["janitor"]["decay"] == decay


def test_a_search_never_writes_the_index(memories: Path, tmp_path: Path) -> None:
    """A process that only reads leaves the index file and its write-ahead log as they were."""
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        router.refresh()
    index = tmp_path / "idx" / "index.sqlite"
    before = index.stat().st_mtime_ns, index.read_bytes()
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        assert router.search("flaky", mode="lexical") and router.get("ci/flaky-tests")
    assert (index.stat().st_mtime_ns, index.read_bytes()) == before
    assert not (tmp_path / "idx" / "index.sqlite-wal").exists()
    assert rows(tmp_path / "idx")["ci/flaky-tests"][0] >= 1


def test_counts_kept_in_the_index_move_to_usage_sqlite(memories: Path, tmp_path: Path) -> None:
    from memrouter.index.sqlite.connection import connect
    from memrouter.index.sqlite.schema import MIGRATIONS, migrate

    index_dir = tmp_path / "idx"
    index_dir.mkdir()
    conn = connect(index_dir / "index.sqlite")
    migrate(conn, [m for m in MIGRATIONS if m.name != "0500_usage_moves_out"])
    conn.execute("INSERT INTO memory_access (name, count, last_access) VALUES ('ci/flaky-tests', 4, 1.5)")
    conn.close()
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
        assert router.workspace.index.access.stats()["ci/flaky-tests"] == Access(4, 1.5)
        tables = {row[0] for row in router.workspace.conn.execute("SELECT name FROM sqlite_master")}
        assert "memory_access" not in tables


def test_damaged_counts_start_again_from_zero(memories: Path, tmp_path: Path) -> None:
    (tmp_path / "idx").mkdir()
    (tmp_path / "idx" / "usage.sqlite").write_bytes(b"not a database" * 100)
    with Router.open(root=memories, index_dir=tmp_path / "idx", watch=False) as router:
        router.get("ci/flaky-tests")
        assert router.workspace.index.access.stats()["ci/flaky-tests"].count == 1
    assert rows(tmp_path / "idx")["ci/flaky-tests"][0] == 1
