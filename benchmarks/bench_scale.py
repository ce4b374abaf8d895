"""Lexical search at scale: warm p50/p95 at 1k, 10k and 100k memories, against SQLite FTS5 in the same run.

The corpus is generated from ../shared at run time (never committed): each
memory holds 1-3 paragraphs drawn from the two agent-memory corpora and
LoCoMo's conversation turns, under 100 folders. The questions are 220 real
ones: 200 LoCoMo questions and the 20 speed-benchmark queries. memrouter
runs in lexical mode through the Router (BM25F, filters, snippets); the
baseline is an FTS5 table over the same names, titles and bodies, queried
with the same words OR-ed and ordered by ``bm25()``. Both are warmed with one
pass over the questions, then timed over ``--rounds`` more.

    .venv/bin/python benchmarks/bench_scale.py [--sizes 1000,10000,100000] [--rounds 2]

Targets at 100,000 memories: p95 <= 25 ms and p50 <= 8 ms; the index build
time and the process's peak RSS after the build are reported.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import resource
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from _common import QUERIES, percentiles

from memrouter import Router

SHARED = Path(__file__).resolve().parents[2] / "shared"
WORD = re.compile(r"[^\W_]+")


def paragraphs() -> list[str]:
    """Paragraphs of real text: the corpora's markdown (front matter dropped) and LoCoMo's turns."""
    found: list[str] = []
    for path in sorted((SHARED / "corpora").rglob("*.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.startswith("---"):
            text = text.split("---", 2)[-1]
        found += [p.strip() for p in text.split("\n\n") if 40 <= len(p.strip()) <= 800]
    for sample in json.loads((SHARED / "bench" / "locomo10.json").read_text(encoding="utf-8")):
        conversation = sample["conversation"]
        for key, turns in conversation.items():
            if key.startswith("session_") and isinstance(turns, list):
                found += [f"{t['speaker']}: {t['text']}" for t in turns if len(t.get("text", "")) >= 40]
    return found


def questions() -> list[str]:
    data = json.loads((SHARED / "bench" / "locomo10.json").read_text(encoding="utf-8"))
    asked = [str(qa["question"]) for sample in data for qa in sample["qa"]]
    return random.Random(7).sample(asked, 200) + list(QUERIES)


def write_corpus(root: Path, size: int, pool: list[str]) -> list[tuple[str, str, str]]:
    """``size`` memory files under ``root``; returns (name, title, body) of each."""
    chooser = random.Random(size)
    made: list[tuple[str, str, str]] = []
    for number in range(size):
        body = "\n\n".join(chooser.choice(pool) for _ in range(chooser.randint(1, 3)))
        title = " ".join(WORD.findall(body)[:6]) or f"note {number}"
        name = f"f{number % 100:02}/m{number}"
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / f"{name}.md").write_text(f"# {title}\n\n{body}\n", encoding="utf-8")
        made.append((name, title, body))
    return made


def fts5_table(made: list[tuple[str, str, str]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(name, title, body)")
    conn.executemany("INSERT INTO f VALUES (?, ?, ?)", made)
    conn.commit()
    return conn


def fts5_search(conn: sqlite3.Connection, query: str) -> list[str]:
    words = {w.lower() for w in WORD.findall(query)}
    if not words:
        return []
    match = " OR ".join(f'"{w}"' for w in sorted(words))
    return [row[0] for row in conn.execute("SELECT name FROM f WHERE f MATCH ? ORDER BY bm25(f) LIMIT 10", (match,))]


def timed(call: object, asked: list[str], rounds: int) -> list[float]:
    for query in asked:  # warm: postings loaded, caches filled
        call(query)  # type: ignore[operator]
    samples: list[float] = []
    for _ in range(rounds):
        for query in asked:
            started = time.perf_counter()
            call(query)  # type: ignore[operator]
            samples.append((time.perf_counter() - started) * 1000)
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    pool, asked = paragraphs(), questions()
    print(f"{len(pool)} paragraphs, {len(asked)} questions, {args.rounds} timed rounds after one warm-up pass")
    print(
        f"{'N':>8} {'build s':>8} {'RSS MB':>7} {'memrouter p50/p95 ms':>21} {'FTS5 p50/p95 ms':>16} {'p95 ratio':>9}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        work = Path(tempfile.mkdtemp(prefix=f"bench-scale-{size}-"))
        try:
            made = write_corpus(work / "memories", size, pool)
            with Router.open(root=work / "memories", index_dir=work / "index", watch=False) as router:
                started = time.perf_counter()
                router.refresh(embed=False)
                build = time.perf_counter() - started
                ours = timed(lambda q: router.search(q, limit=10, mode="lexical"), asked, args.rounds)
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            conn = fts5_table(made)
            theirs = timed(lambda q, c=conn: fts5_search(c, q), asked, args.rounds)
            conn.close()
        finally:
            shutil.rmtree(work, ignore_errors=True)
        (p50, p95), (f50, f95) = percentiles(ours), percentiles(theirs)
        print(
            f"{size:>8} {build:>8.1f} {rss:>7.0f} {p50:>9.2f} / {p95:<9.2f} {f50:>6.2f} / {f95:<7.2f} {p95 / f95:>9.2f}"
        )


if __name__ == "__main__":
    main()
