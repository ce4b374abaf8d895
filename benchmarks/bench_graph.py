"""The knowledge graph: retrieval with and without the graph retriever, and what the graph costs.

Every figure is printed beside its baseline measured in the same run:
- ai-agents-1026: full lexical build with the graph vs without it (target <= +20%);
  one changed memory's refresh (its edges included; target <= 50 ms);
  ``related(depth=2)`` p50 (target <= 10 ms); warm hybrid p50 with the graph
  retriever fused vs not (target <= +3 ms);
- the golden set's multi-memory questions (``kind`` multi, multi-hop and links): recall of
  all expected memories in the top 10, hybrid with and without the graph; recall@5 and
  MRR@10 over all its questions, and over examples/golden.json's (the default weight
  must lose on neither);
- LoCoMo-10 (when ../shared/bench/locomo10.json exists): multi-hop (category 1)
  recall_all@10 and overall turn recall@5, hybrid with and without the graph.

Hybrid here fuses lexical, dense and graph; ``--embed hash`` (the default) uses
the deterministic hashing embedder so the comparison runs in minutes on a
laptop: the graph's effect is measured against the same dense list either way.

- ``--precision``: extraction precision and recall per kind on the labelled spots in
  golden/graph-mentions.json (read from the corpora), then exit.

Usage: python benchmarks/bench_graph.py [--corpus DIR] [--embed hash|minilm] [--weights 0.1,0.3,1] [--locomo N]
       python benchmarks/bench_graph.py --precision
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from memrouter.core.records import replace

HERE = Path(__file__).resolve().parent
from _common import CORPUS, percentiles  # noqa: E402 - benchmarks run as scripts

GOLDEN = HERE / "golden" / "ai-agents-1026.json"
MENTIONS = HERE / "golden" / "graph-mentions.json"
LOCOMO = HERE.parents[1] / "shared" / "bench" / "locomo10.json"


def open_router(root: Path, index: Path, embed: str, graph_weight: float) -> object:
    from memrouter import Router
    from memrouter.config.settings import Config

    config = Config.load(root=root, index_dir=index)
    weights = dict(config.search.weights) | {"graph": graph_weight}
    config = replace(config, embedder=embed, search=replace(config.search, weights=weights))
    return Router.open(config=config, watch=False)


def build_seconds(corpus: Path, work: Path, rounds: int) -> dict[bool, tuple[float, float]]:
    """Best of ``rounds`` full lexical builds without the graph (its writer does nothing) and with it,
    the two alternating so that load on the machine falls on both alike: (wall, CPU) seconds for each.
    CPU time is this process's own, so other work on a shared machine changes it less than wall time."""
    import memrouter.index.sqlite.graph as graph_store
    from memrouter import Router

    original = graph_store.write_graph
    best = {False: (float("inf"), float("inf")), True: (float("inf"), float("inf"))}
    try:
        for n in range(rounds):
            for with_graph in (False, True):
                graph_store.write_graph = original
                if not with_graph:
                    graph_store.write_graph = lambda *args, **kwargs: None  # type: ignore[assignment]  # any version's signature
                index = work / f"build-{with_graph}-{n}"
                with Router.open(root=corpus, index_dir=index, watch=False) as router:
                    started, cpu = time.perf_counter(), time.process_time()
                    router.refresh()
                    took = (time.perf_counter() - started, time.process_time() - cpu)
                    best[with_graph] = (min(best[with_graph][0], took[0]), min(best[with_graph][1], took[1]))
                shutil.rmtree(index)
        return best
    finally:
        graph_store.write_graph = original


def all_found(ranked: list[str], expected: tuple[str, ...] | list[str], k: int = 10) -> float:
    return 1.0 if set(expected) <= set(ranked[:k]) else 0.0


def corpus_figures(args: argparse.Namespace, work: Path) -> None:
    from memrouter.ops.evaluation import load_golden

    corpus = work / "corpus"
    shutil.copytree(args.corpus, corpus)
    rounds = args.rounds
    builds = build_seconds(corpus, work, rounds)
    for clock, at in (("wall", 0), ("CPU", 1)):
        with_graph, without = builds[True][at], builds[False][at]
        print(f"full lexical build of {args.corpus.name} ({clock}): {with_graph:.2f} s with the graph, {without:.2f} s "
              f"without (+{(with_graph / without - 1) * 100:.1f}%, target <= +20%; best of {rounds}, alternating)")  # fmt: skip

    queries = [q for q in load_golden(GOLDEN) if q.kind in ("multi", "multi-hop", "links")]
    index = work / "index"
    with open_router(corpus, index, args.embed, 0.0) as router:  # type: ignore[attr-defined]
        router.refresh(embed=True)
        stats = router.graph_stats()
        print(f"graph: {stats['edges']} edges {stats['edge_types']}; {stats['entities']} entities; "
              f"{stats['dangling_count']} dangling; {stats['orphan_count']} orphans")  # fmt: skip
        target = corpus / "git" / "git-worktree-cleanup.md"
        samples = []
        for n in range(rounds):
            target.write_text(target.read_text(encoding="utf-8") + f"\nSee ADR-0{n} and PR #{n + 100}.\n", "utf-8")
            started = time.perf_counter()
            router.refresh()
            samples.append((time.perf_counter() - started) * 1000)
        print(
            f"one changed memory, lexical refresh with its edges: p50 {statistics.median(samples):.1f} ms (target <= 50 ms)"
        )
        names = ["ADR-007", "adr/adr-035-exit-code-standardization", "#4345", "AGENTS.md", "git/git-worktree-cleanup"]
        router.related(names[0], depth=2)
        samples = []
        for _ in range(rounds * 10):
            for name in names:
                started = time.perf_counter()
                router.related(name, depth=2)
                samples.append((time.perf_counter() - started) * 1000)
        p50, p95 = percentiles(samples)
        print(f"related(depth=2): p50 {p50:.2f} ms  p95 {p95:.2f} ms (target <= 10 ms)")
    # Every weight's router is open on the same index and the queries alternate between them, so load
    # on the machine falls on each alike; the graph off (weight 0) is the baseline.
    weights = [0.0, *args.weights]
    texts = [q.query for q in load_golden(GOLDEN)]
    with contextlib.ExitStack() as stack:
        routers = [stack.enter_context(open_router(corpus, index, args.embed, w)) for w in weights]
        for router in routers:
            for text in texts:
                router.search(text, mode="hybrid")
        samples: dict[float, list[float]] = {w: [] for w in weights}
        for _ in range(rounds):
            for text in texts:
                for weight, router in zip(weights, routers, strict=True):
                    started = time.perf_counter()
                    router.search(text, mode="hybrid")
                    samples[weight].append((time.perf_counter() - started) * 1000)
        base, _ = percentiles(samples[0.0])
        for weight, router in zip(weights, routers, strict=True):
            p50, _ = percentiles(samples[weight])
            found = [
                all_found([h.name for h in router.search(q.query, limit=10, mode="hybrid")], q.expected)
                for q in queries
            ]
            by_kind = {
                kind: statistics.fmean(f for f, q in zip(found, queries, strict=True) if q.kind == kind)
                for kind in sorted({q.kind or "" for q in queries})
            }
            print(f"hybrid graph={weight:<4} warm p50 {p50:6.2f} ms ({p50 - base:+.2f} ms, target <= +3)  all-expected@10 "
                  + " ".join(f"{k} {v:.3f}" for k, v in by_kind.items()) + f"  ({len(queries)} questions)")  # fmt: skip
            print("    " + golden_figures(router, GOLDEN))
    harbor = HERE.parent / "examples"
    with contextlib.ExitStack() as stack:
        routers = [
            stack.enter_context(open_router(harbor / "memories", work / "harbor", args.embed, w)) for w in weights
        ]
        routers[0].refresh(embed=True)
        for weight, router in zip(weights, routers, strict=True):
            print(f"examples/golden.json hybrid graph={weight:<4} " + golden_figures(router, harbor / "golden.json"))


def golden_figures(router: object, golden: Path) -> str:
    """recall@5 and MRR@10 over every question of ``golden``, hybrid (the figures the default weight must not lose)."""
    from memrouter.ops.evaluation import load_golden, recall_at, reciprocal_rank

    rows = []
    for q in load_golden(golden):
        ranked = [h.name for h in router.search(q.query, limit=10, mode="hybrid")]  # type: ignore[attr-defined]
        rows.append((recall_at(ranked, q.expected, 5), reciprocal_rank(ranked, q.expected, 10)))
    return (f"all {len(rows)} questions: recall@5 {statistics.fmean(r for r, _ in rows):.3f}  "
            f"MRR@10 {statistics.fmean(m for _, m in rows):.3f}")  # fmt: skip


def locomo_figures(args: argparse.Namespace, work: Path) -> None:
    import bench_locomo

    data = json.loads(LOCOMO.read_text(encoding="utf-8"))[: args.locomo]
    weights = [0.0, *args.weights]
    rows: dict[float, dict[str, list[float]]] = {w: {"multi": [], "r5": []} for w in weights}
    for sample in data:
        root = work / "locomo" / sample["sample_id"] / "memories"
        root.mkdir(parents=True)
        names = bench_locomo.write_conversation(sample, root)
        for weight in weights:
            index = work / "locomo" / sample["sample_id"] / "index"
            with open_router(root, index, args.embed, weight) as router:  # type: ignore[attr-defined]
                router.refresh(embed=True)
                for qa in sample["qa"]:
                    evidence = [bench_locomo.turn_name(e) for e in qa.get("evidence", [])]
                    evidence = [e for e in evidence if e in names]
                    if not evidence:
                        continue
                    ranked = [h.name for h in router.search(str(qa["question"]), limit=10, mode="hybrid")]
                    rows[weight]["r5"].append(1.0 if set(evidence) & set(ranked[:5]) else 0.0)
                    if qa.get("category") == 1:
                        rows[weight]["multi"].append(all_found(ranked, evidence))
    for weight in weights:
        multi, r5 = rows[weight]["multi"], rows[weight]["r5"]
        print(f"LoCoMo hybrid graph={weight:<4} multi-hop recall_all@10 {statistics.fmean(multi):.3f} ({len(multi)} q)  "
              f"turn R@5 {statistics.fmean(r5):.3f} ({len(r5)} q)")  # fmt: skip


def precision_figures(corpora: Path) -> dict[str, dict[str, float]]:
    """Precision and recall per kind on the labelled spots: a spot counts as found when its memory has an edge to its key."""
    from memrouter.index.graph.extract import extract
    from memrouter.store.files import MemoryStore

    spots = json.loads(MENTIONS.read_text(encoding="utf-8"))["spots"]
    edges: dict[tuple[str, str], set[str]] = {}
    counts: dict[str, dict[str, int]] = {}
    for spot in spots:
        where = (spot["corpus"], spot["memory"])
        if where not in edges:
            root = corpora / spot["corpus"]
            path = root / f"{spot['memory']}.md"
            memory = MemoryStore(root).parse_bytes(spot["memory"], str(path), path.read_bytes())
            edges[where] = {edge.key for edge in extract(memory).edges}
        found = spot["key"] in edges[where]
        row = counts.setdefault(spot["kind"], {"tp": 0, "fp": 0, "fn": 0, "tn": 0})
        row[("tp" if found else "fn") if spot["reference"] else ("fp" if found else "tn")] += 1
    scores = {}
    for kind, row in sorted(counts.items()):
        precision = row["tp"] / max(1, row["tp"] + row["fp"])
        recall = row["tp"] / max(1, row["tp"] + row["fn"])
        scores[kind] = {"precision": precision, "recall": recall, **row}
        print(f"{kind:<7} precision {precision:.3f}  recall {recall:.3f}  "
              f"(references {row['tp'] + row['fn']}, look-alikes {row['fp'] + row['tn']}, wrongly taken {row['fp']})")  # fmt: skip
    print(f"{len(spots)} labelled spots in {len(edges)} memories")
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--embed", default="hash")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--weights", type=lambda v: [float(x) for x in v.split(",")], default=[0.02, 0.05, 0.1])
    parser.add_argument("--locomo", type=int, default=10, help="LoCoMo conversations to run (0: none).")
    parser.add_argument("--skip-corpus", action="store_true")
    parser.add_argument("--precision", action="store_true", help="Score extraction on the labelled spots, then exit.")
    args = parser.parse_args()
    if args.precision:
        precision_figures(args.corpus.parent)
        return
    work = Path(tempfile.mkdtemp(prefix="bench-graph-"))
    try:
        if args.corpus.is_dir() and not args.skip_corpus:
            corpus_figures(args, work)
        if args.locomo and LOCOMO.is_file():
            locomo_figures(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
