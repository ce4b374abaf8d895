"""Connection pools to PostgreSQL shared by the routers of one process, one pool per URL.

``memrouter serve --projects`` opens a Router per repository; without sharing,
each would hold its own pool (up to ``connect.Database``'s four connections), so
the server's connections would grow with the number of projects. With a
``SharedDatabases`` every router on one URL draws from one pool of
``max_size`` connections. After a failure a router calls ``discard``: the pool
is closed and the next ``get`` connects afresh (other routers on it fall back
too, as they would on their own; PostgreSQL is the same server).
"""

from __future__ import annotations

import threading

from memrouter.index.postgres.connect import Database

__all__ = ["SHARED_POOL_SIZE", "SharedDatabases"]

# Connections one server holds to one database at most, whatever the number of projects it serves.
SHARED_POOL_SIZE = 16


class SharedDatabases:
    """Pools by URL, opened on first ``get`` and closed by ``discard`` or ``close``."""

    def __init__(self, max_size: int = SHARED_POOL_SIZE) -> None:
        self.max_size = max_size
        self._pools: dict[str, Database] = {}
        self._lock = threading.Lock()

    def get(self, url: str) -> Database:
        """The pool for ``url`` (made, and the database migrated, on first need)."""
        with self._lock:
            database = self._pools.get(url)
            if database is None:
                database = self._pools[url] = Database(url, max_size=self.max_size)
            return database

    def holds(self, database: Database) -> bool:
        """Whether ``database`` is still the pool for its URL (not discarded since)."""
        with self._lock:
            return self._pools.get(database.url) is database

    def discard(self, database: Database) -> None:
        """Close ``database`` if it is still the pool for its URL, so the next ``get`` connects afresh."""
        with self._lock:
            if self._pools.get(database.url) is not database:
                return  # another router discarded it already
            del self._pools[database.url]
        database.close()

    def close(self) -> None:
        with self._lock:
            pools, self._pools = list(self._pools.values()), {}
        for database in pools:
            database.close()
