"""The lexical statistics kept with the PostgreSQL rows: exact after every push, migrated from older databases."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from helpers import SAMPLE, write
from postgres.support import assert_no_fallback

from memrouter import Router
from memrouter.index.postgres.schema import MIGRATIONS
from memrouter.index.sqlite.lexical import K1, B
from memrouter.index.text import query_terms

PROJECT = "stats"
STATISTICS = "0004_lexical_statistics"
assert STATISTICS in dict(MIGRATIONS)

# The scoring as it was before the statistics were kept: every count taken at query time.
RECOUNTED = f"""
WITH stats AS (SELECT count(*)::float8 AS n, coalesce(nullif(avg(length), 0), 1.0) AS avgdl
               FROM memories WHERE project = %(project)s),
df AS (SELECT term, count(*)::float8 AS df FROM postings WHERE project = %(project)s AND term = ANY(%(terms)s) GROUP BY term)
SELECT m.name, sum(ln(1.0 + (s.n - d.df + 0.5) / (d.df + 0.5)) * {K1 + 1.0}
                   * p.tf / (p.tf + {K1} * (1 - {B} + {B} * m.length / s.avgdl))) AS score
FROM df d JOIN postings p ON p.term = d.term AND p.project = %(project)s
JOIN memories m ON m.id = p.memory_id CROSS JOIN stats s
GROUP BY m.name ORDER BY score DESC, m.name LIMIT 10
"""


def open_router(root: Path, index: Path, url: str) -> Router:
    (root.parent.parent / "memrouter.toml").write_text(
        f'[embed]\nmodel = "hash"\n[index]\nurl = "{url}"\nproject = "{PROJECT}"\n', encoding="utf-8"
    )
    return Router.open(root=root, index_dir=index)


def assert_statistics_exact(url: str) -> None:
    with psycopg.connect(url) as conn:
        kept = dict(conn.execute("SELECT term, df FROM terms WHERE project = %s", (PROJECT,)).fetchall())
        counted = dict(
            conn.execute("SELECT term, count(*) FROM postings WHERE project = %s GROUP BY term", (PROJECT,)).fetchall()
        )
        assert kept == counted
        stats = conn.execute("SELECT memories, avgdl FROM projects WHERE project = %s", (PROJECT,)).fetchone()
        actual = conn.execute(
            "SELECT count(*), coalesce(nullif(avg(length), 0), 1.0) FROM memories WHERE project = %s", (PROJECT,)
        ).fetchone()
        assert stats is not None and actual is not None
        assert stats[0] == actual[0] and stats[1] == pytest.approx(actual[1])
        stray = conn.execute(
            "SELECT count(*) FROM postings p JOIN memories m ON m.id = p.memory_id WHERE p.length <> m.length"
        ).fetchone()
        assert stray == (0,)


def scores_agree(url: str, router: Router, query: str) -> None:
    with psycopg.connect(url) as conn:
        expected = conn.execute(RECOUNTED, {"project": PROJECT, "terms": query_terms(query)}).fetchall()
    found = [(hit.name, hit.score) for hit in router.search(query, 10, "lexical")]
    assert [name for name, _ in found] == [name for name, _ in expected]
    assert [score for _, score in found] == pytest.approx([score for _, score in expected])


def test_the_statistics_follow_every_push(memories: Path, tmp_path: Path, database_url: str) -> None:
    with open_router(memories, tmp_path / "index", database_url) as router:
        router.publish()
        assert_statistics_exact(database_url)
        scores_agree(database_url, router, "postgres migration deploy")
        first = next(iter(SAMPLE))
        write(memories, first, "# Rewritten\n\nnothing but quokka words now, quokka again\n")
        write(memories, "notes/added", "# Added\n\nA quokka note about postgres replicas.\n")
        (memories / f"{sorted(SAMPLE)[-1]}.md").unlink()
        router.publish()
        assert_statistics_exact(database_url)
        scores_agree(database_url, router, "quokka postgres")
        assert_no_fallback(router)


def test_a_filter_that_only_a_low_ranked_memory_passes_still_finds_it(
    memories: Path, tmp_path: Path, database_url: str
) -> None:
    for n in range(60):
        write(memories, f"bulk/wombat-{n:02}", f"# Wombat {n}\n\nwombat wombat wombat burrows, note {n}\n")
    write(memories, "bulk/last", "---\ntags: [rare]\n---\n# Last\n\nOne wombat among very many other words here.\n")
    with open_router(memories, tmp_path / "index", database_url) as router:
        router.publish()
        assert [hit.name for hit in router.search("wombat", 10, "lexical")][0].startswith("bulk/wombat-")
        assert [hit.name for hit in router.search("wombat", 10, "lexical", tags="rare")] == ["bulk/last"]
        assert_no_fallback(router)


def test_a_database_from_before_the_statistics_gets_them(memories: Path, tmp_path: Path, database_url: str) -> None:
    # Lay the rows out as the older schema held them: no lengths on postings, no terms, no project statistics
    # (nor what later migrations added).
    with open_router(memories, tmp_path / "index", database_url) as router:
        router.publish()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DROP TABLE terms")
        conn.execute("ALTER TABLE postings DROP COLUMN impact, DROP COLUMN length")
        conn.execute(
            "ALTER TABLE postings DROP CONSTRAINT postings_pkey, "
            "ADD CONSTRAINT postings_pkey PRIMARY KEY (project, term, memory_id)"
        )
        conn.execute(
            "ALTER TABLE projects DROP COLUMN memories, DROP COLUMN avgdl, DROP COLUMN impact_length, "
            "DROP COLUMN overviews_known"
        )
        conn.execute("ALTER TABLE memories DROP COLUMN overview_id")
        conn.execute(
            "DELETE FROM memrouter_migrations WHERE name = ANY(%s)",
            ([STATISTICS, "0005_folder_overviews", "0006_postings_impact"],),
        )
    with open_router(memories, tmp_path / "index", database_url) as router:
        scores_agree(database_url, router, "postgres migration deploy")  # migrated on opening
        assert_statistics_exact(database_url)
        assert_no_fallback(router)
