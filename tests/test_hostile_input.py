"""Input an attacker (or a confused agent) sends: each is refused cleanly and changes nothing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from helpers import git_status, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrouter import Router
from memrouter.core.errors import InvalidInput, MemoryRouterError

MEMROUTER = [sys.executable, "-m", "memrouter"]


def run(root: Path, *args: str | bytes, index_dir: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*MEMROUTER, "--root", str(root), "--index-dir", str(index_dir), *args], capture_output=True, timeout=60
    )


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    "args",
    [
        ["save", "s", "--content", b"\xff"],
        ["save", b"\xff", "--content", "# x"],
        ["list", b"\xff"],
        ["search", "--prefix", b"\xff", "abc"],
        ["search", "--tag", b"\xfe", "abc"],
        ["search", b"caf\xe9"],
        ["get", b"\xed\xa0\x80"],
        ["delete", b"\xff"],
        ["save", "x.md.md", "--content", "# twice"],
        ["team", "get", b"\xff"],
        ["context", b"\xff"],
        ["search", "abc", "--as-of", b"\xff"],
    ],
)
def test_undecodable_arguments_exit_2_with_one_line(memories: Path, tmp_path: Path, args: list[str | bytes]) -> None:
    before = snapshot(memories)
    done = run(memories, *args, index_dir=tmp_path / "idx")
    assert done.returncode == 2, done.stderr
    assert b"Traceback" not in done.stderr and done.stderr.count(b"\n") == 1, done.stderr
    assert snapshot(memories) == before


def _leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command of the group, as the words that name it (``team get``), subgroups walked."""
    found: list[tuple[str, ...]] = []
    for name, command in sorted(group.commands.items()):
        if isinstance(command, click.Group):
            found += _leaf_commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


def test_every_command_refuses_a_command_line_that_is_not_text(memories: Path, tmp_path: Path) -> None:
    """One check in the group every command passes (``memrouter.cli.argv``): no command sees a lone surrogate."""
    from memrouter.cli import main

    commands = _leaf_commands(main)
    assert len(commands) > 40 and ("team", "get") in commands and ("context",) in commands
    before = snapshot(memories)
    runner = CliRunner()
    base = ["--root", str(memories), "--index-dir", str(tmp_path / "idx")]
    for words in commands:
        for value in ("\udcff", "\ud800", "caf\udce9"):
            done = runner.invoke(main, [*base, *words, value])
            assert done.exit_code == 2 and isinstance(done.exception, SystemExit), (words, done.exception)
            assert done.stderr.startswith("memrouter: argument ") and done.stderr.count("\n") == 1, (words, done.stderr)
    done = runner.invoke(main, ["status"], env={"MEMROUTER_ROOT": "/m\udcff"})
    assert done.exit_code == 2 and "MEMROUTER_ROOT" in done.stderr
    assert snapshot(memories) == before


def test_the_search_fast_path_leaves_a_command_line_that_is_not_text_to_the_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memrouter.cli.fast_search import parse_search_argv

    assert parse_search_argv(["search", "caf\udce9"]) is None
    assert parse_search_argv(["search", "café"]) is not None
    monkeypatch.setenv("MEMROUTER_INDEX_DIR", "/i\udcff")
    assert parse_search_argv(["search", "x"]) is None


def test_a_content_file_that_is_not_utf8_is_refused(memories: Path, tmp_path: Path) -> None:
    latin = tmp_path / "latin.md"
    latin.write_bytes("# Caf\xe9\n".encode("latin-1"))
    done = run(memories, "save", "latin", "--file", str(latin), index_dir=tmp_path / "idx")
    assert done.returncode == 2 and b"not UTF-8" in done.stderr
    assert not (memories / "latin.md").exists()


def test_lone_surrogates_are_invalid_input_in_the_library(router: Router) -> None:
    for call in (
        lambda: router.get("\ud800"),
        lambda: router.save("# x\n\n\udcff\n", "s"),
        lambda: router.save("# x\n", "s", tags=["\udcff"]),
        lambda: router.list("\udcff"),
        lambda: router.search("abc", prefix="\udcff"),
        lambda: router.delete("x", reason="\ud800"),
    ):
        with pytest.raises(InvalidInput):
            call()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.one_of(st.text(), st.integers(), st.none(), st.lists(st.text(max_size=5), max_size=25)),
    field=st.sampled_from(["channels", "kinds", "scopes", "statuses", "tags", "prefix"]),
)
def test_any_filter_value_is_a_result_or_invalid_input(router: Router, value: object, field: str) -> None:
    try:
        router.search("flaky", mode="lexical", **{field: value})  # type: ignore[arg-type]
    except InvalidInput:
        pass
    try:
        router.list(**({"prefix": value} if field == "prefix" else {field: value}))  # type: ignore[arg-type]
    except InvalidInput:
        pass


def test_a_name_maps_to_exactly_one_file_both_ways(router: Router, memories: Path) -> None:
    write(memories, "x", "# x\n\nthe real x\n")
    write(memories, "x.md", "# twice\n\nthe file named x.md.md\n")  # x.md.md on disk
    names = {item.name for item in router.list()}
    assert "x" in names and "x.md" not in names and "x.md.md" not in names
    assert "x.md.md" in " ".join(router.status()["problems"])
    assert router.get("x.md").text == "# x\n\nthe real x\n"  # "x.md" is a spelling of the name x
    for bad in ("x.md.md", "notes/y.md.md"):
        with pytest.raises(InvalidInput, match="twice"):
            router.get(bad)
        with pytest.raises(InvalidInput, match="twice"):
            router.save("# y\n", bad)
        with pytest.raises(InvalidInput, match="twice"):
            router.delete(bad)
    assert (memories / "x.md.md").exists() and (memories / "x.md").exists()


SAVER = """
import sys
from pathlib import Path
from memrouter import Router
root, index_dir = Path(sys.argv[1]), Path(sys.argv[2])
with Router.open(root=root, index_dir=index_dir, watch=False) as router:
    print("ready", flush=True)
    n = 0
    while True:
        n += 1
        router.save("# Big\\n\\n" + ("payload %d " % n) * 40000, "big")
"""


def test_killed_writers_leave_nothing_for_git_and_no_torn_file(tmp_path: Path) -> None:
    project = tmp_path / "project"
    root = project / ".serena" / "memories"
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    index_dir = tmp_path / "idx"
    for kill in range(8):
        saver = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(root), str(index_dir)], stdout=subprocess.PIPE, text=True
        )
        assert saver.stdout is not None and saver.stdout.readline().strip() == "ready"
        time.sleep(0.05 + 0.04 * kill)
        os.kill(saver.pid, signal.SIGKILL)
        saver.wait(timeout=30)
        saver.stdout.close()
        text = (root / "big.md").read_text(encoding="utf-8") if (root / "big.md").exists() else None
        assert text is None or (text.startswith("# Big") and text.endswith(" \n") and len(set(text.split()[2::2])) == 1)
    assert [line for line in git_status(project).splitlines() if not line.endswith(".md")] == []
    with Router.open(root=root, index_dir=index_dir, watch=False) as router:
        router.save("# After\n\nthe next writer cleans up\n", "after")
        assert [item.name for item in router.list()] in (["after"], ["after", "big"])
    assert list((root / ".memrouter-write" / "tmp").iterdir()) == []


def test_stray_temporary_files_of_older_versions_are_never_indexed(router: Router, memories: Path) -> None:
    stray = memories / "ci" / ".flaky-tests.md.abc123.tmp"
    stray.write_text("# half a write\n")
    assert "half" not in " ".join(item.title for item in router.list())
    old = time.time() - 7200
    os.utime(stray, (old, old))
    router.refresh()
    router.save("# Trigger\n\nany write\n", "trigger")
    assert not stray.exists()


def test_library_errors_are_memory_router_errors(router: Router) -> None:
    for call in (lambda: router.list(tags=5), lambda: router.search("x", limit="5"), lambda: router.save(b"# x", "x")):  # type: ignore[arg-type]
        with pytest.raises(MemoryRouterError):
            call()
