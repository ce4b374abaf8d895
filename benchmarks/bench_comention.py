"""Would entity co-mention edges between LoCoMo turns help? Measured before building them into the index.

LoCoMo turns hold no links, so the graph there would be co-mentions: turns that
name the same person, place or event (capitalised words that are not a speaker,
seen in 2 to 30 turns of the conversation). This script builds those edges here,
for the measurement only, and fuses a graph list with the router's own lexical and
dense lists (the same fusion and weights as hybrid search):
- ``seeds``: the best 5 lexical hits alone (what the graph retriever gives with no edges);
- ``co-mention``: the same, plus the turns sharing an entity with a seed or with the question.
Printed per graph weight: multi-hop (category 1) recall_all@10 and turn-level recall@5.

Usage: python benchmarks/bench_comention.py [--conversations N] [--weights 0.05,0.1] [--embed hash|minilm]
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import re
import shutil
import statistics
import tempfile
from pathlib import Path

import bench_locomo
from bench_graph import LOCOMO, all_found, open_router

_NAME = re.compile(r"\b[A-Z][a-z]{2,}(?:\s[A-Z][a-z]{2,})*")
_NOT_NAMES = set(
    "The This That What When Where Why How And But Yes Wow Thanks Thank Hey Hi Oh Sure Also Have Had Did Was Are "
    "Its Date Just".split()
)


def entities(text: str, speakers: set[str]) -> set[str]:
    return {e for e in _NAME.findall(text) if e not in speakers and e.split()[0] not in _NOT_NAMES}


def graph_list(lexical: list[str], question: set[str], held: dict[str, set[str]], holders: dict[str, set[str]],
               co_mention: bool) -> list[str]:  # fmt: skip
    """The graph retriever's list for one question: seeds, then what their entities (and the question's) reach."""
    score: dict[str, float] = collections.defaultdict(float)
    for entity in question if co_mention else ():
        for name in holders[entity]:
            score[name] += 1 / math.log2(1 + len(holders[entity]))
    for rank, seed in enumerate(lexical[:5], 1):
        score[seed] = max(score[seed], 1.0 / rank)
        for entity in held.get(seed, ()) if co_mention else ():
            for name in holders.get(entity, ()):
                if name != seed:
                    score[name] += 0.5 / rank / math.log2(1 + len(holders[entity]))
    return sorted(score, key=lambda name: -score[name])[:50]


def main() -> None:
    from memrouter.index.fusion import Ranked, reciprocal_rank_fusion

    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--weights", type=lambda v: [float(x) for x in v.split(",")], default=[0.05, 0.1])
    parser.add_argument("--embed", default="hash")
    args = parser.parse_args()
    data = json.loads(LOCOMO.read_text(encoding="utf-8"))[: args.conversations]
    runs = [("none", 0.0, False)] + [(v, w, v == "co-mention") for w in args.weights for v in ("seeds", "co-mention")]
    found: dict[tuple[str, float], dict[str, list[float]]] = {(v, w): {"multi": [], "r5": []} for v, w, _ in runs}
    work = Path(tempfile.mkdtemp(prefix="bench-comention-"))
    try:
        for sample in data:
            root = work / sample["sample_id"]
            root.mkdir()
            names = bench_locomo.write_conversation(sample, root)
            speakers = {sample["conversation"]["speaker_a"], sample["conversation"]["speaker_b"]}
            held = {n: entities((root / f"{n}.md").read_text(encoding="utf-8"), speakers) for n in names}
            seen = collections.Counter(e for found_in in held.values() for e in found_in)
            holders: dict[str, set[str]] = collections.defaultdict(set)
            for name, found_in in held.items():
                for entity in found_in:
                    if 2 <= seen[entity] <= 30:
                        holders[entity].add(name)
            with open_router(root, work / f"{sample['sample_id']}-index", args.embed, 0.0) as router:
                router.refresh(embed=True)  # type: ignore[attr-defined]
                for qa in sample["qa"]:
                    evidence = [e for e in map(bench_locomo.turn_name, qa.get("evidence", [])) if e in names]
                    if not evidence:
                        continue
                    question = str(qa["question"])
                    lexical = [h.name for h in router.search(question, limit=50, mode="lexical")]  # type: ignore[attr-defined]
                    dense = [h.name for h in router.search(question, limit=50, mode="semantic")]  # type: ignore[attr-defined]
                    asked = {e for e in entities(question, speakers) if e in holders}
                    for variant, weight, co_mention in runs:
                        graph = graph_list(lexical, asked, held, holders, co_mention) if weight else []
                        every = sorted(set(lexical) | set(dense) | set(graph))
                        ids = {name: i for i, name in enumerate(every)}
                        lists = {k: [Ranked(ids[n], 0.0) for n in v] for k, v in
                                 (("lexical", lexical), ("dense", dense), ("graph", graph))}  # fmt: skip
                        fused = reciprocal_rank_fusion(lists, {"lexical": 1.0, "dense": 0.1, "graph": weight}, 60, 10)
                        ranked = [every[f.memory_id] for f in fused]
                        found[(variant, weight)]["r5"].append(1.0 if set(evidence) & set(ranked[:5]) else 0.0)
                        if qa.get("category") == 1:
                            found[(variant, weight)]["multi"].append(all_found(ranked, evidence))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for variant, weight, _ in runs:
        row = found[(variant, weight)]
        print(f"LoCoMo graph={weight:<5} {variant:<10} multi-hop recall_all@10 {statistics.fmean(row['multi']):.3f} "
              f"({len(row['multi'])} q)  turn R@5 {statistics.fmean(row['r5']):.3f} ({len(row['r5'])} q)")  # fmt: skip


if __name__ == "__main__":
    main()
