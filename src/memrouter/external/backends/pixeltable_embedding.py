"""The Pixeltable UDF that embeds a memory with memrouter's own embedder (imports ``pixeltable``).

A Pixeltable table stores the module path of every UDF its computed columns
call: ``memrouter.external.backends.pixeltable_embedding.memrouter_embedding``
is part of the tables memrouter writes, so this module keeps its name and the
function its signature. When the module cannot be imported (memrouter is not
installed where the table is opened), Pixeltable still opens the table, and its
rows and vectors stay readable and searchable; only new rows cannot be computed.

The vector is the embedder's for ``title`` and the memory's text without its
front matter, computed a batch at a time. Embedders are loaded once per name
and process (a model takes seconds to load); ``use_embedder`` puts a given
embedder under its name first, so the vectors written and the query vectors
come from the same object.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np
import pixeltable as pxt
import pixeltable.type_system as ts
from pixeltable.func import Batch

from memrouter.embed import get_embedder
from memrouter.store import frontmatter

if TYPE_CHECKING:
    from memrouter.embed import Embedder

__all__ = ["embedder_for", "embedding_text", "memrouter_embedding", "use_embedder"]

BATCH_SIZE = 32

_loaded: dict[str, Embedder] = {}
_loading = threading.Lock()


def use_embedder(name: str, embedder: Embedder) -> None:
    """Make ``embedder`` the one ``name`` stands for in this process."""
    with _loading:
        _loaded[name] = embedder


def embedder_for(name: str) -> Embedder:
    """The embedder registered as ``name``, loaded on first use and kept for the process."""
    with _loading:
        found = _loaded.get(name)
        if found is None:
            found = _loaded[name] = get_embedder(name)
        return found


def embedding_text(title: str, content: str) -> str:
    """What is embedded for a memory: its title, then its text without the front matter."""
    body = frontmatter.split(content)[1].strip()
    return f"{title}\n\n{body}" if title and not body.startswith(f"# {title}") else body or title


@pxt.udf(batch_size=BATCH_SIZE)
def memrouter_embedding(
    title: Batch[str], content: Batch[str], *, embedder: str, dimension: int
) -> Batch[pxt.Array[(None,), pxt.Float]]:
    """Unit-length vectors of memories (``embedding_text``) from memrouter's embedder ``embedder``."""
    model = embedder_for(embedder)
    if model.dimension != dimension:
        raise ValueError(f"embedder {embedder!r} gives {model.dimension} dimensions, the column holds {dimension}")
    rows = model.embed_batch([embedding_text(t, c) for t, c in zip(title, content, strict=True)])
    return list(np.asarray(rows, dtype=np.float32))


@memrouter_embedding.conditional_return_type
def _vector_type(dimension: int) -> Any:
    return ts.ArrayType((dimension,), dtype=ts.FloatType(), nullable=False)
