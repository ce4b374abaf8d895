"""Connecting to PostgreSQL: the driver loaded on first use, a pool, errors in memrouter's terms.

A malformed URL is a ``ConfigError``; a server that cannot be reached is
``BackendUnavailable``; one that answers with an error (no pgvector, no
rights to create the tables) is ``BackendContractError``; psycopg missing is ``BackendNotInstalled``
with the install hint. Each pooled connection sets ``hnsw.ef_search`` (recall)
and lets pgvector scan on past filtered-out rows (``hnsw.iterative_scan``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from memrouter.config.settings import redacted_url as redacted
from memrouter.core.errors import BackendContractError, BackendNotInstalled, BackendUnavailable, ConfigError
from memrouter.core.lazylog import LazyLogger

TYPE_CHECKING = False
if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["EF_SEARCH", "Database", "check_url", "redacted"]

log = LazyLogger(__name__)
T = TypeVar("T")

# HNSW candidates per query (``[index] ef_search``): 500 keeps recall@10 at 0.98 at a million chunks
# (``benchmarks/bench_pg_scale.py``; pgvector's default is 40).
EF_SEARCH = 500
CONNECT_TIMEOUT = 5
# Seconds a query waits for a pooled connection before the server counts as unavailable.
POOL_WAIT = 2.0
SCHEMES = ("postgresql://", "postgres://")


SSL_MODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")


def check_url(url: str) -> str:
    """``url`` if it is a well-formed PostgreSQL URL, else ``ConfigError`` saying what is wrong."""
    if not isinstance(url, str) or not url.startswith(SCHEMES):
        raise ConfigError(f"database URL must start with postgresql:// (got {redacted(str(url))!r})")
    from psycopg.conninfo import conninfo_to_dict

    try:
        parts = conninfo_to_dict(url)
    except Exception as exc:  # psycopg.ProgrammingError: libpq could not parse it
        raise ConfigError(f"bad database URL {redacted(url)!r}: {exc}") from exc
    ports = str(parts.get("port") or "5432").split(",")
    if not all(port.isdigit() and 0 < int(port) < 65536 for port in ports):
        raise ConfigError(f"bad database URL {redacted(url)!r}: port must be a number from 1 to 65535")
    if parts.get("sslmode", "prefer") not in SSL_MODES:
        raise ConfigError(f"bad database URL {redacted(url)!r}: sslmode must be one of {', '.join(SSL_MODES)}")
    return url


def _driver() -> Any:
    try:
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise BackendNotInstalled("postgres", "pip install 'memrouter[postgres]'") from exc
    return psycopg, psycopg_pool


class Database:
    """A pool of connections to one PostgreSQL database, migrated on open."""

    def __init__(self, url: str, *, max_size: int = 4, ef_search: int = EF_SEARCH) -> None:
        psycopg, psycopg_pool = _driver()
        self.url = check_url(url)
        self.ef_search = int(ef_search)
        self._errors = (psycopg.OperationalError, psycopg_pool.PoolTimeout)
        self._refused = psycopg.Error
        try:
            with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as conn:
                from memrouter.index.postgres.schema import migrate

                migrate(conn)
        except psycopg.OperationalError as exc:
            raise BackendUnavailable(f"PostgreSQL at {redacted(url)} cannot be reached: {exc}") from exc
        except psycopg.Error as exc:  # reached, but it cannot hold the index (no pgvector, no rights)
            raise BackendContractError(f"PostgreSQL at {redacted(url)} cannot hold the memrouter index: {exc}") from exc
        self._pool: ConnectionPool[Any] = psycopg_pool.ConnectionPool(
            url, min_size=1, max_size=max_size, timeout=POOL_WAIT, configure=self._configure,
            kwargs={"connect_timeout": CONNECT_TIMEOUT, "autocommit": True}, open=True, name="memrouter",
            check=psycopg_pool.ConnectionPool.check_connection,  # a server restart leaves no dead connection behind
        )  # fmt: skip

    def _configure(self, conn: psycopg.Connection[Any]) -> None:
        conn.execute(f"SET hnsw.ef_search = {self.ef_search}")
        conn.execute("SET hnsw.iterative_scan = relaxed_order")

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; a lost or unreachable server is ``BackendUnavailable``."""
        try:
            with self._pool.connection() as conn:
                yield conn
        except self._errors as exc:
            raise BackendUnavailable(f"PostgreSQL at {redacted(self.url)}: {exc}") from exc
        except self._refused as exc:  # the server answered with an error: retrying will not help
            raise BackendContractError(f"PostgreSQL at {redacted(self.url)} refused a statement: {exc}") from exc

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        with self.connection() as conn:
            return work(conn)

    def close(self) -> None:
        self._pool.close()
