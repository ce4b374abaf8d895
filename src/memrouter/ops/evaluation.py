"""Retrieval quality: recall@k, MRR@10 and nDCG@10 over a golden-query file.

A golden file is JSON: ``{"queries": [{"id", "query", "expected": [names...],
"kind"?}]}``. ``expected`` lists the memories that answer the query (binary
relevance). Metrics are averaged over all queries and per ``kind``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrouter.core.errors import InvalidInput

__all__ = [
    "GoldenQuery",
    "EvalReport",
    "load_golden",
    "recall_at",
    "hit_at",
    "reciprocal_rank",
    "ndcg_at",
    "evaluate",
]


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    """One query and the memories that answer it."""

    id: str
    query: str
    expected: tuple[str, ...]
    kind: str | None = None


def load_golden(path: str | Path) -> list[GoldenQuery]:
    """Read and validate a golden-query file; ``InvalidInput`` says what is wrong."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InvalidInput(f"golden file {path} does not exist") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"golden file {path} is not valid JSON: {exc}") from exc
    raw = data.get("queries") if isinstance(data, dict) else None
    if not isinstance(raw, list) or not raw:
        raise InvalidInput(f"golden file {path} needs a non-empty 'queries' list")
    queries: list[GoldenQuery] = []
    seen: set[str] = set()
    for index, item in enumerate(raw):
        where = f"{path}: query #{index + 1}"
        if not isinstance(item, dict):
            raise InvalidInput(f"{where} is not an object")
        query, expected = item.get("query"), item.get("expected")
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput(f"{where} has no 'query' text")
        if not isinstance(expected, list) or not expected or not all(isinstance(e, str) for e in expected):
            raise InvalidInput(f"{where} needs 'expected': a non-empty list of memory names")
        qid = str(item.get("id", index + 1))
        if qid in seen:
            raise InvalidInput(f"{where}: duplicate id {qid!r}")
        seen.add(qid)
        kind = item.get("kind")
        queries.append(GoldenQuery(qid, query, tuple(expected), str(kind) if kind else None))
    return queries


def recall_at(ranked: Sequence[str], expected: Sequence[str], k: int) -> float:
    """Fraction of the expected memories found in the top ``k``."""
    return len(set(ranked[:k]) & set(expected)) / len(set(expected))


def hit_at(ranked: Sequence[str], expected: Sequence[str], k: int) -> float:
    """1.0 if any expected memory is in the top ``k``."""
    return 1.0 if set(ranked[:k]) & set(expected) else 0.0


def reciprocal_rank(ranked: Sequence[str], expected: Sequence[str], k: int = 10) -> float:
    """1/rank of the first expected memory within the top ``k``, else 0."""
    wanted = set(expected)
    for rank, name in enumerate(ranked[:k], 1):
        if name in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranked: Sequence[str], expected: Sequence[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k, the ideal ranking putting every expected memory first."""
    wanted = set(expected)
    gain = sum(1.0 / math.log2(rank + 1) for rank, name in enumerate(ranked[:k], 1) if name in wanted)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(wanted), k) + 1))
    return gain / ideal if ideal else 0.0


@dataclass(slots=True)
class EvalReport:
    """Per-query results and the averages, overall and per kind."""

    ks: tuple[int, ...]
    rows: list[dict[str, Any]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    def summary(self, kind: str | None = None) -> dict[str, float]:
        rows = [r for r in self.rows if kind is None or r["kind"] == kind]
        if not rows:
            return {}
        keys = [f"recall@{k}" for k in self.ks] + ["mrr@10", "ndcg@10"]
        return {key: round(sum(r[key] for r in rows) / len(rows), 4) for key in keys} | {"queries": len(rows)}

    def to_dict(self) -> dict[str, Any]:
        ordered = sorted(self.latencies_ms)
        kinds = sorted({r["kind"] for r in self.rows if r["kind"]})
        return {
            "overall": self.summary(),
            "by_kind": {kind: self.summary(kind) for kind in kinds},
            "latency_ms": {
                "p50": round(ordered[len(ordered) // 2], 2) if ordered else None,
                "p95": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))], 2) if ordered else None,
            },
            "queries": self.rows,
        }


def evaluate(
    search: Callable[[str], Sequence[str]], queries: Sequence[GoldenQuery], ks: Sequence[int] = (1, 5, 10)
) -> EvalReport:
    """Run every query through ``search`` (query -> ranked names) and score it."""
    report = EvalReport(tuple(sorted(set(ks))))
    for golden in queries:
        started = time.perf_counter()
        ranked = list(search(golden.query))
        report.latencies_ms.append((time.perf_counter() - started) * 1000)
        row: dict[str, Any] = {"id": golden.id, "kind": golden.kind, "query": golden.query}
        for k in report.ks:
            row[f"recall@{k}"] = recall_at(ranked, golden.expected, k)
        row["mrr@10"] = reciprocal_rank(ranked, golden.expected, 10)
        row["ndcg@10"] = ndcg_at(ranked, golden.expected, 10)
        row["top"] = ranked[:5]
        row["missing"] = [name for name in golden.expected if name not in ranked[: max(report.ks)]]
        report.rows.append(row)
    return report
