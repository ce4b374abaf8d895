"""The knowledge graph: edges read from memory text, written with the index, read as a view."""
