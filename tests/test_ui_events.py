"""The team board's server-sent events: the real ``memrouter ui`` command, its stream read as a browser's EventSource would."""

from __future__ import annotations

import sqlite3
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from uibrowser import start_ui, stop_ui
from uiproject import ui_project

from memrouter import Router
from memrouter.ui.events import TeamWatch, message


def _events(stream: IO[bytes]) -> Iterator[tuple[str, str]]:
    """(event, data) for each complete event in a text/event-stream."""
    event, data = "message", []
    for raw in stream:
        line = raw.decode("utf-8").rstrip("\n")
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "message", []
        elif line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])


def test_a_task_claim_is_pushed_to_an_open_event_stream(tmp_path: Path) -> None:
    _, root, _ = ui_project(tmp_path)
    server, address = start_ui(root, tmp_path / "idx")
    try:
        with urllib.request.urlopen(address + "team/events", timeout=30) as response:
            assert response.status == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            assert "script-src 'self'" in response.headers["content-security-policy"]
            events = _events(response)
            name, board = next(events)
            assert name == "board" and "No agents registered" in board and "<html" not in board
            with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
                team = router.team()
                team.register("builder", capabilities=["python"])
                task = team.task_add("Write the <parser>")
                assert team.task_claim("builder", lease_seconds=600) is not None
            name, board = next((n, b) for n, b in events if "builder" in b and task.id in b)
            assert name == "board" and "Write the &lt;parser&gt;" in board and "left" in board
            stop_ui(server)  # with the stream still open: the stop must not wait for it forever
            assert server.returncode is not None
    finally:
        if server.returncode is None:
            stop_ui(server)


def test_the_watch_sees_commits_from_other_connections_only(tmp_path: Path) -> None:
    path = tmp_path / "team.sqlite"
    writer = sqlite3.connect(path)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("CREATE TABLE t (x)")
    writer.commit()
    watch = TeamWatch(path)
    try:
        before = watch.version()
        assert watch.version() == before  # nothing committed: no change
        writer.execute("INSERT INTO t VALUES (1)")
        assert watch.version() == before  # not committed yet
        writer.commit()
        after = watch.version()
        assert after != before
        assert watch.version() == after
    finally:
        watch.close()
        writer.close()


def test_an_event_carries_every_line_of_its_data() -> None:
    assert message("board", "<p>a</p>\r\n<p>b</p>\n") == "event: board\ndata: <p>a</p>\ndata: <p>b</p>\ndata: \n\n"


def test_past_the_limit_of_open_streams_the_answer_is_503(tmp_path: Path) -> None:
    import asyncio

    import pytest
    from starlette.exceptions import HTTPException
    from starlette.requests import Request

    from memrouter.ui.context import UiContext
    from memrouter.ui.events import MAX_STREAMS, team_events
    from memrouter.ui.gitview import GitView
    from memrouter.ui.render import environment

    _, root, _ = ui_project(tmp_path)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        ui = UiContext(router, environment(), None, GitView(root), streams=MAX_STREAMS)
        request = Request({"type": "http", "method": "GET", "path": "/team/events", "headers": [], "query_string": b""})
        with pytest.raises(HTTPException) as refused:
            asyncio.run(team_events(ui, request))
        assert refused.value.status_code == 503 and "polling" in str(refused.value.detail)
        ui.streams = MAX_STREAMS - 1
        answer = asyncio.run(team_events(ui, request))
        assert answer.media_type == "text/event-stream" and ui.streams == MAX_STREAMS - 1  # counted once it starts
