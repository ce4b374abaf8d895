"""memrouter's graph into the real Graphiti (graphiti-core 0.31.1) on a real FalkorDB server.

Sync uses memrouter's embedder ``hash`` (deterministic, no model) so a corpus
syncs in seconds; the embedder is memrouter's own either way (Graphiti gets it
through ``MemrouterEmbedder``). No language model exists here: the LLM client
Graphiti holds raises when called, and each test checks it never was.
"""

from __future__ import annotations

import re
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from conftest import FalkorServer, make_project

from memrouter import Router
from memrouter.external.backends.graphiti import GraphitiBackend, GraphitiConfig
from memrouter.external.backends.graphiti_plan import episode_uuid, plan_memory
from memrouter.external.sync import state
from memrouter.external.sync.engine import draft_for

CORPUS = "ai-agents-466"


def graph_backend(router: Router) -> GraphitiBackend:
    backend = router.backend("graphiti")
    assert isinstance(backend, GraphitiBackend)
    return backend


def assert_no_model_called(backend: GraphitiBackend) -> None:
    store = backend.store
    assert store.llm.calls == 0 and store.reranker.calls == 0


def expected_graph(router: Router, group: str) -> tuple[int, set[str], int]:
    """Episodes, distinct entity ids and edges the memories should make."""
    entities: set[str] = set()
    edges = 0
    memories = router.list()
    for memory in memories:
        plan = plan_memory(draft_for(router.store.read(memory.name)), group)
        entities.update(entity.uuid for entity in plan.entities)
        edges += len(plan.edges)
    return len(memories), entities, edges


def test_corpus_sync_search_finds_our_episodes_and_a_resync_writes_nothing(
    falkordb: FalkorServer, tmp_path: Path
) -> None:
    root = make_project(tmp_path, falkordb.port, "corpus", CORPUS)
    with Router.open(root=root, watch=False) as router:
        report = router.sync()[0]
        assert report.ok, (report.error, list(report.failed.items())[:5])
        episodes, entities, edges = expected_graph(router, "corpus")
        assert len(report.created) == episodes >= 400
        backend = graph_backend(router)
        counts = backend.call(backend.store.counts())
        assert counts == {"episodes": episodes, "entities": len(entities), "edges": edges}
        assert edges > episodes  # the corpus is linked: many typed edges

        # a Graphiti search for an entity finds the episodes memrouter wrote for the memories naming it
        naming: dict[str, set[str]] = {}
        labels: dict[str, str] = {}
        for memory in router.list():
            for entity in plan_memory(draft_for(router.store.read(memory.name)), "corpus").entities[1:]:
                if entity.key.startswith("path:") and re.fullmatch(r"[\w./-]*[a-z]{6,}[\w./-]*", entity.name):
                    naming.setdefault(entity.uuid, set()).add(memory.name)
                    labels[entity.uuid] = entity.name
        chosen = sorted((uuid for uuid in naming if 2 <= len(naming[uuid]) <= 5), key=lambda u: labels[u])[0]
        hits = backend.search(labels[chosen], 20)
        episode_hits = [hit for hit in hits if hit.context.startswith("memrouter:")]
        assert episode_hits, [hit.title for hit in hits]
        assert {hit.context.removeprefix("memrouter:") for hit in episode_hits} & naming[chosen], labels[chosen]
        mapping = state.load_records(router.workspace.conn, "graphiti")
        assert all(
            mapping[hit.context.removeprefix("memrouter:")].remote_ids == (hit.remote_id,) for hit in episode_hits
        )
        facts = [hit for hit in hits if hit.origin_id is not None]
        assert all(hit.valid_from is not None or hit.valid_until is None for hit in facts)

        checked = router.validate(check_remote=True)[0]
        assert (checked.in_sync, checked.stale, checked.missing, checked.orphaned) == (episodes, 0, 0, 0)

        again = router.sync()[0]
        assert again.ok and again.remote_calls == 0 and again.skipped == episodes
        assert not again.created and not again.updated and not again.obsoleted
        assert backend.call(backend.store.counts()) == counts
        assert_no_model_called(backend)


MEMORIES = {
    "decisions/db": "# Database choice\n\nThe billing service depends on Postgres 16, see [[infra/postgres]].\n"
    "- depends_on [[infra/backups]] (nightly quokka dumps)\n",
    "infra/postgres": "# Postgres\n\nPrimary on port 5432; replicas read-only.\n",
    "infra/backups": "# Backups\n\nNightly quokka dumps go to the object store.\n",
}


def write_memories(root: Path) -> None:
    for name, text in MEMORIES.items():
        path = root / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_an_invalidated_memory_ends_its_edges_and_leaves_present_search(falkordb: FalkorServer, tmp_path: Path) -> None:
    root = make_project(tmp_path, falkordb.port, "lifecycle")
    write_memories(root)
    with Router.open(root=root, watch=False) as router:
        backend = graph_backend(router)
        planned = router.sync(dry_run=True)[0]
        assert len(planned.created) == 4 and planned.remote_calls == 0  # README.md and the three memories
        assert backend.call(backend.store.counts()) == {"episodes": 0, "entities": 0, "edges": 0}
        assert router.sync()[0].ok
        episode = episode_uuid("lifecycle", "decisions/db")
        before = backend.call(backend.store.edges_of(episode))
        assert len(before) == 2 and all(edge["invalid_at"] is None for edge in before)
        assert all(edge["valid_at"] for edge in before)  # the record time: no front matter, so the first commit
        found = backend.search("quokka dumps", 10)
        assert any(hit.origin_id == episode for hit in found) and any(hit.remote_id == episode for hit in found)

        router.invalidate("decisions/db", "moved to the ledger service")
        (root / "infra" / "restores.md").write_text("# Restores\n\nRestore drills monthly.\n", encoding="utf-8")
        drift = router.validate()[0]  # in sync: README.md and two unchanged memories
        assert (drift.in_sync, drift.stale, drift.missing, drift.orphaned) == (3, 1, 1, 0)
        report = router.sync()[0]
        assert report.ok and report.updated == ["decisions/db"] and report.created == ["infra/restores"]
        after = backend.call(backend.store.edges_of(episode))
        assert {edge["uuid"] for edge in after} == {edge["uuid"] for edge in before}  # ended, not deleted
        assert all(edge["invalid_at"] is not None and edge["expired_at"] is not None for edge in after)
        present = backend.search("quokka dumps", 10)
        assert all(hit.origin_id != episode and hit.remote_id != episode for hit in present)
        assert any(hit.context == "memrouter:infra/backups" for hit in present)  # still holds

        # a deleted memory: its episode is marked obsolete, never deleted
        (root / "infra" / "postgres.md").unlink()
        assert router.validate()[0].orphaned == 1
        gone = router.sync()[0]
        assert gone.ok and gone.obsoleted == ["infra/postgres"]
        kept = backend.get(episode_uuid("lifecycle", "infra/postgres"))
        assert kept.is_obsolete and "deleted" in (kept.obsolete_reason or "")
        final = router.validate(check_remote=True)[0]
        assert (final.in_sync, final.stale, final.missing, final.orphaned) == (4, 0, 0, 0)
        assert_no_model_called(backend)


def test_graphiti_adds_what_the_files_lack_and_drops_our_own_copies(falkordb: FalkorServer, tmp_path: Path) -> None:
    root = make_project(tmp_path, falkordb.port, "augment")
    toml = root.parent.parent / "memrouter.toml"  # no group: the project folder's name ("augment") is the group
    toml.write_text(toml.read_text(encoding="utf-8").replace('group = "augment"\n', ""), encoding="utf-8")
    write_memories(root)
    with Router.open(root=root, watch=False) as router:
        assert graph_backend(router).config.group == "augment"
        assert router.sync()[0].ok
        # another writer of the same group (a team's own Graphiti pipeline) adds a fact memrouter never had
        outsider = GraphitiBackend(GraphitiConfig(port=falkordb.port, group="augment", embedder="hash"))
        try:
            from memrouter.external.backends.base import MemoryDraft

            outsider.upsert(MemoryDraft(title="Ops note", content="# Ops\n\nThe wombat cluster "
                                        "depends on [[infra/backups]] for restores.\n", context="memrouter:ops/wombat"))  # fmt: skip
        finally:
            outsider.close()
        hits = router.search("wombat cluster restores", limit=10)
        graph_hits = [hit for hit in hits if hit.source == "graphiti"]
        assert graph_hits and all(hit.path is None for hit in graph_hits)
        assert any("wombat" in hit.snippet for hit in graph_hits)
        # quokka: only our own memories hold it, so Graphiti's copies of them are left out
        ours = router.search("nightly quokka dumps", limit=10)
        assert [hit.source for hit in ours if hit.source == "graphiti"] == []
        assert {hit.name for hit in ours} >= {"infra/backups", "decisions/db"}

        # FalkorDB down: the files still answer, and the failure is probed once, then cached
        falkordb.stop()
        backend = graph_backend(router)
        backend.health.check(force=True)
        probes = backend.health.probes
        for _ in range(5):
            down = router.search("nightly quokka dumps", limit=10)
            assert down and all(hit.source == "canonical" for hit in down)
        assert backend.health.probes == probes and backend.available() is False
        assert router.sync()[0].error is not None  # sync says the service is unavailable, changes nothing


def test_killing_falkordb_mid_sync_then_rerunning_converges_without_duplicates(
    falkordb: FalkorServer, tmp_path: Path
) -> None:
    root = make_project(tmp_path, falkordb.port, "crash", CORPUS)
    with Router.open(root=root, watch=False) as router:
        reports: list[object] = []
        worker = threading.Thread(target=lambda: reports.extend(router.sync()))
        worker.start()
        from falkordb import FalkorDB

        client = FalkorDB(host="127.0.0.1", port=falkordb.port)
        graph = client.select_graph("crash")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and worker.is_alive():
            try:
                if graph.query("MATCH (n:Episodic) RETURN count(n)").result_set[0][0] >= 40:
                    break
            except Exception:  # noqa: BLE001 - the graph does not exist until the first write
                pass
            time.sleep(0.05)
        falkordb.kill()
        worker.join(180)
        client.connection.close()
        first = reports[0]
        assert first.error is not None  # the run stopped on the lost server
        assert 0 < len(first.done) < len(router.list())

        falkordb.start()  # same port, same folder: what was acknowledged is there
        backend = graph_backend(router)
        backend.health.check(force=True)
        second = router.sync()[0]
        assert second.ok, (second.error, list(second.failed.items())[:5])
        episodes, entities, edges = expected_graph(router, "crash")
        counts = backend.call(backend.store.counts())
        assert counts == {"episodes": episodes, "entities": len(entities), "edges": edges}
        checked = router.validate(check_remote=True)[0]
        assert (checked.in_sync, checked.missing, checked.orphaned) == (episodes, 0, 0)
        assert_no_model_called(backend)


def test_a_memory_that_ends_later_leaves_present_search_when_its_time_comes(
    falkordb: FalkorServer, tmp_path: Path
) -> None:
    root = make_project(tmp_path, falkordb.port, "later")
    write_memories(root)
    ends = datetime.now(UTC) + timedelta(seconds=4)
    (root / "infra" / "backups.md").write_text(
        f"---\nvalid_until: {ends.isoformat()}\n---\n# Backups\n\nNightly quokka dumps go to the object store.\n",
        encoding="utf-8",
    )
    with Router.open(root=root, watch=False) as router:
        backend = graph_backend(router)
        assert router.sync()[0].ok
        episode = episode_uuid("later", "infra/backups")
        assert any(hit.remote_id == episode or hit.origin_id == episode for hit in backend.search("quokka dumps", 10))
        time.sleep(max(0.0, (ends - datetime.now(UTC)).total_seconds()) + 0.5)
        # no sync in between: the search compares the stored end with its own now
        late = backend.search("quokka dumps", 10)
        assert all(hit.remote_id != episode and hit.origin_id != episode for hit in late), late
        assert backend.search("   ", 10) == []
        assert_no_model_called(backend)


def test_a_resave_keeps_when_things_were_created_and_drops_mentions_it_no_longer_makes(
    falkordb: FalkorServer, tmp_path: Path
) -> None:
    root = make_project(tmp_path, falkordb.port, "keep")
    write_memories(root)
    with Router.open(root=root, watch=False) as router:
        backend = graph_backend(router)
        assert router.sync()[0].ok
        episode = episode_uuid("keep", "decisions/db")
        first = {edge["uuid"]: edge["created_at"] for edge in backend.call(backend.store.edges_of(episode))}
        mentions = "MATCH (:Episodic {uuid: $uuid})-[:MENTIONS]->(n:Entity) RETURN n.name AS name"
        named = {row["name"] for row in backend.call(backend.store._query(mentions, uuid=episode))}
        assert any("postgres" in name.lower() for name in named), named
        time.sleep(1.1)
        (root / "decisions" / "db.md").write_text(
            "# Database choice\n\nThe billing service is settled.\n- depends_on [[infra/backups]] (nightly quokka dumps)\n",
            encoding="utf-8",
        )
        report = router.sync()[0]
        assert report.ok and report.updated == ["decisions/db"]
        second = {edge["uuid"]: edge["created_at"] for edge in backend.call(backend.store.edges_of(episode))}
        kept = first.keys() & second.keys()
        assert kept and all(first[uuid] == second[uuid] for uuid in kept)
        after = {row["name"] for row in backend.call(backend.store._query(mentions, uuid=episode))}
        assert not any("postgres" in name.lower() for name in after), after
        assert_no_model_called(backend)
