"""The all-MiniLM-L6-v2 forward pass in plain numpy (no torch, no onnxruntime).

BERT encoder, 6 layers, hidden 384, 12 heads of 32, exact (erf) GELU, layer
norm eps 1e-12, absolute positions. Tuned for CPU: query/key/value are one
fused matrix product with the 1/sqrt(32) scale folded into the query weights,
weights are stored pre-transposed and contiguous, and the feed-forward part
runs over row blocks that stay in cache so its element-wise work is cheap.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memrouter.embed.bert import BertEmbedderBase
from memrouter.embed.weights import read_safetensors

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = ["NumpyEmbedder", "erf", "gelu_"]

LAYERS = 6
HEADS = 12
HIDDEN = 384
EPS = 1e-12
_ROW_BLOCK = 256

# Rational approximation of erf on [-4, 4] (float32 accurate; beyond, erf = +-1).
_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def erf(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """Element-wise error function in float32 (max error about 1e-7)."""
    import numpy as np

    x = np.clip(x, -4.0, 4.0).astype(np.float32, copy=False)
    x2 = x * x
    p = np.full_like(x, _ALPHA[0])
    for coefficient in _ALPHA[1:]:
        p *= x2
        p += np.float32(coefficient)
    p *= x
    q = np.full_like(x, _BETA[0])
    for coefficient in _BETA[1:]:
        q *= x2
        q += np.float32(coefficient)
    p /= q
    return p


def gelu_(x: NDArray[np.float32]) -> NDArray[np.float32]:
    """Exact GELU, 0.5 * x * (1 + erf(x / sqrt 2)), computed in place on ``x``."""
    import numpy as np

    e = erf(x * np.float32(0.7071067811865476))
    e += np.float32(1.0)
    e *= np.float32(0.5)
    x *= e
    return x


def _layer_norm_(x: NDArray[np.float32], weight: NDArray[np.float32], bias: NDArray[np.float32]) -> NDArray[np.float32]:
    """Layer norm over the last axis, in place."""
    import numpy as np

    mean = x.mean(axis=-1, keepdims=True)
    x -= mean
    var = np.einsum("ij,ij->i", x, x)[:, None] / np.float32(x.shape[-1])
    x *= 1.0 / np.sqrt(var + np.float32(EPS))
    x *= weight
    x += bias
    return x


class NumpyEmbedder(BertEmbedderBase):
    """all-MiniLM-L6-v2 in numpy: the dependency-free runtime."""

    runtime = "numpy"

    def __init__(self, model_path: Path, **options: Any) -> None:
        super().__init__(model_path, **options)
        import numpy as np

        w = read_safetensors(model_path / "model.safetensors")
        self._word = np.ascontiguousarray(w["embeddings.word_embeddings.weight"])
        self._position = np.ascontiguousarray(w["embeddings.position_embeddings.weight"])
        # Only token type 0 is ever used (single sentences).
        self._position_type = self._position + w["embeddings.token_type_embeddings.weight"][0]
        self._embed_ln = (w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        scale = np.float32(1.0 / np.sqrt(HIDDEN // HEADS))
        self._layers: list[dict[str, NDArray[np.float32]]] = []
        for i in range(LAYERS):
            p = f"encoder.layer.{i}."
            q_w = w[p + "attention.self.query.weight"] * scale
            q_b = w[p + "attention.self.query.bias"] * scale
            qkv_w = np.concatenate([q_w, w[p + "attention.self.key.weight"], w[p + "attention.self.value.weight"]])
            qkv_b = np.concatenate([q_b, w[p + "attention.self.key.bias"], w[p + "attention.self.value.bias"]])
            self._layers.append(
                {
                    "qkv_w": np.ascontiguousarray(qkv_w.T),
                    "qkv_b": qkv_b,
                    "o_w": np.ascontiguousarray(w[p + "attention.output.dense.weight"].T),
                    "o_b": w[p + "attention.output.dense.bias"],
                    "ln1_w": w[p + "attention.output.LayerNorm.weight"],
                    "ln1_b": w[p + "attention.output.LayerNorm.bias"],
                    "i_w": np.ascontiguousarray(w[p + "intermediate.dense.weight"].T),
                    "i_b": w[p + "intermediate.dense.bias"],
                    "f_w": np.ascontiguousarray(w[p + "output.dense.weight"].T),
                    "f_b": w[p + "output.dense.bias"],
                    "ln2_w": w[p + "output.LayerNorm.weight"],
                    "ln2_b": w[p + "output.LayerNorm.bias"],
                }
            )

    def _forward(self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]) -> NDArray[np.float32]:
        return self._pool(*self._encode(input_ids, attention_mask))

    def _forward_hidden(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        import numpy as np

        x, bounds, lengths = self._encode(input_ids, attention_mask)
        hidden = np.zeros((*input_ids.shape, HIDDEN), dtype=np.float32)
        hidden[attention_mask.astype(bool)] = x  # padding is always on the right
        return self._pool(x, bounds, lengths), hidden

    @staticmethod
    def _pool(x: NDArray[np.float32], bounds: NDArray[np.int64], lengths: NDArray[np.int64]) -> NDArray[np.float32]:
        import numpy as np

        summed = np.add.reduceat(x, bounds[:-1], axis=0)
        pooled: NDArray[np.float32] = (summed / lengths[:, None]).astype(np.float32)
        return pooled

    def _encode(
        self, input_ids: NDArray[np.int64], attention_mask: NDArray[np.int64]
    ) -> tuple[NDArray[np.float32], NDArray[np.int64], NDArray[np.int64]]:
        """Run the encoder on the real tokens only, packed: padding costs nothing.

        Dense layers see one (tokens, 384) matrix; attention runs per sequence
        over its own length, so no mask is needed and scores stay in cache.
        """
        import numpy as np

        lengths = attention_mask.sum(axis=1).astype(np.int64)
        keep = attention_mask.astype(bool)
        positions = np.broadcast_to(np.arange(input_ids.shape[1]), input_ids.shape)[keep]
        x = self._word[input_ids[keep]]
        x += self._position_type[positions]
        _layer_norm_(x, *self._embed_ln)
        bounds = np.concatenate([[0], np.cumsum(lengths)])
        head = HIDDEN // HEADS
        for layer in self._layers:
            qkv = x @ layer["qkv_w"]
            qkv += layer["qkv_b"]
            context = np.empty_like(x)
            for begin, end in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=False):
                heads = qkv[begin:end].reshape(end - begin, 3, HEADS, head).transpose(1, 2, 0, 3)
                scores = heads[0] @ heads[1].transpose(0, 2, 1)
                scores -= scores.max(axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= scores.sum(axis=-1, keepdims=True)
                context[begin:end] = (scores @ heads[2]).transpose(1, 0, 2).reshape(end - begin, HIDDEN)
            attended = context @ layer["o_w"]
            attended += layer["o_b"]
            attended += x
            x = _layer_norm_(attended, layer["ln1_w"], layer["ln1_b"])
            out = np.empty_like(x)
            for begin in range(0, x.shape[0], _ROW_BLOCK):
                rows = x[begin : begin + _ROW_BLOCK]
                hidden = rows @ layer["i_w"]
                hidden += layer["i_b"]
                gelu_(hidden)
                block = cast("NDArray[np.float32]", hidden @ layer["f_w"])
                block += layer["f_b"]
                block += rows
                out[begin : begin + _ROW_BLOCK] = _layer_norm_(block, layer["ln2_w"], layer["ln2_b"])
            x = out
        return x, bounds, lengths
