"""The janitor: consolidation without a language model, proposed first and never destructive.

``Router.janitor()`` (``memrouter janitor``) finds, over the memories in effect:

- exact duplicates, by the hash of their whitespace-folded body;
- near-duplicates, by MinHash LSH over word shingles (``minhash``): sub-quadratic, never all pairs;
- contradiction candidates: memories on one subject whose statements differ (``contradictions``);
- expiry: memories past ``valid_until`` or ``expires``, sprint memories whose sprint closed, expired
  short-term scratchpad notes;
- usage: memories never returned by get or search, and those idle past ``[janitor] stale_days``
  (the counts live in the index: ``memrouter.index.sqlite.access``).

Each finding carries its evidence; each proposal marks an older memory obsolete, superseded by the
newer one it points at, or expired. ``apply=True`` makes them through the normal write path
(``run``). Modules: ``records`` (the report), ``analyse`` (findings to proposals), ``run``.
"""
