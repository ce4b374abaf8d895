"""The index file among many processes: damage, repair, read-only folders, busy writers."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from helpers import git_status, write

from memrouter import Router
from memrouter.core.errors import IndexBusy
from memrouter.index.sqlite import db
from memrouter.index.sqlite.postings import PostingsDamaged, decode, encode

HOLD_OPEN = (
    "import sys\nfrom pathlib import Path\nfrom memrouter.index.sqlite.db import IndexFile\n"
    "index = IndexFile(Path(sys.argv[1]))\nprint('open', flush=True)\nsys.stdin.read()\n"
)


@contextmanager
def held_open(index_path: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process with the index open, until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_OPEN, str(index_path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        yield holder
    finally:
        holder.communicate("", timeout=30)


def damage_header(path: Path) -> None:
    with path.open("r+b") as handle:
        handle.write(b"this is no longer a database" * 4)


def build(memories: Path, index_dir: Path) -> None:
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
        router.refresh()


def test_damage_is_moved_aside_once_and_only_the_newest_copy_is_kept(memories: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    build(memories, index_dir)
    for stamp in ("20200101T000000-1", "20210101T000000-2"):
        (index_dir / f"index.sqlite.corrupt-{stamp}").write_bytes(b"old")
    damage_header(index_dir / "index.sqlite")
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
        assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"
        assert any("moved to" in warning for warning in router.status()["warnings"])
    kept = list(index_dir.glob("index.sqlite.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() != b"old"
    with Router.open(root=memories, index_dir=index_dir, watch=False) as later:  # another process, later on
        status = later.status()
        assert status["index"]["last_repair"]["moved_to"] == kept[0].name
        assert status["index"]["kept_damaged_files"] == [kept[0].name]
        assert [w for w in status["warnings"] if "no vectors yet" not in w] == []  # the repair is history


def test_damage_while_another_process_has_it_open_is_left_alone(memories: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    build(memories, index_dir)
    with held_open(index_dir / "index.sqlite"):
        damage_header(index_dir / "index.sqlite")
        with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
            assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"
            router.save("# Written meanwhile\n\nstill saved\n", "meanwhile")
            status = router.status()
            assert status["index"]["mode"] == "memory"
            assert any("other processes have it open" in warning for warning in status["warnings"])
        assert not list(index_dir.glob("index.sqlite.corrupt-*"))
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:  # the last user repairs it
        assert router.status()["index"]["mode"] == "file"
        assert router.search("still saved", mode="lexical")[0].name == "meanwhile"
    assert len(list(index_dir.glob("index.sqlite.corrupt-*"))) == 1


@pytest.mark.sqlite_only("the damage is in the local lexical tables, which a search through PostgreSQL does not read")
def test_damage_found_during_use_with_another_user_falls_back_to_memory(memories: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
        router.refresh()
        with held_open(index_dir / "index.sqlite"):
            router.workspace.conn.execute("DROP TABLE terms")  # damage our own process finds on its next search
            assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"
            assert router.status()["index"]["mode"] == "memory"
    assert not list(index_dir.glob("index.sqlite.corrupt-*"))


def test_a_busy_index_is_waited_for_never_rebuilt(memories: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    (memories.parent.parent / "memrouter.toml").write_text("[index]\nwrite_wait = 0.3\n")
    build(memories, index_dir)
    blocker = sqlite3.connect(index_dir / "index.sqlite", isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process's long write
    try:
        with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
            memory = router.save("# Busy day\n\nwritten while the index was locked\n", "busy-day")
            assert (memories / "busy-day.md").read_text() == memory.text  # the file is the truth
            status = router.status()
            assert status["index"]["unindexed_writes"] == ["busy-day"]
            assert status["index"]["busy_waits"] >= 1 and status["index"]["mode"] == "file"
            assert any("not yet indexed" in warning for warning in status["warnings"])
            assert router.search("postgres", mode="lexical")  # reads go on from the index as it is
            blocker.execute("COMMIT")
            assert router.search("locked", mode="lexical")[0].name == "busy-day"
            assert router.status()["index"]["unindexed_writes"] == []
    finally:
        if blocker.in_transaction:
            blocker.execute("ROLLBACK")
        blocker.close()
    assert not list(index_dir.glob("index.sqlite.corrupt-*"))


def test_begin_immediate_gives_up_with_index_busy_after_the_wait(tmp_path: Path) -> None:
    index = db.IndexFile(tmp_path / "index.sqlite", write_wait=0.2)
    other = sqlite3.connect(tmp_path / "index.sqlite", isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        with pytest.raises(IndexBusy):
            db.begin_immediate(index.conn)
        assert time.monotonic() - started >= 0.2
        assert index.conn.busy_waits == 1
    finally:
        other.execute("ROLLBACK")
        other.close()
        index.close()


def test_switching_a_new_file_to_wal_waits_for_the_process_holding_it(tmp_path: Path) -> None:
    from memrouter.index.sqlite.connection import connect, enable_wal

    path = tmp_path / "new.sqlite"
    opener = connect(path)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # holds the file from its first write until it closes
    holder.execute("CREATE TABLE t (x)")
    opener.execute("PRAGMA busy_timeout = 0")  # as when SQLite refuses the switch without its busy handler
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        opener.execute("PRAGMA journal_mode = WAL")
    timer = threading.Timer(0.3, holder.close)
    timer.start()
    try:
        enable_wal(opener)
        assert opener.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        timer.join()
        opener.close()
    opener = connect(tmp_path / "other.sqlite")
    opener.write_wait = 0.2
    holder = sqlite3.connect(tmp_path / "other.sqlite", isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("CREATE TABLE t (x)")
    try:
        opener.execute("PRAGMA busy_timeout = 0")
        with pytest.raises(IndexBusy):  # and gives up after the write wait, saying why
            enable_wal(opener)
    finally:
        holder.close()
        opener.close()


def _make_read_only(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(folder)], check=True)
    else:
        folder.chmod(0o555)


def _make_writable(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    else:
        folder.chmod(0o755)


@pytest.mark.parametrize("fresh", [False, True], ids=["built-before", "never-built"])
def test_a_read_only_index_folder_is_read_as_it_is(memories: Path, tmp_path: Path, fresh: bool) -> None:
    index_dir = tmp_path / "idx"
    if fresh:
        index_dir.mkdir()
    else:
        build(memories, index_dir)
    before = sorted(p.name for p in index_dir.iterdir())
    _make_read_only(index_dir)
    try:
        with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
            assert router.get("ci/flaky-tests").title == "Flaky tests in CI"
            assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"
            assert [item.name for item in router.list("ci/")] == ["ci/flaky-tests"]
            router.save("# New note\n\nsaved beside a read-only index\n", "new-note")
            assert router.search("read-only index", mode="lexical")[0].name == "new-note"
            status = router.status()
            assert status["index"]["mode"] == "read-only copy in memory"
            assert any("not writable" in w or "cannot be written" in w for w in status["warnings"])
        assert sorted(p.name for p in index_dir.iterdir()) == before
    finally:
        _make_writable(index_dir)


def test_postings_checksums_catch_damage_sqlite_cannot_see(router: Router) -> None:
    assert router.search("postgres", mode="lexical")
    conn = router.workspace.conn
    blob = conn.execute("SELECT postings FROM terms WHERE term = 'postgr'").fetchone()[0]
    flipped = bytes([blob[0] ^ 0xFF]) + blob[1:]  # same length, different ids
    with db.transaction(conn):
        conn.execute("UPDATE terms SET postings = ? WHERE term = 'postgr'", (flipped,))
    assert db.integrity_problems(conn) == []  # SQLite's own check sees nothing
    with pytest.raises(PostingsDamaged):
        decode(flipped, "postgr")
    router.workspace.index.lexical = type(router.workspace.index.lexical)()  # as a new process would
    assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"
    with db.transaction(conn):
        conn.execute("UPDATE terms SET postings = ? WHERE term = 'postgr'", (blob[:-1],))  # odd length
    router.workspace.index.lexical = type(router.workspace.index.lexical)()
    assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"


@pytest.mark.sqlite_only(
    "the wrong postings are the local index's; PostgreSQL's rows are copied from the memories' text"
)
def test_full_index_rebuilds_postings_even_when_their_checksums_hold(router: Router) -> None:
    assert router.search("postgres", mode="lexical")
    conn = router.workspace.conn
    wrong = encode({999_999: 1.0})  # well-formed, checksummed, and wrong
    with db.transaction(conn):
        conn.execute("UPDATE terms SET postings = ? WHERE term = 'postgr'", (wrong,))
        conn.execute("UPDATE meta SET value = value || 'x' WHERE key = 'generation'")
    assert router.search("postgres", mode="lexical") == []
    router.refresh(full=True)
    assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"


def test_many_kinds_of_damage_are_repaired(memories: Path, tmp_path: Path) -> None:
    """Each kind of damage: the next process answers correctly from a rebuilt index."""

    def truncate(path: Path) -> None:
        path.write_bytes(path.read_bytes()[:1500])

    def zero_pages(path: Path) -> None:
        data = bytearray(path.read_bytes())
        data[4096:12288] = bytes(8192)
        path.write_bytes(bytes(data))

    def newer_schema(path: Path) -> None:
        conn = sqlite3.connect(path)
        conn.execute("INSERT INTO schema_migrations VALUES ('9999_from_the_future', 0)")
        conn.commit()
        conn.close()

    def foreign(path: Path) -> None:
        path.unlink()
        conn = sqlite3.connect(path)
        conn.execute("CREATE TABLE notes (x)")
        conn.commit()
        conn.close()

    def drop_table(path: Path) -> None:
        conn = sqlite3.connect(path)
        conn.execute("DROP TABLE memories")
        conn.commit()
        conn.close()

    def garbage_wal(path: Path) -> None:
        path.with_name("index.sqlite-wal").write_bytes(os.urandom(5000))

    damages = {
        "header": damage_header, "truncated": truncate, "zeroed pages": zero_pages, "newer schema": newer_schema,
        "foreign": foreign, "dropped table": drop_table, "garbage wal": garbage_wal,
        "empty file": lambda p: p.write_bytes(b""), "random bytes": lambda p: p.write_bytes(os.urandom(20000)),
    }  # fmt: skip
    write(memories, "extra/big", "# Big\n\n" + "searchable filler words " * 4000)
    for label, damage in damages.items():
        index_dir = tmp_path / label.replace(" ", "-")
        build(memories, index_dir)
        damage(index_dir / "index.sqlite")
        with Router.open(root=memories, index_dir=index_dir, watch=False) as router:
            assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres", label
            assert router.search("filler", mode="lexical")[0].name == "extra/big", label
            assert len(router.list()) == 7, label


def test_the_state_folder_keeps_itself_out_of_git(tmp_path: Path) -> None:
    project = tmp_path / "project"
    write(project / ".serena" / "memories", "a", "# A\n\nalpha\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    with Router.open(root=project / ".serena" / "memories", watch=False) as router:
        router.search("alpha", mode="lexical")
    untracked = git_status(project)
    assert ".memrouter" not in untracked and ".serena/memories/a.md" in untracked
