"""The janitor: quality on ai-agents-1026 plus a seeded set, and speed at 10,000 and 100,000 memories.

    .venv/bin/python benchmarks/bench_janitor.py [--sizes 10000,100000] [--skip-quality] [--skip-speed]

Quality (targets: near-duplicate recall >= 0.95, precision >= 0.9; contradictions found >= 0.8):
the 1,026 memories, each copied with small edits, and 50 planted contradictions
(``memrouter.testing.janitor_seed``), written to a temporary folder, indexed,
then ``Router.janitor()`` (a dry run). A planted pair is found when both names
are in one duplicate or near-duplicate finding; precision counts the pairs the
findings report (every pair of a duplicate group, each near-duplicate pair):
strictly (only planted pairs are right) and counting the corpus's own
near-duplicates (pairs whose originals' exact word-shingle Jaccard is >= 0.5).

Speed (targets: 10,000 <= 5 s, 100,000 <= 60 s): synthetic memories made at
run time from the corpus's paragraphs and LoCoMo's dialogue turns (never
written to the repository), a tenth of them near-copies. Timed: the analysis
(``memrouter.ops.janitor.analyse``: exact and near duplicates, contradictions,
expiry) over the memories already read (as the janitor has them after its one
index query), and its two main steps alone; not timed: making the texts.
Beside it, in the same run, the baseline: SHA-256 of every text. Peak memory:
the process's maximum resident size so far (ru_maxrss). The analysis is shown
as wall and CPU time (the process's own): on a shared machine the gap is time
spent waiting for a core. For ``--router-sizes``
the memories are also written as files and indexed (not timed), then the
whole ``Router.janitor()`` call is timed over that index.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

from memrouter.ops.janitor.analyse import NEAR_DUPLICATE, analyse
from memrouter.ops.janitor.contradictions import find_contradictions
from memrouter.ops.janitor.minhash import near_duplicate_pairs
from memrouter.ops.janitor.records import Entry
from memrouter.router import Router
from memrouter.testing.janitor_seed import seeded_set

SHARED = Path(__file__).resolve().parents[2] / "shared"
CORPUS = SHARED / "corpora" / "ai-agents-1026"
LOCOMO = SHARED / "bench" / "locomo10.json"
_SHINGLE_WORD = re.compile(r"[^\W_]+")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--skip-quality", action="store_true")
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument("--router-sizes", default="10000", help="sizes also timed through Router.janitor()")
    args = parser.parse_args()
    if not CORPUS.is_dir():
        sys.exit(f"{CORPUS} is not available")
    originals = {
        str(p.relative_to(CORPUS).with_suffix("")).lower(): p.read_text() for p in sorted(CORPUS.rglob("*.md"))
    }
    if not args.skip_quality:
        quality(originals)
    if not args.skip_speed:
        through = {int(s) for s in args.router_sizes.split(",") if s}
        for size in (int(s) for s in args.sizes.split(",")):
            speed(originals, size, size in through)


def _shingles(text: str) -> set[tuple[str, ...]]:
    words = _SHINGLE_WORD.findall(text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def _jaccard(a: str, b: str) -> float:
    x, y = _shingles(a), _shingles(b)
    return len(x & y) / len(x | y) if x | y else 0.0


def quality(originals: dict[str, str]) -> None:
    seeded = seeded_set(originals, seed=7, contradictions=50)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "memories"
        for name, text in seeded.memories.items():
            path = root / f"{name}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        with Router.open(root=root, index_dir=Path(folder) / "index", watch=False) as router:
            router.refresh()
            started = time.perf_counter()
            report = router.janitor()
            took = time.perf_counter() - started
    groups = [set(f.names) for f in report.findings if f.reason in ("duplicate", "near_duplicate")]
    found = sum(any({a, b} <= group for group in groups) for a, b in seeded.duplicate_pairs)
    reported: set[frozenset[str]] = set()
    for finding in report.findings:
        if finding.reason == "duplicate":
            names = list(finding.names)
            reported |= {frozenset((a, b)) for i, a in enumerate(names) for b in names[i + 1 :]}
        elif finding.reason == "near_duplicate":
            reported |= {frozenset((p["a"], p["b"])) for p in finding.evidence["pairs"]}
    planted = {frozenset(pair) for pair in seeded.duplicate_pairs}

    def origin(name: str) -> str:
        return name.removeprefix("copies/")

    strict = len(reported & planted)
    own = sum(
        1
        for pair in reported - planted
        if len({origin(n) for n in pair}) == 1 or _jaccard(*(originals.get(origin(n), "") for n in sorted(pair))) >= 0.5
    )
    conflicts = {f.names for f in report.findings if f.reason == "contradiction"}
    caught = {
        (older, newer)
        for older, newer in seeded.contradictions
        if (older, newer) in conflicts or (f"copies/{older}", newer) in conflicts
    }
    planted_names = {n for pair in seeded.contradictions for n in pair} | {
        f"copies/{o}" for o, _ in seeded.contradictions
    }
    other = [pair for pair in conflicts if not set(pair) <= planted_names]
    by_kind: dict[str, list[int]] = {}
    for older, newer in seeded.contradictions:
        by_kind.setdefault(seeded.kinds[newer], [0, 0])[1] += 1
        by_kind[seeded.kinds[newer]][0] += (older, newer) in caught
    print(f"seeded set: {len(seeded.memories)} memories ({len(originals)} originals, {len(planted)} edited copies, "
          f"{len(seeded.contradictions)} contradicting notes); janitor (dry run, index fresh) {took:.2f} s")  # fmt: skip
    print(f"near-duplicates: recall {found / len(planted):.3f} ({found}/{len(planted)}); "
          f"precision {strict / max(1, len(reported)):.3f} strict, "
          f"{(strict + own) / max(1, len(reported)):.3f} counting the corpus's own near-duplicates "
          f"({len(reported)} pairs reported, {own} of them the corpus's own)")  # fmt: skip
    kinds = ", ".join(f"{kind} {hit}/{total}" for kind, (hit, total) in sorted(by_kind.items()))
    print(f"contradictions: found {len(caught) / len(seeded.contradictions):.3f} "
          f"({len(caught)}/{len(seeded.contradictions)}: {kinds}); "
          f"{len(other)} other candidates reported (not planted)")  # fmt: skip
    for pair in sorted(other)[:5]:
        print(f"  other: {pair[0]} -> {pair[1]}")


def synthetic(originals: dict[str, str], size: int, seed: int = 11) -> list[Entry]:
    """``size`` memories from corpus paragraphs and LoCoMo turns; one in ten a near-copy of an earlier one."""
    rng = random.Random(seed)
    paragraphs = [p.strip() for text in originals.values() for p in text.split("\n\n") if len(p.split()) >= 8]
    turns = []
    if LOCOMO.is_file():
        for sample in json.loads(LOCOMO.read_text()):
            for key, value in sample["conversation"].items():
                if key.startswith("session_") and isinstance(value, list):
                    turns += [f"{t['speaker']}: {t['text']}" for t in value if isinstance(t, dict) and "text" in t]
    entries: list[Entry] = []
    for number in range(size):
        if number >= 10 and number % 10 == 0:
            base = entries[rng.randrange(number)]
            words = base.body.split(" ")
            del words[rng.randrange(len(words))]
            body = " ".join(words)
            title = base.title
        else:
            parts = rng.sample(paragraphs, 2) + (rng.sample(turns, 3) if turns else [])
            # A title from the first paragraph's and the last turn's opening words: about as unique as real titles.
            title = " ".join(parts[0].lstrip("#*- ").split()[:4] + parts[-1].split()[1:4])
            body = f"# {title}\n\n" + "\n\n".join(parts) + "\n"
        entries.append(Entry(f"synthetic/m{number:06d}", title, body, "", when=f"2026-01-01T00:00:{number % 60:02d}Z"))
    return entries


def speed(originals: dict[str, str], size: int, through_router: bool) -> None:
    entries = synthetic(originals, size)
    words = sum(len(entry.body.split()) for entry in entries)
    started = time.perf_counter()
    for entry in entries:
        hashlib.sha256(entry.body.encode("utf-8")).hexdigest()
    baseline = time.perf_counter() - started
    started = time.perf_counter()
    near_duplicate_pairs([entry.body for entry in entries], NEAR_DUPLICATE)
    minhash = time.perf_counter() - started
    started = time.perf_counter()
    find_contradictions(entries, list(range(len(entries))))
    contradictions = time.perf_counter() - started
    started, cpu = time.perf_counter(), time.process_time()
    findings, proposals = analyse(entries, "2026-11-23T00:00:00Z", {})
    took, cpu = time.perf_counter() - started, time.process_time() - cpu
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    counts = {r: sum(f.reason == r for f in findings) for r in ("duplicate", "near_duplicate", "contradiction")}
    target = 5 if size <= 10_000 else 60
    print(f"{size:>7,} memories ({words / size:.0f} words each): SHA-256 of every text (baseline) {baseline:.3f} s; "
          f"janitor analysis {took:.2f} s wall, {cpu:.2f} s CPU ({took / baseline:.0f}x; target <= {target} s) "
          f"[alone: MinHash LSH {minhash:.2f} s, contradictions {contradictions:.2f} s]; "
          f"peak RSS so far {peak:.0f} MiB; {counts}, {len(proposals)} proposals")  # fmt: skip
    if through_router:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder) / "memories"
            for entry in entries:
                path = root / f"{entry.name}.md"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(f"---\nupdated: '{entry.when}'\n---\n{entry.body}", encoding="utf-8")
            with Router.open(root=root, index_dir=Path(folder) / "index", watch=False) as router:
                router.refresh()
                started = time.perf_counter()
                report = router.janitor()
                whole = time.perf_counter() - started
        print(f"{size:>7,} memories through Router.janitor() over a fresh index (a stat scan, one query for the "
              f"rows and access counts, the analysis, the report): {whole:.2f} s; {len(report.proposals)} proposals")  # fmt: skip


if __name__ == "__main__":
    main()
