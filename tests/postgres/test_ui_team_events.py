"""The web UI's live team board over a team channel in PostgreSQL (no team.sqlite to watch)."""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from test_ui_events import _events
from uibrowser import start_ui, stop_ui
from uiproject import ui_project

from memrouter import Router


def test_a_claim_in_the_database_is_pushed_to_the_board(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMROUTER_DATABASE_URL", database_url)
    monkeypatch.setenv("MEMROUTER_PROJECT", "board")
    _, root, _ = ui_project(tmp_path)
    server, address = start_ui(root, tmp_path / "idx")
    try:
        with urllib.request.urlopen(address + "team/events", timeout=30) as response:
            events = _events(response)
            name, board = next(events)
            assert name == "board" and "No agents registered" in board
            with Router.open(root=root, index_dir=tmp_path / "other-machine", watch=False) as router:
                team = router.team()
                assert team.file is None  # the channel is the database's
                team.register("builder")
                task = team.task_add("Ship the board")
                assert team.task_claim("builder", lease_seconds=600) is not None
            name, board = next((n, b) for n, b in events if "builder" in b and task.id in b)
            assert name == "board" and "Ship the board" in board
        assert not (tmp_path / "idx" / "team.sqlite").exists()
    finally:
        stop_ui(server)
