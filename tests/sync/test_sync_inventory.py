"""Sync against a backend that can say what it holds (``SupportsInventory``): lost copies are sent again.

The backend is ``memrouter.testing.memory_backend.InMemoryBackend``, registered
the way a plugin is (an entry point of an installed distribution), so the
Router builds it from ``memrouter.toml`` like any other.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sync.synchelp import make_project, mapping

from memrouter import Router
from memrouter.external.backends.base import MemoryDraft, SupportsInventory, backend_status
from memrouter.testing.backend_conformance import BackendConformance
from memrouter.testing.memory_backend import InMemoryBackend, MemoryStore


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``memory`` as an installed plugin (a dist-info with the entry point) on ``sys.path``."""
    site = tmp_path / "site"
    dist = site / "memrouter_memory_backend-1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: memrouter-memory-backend\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[memrouter.backends]\nmemory = memrouter.testing.memory_backend:InMemoryBackend\n"
    )
    monkeypatch.syspath_prepend(str(site))


@pytest.fixture
def project(tmp_path: Path, plugin: None) -> Path:
    store = f"store-{uuid.uuid4().hex[:8]}"  # one store per test
    return make_project(tmp_path, f'[backends.memory]\nstore = "{store}"\n')


@pytest.fixture
def router(project: Path) -> Iterator[Router]:
    with Router.open(root=project / ".serena" / "memories", watch=False) as opened:
        yield opened


def memory_backend(router: Router) -> InMemoryBackend:
    backend = router.backend("memory")
    assert isinstance(backend, InMemoryBackend)
    return backend


class TestInMemoryBackend(BackendConformance):
    @pytest.fixture
    def backend(self) -> InMemoryBackend:
        return InMemoryBackend({"name": "memory"}, store=MemoryStore())


def test_it_offers_the_inventory_and_status_says_so() -> None:
    backend = InMemoryBackend(store=MemoryStore())
    assert isinstance(backend, SupportsInventory)
    kept = backend.upsert(MemoryDraft(title="a", content="alpha"))
    gone = backend.upsert(MemoryDraft(title="b", content="beta"))
    backend.mark_obsolete(gone, "deleted")
    assert backend.inventory() == {kept: backend.get(kept).hash}
    assert backend_status(backend)["supports_inventory"] is True


def test_a_resync_with_nothing_changed_writes_nothing(router: Router) -> None:
    first = router.sync()[0]
    assert first.ok and len(first.created) == 6 and first.restored == []
    backend = memory_backend(router)
    writes = backend.calls["upsert"]
    again = router.sync()[0]
    assert again.ok and again.skipped == 6 and again.remote_calls == 0
    assert not again.created and not again.updated and not again.restored
    assert backend.calls["upsert"] == writes
    assert backend.calls["inventory"] == 1  # the first run had nothing mapped: nothing to compare


def test_a_store_that_lost_its_data_is_filled_again(router: Router) -> None:
    assert router.sync()[0].ok
    backend = memory_backend(router)
    backend.store.clear()  # the service's data is gone; the mapping still says everything is there
    assert router.validate()[0].in_sync == 6  # the local view cannot tell
    assert router.validate(check_remote=True)[0].missing == 6
    planned = router.sync(dry_run=True)[0]
    assert len(planned.created) == 6 and len(planned.restored) == 6 and backend.store.memories == {}
    report = router.sync()[0]
    assert report.ok and len(report.created) == 6 and sorted(report.restored) == sorted(report.created)
    live = {m.context for m in backend.store.memories.values()}
    assert live == {f"memrouter:{name}" for name in report.created} and len(backend.store.memories) == 6
    records = mapping(router).records("memory")
    assert {rid for record in records.values() for rid in record.remote_ids} == set(backend.store.memories)
    assert router.validate(check_remote=True)[0].in_sync == 6
    assert router.sync()[0].skipped == 6


def test_one_lost_copy_and_one_changed_behind_our_back_are_sent_again_in_place(router: Router) -> None:
    assert router.sync()[0].ok
    backend = memory_backend(router)
    records = mapping(router).records("memory")
    lost, changed = sorted(records)[:2]
    changed_id = records[changed].remote_ids[0]
    with backend.store.lock:
        del backend.store.memories[records[lost].remote_ids[0]]
        memory = backend.store.memories[changed_id]
        backend.store.memories[changed_id] = type(memory)(id=changed_id, title=memory.title, content="edited there",
                                                          context=memory.context)  # fmt: skip
    report = router.sync()[0]
    assert report.ok and report.created == [lost] and report.updated == [changed]
    assert sorted(report.restored) == sorted([lost, changed]) and report.skipped == 4
    assert backend.get(changed_id).content == router.get(changed).text  # the same remote id, updated in place
    assert len(backend.store.memories) == 6


def test_a_deleted_memory_whose_copy_is_gone_is_just_forgotten(router: Router, project: Path) -> None:
    assert router.sync()[0].ok
    backend = memory_backend(router)
    name = sorted(mapping(router).records("memory"))[0]
    backend.store.clear()
    (project / ".serena" / "memories" / f"{name}.md").unlink()
    report = router.sync()[0]
    assert report.ok and report.obsoleted == [name] and name not in report.restored
    assert name not in mapping(router).records("memory")


def test_a_service_down_stops_the_run_before_anything_is_sent(router: Router) -> None:
    assert router.sync()[0].ok
    backend = memory_backend(router)
    backend.store.down = True
    report = router.sync()[0]
    assert report.error is not None and not report.created and not report.updated
    backend.store.down = False
    assert router.sync()[0].skipped == 6
