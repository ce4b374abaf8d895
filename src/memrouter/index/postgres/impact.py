"""A posting's impact: its saturated, length-normalised term frequency, stored so the best postings come first.

The same BM25F constants as the local index (``memrouter.index.sqlite.lexical``).
"""

from __future__ import annotations

from memrouter.index.sqlite.lexical import K1, B

__all__ = ["IMPACT", "impact"]

# SQL against the mean length ``ref``: ``IMPACT.format(tf=..., length=..., ref=...)``.
IMPACT = f"{{tf}} / ({{tf}} + {K1} * (1 - {B} + {B} * {{length}} / {{ref}}))"


def impact(tf: float, length: float, reference: float) -> float:
    """``IMPACT`` in Python, for the rows a push copies."""
    return tf / (tf + K1 * (1 - B + B * length / reference))
