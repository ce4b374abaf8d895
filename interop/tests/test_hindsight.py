"""memrouter with the real Hindsight server (hindsight-api 1.1.0): retain, recall as an augmenter, faults.

The server is the real one, offline: PostgreSQL from its own pg0, embeddings
from ``memrouter embed-serve`` (MiniLM), and its LLM step served by
``memrouter.testing.fake_llm`` over the OpenAI chat API (deterministic fact
extraction: one fact per paragraph). Each test keeps to a bank of its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hindsight_peer import Pg0, RealHindsight, start_hindsight
from interop_peers import EmbedServer
from sync.synchelp import make_project, mapping

from memrouter import Router
from memrouter.core.errors import BackendError
from memrouter.external.backends.base import MemoryDraft
from memrouter.external.backends.hindsight import OBSOLETE_TAG, HindsightBackend, HindsightConfig
from memrouter.testing.backend_conformance import BackendConformance, unique_word
from memrouter.testing.fake_llm import FakeLLM

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "ai-agents-1026"


def bank() -> str:
    return f"b{uuid.uuid4().hex[:10]}"


def toml(url: str, bank_name: str, timeout: float = 60.0) -> str:
    return f'[backends.hindsight]\nurl = "{url}"\nbank = "{bank_name}"\ntimeout = {timeout}\nhealth_ttl = 30\n'


def corpus_memories(count: int) -> dict[str, str]:
    files = sorted(CORPUS.rglob("*.md"))[:count]
    assert len(files) == count, f"the corpus is not here: {CORPUS}"
    return {file.relative_to(CORPUS).with_suffix("").as_posix(): file.read_text(encoding="utf-8") for file in files}


def open_router(project: Path) -> Router:
    return Router.open(root=project / ".serena" / "memories", watch=False)


def hindsight_of(router: Router) -> HindsightBackend:
    backend = router.backend("hindsight")
    assert isinstance(backend, HindsightBackend)
    return backend


def documents(backend: HindsightBackend) -> list[dict[str, Any]]:
    """Every document of the backend's bank, obsolete ones too."""
    answer = backend.request("GET", f"{backend.endpoint}/documents?limit=10000")
    items: list[dict[str, Any]] = answer["items"]
    return items


@pytest.fixture(scope="module")
def conformance_backend(real_hindsight: RealHindsight) -> HindsightBackend:
    return HindsightBackend(HindsightConfig(url=real_hindsight.url, bank=bank()))


class TestRealHindsight(BackendConformance):
    @pytest.fixture
    def backend(self, conformance_backend: HindsightBackend) -> HindsightBackend:
        return conformance_backend

    def test_retain_runs_the_llm_and_recall_does_not(self, backend: HindsightBackend, fake_llm: FakeLLM) -> None:
        word = unique_word()
        before = dict(fake_llm.calls)
        remote_id = backend.upsert(MemoryDraft(title=word, content=f"# {word}\n\nThe {word} queue drains hourly.\n\n"
                                               "Its dead letters go to the archive."))  # fmt: skip
        assert fake_llm.count("extraction") == before.get("extraction", 0) + 1  # one chunk, one extraction
        assert backend.get(remote_id).extra["memory_unit_count"] == 2  # the fake's facts: one per paragraph
        during = fake_llm.count("extraction")
        hits = backend.search(f"when does the {word} queue drain", 5)
        assert hits[0].remote_id == remote_id and hits[0].content == f"The {word} queue drains hourly."
        assert fake_llm.count("extraction") == during

    def test_it_lists_what_it_holds_and_leaves_out_the_obsolete(self, backend: HindsightBackend) -> None:
        kept = backend.upsert(MemoryDraft(title="kept", content=f"{unique_word()} stays"))
        gone = backend.upsert(MemoryDraft(title="gone", content=f"{unique_word()} goes"))
        backend.mark_obsolete(gone, "deleted")
        held = backend.inventory()
        assert held[kept] == backend.get(kept).hash and gone not in held
        assert OBSOLETE_TAG in backend.get(gone).extra["hindsight_tags"]


def test_sync_retains_each_memory_once_and_a_resync_writes_nothing(
    real_hindsight: RealHindsight, tmp_path: Path
) -> None:
    memories = corpus_memories(40)
    project = make_project(tmp_path, toml(real_hindsight.url, bank()), memories=memories)
    with open_router(project) as router:
        report = router.sync()[0]
        assert report.ok, (report.error, list(report.failed.items())[:3])
        assert sorted(report.created) == sorted(memories)
        backend = hindsight_of(router)
        records = mapping(router).records("hindsight")
        held = backend.inventory()
        assert {record.remote_ids[0]: record.hash for record in records.values()} == held
        requests = backend.requests
        again = router.sync()[0]
        assert again.ok and again.skipped == len(memories) and again.remote_calls == 0 and not again.restored
        assert backend.requests == requests + 1  # the inventory, nothing else
        checked = router.validate(check_remote=True)[0]
        assert (checked.in_sync, checked.missing, checked.orphaned) == (len(memories), 0, 0)

        # recall finds a memory by its words; the router leaves our own copies out of the merge
        name = sorted(memories)[3]
        title = router.get(name).title
        hits = backend.search(title, 10)
        assert any(hit.context == f"memrouter:{name}" for hit in hits), [hit.context for hit in hits]
        assert all(hit.source == "canonical" for hit in router.search(title, limit=40))

        # a deleted memory is marked obsolete in Hindsight and leaves recall
        remote = records[name].remote_ids[0]
        (project / ".serena" / "memories" / f"{name}.md").unlink()
        gone = router.sync()[0]
        assert gone.ok and gone.obsoleted == [name]
        assert backend.get(remote).is_obsolete and "deleted" in (backend.get(remote).obsolete_reason or "")
        assert all(hit.remote_id != remote for hit in backend.search(title, 10))


def test_what_others_retain_is_found_and_a_lost_bank_is_filled_again(
    real_hindsight: RealHindsight, tmp_path: Path
) -> None:
    memories = corpus_memories(12)
    name = bank()
    project = make_project(tmp_path, toml(real_hindsight.url, name), memories=memories)
    with open_router(project) as router:
        assert router.sync()[0].ok
        word = unique_word()
        outsider = HindsightBackend(HindsightConfig(url=real_hindsight.url, bank=name))  # another agent's retain
        theirs = outsider.upsert(MemoryDraft(title="Wombat runbook", content=f"The wombat {word} cluster restores "
                                             "from the nightly dumps."))  # fmt: skip
        hits = router.search(f"wombat {word} cluster restores", limit=40)  # room beyond the 12
        found = [hit for hit in hits if hit.source == "hindsight"]
        assert [hit.name for hit in found] == [f"hindsight:{theirs}"] and found[0].path is None

        backend = hindsight_of(router)
        backend.request("DELETE", backend.endpoint)  # the bank and everything in it is gone
        assert router.validate()[0].in_sync == len(memories)  # the local view cannot tell
        report = router.sync()[0]
        assert report.ok and sorted(report.restored) == sorted(memories) and len(report.created) == len(memories)
        assert router.validate(check_remote=True)[0].in_sync == len(memories)
        assert len(documents(backend)) == len(memories)


@pytest.fixture
def own_hindsight(
    hindsight_postgres: Pg0, embed_server: EmbedServer, fake_llm: FakeLLM, tmp_path: Path
) -> Iterator[RealHindsight]:
    """A Hindsight server of the test's own (for faults: kill, restart)."""
    server = start_hindsight(tmp_path / "hindsight", hindsight_postgres.new_database(), embed_server.url, fake_llm.url)
    try:
        yield server
    finally:
        server.stop()


def test_killed_mid_sync_then_restarted_converges_without_duplicates(
    own_hindsight: RealHindsight, tmp_path: Path
) -> None:
    memories = corpus_memories(40)
    project = make_project(tmp_path, toml(own_hindsight.url, bank(), timeout=20), memories=memories)
    outcome: dict[str, Any] = {}

    def run_sync() -> None:
        try:
            with open_router(project) as router:
                outcome["report"] = router.sync()[0]
        except BackendError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run_sync)
    thread.start()
    with open_router(project) as watcher:
        deadline = time.monotonic() + 300
        while len(mapping(watcher).records("hindsight")) < 8:
            assert thread.is_alive() and time.monotonic() < deadline, "the sync finished before it could be killed"
            time.sleep(0.05)
    own_hindsight.kill()
    thread.join(timeout=300)
    assert not thread.is_alive()
    report = outcome.get("report")
    assert "error" in outcome or (report is not None and not report.ok)

    own_hindsight.start()  # the same database: what was committed is there
    with open_router(project) as router:
        second = router.sync()[0]
        assert second.ok, (second.error, list(second.failed.items())[:3])
        backend = hindsight_of(router)
        assert router.validate(check_remote=True)[0].in_sync == len(memories)
        live = [doc for doc in documents(backend) if OBSOLETE_TAG not in doc["tags"]]
        assert sorted(doc["document_metadata"]["content_hash"] for doc in live) == sorted(
            router.get(name).hash for name in memories
        )  # one document per memory: nothing retained twice
        assert router.sync()[0].skipped == len(memories)

        own_hindsight.restart()  # restarted on the same data: everything is still there
        backend.health.check(force=True)
        assert router.validate(check_remote=True)[0].in_sync == len(memories)
        assert router.sync()[0].skipped == len(memories)


def test_memrouter_killed_mid_sync_converges_with_one_document_per_memory(
    real_hindsight: RealHindsight, tmp_path: Path
) -> None:
    memories = corpus_memories(40)
    project = make_project(tmp_path, toml(real_hindsight.url, bank()), memories=memories)
    root = project / ".serena" / "memories"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MEMROUTER_")}
    command = [sys.executable, "-m", "memrouter", "--root", str(root), "sync", "--format", "json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    with open_router(project) as watcher:
        deadline = time.monotonic() + 300
        while len(mapping(watcher).records("hindsight")) < 8:
            assert process.poll() is None, f"the sync ended before it could be killed: {process.communicate()}"
            assert time.monotonic() < deadline, "no progress"
            time.sleep(0.05)
    process.send_signal(signal.SIGKILL)  # between two retains, or in the middle of one
    process.communicate(timeout=60)
    with open_router(project) as router:
        assert 8 <= len(mapping(router).records("hindsight")) < len(memories)
        second = router.sync()[0]
        assert second.ok, (second.error, list(second.failed.items())[:3])
        assert router.validate(check_remote=True)[0].in_sync == len(memories)
        backend = hindsight_of(router)
        live = [doc for doc in documents(backend) if OBSOLETE_TAG not in doc["tags"]]
        assert sorted(doc["document_metadata"]["content_hash"] for doc in live) == sorted(
            router.get(name).hash for name in memories
        )  # one document per memory: nothing retained twice
        before = backend.requests
        quiet = router.sync()[0]
        assert quiet.skipped == len(memories) and not quiet.created and not quiet.updated
        assert quiet.remote_calls == 0, backend.requests - before


def test_hindsight_or_its_llm_down_never_stops_the_files(
    hindsight_postgres: Pg0, embed_server: EmbedServer, tmp_path: Path
) -> None:
    with FakeLLM() as llm:
        server = start_hindsight(tmp_path / "hindsight", hindsight_postgres.new_database(), embed_server.url, llm.url)
        try:
            project = make_project(tmp_path, toml(server.url, bank(), timeout=60))
            with open_router(project) as router:
                assert router.sync()[0].ok
                backend = hindsight_of(router)
                llm.stop()  # the LLM goes away: retain cannot extract, recall still answers
                (project / ".serena" / "memories" / "new.md").write_text("# New\n\nWritten while the LLM is down.\n")
                report = router.sync()[0]
                assert not report.ok and "new" in report.failed
                pending = mapping(router).records("hindsight")["new"]  # marked before the retain, never written
                assert pending.pending is not None and pending.remote_ids == ()
                assert backend.search("flaky tests", 5)  # recall needs no LLM
                llm.start()  # back, on the same port
                assert router.sync()[0].ok and router.validate(check_remote=True)[0].in_sync == 7

                canonical = [hit.name for hit in router.search("flaky tests", limit=20, origin="canonical")]
                server.stop()  # the server goes away: the files answer, the failure is cached
                assert [hit.name for hit in router.search("flaky tests", limit=20)] == canonical
                probes = backend.health.probes
                for _ in range(5):
                    assert [hit.name for hit in router.search("flaky tests", limit=20)] == canonical
                assert backend.health.probes == probes and backend.available() is False
                (status,) = router.status()["backends"]
                assert status["available"] is False and status["last_error"]
                assert router.sync()[0].error is not None
        finally:
            server.stop()


def test_without_any_llm_retain_keeps_chunks_verbatim(
    hindsight_postgres: Pg0, embed_server: EmbedServer, tmp_path: Path
) -> None:
    server = start_hindsight(tmp_path / "hindsight", hindsight_postgres.new_database(), embed_server.url, None)
    try:
        backend = HindsightBackend(HindsightConfig(url=server.url, bank=bank()))
        word = unique_word()
        remote_id = backend.upsert(MemoryDraft(title=word, content=f"The {word} job runs at noon.", context="x"))
        hits = backend.search(f"{word} job", 5)
        assert [hit.remote_id for hit in hits] == [remote_id] and word in hits[0].content
    finally:
        server.stop()
        shutil.rmtree(tmp_path / "hindsight", ignore_errors=True)
