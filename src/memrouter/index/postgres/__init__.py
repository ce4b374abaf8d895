"""The index in PostgreSQL with pgvector: one database, many projects (``[index] url``).

The memory files stay canonical in each repository and the local SQLite index
stays the engine that keeps in step with them (``memrouter.index``); this
package holds a copy of each project's rows in PostgreSQL, keyed by project,
and answers lexical (BM25F in SQL over a postings table) and dense (pgvector
HNSW) searches and listings from it. Every statement is scoped to its project
in one place (``scope.ProjectScope``). The driver (psycopg 3) is imported only
here, and this package only when a database is configured.
"""
