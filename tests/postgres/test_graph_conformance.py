"""The knowledge graph's tests once per store (the ``store`` fixture runs each over SQLite, then PostgreSQL).

The tests open their own routers; for the ``postgres`` run the ``store``
fixture points them at a fresh database, and ``strict`` fails the test if
any call answers from the local index instead.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from test_graph import (
    test_as_of_keeps_edges_of_memories_valid_then,
    test_bad_input_self_links_cycles_outside_links_odd_names_and_huge_memories,
    test_edges_change_with_the_memory_only,
    test_forward_references_resolve_when_the_target_is_written,
    test_related_path_and_types,
    test_the_graph_weight_decides_whether_the_graph_retriever_is_fused,
    test_the_retriever_walks_on_from_the_best_lexical_hits,
)

from memrouter.core.errors import BackendUnavailable
from memrouter.index.fallback import FallbackReader

__all__ = [
    "test_as_of_keeps_edges_of_memories_valid_then",
    "test_bad_input_self_links_cycles_outside_links_odd_names_and_huge_memories",
    "test_edges_change_with_the_memory_only", "test_forward_references_resolve_when_the_target_is_written",
    "test_related_path_and_types", "test_the_graph_weight_decides_whether_the_graph_retriever_is_fused",
    "test_the_retriever_walks_on_from_the_best_lexical_hits",
]  # fmt: skip

pytestmark = pytest.mark.usefixtures("store", "strict")


@pytest.fixture
def strict(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Any fall back to the local index fails the test."""

    def refuse(self: FallbackReader, exc: BackendUnavailable) -> None:
        raise AssertionError(f"fell back to the local index: {exc}")

    monkeypatch.setattr(FallbackReader, "_fell_back", refuse)
    yield
