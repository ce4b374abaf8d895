"""The write guard over MCP: refusals in each tool family's format, agents' notes held for review."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from memrouter.testing.guard_sets import fake

pytestmark = pytest.mark.anyio


async def test_mcp_tools_refuse_secrets_in_their_own_formats(project_root: Path, tmp_path: Path, connect: Any) -> None:
    root = project_root
    token = fake("xoxb", random.Random(5))
    async with connect(root, tmp_path / "index") as client:
        for tool, arguments in (
            ("write_memory", {"memory_name": "bot", "content": f"# Bot\n\ntoken {token}\n"}),
            (
                "edit_memory",
                {"memory_name": "ci/flaky-tests", "needle": "quarantine", "repl": token, "mode": "literal"},
            ),
            ("save_memory", {"content": f"# Bot\n\n{token}\n"}),
            ("scratchpad_write", {"name": "n", "content": token}),
        ):
            result = await client.call_tool(tool, arguments)
            text = result.content[0].text
            assert result.is_error and token not in text and "slack_token on line" in text, text
            if tool in ("write_memory", "edit_memory"):
                assert text.startswith(f"Error executing tool {tool}: ValueError: ")  # Serena's wording
        saved = await client.call_tool("save_memory", {"content": "# Queue\n\nProbably SQS.\n"})
        assert json.loads(saved.content[0].text)["status"] == "pending_review"
    assert not (root / "bot.md").exists()
