"""Fit and check folder context: how much a folder's overview lends its memories.

On benchmarks/golden/multi-project.json (84 questions over 24 fictional
projects, one folder each, the same five memory names in every folder), every
question is searched with ``[search] folder_context`` at each share of the
grid, lexical and hybrid, through the real Router. Printed: recall@5 / MRR@10
per question kind at each share, then the held-out check: the projects are
split in two halves, the share with the best MRR@10 on one half's questions
is scored on the other half's, and the other way round.

    .venv/bin/python benchmarks/fit_folders.py [--modes lexical,hybrid]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import defaultdict
from pathlib import Path

from memrouter import Router
from memrouter.config.settings import Config
from memrouter.core.records import replace
from memrouter.ops.evaluation import load_golden, recall_at, reciprocal_rank

HERE = Path(__file__).resolve().parent
ROOT = HERE / "golden" / "multi-project" / "memories"
GOLDEN = HERE / "golden" / "multi-project.json"
SHARES = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def project(names: tuple[str, ...]) -> str:
    return names[0].split("/", 1)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--modes", default="lexical,hybrid")
    args = parser.parse_args()
    queries = load_golden(GOLDEN)
    folders = sorted({project(q.expected) for q in queries})
    half = {folder: n % 2 for n, folder in enumerate(folders)}
    with tempfile.TemporaryDirectory() as work:
        base = Config.load(root=ROOT, index_dir=Path(work) / "index")
        with Router(base, watch=False) as router:
            router.refresh(embed="hybrid" in args.modes)
        for mode in args.modes.split(","):
            # (share, question id) -> (recall@5, reciprocal rank@10)
            scored: dict[tuple[float, str], tuple[float, float]] = {}
            for share in SHARES:
                config = replace(base, search=replace(base.search, folder_context=share))
                with Router(config, watch=False) as router:
                    for query in queries:
                        names = [hit.name for hit in router.search(query.query, limit=10, mode=mode)]
                        scored[share, query.id] = (
                            recall_at(names, query.expected, 5),
                            reciprocal_rank(names, query.expected, 10),
                        )
            kinds = sorted({q.kind or "-" for q in queries})
            print(f"\n{mode}: recall@5 / MRR@10 by kind ({len(queries)} questions)")
            counts = {kind: sum(kind in ("all", q.kind) for q in queries) for kind in [*kinds, "all"]}
            print("share | " + " | ".join(f"{kind} ({count})" for kind, count in counts.items()))
            for share in SHARES:
                cells = []
                for kind in [*kinds, "all"]:
                    chosen = [q for q in queries if kind in ("all", q.kind)]
                    r5 = sum(scored[share, q.id][0] for q in chosen) / len(chosen)
                    mrr = sum(scored[share, q.id][1] for q in chosen) / len(chosen)
                    cells.append(f"{r5:.3f} / {mrr:.3f}")
                print(f"{share:.1f} | " + " | ".join(cells))
            held: dict[str, list[tuple[float, float]]] = defaultdict(list)
            for side in (0, 1):
                fit = [q for q in queries if half[project(q.expected)] == side]
                test = [q for q in queries if half[project(q.expected)] != side]
                best = max(SHARES, key=lambda s, fit=fit: (sum(scored[s, q.id][1] for q in fit), -s))
                print(f"fitted on half {side}: share {best:.1f}")
                for q in test:
                    held[q.kind or "-"].append(scored[best, q.id])
                    held["all"].append(scored[best, q.id])
            print("held out | " + " | ".join(
                f"{kind} {sum(r for r, _ in rows) / len(rows):.3f} / {sum(m for _, m in rows) / len(rows):.3f}"
                for kind, rows in sorted(held.items())
            ))  # fmt: skip
    print(json.dumps({"shares": SHARES, "questions": len(queries)}))


if __name__ == "__main__":
    main()
