"""Anchors: what code a memory is about, and whether that code changed since (``memrouter verify``)."""
