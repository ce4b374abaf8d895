"""Reading a repository's path history from ``git log`` while other work goes on."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from memrouter.repo.history import PathHistory, finish_log, start_log


def test_git_log_runs_to_its_end_before_anyone_collects_it(tmp_path: Path) -> None:
    """The log of a commit touching 3,000 files is far larger than a pipe's buffer: git must not wait for
    ``finish_log`` to read it (that would leave it stopped while the caller does its other work)."""
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    for number in range(3000):
        (repo / "src" / f"a-rather-long-module-name-for-the-log-{number:05}.py").write_text(f"X = {number}\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "many"],
        check=True,
    )
    running = start_log(repo, None, "HEAD")
    deadline = time.monotonic() + 60
    while running.process.poll() is None:  # nobody has called finish_log yet
        assert time.monotonic() < deadline, "git log stopped, waiting for its output to be read"
        time.sleep(0.01)
    output = finish_log(running)
    assert len(output) > 1 << 17
    history = PathHistory()
    history.extend(output)
    assert history.last == 1
    assert all(history.known(f"src/a-rather-long-module-name-for-the-log-{n:05}.py") for n in (0, 1234, 2999))


def test_a_running_log_that_is_not_wanted_is_stopped(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("a\n")
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-qm", "a"],
        check=True,
    )
    running = start_log(repo, None, "HEAD")
    running.stop()
    assert running.process.returncode is not None
    assert not any(reader.is_alive() for reader in running.readers)
