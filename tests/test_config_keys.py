"""Every documented key of memrouter.toml has an effect (each test fails if its key is ignored)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from helpers import write

from memrouter import Router
from memrouter.config.settings import KNOWN_KEYS
from memrouter.core.errors import ConfigError


def configured(memories: Path, toml: str) -> Path:
    """Write ``memrouter.toml`` in the project of ``memories`` (the sample project)."""
    (memories.parent.parent / "memrouter.toml").write_text(toml, encoding="utf-8")
    return memories


def open_router(memories: Path, tmp_path: Path, *, watch: bool = False) -> Router:
    return Router.open(root=memories, index_dir=tmp_path / "idx", watch=watch)


def test_search_limit_is_the_default_everywhere(memories: Path, tmp_path: Path) -> None:
    configured(memories, '[search]\nlimit = 2\nmode = "lexical"\n')
    for n in range(5):
        write(memories, f"more/flaky-{n}", f"# Flaky {n}\n\nflaky tests again\n")
    with open_router(memories, tmp_path) as router:
        assert len(router.search("flaky")) == 2
        assert len(router.search("flaky", limit=4)) == 4

        from memrouter.mcp.service import MemoryService

        assert len(MemoryService(router).search("flaky")["results"]) == 2
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(tmp_path / "idx"), "search", "flaky", "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.count('"name"') == 2


def test_search_mode_is_the_default_for_the_library_and_mcp(memories: Path, tmp_path: Path) -> None:
    configured(memories, '[search]\nmode = "lexical"\n[embed]\nmodel = "hash"\n')
    with open_router(memories, tmp_path) as router:
        router.refresh(embed=True)  # with vectors, hybrid would fuse two retrievers
        assert router.effective_mode() == "lexical"
        assert {m.retriever for hit in router.search("postgres") for m in hit.why} == {"lexical"}

        from memrouter.mcp.service import MemoryService

        found = MemoryService(router).search("postgres")
        assert found["mode"] == "lexical" and found["retrievers"] == ["lexical"]


def test_rrf_k_and_weights_set_the_fused_scores(memories: Path, tmp_path: Path) -> None:
    configured(
        memories,
        '[search]\nrrf_k = 7\nfusion = "fixed"\n[search.weights]\nlexical = 2.0\ndense = 0.5\n[embed]\nmodel = "hash"\n',
    )
    with open_router(memories, tmp_path) as router:
        router.refresh(embed=True)
        hits = router.search("postgres transactions", mode="hybrid")
        weights = {"lexical": 2.0, "dense": 0.5}
        assert len(hits[0].why) == 2
        for hit in hits:
            assert hit.score == round(sum(weights[m.retriever] / (7 + m.rank) for m in hit.why), 6)


def test_fusion_adaptive_raises_the_dense_weight_when_lexical_covers_little(memories: Path, tmp_path: Path) -> None:
    from memrouter.index.search import dense_weight

    for fusion in ("adaptive", "fixed"):
        configured(memories, f'[search]\nfusion = "{fusion}"\n[embed]\nmodel = "hash"\n')
        with open_router(memories, tmp_path / fusion) as router:
            router.refresh(embed=True)
            assert router.status()["config"]["fusion"] == fusion
            for query in ("postgres transactions", "zzyzx quibble postgres"):  # covered; mostly unknown words
                hits = router.search(query, mode="hybrid")
                noted = [m for m in hits[0].why if m.retriever == "weights"]
                assert bool(noted) is (fusion == "adaptive")
                dense = noted[0].score if noted else 0.1
                if fusion == "adaptive":  # two unknown words of three: the best lexical hit covers little
                    assert (dense > 0.1) is query.startswith("zzyzx")
                for hit in hits:
                    assert hit.score == round(
                        sum(
                            {"lexical": 1.0, "dense": dense}.get(m.retriever, 0.0) / (60 + m.rank)
                            for m in hit.why
                            if m.rank
                        ),
                        6,
                    )
    assert dense_weight(1.0, 0.1) == 0.1 and dense_weight(0.0, 0.1) > 0.5
    configured(memories, '[search]\nfusion = "clever"\n')
    from memrouter.core.errors import ConfigError

    with pytest.raises(ConfigError, match="fusion"):
        open_router(memories, tmp_path / "bad")


def test_folder_context_lends_a_folders_overview_to_its_memories(memories: Path, tmp_path: Path) -> None:
    for folder, domain in (("lanternfish", "a karaoke queue for bars"), ("bramble", "veterinary clinic scheduling")):
        write(memories, f"projects/{folder}/project_overview", f"# Overview\n\n{folder} is {domain}.\n")
        write(memories, f"projects/{folder}/suggested_commands", "# Commands\n\n`make worker` starts the worker.\n")
    for share, first in ((0.5, "projects/bramble/suggested_commands"), (0.0, None)):
        configured(memories, f'[search]\nmode = "lexical"\nfolder_context = {share}\n')
        with open_router(memories, tmp_path / str(share)) as router:
            assert router.status()["config"]["folder_context"] == share
            names = [hit.name for hit in router.search("veterinary worker", limit=3)]
            if first:
                assert names[0] == first
            else:  # nothing lent: the commands say nothing of vets, the overview nothing of workers
                assert "projects/bramble/suggested_commands" not in names[:1]
    configured(memories, "[search]\nfolder_context = 2\n")
    from memrouter.core.errors import ConfigError

    with pytest.raises(ConfigError, match="folder_context"):
        open_router(memories, tmp_path / "bad")


def test_rerank_reads_the_candidates_again_and_keeps_token_vectors(memories: Path, tmp_path: Path) -> None:
    for rerank in (True, False):
        configured(memories, f"[search]\nrerank = {str(rerank).lower()}\n")
        with open_router(memories, tmp_path / str(rerank)) as router:
            router.refresh(embed=True)
            assert router.status()["config"]["rerank"] is rerank
            assert ("token_chunks" in router.status()["dense"]) is rerank
            why = {match.retriever for hit in router.search("flaky tests in CI") for match in hit.why}
            assert ("rerank" in why) is rerank
    configured(memories, '[search]\nrerank = "yes"\n')
    from memrouter.core.errors import ConfigError

    with pytest.raises(ConfigError, match="rerank must be true or false"):
        open_router(memories, tmp_path / "bad")


def test_refresh_interval_decides_when_a_long_running_router_looks_again(memories: Path, tmp_path: Path) -> None:
    for interval, seen in ((3600, False), (0, True)):
        configured(memories, f"[search]\nrefresh_interval = {interval}\n")
        with open_router(memories, tmp_path / str(interval)) as router:  # no watcher: the interval alone decides
            router.search("postgres", mode="lexical")
            # Different text each time: one content in two files is one hit (the newest copy).
            write(memories, f"late/arrival-{interval}", f"# Late arrival {interval}\n\nzebra crossing\n")
            found = [hit.name for hit in router.search("zebra", mode="lexical")]
            assert (f"late/arrival-{interval}" in found) is seen


def test_embed_model_picks_the_embedder(memories: Path, tmp_path: Path) -> None:
    configured(memories, '[embed]\nmodel = "hash"\n')
    with open_router(memories, tmp_path) as router:
        router.refresh(embed=True)
        dense = router.status()["dense"]
        assert dense["embedder"] == "hash" and dense["model"].startswith("hash-") and dense["chunks"] > 0


def test_index_write_wait_bounds_how_long_a_write_waits(memories: Path, tmp_path: Path) -> None:
    configured(memories, "[index]\nwrite_wait = 0.25\n")
    with open_router(memories, tmp_path) as router:
        assert router.workspace.conn.write_wait == 0.25
        assert router.status()["config"]["write_wait"] == 0.25


def test_unknown_keys_are_reported_by_status(memories: Path, tmp_path: Path) -> None:
    configured(memories, '[serach]\nmode = "lexical"\n[search]\nlimt = 2\n[search.weights]\ndnese = 1.0\n')
    with open_router(memories, tmp_path) as router:
        status = router.status()
        assert status["config"]["unknown_keys"] == ["search.limt", "search.weights.dnese", "serach"]
        assert "unknown configuration key 'search.limt' (ignored)" in status["warnings"]


def test_every_known_key_is_documented_on_the_configuration_page() -> None:
    page = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text(encoding="utf-8")
    for section, keys in KNOWN_KEYS.items():
        for key in keys:
            if section in ("", "search.weights"):
                continue
            documented = f"\n{key} =" in page or f"[{section}.{key}]" in page or f"| `{key}` |" in page
            assert documented, f"{section}.{key} is not in docs/configuration.md"


def test_mcp_search_without_a_mode_uses_the_configured_one(memories: Path, tmp_path: Path) -> None:
    configured(memories, '[search]\nmode = "lexical"\nlimit = 1\n')

    async def call() -> dict[str, object]:
        from mcp import Client

        from memrouter.mcp.server import create_server
        from memrouter.mcp.service import MemoryService

        with open_router(memories, tmp_path) as router:
            async with Client(create_server(MemoryService(router))) as client:
                result = await client.call_tool("search_memory", {"query": "flaky"})
                assert result.structured_content is not None
                return dict(result.structured_content)

    data = anyio.run(call)
    assert data["mode"] == "lexical" and len(data["results"]) == 1  # type: ignore[arg-type]


def test_janitor_stale_days_decides_what_the_janitor_calls_stale(memories: Path, tmp_path: Path) -> None:
    now = [1_790_000_000.0]
    for days, stale in ((10, ["ci/flaky-tests"]), (30, [])):
        configured(memories, f"[janitor]\nstale_days = {days}\n")
        with Router.open(root=memories, index_dir=tmp_path / str(days), watch=False, clock=lambda: now[0]) as router:
            router.get("ci/flaky-tests")
            now[0] += 20 * 86400
            assert router.janitor().usage["stale_names"] == stale
            assert router.status()["config"]["janitor"]["stale_days"] == days


def test_janitor_workflow_idle_days_decides_which_team_workflows_are_idle(memories: Path, tmp_path: Path) -> None:
    from memrouter.team import ManualClock

    for days, idle in ((2, 1), (14, 0)):
        configured(memories, f"[janitor]\nworkflow_idle_days = {days}\n")
        with Router.open(root=memories, index_dir=tmp_path / str(days), watch=False) as router:
            team = router.team()
            team.clock = ManualClock(1_790_000_000.0)
            team.workflow_start("left behind")
            team.clock.advance(3 * 86400)
            assert len(router.janitor().team["idle_workflows"]) == idle
            assert router.status()["config"]["janitor"]["workflow_idle_days"] == days


def test_janitor_keys_out_of_range_are_refused(memories: Path, tmp_path: Path) -> None:
    from memrouter.core.errors import ConfigError

    for bad in ("decay = 1.5", "decay = -0.1", "stale_days = 0", 'decay = "strong"', "workflow_idle_days = 0"):
        configured(memories, f"[janitor]\n{bad}\n")
        with pytest.raises(ConfigError, match=r"\[janitor\]"):
            Router.open(root=memories, index_dir=tmp_path / "idx")


def test_context_margin_decides_how_much_of_the_budget_is_kept_free(memories: Path, tmp_path: Path) -> None:
    used = {}
    for margin in (0.0, 0.5):
        configured(memories, f"[context]\nmargin = {margin}\n")
        with Router.open(root=memories, index_dir=tmp_path / str(margin), watch=False) as router:
            context = router.assemble_context("flaky tests ci retry", max_tokens=300)
            assert context.tokens <= 300 * (1 - margin)
            assert router.status()["config"]["context"]["margin"] == margin
            used[margin] = context.tokens
    assert used[0.0] > used[0.5]
    for bad in ("margin = 0.9", "margin = -0.1", 'margin = "wide"'):
        configured(memories, f"[context]\n{bad}\n")
        from memrouter.core.errors import ConfigError

        with pytest.raises(ConfigError, match=r"\[context\]"):
            Router.open(root=memories, index_dir=tmp_path / "idx")


def test_embed_background_decides_whether_the_server_embeds_in_the_background(memories: Path, tmp_path: Path) -> None:
    import threading

    from memrouter.mcp.activity import Activity
    from memrouter.mcp.serve import _warm

    for background in (True, False):
        configured(memories, f'[embed]\nmodel = "hash"\nbackground = {str(background).lower()}\n')
        with open_router(memories, tmp_path / str(background)) as router:
            activity = Activity()
            activity.arrived()
            activity.answered()  # the server's first answer: background work starts once it is quiet
            _warm(router, activity, threading.Event())  # what `memrouter serve` runs at start
            assert (router.status()["dense"]["background"] is not None) is background
            assert router.status()["config"]["embed_background"] is background
    configured(memories, '[embed]\nbackground = "yes"\n')
    from memrouter.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"\[embed\] background"):
        open_router(memories, tmp_path / "bad")


def test_a_database_password_is_never_shown() -> None:
    from memrouter.config.settings import redacted_url

    assert redacted_url("postgresql://u:secret@h/db") == "postgresql://u:***@h/db"
    assert redacted_url("postgresql://u@h/db?sslmode=require&password=secret") == (
        "postgresql://u@h/db?sslmode=require&password=***"
    )
    assert "secret" not in redacted_url("postgresql://h/db?PASSWORD=secret#x")


def test_janitor_unused_days_decides_which_memories_are_proposed_for_archiving(memories: Path, tmp_path: Path) -> None:
    import sqlite3

    now = [2_000_000_000.0]  # far after the sample's file times
    for days, archived in ((30, True), (36_000, False)):
        configured(memories, f"[janitor]\nunused_days = {days}\n")
        with Router.open(root=memories, index_dir=tmp_path / str(days), watch=False, clock=lambda: now[0]) as router:
            router.refresh()
            # Uses have been counted for a year: the index's access table was made then.
            with sqlite3.connect(router.config.index_path) as conn:
                conn.execute("UPDATE schema_migrations SET applied_at = ? WHERE name = '0400_access_counts'",
                             (now[0] - 365 * 86400,))  # fmt: skip
            report = router.janitor()
            proposed = {p.name for p in report.proposals if p.action == "archive"}
            assert bool(proposed) is archived
            assert router.status()["config"]["janitor"]["unused_days"] == days
            if archived:
                applied = router.janitor(apply=True)
                done = [p.name for p in applied.proposals if p.action == "archive" and p.applied]
                assert done and router.get(done[0]).status == "archived"


def test_mcp_tools_chooses_the_tools_served(memories: Path, tmp_path: Path) -> None:
    from memrouter.mcp.profiles import PROFILES

    async def names() -> list[str]:
        from mcp import Client

        from memrouter.mcp.server import create_server
        from memrouter.mcp.service import MemoryService

        with open_router(memories, tmp_path) as router:
            async with Client(create_server(MemoryService(router))) as client:
                return [tool.name for tool in (await client.list_tools()).tools]

    assert anyio.run(names) == list(PROFILES["core"])
    configured(memories, '[mcp]\ntools = ["review", "get_memory"]\n')
    assert set(anyio.run(names)) == {*PROFILES["review"], "get_memory"}
    for bad in ("[mcp]\ntools = 3\n", "[mcp]\ntools = []\n", "mcp = 1\n"):
        configured(memories, bad)
        with pytest.raises(ConfigError, match=r"\[mcp\]"):
            open_router(memories, tmp_path)
