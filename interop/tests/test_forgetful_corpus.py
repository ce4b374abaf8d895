"""A full sync of the 1026-memory corpus into the real Forgetful, then validate and drift behind memrouter's back.

This Forgetful gets its embeddings from ``memrouter embed-serve --embedder hash``
(memrouter's deterministic offline feature hashing): the test is about sync
(about 2,100 creates once long memories are split), and MiniLM on two CPU
cores would make it take many minutes. Relevance with MiniLM is covered by
the other modules, which use the MiniLM endpoint.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from interop_peers import ROOT, EmbedServer, RealForgetful, start_forgetful
from sync.synchelp import init_repository

from memrouter import Router
from memrouter.external.backends.forgetful import ForgetfulBackend, ForgetfulConfig
from memrouter.external.sync import state

CORPUS = ROOT.parent / "shared" / "corpora" / "ai-agents-1026"


def live_by_context(backend: ForgetfulBackend, project: Path) -> dict[str, list[int]]:
    """Non-obsolete remote ids per context for ``project``, paging 100 at a time (the real server's cap)."""
    found: list[dict[str, Any]] = []
    offset = 0
    while True:
        page = backend.execute("get_recent_memories", {"limit": 100, "offset": offset, "include_obsolete": True})
        found += page["memories"]
        if len(page["memories"]) < 100:
            break
        offset += 100
    result: dict[str, list[int]] = {}
    for memory in found:
        if memory.get("source_repo") == project.name and not memory["is_obsolete"]:
            result.setdefault(memory["context"], []).append(int(memory["id"]))
    return result


@pytest.fixture(scope="module")
def hashed_forgetful(forgetful_available: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealForgetful]:
    """A real Forgetful of this module's own, fed by a hashing embeddings endpoint."""
    folder = tmp_path_factory.mktemp("hashed")
    embeddings = EmbedServer(folder, embedder="hash")
    try:
        embeddings.start()
        server = start_forgetful(folder / "forgetful", embeddings.url)
        try:
            yield server
        finally:
            server.stop()
    finally:
        embeddings.stop()


@pytest.fixture
def corpus_project(tmp_path: Path, hashed_forgetful: RealForgetful) -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"the corpus is not here: {CORPUS}")
    project = tmp_path / "corpus-1026"
    shutil.copytree(CORPUS, project / ".serena" / "memories")
    toml = f'[backends.forgetful]\nurl = "{hashed_forgetful.url}"\ntimeout = 60\nconnect_timeout = 30\n'
    init_repository(project, toml, "corpus")
    return project


@pytest.fixture
def inspector(hashed_forgetful: RealForgetful) -> Iterator[ForgetfulBackend]:
    backend = ForgetfulBackend(ForgetfulConfig(url=hashed_forgetful.url, timeout=60.0))
    yield backend
    backend.close()


@pytest.mark.long
def test_full_corpus_sync_validate_and_drift(corpus_project: Path, inspector: ForgetfulBackend) -> None:
    root = corpus_project / ".serena" / "memories"
    with Router.open(root=root, watch=False) as router:
        names = sorted(m.name for m in router.list())
        assert len(names) >= 1000
        started = time.perf_counter()
        report = router.sync()[0]
        seconds = time.perf_counter() - started
        print(f"\nfull sync of {len(names)} memories into the real Forgetful: {seconds:.1f} s")
        assert report.ok, (report.error, list(report.failed.items())[:5])
        assert len(report.created) == len(names)
        records = state.load_records(router.workspace.conn, "forgetful")
        split = [name for name, record in records.items() if len(record.remote_ids) > 1]
        assert split, "some corpus memories are over 2,000 characters and must be split into parts"

        live = live_by_context(inspector, corpus_project)
        assert set(live) == {f"memrouter:{name}" for name in names}
        for name in names:  # every part is live once: no duplicates
            assert sorted(live[f"memrouter:{name}"]) == sorted(int(i) for i in records[name].remote_ids)

        checked = router.validate(check_remote=True)[0]
        assert (checked.in_sync, checked.stale, checked.missing, checked.orphaned) == (len(names), 0, 0, 0)
        again = router.sync()[0]
        assert again.ok and again.skipped == len(names) and not again.created and not again.updated

        # drift behind memrouter's back: one changed, one added, one removed, one obsoleted remotely
        changed, removed, obsoleted = names[0], names[1], names[2]
        path = root / f"{changed}.md"
        path.write_text(path.read_text(encoding="utf-8") + "\nA line added by hand.\n", encoding="utf-8")
        (root / f"{removed}.md").unlink()
        (root / "added-by-hand.md").write_text("# Added by hand\n\nNot synced yet.\n", encoding="utf-8")
        inspector.mark_obsolete(records[obsoleted].remote_ids[0], "removed by hand")
        local = router.validate()[0]
        assert (local.stale, local.missing, local.orphaned) == (1, 1, 1)
        remote = router.validate(check_remote=True)[0]
        assert (remote.stale, remote.missing, remote.orphaned) == (1, 2, 1)
        states = {d.name: d.state for d in remote.details}
        assert states[changed] == "stale" and states[removed] == "orphaned"
        assert states["added-by-hand"] == "missing" and states[obsoleted] == "missing"

        healed = router.sync()[0]
        assert healed.ok, (healed.error, list(healed.failed.items())[:5])
        assert healed.updated == [changed] and healed.created == ["added-by-hand"] and healed.obsoleted == [removed]
        final = router.validate(check_remote=True)[0]
        assert (final.stale, final.missing, final.orphaned) == (0, 1, 0)  # the remote one needs --force
        assert final.in_sync == len(names) - 1
