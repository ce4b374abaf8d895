"""The canonical layer: memory names, front matter, and the files themselves.

The modules (``files``, ``names``, ``parse``, ``frontmatter``, ``edit``,
``watch``) are imported directly; this package imports none of them, so a
search that parses nothing loads only what it uses.
"""
