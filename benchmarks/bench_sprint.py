"""Sprint close of 200 memories (target: <= 2 s), beside 200 plain saves from the same run.

    .venv/bin/python benchmarks/bench_sprint.py [--count 200]

Both phases write the same number of files through the same atomic write and
index update; the close also reads each file and rewrites its front matter.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from memrouter.router import Router


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "memories").mkdir()
        _run(Path(folder), args.count)


def _run(folder: Path, count: int) -> None:
    with (
        Router.open(root=folder / "memories", index_dir=folder / "index", watch=False) as router,
    ):
        router.lifecycle.start("bench", weeks=2, goal="benchmark")
        started = time.perf_counter()
        for number in range(count):
            router.save(f"# Note {number}\n\nfinding {number} about caching\n", f"note-{number}", channel="sprint")
        saves = time.perf_counter() - started
        promote = [f"note-{number}" for number in range(0, count, 10)]
        started = time.perf_counter()
        done = router.lifecycle.close(promote=promote, archive_rest=True)
        close = time.perf_counter() - started
    print(f"{count} plain saves (baseline):            {saves:.3f} s")
    print(
        f"sprint close of {count} memories:               {close:.3f} s "
        f"({len(done.promoted)} promoted, {len(done.archived)} archived; {close / saves:.2f}x the saves; target <= 2 s)"
    )


if __name__ == "__main__":
    main()
