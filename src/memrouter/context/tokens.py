"""Token counts and line-preserving truncation for context assembly.

Counts are real: the o200k BPE (the tokenizer of current OpenAI models, and
close to other frontier models' own) from the ``bpe-openai`` package, which
ships its vocabulary, so nothing is downloaded. It loads on the first count
(a few hundred milliseconds, once per process). Special-token text in
memories ("<|endoftext|>") is counted as ordinary text.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["ENCODING", "Cut", "count_tokens", "truncate_lines"]

ENCODING = "o200k_base"


@lru_cache(maxsize=1)
def _counter() -> Callable[[str], int]:
    """The o200k counter: the package's Rust tokenizer (which holds the vocabulary), loaded by itself.

    Importing ``bpe_openai`` as a package decodes every vocabulary into Python
    for its tiktoken-style API (most of a second, with a deprecation warning);
    counting needs only the compiled ``_bindings`` module, so that is loaded
    from the package's folder directly. The public API is the fallback.
    """
    import importlib.machinery
    import importlib.util

    spec = importlib.util.find_spec("bpe_openai")  # finds the folder; runs nothing
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            for binary in sorted(Path(folder).glob("_bindings*.so")) + sorted(Path(folder).glob("_bindings*.pyd")):
                loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(binary))
                found = importlib.util.spec_from_file_location("bpe_openai._bindings", binary, loader=loader)
                if found is None:
                    continue
                module = importlib.util.module_from_spec(found)
                loader.exec_module(module)
                counter: Callable[[str], int] = module.tokenizer_for_encoding(ENCODING).count
                return counter
    import warnings

    import bpe_openai  # type: ignore[import-untyped]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # its data loader uses a deprecated resources call
        encoding = bpe_openai.get_encoding(ENCODING)
    return lambda text: len(encoding.encode_ordinary(text))


def count_tokens(text: str) -> int:
    """The number of o200k tokens in ``text`` (special-token text counts as ordinary text)."""
    return _counter()(text) if text else 0


@dataclass(frozen=True, slots=True)
class Cut:
    """Text cut to a budget on line boundaries: what was kept, and how much was left out."""

    text: str
    tokens: int
    cut_lines: int
    cut_tokens: int


def truncate_lines(text: str, budget: int) -> Cut:
    """The longest run of ``text``'s first whole lines within ``budget`` tokens (nothing when the first is too long).

    A single line longer than the whole budget is cut at a word boundary
    instead, so a one-line memory still shows its start.
    """
    total = count_tokens(text)
    if total <= budget:
        return Cut(text, total, 0, 0)
    lines = text.splitlines(keepends=True)
    kept: list[str] = []
    used = 0
    for line in lines:
        cost = count_tokens(line)
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    if not kept and lines and budget > 0:
        words = lines[0].split(" ")
        while words and count_tokens(" ".join(words)) > budget:
            words = words[: max(1, len(words) * 3 // 4)] if len(words) > 1 else []
        if words:
            kept, used = [" ".join(words)], count_tokens(" ".join(words))
    joined = "".join(kept)
    used = count_tokens(joined)  # count the text as it is: pieces counted apart may merge
    while used > budget and kept:
        kept.pop()
        joined = "".join(kept)
        used = count_tokens(joined)
    return Cut(joined, used, len(lines) - len(kept), max(0, total - used))
