"""Serving over HTTP: the ASGI runner, loopback rules, and the OpenAI-compatible embeddings endpoint."""
