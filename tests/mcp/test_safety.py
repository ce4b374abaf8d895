"""No tool reads or writes outside the memories root, whatever the name looks like."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

pytestmark = pytest.mark.anyio

ESCAPES = [
    "../outside",
    "../../outside/secret",
    "a/../../outside",
    "/etc/passwd",
    "//etc/passwd",
    "C:/Windows/win",
    "..\\outside",
    "%2e%2e/outside/secret",
    "%2e%2e%2foutside%2fsecret",
    "\uff0e\uff0e/outside/secret",  # fullwidth full stops
    "\uff0e\uff0e\uff0foutside\uff0fsecret",  # fullwidth solidus too
    "\u2024\u2024/outside/secret",  # one-dot leaders
    "a/./b",
    "a//b",
    "",
    "   ",
    "x" * 201,
    "nul\x00byte",
    "line\nbreak",
    "global/../../outside/secret",
]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A secret file next to the project, plus links to it from inside the memories root."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text("TOP SECRET\n")
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


async def attempts(client: Any, name: str) -> list[Any]:
    calls = [
        ("read_memory", {"memory_name": name}),
        ("get_memory", {"memory_name": name}),
        ("write_memory", {"memory_name": name, "content": "pwned"}),
        ("save_memory", {"memory_name": name, "content": "# Pwned\n"}),
        ("edit_memory", {"memory_name": name, "needle": "SECRET", "repl": "pwned", "mode": "literal"}),
        ("rename_memory", {"old_name": "ci/flaky-tests", "new_name": name}),
        ("rename_memory", {"old_name": name, "new_name": "stolen"}),
        ("list_memories", {"topic": name}),
    ]
    return [(tool, await client.call_tool(tool, args)) for tool, args in calls]


async def test_escaping_names_are_refused(project_root: Path, tmp_path: Path, outside: Path, connect: Any) -> None:
    before_outside = snapshot(outside)
    project = project_root.parent.parent
    async with connect(project_root, tmp_path / "index", global_root=tmp_path / "global") as client:
        for name in ESCAPES:
            for tool, result in await attempts(client, name):
                text = result.content[0].text
                if tool == "list_memories" and not result.is_error:
                    assert text == "{}" or not name.strip(), (
                        name,
                        text,
                    )  # an odd topic that exists nowhere lists nothing
                    continue
                assert result.is_error, (tool, name, text)
                assert "SECRET" not in text and "pwned" not in text
            deleted = await client.call_tool("delete_memory", {"memory_name": name})
            assert deleted.is_error or deleted.content[0].text.endswith("not found."), (name, deleted)
    assert snapshot(outside) == before_outside
    assert not (tmp_path / "stolen.md").exists() and not (project / "stolen.md").exists()
    assert (project_root / "ci/flaky-tests.md").exists()
    leftovers = {p.name for p in tmp_path.rglob("*.md")} - {"secret.md"}
    assert "outside.md" not in leftovers and "passwd.md" not in leftovers


async def test_symlinks_out_of_the_root_are_refused(
    project_root: Path, tmp_path: Path, outside: Path, connect: Any
) -> None:
    os.symlink(outside / "secret.md", project_root / "leak.md")
    os.symlink(outside, project_root / "linked")
    before = snapshot(outside)
    async with connect(project_root, tmp_path / "index") as client:
        for name in ("leak", "linked/secret", "linked/new"):
            for tool, result in await attempts(client, name):
                text = result.content[0].text
                if tool == "list_memories":
                    assert "SECRET" not in text
                    continue
                assert result.is_error, (tool, name, text)
                assert "SECRET" not in text
            result = await client.call_tool("delete_memory", {"memory_name": name})
            assert result.is_error or "not found" in result.content[0].text
        hits = await client.call_tool("search_memory", {"query": "top secret", "mode": "lexical"})
        assert hits.structured_content["results"] == []
        with pytest.raises(MCPError, match="outside the memories root"):
            await client.read_resource("memory://leak")
    assert snapshot(outside) == before
    assert (project_root / "leak.md").is_symlink()


async def test_resource_uris_cannot_escape(project_root: Path, tmp_path: Path, outside: Path, connect: Any) -> None:
    async with connect(project_root, tmp_path / "index") as client:
        for uri in (
            "memory://../outside/secret",
            "memory://%2e%2e/outside/secret",
            "memory://..%2Foutside%2Fsecret",
            "memory://\uff0e\uff0e/outside/secret",
            "memory:///etc/passwd",
        ):
            with pytest.raises(Exception) as caught:
                await client.read_resource(uri)
            assert "SECRET" not in str(caught.value)


async def test_bad_argument_types_and_sizes(project_root: Path, tmp_path: Path, connect: Any) -> None:
    async with connect(project_root, tmp_path / "index") as client:
        cases = [
            ("search_memory", {"query": 42}),
            ("search_memory", {"query": "x", "limit": 10_000}),
            ("search_memory", {"query": "x", "kinds": ["a\x00"]}),
            ("search_memory", {"query": "x", "tags": ["t" * 101]}),
            ("write_memory", {"memory_name": "ok", "content": "x", "max_chars": 0}),
            ("write_memory", {"memory_name": "ok", "content": "bad\x00nul"}),
            ("write_memory", {"memory_name": "ok", "content": "x" * 1_000_001}),
            ("edit_memory", {"memory_name": "ci/flaky-tests", "needle": "", "repl": "x", "mode": "literal"}),
            ("edit_memory", {"memory_name": "ci/flaky-tests", "needle": "x" * 10_001, "repl": "", "mode": "regex"}),
            ("delete_memory", {"memory_name": "ci/flaky-tests", "reason": "r" * 2001}),
            ("list_memories", {"channel": "forever"}),
            ("get_recent_commits", {"limit": 0}),
            ("get_changed_files", {"since_hours": -1}),
            ("get_current_diff", {"max_chars": 0}),
            ("search_commits", {"query": ""}),
            ("get_file_history", {"path": "/etc/passwd"}),
            ("set_task_context", {"task": ""}),
            ("set_task_context", {"task": "t" * 501}),
            ("no_such_tool", {}),
        ]
        for tool, arguments in cases:
            result = await client.call_tool(tool, arguments)
            assert result.is_error, (tool, arguments, result)
            assert result.content[0].text.strip()
        assert (project_root / "ci/flaky-tests.md").exists()
        assert not (project_root / "ok.md").exists()
