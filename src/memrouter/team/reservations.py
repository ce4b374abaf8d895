"""Path reservations: globs an agent claims for a while, refused when they overlap others' claims.

Two reservations conflict when they belong to different agents, either is
exclusive, and some glob of one may overlap some glob of the other
(``globs.may_overlap``, which reports an overlap when unsure). A conflict is
reported, never granted over; expired reservations are dropped first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.team.agents import touch
from memrouter.team.checks import check_id, check_plain_text, check_seconds, new_id
from memrouter.team.globs import may_overlap, normalize_glob
from memrouter.team.records import Reservation, ReservationConflict, ReservationResult
from memrouter.team.sql import Conn, Row
from memrouter.team.workflows import check_room

__all__ = ["drop_expired", "live_reservations", "release", "renew", "reserve"]

MAX_GLOBS = 100
MAX_REASON_CHARS = 500


def _row(row: Row) -> Reservation:
    return Reservation(
        id=row["id"], agent=row["agent"], paths=tuple(json.loads(row["paths"])), exclusive=bool(row["exclusive"]),
        reason=row["reason"], workflow_id=row["workflow_id"], created_at=row["created_at"],
        expires_at=row["expires_at"],
    )  # fmt: skip


def drop_expired(conn: Conn, now: float) -> int:
    dropped: int = conn.execute("DELETE FROM reservations WHERE expires_at <= ?", (now,)).rowcount
    return dropped


def live_reservations(conn: Conn, now: float, agent_id: str | None = None) -> tuple[Reservation, ...]:
    if agent_id is None:
        rows = conn.execute("SELECT * FROM reservations WHERE expires_at > ? ORDER BY created_at, id", (now,))
    else:
        rows = conn.execute(
            "SELECT * FROM reservations WHERE agent = ? AND expires_at > ? ORDER BY created_at, id", (agent_id, now)
        )
    return tuple(_row(row) for row in rows.fetchall())


def reserve(
    conn: Conn,
    now: float,
    agent_id: str,
    paths: Iterable[str],
    exclusive: bool,
    ttl: float,
    reason: str | None,
) -> ReservationResult:
    if isinstance(paths, str):
        raise InvalidInput("paths must be a list of globs, not one string")
    globs = tuple(dict.fromkeys(normalize_glob(path) for path in paths))
    if not globs:
        raise InvalidInput("reserve at least one path glob")
    if len(globs) > MAX_GLOBS:
        raise InvalidInput(f"at most {MAX_GLOBS} globs in one reservation, not {len(globs)}")
    check_seconds(ttl, "ttl_seconds")
    check_plain_text(reason, "the reason", limit=MAX_REASON_CHARS, required=False)
    agent = touch(conn, now, agent_id)
    drop_expired(conn, now)
    conflicts = [
        ReservationConflict(
            path=glob,
            other_path=other_glob,
            agent=other.agent,
            reservation_id=other.id,
            exclusive=other.exclusive,
            expires_at=other.expires_at,
        )  # fmt: skip
        for other in live_reservations(conn, now)
        if other.agent != agent_id and (exclusive or other.exclusive)
        for glob in globs
        for other_glob in other.paths
        if may_overlap(glob, other_glob)
    ]
    if conflicts:
        return ReservationResult(granted=False, reservation=None, conflicts=tuple(conflicts))
    check_room(conn, agent.workflow_id)
    reservation_id = new_id()
    conn.execute(
        "INSERT INTO reservations (id, workflow_id, agent, paths, exclusive, reason, created_at, expires_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (reservation_id, agent.workflow_id, agent_id, json.dumps(globs), int(exclusive), reason, now, now + ttl),
    )
    row = conn.execute("SELECT * FROM reservations WHERE id = ?", (reservation_id,)).fetchone()
    return ReservationResult(granted=True, reservation=_row(row))


def _own(conn: Conn, now: float, agent_id: str, reservation_id: str) -> Reservation:
    check_id(reservation_id, "reservation id")
    row = conn.execute("SELECT * FROM reservations WHERE id = ? AND expires_at > ?", (reservation_id, now)).fetchone()
    if row is None:
        raise NotFound(f"no live reservation {reservation_id!r} (it may have expired)")
    if row["agent"] != agent_id:
        raise Conflict(f"reservation {reservation_id} belongs to {row['agent']!r}, not {agent_id!r}")
    return _row(row)


def release(conn: Conn, now: float, agent_id: str, reservation_ids: Iterable[str] | None) -> tuple[Reservation, ...]:
    """Release the named reservations of ``agent_id`` (all of its reservations when none are named)."""
    touch(conn, now, agent_id)
    if reservation_ids is None:
        released = live_reservations(conn, now, agent_id)
    else:
        if isinstance(reservation_ids, str):
            raise InvalidInput("reservation_ids must be a list of ids")
        released = tuple(_own(conn, now, agent_id, rid) for rid in dict.fromkeys(reservation_ids))
    conn.executemany("DELETE FROM reservations WHERE id = ?", [(r.id,) for r in released])
    return released


def renew(conn: Conn, now: float, agent_id: str, reservation_id: str, ttl: float) -> Reservation:
    check_seconds(ttl, "ttl_seconds")
    touch(conn, now, agent_id)
    _own(conn, now, agent_id, reservation_id)
    conn.execute("UPDATE reservations SET expires_at = ? WHERE id = ?", (now + ttl, reservation_id))
    row = conn.execute("SELECT * FROM reservations WHERE id = ?", (reservation_id,)).fetchone()
    return _row(row)
