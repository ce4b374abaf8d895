"""The merge driver for memory files: field by field, the body line by line, run by a real `git merge`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import git, git_project

from memrouter.ops.memory_merge import merge_memory
from memrouter.ops.merge_setup import COMMENT, DRIVER, install_merge_driver, uninstall_merge_driver
from memrouter.repo.merge import driver_config

BODY = "".join(f"line {n}\n" for n in range(1, 11))


def memory(front: str, body: str = BODY) -> bytes:
    return f"---\n{front}---\n{body}".encode()


def changed(body: str, number: int, text: str) -> str:
    return body.replace(f"line {number}\n", f"{text}\n")


def memrouter(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "memrouter", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_fields_merge_by_their_own_rules() -> None:
    base = memory("tags: [a, b]\nupdated: 2026-01-01\nstatus: active\nowner: x\nvalid_from: 2026-01-01\n")
    ours = memory("tags: [a, b, c]\nupdated: 2026-02-01\nstatus: pending_review\nowner: x\n"
                  "valid_from: 2026-05-01\n", changed(BODY, 2, "ours 2"))  # fmt: skip
    theirs = memory("tags: [a, d]\nupdated: 2026-03-01\nstatus: obsolete\nowner: y\nvalid_from: 2026-04-01\n",
                    changed(BODY, 9, "theirs 9"))  # fmt: skip
    outcome = merge_memory(base, ours, theirs)
    assert outcome.clean and outcome.plain_reason is None
    expected_front = "tags:\n- a\n- c\n- d\nupdated: 2026-03-01\nstatus: obsolete\nowner: y\nvalid_from: 2026-05-01\n"
    assert outcome.data.decode() == f"---\n{expected_front}---\n" + changed(changed(BODY, 2, "ours 2"), 9, "theirs 9")


def test_an_untouched_field_keeps_its_text_and_a_new_field_comes_in() -> None:
    base = memory("title: 'Quoted'  # a comment\nreviewers: [bob]\n")
    ours = memory("title: 'Quoted'  # a comment\nreviewers: [bob]\nkind: adr\n")
    theirs = memory("title: 'Quoted'  # a comment\nreviewers: [bob, eve]\n")
    outcome = merge_memory(base, ours, theirs)
    assert outcome.clean
    assert outcome.data.decode() == memory("title: 'Quoted'  # a comment\nreviewers: [bob, eve]\nkind: adr\n").decode()


def test_a_field_both_sides_changed_differently_is_a_conflict_with_both_versions() -> None:
    base = memory("owner: x\ntags: [a]\n")
    ours = memory("owner: ours-owner\ntags: [a]\n")
    theirs = memory("owner: their-owner\ntags: [a]\n")
    outcome = merge_memory(base, ours, theirs)
    assert outcome.field_conflicts == ("owner",) and not outcome.body_conflicts
    text = outcome.data.decode()
    assert "<<<<<<< ours\nowner: ours-owner\n=======\nowner: their-owner\n>>>>>>> theirs\n" in text
    assert text.endswith(BODY)


def test_a_field_one_side_removed_goes_and_a_status_nobody_knows_follows_the_field_rule() -> None:
    outcome = merge_memory(memory("owner: x\nstatus: draft\n"), memory("status: draft\n"),
                           memory("owner: x\nstatus: wip\n"))  # fmt: skip
    assert outcome.clean and outcome.data.decode() == memory("status: wip\n").decode()
    clash = merge_memory(memory("status: draft\n"), memory("status: done\n"), memory("status: wip\n"))
    assert clash.field_conflicts == ("status",)


@pytest.mark.parametrize(
    ("base", "ours", "theirs", "reason"),
    [
        (memory("a: 1\n"), memory("a: [1\n"), memory("a: 1\n"), "ours: invalid YAML"),
        (memory("a: 1\n"), memory("a: 1\n"), memory("- a\n"), "theirs: front matter is not a mapping"),
        (memory("a: 1\n"), b"---\na: 2\nline 1\n", memory("a: 1\n"), "ours: the front matter block is not closed"),
        (b"plain\n", b"plain\nours\n", b"plain\n", "no front matter"),
        (b"\xff\n", b"\xff\nours\n", b"\xff\n", "not UTF-8 text"),
    ],
)
def test_input_that_is_not_a_readable_memory_gets_the_plain_merge(
    base: bytes, ours: bytes, theirs: bytes, reason: str
) -> None:
    outcome = merge_memory(base, ours, theirs)
    assert outcome.plain_reason is not None and outcome.plain_reason.startswith(reason)
    assert outcome.data == (ours if ours != base else theirs) and outcome.clean  # the side that changed


def test_a_broken_side_never_loses_the_other() -> None:
    outcome = merge_memory(memory("a: 1\n"), memory("a: 2\n"), memory("a: [3\n"))
    assert outcome.plain_reason is not None and outcome.body_conflicts == 1
    assert "a: 2\n" in outcome.data.decode() and "a: [3\n" in outcome.data.decode()


def branches(project: Path, files: dict[str, tuple[bytes, bytes, bytes]]) -> None:
    """Commit each file's base on main, ours on main, theirs on feat (branched from the base)."""
    for index, version in ((0, "base"), (2, "theirs"), (1, "ours")):
        if version == "ours":
            git(project, "checkout", "-q", "main")
        for name, texts in files.items():
            path = project / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(texts[index])
        git(project, "add", "-A")
        git(project, "commit", "-q", "-m", version)
        if version == "base":
            git(project, "checkout", "-q", "-b", "feat")


def test_a_real_git_merge_uses_the_driver_for_memories_only(tmp_path: Path) -> None:
    project, _ = git_project(tmp_path)
    git(project, "config", "user.email", "ada@example.com")
    git(project, "config", "user.name", "Ada")
    done = memrouter(project, "hook", "install", "--only", "merge-driver")
    assert done.returncode == 0, done.stderr
    assert ".serena/memories/**/*.md merge=memrouter" in (project / ".gitattributes").read_text()
    mem = ".serena/memories/"
    files = {
        # clean: tags, the later updated, the stricter status, each body change from its side
        f"{mem}alpha.md": (
            memory("tags: [a, b]\nupdated: 2026-01-01\nstatus: active\n"),
            memory("tags: [a, b, c]\nupdated: 2026-02-01\nstatus: active\n", changed(BODY, 2, "ours 2")),
            memory("tags: [a, d]\nupdated: 2026-03-01\nstatus: obsolete\n", changed(BODY, 9, "theirs 9")),
        ),
        # a conflict in the body only on line 5, which both changed; lines 1 and 9 merge
        f"{mem}team/beta.md": (
            memory("tags: [a]\n"),
            memory("tags: [a, x]\n", changed(changed(BODY, 1, "ours 1"), 5, "ours 5")),
            memory("tags: [a, y]\n", changed(changed(BODY, 5, "theirs 5"), 9, "theirs 9")),
        ),
        # broken front matter on one side: the plain merge, with both sides
        f"{mem}broken.md": (memory("a: 1\n"), memory("a: 2\n"), memory("a: [3\n")),
        # not memories: git's own merge (its markers name the branches)
        f"{mem}notes.txt": (b"one\ntwo\n", b"one\nours\n", b"one\ntheirs\n"),
        "src/app.py": (b"x = 1\n", b"x = 2\n", b"x = 3\n"),
    }
    branches(project, files)
    merged = subprocess.run(["git", "merge", "-q", "feat"], cwd=project, capture_output=True, text=True)
    assert merged.returncode == 1
    unmerged = set(git(project, "diff", "--name-only", "--diff-filter=U").split())
    assert unmerged == {f"{mem}team/beta.md", f"{mem}broken.md", f"{mem}notes.txt", "src/app.py"}

    alpha = (project / mem / "alpha.md").read_text()
    assert alpha == memory("tags:\n- a\n- c\n- d\nupdated: 2026-03-01\nstatus: obsolete\n",
                           changed(changed(BODY, 2, "ours 2"), 9, "theirs 9")).decode()  # fmt: skip
    beta = (project / mem / "team/beta.md").read_text()
    body = changed(changed(BODY, 1, "ours 1"), 9, "theirs 9")
    body = body.replace("line 5\n", "<<<<<<< ours\nours 5\n=======\ntheirs 5\n>>>>>>> theirs\n")
    assert beta == memory("tags:\n- a\n- x\n- y\n", body).decode()
    broken = (project / mem / "broken.md").read_text()
    assert "a: 2\n" in broken and "a: [3\n" in broken and "<<<<<<< ours" in broken
    for name in (f"{mem}notes.txt", "src/app.py"):
        text = (project / name).read_text()
        assert "<<<<<<< HEAD" in text and ">>>>>>> feat" in text  # git's merge, not the driver's labels
    # git kept every side of the conflicted memories in its index
    assert git(project, "show", f":2:{mem}broken.md") == "---\na: 2\n---\n" + BODY
    assert git(project, "show", f":3:{mem}broken.md") == "---\na: [3\n---\n" + BODY


def test_a_driver_whose_python_is_gone_leaves_git_s_own_merge_with_both_sides(tmp_path: Path) -> None:
    project, root = git_project(tmp_path)
    git(project, "config", "user.email", "ada@example.com")
    git(project, "config", "user.name", "Ada")
    install_merge_driver(root, python=str(tmp_path / "moved-venv" / "bin" / "python"))  # not there
    mem = ".serena/memories/"
    branches(project, {f"{mem}gamma.md": (
        memory("tags: [a]\n"),
        memory("tags: [a]\n", changed(changed(BODY, 1, "ours 1"), 5, "ours 5")),
        memory("tags: [a]\n", changed(changed(BODY, 5, "theirs 5"), 9, "theirs 9")),
    )})  # fmt: skip
    merged = subprocess.run(["git", "merge", "-q", "feat"], cwd=project, capture_output=True, text=True)
    assert merged.returncode == 1
    gamma = (project / mem / "gamma.md").read_text()
    assert "ours 1\n" in gamma and "theirs 9\n" in gamma  # the lines one side changed, from each side
    assert "<<<<<<< ours\nours 5\n=======\ntheirs 5\n>>>>>>> theirs\n" in gamma


def test_install_is_idempotent_and_uninstall_removes_only_its_own(tmp_path: Path) -> None:
    project, root = git_project(tmp_path)
    (project / ".gitattributes").write_text("*.png binary\n")
    first = install_merge_driver(root, python="/usr/bin/python3")
    assert first.action == "installed"
    assert driver_config(project, DRIVER)["driver"].startswith(
        "/usr/bin/python3 -m memrouter hook --merge-driver %O %A %B %P || "
    )
    assert install_merge_driver(root, python="/usr/bin/python3").action == "already installed"
    assert (project / ".gitattributes").read_text() == (
        f"*.png binary\n{COMMENT}\n.serena/memories/**/*.md merge=memrouter\n"
    )
    assert uninstall_merge_driver(root).action == "removed"
    assert (project / ".gitattributes").read_text() == "*.png binary\n"
    assert driver_config(project, DRIVER) == {}
    assert uninstall_merge_driver(root).action == "not installed"
    install_merge_driver(root)
    (project / ".gitattributes").unlink()
    (project / ".gitattributes").write_text(f"{COMMENT}\n.serena/memories/**/*.md merge=memrouter\n")
    uninstall_merge_driver(root)
    assert not (project / ".gitattributes").exists()


def test_the_command_line(tmp_path: Path) -> None:
    project, _ = git_project(tmp_path)
    assert memrouter(project, "hook").returncode == 2
    assert memrouter(project, "hook", "install", "--merge-driver", "a", "b", "c", "d").returncode == 2
    for name, data in (("base", b"---\na: 1\n---\nx\n"), ("ours", b"---\na: 2\n---\nx\n"),
                       ("theirs", b"---\na: 3\n---\nx\n")):  # fmt: skip
        (tmp_path / name).write_bytes(data)
    done = memrouter(project, "hook", "--merge-driver", *(str(tmp_path / n) for n in ("base", "ours", "theirs")),
                     "m.md")  # fmt: skip
    assert done.returncode == 1 and "m.md: both sides changed a" in done.stderr
    assert b"<<<<<<< ours\na: 2\n=======\na: 3\n>>>>>>> theirs\n" in (tmp_path / "ours").read_bytes()
    done = memrouter(project, "hook", "install", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert '"merge_driver"' in done.stdout and os.access(project / ".gitattributes", os.R_OK)
    assert memrouter(project, "hook", "uninstall").returncode == 0
    assert not (project / ".gitattributes").exists()
