from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memrouter.cli import main


@pytest.fixture
def cli(memories: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):  # type: ignore[no-untyped-def]
        base = ["--root", str(memories), "--index-dir", str(tmp_path / "idx")]
        return runner.invoke(main, [*base, *args], input=input, catch_exceptions=False)

    return invoke


def test_index_then_search_json_contract(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("index", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["added"] == 6
    result = cli("search", "postgres transactions", "--format", "json", "--limit", "3", "--mode", "lexical")
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert set(data) == {"query", "mode", "took_ms", "results"}
    first = data["results"][0]
    assert {"name", "title", "score", "source", "channel", "path", "hash", "why"} <= set(first)
    assert first["name"] == "adr/adr-001-postgres" and first["source"] == "canonical"


def test_text_search_and_no_results(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("search", "flaky", "--mode", "lexical")
    assert "ci/flaky-tests" in result.output and "incidents/flaky-tests" in result.output
    assert cli("search", "qwertyuiop", "--mode", "lexical").output.strip() == "no memories matched"


def test_text_search_says_why_without_markdown_markup(memories: Path, tmp_path: Path) -> None:
    """A person reads the text form: why each hit was found (the matched words, the mode), snippets without the
    markdown's marks; bold only on a terminal (never in a pipe)."""
    (memories / "conventions").mkdir(exist_ok=True)
    (memories / "conventions" / "rounding.md").write_text(
        "# Rounding\n\nInvoices round **half-even** with `ROUND_HALF_EVEN` in billing/invoice.py.\n", encoding="utf-8"
    )
    done = subprocess.run(
        [sys.executable, "-m", "memrouter", "--root", str(memories), "--index-dir", str(tmp_path / "idx"),
         "search", "how do invoices round", "--mode", "lexical", "--limit", "1"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = done.stdout.splitlines()
    assert lines[0].startswith(" 1. conventions/rounding  0.")  # its relevance, 0 to 1
    assert lines[1] == "    Rounding Invoices round half-even with ROUND_HALF_EVEN in billing/invoice.py."
    assert lines[2].startswith("    why: keywords #1 (") and lines[2].endswith("); lexical search")
    assert {"invoices", "round"} <= set(lines[2].split("(", 1)[1].split(")")[0].split(", "))
    assert "\x1b[" not in done.stdout and "**" not in done.stdout


@pytest.mark.parametrize("query", ["", "   ", "a\x01b", "x" * 1001])
def test_bad_queries_exit_2(cli, query: str) -> None:  # type: ignore[no-untyped-def]
    result = cli("search", query)
    assert result.exit_code == 2
    assert "memrouter:" in result.output


def test_save_get_list_delete(cli, memories: Path) -> None:  # type: ignore[no-untyped-def]
    result = cli(
        "save", "notes/tea", "--content", "# Tea\n\nGreen tea at 80 degrees.\n", "--tag", "drinks", "--kind", "fact"
    )
    assert result.exit_code == 0, result.output
    assert (memories / "notes" / "tea.md").exists()
    assert "Green tea" in cli("get", "notes/tea").output
    meta = json.loads(cli("get", "notes/tea", "--format", "json").output)
    assert meta["tags"] == ["drinks"] and meta["kind"] == "fact"
    listed = json.loads(cli("list", "notes/", "--format", "json").output)
    assert [m["name"] for m in listed["memories"]] == ["notes/tea"]
    stdin = cli("save", "notes/coffee", "--file", "-", input="# Coffee\n\nEspresso.\n")
    assert stdin.exit_code == 0
    assert cli("delete", "notes/tea", "--reason", "done").exit_code == 0
    assert cli("get", "notes/tea").exit_code == 1


def test_error_exit_codes(cli, memories: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("get", "../etc/passwd").exit_code == 2
    assert cli("get", "missing/one").exit_code == 1
    assert cli("save", "x", "--content", "a", "--file", "-", input="b").exit_code == 2
    assert cli("save", "x").exit_code == 2
    conflict = cli("save", "conventions/commit-messages", "--content", "# new", "--expected-hash", "0" * 64)
    assert conflict.exit_code == 1 and "changed since" in conflict.output
    assert cli("search", "x", "--mode", "nope").exit_code == 2
    assert cli("search", "x", "--channel", "nope").exit_code == 2


def test_status_json(cli) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(cli("status", "--format", "json").output)
    assert data["memories"]["total"] == 6 and data["readonly"] is False


def test_status_text_of_an_empty_project_has_no_empty_brackets(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    result = CliRunner().invoke(main, ["--root", str(tmp_path / "m"), "--index-dir", str(tmp_path / "idx"), "status"])
    assert result.exit_code == 0 and "memories: 0\n" in result.output and "()" not in result.output


def test_a_saved_file_ends_with_a_line_end(cli, memories: Path) -> None:  # type: ignore[no-untyped-def]
    assert cli("save", "notes/no-newline", "--content", "# No newline\n\nat the end").exit_code == 0
    assert (memories / "notes" / "no-newline.md").read_text().endswith("at the end\n")
    assert cli("save", "notes/one-newline", "--content", "# One\n\nline end\n").exit_code == 0
    assert (memories / "notes" / "one-newline.md").read_text().endswith("line end\n")


def test_every_command_has_help() -> None:
    runner = CliRunner()
    for name in main.commands:
        result = runner.invoke(main, [name, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output


def test_root_discovery_from_a_git_repository(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    (project / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    memories = project / ".serena" / "memories"
    memories.mkdir(parents=True)
    (memories / "hello.md").write_text("# Hello\n\nworld of discovery\n")
    cwd = os.getcwd()
    try:
        os.chdir(project / "src" / "deep")
        result = CliRunner().invoke(main, ["search", "discovery", "--format", "json", "--mode", "lexical"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["results"][0]["name"] == "hello"
    assert (project / ".memrouter" / "index.sqlite").exists()


def test_no_project_is_a_usage_error(tmp_path: Path) -> None:
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        result = CliRunner().invoke(main, ["search", "x"])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 2 and "no project found" in result.output


def test_real_subprocess_piped_output(memories: Path, tmp_path: Path) -> None:
    env = {**os.environ, "MEMROUTER_INDEX_DIR": str(tmp_path / "idx")}
    command = [sys.executable, "-m", "memrouter", "--root", str(memories)]
    indexed = subprocess.run([*command, "index"], capture_output=True, text=True, env=env, check=True)
    assert indexed.stderr == ""  # no progress bar when not on a terminal
    found = subprocess.run(
        [*command, "search", "postgres", "--format", "json"], capture_output=True, text=True, env=env
    )
    assert found.returncode == 0
    assert json.loads(found.stdout)["results"][0]["name"] == "adr/adr-001-postgres"
    bad = subprocess.run([*command, "search", ""], capture_output=True, text=True, env=env)
    assert bad.returncode == 2 and "query is empty" in bad.stderr and "Traceback" not in bad.stderr
