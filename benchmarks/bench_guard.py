"""The write guard measured: secret recall, false positives on clean text, review precision, overhead.

    .venv/bin/python benchmarks/bench_guard.py

- recall on tests/data/guard/secrets.md (fake secrets, every kind, in prose,
  code, YAML and URLs; filled with fresh fakes under several seeds);
- recall on generated passwords of letters alone (no digit) in YAML and .env
  shapes, and how many CamelCase words of the clean set assigned to
  ``password:`` are refused;
- false positives (refused) on the clean set: every file of
  ../shared/corpora and every LoCoMo turn, each listed with its reasons;
- precision and recall of "pending" on tests/data/guard/notes.md (agent notes
  labelled pending or accepted);
- the guard's cost for a 10 KB memory: ``check`` alone, and a save through the
  Router with the guard beside the same save with the guard's hook bypassed
  (p50/p95 over repeated writes, same process, same index).
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

from _common import percentiles

from memrouter.guard import check
from memrouter.testing.guard_sets import fake, load_cases

SHARED = Path(__file__).resolve().parents[2] / "shared"
SEEDS = 10
WRITES = 200


def secret_recall() -> None:
    total = found = 0
    missed: list[str] = []
    for seed in range(SEEDS):
        for case in load_cases("secrets.md", seed=seed):
            total += 1
            verdict = check(case.text)
            if verdict.refused and case.label in {reason.kind for reason in verdict.reasons}:
                found += 1
            else:
                missed.append(f"line {case.line} ({case.label}, seed {seed})")
    cases = total // SEEDS
    print(f"secrets: {cases} cases x {SEEDS} fills: recall {found}/{total} = {found / total:.1%}")
    for item in missed[:20]:
        print(f"  missed: {item}")


def letter_passwords() -> None:
    """Generated passwords with no digit (20 random letters), assigned in YAML and .env shapes; and the
    CamelCase words of the clean corpora assigned the same way (a name is not a password)."""
    rng = random.Random(35)
    shapes = ('password: "{}"', "db_password: '{}'", 'DB_PASSWORD="{}"', "SMTP_PASSWORD={}")
    draws = [fake("letters", rng) for _ in range(500)]
    found = sum(check(shape.format(value)).refused for value in draws for shape in shapes)
    total = len(draws) * len(shapes)
    print(
        f"letters-only passwords: {len(draws)} draws x {len(shapes)} shapes: recall {found}/{total} = {found / total:.1%}"
    )
    names = sorted(
        {word for _, text in clean_texts() for word in re.findall(r"\b[A-Za-z]{12,}\b", text)
         if not word.islower() and not word.isupper() and not word.istitle()}
    )  # fmt: skip
    refused = [name for name in names if check(f'password: "{name}"').refused]
    print(f"  CamelCase words of the clean set assigned to password: {len(refused)}/{len(names)} refused")
    for name in refused[:10]:
        print(f"    {name}")


def clean_texts() -> list[tuple[str, str]]:
    texts = [
        (str(path.relative_to(SHARED)), path.read_text(encoding="utf-8", errors="replace"))
        for path in sorted((SHARED / "corpora").rglob("*.md"))
        if path.parent != SHARED / "corpora"  # the corpora's own README is not part of either corpus
    ]
    conversations = json.loads((SHARED / "bench" / "locomo10.json").read_text(encoding="utf-8"))
    for sample in conversations:
        for key, turns in sample["conversation"].items():
            if key.startswith("session_") and isinstance(turns, list):
                texts += [(f"locomo {sample['sample_id']} {turn['dia_id']}", turn["text"]) for turn in turns]
    return texts


def false_positives() -> None:
    texts = clean_texts()
    files = sum(1 for label, _ in texts if not label.startswith("locomo"))
    refused = [(label, check(text)) for label, text in texts]
    refused = [(label, verdict) for label, verdict in refused if verdict.refused]
    refused_files = sum(1 for label, _ in refused if not label.startswith("locomo"))
    print(
        f"clean: {files} corpus files, {len(texts) - files} LoCoMo turns: {len(refused)} refused "
        f"({refused_files / files:.2%} of files, {(len(refused) - refused_files) / (len(texts) - files):.2%} of turns)"
    )
    for label, verdict in refused:
        print(f"  FP {label}: {verdict.summary()}")
    flagged = sum(1 for _, text in texts if check(text).flags)
    print(f"  flagged as injection (stored): {flagged}")


def pending_quality() -> None:
    cases = load_cases("notes.md")
    tp = fp = fn = tn = 0
    wrong: list[str] = []
    for case in cases:
        held = check(case.text, actor="agent").pending
        want = case.label == "pending"
        tp += held and want
        fp += held and not want
        fn += want and not held
        tn += not held and not want
        if held != want:
            wrong.append(f"line {case.line}: labelled {case.label}")
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    print(f"agent notes: {len(cases)} ({tp + fn} labelled pending): precision {precision:.2f}, recall {recall:.2f}")
    for item in wrong:
        print(f"  wrong: {item}")


def memory_10kb(rng: random.Random, words: list[str]) -> str:
    lines = ["# Deployment notes " + str(rng.random()), ""]
    while sum(len(line) + 1 for line in lines) < 10_000:
        lines.append(" ".join(rng.choice(words) for _ in range(14)) + ".")
    return "\n".join(lines) + "\nSee ADR-012 and src/deploy/rollout.py.\n"


def real_10kb(rng: random.Random, paragraphs: list[str]) -> str:
    """About 10 KB of real memory text: paragraphs of another corpus than the index holds, in a random order."""
    lines = ["# Deployment notes " + str(rng.random()), ""]
    while sum(len(line) + 2 for line in lines) < 10_000:
        lines.append(rng.choice(paragraphs))
    return "\n\n".join(lines) + "\n\nSee ADR-012 and src/deploy/rollout.py.\n"


def overhead() -> None:
    rng = random.Random(7)
    corpus = sorted((SHARED / "corpora" / "ai-agents-1026").rglob("*.md"))
    words = [w for path in corpus[:200] for w in path.read_text(encoding="utf-8").split() if w.isalpha()]
    other = sorted((SHARED / "corpora" / "ai-agents-466").rglob("*.md"))
    paragraphs = [
        block.strip() for path in other for block in path.read_text(encoding="utf-8").split("\n\n")
        if 80 <= len(block.strip()) <= 1500 and not block.lstrip().startswith("---")
    ]  # fmt: skip
    series = {
        "words drawn from the indexed corpus (worst case: every candidate shares the vocabulary)": [
            memory_10kb(rng, words) for _ in range(WRITES)
        ],
        "real paragraphs from ai-agents-466": [real_10kb(rng, paragraphs) for _ in range(WRITES)],
    }
    for label, texts in series.items():
        print(f"10 KB agent notes, {label}:")
        _overhead(texts, corpus)


def _overhead(texts: list[str], corpus: list[Path]) -> None:
    from memrouter.ops import writes as writing
    from memrouter.router import Router

    checks = []
    for text in texts:
        started = time.perf_counter()
        check(text, actor="agent")
        checks.append((time.perf_counter() - started) * 1000)
    p50, p95 = percentiles(checks)
    print(f"  check() alone       p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "memories"
        root.mkdir()
        for path in corpus:  # the corpus as the project's memories, so duplicate lookups have something to search
            target = root / path.relative_to(SHARED / "corpora" / "ai-agents-1026")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
        with Router.open(root=root, index_dir=Path(tmp) / "index", watch=False) as router:
            router.refresh()
            guarded = writing.guarded
            guard_step: list[float] = []

            def timed(*args: object, **kwargs: object) -> object:
                started = time.perf_counter()
                try:
                    return guarded(*args, **kwargs)  # type: ignore[arg-type]
                finally:
                    guard_step.append((time.perf_counter() - started) * 1000)

            saves: dict[str, list[float]] = {"with guard": [], "without guard": []}
            for i, text in enumerate(texts):
                mode = "with guard" if i % 2 == 0 else "without guard"
                writing.guarded = timed if mode == "with guard" else _unguarded  # type: ignore[assignment]
                started = time.perf_counter()
                router.save(text, f"bench/note-{i}", actor="agent")
                saves[mode].append((time.perf_counter() - started) * 1000)
            writing.guarded = guarded  # type: ignore[assignment]
    base50, base95 = percentiles(saves["without guard"])
    with50, with95 = percentiles(saves["with guard"])
    step50, step95 = percentiles(guard_step)
    print(f"  Router.save over {len(corpus)} memories (lexical index), {WRITES // 2} saves each:")
    print(f"    without the guard p50 {base50:7.2f} ms  p95 {base95:7.2f} ms")
    print(f"    with the guard    p50 {with50:7.2f} ms  p95 {with95:7.2f} ms")
    print(f"    the guard step    p50 {step50:7.2f} ms  p95 {step95:7.2f} ms  (check + duplicate lookup)")


def _unguarded(index: object, name: str, text: str, **_: object) -> tuple[str, None]:
    return text, None


if __name__ == "__main__":
    parts = sys.argv[1:] or ["recall", "letters", "clean", "notes", "overhead"]
    for part in parts:
        {
            "recall": secret_recall, "letters": letter_passwords, "clean": false_positives, "notes": pending_quality,
            "overhead": overhead,
        }[part]()  # fmt: skip
