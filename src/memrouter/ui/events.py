"""Server-sent events for the team board: ``GET /team/events`` pushes the board when the team's state changes.

The stream watches ``team.sqlite`` through its own read-only connection:
SQLite's ``PRAGMA data_version`` changes whenever another connection (any
agent, any process) commits, so a check every ``CHECK_SECONDS`` costs one
pragma and the board is rendered only after a change. The board is also
sent again every ``REFRESH_SECONDS`` so heartbeat ages and lease countdowns
stay current (and the connection is known to be alive). Each message is an
``event: board`` whose data is the board's HTML fragment (``team_board.html``,
autoescaped, as ``/team/live`` answers it). At most ``MAX_STREAMS`` streams
are open at once; beyond that the answer is 503 and the page polls instead.
A team channel in PostgreSQL has no file to watch: the board is rendered
every ``DATABASE_CHECK_SECONDS`` and sent when it changed.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from memrouter.ui.live import board_fragment

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.ui.context import UiContext

__all__ = ["CHECK_SECONDS", "MAX_STREAMS", "REFRESH_SECONDS", "TeamWatch", "message", "team_events"]

CHECK_SECONDS = 0.1
DATABASE_CHECK_SECONDS = 1.0
REFRESH_SECONDS = 10.0
MAX_STREAMS = 32
RETRY_MS = 2000


class TeamWatch:
    """A read-only connection to ``team.sqlite`` that tells when any other connection has committed."""

    def __init__(self, path: Path) -> None:
        self._connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)

    def version(self) -> int:
        """A number that changes whenever another connection commits to the database."""
        row = self._connection.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def close(self) -> None:
        self._connection.close()


def message(event: str, data: str) -> str:
    """One server-sent event: its name and its data, one ``data:`` line per line of ``data``."""
    lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


async def _board_stream(ui: UiContext, path: Path | None) -> AsyncIterator[str]:
    from starlette.concurrency import run_in_threadpool

    # Opened and counted once the stream starts: a client gone before that leaves nothing behind.
    watch = TeamWatch(path) if path is not None else None
    ui.streams += 1
    try:
        yield f"retry: {RETRY_MS}\n\n"
        seen: int | str | None = None
        sent_at = 0.0
        while True:
            if watch is not None:
                version: int | str = watch.version()
                board = None
            else:  # a team channel in PostgreSQL: render each second and send what changed
                board = await run_in_threadpool(board_fragment, ui)
                version = board
            if version != seen or time.monotonic() - sent_at >= REFRESH_SECONDS:
                seen = version
                yield message("board", board if board is not None else await run_in_threadpool(board_fragment, ui))
                sent_at = time.monotonic()
            await asyncio.sleep(CHECK_SECONDS if watch is not None else DATABASE_CHECK_SECONDS)
    finally:
        if watch is not None:
            watch.close()
        ui.streams -= 1


async def team_events(ui: UiContext, request: Request) -> Response:
    """The team board as a stream of server-sent events (503 when too many streams are open)."""
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.responses import StreamingResponse

    if ui.streams >= MAX_STREAMS:
        raise HTTPException(503, "too many live team boards are open; this page refreshes by polling instead")
    team = await run_in_threadpool(ui.router.team)  # creates team.sqlite when there is none yet
    headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
    return StreamingResponse(_board_stream(ui, team.file), media_type="text/event-stream", headers=headers)
