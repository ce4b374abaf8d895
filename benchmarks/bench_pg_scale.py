"""PostgreSQL + pgvector at scale: a million chunks of one project, dense and lexical search.

Starts a real PostgreSQL 18 with pgvector (``memrouter.testing.postgres_server``)
and fills one project's rows the way ``memrouter index --database`` lays them
out, without a local index in between (a million chunks cannot be embedded
here in reasonable time):

- memories: ``--per-memory`` paragraphs each of real text
  (the two shared corpora and LoCoMo's turns), with memrouter's own BM25F
  postings (``index.lexical.document_terms``);
- chunks: one per paragraph, 384-d vectors made from real MiniLM vectors of
  ``--bases`` paragraphs: each chunk is a random convex mix of three of them
  plus a little noise, normalised, so the vectors spread as real ones do
  around real directions. Queries
  are MiniLM vectors of real questions (LoCoMo's and the speed-benchmark list).

It then reports the HNSW build (the index ``pgindex.schema.hnsw_index``
makes), recall@10 of pgvector's HNSW against exact search (numpy, over the
same vectors) at several ``hnsw.ef_search``, and warm p50/p95 of
``PgIndex.dense`` and ``PgIndex.lexical`` (the product's queries, ef_search as
configured) beside an SQLite FTS5 ``bm25()`` table over the same texts in the
same run (the baseline).

    .venv/bin/python benchmarks/bench_pg_scale.py [--chunks 1000000] [--per-memory 4] [--queries 200]
        [--ef 100,200,500] [--m 24] [--ef-construction 200] [--lexical-only] [--shared-buffers 4GB]

Lexical search is timed as shipped (a common word's best postings first,
then the exact MaxScore pass, ``memrouter.index.postgres.bm25``) and reading every
posting in one pass, with how often the two agree.

Targets: recall@10 >= 0.98 at the chosen ef_search, dense p95 <= 20 ms,
lexical p95 <= 50 ms. Needs ``memrouter[postgres-test]`` and the MiniLM model.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import struct
import time
from collections.abc import Iterator

import numpy as np
from _common import QUERIES, percentiles
from bench_scale import WORD, paragraphs, questions

from memrouter.core.model import Filters
from memrouter.index.postgres.bm25 import POSTINGS_CAP
from memrouter.index.postgres.schema import HNSW_EF_CONSTRUCTION, HNSW_M
from memrouter.index.sqlite.lexical import document_terms
from memrouter.store.parse import parse_memory
from memrouter.testing.postgres_server import PostgresServer, start_again, stop

PROJECT = "scale"
MODEL = "all-MiniLM-L6-v2"
DIMENSION = 384
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)


def synthetic_vectors(bases: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` unit vectors, each a random convex mix of three base vectors plus a little noise."""
    out = np.empty((count, bases.shape[1]), dtype=np.float32)
    for start in range(0, count, 100_000):
        size = min(100_000, count - start)
        picks = rng.integers(0, len(bases), size=(size, 3))
        weights = rng.dirichlet((1.0, 1.0, 1.0), size=size).astype(np.float32)
        mixed = np.einsum("nk,nkd->nd", weights, bases[picks])
        mixed += rng.normal(scale=0.01, size=mixed.shape).astype(np.float32)
        out[start : start + size] = mixed / np.linalg.norm(mixed, axis=1, keepdims=True)
    return out


def _text(value: str) -> bytes:
    data = value.encode()
    return struct.pack("!i", len(data)) + data


def chunk_rows(memory_ids: list[int], per_memory: int, vectors: np.ndarray) -> Iterator[bytes]:
    """Binary COPY rows of the chunks table: (project, memory_id, model, ordinal, start, heading, dimension, embedding)."""
    project, model, heading = _text(PROJECT), _text(MODEL), _text("")
    vector_header = struct.pack("!ihh", 4 + 4 * DIMENSION, DIMENSION, 0)
    big = vectors.astype(">f4")
    row = 0
    for memory_id in memory_ids:
        for ordinal in range(per_memory):
            yield b"".join((
                struct.pack("!h", 8), project, struct.pack("!iq", 8, memory_id), model,
                struct.pack("!ii", 4, ordinal), struct.pack("!ii", 4, ordinal * 400), heading,
                struct.pack("!ii", 4, DIMENSION), vector_header, big[row].tobytes(),
            ))  # fmt: skip
            row += 1


def load(
    url: str, memories: list[tuple[str, str, str]], per_memory: int, vectors: np.ndarray | None, graph: tuple[int, int]
) -> dict[str, float]:
    """Copy the project's memories, postings and chunks (without ``vectors``, none); build the HNSW index
    with ``graph`` = (m, ef_construction). Seconds per step."""
    import psycopg

    from memrouter.index.postgres.connect import Database
    from memrouter.index.postgres.schema import hnsw_index, migrate
    from memrouter.index.postgres.scope import ProjectScope, Writer

    took: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        migrate(conn)
        conn.execute("INSERT INTO projects (project) VALUES (%s)", (PROJECT,))
        started = time.perf_counter()
        terms: list[tuple[dict[str, float], float]] = []
        with conn.cursor().copy(
            "COPY memories (project, name, path, hash, size, title, channel, scope, status, body, length, vectors) "
            "FROM STDIN"
        ) as copy:
            for name, title, body in memories:
                memory = parse_memory(name, name + ".md", f"# {title}\n\n{body}\n")
                weighted, length = document_terms(memory)
                terms.append((weighted, length))
                copy.write_row((PROJECT, name, name + ".md", memory.hash, len(body), memory.title, "long_term",
                                "project", "active", memory.body, length, MODEL))  # fmt: skip
        ids = dict(conn.execute("SELECT name, id FROM memories WHERE project = %s", (PROJECT,)).fetchall())
        memory_ids = [ids[name] for name, _, _ in memories]
        scope = ProjectScope(Database(url, max_size=1), PROJECT)
        writer = Writer(conn, scope)
        every = writer.postings(
            (
                (term, memory_id, tf, length)
                for memory_id, (weighted, length) in zip(memory_ids, terms, strict=True)
                for term, tf in weighted.items()
            ),
            [length for _, length in terms],
        )
        writer.statistics(every)
        took["memories, postings and statistics"] = time.perf_counter() - started
        if vectors is None:
            started = time.perf_counter()
            scope.analyze()
            took["vacuum and analyze"] = time.perf_counter() - started
            return took
        started = time.perf_counter()
        with conn.cursor().copy(
            "COPY chunks (project, memory_id, model, ordinal, start, heading, dimension, embedding) "
            "FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.write(_COPY_HEADER)
            batch: list[bytes] = []
            for row in chunk_rows(memory_ids, per_memory, vectors):
                batch.append(row)
                if len(batch) == 10_000:
                    copy.write(b"".join(batch))
                    batch = []
            copy.write(b"".join(batch) + struct.pack("!h", -1))
        took["chunks"] = time.perf_counter() - started
        started = time.perf_counter()
        scope.analyze()  # what a bulk push does
        took["vacuum and analyze"] = time.perf_counter() - started
        started = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '8GB'")  # the whole graph in memory while it is built
        with conn.transaction():
            hnsw_index(conn, DIMENSION, m=graph[0], ef_construction=graph[1])
        took["hnsw index"] = time.perf_counter() - started
    return took


def hnsw_recall(
    url: str, queries: np.ndarray, exact: list[set[int]], ef: int, chunk_keys: dict[tuple[int, int], int]
) -> float:
    import psycopg

    from memrouter.index.postgres.store import vector_text

    found = 0
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"SET hnsw.ef_search = {int(ef)}")
        for query, truth in zip(queries, exact, strict=True):
            rows = conn.execute(
                f"SELECT memory_id, ordinal FROM chunks WHERE project = %s AND model = %s AND dimension = {DIMENSION} "
                f"ORDER BY embedding::vector({DIMENSION}) <=> %s::vector({DIMENSION}) LIMIT 10",
                (PROJECT, MODEL, vector_text(query)),
            ).fetchall()
            keys = {chunk_keys[(memory_id, ordinal)] for memory_id, ordinal in rows}
            found += len(keys & truth)
    return found / (10 * len(exact))


def timed(call: object, items: list[object], rounds: int) -> tuple[float, float]:
    for item in items:  # warm
        call(item)  # type: ignore[operator]
    samples = []
    for _ in range(rounds):
        for item in items:
            started = time.perf_counter()
            call(item)  # type: ignore[operator]
            samples.append((time.perf_counter() - started) * 1000)
    return percentiles(samples)


def with_shared_buffers(server: PostgresServer, size: str | None) -> PostgresServer:
    """``server`` restarted with ``shared_buffers = size`` (the HNSW graph held in PostgreSQL's own cache), or as is."""
    if not size:
        return server
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{size}'".encode())
    stop(server)
    restarted = start_again(server)
    print(f"PostgreSQL restarted with shared_buffers = {size}")
    return restarted


def measure(
    url: str, args: argparse.Namespace, texts: list[list[str]], query_vectors: np.ndarray | None, exact: list[set[int]]
) -> tuple[float, float]:
    """Print recall and dense latency per ef_search and lexical latency (pruned and exact); lexical p50/p95."""
    import psycopg

    from memrouter.index.postgres.connect import EF_SEARCH, Database
    from memrouter.index.postgres.store import PgIndex

    with psycopg.connect(url, autocommit=True) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM memories WHERE project = %s ORDER BY id", (PROJECT,))]
        size = conn.execute("SELECT pg_size_pretty(pg_database_size(current_database()))").fetchone()
    print(f"database size {size[0] if size else '?'}")
    filters = Filters()
    if query_vectors is not None:
        # ids were given in the order the memories were copied: chunk n of memory k is vector k * per_memory + n
        chunk_keys = {
            (memory_id, o): k * args.per_memory + o for k, memory_id in enumerate(ids) for o in range(args.per_memory)
        }
        print(f"HNSW m {args.m}, ef_construction {args.ef_construction}")
        for ef in (int(v) for v in args.ef.split(",")):
            recall = hnsw_recall(url, query_vectors, exact, ef, chunk_keys)
            at_ef = Database(url, ef_search=ef)
            index = PgIndex(at_ef, PROJECT)
            dense50, dense95 = timed(
                lambda v, i=index: i.dense(v, MODEL, filters, 10), list(query_vectors), args.rounds
            )
            at_ef.close()
            shipped = " (the shipped ef_search)" if ef == EF_SEARCH else ""
            print(f"hnsw.ef_search {ef}{shipped}: recall@10 against exact {recall:.3f}, "
                  f"PgIndex.dense p50 {dense50:.2f} ms p95 {dense95:.2f} ms")  # fmt: skip

    database = Database(url)
    index = PgIndex(database, PROJECT)
    lex50, lex95 = timed(lambda t: index.lexical(t, filters, 10), texts, args.rounds)  # type: ignore[arg-type]
    print(
        f"PgIndex.lexical (best {POSTINGS_CAP} postings per word, then MaxScore) p50 {lex50:.2f} ms p95 {lex95:.2f} ms"
    )
    all50, all95 = timed(lambda t: index.lexical(t, filters, 10, cap=None), texts, args.rounds)  # type: ignore[arg-type]
    print(f"PgIndex.lexical reading every posting in one pass p50 {all50:.2f} ms p95 {all95:.2f} ms")
    agree = same = kept = 0.0
    for terms in texts:
        pruned, exact_hits = index.lexical(terms, filters, 10), index.lexical(terms, filters, 10, cap=None)
        agree += len({n for n, _ in pruned} & {n for n, _ in exact_hits}) / max(1, len(exact_hits))
        same += [n for n, _ in pruned] == [n for n, _ in exact_hits]
        # how much of the exact top-10's score the pruned top-10 holds (1.0: as good, even when ties differ)
        kept += sum(s for _, s in pruned) / max(1e-9, sum(s for _, s in exact_hits)) if exact_hits else 1.0
    print(f"pruned against one pass: top-10 overlap {agree / len(texts):.3f}, "
          f"same top-10 in the same order for {same:.0f} of {len(texts)} queries, "
          f"top-10 score held {kept / len(texts):.4f}")  # fmt: skip
    database.close()
    return lex50, lex95


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--per-memory", type=int, default=4)
    parser.add_argument("--bases", type=int, default=3000, help="paragraphs embedded with MiniLM for the vectors")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", default="100,200,500", help="hnsw.ef_search values for the recall and latency table")
    parser.add_argument("--m", type=int, default=HNSW_M, help="HNSW links per node")
    parser.add_argument("--ef-construction", type=int, default=HNSW_EF_CONSTRUCTION, help="HNSW build candidates")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lexical-only", action="store_true", help="no vectors: memories and postings only")
    parser.add_argument("--shared-buffers", help="restart PostgreSQL with this shared_buffers (e.g. 4GB) before timing")
    args = parser.parse_args()
    from memrouter.embed import embed_many, get_embedder
    from memrouter.index.text import query_terms
    from memrouter.testing.postgres_server import running_postgres

    rng = np.random.default_rng(7)
    chooser = random.Random(7)
    pool = paragraphs()
    count = args.chunks // args.per_memory
    memories = []
    for number in range(count):
        body = "\n\n".join(chooser.choice(pool) for _ in range(args.per_memory))
        title = " ".join(WORD.findall(body)[:6]) or f"note {number}"
        memories.append((f"f{number % 100:02}/m{number}", title, body))
    chunks = count * args.per_memory
    print(f"{count:,} memories, {chunks:,} chunks ({args.per_memory} per memory) from {len(pool):,} paragraphs")

    asked = questions()[: args.queries]
    texts = [query_terms(q) for q in [*asked, *QUERIES]]
    vectors = query_vectors = None
    exact: list[set[int]] = []
    if not args.lexical_only:
        embedder = get_embedder("minilm")
        started = time.perf_counter()
        bases = embed_many(embedder, chooser.sample(pool, args.bases))
        query_vectors = embed_many(embedder, asked)
        print(
            f"MiniLM: {args.bases} base paragraphs and {len(asked)} questions in {time.perf_counter() - started:.1f} s"
        )
        vectors = synthetic_vectors(bases, chunks, rng)
        started = time.perf_counter()
        scores = query_vectors @ vectors.T
        exact = [set(np.argpartition(-row, 10)[:10].tolist()) for row in scores]
        del scores
        print(f"exact top-10 of {len(asked)} queries (numpy): {time.perf_counter() - started:.1f} s")

    with running_postgres() as started_server:
        took = load(started_server.url, memories, args.per_memory, vectors, (args.m, args.ef_construction))
        for step, seconds in took.items():
            print(f"load: {step} {seconds:.1f} s")
        server = with_shared_buffers(started_server, args.shared_buffers)
        try:
            lexical = measure(server.url, args, texts, query_vectors, exact)
        finally:
            if server is not started_server:
                stop(server)
    lex50, lex95 = lexical

    fts = sqlite3.connect(":memory:")
    fts.execute("CREATE VIRTUAL TABLE docs USING fts5(name, title, body)")
    fts.executemany("INSERT INTO docs VALUES (?, ?, ?)", memories)

    def fts_search(terms: list[str]) -> list[str]:
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        return [
            r[0] for r in fts.execute("SELECT name FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT 10", (match,))
        ]

    base50, base95 = timed(fts_search, texts, args.rounds)  # type: ignore[arg-type]
    print(f"baseline SQLite FTS5 bm25() over the same texts: p50 {base50:.2f} ms p95 {base95:.2f} ms "
          f"(PostgreSQL lexical {lex50 / base50:.1f}x p50, {lex95 / base95:.1f}x p95)")  # fmt: skip


if __name__ == "__main__":
    main()
