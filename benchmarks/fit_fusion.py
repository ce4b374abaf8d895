"""Fit and check query-adaptive fusion: how much to trust dense search, decided per query.

For every question of every evaluation set (examples/golden.json over
examples/memories, benchmarks/golden/ai-agents-1026.json,
benchmarks/golden/ai-agents-466.json, benchmarks/golden/multi-project.json,
and the first ``--locomo`` LoCoMo-10
conversations, one memory per turn), the lexical and dense candidate lists
(50 each, MiniLM) and the query's signal are collected once and cached
(``--cache``); fusion is then replayed offline, so every setting is scored
on exactly the same lists.

The signal is the *coverage* of the best lexical hit: the share of the
query's terms, each weighted by its idf, that the hit holds
(``LexicalIndex.coverage``). A keyword query that names a memory gets
coverage near 1 and lexical search is right; a paraphrase shares few rare
words with its answer, coverage is low and dense search should count more.
The rule (``memrouter.index.search.dense_weight``): the dense weight rises
linearly from ``low`` at coverage >= ``high_at`` to ``high`` at coverage <=
``low_at``.

Fitting is cross-validated by set: for each set, the grid point with the
best mean MRR@10 over the *other* sets is scored on it (leave one set out).
Printed per set: recall@5 and MRR@10 of lexical, semantic, equal-weight RRF,
the fixed default (dense 0.1), the held-out adaptive rule, the rule with the
parameters fitted on all sets, and the rule the code ships.

The second stage (``[search] rerank``) has its own fit: ``fit_rerank.py``.

    .venv/bin/python benchmarks/fit_fusion.py [--locomo N] [--cache DIR] [--embedder minilm-int8]
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import CORPUS

from memrouter import Config, Router
from memrouter.core.model import Filters
from memrouter.index import search as searching
from memrouter.index.fusion import Fused, Ranked, reciprocal_rank_fusion
from memrouter.ops.evaluation import load_golden, recall_at, reciprocal_rank

HERE = Path(__file__).parent
REPO = HERE.parent
SETS = {
    "examples": (REPO / "examples" / "memories", REPO / "examples" / "golden.json"),
    "ai-agents-1026": (CORPUS, HERE / "golden" / "ai-agents-1026.json"),
    "ai-agents-466": (CORPUS.parent / "ai-agents-466", HERE / "golden" / "ai-agents-466.json"),
    "multi-project": (HERE / "golden" / "multi-project" / "memories", HERE / "golden" / "multi-project.json"),
}
POOL = 50
GRID = {
    "low": (0.1,),
    "high": (0.3, 0.5, 0.8, 1.0, 1.5, 2.0),
    "low_at": (0.0, 0.2, 0.3, 0.4, 0.5),
    "high_at": (0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
}
Record = dict[str, Any]


def lists_for(router: Router, query: str) -> Record:
    """The lexical and dense lists (names) for ``query``, as a search sees them, and the coverage of the best
    lexical hit."""
    keeper = router.workspace.index  # the router's own index: the lists a search would fuse
    conn = keeper.conn
    filters = Filters()
    lexical = keeper.lexical.search(conn, query, filters, limit=POOL)
    dense = keeper.dense.search(
        conn, query, filters, POOL, passing=keeper.lexical.allowed, folders=keeper.lexical.folders(conn)
    )
    names = dict(conn.execute("SELECT id, name FROM memories"))
    coverage = keeper.lexical.coverage(conn, query, lexical[0].memory_id) if lexical else 0.0
    return {
        "lexical": [names[r.memory_id] for r in lexical],
        "dense": [names[r.memory_id] for r in dense],
        "coverage": coverage,
    }


EMBEDDER = "minilm"
Reader = Callable[[Router, str], Record]


def load(root: Path, index_dir: Path) -> Config:
    from memrouter.core.records import replace

    config = Config.load(root=root, index_dir=index_dir)
    return replace(config, embedder=EMBEDDER)


def collect_golden(
    name: str, root: Path, golden: Path, work: Path, read: Reader = lists_for, configure: Any = None
) -> list[Record]:
    """Each golden question's record: its set, kind, query and expected names, and what ``read`` gives
    (over an index built with ``configure(root, index_dir)``, ``load`` by default)."""
    records = []
    with Router((configure or load)(root, work / name), watch=False) as router:
        router.refresh(embed=True)
        for query in load_golden(golden):
            asked = {"set": name, "kind": query.kind, "query": query.query, "expected": list(query.expected)}
            records.append(asked | read(router, query.query))
    return records


def collect_locomo(
    conversations: int, work: Path, read: Reader = lists_for, configure: Any = None, *, every_question: bool = False
) -> list[Record]:
    """The same over the first ``conversations`` of LoCoMo-10, one memory per turn. By default the
    adversarial questions are left out; ``every_question`` keeps every question whose evidence names a turn,
    as ``bench_locomo.py`` scores."""
    sys.path.insert(0, str(HERE))
    from bench_locomo import CATEGORIES, DATA, turn_name, write_conversation

    records = []
    for sample in json.loads(DATA.read_text(encoding="utf-8"))[:conversations]:
        root = work / "locomo" / sample["sample_id"] / "memories"
        root.mkdir(parents=True, exist_ok=True)
        names, _ = write_conversation(sample, root)
        config = (configure or load)(root, work / "locomo" / sample["sample_id"] / "index")
        with Router(config, watch=False) as router:
            router.refresh(embed=True)
            for qa in sample["qa"]:
                if every_question:
                    evidence = [turn_name(e) for e in qa.get("evidence", []) if turn_name(e) in names]
                else:
                    evidence = [turn_name(e) for e in qa.get("evidence", []) if ":" in e]
                if not evidence or (qa.get("category") == 5 and not every_question):
                    continue
                asked = {
                    "set": "locomo", "kind": CATEGORIES.get(qa.get("category"), "other"), "query": qa["question"],
                    "expected": evidence, "conversation": sample["sample_id"],
                }  # fmt: skip
                records.append(asked | read(router, str(qa["question"])))
    return records


def cached_records(
    cache: Path,
    prefix: str,
    locomo: int,
    read: Reader = lists_for,
    configure: Any = None,
    *,
    every_question: bool = False,
    recollect: bool = False,
) -> list[Record]:
    """Every golden set's records and LoCoMo's (``locomo`` conversations; 0: none), each set collected once
    (``collect_golden``, ``collect_locomo``; indexes under ``cache/indexes``), then read from
    ``cache/<prefix>-<set>.json``. ``recollect`` empties the cache first."""
    if recollect and cache.exists():
        shutil.rmtree(cache)
    cache.mkdir(parents=True, exist_ok=True)
    work = cache / "indexes"
    sources: dict[str, Callable[[], list[Record]]] = {
        name: lambda n=name, root=root, golden=golden: collect_golden(n, root, golden, work, read, configure)
        for name, (root, golden) in SETS.items()
        if golden.is_file()
    }
    if locomo:
        sources[f"locomo-{locomo}"] = lambda: collect_locomo(
            locomo, work, read, configure, every_question=every_question
        )
    records: list[Record] = []
    for name, collect in sources.items():
        cached = cache / f"{prefix}-{name}.json"
        if not cached.is_file():
            cached.write_text(json.dumps(collect()), encoding="utf-8")
        records += json.loads(cached.read_text(encoding="utf-8"))
    return records


def dense_weight(coverage: float, low: float, high: float, low_at: float, high_at: float) -> float:
    """The shipped rule (``memrouter.index.search.dense_weight``) with the grid's parameters."""
    return searching.dense_weight(coverage, low, high=high, low_at=low_at, high_at=high_at)


def fused(record: Record, weight: float | None) -> list[str]:
    """The fused ranking; ``None``: lexical alone, ``-1``: dense alone."""
    if weight is None:
        return list(record["lexical"])
    if weight < 0:
        ranking = [Fused(n, 0.0, ()) for n in range(len(record["dense"]))]
        names = dict(enumerate(record["dense"]))
    else:
        ids = {name: n for n, name in enumerate(dict.fromkeys(record["lexical"] + record["dense"]))}
        lists = {
            "lexical": [Ranked(ids[name], 0.0) for name in record["lexical"]],
            "dense": [Ranked(ids[name], 0.0) for name in record["dense"]],
        }
        names = {n: name for name, n in ids.items()}
        ranking = reciprocal_rank_fusion(lists, {"lexical": 1.0, "dense": weight}, 60, None)
    return [names[f.memory_id] for f in ranking[:10]]


def shipped(record: Record) -> float:
    """The dense weight the code uses for ``record`` (``memrouter.index.search.dense_weight``, default weight)."""
    return searching.dense_weight(record["coverage"], 0.1)


def scores(records: list[Record], weight_of: Any) -> tuple[float, float]:
    """(recall@5, MRR@10) of ``records`` with the dense weight ``weight_of(record)``."""
    if not records:
        return 0.0, 0.0
    r5 = sum(recall_at(fused(r, weight_of(r)), r["expected"], 5) for r in records) / len(records)
    mrr = sum(reciprocal_rank(fused(r, weight_of(r)), r["expected"], 10) for r in records) / len(records)
    return r5, mrr


def best_params(records: list[Record]) -> dict[str, float]:
    """The grid point with the best mean MRR@10 over the sets in ``records`` (each set weighs the same)."""
    sets = sorted({r["set"] for r in records})
    best: tuple[float, dict[str, float]] | None = None
    for values in itertools.product(*GRID.values()):
        params = dict(zip(GRID, values, strict=True))
        if params["low_at"] >= params["high_at"]:
            continue
        mean = sum(
            scores([r for r in records if r["set"] == s], lambda r, p=params: dense_weight(r["coverage"], **p))[1]
            for s in sets
        ) / len(sets)  # fmt: skip
        if best is None or mean > best[0] + 1e-9:
            best = (mean, params)
    assert best is not None
    return best[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=int, default=3, help="LoCoMo conversations (0: none)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memrouter-fusion-cache"))
    parser.add_argument("--recollect", action="store_true", help="rebuild the cached lists")
    parser.add_argument("--embedder", default="minilm", help="the dense model (minilm, minilm-int8, ...)")
    args = parser.parse_args()
    global EMBEDDER
    EMBEDDER = args.embedder
    if args.embedder != "minilm":  # each model's lists are cached apart
        args.cache = args.cache / args.embedder

    records = cached_records(args.cache, "records", args.locomo, recollect=args.recollect)
    sets = list(dict.fromkeys(r["set"] for r in records))
    print(f"{len(records)} questions: " + ", ".join(f"{s} {sum(r['set'] == s for r in records)}" for s in sets))

    fitted = best_params(records)
    print(f"fitted on all sets: {fitted}")
    header = (
        f"{'set':16s} {'lexical':>13s} {'semantic':>13s} {'equal RRF':>13s} {'dense 0.1':>13s} {'held-out':>13s} "
        f"{'fitted':>13s} {'shipped':>13s}"
    )
    print(header + "   (recall@5 / MRR@10)")
    for name in sets:
        mine = [r for r in records if r["set"] == name]
        others = [r for r in records if r["set"] != name]
        held = best_params(others) if len({r["set"] for r in others}) else fitted
        columns = [
            scores(mine, lambda r: None),
            scores(mine, lambda r: -1),
            scores(mine, lambda r: 1.0),
            scores(mine, lambda r: 0.1),
            scores(mine, lambda r, p=held: dense_weight(r["coverage"], **p)),
            scores(mine, lambda r, p=fitted: dense_weight(r["coverage"], **p)),
            scores(mine, shipped),
        ]
        print(f"{name:16s} " + " ".join(f"{r5:.3f} / {mrr:.3f}" for r5, mrr in columns) + f"   held-out {held}")
        for kind in sorted({r["kind"] for r in mine}):
            subset = [r for r in mine if r["kind"] == kind]
            columns = [
                scores(subset, lambda r: None), scores(subset, lambda r: -1), scores(subset, lambda r: 1.0),
                scores(subset, lambda r: 0.1), scores(subset, lambda r, p=held: dense_weight(r["coverage"], **p)),
                scores(subset, lambda r, p=fitted: dense_weight(r["coverage"], **p)), scores(subset, shipped),
            ]  # fmt: skip
            print(
                f"  {kind[:14]:14s} " + " ".join(f"{r5:.3f} / {mrr:.3f}" for r5, mrr in columns) + f"   ({len(subset)})"
            )


if __name__ == "__main__":
    main()
