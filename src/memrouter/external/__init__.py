"""External memory services: backends, one-way sync, and the canonical-first merge of their hits."""
