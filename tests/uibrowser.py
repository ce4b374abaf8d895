"""Shared by the browser tests and the UI benchmark: starting ``memrouter ui``, screenshots, axe-core."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / ".artifacts" / "ui"
CHROMIUM = os.environ.get("MEMROUTER_CHROMIUM", "/usr/bin/chromium")
AXE = Path(os.environ.get("MEMROUTER_AXE", REPO / ".artifacts" / "axe" / "package" / "axe.min.js"))


@dataclass
class Served:
    """A running ``memrouter ui``: its address and the project it serves."""

    address: str
    project: Path
    root: Path
    index_dir: Path
    first_commit: str


def start_ui(root: Path, index_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """``memrouter ui --port 0`` on ``root``; the process and the address it announced."""
    env = {key: value for key, value in os.environ.items() if key != "MEMROUTER_TOKEN"}
    command = [
        sys.executable,
        "-m",
        "memrouter",
        "--root",
        str(root),
        "--index-dir",
        str(index_dir),
        "ui",
        "--port",
        "0",
    ]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=env)
    assert server.stderr is not None
    line = server.stderr.readline()
    if not line.startswith("memrouter: UI at "):
        server.kill()
        raise RuntimeError(f"memrouter ui did not start: {line}{server.stderr.read()}")
    return server, line.split(" at ", 1)[1].strip()


def stop_ui(server: subprocess.Popen[str]) -> None:
    """Stop a server ``start_ui`` started."""
    server.terminate()
    server.wait(timeout=30)
    if server.stderr is not None:
        server.stderr.close()


def screenshot(page: object, name: str) -> Path:
    """Save a screenshot of ``page`` as ``.artifacts/ui/<name>.png``."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=False)  # type: ignore[attr-defined]
    return path
