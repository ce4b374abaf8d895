"""The sentence-transformers runtime (``memrouter[torch]``): the reference.

Loads the same bundled model folder by local path (never downloads), and
windows long texts exactly like the other runtimes, so all of them agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import NotInstalled
from memrouter.embed.bert import BertEmbedderBase
from memrouter.embed.loaders import resolve_model_path

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["SentenceTransformerEmbedder", "load_sentence_transformer"]

HINT = "pip install 'memrouter[torch]' (sentence-transformers, torch)"


class SentenceTransformerEmbedder(BertEmbedderBase):
    """all-MiniLM-L6-v2 through sentence-transformers and torch, on CPU by default.

    Tokenizing, windowing and batching are the shared ones; the forward pass
    is the sentence-transformers module stack (transformer + mean pooling).
    """

    runtime = "sentence-transformers"

    def __init__(self, model_path: Path, *, device: str = "cpu", **options: Any) -> None:
        super().__init__(model_path, **options)
        try:
            import torch  # type: ignore[import-untyped,import-not-found,unused-ignore]
            from sentence_transformers import SentenceTransformer  # type: ignore[import-untyped,import-not-found,unused-ignore]
        except ImportError as exc:
            raise NotInstalled("sentence-transformers", HINT) from exc
        self._torch = torch
        self._device = device
        self.model = SentenceTransformer(str(model_path), device=device, local_files_only=True)
        self.model.eval()

    def _forward(self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]) -> NDArray[np.float32]:
        torch = self._torch
        features = {
            "input_ids": torch.from_numpy(input_ids).to(self._device),
            "attention_mask": torch.from_numpy(attention_mask).to(self._device),
            "token_type_ids": torch.zeros_like(torch.from_numpy(input_ids)).to(self._device),
        }
        with torch.inference_mode():
            # Modules 0 (transformer) and 1 (mean pooling); normalising is ours.
            out = self.model[1](self.model[0](features))
        pooled: NDArray[np.float32] = out["sentence_embedding"].float().cpu().numpy()
        return pooled

    def encode_reference(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Plain ``SentenceTransformer.encode`` (truncating at 256 tokens), for comparisons."""
        vectors: NDArray[np.float32] = self.model.encode(
            list(texts), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
        )
        return vectors


def load_sentence_transformer(*, model_path: Path | str | None = None, **options: Any) -> SentenceTransformerEmbedder:
    """Registry factory for ``sentence-transformers``."""
    try:
        import sentence_transformers  # type: ignore[import-untyped,import-not-found,unused-ignore]  # noqa: F401
    except ImportError as exc:
        raise NotInstalled("sentence-transformers", HINT) from exc

    return SentenceTransformerEmbedder(resolve_model_path(model_path), **options)
