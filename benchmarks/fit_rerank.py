"""Fit and check the second stage's shares (``[search] rerank``, ``memrouter.index.sqlite.rerank``).

The second stage orders the best ``DEPTH`` fused candidates, and their
neighbours in a numbered series, by late interaction plus a share of each
candidate's lexical score (relative to the best lexical hit's) and of its
dense similarity, plus a share of its better neighbour's score. This script
collects, once per question, what the second stage reads: the first stage's
fused order (adaptive fusion, as a search without time words makes it), and
each candidate's late-interaction score, relative lexical score, dense
similarity and neighbours. It then replays ``rescored`` with every grid point.

Sets: examples, ai-agents-1026, ai-agents-466 and multi-project (recall@5 /
MRR@10 from their golden files), and LoCoMo-10 (``--locomo N`` conversations,
one memory per turn as in ``bench_locomo.py``; turn recall@5 / session
recall@5). The lexical and dense shares are fitted leaving each set out in
turn (the grid point with the best mean over the other sets). Only LoCoMo
has numbered series, so the neighbour share is fitted on one half of its
conversations and checked on the other, both ways.

Printed per set (and per kind): lexical, semantic, equal-weight RRF, the
first stage, the second stage with the shares fitted without the set, and
with the shares the code ships.

``--misses`` prints instead where LoCoMo's session-level misses lie: the
questions for which no evidence session is among the five best sessions
after the second stage (shipped shares), by category, with how far down the
first stage the evidence session's best turn sits and how many evidence
turns neither retriever finds in its 50.

    .venv/bin/python benchmarks/fit_rerank.py [--locomo 10] [--cache DIR] [--recollect] [--misses]
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path
from typing import Any

from fit_fusion import POOL, cached_records, lists_for

from memrouter import Config, Router
from memrouter.core.model import Filters
from memrouter.core.records import replace
from memrouter.index import search as searching
from memrouter.index.fusion import Fused, Ranked, reciprocal_rank_fusion
from memrouter.index.sqlite.rerank import SHARES, Reading, Shares, read_again, rescored
from memrouter.ops.evaluation import recall_at, reciprocal_rank

GRID = {"lexical": (0.05, 0.1, 0.15, 0.2, 0.3), "dense": (0.2, 0.3, 0.4, 0.5, 0.7)}
NEIGHBOUR_GRID = (0.0, 0.2, 0.3, 0.5, 0.7, 1.0)
Record = dict[str, Any]


def reading_of(router: Router, query: str) -> Record:
    """What the first and second stage see for ``query`` (names instead of ids)."""
    keeper = router.workspace.index  # the router's own index: what a search would read
    conn = keeper.conn
    record = lists_for(router, query)
    ids = {name: memory_id for memory_id, name in conn.execute("SELECT id, name FROM memories")}
    names = {memory_id: name for name, memory_id in ids.items()}
    lexical = keeper.lexical.search(conn, query, Filters(), limit=POOL)
    dense = [Ranked(ids[name], 0.0) for name in record["dense"]]
    weights = {"lexical": 1.0, "dense": searching.dense_weight(record["coverage"], 0.1)}
    fused = reciprocal_rank_fusion({"lexical": lexical, "dense": dense}, weights, 60)
    readings, near = read_again(keeper.conn, keeper.dense, keeper.lexical.folders(keeper.conn), query, fused, lexical)
    return record | {
        "fused": [names[item.memory_id] for item in fused],
        "read": {names[m]: [r.late, r.lexical, r.dense] for m, r in readings.items()},
        "near": {names[m]: [names[n] for n in ns] for m, ns in near.items()},
    }


def with_rerank(root: Path, index_dir: Path) -> Config:
    config = Config.load(root=root, index_dir=index_dir)
    return replace(config, search=replace(config.search, rerank=True))


def reranked(record: Record, shares: Shares) -> list[str]:
    """The second stage's order of ``record`` with ``shares`` (``rescored``, replayed over names)."""
    ids = {name: n for n, name in enumerate(dict.fromkeys([*record["fused"], *record["read"]]))}
    fused = [Fused(ids[name], 1.0 / (60 + rank), ()) for rank, name in enumerate(record["fused"], 1)]
    readings = {ids[name]: Reading(*values) for name, values in record["read"].items()}
    near = {ids[name]: [ids[n] for n in ns if n in ids] for name, ns in record["near"].items()}
    names = {n: name for name, n in ids.items()}
    return [names[item.memory_id] for item in rescored(fused, readings, near, shares)]


def equal_rrf(record: Record) -> list[str]:
    ids = {name: n for n, name in enumerate(dict.fromkeys(record["lexical"] + record["dense"]))}
    lists = {key: [Ranked(ids[name], 0.0) for name in record[key]] for key in ("lexical", "dense")}
    names = {n: name for name, n in ids.items()}
    return [names[f.memory_id] for f in reciprocal_rank_fusion(lists, {}, 60)]


def session_of(name: str) -> str:
    """A LoCoMo turn's session (``d3-11`` -> ``d3``), as ``bench_locomo.py`` names them."""
    return name.split("-")[0]


def scores(records: list[Record], order: Any) -> tuple[float, float]:
    """(recall@5, MRR@10) on a golden set; (turn recall@5, session recall@5) on LoCoMo."""
    if not records:
        return 0.0, 0.0
    ranked = [order(r) for r in records]
    if records[0]["set"] == "locomo":
        turn = sum(bool(set(r["expected"]) & set(o[:5])) for r, o in zip(records, ranked, strict=True))
        session = 0
        for r, o in zip(records, ranked, strict=True):
            sessions = list(dict.fromkeys(session_of(name) for name in o))
            session += bool({session_of(name) for name in r["expected"]} & set(sessions[:5]))
        return turn / len(records), session / len(records)
    r5 = sum(recall_at(o[:10], r["expected"], 5) for r, o in zip(records, ranked, strict=True)) / len(records)
    mrr = sum(reciprocal_rank(o[:10], r["expected"], 10) for r, o in zip(records, ranked, strict=True))
    return r5, mrr / len(records)


def best_shares(by_set: dict[str, list[Record]], neighbour: float) -> Shares:
    """The grid point with the best mean of both figures over ``by_set`` (each set weighs the same)."""
    best: tuple[float, Shares] | None = None
    for lexical, dense in itertools.product(GRID["lexical"], GRID["dense"]):
        shares = Shares(lexical, dense, neighbour)
        mean = sum(sum(scores(rs, lambda r, s=shares: reranked(r, s))) / 2 for rs in by_set.values()) / len(by_set)
        if best is None or mean > best[0] + 1e-9:
            best = (mean, shares)
    assert best is not None
    return best[1]


def best_neighbour(records: list[Record], shares: Shares) -> float:
    return max(NEIGHBOUR_GRID, key=lambda n: sum(scores(records, lambda r: reranked(r, replace(shares, neighbour=n)))))


def session_misses(records: list[Record]) -> None:
    """Print where the second stage's session-level misses on LoCoMo lie (see the module's docstring)."""
    misses = []
    for record in records:
        ranked = list(dict.fromkeys(session_of(name) for name in reranked(record, SHARES)))
        if not {session_of(name) for name in record["expected"]} & set(ranked[:5]):
            misses.append(record)
    print(f"LoCoMo session recall@5 misses: {len(misses)} of {len(records)} questions")
    kinds = sorted({r["kind"] for r in records})
    for kind in kinds:
        total = sum(r["kind"] == kind for r in records)
        missed = sum(r["kind"] == kind for r in misses)
        print(f"  {kind:14s} {missed:4d} of {total:4d} ({missed / total:.1%})")
    depths = {"1-5": 0, "6-10": 0, "11-30": 0, "31-50": 0, "below 50": 0}
    for record in misses:
        wanted = {session_of(name) for name in record["expected"]}
        rank = next((i for i, name in enumerate(record["fused"], 1) if session_of(name) in wanted), None)
        label = (
            "below 50" if rank is None or rank > 50 else
            "1-5" if rank <= 5 else "6-10" if rank <= 10 else "11-30" if rank <= 30 else "31-50"
        )  # fmt: skip
        depths[label] += 1
    print("  first-stage rank of the evidence session's best turn: "
          + ", ".join(f"{label} {count}" for label, count in depths.items()))  # fmt: skip
    unseen = sum(not set(r["expected"]) & (set(r["lexical"]) | set(r["dense"])) for r in misses)
    print(f"  no evidence turn in either retriever's 50: {unseen}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--locomo", type=int, default=10, help="LoCoMo conversations (0: none)")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memrouter-rerank-cache"))
    parser.add_argument("--recollect", action="store_true", help="rebuild the cached readings")
    parser.add_argument("--misses", action="store_true", help="where LoCoMo's session-level misses lie")
    args = parser.parse_args()
    records = cached_records(
        args.cache, "readings", args.locomo, reading_of, with_rerank, every_question=True, recollect=args.recollect
    )
    by_set = {s: [r for r in records if r["set"] == s] for s in dict.fromkeys(r["set"] for r in records)}
    print(f"{len(records)} questions: " + ", ".join(f"{s} {len(rs)}" for s, rs in by_set.items()))
    if args.misses:
        session_misses(by_set.get("locomo", []))
        return

    fitted = best_shares(by_set, SHARES.neighbour)
    print(f"fitted on all sets: lexical {fitted.lexical}, dense {fitted.dense}; shipped: {SHARES}")
    if "locomo" in by_set:
        conversations = sorted({r["conversation"] for r in by_set["locomo"]})
        halves = [
            [r for r in by_set["locomo"] if (r["conversation"] in conversations[::2]) == first] for first in (1, 0)
        ]
        for fit_on, check_on in (halves, halves[::-1]):
            chosen = best_neighbour(fit_on, SHARES)
            figures = scores(check_on, lambda r, n=chosen: reranked(r, replace(SHARES, neighbour=n)))
            print(f"neighbour share fitted on half the conversations: {chosen}; the other half: "
                  f"{figures[0]:.3f} / {figures[1]:.3f}")  # fmt: skip
    columns = ["lexical", "semantic", "equal RRF", "first stage", "held-out", "shipped"]
    print(f"{'set':18s}" + "".join(f"{c:>15s}" for c in columns) + "   (recall@5 / MRR@10; LoCoMo: turn / session R@5)")
    for name, mine in by_set.items():
        others = {s: rs for s, rs in by_set.items() if s != name}
        held = best_shares(others, SHARES.neighbour) if others else fitted
        orders = [
            lambda r: r["lexical"], lambda r: r["dense"], equal_rrf, lambda r: r["fused"],
            lambda r, s=held: reranked(r, s), lambda r: reranked(r, SHARES),
        ]  # fmt: skip
        for kind in ["all", *sorted({r["kind"] for r in mine})]:
            subset = mine if kind == "all" else [r for r in mine if r["kind"] == kind]
            label = name if kind == "all" else f"  {kind[:14]} ({len(subset)})"
            print(
                f"{label:18s}" + "".join(f"{a:.3f} / {b:.3f}".rjust(15) for a, b in (scores(subset, o) for o in orders))
            )
        print(f"{'':18s}held out: lexical {held.lexical}, dense {held.dense}")


if __name__ == "__main__":
    main()
