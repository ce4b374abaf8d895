"""The pre-commit hook in real git repositories: it queues, chains, never blocks; the queue drains."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from sync.synchelp import git, http_toml, live_by_context, make_project

from memrouter import Router
from memrouter.cli import main
from memrouter.external.backends.forgetful import ForgetfulBackend
from memrouter.external.sync.hook import CHAINED_NAME, HOOK_MARKER, install_hook, uninstall_hook
from memrouter.external.sync.queue import QUEUE_FILE, read_queue, staged_changes
from memrouter.external.sync.queue_hook import parse_name_status
from memrouter.testing.servers import FakeServer, free_port


def memories_root(project: Path) -> Path:
    return project / ".serena" / "memories"


def queue_of(project: Path) -> list[dict[str, object]]:
    return read_queue(project / ".memrouter" / QUEUE_FILE)


def stage_four_kinds_of_change(project: Path) -> None:
    root = memories_root(project)
    (root / "new-note.md").write_text("# New note\n\nSomething new.\n")
    (root / "ci" / "flaky-tests.md").write_text("# Flaky tests in CI\n\nRetry twice now.\n")
    git(project, "rm", "-q", ".serena/memories/plain-no-heading.md")
    (root / "archive").mkdir()
    git(project, "mv", ".serena/memories/incidents/flaky-tests.md", ".serena/memories/archive/flaky.md")
    (project / "README.txt").write_text("not a memory\n")
    git(project, "add", "-A")


EXPECTED = [
    {"op": "rename", "name": "archive/flaky", "old": "incidents/flaky-tests"},
    {"op": "upsert", "name": "ci/flaky-tests"},
    {"op": "upsert", "name": "new-note"},
    {"op": "delete", "name": "plain-no-heading"},
]


def _strip(entries: list[dict[str, object]]) -> list[dict[str, object]]:
    return sorted(({k: v for k, v in e.items() if k != "at"} for e in entries), key=lambda e: str(e["name"]))


def test_parse_name_status_keeps_memories_only() -> None:
    output = "\0".join(
        ["M", "docs/x.md", "A", "mem/a.md", "D", "mem/sub/b.md", "R097", "mem/c.md", "mem/d/c.md",
         "R100", "mem/e.md", "elsewhere/e.md", "R100", "other/f.md", "mem/f.md", "A", "mem/.hidden.md",
         "M", "mem/notes.txt", ""]
    )  # fmt: skip
    assert parse_name_status(output, "mem") == [
        {"op": "upsert", "name": "a"},
        {"op": "delete", "name": "sub/b"},
        {"op": "rename", "name": "d/c", "old": "c"},
        {"op": "delete", "name": "e"},
        {"op": "upsert", "name": "f"},
    ]


def test_commit_queues_staged_changes_atomically(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    result = install_hook(memories_root(project), project / ".memrouter" / QUEUE_FILE)
    assert result.action == "installed" and HOOK_MARKER in result.hook.read_text()
    stage_four_kinds_of_change(project)
    assert _strip([{"op": c.op, "name": c.name, **({"old": c.old} if c.old else {})}
                   for c in staged_changes(memories_root(project))]) == EXPECTED  # fmt: skip
    git(project, "commit", "-q", "-m", "change memories")
    assert _strip(queue_of(project)) == EXPECTED
    assert not [p for p in (project / ".memrouter").iterdir() if p.name.endswith(".tmp")]
    # a second commit touching the same memory keeps one entry for it
    (memories_root(project) / "new-note.md").write_text("# New note\n\nEdited.\n")
    git(project, "commit", "-qam", "edit again")
    assert len(queue_of(project)) == 4


def test_hook_never_blocks_a_commit_when_python_or_memrouter_is_broken(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    install_hook(memories_root(project), project / ".memrouter" / QUEUE_FILE, python="/nonexistent/python")
    hooks = Path(git(project, "rev-parse", "--git-path", "hooks").strip())
    hooks = hooks if hooks.is_absolute() else project / hooks
    (memories_root(project) / "a.md").write_text("# A\n")
    git(project, "add", "-A")
    env = {**os.environ, "PATH": "/nonexistent"}  # no python3 either
    git_path = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    done = subprocess.run([git_path, "commit", "-q", "-m", "no python"], cwd=project, env=env,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    # a broken helper (memrouter half-installed) still lets the commit through
    (hooks / "memrouter_queue.py").write_text("raise SystemExit(7)\n")
    (memories_root(project) / "b.md").write_text("# B\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "broken helper")
    # an unwritable queue location too
    install_hook(memories_root(project), Path("/proc/memrouter-no/queue.json"))
    (memories_root(project) / "c.md").write_text("# C\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "unwritable queue")
    assert git(project, "log", "--oneline").count("\n") == 4


def test_existing_hook_is_chained_and_restored(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    hooks = project / ".git" / "hooks"
    original = '#!/bin/sh\necho ran >> "$(git rev-parse --show-toplevel)/chained.log"\nexit 0\n'
    (hooks / "pre-commit").write_text(original)
    (hooks / "pre-commit").chmod(0o755)
    result = install_hook(memories_root(project), project / ".memrouter" / QUEUE_FILE)
    assert result.chained == hooks / CHAINED_NAME
    assert install_hook(memories_root(project), project / ".memrouter" / QUEUE_FILE).action == "updated"
    (memories_root(project) / "x.md").write_text("# X\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "x")
    assert (project / "chained.log").read_text() == "ran\n"
    assert [e["name"] for e in queue_of(project)] == ["x"]
    # the chained hook's verdict is kept
    (hooks / CHAINED_NAME).write_text("#!/bin/sh\nexit 1\n")
    (memories_root(project) / "y.md").write_text("# Y\n")
    git(project, "add", "-A")
    assert subprocess.run(["git", "commit", "-q", "-m", "y"], cwd=project, capture_output=True).returncode == 1
    (hooks / CHAINED_NAME).write_text(original)
    assert uninstall_hook(memories_root(project)).action == "removed (earlier hook restored)"
    assert (hooks / "pre-commit").read_text() == original
    assert not (hooks / "memrouter_queue.py").exists() and not (hooks / "__pycache__").exists()
    assert uninstall_hook(memories_root(project)).action == "not installed"
    assert (hooks / "pre-commit").read_text() == original


def test_cli_hook_install_and_drain_queue(tmp_path: Path, fake_http: FakeServer, inspector: ForgetfulBackend,
                                          monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    project = make_project(tmp_path, http_toml(fake_http.url))
    monkeypatch.chdir(project)
    runner = CliRunner()
    done = runner.invoke(main, ["hook", "install", "--format", "json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["action"] == "installed"
    assert runner.invoke(main, ["sync"]).exit_code == 0
    stage_four_kinds_of_change(project)
    git(project, "commit", "-q", "-m", "change memories")
    assert len(queue_of(project)) == 4

    done = runner.invoke(main, ["sync", "--from-queue", "--format", "json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)["backends"][0]
    assert report["renamed"] == [["incidents/flaky-tests", "archive/flaky"]]
    assert report["created"] == 1 and report["obsoleted"] == 1
    assert queue_of(project) == []
    live = live_by_context(inspector, project)
    assert "memrouter:plain-no-heading" not in live and len(live["memrouter:archive/flaky"]) == 1
    with Router.open(root=memories_root(project), watch=False) as router:
        assert router.validate()[0].in_sync == 6
    assert runner.invoke(main, ["hook", "uninstall"]).exit_code == 0


def test_drain_with_the_service_down_keeps_the_queue_and_exits_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project(tmp_path, http_toml(f"http://127.0.0.1:{free_port()}/mcp"))
    monkeypatch.chdir(project)
    runner = CliRunner()
    assert runner.invoke(main, ["hook", "install"]).exit_code == 0
    stage_four_kinds_of_change(project)
    git(project, "commit", "-q", "-m", "change memories")
    done = runner.invoke(main, ["sync", "--from-queue"])
    assert done.exit_code == 3
    assert "unavailable" in done.stderr and "Traceback" not in done.output
    assert len(queue_of(project)) == 4
