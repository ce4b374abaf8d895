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
from typing import Any

__all__ = ["ENCODING", "Cut", "count_tokens", "counter", "truncate_lines"]

ENCODING = "o200k_base"


@lru_cache(maxsize=1)
def _bindings() -> Any:
    """The package's compiled tokenizer module (which holds the vocabularies), loaded by itself; ``None``
    where it cannot be found.

    Importing ``bpe_openai`` as a package decodes every vocabulary into Python
    for its tiktoken-style API (most of a second, with a deprecation warning);
    counting needs only the compiled ``_bindings`` module, so that is loaded
    from the package's folder directly.
    """
    import importlib.machinery
    import importlib.util

    spec = importlib.util.find_spec("bpe_openai")  # finds the folder; runs nothing
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        for binary in sorted(Path(folder).glob("_bindings*.so")) + sorted(Path(folder).glob("_bindings*.pyd")):
            loader = importlib.machinery.ExtensionFileLoader("bpe_openai._bindings", str(binary))
            found = importlib.util.spec_from_file_location("bpe_openai._bindings", binary, loader=loader)
            if found is None:
                continue
            module = importlib.util.module_from_spec(found)
            loader.exec_module(module)
            return module
    return None


@lru_cache(maxsize=8)
def counter(encoding: str = ENCODING) -> Callable[[str], int]:
    """A token counter for one of ``bpe-openai``'s encodings (``o200k_base``, ``cl100k_base``, ...):
    its compiled tokenizer where that has the encoding, else the package's public API."""
    bindings = _bindings()
    if bindings is not None and encoding in bindings.supported_encodings():
        count: Callable[[str], int] = bindings.tokenizer_for_encoding(encoding).count
        return count
    import warnings

    import bpe_openai  # type: ignore[import-untyped]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # its data loader uses a deprecated resources call
        found = bpe_openai.get_encoding(encoding)
    return lambda text: len(found.encode_ordinary(text))


def count_tokens(text: str) -> int:
    """The number of o200k tokens in ``text`` (special-token text counts as ordinary text)."""
    return counter()(text) if text else 0


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
