"""Context assembly: the right memories in a hard token budget, with provenance (see ``assemble``)."""

from memrouter.ops.context.assemble import assemble_context
from memrouter.ops.context.records import Context, ContextItem
from memrouter.ops.context.tokens import count_tokens

__all__ = ["Context", "ContextItem", "assemble_context", "count_tokens"]
