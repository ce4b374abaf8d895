"""An embedder that counts what it embeds, across processes: the hashing embedder, logging each text.

Each embedded text's SHA-256 is appended to a log file as one line (one
``write`` per batch on a file opened for appending, so lines of processes
embedding at once never mix). ``counted_router`` opens a Router on a project
whose dense index embeds with it; a test reads ``embedded(log)`` afterwards to
prove a text was embedded once however many worktrees or processes indexed it.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from memrouter.config.settings import Config
from memrouter.core.records import replace
from memrouter.embed.hashing import HashEmbedder
from memrouter.index.sqlite.shared_vectors import text_hash
from memrouter.router import Router

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["CountingEmbedder", "counted_router", "embedded"]


class CountingEmbedder(HashEmbedder):
    """``HashEmbedder`` appending the hash of every text it embeds to ``log``; ``seconds_per_text`` makes each
    batch take as long as a model would (so processes embedding at once overlap, as they do with a model)."""

    def __init__(self, log: Path, *, dimension: int = 64, seconds_per_text: float = 0.0) -> None:
        super().__init__(dimension=dimension)
        self.log = log
        self.seconds_per_text = seconds_per_text

    def embed_batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        lines = "".join(f"{text_hash(text)}\n" for text in texts).encode()
        descriptor = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, lines)
        finally:
            os.close(descriptor)
        if self.seconds_per_text:
            time.sleep(self.seconds_per_text * len(texts))
        return super().embed_batch(texts)


def counted_router(project: Path, log: Path, *, seconds_per_text: float = 0.0) -> Router:
    """A Router on ``project`` (a checkout with ``.serena/memories``) embedding with a ``CountingEmbedder``."""
    embedder = CountingEmbedder(log, seconds_per_text=seconds_per_text)
    router = Router(replace(Config.load(cwd=project), embedder="hash"))
    dense = router.workspace.index.dense
    dense._factory = lambda: embedder
    dense._model_id = embedder.model_id
    return router


def embedded(log: Path) -> Counter[str]:
    """How often each text (by hash) was embedded, from ``log``."""
    return Counter(log.read_text().split()) if log.exists() else Counter()
