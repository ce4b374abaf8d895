"""``search --branches local``, ``memrouter branches`` and the divergence report over a real repository with a main
checkout and three worktrees on four branches (``branchkit``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import branchkit
from helpers import commit, git, git_project, write

from memrouter.config.settings import Config
from memrouter.router import Router

WHERE_X = "branch feat-x, worktree ../wt-x, unmerged, 2 commits ahead of main"
WHERE_Y = "branch fix-y, worktree ../wt-y, unmerged, 1 commit ahead of main"
WHERE_Z = "branch docs-z, worktree ../wt-z, merged into main"


def cli(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memrouter", *args], cwd=folder, capture_output=True, text=True, timeout=300
    )


def found(hits: list[object]) -> list[tuple[str, str | None]]:
    """(name, where) of each hit; where is None for the checkout's own memories."""
    return [
        (hit.name, next((m.detail for m in hit.why if m.retriever == "branch"), None))  # type: ignore[attr-defined]
        for hit in hits
    ]


def router(project: Path, toml: str = "") -> Router:
    (project / "memrouter.toml").write_text(toml + '[embed]\nmodel = "hash"\n')
    return Router(Config.load(root=project / branchkit.MEMORIES), watch=False)


def test_search_adds_the_other_branches_memories_lowered_and_marked(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    with router(places["project"]) as memories:
        query = "payment service retries timeouts"
        assert found(memories.search(query, mode="lexical")) == [("beta", None)]
        hits = memories.search(query, mode="lexical", branches="local")
        assert found(hits) == [("beta", None), ("beta", WHERE_X), ("beta", WHERE_Y)]
        assert hits[1].path == str(places["wt-x"] / branchkit.MEMORIES / "beta.md")
        assert hits[1].content is None and "three times" in hits[1].snippet
        assert found(memories.search("websocket gateway idle", mode="lexical", branches="local")) == [
            ("draft", WHERE_X + ", uncommitted")
        ]
        # the other version answers better (only it says Wednesday): it comes first, lowered and marked
        assert found(memories.search("release train Wednesday", mode="lexical", branches="local", limit=2)) == [
            ("alpha", WHERE_Z + ", uncommitted"), ("alpha", None)
        ]  # fmt: skip
        assert found(memories.search("release train noon", mode="lexical", branches="local", limit=2)) == [
            ("alpha", None), ("alpha", WHERE_Z + ", uncommitted")
        ]  # fmt: skip
        # gamma, removed on feat-x, is still main's, marked so; delta, changed on main only, is main's version alone
        gamma = memories.search("legacy cron scheduler", mode="lexical", branches="local")
        assert found(gamma) == [("gamma", None)]
        assert [(m.retriever, m.detail) for m in gamma[0].why if not m.rank] == [("removed", WHERE_X)]
        plain = memories.search("legacy cron scheduler", mode="lexical")
        assert [m.retriever for m in plain[0].why] == ["lexical"]  # without --branches, no survey and no mark
        assert found(memories.search("staging port postgresql", mode="lexical", branches="local")) == [("delta", None)]
        # hybrid runs the same pipeline over both
        hybrid = memories.search("flamegraph profiler perf container", mode="hybrid", branches="local")
        assert found(hybrid)[0] == ("xray", WHERE_X)


def test_the_checkouts_copy_wins_for_the_same_content(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    write(places["wt-y"] / branchkit.MEMORIES, "beta-copy", branchkit.BASE["beta"])  # main's beta, another name
    commit(places["wt-y"], "a copy", "2026-01-07T10:00:00Z")
    with router(places["project"]) as memories:
        hits = memories.search("payment service retries twice", mode="lexical", branches="local")
        assert [name for name, _ in found(hits)].count("beta-copy") == 0
        assert found(hits)[0] == ("beta", None)


def test_configuration_and_the_next_search_after_a_commit_elsewhere(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    toml = '[branches]\ninclude = "local"\nshare = 0.5\n[search]\nrefresh_interval = 0\n'
    with router(places["project"], toml) as memories:
        assert memories.config.branches.include == "local"
        assert found(memories.search("quokka", mode="lexical")) == []
        write(places["wt-y"] / branchkit.MEMORIES, "quokka", "# Quokka\n\nThe quokka service owns the zoo API.\n")
        assert found(memories.search("quokka", mode="lexical")) == [("quokka", WHERE_Y + ", uncommitted")]
        commit(places["wt-y"], "quokka", "2026-01-07T10:00:00Z")
        where = "branch fix-y, worktree ../wt-y, unmerged, 2 commits ahead of main"
        hits = memories.search("quokka", mode="lexical")
        assert found(hits) == [("quokka", where)]
        assert next(m.score for m in hits[0].why if m.retriever == "branch") == 0.5
        assert found(memories.search("quokka", mode="lexical", branches="none")) == []
    # a new process gives the same answer (from the saved survey: nothing changed since)
    with router(places["project"], toml) as memories:
        assert found(memories.search("quokka", mode="lexical")) == [("quokka", where)]


def test_the_cli_search_and_bad_input(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    project = places["project"]
    (project / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n')
    done = cli(project, "search", "--mode", "lexical", "--branches", "local", "flamegraph profiler")
    assert done.returncode == 0, done.stderr
    assert f"why: keywords #1 (flamegraph, profiler); from {WHERE_X}; lexical search" in done.stdout
    as_json = json.loads(cli(project, "search", "--mode", "lexical", "--branches=local", "flamegraph", "--format",
                             "json").stdout)  # fmt: skip
    assert [hit["name"] for hit in as_json["results"]] == ["xray"]
    for bad in (["--branches", "--all"], ["--branches", "all"], ["--branches"]):
        refused = cli(project, "search", "flamegraph", *bad)
        assert refused.returncode == 2 and "--branches" in refused.stderr, refused.stderr
    (project / "memrouter.toml").write_text('[branches]\ninclude = "everything"\n')
    refused = cli(project, "search", "flamegraph")
    assert refused.returncode == 2 and '[branches] include must be "none" or "local"' in refused.stderr


def test_memrouter_branches_reports_each_place_and_the_divergence(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    done = cli(places["project"], "branches")
    assert done.returncode == 0, done.stderr
    head = git(places["project"], "rev-parse", "HEAD").strip()
    assert done.stdout.splitlines() == [
        f"on main ({head[:12]})",
        WHERE_Z, "  changed: alpha (uncommitted)",
        WHERE_X, "  new: draft (uncommitted), xray", "  changed: beta", "  removed: gamma",
        WHERE_Y, "  changed: beta",
        "diverged: beta (feat-x, fix-y)",
    ]  # fmt: skip
    data = json.loads(cli(places["project"], "branches", "--format", "json").stdout)
    x = next(place for place in data["places"] if place["branch"] == "feat-x")
    assert {key: x[key] for key in ("merged", "ahead", "behind", "new", "changed", "removed", "uncommitted")} == {
        "merged": False, "ahead": 2, "behind": 1, "new": ["draft", "xray"], "changed": ["beta"],
        "removed": ["gamma"], "uncommitted": ["draft"],
    }  # fmt: skip
    assert [d["name"] for d in data["diverged"]] == ["beta"]
    assert [(v["where"], v["text"]) for v in data["diverged"][0]["versions"]] == [
        ("feat-x", branchkit.BETA_ON_X), ("fix-y", branchkit.BETA_ON_Y)
    ]  # fmt: skip
    # from feat-x's worktree, this checkout's own beta is one of the two versions
    seen = json.loads(cli(places["wt-x"], "branches", "--format", "json").stdout)
    assert [(v["where"], v["text"]) for v in seen["diverged"][0]["versions"]] == [
        ("this checkout", branchkit.BETA_ON_X), ("fix-y", branchkit.BETA_ON_Y)
    ]  # fmt: skip


def test_detached_removed_by_hand_and_no_commits(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    head = git(places["wt-x"], "rev-parse", "HEAD").strip()
    git(places["project"], "worktree", "add", "-q", "--detach", str(tmp_path / "wt-d"), head)
    shutil.rmtree(places["wt-y"])
    before = sorted(path.name for path in (places["project"] / branchkit.MEMORIES).iterdir())
    done = cli(places["project"], "branches")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert f"detached HEAD {head[:12]}, worktree ../wt-d, unmerged, 2 commits ahead of main" in lines
    assert "branch fix-y, worktree ../wt-y (gone), unmerged, 1 commit ahead of main" in lines
    assert any(line.startswith("note: worktree ") and "wt-y is gone" in line for line in lines)
    searched = cli(places["project"], "search", "--mode", "lexical", "--branches", "local", "never retries caller")
    assert searched.returncode == 0 and "from branch fix-y, worktree ../wt-y (gone)" in searched.stdout
    # the branch index lives in the index folder: the memories folder is as it was
    assert sorted(path.name for path in (places["project"] / branchkit.MEMORIES).iterdir()) == before

    empty, root = git_project(tmp_path / "empty")
    write(root, "solo", "# Solo\n\nNothing committed yet about solo work.\n")
    done = cli(empty, "branches")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "on main (no commit yet)",
        "no other local branch or worktree",
        "note: this checkout has no commit yet: other branches are compared with nothing",
    ]
    searched = cli(empty, "search", "--mode", "lexical", "--branches", "local", "solo work")
    assert searched.returncode == 0 and " 1. solo " in searched.stdout

    outside = tmp_path / "plain"
    (outside / ".serena" / "memories").mkdir(parents=True)
    refused = cli(outside, "branches")
    assert refused.returncode == 2 and "git repository" in refused.stderr


def test_status_the_janitor_and_the_web_ui_report_the_divergence(tmp_path: Path) -> None:
    from starlette.testclient import TestClient

    from memrouter.ui.app import create_app

    places = branchkit.build(tmp_path)
    with router(places["project"]) as memories:
        status = memories.status()
        assert [d["name"] for d in status["diverged"]] == ["beta"]
        assert [(v["where"], v["text"]) for v in status["diverged"][0]["versions"]] == [
            ("feat-x", branchkit.BETA_ON_X), ("fix-y", branchkit.BETA_ON_Y)
        ]  # fmt: skip
        assert (
            "beta changed differently on feat-x and fix-y: `memrouter branches` shows the versions"
            in (status["warnings"])
        )
        report = memories.janitor()
        (proposal,) = [p for p in report.proposals if "diverged" in p.because]
        assert (proposal.action, proposal.name) == ("review", "beta")
        assert proposal.reason == (
            "janitor: beta changed differently on feat-x and fix-y since their merge base; merge the versions "
            "(`memrouter branches`)"
        )
        (finding,) = [f for f in report.findings if f.reason == "diverged"]
        assert [v["text"] for v in finding.evidence["versions"]] == [branchkit.BETA_ON_X, branchkit.BETA_ON_Y]
        applied = memories.janitor(apply=True)
        assert not next(p for p in applied.proposals if p.name == "beta").applied
        assert (places["project"] / branchkit.MEMORIES / "beta.md").read_text() == branchkit.BASE["beta"]
        page = TestClient(create_app(memories, reviewer=None), base_url="http://127.0.0.1:8766").get("/memory/beta")
        assert page.status_code == 200
        assert "Changed differently on two branches" in page.text
        assert "retries three times on timeouts, with jitter" in page.text
        assert "never retries on timeouts: the caller does" in page.text
        assert (
            "Changed differently"
            not in TestClient(create_app(memories, reviewer=None), base_url="http://127.0.0.1:8766")
            .get("/memory/alpha")
            .text
        )


def test_this_checkouts_own_change_and_a_search_as_of_a_commit(tmp_path: Path) -> None:
    import pytest

    from memrouter.core.errors import InvalidInput

    places = branchkit.build(tmp_path)
    toml = '[branches]\ninclude = "local"\n[search]\nrefresh_interval = 0\n'
    with router(places["project"], toml) as memories:
        assert found(memories.search("flamegraph profiler", mode="lexical")) == [("xray", WHERE_X)]
        # this checkout saves the same text by hand (uncommitted): its own copy is the only one
        write(places["project"] / branchkit.MEMORIES, "xray", branchkit.XRAY)
        assert found(memories.search("flamegraph profiler", mode="lexical")) == [("xray", None)]
        # a search as of a commit reads that commit alone, whatever [branches] include says
        assert found(memories.search("payment retries", mode="lexical", as_of="main")) == [("beta", None)]
        with pytest.raises(InvalidInput, match="leave out branches"):
            memories.search("payment retries", mode="lexical", as_of="main", branches="local")
        with pytest.raises(InvalidInput, match="branches must be one of none, local"):
            memories.search("payment retries", branches="--all")


def test_a_hybrid_search_scores_the_other_places_by_meaning_too(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    # a search never embeds here ([embed] on_search = 0): the checkout is indexed first, the branch index is
    # embedded by the search across branches (the checkout's copies from the shared vector file)
    (places["project"] / "memrouter.toml").write_text('[embed]\nmodel = "hash"\non_search = 0\n')
    with Router(Config.load(root=places["project"] / branchkit.MEMORIES), watch=False) as memories:
        memories.refresh(embed=True)
        hits = memories.search("flamegraph profiler perf container", mode="hybrid", branches="local")
        assert found(hits)[0] == ("xray", WHERE_X)
        retrievers = {match.retriever for match in hits[0].why if match.rank}
        assert retrievers == {"lexical", "dense"}, hits[0].why
