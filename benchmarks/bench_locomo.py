"""LoCoMo-10 retrieval benchmark (no LLM anywhere), run through the real Router.

Protocol (../shared/bench/README.md): one memory store per conversation, one
memory per dialogue turn (``speaker: text``, the image caption when present,
and the session date as metadata in the text); the query is the question.
Each turn's front matter says when it was said (``created``: the session's
date and time), and each conversation is searched "now" = the day after its
last session, so time words in questions ("in July 2023", "the last week of
August 2023") are understood the way the product understands them; the
``--time-words`` settings compare ``[search] time_words`` side by side.
Reported per mode, time-words setting and category:
- turn-level recall@1/5/10 (any evidence turn in the top k) and the fraction
  of evidence found, nDCG@10 (ideal over all evidence);
- session-level recall@5/10 (sessions ranked by their best turn);
- the number of questions scored (questions whose evidence names no turn are
  skipped and counted).

A mode ending in ``+rerank`` (``hybrid+rerank``) searches with ``[search] rerank`` on.

Usage: python benchmarks/bench_locomo.py [--modes lexical,hybrid,hybrid+rerank] [--time-words off,filter,boost]
       [--data PATH] [--conversations N]
"""

from __future__ import annotations

import argparse
import calendar
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
DEPTH = 50


def turn_name(dia_id: str) -> str:
    """``D3:12`` -> ``d3-12`` (a valid memory name)."""
    return dia_id.strip().lower().replace(":", "-")


def session_time(text: str) -> time.struct_time | None:
    """``1:56 pm on 8 May, 2023`` as a UTC time, or ``None``."""
    try:
        return time.strptime(text.strip(), "%I:%M %p on %d %B, %Y")
    except ValueError:
        return None


def write_conversation(sample: dict, root: Path) -> tuple[set[str], float]:  # type: ignore[type-arg]
    """One markdown file per turn; returns the names written and the last session's time (epoch seconds)."""
    conversation = sample["conversation"]
    names: set[str] = set()
    session = 1
    last = 0.0
    while f"session_{session}" in conversation:
        date = conversation.get(f"session_{session}_date_time", "")
        when = session_time(date)
        header = f"---\ncreated: {time.strftime('%Y-%m-%dT%H:%M:%SZ', when)}\n---\n" if when else ""
        last = max(last, float(calendar.timegm(when))) if when else last
        for turn in conversation[f"session_{session}"]:
            name = turn_name(turn["dia_id"])
            lines = [header + f"{turn['speaker']}: {turn['text']}"]
            if turn.get("blip_caption"):
                lines.append(f"[shared an image: {turn['blip_caption']}]")
            lines.append(f"Date: {date}")
            (root / f"{name}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
            names.add(name)
        session += 1
    return names, last


def session_of(name: str) -> str:
    return name.split("-")[0]


def score(ranked: list[str], evidence: list[str]) -> dict[str, float]:
    import math

    wanted = set(evidence)
    result: dict[str, float] = {}
    for k in (1, 5, 10):
        found = wanted & set(ranked[:k])
        result[f"turn_r@{k}"] = 1.0 if found else 0.0
        result[f"turn_frac@{k}"] = len(found) / len(wanted)
    gain = sum(1 / math.log2(i + 2) for i, name in enumerate(ranked[:10]) if name in wanted)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(wanted))))
    result["ndcg@10"] = gain / ideal
    sessions: list[str] = []
    for name in ranked:
        if session_of(name) not in sessions:
            sessions.append(session_of(name))
    wanted_sessions = {session_of(name) for name in wanted}
    for k in (5, 10):
        result[f"session_r@{k}"] = 1.0 if wanted_sessions & set(sessions[:k]) else 0.0
    return result


def run(data: list[dict], modes: list[str], settings: list[str], work: Path) -> dict[str, dict]:  # type: ignore[type-arg]
    from memrouter import Config, Router
    from memrouter.core.records import replace

    runs = [f"{mode}/{setting}" for mode in modes for setting in settings]
    results: dict[str, dict[str, list[dict[str, float]]]] = {r: defaultdict(list) for r in runs}
    latencies: dict[str, list[float]] = {r: [] for r in runs}
    skipped = 0
    build_seconds = 0.0
    for sample in data:
        root = work / sample["sample_id"] / "memories"
        root.mkdir(parents=True)
        names, last = write_conversation(sample, root)
        config = Config.load(root=root, index_dir=work / sample["sample_id"] / "index")
        reranking = any(mode.endswith("+rerank") for mode in modes)  # the index keeps token vectors
        config = replace(config, search=replace(config.search, rerank=reranking))
        now = last + 86400  # asked the day after the last session
        with Router(config, watch=False, clock=lambda now=now: now) as router:
            started = time.perf_counter()
            router.refresh(embed=any(not mode.startswith("lexical") for mode in modes))
            build_seconds += time.perf_counter() - started
        for setting in settings:
            search = replace(config.search, time_words=setting)
            with (
                Router(replace(config, search=replace(search, rerank=False)), watch=False, clock=lambda now=now: now) as plain,
                Router(replace(config, search=replace(search, rerank=True)), watch=False, clock=lambda now=now: now) as second,
            ):  # fmt: skip
                for qa in sample["qa"]:
                    evidence = [turn_name(e) for e in qa.get("evidence", []) if turn_name(e) in names]
                    if not evidence:
                        skipped += 1 if setting == settings[0] else 0
                        continue
                    category = CATEGORIES.get(qa.get("category"), str(qa.get("category")))
                    for mode in modes:
                        key = f"{mode}/{setting}"
                        router, plain_mode = (
                            (second, mode[: -len("+rerank")]) if mode.endswith("+rerank") else (plain, mode)
                        )
                        started = time.perf_counter()
                        hits = router.search(str(qa["question"]), limit=DEPTH, mode=plain_mode)
                        latencies[key].append((time.perf_counter() - started) * 1000)
                        row = score([hit.name for hit in hits], evidence)
                        results[key][category].append(row)
                        results[key]["all"].append(row)
    report: dict[str, dict] = {
        "skipped_questions": {"count": skipped},
        "index_seconds": {"total": round(build_seconds, 1)},
    }  # type: ignore[type-arg]
    for key in runs:
        report[key] = {
            category: {k: round(statistics.fmean(r[k] for r in rows), 4) for k in rows[0]} | {"n": len(rows)}
            for category, rows in sorted(results[key].items())
        }
        ordered = sorted(latencies[key])
        report[key]["latency_ms"] = {
            "p50": round(ordered[len(ordered) // 2], 2),
            "p95": round(ordered[int(len(ordered) * 0.95)], 2),
        }
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--modes", default="lexical,hybrid")
    parser.add_argument("--time-words", default="off,filter", help="[search] time_words settings to compare.")
    parser.add_argument("--conversations", type=int, default=None, help="Only the first N conversations.")
    parser.add_argument("--json", action="store_true", help="Print the whole report as JSON.")
    args = parser.parse_args()
    if not args.data.is_file():
        print(f"{args.data} not found; skipping")
        return
    data = json.loads(args.data.read_text(encoding="utf-8"))[: args.conversations]
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    settings = [s.strip() for s in args.time_words.split(",") if s.strip()]
    work = Path(tempfile.mkdtemp(prefix="locomo-"))
    try:
        report = run(data, modes, settings, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
        return
    keys = ["turn_r@1", "turn_r@5", "turn_r@10", "turn_frac@5", "ndcg@10", "session_r@5", "session_r@10"]
    print(
        f"LoCoMo-10: {len(data)} conversations; questions skipped (no evidence turn): {report['skipped_questions']['count']}"
    )
    print(f"{'mode/time words':<22}{'category':<13}" + "".join(f"{k:>13}" for k in keys) + f"{'n':>6}")
    for key in (f"{mode}/{setting}" for mode in modes for setting in settings):
        for category, row in report[key].items():
            if category == "latency_ms":
                continue
            print(f"{key:<22}{category:<13}" + "".join(f"{row[k]:>13.3f}" for k in keys) + f"{row['n']:>6}")
        lat = report[key]["latency_ms"]
        print(f"{key:<22}latency ms   p50 {lat['p50']}  p95 {lat['p95']}")
    print("targets: turn_r@5 >= 0.62 (plain BM25 0.490), session_r@5 >= 0.93 (BM25 0.876)")


if __name__ == "__main__":
    main()
