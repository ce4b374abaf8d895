"""Fit and check relevance (a 0-1 score with one meaning in every mode) and the floor under weak matches.

For every question of every evaluation set (examples/golden.json over
examples/memories, benchmarks/golden/ai-agents-1026.json,
benchmarks/golden/ai-agents-466.json, benchmarks/golden/multi-project.json),
the top 10 hits of a search in each mode (lexical, hybrid, semantic; MiniLM)
are read with the features the product reads (``memrouter.ops.relevance.features``:
coverage, meaning, rank), labelled relevant when the golden file expects them.
*Foreign* questions add what a floor is for: each set's questions asked of
another project's memories, where no hit answers (the two ai-agents corpora
are one project at two dates, so they never ask each other). Records are
cached (``--cache``).

Two logistic models are fitted (``KEYWORDS``: coverage and log rank, for
lexical search; ``MEANING``: coverage, meaning and log rank, for hybrid and
semantic), then the floor: the relevance that maximises F1 of "kept and
relevant" over the training records. Relevance never rises down a list (the
running minimum), as the product shows it.

The check is by set: each corpus is left out in turn (its own questions and
the foreign ones asked of it), the models and the floor are fitted on the
others (never on the other snapshot of the same project), and the held-out
corpus is scored: precision and recall of the hits kept (recall: of the
relevant hits the top 10 holds), how often its own questions get "no good
match", how often the foreign ones do, and the calibration (mean relevance
against the share relevant, by tenths). Last, the constants fitted on every
set, to paste into ``memrouter/ops/relevance.py``, and the same figures for
the constants the code ships. ``--sets`` reads some sets only; a cache
holds the records of the sets and modes it was made with.

    .venv/bin/python benchmarks/fit_floor.py [--cache DIR] [--modes lexical,hybrid,semantic] [--sets a,b]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
from fit_fusion import SETS

from memrouter import Config, Router
from memrouter.ops import relevance as shipped
from memrouter.ops.evaluation import load_golden
from memrouter.ops.relevance import Features, Logistic, features

LIMIT = 10
# Which sets' questions are foreign to which corpus: never one project's own (the two ai-agents snapshots).
SAME_PROJECT = {frozenset({"ai-agents-466", "ai-agents-1026"})}
Record = dict[str, Any]


def collect(name: str, root: Path, work: Path, questions: dict[str, list[Any]], modes: list[str]) -> list[Record]:
    """Every question's hits over corpus ``name``, in each mode: features, label, whose question it is."""
    records: list[Record] = []
    with Router(Config.load(root=root, index_dir=work / name), watch=False) as router:
        router.refresh(embed=any(mode != "lexical" for mode in modes))  # a lexical fit never loads the model
        ws = router.workspace
        for asker, queries in questions.items():
            if asker != name and frozenset({asker, name}) in SAME_PROJECT:
                continue
            for query in queries:
                expected = set(query.expected) if asker == name else set()
                for mode in modes:
                    hits = router.search(query.query, limit=LIMIT, mode=mode)
                    read = ws.index.indexed(lambda q=query.query, hits=hits, mode=mode: features(ws, q, hits, mode))
                    records.append(
                        {
                            "corpus": name, "asker": asker, "query": query.query, "mode": mode, "kind": query.kind,
                            "expected": len(expected),
                            "hits": [
                                {"name": hit.name, "relevant": hit.name in expected, "coverage": f.coverage,
                                 "meaning": f.meaning, "rank": f.rank}
                                for hit, f in zip(hits, read, strict=True) if f is not None
                            ],
                        }
                    )  # fmt: skip
        print(f"  {name}: {len(records)} searches", flush=True)
    return records


def values(hit: Record) -> tuple[float, ...]:
    return Features(hit["coverage"], hit["meaning"], hit["rank"]).values()


def fit(records: list[Record], meaning: bool, l2: float = 1e-3) -> Logistic:
    """Logistic regression (Newton's method, a little L2) on the hits of ``records`` of one feature set."""
    rows = [(values(h), h["relevant"]) for r in records for h in r["hits"] if (h["meaning"] is not None) == meaning]
    if not rows:  # no search of this kind was read (``--modes``): the shipped model stands
        return shipped.MEANING if meaning else shipped.KEYWORDS
    x = np.array([[1.0, *v] for v, _ in rows])
    y = np.array([float(label) for _, label in rows])
    w = np.zeros(x.shape[1])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(x @ w, -60, 60)))
        gradient = x.T @ (p - y) + l2 * np.r_[0, w[1:]]
        hessian = (x * (p * (1 - p))[:, None]).T @ x + l2 * np.diag(np.r_[0, np.ones(len(w) - 1)])
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    return Logistic(round(float(w[0]), 3), tuple(round(float(v), 3) for v in w[1:]))


def scored(record: Record, keywords: Logistic, meaning: Logistic) -> list[tuple[float, bool]]:
    """(relevance as shown, relevant) down one list: the running minimum of the model's probabilities."""
    ceiling = 1.0
    shown = []
    for hit in record["hits"]:
        model = keywords if hit["meaning"] is None else meaning
        ceiling = min(ceiling, model(values(hit)))
        shown.append((ceiling, bool(hit["relevant"])))
    return shown


def floor_for(records: list[Record], keywords: Logistic, meaning: Logistic) -> float:
    """The floor that maximises F1 of the kept hits over ``records``."""
    pairs = [pair for r in records for pair in scored(r, keywords, meaning)]
    relevant = sum(label for _, label in pairs)
    best, best_f1 = 0.5, -1.0
    for floor in np.arange(0.02, 0.9, 0.01):
        kept = [label for p, label in pairs if p >= floor]
        hits = sum(kept)
        if not kept or not hits:
            continue
        precision, recall = hits / len(kept), hits / relevant
        f1 = 2 * precision * recall / (precision + recall)
        if f1 > best_f1:
            best, best_f1 = round(float(floor), 2), f1
    return best


def report(records: list[Record], keywords: Logistic, meaning: Logistic, floor: float) -> dict[str, Any]:
    """Precision and recall of the kept hits, "no good match" on own and foreign questions, calibration."""
    own = [r for r in records if r["asker"] == r["corpus"]]
    foreign = [r for r in records if r["asker"] != r["corpus"]]
    kept = relevant_kept = relevant = 0
    for record in own:
        for p, label in scored(record, keywords, meaning):
            kept += p >= floor
            relevant_kept += label and p >= floor
            relevant += label

    def none_pass(group: list[Record]) -> float:
        return sum(all(p < floor for p, _ in scored(r, keywords, meaning)) for r in group) / max(1, len(group))

    answered = [r for r in own if any(h["relevant"] for h in r["hits"])]
    bins: dict[int, list[tuple[float, bool]]] = {}
    for record in records:
        for p, label in scored(record, keywords, meaning):
            bins.setdefault(min(9, int(p * 10)), []).append((p, label))
    calibration = {
        f"{b / 10:.1f}": (round(sum(p for p, _ in v) / len(v), 3), round(sum(y for _, y in v) / len(v), 3), len(v))
        for b, v in sorted(bins.items())
    }  # fmt: skip
    return {
        "precision": relevant_kept / max(1, kept), "recall": relevant_kept / max(1, relevant),
        "own_no_match": none_pass(answered), "foreign_no_match": none_pass(foreign),
        "own": len(own), "foreign": len(foreign), "calibration": calibration,
    }  # fmt: skip


def line(label: str, found: dict[str, Any]) -> str:
    return (
        f"{label:<16}{found['precision']:>10.3f}{found['recall']:>8.3f}{found['own_no_match']:>11.3f}"
        f"{found['foreign_no_match']:>15.3f}{found['own']:>7}{found['foreign']:>9}"
    )


HEADER = f"{'':<16}{'precision':>10}{'recall':>8}{'own: none':>11}{'foreign: none':>15}{'own':>7}{'foreign':>9}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=Path(".memrouter/fit-floor"))
    parser.add_argument("--modes", default="lexical,hybrid,semantic")
    parser.add_argument("--sets", default=",".join(SETS), help="the evaluation sets to read (default: all)")
    args = parser.parse_args()
    modes = args.modes.split(",")
    sets = {name: SETS[name] for name in args.sets.split(",")}
    args.cache.mkdir(parents=True, exist_ok=True)
    cached = args.cache / "records.json"
    if cached.exists():
        records: list[Record] = json.loads(cached.read_text(encoding="utf-8"))
    else:
        questions = {name: load_golden(golden) for name, (_, golden) in sets.items()}
        records = []
        for name, (root, _) in sets.items():
            records += collect(name, root, args.cache / "indexes", questions, modes)
        cached.write_text(json.dumps(records), encoding="utf-8")
    records = [r for r in records if r["mode"] in modes]
    for mode in modes:
        print(f"\n{mode}: held out by corpus (fitted on the other corpora)\n{HEADER}")
        for name in sets:
            # the two ai-agents snapshots are one project: one is never fitted while the other is checked
            train = [r for r in records if r["corpus"] != name and frozenset({name, r["corpus"]}) not in SAME_PROJECT]
            test = [r for r in records if r["corpus"] == name and r["mode"] == mode]
            if not test:  # this set was not read in this mode (``--sets``, or a cache made so)
                continue
            keywords, meaning = fit(train, False), fit(train, True)
            floor = floor_for(train, keywords, meaning)
            print(line(name, report(test, keywords, meaning, floor)) + f"   floor {floor:.2f}")
    keywords, meaning = fit(records, False), fit(records, True)
    floor = floor_for(records, keywords, meaning)
    print(f"\nfitted on every set: KEYWORDS = {keywords}\n                     MEANING = {meaning}\n"
          f"                     FLOOR = {floor}")  # fmt: skip
    print(f"\nthe shipped constants (floor {shipped.FLOOR}), by corpus and mode\n{HEADER}")
    for name in sets:
        for mode in modes:
            test = [r for r in records if r["corpus"] == name and r["mode"] == mode]
            if test:
                print(
                    line(
                        f"{name.replace('ai-agents-', 'aa-')[:10]} {mode[:5]}",
                        report(test, shipped.KEYWORDS, shipped.MEANING, shipped.FLOOR),
                    )
                )
    print("\ncalibration of the shipped constants, all records: relevance tenth: mean relevance, share relevant, hits")
    for mode in modes:
        found = report([r for r in records if r["mode"] == mode], shipped.KEYWORDS, shipped.MEANING, shipped.FLOOR)
        cells = "  ".join(f"{b}: {m:.2f}/{o:.2f} ({n})" for b, (m, o, n) in found["calibration"].items())
        print(f"{mode:<9}{cells}")
    assert math.isfinite(floor)


if __name__ == "__main__":
    main()
