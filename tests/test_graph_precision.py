"""Graph extraction precision on the labelled spots in benchmarks/golden/graph-mentions.json (>= 0.95 per kind)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrouter.index.graph.extract import extract
from memrouter.store.files import MemoryStore

MENTIONS = Path(__file__).resolve().parents[1] / "benchmarks" / "golden" / "graph-mentions.json"


def test_extraction_precision_is_at_least_095_for_every_kind() -> None:
    from conftest import CORPUS_1026

    corpora = CORPUS_1026.parent
    if not corpora.is_dir():
        pytest.skip("../shared/corpora is not available")
    spots = json.loads(MENTIONS.read_text(encoding="utf-8"))["spots"]
    assert len(spots) >= 300
    taken: dict[str, list[bool]] = {}
    edges: dict[tuple[str, str], set[str]] = {}
    for spot in spots:
        where = (spot["corpus"], spot["memory"])
        if where not in edges:
            path = corpora / spot["corpus"] / f"{spot['memory']}.md"
            memory = MemoryStore(corpora / spot["corpus"]).parse_bytes(spot["memory"], str(path), path.read_bytes())
            edges[where] = {edge.key for edge in extract(memory).edges}
        if spot["key"] in edges[where]:
            taken.setdefault(spot["kind"], []).append(spot["reference"])
    assert set(taken) == {"adr", "issue", "commit", "path", "link"}
    for kind, labels in taken.items():
        assert sum(labels) / len(labels) >= 0.95, (kind, labels.count(False), len(labels))
