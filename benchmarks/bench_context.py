"""Context assembly against naive top-k concatenation, in the same token budgets (no LLM anywhere).

LoCoMo-10 (one memory per turn, as in bench_locomo.py): for each question,
a context of 500, 1,000 and 2,000 tokens is assembled from the question;
*evidence coverage* is the fraction of questions with an evidence turn's
text inside it. The baseline, in the same budget and the same run, is the
naive one: the search hits' whole texts concatenated, best first, while
they fit.

ai-agents-1026 (the golden file): the fraction of questions whose expected
memories all have text inside a 2,000-token context, and token efficiency
(tokens of expected memories' text / tokens of the context) beside naive;
then the warm time to assemble a 2,000-token context (hybrid), against a
plain hybrid search in the same loop.

ai-agents-1026 with no query (what a SessionStart hook prints): how many of
the memories a new agent needs most are in a 2,000-token context, with
their text or as an index line, against the naive way, whole files newest
first while they fit (the corpus carries no dates, so "newest" is a random
order: the mean over 20 seeded orders). Two rules say which memories are
needed most, 20 each: *most linked*, the memories the most other memories
link to or mention (the graph; keyword index files left out), which is what
the project builds on (the context ranks by citations too, so this figure
shows how many fit, not an independent choice); and *most asked*, the
memories the golden questions expect most often, which the context never
sees. The script runs on older versions too (``before``: the same file run
with main's venv).

``--rerank`` runs the LoCoMo part with the second stage (``[search] rerank``)
on for both the context and the naive baseline.

    .venv/bin/python benchmarks/bench_context.py [--conversations N] [--rerank] [--skip-locomo] [--skip-golden]
        [--skip-essentials]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import CORPUS, percentiles

from memrouter import Router
from memrouter.ops.context import count_tokens

sys.path.insert(0, str(Path(__file__).parent))
from bench_locomo import DATA, turn_name, write_conversation  # noqa: E402

GOLDEN = Path(__file__).parent / "golden" / "ai-agents-1026.json"
BUDGETS = (500, 1000, 2000)


def naive(router: Router, query: str, budget: int) -> tuple[list[str], int]:
    """Whole hits, best first, while they fit: the names included and the tokens used."""
    included: list[str] = []
    used = 0
    for hit in router.search(query, limit=50):
        piece = f"## {hit.name}\n{router.get(hit.name).text}\n"
        cost = count_tokens(piece)
        if used + cost > budget:
            break
        included.append(hit.name)
        used += cost
    return included, used


def shown(context: object) -> dict[str, str]:
    """Memory name -> the text the context shows of it (detailed items only)."""
    blocks = context.blocks  # type: ignore[attr-defined]
    return {item.name: item.text for items in blocks.values() for item in items if item.name and item.text}


def locomo(conversations: int | None, rerank: bool = False) -> None:
    from memrouter import Config
    from memrouter.core.records import replace

    data = json.loads(DATA.read_text(encoding="utf-8"))[:conversations]
    covered = {(kind, budget): 0 for kind in ("context", "naive") for budget in BUDGETS}
    asked = 0
    work = Path(tempfile.mkdtemp(prefix="bench-context-"))
    try:
        for sample in data:
            root = work / sample["sample_id"] / "memories"
            root.mkdir(parents=True)
            names, last = write_conversation(sample, root)
            config = Config.load(root=root, index_dir=work / sample["sample_id"] / "index")
            config = replace(config, search=replace(config.search, rerank=rerank))
            with Router(config, watch=False, clock=lambda last=last: last + 86400) as router:
                router.refresh(embed=True)
                for qa in sample["qa"]:
                    evidence = {turn_name(e) for e in qa.get("evidence", []) if turn_name(e) in names}
                    if not evidence:
                        continue
                    asked += 1
                    question = str(qa["question"])
                    for budget in BUDGETS:
                        inside = shown(router.assemble_context(question, max_tokens=budget))
                        covered["context", budget] += bool(evidence & set(inside))
                        covered["naive", budget] += bool(evidence & set(naive(router, question, budget)[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    second = " (second stage on for both)" if rerank else ""
    print(f"LoCoMo-10, {len(data)} conversations, {asked} questions: evidence coverage{second}")
    print(f"{'budget':>8} {'context':>9} {'naive':>9} {'points':>8}")
    for budget in BUDGETS:
        ours, theirs = covered["context", budget] / asked, covered["naive", budget] / asked
        print(f"{budget:>8} {ours:>9.3f} {theirs:>9.3f} {100 * (ours - theirs):>+8.1f}")


def golden(rounds: int) -> None:
    queries = json.loads(GOLDEN.read_text(encoding="utf-8"))["queries"]
    work = Path(tempfile.mkdtemp(prefix="bench-context-golden-"))
    try:
        root = work / "memories"
        shutil.copytree(CORPUS, root)
        with Router.open(root=root, index_dir=work / "index", watch=False) as router:
            router.refresh(embed=True)
            all_in = {"context": 0, "naive": 0}
            relevant = {"context": 0, "naive": 0}
            total = {"context": 0, "naive": 0}
            for query in queries:
                expected = set(query["expected"])
                context = router.assemble_context(query["query"], max_tokens=2000)
                inside = shown(context)
                all_in["context"] += expected <= set(inside)
                relevant["context"] += sum(count_tokens(text) for name, text in inside.items() if name in expected)
                total["context"] += context.tokens
                names, used = naive(router, query["query"], 2000)
                all_in["naive"] += expected <= set(names)
                relevant["naive"] += sum(count_tokens(router.get(n).text) for n in names if n in expected)
                total["naive"] += used
            print(f"\nai-agents-1026 golden file, {len(queries)} questions, 2,000-token budget")
            print(f"{'':>10} {'all expected inside':>20} {'token efficiency':>17}")
            for kind in ("context", "naive"):
                print(f"{kind:>10} {all_in[kind] / len(queries):>20.3f} {relevant[kind] / max(1, total[kind]):>17.3f}")
            assembled: list[float] = []
            searched: list[float] = []
            for _ in range(rounds):
                for query in queries:
                    started = time.perf_counter()
                    router.search(query["query"])
                    searched.append((time.perf_counter() - started) * 1000)
                    started = time.perf_counter()
                    router.assemble_context(query["query"], max_tokens=2000)
                    assembled.append((time.perf_counter() - started) * 1000)
            (s50, s95), (a50, a95) = percentiles(searched), percentiles(assembled)
            print(f"\nwarm, {rounds} rounds: hybrid search p50/p95 {s50:.1f} / {s95:.1f} ms (baseline); "
                  f"2,000-token context p50/p95 {a50:.1f} / {a95:.1f} ms (target p95 <= 60 ms)")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)


NEEDED = 20
NAIVE_ORDERS = 20


def needed_most(router: Router) -> dict[str, list[str]]:
    """The ``NEEDED`` memories each rule says a new agent needs most (ties broken by name)."""
    import collections

    graph = json.loads(router.graph_export("json"))
    names = {node["id"]: node["label"] for node in graph["nodes"] if node["kind"] == "memory"}
    citing: dict[str, set[str]] = collections.defaultdict(set)
    for edge in graph["edges"]:
        if edge["target"] in names and edge["source"] in names and edge["source"] != edge["target"]:
            citing[names[edge["target"]]].add(edge["source"])
    linked = sorted((n for n in citing if not n.endswith("-index")), key=lambda n: (-len(citing[n]), n))
    asked = collections.Counter(
        name for q in json.loads(GOLDEN.read_text(encoding="utf-8"))["queries"] for name in q["expected"]
    )
    return {
        "most linked": linked[:NEEDED],
        "most asked": sorted(asked, key=lambda n: (-asked[n], n))[:NEEDED],
    }


def essentials() -> None:
    import random

    work = Path(tempfile.mkdtemp(prefix="bench-context-essentials-"))
    try:
        root = work / "memories"
        shutil.copytree(CORPUS, root)
        with Router.open(root=root, index_dir=work / "index", watch=False) as router:
            router.refresh()  # no query: nothing is searched by meaning
            context = router.assemble_context(max_tokens=2000)
            items = [item for items in context.blocks.values() for item in items if item.name]
            with_text = {item.name for item in items if item.text and not getattr(item, "listed", False)}
            listed = {item.name for item in items} - with_text
            names = [summary.name for summary in router.list()]
            sizes = {name: count_tokens(f"## {name}\n{router.get(name).text}\n") for name in names}
            rules = needed_most(router)
            naive: dict[str, float] = {rule: 0.0 for rule in rules}
            for seed in range(NAIVE_ORDERS):
                order = sorted(names)
                random.Random(seed).shuffle(order)
                used, inside = 0, set()
                for name in order:
                    if used + sizes[name] > 2000:
                        break
                    inside.add(name)
                    used += sizes[name]
                for rule, wanted in rules.items():
                    naive[rule] += len(inside & set(wanted)) / NAIVE_ORDERS
        print(f"\nai-agents-1026, no query, 2,000-token budget ({context.tokens} tokens used): of the {NEEDED} "
              "memories each rule says a new agent needs most")  # fmt: skip
        print(f"{'rule':<14}{'with text':>11}{'listed':>8}{'naive (whole files, newest first)':>36}")
        for rule, wanted in rules.items():
            print(f"{rule:<14}{len(with_text & set(wanted)):>11}{len(listed & set(wanted)):>8}{naive[rule]:>36.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rerank", action="store_true", help="LoCoMo with [search] rerank on for both")
    parser.add_argument("--skip-locomo", action="store_true")
    parser.add_argument("--skip-golden", action="store_true")
    parser.add_argument("--skip-essentials", action="store_true")
    args = parser.parse_args()
    if not args.skip_locomo:
        locomo(args.conversations, args.rerank)
    if not args.skip_golden:
        golden(args.rounds)
    if not args.skip_essentials:
        essentials()


if __name__ == "__main__":
    main()
