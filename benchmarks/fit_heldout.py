"""Fit every search constant on some repositories and report it on others: the held-out protocol.

Evaluation units are repositories (a question is never split from the others of
its repository):

- pairs mined from git history (``memrouter.ops.mining``, as ``memrouter eval
  --from-git`` mines them) in each repository given with ``--repo``;
- the golden sets: examples (examples/golden.json), ai-agents-1026 and
  ai-agents-466 (unit ``ai-agents``, with its mined pairs), multi-project;
- LoCoMo-10 (unit ``locomo``), one memory per turn; its ten conversations are
  split between the two folds, as they share one author.

For every question, what each stage sees is collected once (``--cache``) from a
real index: the lexical and dense lists at each folder share, the coverage of
the best lexical hit, the graph retriever's list, the time phrase's window at
each slack, and the second stage's reading of every candidate. Search is then
replayed offline for every setting.

The units are split in two folds (``FOLDS``). Each constant is fitted on one
fold (the grid point with the best mean MRR@10 over its units, each unit
weighing the same) and scored on the other, and the other way round, so every
unit gets a held-out score from constants fitted without it. Figures are the
mean over held-out units, with a 95% bootstrap interval (questions resampled
within each unit). A default changes only when the richer rule beats the
simpler one on the held-out units beyond the interval of the difference.

Fitted in order: the first stage (folder share, fixed or adaptive fusion),
the graph weight, time words (off or boost: slack and weight), the second
stage's shares. Each decision compares the held-out rule with its simpler
alternative, the rest of the pipeline held as fitted.

    .venv/bin/python benchmarks/fit_heldout.py --repo PATH [--repo PATH ...] [--cache DIR] [--snapshots N]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import CORPUS

from memrouter.config.settings import Config
from memrouter.core.query import make_filters, search_filters
from memrouter.core.records import replace
from memrouter.index import search as searching
from memrouter.index.fusion import Fused
from memrouter.index.sqlite import rerank as second
from memrouter.index.sqlite.lexical import LexicalIndex
from memrouter.ops.evaluation import load_golden, reciprocal_rank
from memrouter.ops.history_eval import snapshot_config, write_snapshot
from memrouter.ops.mining import MiningOptions, mine, snapshot_texts
from memrouter.ops.workspace import Workspace

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GOLDEN = {
    "examples": ("examples", REPO / "examples" / "memories", REPO / "examples" / "golden.json"),
    "ai-agents-1026": ("ai-agents", CORPUS, HERE / "golden" / "ai-agents-1026.json"),
    "ai-agents-466": ("ai-agents", CORPUS.parent / "ai-agents-466", HERE / "golden" / "ai-agents-466.json"),
    "multi-project": (
        "multi-project", HERE / "golden" / "multi-project" / "memories", HERE / "golden" / "multi-project.json"
    ),
}  # fmt: skip
POOL = searching.CANDIDATE_POOL
SHARES = (0.0, 0.5, 0.7, 0.9, 1.0)  # folder context
SLACKS = (0.0, 3.0, 7.0, 14.0)  # days a boost's window reaches past its end
Record = dict[str, Any]


# -- collecting ------------------------------------------------------------------------------------------------------
class Reader:
    """Reads what every stage sees for one question, over one workspace (its index holds token vectors)."""

    def __init__(self, ws: Workspace, now: float) -> None:
        self.ws, self.now = ws, now
        keeper = ws.index
        self.conn = keeper.conn
        self.names = dict(self.conn.execute("SELECT id, name FROM memories"))
        self.filters = search_filters(make_filters(), now)
        self.foldered = bool(keeper.lexical.folders(self.conn))
        shares = SHARES if self.foldered else (0.9,)
        self.lexicals = {share: LexicalIndex(folder_share=share) for share in shares}

    def lists(self, query: str, share: float) -> Record:
        keeper, conn = self.ws.index, self.conn
        lexical_index = self.lexicals[share]
        lexical = lexical_index.search(conn, query, self.filters, POOL)
        dense = keeper.dense.search(
            conn, query, self.filters, POOL, passing=lexical_index.allowed, folders=lexical_index.folders(conn)
        )
        coverage = lexical_index.coverage(conn, query, lexical[0].memory_id) if lexical else 0.0
        return {
            "lexical": [self.names[r.memory_id] for r in lexical],
            "dense": [self.names[r.memory_id] for r in dense],
            "coverage": round(coverage, 4),
        }

    def read(self, query: str) -> Record:
        from memrouter.index.graph.retrieve import graph_candidates

        keeper, conn, ws = self.ws.index, self.conn, self.ws
        record: Record = {"variants": {str(share): self.lists(query, share) for share in self.lexicals}}
        lexical = keeper.lexical.search(conn, query, self.filters, POOL)
        graph = graph_candidates(
            keeper.graph_view(), query, self.filters, POOL, lambda f: keeper.lexical.allowed(conn, f), lexical
        )
        record["graph"] = [self.names[r.memory_id] for r in graph]
        candidates = {
            name for variant in record["variants"].values() for name in (*variant["lexical"], *variant["dense"])
        }
        candidates |= set(record["graph"])
        words = ws.pipeline.time_words(query, self.now)
        resolved = ws.activity().resolve(conn, words) if words is not None else None
        if resolved is not None and not set(searching.query_terms(resolved.text)) <= searching._generic():
            inside = {}
            for slack in SLACKS:
                end = searching._later(resolved.end, slack) if resolved.end is not None else None
                inside[str(slack)] = sorted(self.names[m] for m in ws.activity().within(conn, resolved.start, end))
            record["time"] = {"stripped": self.lists(resolved.text, 0.9), "inside": inside}
            candidates |= {*record["time"]["stripped"]["lexical"], *record["time"]["stripped"]["dense"]}
        ids = {name: memory_id for memory_id, name in self.names.items()}
        fused = [Fused(ids[name], 0.0, ()) for name in sorted(candidates)]
        allowed, timed_out = keeper.lexical.allowed(conn, self.filters)
        readings, near = second.read_again(
            conn, keeper.dense, keeper.lexical.folders(conn), query, fused, lexical,
            lambda m: m in allowed and m not in timed_out, depth=len(fused),
        )  # fmt: skip
        record["read"] = {
            self.names[m]: [None if r.late is None else round(r.late, 5), round(r.lexical, 5), round(r.dense, 5)]
            for m, r in readings.items()
        }
        record["near"] = {self.names[m]: [self.names[n] for n in ns] for m, ns in near.items() if ns}
        return record


def open_workspace(root: Path, index_dir: Path, now: float | None = None, base: Config | None = None) -> Workspace:
    config = Config.load(root=root, index_dir=index_dir) if base is None else base
    config = replace(config, search=replace(config.search, rerank=True), embed_background=False)
    ws = Workspace(config, watch=False, clock=(lambda: now) if now is not None else None)
    ws.index.refresh(embed=True)
    return ws


def collect_repository(repo: Path, snapshots: int, work: Path, log: Callable[[str], None]) -> list[Record]:
    """Every pair mined from ``repo``, read against its snapshot."""
    mined = mine(repo, MiningOptions(snapshots=snapshots))
    unit = "ai-agents" if repo.parent.name.endswith("ai-agents") else repo.parent.name.split("+")[-1]
    log(f"{unit}: {len(mined.pairs)} pairs " + json.dumps(mined.counts))
    config = snapshot_config(Config(root=work, index_dir=work), work)
    records: list[Record] = []
    for snapshot in mined.snapshots:
        pairs = mined.for_snapshot(snapshot.commit)
        if not pairs:
            continue
        write_snapshot(config.root, snapshot_texts(repo, snapshot.commit, mined.folder))
        started = time.perf_counter()
        ws = open_workspace(config.root, config.index_dir, base=config)
        try:
            log(f"  snapshot {snapshot.commit[:10]} ({snapshot.memories} memories) indexed in "
                f"{time.perf_counter() - started:.0f} s; {len(pairs)} pairs")  # fmt: skip
            reader = Reader(ws, time.time())
            for pair in pairs:
                asked = {"set": f"git:{unit}", "unit": unit, "kind": pair.kind, "query": pair.query}
                records.append(asked | {"expected": list(pair.expected)} | reader.read(pair.query))
        finally:
            ws.close()
    return records


def collect_golden(name: str, work: Path, log: Callable[[str], None]) -> list[Record]:
    unit, root, golden = GOLDEN[name]
    ws = open_workspace(root, work / name)
    try:
        reader = Reader(ws, time.time())
        records = [
            {"set": name, "unit": unit, "kind": q.kind or "-", "query": q.query, "expected": list(q.expected)}
            | reader.read(q.query)
            for q in load_golden(golden)
        ]
    finally:
        ws.close()
    log(f"{name}: {len(records)} questions")
    return records


def collect_locomo(work: Path, log: Callable[[str], None], conversations: int = 10) -> list[Record]:
    sys.path.insert(0, str(HERE))
    from bench_locomo import CATEGORIES, DATA, turn_name, write_conversation

    records: list[Record] = []
    for sample in json.loads(DATA.read_text(encoding="utf-8"))[:conversations]:
        root = work / "locomo" / sample["sample_id"] / "memories"
        root.mkdir(parents=True, exist_ok=True)
        names, last = write_conversation(sample, root)
        ws = open_workspace(root, work / "locomo" / sample["sample_id"] / "index", now=last + 86400)
        try:
            reader = Reader(ws, last + 86400)
            for qa in sample["qa"]:
                evidence = [turn_name(e) for e in qa.get("evidence", []) if turn_name(e) in names]
                if not evidence:
                    continue
                asked = {
                    "set": "locomo", "unit": "locomo", "conversation": sample["sample_id"],
                    "kind": CATEGORIES.get(qa.get("category"), "other"), "query": str(qa["question"]),
                    "expected": evidence,
                }  # fmt: skip
                records.append(asked | reader.read(str(qa["question"])))
        finally:
            ws.close()
        log(f"locomo {sample['sample_id']}: {len(records)} questions so far")
    return records


def cached(path: Path, collect: Callable[[], list[Record]]) -> list[Record]:
    if not path.is_file():
        path.write_text(json.dumps(collect()), encoding="utf-8")
    loaded: list[Record] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


# -- replaying ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FirstStage:
    """The first stage: folder share, fusion (``high`` None: fixed at ``low``), graph weight, time words."""

    share: float = 0.9
    low: float = 0.1
    high: float | None = searching.DENSE_HIGH
    low_at: float = searching.LOW_AT
    high_at: float = searching.HIGH_AT
    graph: float = 0.0
    slack: float | None = searching.BOOST_SLACK_DAYS  # None: time words off
    time_weight: float = searching.TIME_WEIGHT

    def dense_weight(self, coverage: float) -> float:
        if self.high is None:
            return self.low
        return searching.dense_weight(coverage, self.low, high=self.high, low_at=self.low_at, high_at=self.high_at)

    def label(self) -> str:
        fusion = f"fixed {self.low:g}" if self.high is None else (
            f"adaptive {self.low:g}->{self.high:g} ({self.low_at:g}-{self.high_at:g})"
        )  # fmt: skip
        time_words = "off" if self.slack is None else f"boost {self.slack:g} d x{self.time_weight:g}"
        return f"folders {self.share:g}, {fusion}, graph {self.graph:g}, time {time_words}"


def _rrf(lists: dict[str, Sequence[str]], weights: dict[str, float], k: int = 60) -> list[str]:
    scores: dict[str, float] = {}
    for key, names in lists.items():
        weight = weights.get(key, 1.0)
        if weight <= 0:
            continue
        for rank, name in enumerate(names, 1):
            scores[name] = scores.get(name, 0.0) + weight / (k + rank)
    return sorted(scores, key=lambda name: (-scores[name], name))


def first_stage(record: Record, stage: FirstStage) -> list[str]:
    variants = record["variants"]
    variant = variants.get(f"{stage.share}") or variants.get(str(stage.share)) or variants["0.9"]
    timed = record.get("time") if stage.slack is not None else None
    if timed is not None:
        variant = timed["stripped"]
    lists: dict[str, Sequence[str]] = {"lexical": variant["lexical"], "dense": variant["dense"]}
    both = variant["lexical"] and variant["dense"]  # the rule adapts only when both retrievers found something
    weights = {"lexical": 1.0, "dense": stage.dense_weight(variant["coverage"]) if both else stage.low}
    if stage.graph > 0 and record["graph"]:
        lists["graph"], weights["graph"] = record["graph"], stage.graph
    if timed is not None:
        inside = set(timed["inside"][str(stage.slack)])
        best: dict[str, int] = {}
        for names in lists.values():
            for rank, name in enumerate(names):
                if name in inside and rank < best.get(name, rank + 1):
                    best[name] = rank
        lists["time"] = sorted(best, key=lambda name: (best[name], name))
        weights["time"] = stage.time_weight
    return _rrf(lists, weights)


def second_stage(record: Record, fused: list[str], shares: second.Shares, stage: FirstStage) -> list[str]:
    """The second stage (``rescored``) over ``fused``'s first ``DEPTH`` and their neighbours, replayed."""
    head = fused[: second.DEPTH]
    read = list(dict.fromkeys([*head, *(n for name in head for n in record["near"].get(name, ()))]))
    read = [name for name in read if name in record["read"]]
    timed = record.get("time") if stage.slack is not None else None
    inside = set(timed["inside"][str(stage.slack)]) if timed is not None else set()
    ids = {name: n for n, name in enumerate(dict.fromkeys([*fused, *read]))}
    items = [Fused(ids[name], 1.0 / (60 + rank), ()) for rank, name in enumerate(fused, 1)]
    readings = {ids[name]: second.Reading(*record["read"][name], inside=name in inside) for name in read}
    near = {ids[name]: [ids[n] for n in record["near"].get(name, ()) if n in ids] for name in read}
    names = {n: name for name, n in ids.items()}
    return [names[item.memory_id] for item in second.rescored(items, readings, near, shares)]


def figures(record: Record, ranked: Sequence[str]) -> tuple[float, float]:
    """(recall@5, MRR@10): recall@5 is the share of the expected memories in the top 5 (LoCoMo: whether any
    evidence turn is, as bench_locomo.py counts turn recall)."""
    expected = record["expected"]
    top = set(ranked[:5])
    r5 = (
        float(bool(top & set(expected)))
        if record["unit"] == "locomo"
        else len(top & set(expected)) / len(set(expected))
    )
    return r5, reciprocal_rank(ranked, expected, 10)


Pipeline = Callable[[Record], list[str]]


def scored(records: Sequence[Record], pipeline: Pipeline) -> list[tuple[float, float]]:
    return [figures(r, pipeline(r)) for r in records]


def macro(records: Sequence[Record], values: Sequence[float]) -> float:
    """The mean over units of each unit's mean."""
    by_unit: dict[str, list[float]] = {}
    for record, value in zip(records, values, strict=True):
        by_unit.setdefault(record["unit"], []).append(value)
    return statistics.fmean(statistics.fmean(v) for v in by_unit.values())


def best_of(records: Sequence[Record], options: Iterable[Any], pipeline_of: Callable[[Any], Pipeline]) -> Any:
    """The option whose pipeline has the best macro MRR@10 over ``records`` (the first on a tie)."""
    best: tuple[float, Any] | None = None
    for option in options:
        mrr = macro(records, [m for _, m in scored(records, pipeline_of(option))])
        if best is None or mrr > best[0] + 1e-9:
            best = (mrr, option)
    assert best is not None
    return best[1]


def bootstrap(
    records: Sequence[Record], values: Sequence[float], rounds: int = 1000, seed: int = 7
) -> tuple[float, float]:
    """The 95% interval of the macro mean, resampling questions within each unit."""
    by_unit: dict[str, list[float]] = {}
    for record, value in zip(records, values, strict=True):
        by_unit.setdefault(record["unit"], []).append(value)
    rng = random.Random(seed)
    means = []
    for _ in range(rounds):
        means.append(statistics.fmean(statistics.fmean(rng.choices(v, k=len(v))) for v in by_unit.values()))
    means.sort()
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


# -- the protocol ---------------------------------------------------------------------------------------------------
FOLDS = (
    {"ai-agents", "multi-project", "locomo:even"},
    {"LoRAIro", "confident-claude", "pause-monitor", "findingmodel", "examples", "locomo:odd"},
)


def fold_of(record: Record) -> int:
    unit = record["unit"]
    if unit == "locomo":
        return int(record["conversation"].split("-")[-1]) % 2
    return 0 if unit in FOLDS[0] else 1


FUSION_GRID = [
    *[{"low": low, "high": None} for low in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0)],
    *[
        {"low": low, "high": high, "low_at": low_at, "high_at": high_at}
        for low, high, low_at, high_at in itertools.product(
            (0.05, 0.1, 0.2), (0.3, 0.5, 0.8, 1.0, 1.5), (0.0, 0.2, 0.3, 0.4), (0.5, 0.6, 0.7, 0.8, 0.9)
        )
        if low_at < high_at and high > low
    ],
]


def fit_fusion(train: Sequence[Record], log: Callable[[str], None]) -> dict[str, FirstStage]:
    """Folder share and fusion fitted on ``train``, the fixed and the adaptive rule apart."""
    fitted: dict[str, FirstStage] = {}
    for family, grid in (
        ("fixed", [g for g in FUSION_GRID if g["high"] is None]),
        ("adaptive", [g for g in FUSION_GRID if g["high"] is not None]),
    ):
        options = [replace(FirstStage(), share=share, **g) for share in SHARES for g in grid]
        fitted[family] = best_of(train, options, lambda s: lambda r, s=s: first_stage(r, s))
        log(f"    {family}: {fitted[family].label()}")
    return fitted


def fit_rest(train: Sequence[Record], stage: FirstStage, log: Callable[[str], None]) -> dict[str, Any]:
    """Given the first stage ``stage``: the graph weight, time words, and the second stage's shares."""
    fitted: dict[str, Any] = {}
    graphs = [replace(stage, graph=g) for g in (0.02, 0.05, 0.1, 0.3)]
    fitted["graph"] = best_of(train, graphs, lambda s: lambda r, s=s: first_stage(r, s))
    log(f"    graph: {fitted['graph'].graph}")
    timed = [r for r in train if r.get("time")]
    options = [replace(stage, slack=slack, time_weight=w) for slack in SLACKS for w in (0.25, 0.5, 1.0)]
    fitted["time"] = best_of(timed, options, lambda s: lambda r, s=s: first_stage(r, s)) if timed else stage
    log(f"    time words ({len(timed)} questions with a phrase): {fitted['time'].label()}")
    share_grid = [
        second.Shares(lexical, dense, neighbour, time_share)
        for lexical, dense, neighbour, time_share in itertools.product(
            (0.05, 0.15, 0.3), (0.2, 0.4, 0.7), (0.0, 0.3, 0.5, 0.7), (0.0, 0.2)
        )
    ]
    fused = {id(r): first_stage(r, fitted["time"]) for r in train}
    fitted["rerank"] = best_of(
        train, share_grid, lambda s: lambda r, s=s: second_stage(r, fused[id(r)], s, fitted["time"])
    )
    log(f"    second stage: {fitted['rerank']}")
    return fitted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repo", type=Path, action="append", default=[], help="a git repository with memories")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/memrouter-heldout"))
    parser.add_argument("--snapshots", type=int, default=6)
    parser.add_argument("--collect-only", action="store_true")
    parser.add_argument("--golden", default=",".join(GOLDEN), help="golden sets to include (comma-separated)")
    parser.add_argument("--locomo", type=int, default=10, help="LoCoMo conversations (0: none)")
    args = parser.parse_args()
    args.cache.mkdir(parents=True, exist_ok=True)

    def log(line: str) -> None:
        print(line, flush=True)

    records: list[Record] = []
    for repo in args.repo:
        unit = repo.parent.name
        found = cached(args.cache / f"git-{unit}.json", lambda repo=repo, unit=unit: collect_repository(
            repo, args.snapshots, args.cache / "work" / unit, log))  # fmt: skip
        # the pairs the miner keeps now (a cache read before a filter was added holds more)
        kept = {(p.query, p.expected) for p in mine(repo, MiningOptions(snapshots=args.snapshots)).pairs}
        records += [r for r in found if (r["query"], tuple(r["expected"])) in kept]
    for name in [n for n in args.golden.split(",") if n]:
        records += cached(
            args.cache / f"golden-{name}.json", lambda name=name: collect_golden(name, args.cache / "work", log)
        )
    if args.locomo:
        records += cached(
            args.cache / f"locomo-{args.locomo}.json", lambda: collect_locomo(args.cache / "work", log, args.locomo)
        )
    if not args.collect_only:
        report(records, log)


class HeldOut:
    """Rules scored on the held-out fold: each unit with the constants fitted on the other fold."""

    def __init__(self, folds: list[list[Record]], log: Callable[[str], None]) -> None:
        self.folds, self.log = folds, log
        self.test = [r for f in (0, 1) for r in folds[1 - f]]
        self.values: dict[str, list[tuple[float, float]]] = {}

    def score(self, name: str, rule: Callable[[int], Pipeline]) -> None:
        """``rule(f)``: the pipeline fitted on fold ``f`` (scored on the other)."""
        self.values[name] = [figures(r, rule(f)(r)) for f in (0, 1) for r in self.folds[1 - f]]

    def table(self, names: Sequence[str], subset: Callable[[Record], bool] = lambda r: True) -> None:
        keep = [i for i, r in enumerate(self.test) if subset(r)]
        for name in names:
            self.log(f"  {name:44s} {self._figures(name, keep)}")

    def units(self, name: str) -> None:
        for unit in sorted({r["unit"] for r in self.test}):
            keep = [i for i, r in enumerate(self.test) if r["unit"] == unit]
            self.log(f"    {unit:18s} {len(keep):5d} q  {self._figures(name, keep)}")

    def _figures(self, name: str, keep: list[int]) -> str:
        """Recall@5 and MRR@10 of ``name`` over the questions ``keep``, each with its bootstrap interval."""
        test = [self.test[i] for i in keep]
        pairs = [self.values[name][i] for i in keep]
        r5s, mrrs = [a for a, _ in pairs], [b for _, b in pairs]
        (r5_low, r5_high), (low, high) = bootstrap(test, r5s), bootstrap(test, mrrs)
        return (
            f"R@5 {macro(test, r5s):.3f} [{r5_low:.3f}, {r5_high:.3f}]  "
            f"MRR@10 {macro(test, mrrs):.3f} [{low:.3f}, {high:.3f}]"
        )

    def decide(self, rich: str, simple: str, subset: Callable[[Record], bool] = lambda r: True) -> bool:
        """Whether ``rich`` beats ``simple`` on held-out MRR@10 beyond the 95% interval of the difference."""
        keep = [i for i, r in enumerate(self.test) if subset(r)]
        test = [self.test[i] for i in keep]
        diff = [self.values[rich][i][1] - self.values[simple][i][1] for i in keep]
        r5 = [self.values[rich][i][0] - self.values[simple][i][0] for i in keep]
        low, high = bootstrap(test, diff)
        wins = low > 0
        verdict = "wins" if wins else "loses" if high < 0 else "within the interval"
        self.log(f"  {rich} against {simple} ({len(test)} q): MRR@10 {macro(test, diff):+.3f} [{low:+.3f}, {high:+.3f}], "
                 f"R@5 {macro(test, r5):+.3f}: {verdict}")  # fmt: skip
        return wins


def report(records: list[Record], log: Callable[[str], None]) -> None:
    units = sorted({r["unit"] for r in records})
    log(f"{len(records)} questions: " + ", ".join(f"{u} {sum(r['unit'] == u for r in records)}" for u in units))
    folds = [[r for r in records if fold_of(r) == f] for f in (0, 1)]
    held = HeldOut(folds, log)
    shipped = FirstStage()  # adaptive fusion with the constants it shipped with (the default is fixed 0.1)
    fusion: dict[int, dict[str, FirstStage]] = {}
    for f in (0, 1):
        log(f"fold {f} ({', '.join(sorted({r['unit'] for r in folds[f]}))}, {len(folds[f])} q):")
        fusion[f] = fit_fusion(folds[f], log)
    held.score("adaptive, shipped constants", lambda f: lambda r: first_stage(r, shipped))
    held.score("fixed 0.1", lambda f: lambda r: first_stage(r, replace(shipped, high=None)))
    held.score("lexical alone", lambda f: lambda r: first_stage(r, replace(shipped, low=0.0, high=None)))
    held.score("fixed, fitted", lambda f: lambda r: first_stage(r, fusion[f]["fixed"]))
    held.score("adaptive, fitted", lambda f: lambda r: first_stage(r, fusion[f]["adaptive"]))
    log("\nheld out, first stage (95% bootstrap intervals, questions resampled within each unit):")
    held.table(["adaptive, shipped constants", "fixed 0.1", "lexical alone", "fixed, fitted", "adaptive, fitted"])
    log("  adaptive, shipped constants, per unit:")
    held.units("adaptive, shipped constants")
    log("decisions (held-out MRR@10, the richer rule against the simpler):")
    adaptive = held.decide("adaptive, fitted", "fixed, fitted")
    held.decide("adaptive, shipped constants", "fixed 0.1")
    family = "adaptive" if adaptive else "fixed"
    base = f"{family}, fitted"
    rest: dict[int, dict[str, Any]] = {}
    for f in (0, 1):
        log(f"fold {f}, over {family} fusion:")
        rest[f] = fit_rest(folds[f], fusion[f][family], log)
    held.score("folders off", lambda f: lambda r: first_stage(r, replace(fusion[f][family], share=0.0)))
    held.score("+ graph, fitted", lambda f: lambda r: first_stage(r, rest[f]["graph"]))
    held.score("time words off", lambda f: lambda r: first_stage(r, replace(fusion[f][family], slack=None)))
    held.score("time words, fitted", lambda f: lambda r: first_stage(r, rest[f]["time"]))
    held.score(
        "+ second stage, fitted",
        lambda f: lambda r: second_stage(r, first_stage(r, rest[f]["time"]), rest[f]["rerank"], rest[f]["time"]),
    )
    held.score(
        "+ second stage, today's shares",
        lambda f: lambda r: second_stage(r, first_stage(r, rest[f]["time"]), second.SHARES, rest[f]["time"]),
    )
    log("\nheld out, the rest:")
    held.table(
        [
            base,
            "folders off",
            "+ graph, fitted",
            "time words, fitted",
            "+ second stage, fitted",
            "+ second stage, today's shares",
        ]
    )
    log("  questions with a time phrase:")
    held.table(["time words off", "time words, fitted", base], lambda r: bool(r.get("time")))
    log("decisions:")
    held.decide(base, "folders off")
    held.decide("+ graph, fitted", base)
    held.decide("time words, fitted", "time words off", lambda r: bool(r.get("time")))
    held.decide("+ second stage, fitted", "time words, fitted")
    log("  per unit, the second stage:")
    held.units("+ second stage, fitted")


if __name__ == "__main__":
    main()
