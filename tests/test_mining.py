"""Evaluation pairs mined from a real git history (``memrouter eval --from-git``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import commit, git, write

from memrouter.core.errors import InvalidInput
from memrouter.ops.evaluation import load_golden
from memrouter.ops.mining import MiningOptions, mine

MEMORIES = ".serena/memories"


def history(base: Path) -> Path:
    """A repository whose history holds each kind of pair, and each kind of pair to filter out."""
    project = base / "repo"
    root = project / MEMORIES
    root.mkdir(parents=True)
    git(project, "init", "-q", "-b", "main")
    write(root, "payments/retry-policy", "# Retry policy\n\nThe payment suite retries a failed charge twice.\n")
    write(root, "docker-layer-cache", "# Docker layer cache\n\nCopy the lock file before the sources.\n")
    write(root, "beta-notes", "# Beta notes\n\nThe beta opens to ten customers.\n")
    write(root, "old-deploy", "# Old deploy\n\nDeploys ran by hand from a laptop.\n")
    commit(project, "memories: first notes", "2026-01-01T10:00:00Z")
    (project / "ci.yml").write_text("retries: 1\n")
    write(
        root,
        "payments/retry-policy",
        "# Retry policy\n\nThe payment suite retries a failed charge twice.\nFlaky suites run once more.\n",
    )
    commit(project, "fix(ci): quarantine the flaky checkout suite after one rerun (#12)", "2026-01-02T10:00:00Z")
    write(root, "beta-notes", "# Beta notes\n\nThe beta opens to twenty customers.\n")
    commit(project, "Update beta notes", "2026-01-03T10:00:00Z")
    (project / "Dockerfile").write_text("FROM python:3.12\n")
    body = "As `docker-layer-cache` says, copy the lock file first."
    commit(project, f"speed up image builds on the runners\n\n{body}", "2026-01-04T10:00:00Z")
    for n in range(3):
        write(root, "old-deploy", f"# Old deploy\n\nDeploys ran by hand from a laptop ({n}).\n")
        commit(project, f"[auto] sync memories {n}", f"2026-01-05T1{n}:00:00Z")
    write(
        root,
        "old-deploy",
        "# Old deploy\n\nDeploys ran by hand. Rollbacks restored the previous image tag from the registry.\n",
    )
    commit(project, "document how rollbacks restore the previous image tag", "2026-01-06T10:00:00Z")
    (root / "old-deploy.md").unlink()
    commit(project, "drop the old deploy notes", "2026-01-07T10:00:00Z")
    write(
        root,
        "payments/retry-policy",
        "# Retry policy\n\nThe payment suite retries a failed charge twice.\nFlaky suites run once more.\nRefunds are never retried automatically; finance reviews them by hand.\n",
    )
    commit(project, "note the refund exception", "2026-01-08T10:00:00Z")
    return project


def test_pairs_of_each_kind_and_the_filters_are_counted(tmp_path: Path) -> None:
    project = history(tmp_path)
    mined = mine(project, MiningOptions(snapshots=2))
    by_kind = {kind: [p for p in mined.pairs if p.kind == kind] for kind in ("commit", "mention", "revision")}
    assert [p.query for p in by_kind["commit"]] == [
        "quarantine the flaky checkout suite after one rerun",  # the type and the pull request left out
        "note the refund exception",
    ]
    assert [p.expected for p in by_kind["mention"]] == [("docker-layer-cache",)]
    assert by_kind["mention"][0].query == "speed up image builds on the runners"
    revision = {p.expected[0]: p.query for p in by_kind["revision"]}
    assert revision["payments/retry-policy"] == "Flaky suites run once more."  # the first new line after the snapshot
    assert revision["beta-notes"] == "The beta opens to twenty customers."
    counts = mined.counts
    assert counts["commit"]["trivial"] == 1  # "Update beta notes" repeats the memory's name
    assert counts["commit"]["generic"] == 3  # the [auto] commits
    assert counts["commit"]["gone"] == 1  # the rollback note was deleted before any later snapshot
    for kind, found in counts.items():
        dropped = sum(found[reason] for reason in ("trivial", "generic", "gone", "crowded", "duplicate"))
        assert found["mined"] == dropped + found["kept"] == dropped + len(by_kind[kind])
    assert len(mined.snapshots) == 2
    snapshots = {s.commit for s in mined.snapshots}
    assert {p.snapshot for p in mined.pairs} <= snapshots


def test_a_pair_is_asked_of_a_snapshot_that_holds_its_memory(tmp_path: Path) -> None:
    project = history(tmp_path)
    mined = mine(project, MiningOptions(snapshots=3))
    from memrouter.ops.mining import snapshot_texts

    for pair in mined.pairs:
        texts = snapshot_texts(project, pair.snapshot, MEMORIES)
        assert set(pair.expected) <= set(texts)
        if pair.kind == "revision":
            assert pair.query not in " ".join(" ".join(t.split()) for t in texts.values())


def test_eval_from_git_scores_the_pairs_by_kind(tmp_path: Path) -> None:
    project = history(tmp_path)
    saved = tmp_path / "mined.json"
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "eval", "--from-git", str(project), "--mode", "lexical", "--snapshots", "2",
         "--save", str(saved), "--format", "json"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["mode"] == "lexical" and report["mined"]["commit"]["trivial"] == 1
    assert set(report["by_kind"]) == {"commit", "mention", "revision"}
    assert report["overall"]["queries"] == sum(k["kept"] for k in report["mined"].values())
    assert {"recall@1", "recall@5", "recall@10", "mrr@10", "ndcg@10"} <= set(report["overall"])
    assert len(load_golden(saved)) == report["overall"]["queries"]  # the saved pairs are a golden file
    text = subprocess.run(
        [sys.executable, "-m", "memrouter", "eval", "--from-git", str(project), "--mode", "lexical", "--snapshots", "2"],
        capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert "commit: mined" in text.stdout and "filtered: trivial 1" in text.stdout and "mrr@10" in text.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--from-git", "{tmp}"],
        ["--from-git", "{repo}", "dataset.json"],
        [],
        ["--from-git", "{repo}", "--folder", "docs"],
    ],
)
def test_bad_input_is_exit_2(tmp_path: Path, args: list[str]) -> None:
    project = history(tmp_path)
    (tmp_path / "plain").mkdir()
    argv = [a.format(tmp=tmp_path / "plain", repo=project) for a in args]
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "eval", *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 2, done.stderr


def test_mining_refuses_what_is_not_a_repository(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="is not a git repository"):
        mine(tmp_path)
    with pytest.raises(InvalidInput, match="snapshots"):
        MiningOptions(snapshots=0)
