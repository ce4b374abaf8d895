from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import git_status

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.store.files import MemoryStore
from memrouter.store.parse import content_hash, sha256_hex


def test_scan_finds_nested_files_and_skips_dot_entries(memories: Path) -> None:
    (memories / ".hidden").mkdir()
    (memories / ".hidden" / "x.md").write_text("x")
    (memories / "notes.txt").write_text("not markdown")
    names = sorted(stat.name for stat in MemoryStore(memories).scan())
    assert names == [
        "adr/adr-001-postgres",
        "ci/flaky-tests",
        "conventions/commit-messages",
        "incidents/flaky-tests",
        "plain-no-heading",
        "sprints/2026-w47/research-caching",
    ]


def test_scan_gives_each_folders_files_in_name_order_whatever_the_file_system_lists(tmp_path: Path) -> None:
    """The index numbers memories in scan order and breaks equal scores by that number, so the order must not
    be the file system's (hash order on ext4, newest first on tmpfs): equal hits would swap between machines."""
    names = [f"m{n:03d}" for n in range(200)]
    for name in reversed(names):
        (tmp_path / f"{name}.md").write_text(f"# {name}")
    assert [stat.name for stat in MemoryStore(tmp_path).scan()] == names


def test_scan_does_not_follow_links_out_of_the_root(memories: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("# secret")
    (memories / "linked-dir").symlink_to(outside)
    (memories / "linked-file.md").symlink_to(outside / "leak.md")
    names = {stat.name for stat in MemoryStore(memories).scan()}
    assert not any(name.startswith("linked") for name in names)


def test_write_is_atomic_and_keeps_bytes_exactly(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    text = "# T\r\n\r\nCRLF kept, unicode kept: żółw 🐢\n"
    memory = store.write("topic/new-one", text).memory
    assert (tmp_path / "topic" / "new-one.md").read_bytes() == text.encode()
    assert memory.hash == content_hash(text)
    assert [p.name for p in (tmp_path / "topic").iterdir()] == ["new-one.md"]  # no temp files left


@pytest.mark.parametrize("left", ["no ignore file", "empty ignore file", "half an ignore file", "temporary file"])
def test_a_write_area_a_killed_writer_left_unfinished_is_repaired_before_git_sees_a_lock(
    tmp_path: Path, left: str
) -> None:
    """A writer killed between making ``.memrouter-write`` and completing its ``.gitignore`` left a folder git
    would list; the next store's first write completes the ignore file, so no lock or temporary file shows."""
    import subprocess

    project = tmp_path / "project"
    root = project / ".serena" / "memories"
    area = root / ".memrouter-write"
    area.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    if left == "empty ignore file":
        (area / ".gitignore").write_bytes(b"")
    elif left == "half an ignore file":
        (area / ".gitignore").write_bytes(b"# memrouter's lock and")
    elif left == "temporary file":
        (area / ".gitignore.4242.tmp").write_bytes(b"# memrouter's lock and temporary files: never commit them\n*\n")
    MemoryStore(root).write("notes/one", "# One\n")
    assert git_status(project).splitlines() == ["?? .serena/memories/notes/one.md"]
    assert (area / "locks").is_dir() and list((area / "locks").iterdir())


def test_expected_hash_refuses_a_concurrent_change(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    first = store.write("a", "# one\n").memory
    (tmp_path / "a.md").write_text("# changed by hand\n")
    with pytest.raises(Conflict):
        store.write("a", "# two\n", expected_hash=first.hash)
    assert (tmp_path / "a.md").read_text() == "# changed by hand\n"
    with pytest.raises(Conflict):
        store.write("a", "# new\n", expected_hash="")
    store.write("b", "# fresh\n", expected_hash="")


def test_non_utf8_file_is_read_with_a_problem_and_its_byte_hash(tmp_path: Path) -> None:
    raw = b"# Caf\xe9\n\nlatin-1 bytes\n"
    (tmp_path / "latin.md").write_bytes(raw)
    memory = MemoryStore(tmp_path).read("latin")
    assert memory.problems and "UTF-8" in memory.problems[0]
    assert memory.hash == sha256_hex(raw)


def test_delete_removes_file_and_empty_folders(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path)
    store.write("deep/er/x", "# x\n")
    store.delete("deep/er/x")
    assert not (tmp_path / "deep").exists()
    with pytest.raises(NotFound):
        store.delete("deep/er/x")


def test_read_only_root_refuses_writes(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path, readonly=True)
    with pytest.raises(InvalidInput, match="read-only"):
        store.write("a", "x")


def test_bad_names_never_touch_the_disk(tmp_path: Path) -> None:
    store = MemoryStore(tmp_path / "root")
    for bad in ["../escape", "/abs/path", "a/../../b", "%2e%2e/x", "Ａ"]:
        with pytest.raises(InvalidInput):
            store.write(bad, "x")
    assert not (tmp_path / "escape.md").exists()
    assert not (tmp_path / "root").exists() or not any((tmp_path / "root").rglob("*"))


def test_unreadable_files_raise_a_clear_error_and_never_stop_a_scan(tmp_path: Path) -> None:
    """Files no one can read, as any user: a symbolic link loop, a folder named like a memory, a FIFO."""
    from memrouter.core.errors import MemoryRouterError

    (tmp_path / "good.md").write_text("# Good\n")
    (tmp_path / "loop.md").symlink_to("loop.md")
    (tmp_path / "folder.md").mkdir()
    os.mkfifo(tmp_path / "fifo.md")
    store = MemoryStore(tmp_path)
    assert [stat.name for stat in store.scan()] == ["good"]
    with pytest.raises(MemoryRouterError, match="symbolic link"):
        store.read("loop")
    with pytest.raises(NotFound, match="folder"):
        store.read("folder")
    with pytest.raises(NotFound, match="not a regular file"):
        store.read("fifo")  # opened without blocking: a FIFO never hangs the reader
    with pytest.raises(NotFound):
        store.delete("fifo")
    assert (tmp_path / "fifo.md").exists()
