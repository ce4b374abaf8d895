"""The ``memrouter search`` fast path parses exactly as the click command does."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrouter.cli import main
from memrouter.cli.fast_search import SearchRequest, parse_search_argv, run_search


def _fast(argv: list[str]) -> tuple[int, str, str] | None:
    request = parse_search_argv(argv)
    if request is None:
        return None
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run_search(request)
    return code, out.getvalue(), err.getvalue()


def _click(argv: list[str]) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, argv, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _comparable(output: str) -> str:
    """JSON output without its timing, which differs run to run."""
    if output.startswith("{"):
        data = json.loads(output)
        data.pop("took_ms")
        return json.dumps(data)
    return output


def _same(argv: list[str]) -> None:
    fast = _fast(argv)
    assert fast is not None, argv
    code, out, err = _click(argv)
    assert (fast[0], _comparable(fast[1]), fast[2]) == (code, _comparable(out), err), argv


@pytest.fixture
def base(memories: Path, tmp_path: Path) -> list[str]:
    base = ["--root", str(memories), "--index-dir", str(tmp_path / "idx")]
    assert _click([*base, "index", "--lexical-only"])[0] == 0
    return base


@pytest.mark.parametrize(
    "args",
    [
        ["search", "flaky tests"],
        ["search", "flaky tests", "--mode", "lexical", "--format", "json"],
        ["search", "--limit", "1", "flaky"],
        ["search", "flaky", "-n", "2", "--format=json"],
        ["search", "flaky", "--limit=007", "--mode=hybrid"],
        ["search", "tests", "--prefix", "ci/", "--content", "--format", "json"],
        ["search", "postgres", "--kind", "adr", "--tag", "database", "--tag", "storage"],
        ["search", "postgres", "--channel", "team", "--channel", "long-term", "--scope", "project"],
        ["search", "postgres", "--status", "active", "--source", "canonical"],
        ["search", "qwertyuiop"],
        ["search", ""],
        ["search", "a\x01b"],
        ["search", "flaky", "--source", "nowhere"],
        ["search", "flaky", "--rerank", "--mode", "lexical"],
        ["search", "search"],
        ["search", "-"],
    ],
)
def test_fast_path_matches_click(base: list[str], args: list[str]) -> None:
    _same([*base, *args])


@pytest.mark.parametrize(
    "args",
    [
        ["search", "--help"],
        ["search", "-h"],
        ["--help"],
        ["--version"],
        ["index"],
        ["status", "search"],
        ["search"],
        ["search", "one", "two"],
        ["search", "x", "--limit", "0"],
        ["search", "x", "--limit", "201"],
        ["search", "x", "--limit", "+2"],
        ["search", "x", "-n5"],
        ["search", "x", "-n=5"],
        ["search", "x", "--limit"],
        ["search", "x", "--mode", "LEXICAL"],
        ["search", "x", "--format", "xml"],
        ["search", "x", "--content=yes"],
        ["search", "x", "--bogus", "1"],
        ["search", "x", "--root", "."],
        ["search", "--", "-x"],
    ],
)
def test_everything_else_goes_to_click(base: list[str], args: list[str]) -> None:
    assert parse_search_argv([*base, *args]) is None


def test_a_root_that_is_a_file_goes_to_click(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    assert parse_search_argv(["--root", str(file), "search", "x"]) is None
    assert parse_search_argv(["--root", "", "search", "x"]) is None
    code, _, err = _click(["--root", str(file), "search", "x"])
    assert code == 2 and "is a file" in err


def test_the_environment_is_read_by_the_configuration_alone(
    memories: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neither parser reads MEMROUTER_*: both hand the folders they were given to ``Config.load``, which does."""
    assert parse_search_argv(["search", "x"]) == SearchRequest("x")
    assert parse_search_argv(["--root", "/r", "search", "x"]) == SearchRequest("x", root="/r")
    monkeypatch.setenv("MEMROUTER_ROOT", str(memories))
    monkeypatch.setenv("MEMROUTER_INDEX_DIR", str(tmp_path / "idx"))
    _same(["search", "flaky tests", "--format", "json"])
    assert json.loads(_click(["search", "flaky", "--format", "json"])[1])["results"]


_TOKENS = st.sampled_from(
    [
        "flaky", "tests", "postgres", "-", "--", "-x", "search",
        "--limit", "-n", "3", "0", "201", "x", "+2", "--limit=2", "-n1", "-n=1",
        "--mode", "lexical", "hybrid", "LEXICAL", "--mode=lexical",
        "--format", "json", "text", "xml", "--format=json",
        "--channel", "team", "long-term", "--kind", "adr", "--tag", "database", "--scope", "project",
        "--status", "active", "--prefix", "ci/", "--content", "--content=1", "--source", "canonical", "--rerank",
        "--bogus", "--help", "--root", "--history", "--include-archived", "--origin", "--origin=canonical",
        "--as-of", "--format=text", "--tag=storage", "--history=1",
    ]
)  # fmt: skip


@pytest.mark.long
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_TOKENS, max_size=7))
def test_any_command_line_the_fast_path_takes_gives_what_click_gives(base: list[str], tokens: list[str]) -> None:
    argv = [*base, "search", *tokens]
    if parse_search_argv(argv) is not None:
        _same(argv)


def _console_script(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run what the ``memrouter`` script runs, listing every import on stderr (``-X importtime``)."""
    code = f"import sys\nfrom memrouter.cli.console import main\nsys.argv = ['memrouter', *{argv!r}]\nmain()\n"
    return subprocess.run([sys.executable, "-X", "importtime", "-c", code], text=True, **kwargs)  # type: ignore[call-overload, no-any-return]


def _imported(stderr: str) -> set[str]:
    return {line.rsplit("|", 1)[1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


@pytest.mark.sqlite_only("the PostgreSQL driver itself imports json, typing and threading")
def test_the_console_script_searches_without_importing_click(memories: Path, tmp_path: Path) -> None:
    argv = ["--root", str(memories), "--index-dir", str(tmp_path / "idx"), "search", "flaky", "--mode", "lexical"]
    for _ in ("builds the index", "finds nothing changed"):
        done = _console_script([*argv, "--limit", "1"], capture_output=True)
        assert done.returncode == 0, done
        assert done.stdout.startswith(" 1. incidents/flaky-tests"), done.stdout
    imported = _imported(done.stderr)
    assert "memrouter.router" in imported and "click" not in imported
    # With nothing changed, a lexical search loads neither the dense index nor
    # what parsing and writing need.
    assert imported.isdisjoint(
        {
            "memrouter.index.sqlite.dense", "memrouter.index.chunking", "memrouter.store.parse", "memrouter.store.markdown",
            "memrouter.team", "memrouter.cli.app", "json", "typing", "threading", "memrouter.ops.lifecycle",
            "memrouter.store.sprints", "dataclasses", "inspect", "memrouter.index.sqlite.rerank",
        }
    )  # fmt: skip
    helped = subprocess.run(
        [sys.executable, "-m", "memrouter", "search", "--help"], capture_output=True, text=True, check=True
    )
    assert "Find the memories that best match QUERY" in helped.stdout


def test_the_console_script_exits_with_the_search_code(memories: Path, tmp_path: Path) -> None:
    argv = ["--root", str(memories), "--index-dir", str(tmp_path / "idx"), "search"]
    done = _console_script(
        [*argv, "no such words anywhere", "--mode", "lexical", "--format", "json"], capture_output=True
    )
    assert done.returncode == 0 and json.loads(done.stdout)["results"] == []
    bad = _console_script([*argv, "bell \x07 query"], capture_output=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert "memrouter: the query contains a control character (U+0007)" in bad.stderr


def test_a_reader_that_goes_away_ends_the_search_quietly(memories: Path, tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # like `memrouter search ... | head` once head has exited
    try:
        done = _console_script(
            ["--root", str(memories), "--index-dir", str(tmp_path / "idx"), "search", "flaky"],
            stdout=write_end,
            stderr=subprocess.PIPE,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
