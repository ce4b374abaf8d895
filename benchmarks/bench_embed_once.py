"""Processes that miss the same texts at once: claims (each text embedded once) against each embedding what it misses.

    .venv/bin/python benchmarks/bench_embed_once.py [--processes 8] [--texts 1000] [--ms-per-text 1.0] [--burn]

Each of ``--processes`` processes opens one fresh shared vector file and, at the same moment, asks for the vectors
of the same ``--texts`` texts, with an embedder that takes ``--ms-per-text`` a text: a model's pace, spent sleeping
(the count does not depend on the machine's load), or with ``--burn`` spent as CPU time, as a model's is. In the
same run, on two fresh files: as before claims (``lookup``, embed what is missing, ``put``: what
``SharedVectors.embed`` did before) and with ``SharedVectors.embed`` (claims). Prints the texts embedded in all,
the processes' summed CPU time (user and system) and the wall time until the last one finished (the machine may be shared:
compare the ratio, not the seconds).

Then the claims' cost when nobody else embeds: one process takes the vectors of ``--texts`` new texts with a free
embedder, ``--rounds`` times each way (paired, alternating), and prints the user CPU time of each way and the ratio.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from memrouter.index.sqlite.shared_vectors import SharedVectors, text_hash  # noqa: E402

WORKER = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from memrouter.index.sqlite.shared_vectors import SharedVectors, text_hash

path, log, go, way, count, pace = Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5], \\
    int(sys.argv[6]), float(sys.argv[7])
burn = sys.argv[8] == "burn"

def embed(texts):
    with open(log, "a") as out:
        out.write("".join(f"{text}\\n" for text in texts))
    if burn:  # a model's CPU: spin until this thread has used the time
        until = time.thread_time() + pace * len(texts)
        while time.thread_time() < until:
            pass
    else:
        time.sleep(pace * len(texts))
    return [text.encode() for text in texts]

texts = [f"memory chunk number {n}" for n in range(count)]
store = SharedVectors(path)
while not go.exists():
    time.sleep(0.002)
if way == "claims":
    store.embed("m", 1, texts, embed)
else:
    hashes = [text_hash(text) for text in texts]
    found = store.lookup("m", hashes)
    missing = {d: t for d, t in zip(hashes, texts) if d not in found}
    store.put("m", 1, dict(zip(missing, embed(list(missing.values())))))
store.close()
"""


def _cpu(who: int) -> float:
    """User and system CPU seconds (the spinning embedder reads its thread's clock, a system call)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def race(folder: Path, way: str, processes: int, texts: int, pace: float, burn: bool) -> tuple[int, float, float]:
    """Texts embedded in all, summed CPU seconds and wall seconds of ``processes`` racing with ``way``."""
    path, log, go = folder / f"{way}.sqlite", folder / f"{way}.log", folder / f"{way}.go"
    src = str(Path(__file__).resolve().parents[1] / "src")
    before = _cpu(resource.RUSAGE_CHILDREN)
    workers = [subprocess.Popen([sys.executable, "-c", WORKER, src, str(path), str(log), str(go), way, str(texts),
                                 str(pace), "burn" if burn else "sleep"]) for _ in range(processes)]  # fmt: skip
    time.sleep(1.0)  # every process has opened the file and waits
    started = time.perf_counter()
    go.touch()
    if any(worker.wait(timeout=3600) != 0 for worker in workers):
        raise SystemExit(f"a {way} worker failed")
    wall = time.perf_counter() - started
    cpu = _cpu(resource.RUSAGE_CHILDREN) - before
    return len(log.read_text().splitlines()), cpu, wall


def alone(folder: Path, texts: int, rounds: int) -> tuple[float, float]:
    """User CPU seconds of one process taking ``texts`` new vectors: before claims, with claims (summed)."""
    spent = {"before": 0.0, "claims": 0.0}
    for round_ in range(rounds):
        for way in ("before", "claims") if round_ % 2 == 0 else ("claims", "before"):
            store = SharedVectors(folder / f"alone-{way}-{round_}.sqlite")
            batch = [f"round {round_} text {n}" for n in range(texts)]
            start = resource.getrusage(resource.RUSAGE_SELF).ru_utime
            if way == "claims":
                store.embed("m", 1, batch, lambda some: [text.encode() for text in some])
            else:
                hashes = [text_hash(text) for text in batch]
                found = store.lookup("m", hashes)
                missing = {d: t for d, t in zip(hashes, batch, strict=True) if d not in found}
                store.put("m", 1, {d: t.encode() for d, t in missing.items()})
            spent[way] += resource.getrusage(resource.RUSAGE_SELF).ru_utime - start
            store.close()
    return spent["before"], spent["claims"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--ms-per-text", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--burn", action="store_true", help="The embedder spends CPU (as a model does), not sleep.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-embed-once-") as temporary:
        folder = Path(temporary)
        results = {way: race(folder, way, args.processes, args.texts, args.ms_per_text / 1000, args.burn)
                   for way in ("before", "claims")}  # fmt: skip
        spent = "CPU" if args.burn else "sleeping"
        print(f"{args.processes} processes, the same {args.texts} texts, {args.ms_per_text:g} ms {spent} a text:")
        for way, (embedded, cpu, wall) in results.items():
            print(f"  {way:<7}: {embedded:6d} texts embedded, {cpu:6.2f} s CPU, {wall:6.2f} s wall")
        (b_texts, b_cpu, b_wall), (c_texts, c_cpu, c_wall) = results["before"], results["claims"]
        print(
            f"  ratio claims/before: texts {c_texts / b_texts:.3f}, CPU {c_cpu / b_cpu:.3f}, wall {c_wall / b_wall:.3f}"
        )
        before, claims = alone(folder, args.texts, args.rounds)
        print(f"one process alone, {args.texts} new texts x {args.rounds} rounds, free embedder: "
              f"before {before * 1000:.1f} ms, claims {claims * 1000:.1f} ms user CPU, ratio {claims / before:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
