"""memrouter's memories in the real Pixeltable (0.7.21, in-process on its own PostgreSQL).

The embedder is memrouter's ``hash`` (deterministic, no model) unless a test
says otherwise; it is memrouter's own either way, called by Pixeltable through
the UDF of the ``embedding`` computed column.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import PixeltableHome, make_project, pixeltable_toml, subprocess_env

from memrouter import Router
from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.pixeltable import PixeltableBackend, PixeltableConfig
from memrouter.external.backends.pixeltable_embedding import embedder_for, embedding_text
from memrouter.external.sync import state
from memrouter.testing.backend_conformance import BackendConformance, unique_word

CORPUS = "ai-agents-466"


def new_table() -> str:
    return f"t{uuid.uuid4().hex[:8]}.memories"


def pixeltable_backend(router: Router) -> PixeltableBackend:
    backend = router.backend("pixeltable")
    assert isinstance(backend, PixeltableBackend)
    return backend


@pytest.fixture(scope="module")
def conformance_backend(session_home: PixeltableHome) -> Iterator[PixeltableBackend]:
    built = PixeltableBackend(PixeltableConfig(home=session_home.path, table=new_table(), embedder="hash"))
    yield built
    built.close()


class TestPixeltableConformance(BackendConformance):
    @pytest.fixture
    def backend(self, conformance_backend: PixeltableBackend) -> PixeltableBackend:
        return conformance_backend

    def test_it_lists_what_it_holds(self, backend: PixeltableBackend) -> None:
        kept = backend.upsert(MemoryDraft(title="kept", content=f"{unique_word()} kept"))
        gone = backend.upsert(MemoryDraft(title="gone", content=f"{unique_word()} gone"))
        backend.mark_obsolete(gone, "deleted")
        held = backend.inventory()
        assert held[kept] == backend.get(kept).hash and gone not in held


def test_corpus_sync_then_a_resync_writes_nothing(session_home: PixeltableHome, tmp_path: Path) -> None:
    table = new_table()
    root = make_project(tmp_path, pixeltable_toml(session_home.path, table), corpus=CORPUS)
    with Router.open(root=root, watch=False) as router:
        report = router.sync()[0]
        assert report.ok, (report.error, list(report.failed.items())[:3])
        names = {memory.name for memory in router.list()}
        assert set(report.created) == names and len(names) >= 400
        backend = pixeltable_backend(router)
        counts = backend.call(lambda store: store.counts())
        assert counts == {"rows": len(names), "live": len(names)}
        copies = backend.call(lambda store: store.ids_named(names))
        assert set(copies) == names and all(len(ids) == 1 for ids in copies.values())
        mapping = state.load_records(router.workspace.conn, "pixeltable")
        assert {name: record.remote_ids for name, record in mapping.items()} == {
            name: tuple(ids) for name, ids in copies.items()
        }
        version = backend.call(lambda store: store.table.get_versions(n=1)[0]["version"])

        again = router.sync()[0]
        assert again.ok and again.skipped == len(names) and again.remote_calls == 0
        assert not again.created and not again.updated and not again.restored
        assert backend.call(lambda store: store.table.get_versions(n=1)[0]["version"]) == version  # no write
        checked = router.validate(check_remote=True)[0]
        assert (checked.in_sync, checked.missing, checked.orphaned) == (len(names), 0, 0)

        # a Pixeltable search finds a memory by its words; the router leaves our own copies out of the merge
        memory = router.get(sorted(names)[7])
        hits = backend.search(memory.title, 5)
        assert hits and any(hit.context == f"memrouter:{memory.name}" for hit in hits)
        merged = router.search(memory.title, limit=40)
        assert all(hit.source == "canonical" for hit in merged)


FRONT = {
    "decisions/db": "---\ntags: [database, adr]\nvalid_from: 2024-01-01\n---\n# Database choice\n\n"
    "Postgres 16 for billing; quokka dumps nightly.\n",
    "decisions/old-db": "---\nstatus: obsolete\n---\n# Old database\n\nMySQL for billing, quokka dumps weekly.\n",
    "decisions/newer": "---\nsuperseded_by: decisions/db\n---\n# Interim database\n\nSQLite for billing quokka.\n",
    "ops/freeze": f"---\nvalid_until: {(datetime.now(UTC) - timedelta(days=1)).date()}\n---\n# Freeze\n\n"
    "No quokka deploys this week.\n",
    "ops/later": f"---\nvalid_from: {(datetime.now(UTC) + timedelta(days=30)).date()}\n---\n# Later\n\n"
    "Quokka dumps move to the archive tier.\n",
}


def test_rows_hold_fields_validity_and_memrouter_vectors(session_home: PixeltableHome, tmp_path: Path) -> None:
    table = new_table()
    root = make_project(tmp_path, pixeltable_toml(session_home.path, table), memories=FRONT)
    with Router.open(root=root, watch=False) as router:
        assert router.sync()[0].ok
        backend = pixeltable_backend(router)

        def rows(store: Any) -> dict[str, dict[str, Any]]:
            t = store.table
            found = t.select(t.name, t.title, t.content, t.fields, t.tags, t.valid_from, t.valid_until, t.retired,
                             t.content_hash, t.recorded_at, t.embedding).collect()  # fmt: skip
            return {row["name"]: row for row in found}

        stored = backend.call(rows)
        db = stored["decisions/db"]
        assert db["fields"] == {"tags": ["database", "adr"], "valid_from": "2024-01-01"}
        assert db["tags"] == ["database", "adr"] and db["valid_from"] == datetime(2024, 1, 1, tzinfo=UTC)
        assert db["content"] == (root / "decisions" / "db.md").read_text() and db["recorded_at"] is not None
        assert db["retired"] is None and db["valid_until"] is None
        assert stored["decisions/old-db"]["retired"] == "obsolete"
        assert stored["decisions/newer"]["retired"] == "superseded"
        assert stored["ops/freeze"]["valid_until"] < datetime.now(UTC)
        # the computed column is memrouter's embedder, called by Pixeltable
        expected = embedder_for("hash").embed_batch([embedding_text(db["title"], db["content"])])[0]
        assert np.allclose(db["embedding"], expected, atol=1e-6)

        found = {hit.context for hit in backend.search("quokka dumps for billing", 10)}
        assert found == {"memrouter:decisions/db"}  # the others are out of effect: obsolete, superseded, ended, not yet


def test_what_others_write_to_the_table_is_found_and_ours_is_not_shown_twice(
    session_home: PixeltableHome, tmp_path: Path
) -> None:
    table = new_table()
    root = make_project(tmp_path, pixeltable_toml(session_home.path, table), memories=FRONT)
    with Router.open(root=root, watch=False) as router:
        assert router.sync()[0].ok
        backend = pixeltable_backend(router)
        word = unique_word()

        def insert_row(store: Any) -> None:  # a pipeline of the team's, writing Pixeltable directly
            now = datetime.now(UTC)
            store.table.insert([{"id": "team-note-1", "title": "Wombat runbook", "content": f"The wombat {word} "
                                 "cluster restores from quokka dumps.", "content_hash": "x", "obsolete": False,
                                 "synced_at": now}])  # fmt: skip

        backend.call(insert_row)
        hits = router.search(f"wombat {word} restores", limit=10)
        theirs = [hit for hit in hits if hit.source == "pixeltable"]
        assert [hit.name for hit in theirs] == ["pixeltable:team-note-1"] and theirs[0].path is None
        ours = router.search("Postgres 16 for billing", limit=10)
        assert "decisions/db" in {hit.name for hit in ours}
        assert {hit.name for hit in ours if hit.source == "pixeltable"} <= {"pixeltable:team-note-1"}  # not ours


BLOCK_MEMROUTER = """
import sys, json
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "memrouter" or name.startswith("memrouter."):
            raise ImportError(f"{name} is not installed here")
sys.meta_path.insert(0, Block())
import numpy as np
import pixeltable as pxt
pxt.init({"pixeltable.home": sys.argv[1], "pixeltable.verbosity": 0})
t = pxt.get_table(sys.argv[2])
vector = t.where(t.name == "decisions/db").select(t.embedding).collect()[0]["embedding"]
sim = t.embedding.similarity(vector=vector)
top = t.order_by(sim, asc=False).limit(1).select(t.name).collect()[0]["name"]
try:
    t.insert([{"id": "x", "title": "x", "content": "x", "content_hash": "x", "obsolete": False,
               "synced_at": __import__("datetime").datetime.now(__import__("datetime").timezone.utc)}])
    inserted = "yes"
except Exception as exc:
    inserted = type(exc).__name__
print(json.dumps({"count": t.count(), "top": top, "insert": inserted, "memrouter": "memrouter" in sys.modules}))
"""


def test_the_table_opens_and_searches_where_memrouter_is_not_installed(
    own_home: PixeltableHome, tmp_path: Path
) -> None:
    table = new_table()
    root = make_project(tmp_path, pixeltable_toml(own_home.path, table), memories=FRONT)
    sync = subprocess.run([sys.executable, "-m", "memrouter", "--root", str(root), "sync"], capture_output=True,
                          text=True, env=subprocess_env(), timeout=300, check=False)  # fmt: skip
    assert sync.returncode == 0, sync.stderr[-3000:]
    done = subprocess.run([sys.executable, "-c", BLOCK_MEMROUTER, str(own_home.path), table], capture_output=True,
                          text=True, env=subprocess_env(), timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    import json

    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"count": len(FRONT), "top": "decisions/db", "insert": seen["insert"], "memrouter": False}
    assert seen["insert"] != "yes"  # new rows need the UDF: only memrouter writes them
    assert "memrouter_embedding" in done.stderr  # Pixeltable says which UDF it could not load


def test_a_table_built_with_another_embedder_is_built_again_and_refilled(
    own_home: PixeltableHome, tmp_path: Path
) -> None:
    table = new_table()
    root = make_project(tmp_path, pixeltable_toml(own_home.path, table), memories=FRONT)
    first = subprocess.run([sys.executable, "-m", "memrouter", "--root", str(root), "sync"], capture_output=True,
                           text=True, env=subprocess_env(), timeout=300, check=False)  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    toml = root.parent.parent / "memrouter.toml"
    toml.write_text(pixeltable_toml(own_home.path, table, embedder="minilm"), encoding="utf-8")
    from conftest import memrouter

    code, answer = memrouter(root, "sync")
    assert code == 0, answer
    (report,) = answer["backends"]
    assert report["created"] == len(FRONT) and sorted(report["restored"]) == sorted(FRONT)
    code, checked = memrouter(root, "validate", "--remote")  # one backend: its report alone
    assert code == 0 and checked["in_sync"] == len(FRONT), checked
