"""The derived index in one SQLite file: its connection rules, schema, refresh, retrievers and SQL."""
