"""The task context file: validated, atomic, per project, surviving restarts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrouter.core.errors import InvalidInput, MemoryRouterError
from memrouter.ops.task import TASK_FILE, TaskContextStore


def test_set_get_and_survive_a_new_instance(tmp_path: Path) -> None:
    store = TaskContextStore(tmp_path / ".memrouter")
    assert store.get() is None
    record = store.set("  Ship the MCP server ", "stdio first\nthen HTTP")
    assert record["task"] == "Ship the MCP server" and record["details"] == "stdio first\nthen HTTP"
    assert TaskContextStore(tmp_path / ".memrouter").get() == record
    on_disk = json.loads((tmp_path / ".memrouter" / TASK_FILE).read_text())
    assert on_disk == record
    store.set("Next task")
    assert TaskContextStore(tmp_path / ".memrouter").get()["task"] == "Next task"  # type: ignore[index]
    assert [p.name for p in (tmp_path / ".memrouter").iterdir()] == [TASK_FILE]  # no temporary files left


def test_projects_do_not_share_a_context(tmp_path: Path) -> None:
    TaskContextStore(tmp_path / "a").set("task a")
    assert TaskContextStore(tmp_path / "b").get() is None


@pytest.mark.parametrize(
    ("task", "details"),
    [("", ""), ("   ", ""), ("t" * 501, ""), ("ok", "d" * 20_001), ("a\x00b", ""), (3, ""), ("ok", None)],
)
def test_bad_input(tmp_path: Path, task: object, details: object) -> None:
    with pytest.raises(InvalidInput):
        TaskContextStore(tmp_path).set(task, details)  # type: ignore[arg-type]
    assert not (tmp_path / TASK_FILE).exists()


def test_damaged_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / TASK_FILE).write_text("{not json")
    with pytest.raises(MemoryRouterError, match="damaged"):
        TaskContextStore(tmp_path).get()
    (tmp_path / TASK_FILE).write_text("[1, 2]")
    with pytest.raises(MemoryRouterError, match="damaged"):
        TaskContextStore(tmp_path).get()
    TaskContextStore(tmp_path).set("recovered")
    assert TaskContextStore(tmp_path).get()["task"] == "recovered"  # type: ignore[index]
