"""The canonical-first merge of external hits into the canonical results (docs/architecture.md "A search").

Canonical hits come first, in their own order. An external hit is appended
only when it brings something new: its SHA-256 content hash matches no hit
already kept (on a collision the canonical copy wins, and of two external
copies the earlier one), and it is not a copy sync made of a canonical memory
(``synced``: remote ids of a backend -> canonical name, parts of split
memories included), so a synced, split or reformatted copy never shows twice.
External lists are taken in the order given, each in its own rank order. The
result is cut to ``limit``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from memrouter.core.model import Hit
from memrouter.external.backends.base import ExternalHit

__all__ = ["merge_hits"]


def merge_hits(
    canonical: Sequence[Hit],
    external: Mapping[str, Sequence[ExternalHit]],
    limit: int,
    synced: Mapping[str, Mapping[str, str]] | None = None,
    *,
    content: bool = False,
) -> list[Hit]:
    """Canonical hits, then the new external ones, at most ``limit`` in all.

    ``synced[backend][remote_id]`` names the canonical memory a remote
    memory is a synced copy (or part) of; such hits are dropped.
    """
    merged = list(canonical[:limit])
    seen = {hit.hash for hit in merged}
    for backend, hits in external.items():
        mapping = (synced or {}).get(backend, {})
        for hit in hits:
            if len(merged) >= limit:
                return merged
            if hit.hash in seen or any(rid in mapping for rid in hit.mapped_ids):
                continue
            seen.add(hit.hash)
            merged.append(hit.to_hit(content=content))
    return merged
