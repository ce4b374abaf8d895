"""How o200k token counts (what context assembly budgets with) compare with other tokenizers.

Texts: every memory of both corpora (whole files), LoCoMo-10's turns, and
contexts assembled from ai-agents-1026 for the golden questions at 500,
1,000 and 2,000 tokens (what an agent really receives: wrappers included).
For each other tokenizer whose vocabulary is on the machine (cl100k, GPT-4's,
and voyage3, Voyage's, from the same package; MiniLM's WordPiece, the
embedder's) and for the characters/4 rule of thumb: the
ratio of its count to o200k's, over everything and per text (p50, p95, max
over texts of at least 50 o200k tokens), and the share of contexts whose
count by that tokenizer exceeds the budget they were assembled for
(assembly keeps ``[context] margin`` of the budget free for exactly this), and the
margin that would have kept every context inside under that tokenizer.

    .venv/bin/python benchmarks/bench_tokens.py [--questions N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from _common import CORPUS

from memrouter import Router
from memrouter.config.settings import ContextConfig
from memrouter.ops.context import count_tokens
from memrouter.ops.context.tokens import counter
from memrouter.ops.evaluation import load_golden

HERE = Path(__file__).parent
LOCOMO = CORPUS.parents[1] / "bench" / "locomo10.json"
GOLDEN = HERE / "golden" / "ai-agents-1026.json"
OTHER_BPE = ("cl100k_base", "voyage3_base")
BUDGETS = (500, 1000, 2000)


def wordpiece() -> Callable[[str], int]:
    """MiniLM's WordPiece (the embedder's vocabulary), from the model package's tokenizer.json."""
    from memrouter.embed.bert import load_tokenizer
    from memrouter.embed.weights import model_dir

    tokenizer = load_tokenizer(model_dir() / "tokenizer.json")
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


def texts() -> dict[str, list[str]]:
    memories = [p.read_text(encoding="utf-8") for p in sorted(CORPUS.parent.glob("*/**/*.md"))]
    turns = [
        turn["text"]
        for sample in json.loads(LOCOMO.read_text(encoding="utf-8"))
        for key, session in sample["conversation"].items()
        if key.startswith("session_") and isinstance(session, list)
        for turn in session
    ]
    return {"memories (both corpora)": memories, "LoCoMo turns": turns}


def contexts(questions: int) -> list[tuple[int, str]]:
    """(budget, rendered context) for the first ``questions`` golden questions at each budget."""
    found = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        shutil.copytree(CORPUS, root)
        with Router.open(root=root, index_dir=Path(tmp) / "index", watch=False) as router:
            router.refresh()
            for query in load_golden(GOLDEN)[:questions]:
                for budget in BUDGETS:
                    for fmt in ("xml", "markdown", "json"):
                        context = router.assemble_context(query.query, max_tokens=budget, format=fmt)
                        found.append((budget, context.rendered))
    return found


def ratios(count: Callable[[str], int], items: list[str], base: list[int]) -> str:
    counts = [count(text) for text in items]
    per_text = sorted(c / b for c, b in zip(counts, base, strict=True) if b >= 50)
    if not per_text:
        return "no text of 50 tokens"
    p50, p95 = per_text[len(per_text) // 2], per_text[min(len(per_text) - 1, int(len(per_text) * 0.95))]
    return f"total {sum(counts) / sum(base):5.3f}  per text p50 {p50:5.3f}  p95 {p95:5.3f}  max {per_text[-1]:5.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=40)
    args = parser.parse_args()

    counters: dict[str, Callable[[str], int]] = {name: counter(name) for name in OTHER_BPE}
    counters["MiniLM WordPiece"] = wordpiece()
    counters["characters / 4"] = lambda text: len(text) // 4
    for label, items in texts().items():
        base = [count_tokens(text) for text in items]
        print(f"{label}: {len(items)} texts, {sum(base):,} o200k tokens; each tokenizer's count / o200k's:")
        for name, count in counters.items():
            print(f"  {name:18s} {ratios(count, items, base)}")

    assembled = contexts(args.questions)
    print(
        f"\ncontexts: {len(assembled)} (golden questions x {'/'.join(map(str, BUDGETS))} tokens x xml, markdown, json), "
        f"assembled with {ContextConfig().margin:.0%} of the budget kept free:"
    )
    base = [count_tokens(text) for _, text in assembled]
    over = sum(tokens > budget for tokens, (budget, _) in zip(base, assembled, strict=True))
    print(f"  {'o200k_base':18s} over budget {over}/{len(assembled)}")
    for name, count in counters.items():
        counts = [count(text) for _, text in assembled]
        over = sum(tokens > budget for tokens, (budget, _) in zip(counts, assembled, strict=True))
        needed = max(0.0, 1 - 1 / max(c / b for c, b in zip(counts, base, strict=True)))
        print(
            f"  {name:18s} over budget {over:3d}/{len(assembled)}, margin for none {needed:5.1%}  "
            f"{ratios(count, [t for _, t in assembled], base)}"
        )


if __name__ == "__main__":
    main()
