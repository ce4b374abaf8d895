"""Pixeltable homes and memrouter projects on them, for the tests run inside ``interop/.work/pixeltable-venv``.

These tests run in that venv (Python 3.11, pixeltable 0.7.21, this memrouter
editable), started by ``interop/run.sh``. Pixeltable runs in-process on the
PostgreSQL it bundles, which it never stops: every home made here has its
postmaster stopped by its PID when the test (or the session) ends, and
recorded in the pid folder meanwhile. A home is a new folder directly under
the system's temporary folder: as root, Pixeltable runs PostgreSQL as its own
``pgserver`` user, which must reach it.

Pixeltable has one home per process: the tests of this process share one
(``session_home``, tables told apart by name, its PostgreSQL set up by a
process of its own first); the fault tests run memrouter in subprocesses
(``memrouter`` the CLI, or a script) on homes of their own.
Nothing here skips: a Pixeltable that does not start fails the test.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memrouter.core.processes import process_alive

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT.parent / "shared" / "corpora"
PIDS = Path(os.environ.get("INTEROP_WORK", ROOT / "interop" / ".work")) / "pids"

# Pixeltable's PostgreSQL package asks platformdirs for a runtime folder when it is imported (by the test
# modules, before any fixture runs), and platformdirs warns without a private one: give it one.
_runtime = os.environ.get("XDG_RUNTIME_DIR")
if not _runtime or not os.path.isdir(_runtime) or os.stat(_runtime).st_mode & 0o077:
    _private = PIDS.parent / "runtime"
    _private.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.environ["XDG_RUNTIME_DIR"] = str(_private)


class PixeltableHome:
    """A Pixeltable home folder; ``stop`` stops the PostgreSQL Pixeltable left running in it."""

    def __init__(self) -> None:
        self.path = Path(tempfile.mkdtemp(prefix="memrouter-pxt-"))
        self.path.chmod(0o755)

    @property
    def pid_file(self) -> Path:
        return self.path / "pgdata" / "postmaster.pid"

    def postmaster(self) -> int | None:
        """The running postmaster's PID (recorded in the pid folder), or None."""
        try:
            pid = int(self.pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        if not process_alive(pid):
            return None
        PIDS.mkdir(parents=True, exist_ok=True)
        (PIDS / str(pid)).write_text(f"postgres pixeltable {self.path}")
        return pid

    def kill_postmaster(self) -> int:
        """SIGKILL the postmaster, as a crash would; its PID."""
        pid = self.postmaster()
        assert pid is not None, f"no PostgreSQL runs in {self.path}"
        _end(pid, signal.SIGKILL)
        return pid

    def stop(self) -> None:
        pid = self.postmaster()
        if pid is not None:
            _end(pid, signal.SIGINT)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.path, ignore_errors=True)


def _end(pid: int, sig: int) -> None:
    for current, patience in ((sig, 30.0), (signal.SIGKILL, 5.0)):
        if not process_alive(pid):
            break
        os.kill(pid, current)
        deadline = time.monotonic() + patience
        while process_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    (PIDS / str(pid)).unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """No MEMROUTER_* or PIXELTABLE_* from outside."""
    for name in list(os.environ):
        if name.startswith(("MEMROUTER_", "PIXELTABLE_")):
            monkeypatch.delenv(name)


START = """
import sys
from pathlib import Path
from memrouter.external.backends.pixeltable_store import open_pixeltable
open_pixeltable(Path(sys.argv[1]))
"""


def _start(home: PixeltableHome) -> str | None:
    """Start Pixeltable on ``home`` in a new process: None, or what it printed when it failed."""
    done = subprocess.run([sys.executable, "-c", START, str(home.path)], capture_output=True, text=True,
                          timeout=300, env=subprocess_env(), check=False)  # fmt: skip
    home.postmaster()  # recorded in the pid folder, for run.sh should this process be killed
    return None if done.returncode == 0 else done.stderr.strip()[-1500:]


def started_home() -> PixeltableHome:
    """A new home with its PostgreSQL set up and running, started by a new process (Pixeltable leaves it up).

    Setting up a PostgreSQL (initdb) is the part of a Pixeltable start that is not memrouter's: a first
    failure is tried once more on a new home, and written to ``pixeltable-retries.log`` in the interop
    work folder, which ``interop/run.sh`` prints. A second failure fails the tests that need the home.
    """
    home = PixeltableHome()
    failed = _start(home)
    if failed is None:
        return home
    home.remove()
    with (PIDS.parent / "pixeltable-retries.log").open("a", encoding="utf-8") as log:
        log.write(f"{time.strftime('%H:%M:%S')} pid {os.getpid()}: Pixeltable did not start:\n{failed}\n\n")
    home = PixeltableHome()
    failed = _start(home)
    if failed is not None:
        home.remove()
        raise AssertionError(f"Pixeltable did not start, twice; the second time:\n{failed}")
    return home


@pytest.fixture(scope="session")
def session_home() -> Iterator[PixeltableHome]:
    """The Pixeltable home of this test process (one per process), its PostgreSQL already running."""
    home = started_home()
    try:
        yield home
    finally:
        home.remove()


@pytest.fixture
def own_home() -> Iterator[PixeltableHome]:
    """A home of the test's own, for memrouter run in subprocesses."""
    home = PixeltableHome()
    try:
        yield home
    finally:
        home.remove()


def pixeltable_toml(home: Path, table: str | None = None, embedder: str = "hash") -> str:
    lines = ["[backends.pixeltable]", f'home = "{home}"', f'embedder = "{embedder}"', "health_ttl = 30"]
    if table is not None:
        lines.append(f'table = "{table}"')
    return "\n".join(lines) + "\n"


def git(project: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)


def make_project(
    base: Path, toml: str, *, corpus: str | None = None, memories: dict[str, str] | None = None, limit: int = 0
) -> Path:
    """A git repository with ``memrouter.toml``; its memories from a corpus (the first ``limit``) or given."""
    project = base / f"proj-{uuid.uuid4().hex[:8]}"
    root = project / ".serena" / "memories"
    root.mkdir(parents=True)
    if corpus is not None:
        source = CORPORA / corpus
        assert source.is_dir(), f"the corpus is not here: {source}"
        files = sorted(source.rglob("*.md"))
        for file in files[:limit] if limit else files:
            target = root / file.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(file, target)
    for name, text in (memories or {}).items():
        path = root / f"{name}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (project / "memrouter.toml").write_text(toml, encoding="utf-8")
    (project / ".gitignore").write_text(".memrouter/\n", encoding="utf-8")
    for args in (("init", "-q", "-b", "main"), ("config", "user.email", "test@example.com"),
                 ("config", "user.name", "Test"), ("config", "commit.gpgsign", "false"), ("add", "-A"),
                 ("commit", "-q", "-m", "memories")):  # fmt: skip
        git(project, *args)
    return root


def subprocess_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMROUTER_", "PIXELTABLE_"))}


def memrouter(root: Path, *args: str, timeout: float = 600) -> tuple[int, dict[str, Any]]:
    """``memrouter --root <root> <args> --format json`` in a new process: its exit code and JSON answer."""
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "--root", str(root), *args, "--format", "json"],
        capture_output=True, text=True, timeout=timeout, env=subprocess_env(), check=False,
    )  # fmt: skip
    try:
        return done.returncode, json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"memrouter {' '.join(args)} ({done.returncode}) printed no JSON:\n"
                             f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}") from None  # fmt: skip


def start_memrouter(root: Path, *args: str) -> subprocess.Popen[str]:
    """``memrouter --root <root> <args>`` started in a new process (for killing it mid-run)."""
    return subprocess.Popen(
        [sys.executable, "-m", "memrouter", "--root", str(root), *args, "--format", "json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env(),
    )  # fmt: skip


def synced_count(root: Path, backend: str = "pixeltable") -> int:
    """How many memories the project's index maps to a remote copy (read while a sync runs)."""
    index = root.parent.parent / ".memrouter" / "index.sqlite"
    if not index.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{index}?mode=ro", uri=True, timeout=5) as conn:
            row = conn.execute(
                "SELECT count(*) FROM sync_state WHERE backend = ? AND remote_ids != '[]'", (backend,)
            ).fetchone()
    except sqlite3.OperationalError:  # the table is not there yet
        return 0
    return int(row[0])


INSPECT = """
import json, sys
import pixeltable as pxt
pxt.init({"pixeltable.home": sys.argv[1], "pixeltable.verbosity": 0})
t = pxt.get_table(sys.argv[2], if_not_exists="ignore")
if t is None:
    print(json.dumps(None)); sys.exit(0)
rows = t.where(t.obsolete == False).select(t.id, t.name, t.content_hash).collect()
names = {}
for row in rows:
    names.setdefault(row["name"], []).append(row["id"])
print(json.dumps({"rows": t.count(), "live": len(rows), "names": names, "version": t.get_versions(n=1)[0]["version"]}))
"""


def inspect_table(home: Path, table: str) -> dict[str, Any] | None:
    """What a table holds, read by a new process (this one may not open another home)."""
    done = subprocess.run([sys.executable, "-c", INSPECT, str(home), table], capture_output=True, text=True,
                          timeout=300, env=subprocess_env(), check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, Any] | None = json.loads(done.stdout.strip().splitlines()[-1])
    return found
