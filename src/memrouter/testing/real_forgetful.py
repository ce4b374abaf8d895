"""Start the real Forgetful (``forgetful-ai``) offline on loopback, for opt-in tests.

Forgetful needs Python >= 3.12, so it lives in its own virtual environment
(``pip install forgetful-ai==0.6.0 pysqlite3-binary``). Three things keep it
offline (see the project's notes on running peers):

- embeddings come from ``memrouter embed-serve --embedder hash`` (started
  here: deterministic feature hashing, no model) through
  ``EMBEDDING_PROVIDER=OpenAI`` and ``OPENAI_BASE_URL``; reranking is off;
- SQLite extensions: the launcher puts ``pysqlite3`` in place of ``sqlite3``
  before calling Forgetful's ``main.cli()``;
- tiktoken's ``cl100k_base`` file must already be in ``--tiktoken-cache``
  (the ``litellm`` wheel ships it under its cache name).

Run::

    python -m memrouter.testing.real_forgetful --python /path/to/venv/bin/python \\
        --tiktoken-cache DIR --port 8020

then point a backend at ``url = "http://127.0.0.1:8020/mcp"``. Stops on
Ctrl-C or SIGTERM. The interop suite (``interop/``, ``make interop``) starts
its own server this way and runs the conformance suite against it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence

from memrouter.testing.servers import free_port

__all__ = ["LAUNCHER", "embed_serve_command", "forgetful_env", "main"]

LAUNCHER = (
    "import sys, pysqlite3, pysqlite3.dbapi2; "
    "sys.modules['sqlite3'] = pysqlite3; sys.modules['sqlite3.dbapi2'] = pysqlite3.dbapi2; "
    "sys.argv[0] = 'forgetful'; import main; main.cli()"
)


def embed_serve_command(port: int, dimension: int = 384) -> list[str]:
    """``memrouter embed-serve`` with the hash embedder on a loopback ``port``: Forgetful's offline embeddings."""
    return [
        sys.executable, "-m", "memrouter", "embed-serve", "--host", "127.0.0.1", "--port", str(port),
        "--embedder", "hash", "--dimension", str(dimension),
    ]  # fmt: skip


def forgetful_env(home: str, embeddings_url: str, tiktoken_cache: str, db_path: str) -> dict[str, str]:
    """The environment that keeps Forgetful offline and on loopback."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": home,
        "XDG_CONFIG_HOME": f"{home}/.config",
        "XDG_DATA_HOME": f"{home}/.local/share",
        "HF_HUB_OFFLINE": "1",
        "EMBEDDING_PROVIDER": "OpenAI",
        "OPENAI_BASE_URL": embeddings_url,
        "OPENAI_API_KEY": "dummy",
        "EMBEDDING_MODEL": "all-MiniLM-L6-v2",
        "EMBEDDING_DIMENSIONS": "384",
        "RERANKING_ENABLED": "false",
        "DATABASE": "SQLite",
        "SQLITE_PATH": db_path,
        "TIKTOKEN_CACHE_DIR": tiktoken_cache,
    }


def _wait(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if json.load(response).get("status") == "healthy":
                    return
        except (OSError, ValueError):
            time.sleep(0.1)
    raise RuntimeError(f"{url} not healthy after {timeout:g} s")


def main(argv: Sequence[str] | None = None) -> int:
    """Start the embeddings endpoint and Forgetful over HTTP; serve until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m memrouter.testing.real_forgetful")
    parser.add_argument("--python", required=True, help="the Python of Forgetful's own venv")
    parser.add_argument("--tiktoken-cache", required=True)
    parser.add_argument("--port", type=int, default=8020)
    parser.add_argument("--embeddings-port", type=int, default=0)
    options = parser.parse_args(argv)

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    home = tempfile.mkdtemp(prefix="forgetful-home-")
    embeddings_port = options.embeddings_port or free_port()
    embeddings = subprocess.Popen(embed_serve_command(embeddings_port))
    forgetful: subprocess.Popen[bytes] | None = None
    try:
        _wait(f"http://127.0.0.1:{embeddings_port}/health", 30)
        env = forgetful_env(
            home, f"http://127.0.0.1:{embeddings_port}/v1", options.tiktoken_cache, f"{home}/forgetful.sqlite"
        )
        forgetful = subprocess.Popen(
            [
                options.python,
                "-c",
                LAUNCHER,
                "--transport",
                "http",
                "--host",
                "127.0.0.1",
                "--port",
                str(options.port),
            ],
            cwd=home,
            env=env,
        )
        _wait(f"http://127.0.0.1:{options.port}/health", 60)
        print(f"forgetful ready at http://127.0.0.1:{options.port}/mcp", flush=True)
        forgetful.wait()
    except KeyboardInterrupt:
        pass  # Ctrl-C is how this server is meant to be stopped
    finally:
        for process in (forgetful, embeddings):
            if process is not None and process.poll() is None:
                process.terminate()
                process.wait(timeout=10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
