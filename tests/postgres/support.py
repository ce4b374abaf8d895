"""Checks shared by the PostgreSQL tests."""

from __future__ import annotations

from memrouter import Router


def assert_no_fallback(router: Router) -> None:
    """The router answered from PostgreSQL throughout: it never fell back to the local index."""
    assert not [warning for warning in router.warnings if "PostgreSQL" in warning]
