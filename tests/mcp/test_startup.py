"""The serve path is the only one that imports the MCP SDK."""

from __future__ import annotations

import subprocess
import sys


def test_light_paths_do_not_import_the_sdk() -> None:
    code = (
        "import sys, memrouter, memrouter.cli, memrouter.mcp, memrouter.mcp.service, memrouter.mcp.http, "
        "memrouter.mcp.serve, memrouter.repo\n"
        "heavy = sorted(m for m in ('mcp', 'mcp_types', 'uvicorn', 'starlette', 'onnxruntime', 'tokenizers') "
        "if m in sys.modules)\n"
        "print(','.join(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert result.stdout.strip() == ""


def test_serve_help_lists_the_options() -> None:
    from click.testing import CliRunner

    from memrouter.cli import main

    result = CliRunner().invoke(main, ["serve", "--help"])
    assert result.exit_code == 0
    for option in ("--http", "--host", "--port", "--token", "--global-root"):
        assert option in result.output
