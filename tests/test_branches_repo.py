"""``memrouter.repo.branches``: what the other branches and worktrees hold, read with git plumbing only."""

from __future__ import annotations

import shutil
from pathlib import Path

import branchkit
from helpers import commit, git, git_project, write

from memrouter.repo.branches import fingerprint, survey

FOLDER = ".serena/memories"


def summary(found: object) -> dict[str, object]:
    return {
        place.label: {
            "worktree": place.worktree.name if place.worktree else None,
            "ahead": place.ahead,
            "behind": place.behind,
            "merged": place.merged,
            "changes": [(c.path, c.change, c.uncommitted, c.diverged) for c in place.changes],
        }
        for place in found.places  # type: ignore[attr-defined]
    }


def test_survey_of_the_fixture_repository(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    found = survey(places["project"], FOLDER)
    assert found.branch == "main" and found.notes == ()
    assert summary(found) == {
        "docs-z": {"worktree": "wt-z", "ahead": 0, "behind": 1, "merged": True,
                   "changes": [("alpha.md", "changed", True, False)]},
        "feat-x": {"worktree": "wt-x", "ahead": 2, "behind": 1, "merged": False,
                   "changes": [("beta.md", "changed", False, False), ("draft.md", "new", True, False),
                               ("gamma.md", "removed", False, False), ("xray.md", "new", False, False)]},
        "fix-y": {"worktree": "wt-y", "ahead": 1, "behind": 1, "merged": False,
                  "changes": [("beta.md", "changed", False, False)]},
    }  # fmt: skip
    x = next(place for place in found.places if place.branch == "feat-x")
    texts = {change.path: change.data for change in x.changes}
    assert texts == {"beta.md": branchkit.BETA_ON_X.encode(), "draft.md": branchkit.DRAFT.encode(),
                     "gamma.md": None, "xray.md": branchkit.XRAY.encode()}  # fmt: skip
    # delta changed on main only: feat-x holds an older version, not something main lacks


def test_seen_from_a_worktree_both_changes_of_beta_diverge(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    found = survey(places["wt-x"], FOLDER)
    assert found.branch == "feat-x"
    y = next(place for place in found.places if place.branch == "fix-y")
    assert [(c.path, c.change, c.diverged) for c in y.changes] == [("beta.md", "changed", True)]
    main = next(place for place in found.places if place.branch == "main")
    assert (main.ahead, main.behind) == (1, 2)
    # main changed delta; it never had draft or xray; gamma: main still has it, feat-x removed it (ours)
    assert [(c.path, c.change) for c in main.changes] == [("delta.md", "changed")]


def test_a_detached_worktree_is_a_place_of_its_own(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    head = git(places["wt-x"], "rev-parse", "HEAD").strip()
    git(places["project"], "worktree", "add", "-q", "--detach", str(tmp_path / "wt-d"), head)
    found = survey(places["project"], FOLDER)
    detached = [place for place in found.places if place.branch is None]
    assert len(detached) == 1 and detached[0].label == f"detached {head[:12]}"
    assert detached[0].worktree is not None and detached[0].worktree.name == "wt-d"
    assert [c.path for c in detached[0].changes] == ["beta.md", "gamma.md", "xray.md"]


def test_a_worktree_removed_by_hand_keeps_its_branch(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    shutil.rmtree(places["wt-y"])
    found = survey(places["project"], FOLDER)
    y = next(place for place in found.places if place.branch == "fix-y")
    assert y.missing and [c.path for c in y.changes] == ["beta.md"]
    assert any("wt-y is gone" in note for note in found.notes)


def test_a_repository_without_commits(tmp_path: Path) -> None:
    project, root = git_project(tmp_path)
    write(root, "solo", "# Solo\n\nNothing committed yet.\n")
    found = survey(project, FOLDER)
    assert found.places == () and found.head is None
    assert found.ours == {"solo.md": found.ours["solo.md"]}
    assert "no commit yet" in found.notes[0]


def test_the_fingerprint_follows_commits_and_files(tmp_path: Path) -> None:
    places = branchkit.build(tmp_path)
    common = places["project"] / ".git"
    folders = [places[name] / branchkit.MEMORIES for name in ("wt-x", "wt-y", "wt-z")]
    first = fingerprint(common, folders)
    assert fingerprint(common, folders) == first
    write(places["wt-y"] / branchkit.MEMORIES, "yankee", "# Yankee\n\nNew.\n")
    second = fingerprint(common, folders)
    assert second != first
    commit(places["wt-y"], "yankee", "2026-01-07T10:00:00Z")
    assert fingerprint(common, folders) != second
