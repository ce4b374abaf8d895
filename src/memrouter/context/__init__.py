"""Context assembly: the right memories in a hard token budget, with provenance (see ``assemble``)."""

from memrouter.context.assemble import Context, ContextItem, assemble_context
from memrouter.context.tokens import count_tokens

__all__ = ["Context", "ContextItem", "assemble_context", "count_tokens"]
