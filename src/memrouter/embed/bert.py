"""What every all-MiniLM-L6-v2 runtime shares: tokenizing, windowing, batching.

A runtime (numpy, onnxruntime, ...) only supplies ``_forward``: token ids and
an attention mask in, mean-pooled hidden states out. This base class does the
rest the same way for all of them, so they give the same vectors:

* **Tokenizing** uses ``tokenizer.json`` through the ``tokenizers`` package,
  with its own truncation and padding switched off.
* **Windowing.** The model reads at most ``max_tokens`` (256) tokens, the two
  special tokens ``[CLS]`` and ``[SEP]`` included. A longer text is never
  truncated: its word pieces are cut into consecutive windows of 254 pieces,
  each window is embedded on its own (``[CLS] window [SEP]``), and the text's
  vector is the mean of the window vectors weighted by their number of word
  pieces, normalised again. A text that fits is embedded exactly as
  sentence-transformers does.
* **Batching by length.** Windows are sorted by length and batched under a
  token budget, so padding (wasted compute) stays small.
* **Pooling.** Mean over the attention mask, then L2 normalisation.
* **Token vectors.** ``embed_with_tokens`` also returns each text's word
  pieces as unit vectors of the last layer (no ``[CLS]``/``[SEP]``; a long
  text's windows one after another), from the same forward pass, for late
  interaction (``memrouter.index.sqlite.rerank``). A runtime that can give them
  supplies ``_forward_hidden``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from tokenizers import Tokenizer

__all__ = ["BertEmbedderBase", "MODEL_ID", "DIMENSION", "MAX_TOKENS", "load_tokenizer"]

MODEL_ID = "all-MiniLM-L6-v2"
DIMENSION = 384
MAX_TOKENS = 256
CLS_ID = 101
SEP_ID = 102


def load_tokenizer(path: Path) -> Tokenizer:
    """Load ``tokenizer.json`` with truncation and padding off (we window instead)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


class BertEmbedderBase:
    """Tokenize, window, batch by length and pool; subclasses run the network.

    ``batch_tokens`` bounds the padded tokens of one forward call (memory and
    cache friendliness); ``max_batch`` bounds its number of sequences.
    """

    model_id: str = MODEL_ID
    dimension: int = DIMENSION
    max_tokens: int = MAX_TOKENS
    runtime: str = "base"

    def __init__(self, model_path: Path, *, batch_tokens: int = 1024, max_batch: int = 64) -> None:
        self.model_path = model_path
        self._tokenizer = load_tokenizer(model_path / "tokenizer.json")
        self._batch_tokens = batch_tokens
        self._max_batch = max_batch

    # -- what subclasses provide -------------------------------------------------

    def _forward(self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]) -> NDArray[np.float32]:
        """Return mean-pooled last hidden states, shape (batch, dimension), not normalised."""
        raise NotImplementedError

    def _forward_hidden(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """Return ``_forward``'s pooled states and the last hidden states, shape (batch, sequence, dimension)."""
        raise NotImplementedError(f"{type(self).__name__} gives no token vectors")

    # -- public API ----------------------------------------------------------------

    def count_tokens(self, text: str) -> int:
        """Tokens the text takes in the model input, ``[CLS]`` and ``[SEP]`` included."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) + 2

    def embed(self, text: str) -> NDArray[np.float32]:
        """Embed one text: a float32 vector of length ``dimension``, unit norm."""
        vectors: NDArray[np.float32] = self.embed_batch([text])[0]
        return vectors

    def embed_batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed texts: float32 array (len(texts), dimension), each row unit norm.

        Texts longer than the model window are embedded window by window and
        combined (see the module docstring); nothing is truncated.
        """
        return self._embed(texts, None)

    def embed_with_tokens(
        self, texts: Sequence[str]
    ) -> tuple[NDArray[np.float32], list[tuple[NDArray[np.int64], NDArray[np.float32]]]]:
        """``embed_batch``'s vectors and, per text, its word-piece ids and their unit vectors (tokens, dimension)."""
        tokens: list[tuple[NDArray[np.int64], NDArray[np.float32]]] = []
        return self._embed(texts, tokens), tokens

    def vocabulary(self) -> dict[str, int]:
        """The tokenizer's word pieces and their ids."""
        vocabulary: dict[str, int] = self._tokenizer.get_vocab()
        return vocabulary

    def _embed(
        self, texts: Sequence[str], tokens: list[tuple[NDArray[np.int64], NDArray[np.float32]]] | None
    ) -> NDArray[np.float32]:
        import numpy as np

        if isinstance(texts, str):
            raise TypeError("embed_batch takes a sequence of texts, not one string")
        n = len(texts)
        if n == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        width = self.max_tokens - 2
        windows: list[list[int]] = []
        owner: list[int] = []
        for index, encoding in enumerate(encodings):
            ids = encoding.ids
            if len(ids) <= width:
                windows.append(ids)
                owner.append(index)
            else:
                for begin in range(0, len(ids), width):
                    windows.append(ids[begin : begin + width])
                    owner.append(index)
        hidden: list[NDArray[np.float32]] | None = [] if tokens is not None else None
        pooled = self._embed_windows(windows, hidden)
        if tokens is not None and hidden is not None:
            parts: list[list[NDArray[np.float32]]] = [[] for _ in range(n)]
            for index, rows in zip(owner, hidden, strict=True):
                parts[index].append(rows)
            tokens.extend(
                (np.asarray(encoding.ids, dtype=np.int64), np.concatenate(part) if len(part) > 1 else part[0])
                for encoding, part in zip(encodings, parts, strict=True)  # every text has at least one window
            )
        if len(windows) == n:
            return pooled
        weights = np.array([max(len(w), 1) for w in windows], dtype=np.float32)
        combined = np.zeros((n, self.dimension), dtype=np.float32)
        np.add.at(combined, np.asarray(owner), pooled * weights[:, None])
        norms = np.linalg.norm(combined, axis=1, keepdims=True)
        result: NDArray[np.float32] = combined / np.maximum(norms, 1e-12)
        return result

    def _embed_windows(
        self, windows: list[list[int]], hidden: list[NDArray[np.float32]] | None = None
    ) -> NDArray[np.float32]:
        """Embed windows of word-piece ids, each unit norm, in input order; with ``hidden``, append each
        window's word-piece vectors (unit norm, no ``[CLS]``/``[SEP]``) to it, in input order."""
        import numpy as np

        out = np.empty((len(windows), self.dimension), dtype=np.float32)
        pieces: list[NDArray[np.float32] | None] = [None] * len(windows)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        start = 0
        while start < len(order):
            longest = len(windows[order[start]]) + 2
            stop = start + 1
            # Sorted ascending, so the last window taken sets the padded length.
            while stop < len(order) and stop - start < self._max_batch:
                longest_next = len(windows[order[stop]]) + 2
                if longest_next * (stop - start + 1) > self._batch_tokens:
                    break
                longest = longest_next
                stop += 1
            chunk = order[start:stop]
            ids = np.zeros((len(chunk), longest), dtype=np.int64)
            mask = np.zeros((len(chunk), longest), dtype=np.int64)
            for row, window_index in enumerate(chunk):
                window = windows[window_index]
                ids[row, 0] = CLS_ID
                ids[row, 1 : len(window) + 1] = window
                ids[row, len(window) + 1] = SEP_ID
                mask[row, : len(window) + 2] = 1
            if hidden is None:
                pooled = self._forward(ids, mask)
            else:
                pooled, states = self._forward_hidden(ids, mask)
                for row, window_index in enumerate(chunk):
                    rows = states[row, 1 : len(windows[window_index]) + 1]
                    norms = np.linalg.norm(rows, axis=1, keepdims=True)
                    pieces[window_index] = (rows / np.maximum(norms, 1e-12)).astype(np.float32)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[np.asarray(chunk)] = pooled / np.maximum(norms, 1e-12)
            start = stop
        if hidden is not None:
            hidden.extend(piece for piece in pieces if piece is not None)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_id={self.model_id!r}, runtime={self.runtime!r})"
