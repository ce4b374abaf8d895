"""The canonical layer: memory names, front matter, and the files themselves."""

from memrouter.store.files import FileStat, MemoryStore
from memrouter.store.names import validate_name
from memrouter.store.parse import content_hash, parse_memory

__all__ = ["FileStat", "MemoryStore", "validate_name", "content_hash", "parse_memory"]
