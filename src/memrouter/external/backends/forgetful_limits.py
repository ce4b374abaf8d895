"""What Forgetful 0.6.0 accepts: the sizes its tools validate, shared by the backend and its record models."""

__all__ = ["CONTENT_LIMIT", "CONTEXT_LIMIT", "LIST_LIMIT", "TITLE_LIMIT"]

TITLE_LIMIT = 200
CONTENT_LIMIT = 2000
CONTEXT_LIMIT = 500
LIST_LIMIT = 10
