"""Test helpers shipped with memrouter: a fake Forgetful server and backend conformance tests.

Nothing here is imported by memrouter's own code paths.
"""
