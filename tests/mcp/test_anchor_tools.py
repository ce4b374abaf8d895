"""The anchor tools over MCP with the official SDK client: stale_memories, verify_memory (and accept), memory_status."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.anyio


def _commit(project: Path, message: str) -> None:
    env = {
        **os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.com", "GIT_COMMITTER_NAME": "Ada",
        "GIT_COMMITTER_EMAIL": "ada@example.com",
    }  # fmt: skip
    subprocess.run(["git", "add", "-A"], cwd=project, env=env, check=True)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=project, env=env, check=True)


async def _call(client: Any, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return dict(result.structured_content)


async def test_stale_memories_and_verify_memory_with_accept(project_root: Path, tmp_path: Path, connect: Any) -> None:
    project = project_root.parent.parent
    (project / "src").mkdir()
    (project / "src" / "pay.py").write_text("def fee():\n    return 1\n\n\ndef tax():\n    return 2\n")
    (project_root / "pay-fee.md").write_text("# Fee\n\nThe fee is computed in `src/pay.py#fee`.\n")
    (project_root / "pay-tax.md").write_text("---\nanchors: [src/pay.py#tax]\n---\n# Tax\n\nTwo.\n")
    _commit(project, "pay")
    (project / "src" / "pay.py").write_text("def fee():\n    return 3\n\n\ndef tax():\n    return 2\n")
    _commit(project, "the fee changes")
    async with connect(project_root, tmp_path / "index") as client:
        stale = await _call(client, "stale_memories", limit=5)
        assert [item["name"] for item in stale["memories"]] == ["pay-fee"]
        assert stale["memories"][0]["why"].startswith("stale: src/pay.py#fee changed in ")
        assert "diff" not in stale["memories"][0]["anchors"][0]
        status = await _call(client, "memory_status")
        assert status["anchors"]["stale"] == 1 and status["anchors"]["fresh"] == 1
        one = await _call(client, "verify_memory", memory_name="pay-tax")
        assert one["memory"]["status"] == "fresh" and one["accepted"] is None
        checked = await _call(client, "verify_memory", memory_name="pay-fee", accept=True)
        assert checked["accepted"] and checked["memory"]["status"] == "fresh"
        assert f"verified: {checked['accepted']}" in (project_root / "pay-fee.md").read_text()
        plain = await _call(client, "verify_memory", memory_name="ci/flaky-tests")
        assert plain["anchored"] is False and plain["memory"] is None
        missing = await client.call_tool("verify_memory", {"memory_name": "no/such"})
        assert missing.is_error and "no memory" in missing.content[0].text
