"""Routers of one process sharing one pool per database URL (``serve --projects``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SAMPLE, write
from postgres.support import assert_no_fallback

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.records import replace
from memrouter.index.postgres.shared import SharedDatabases
from memrouter.testing.postgres_server import running_postgres, start_again, stop


def project(base: Path, key: str, url: str) -> Config:
    """A project ``key`` of the sample memories (each marked ``<key>word``) on the database ``url``."""
    root = base / key / ".serena" / "memories"
    for name, text in SAMPLE.items():
        write(root, name, f"{text}\nMarker {key}word.\n")
    config = Config.load(root=root, index_dir=base / key / "index", env={})
    return replace(config, index=replace(config.index, url=url, project=key))


def found(router: Router, query: str) -> set[str]:
    return {hit.name for hit in router.search(query, mode="lexical")}


def test_routers_share_one_pool_and_renew_it_after_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("memrouter.index.fallback.RETRY_AFTER", 0.0)  # try the database again on every search
    databases = SharedDatabases(max_size=4)
    with running_postgres() as server:
        alpha = Router(project(tmp_path, "alpha", server.url), watch=False, databases=databases)
        beta = Router(project(tmp_path, "beta", server.url), watch=False, databases=databases)
        try:
            assert found(alpha, "alphaword") and not found(alpha, "betaword")
            assert found(beta, "betaword") and not found(beta, "alphaword")
            first = alpha.workspace.reader.primary._store.database  # type: ignore[attr-defined]
            assert beta.workspace.reader.primary._store.database is first  # type: ignore[attr-defined]

            stop(server)
            assert found(alpha, "alphaword")  # from the local index, with a warning
            assert any("PostgreSQL index unavailable" in warning for warning in alpha.warnings)
            assert not databases.holds(first)  # the failed pool is gone
            back = start_again(server)
            try:
                alpha.workspace.index.file.warnings.clear()
                assert found(alpha, "alphaword") and not found(alpha, "betaword")
                assert found(beta, "betaword")  # beta moves to the new pool without falling back
                assert_no_fallback(alpha)
                assert_no_fallback(beta)
                renewed = alpha.workspace.reader.primary._store.database  # type: ignore[attr-defined]
                assert renewed is not first and beta.workspace.reader.primary._store.database is renewed  # type: ignore[attr-defined]

                alpha.close()  # a router's close leaves the shared pool to the others
                assert databases.holds(renewed)
                assert found(beta, "betaword")
                assert_no_fallback(beta)
            finally:
                beta.close()
                databases.close()
                stop(back)
        finally:
            alpha.close()
            beta.close()
