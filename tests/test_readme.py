"""The examples of the README and of every page in docs/ run against a temporary project, so the docs cannot rot.

Python blocks run as they are; the quickstart's shell block (the one block
starting ``cd your-project``, wherever it is) runs in a new git repository;
every other ``memrouter`` command line in a shell block is checked against
the command's ``--help`` (servers are not started here: their tests start
them); configuration blocks load without unknown keys; the projects file
example serves what it says; the JSON search example has the keys a hit
really has.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from docpages import Block, blocks
from helpers import SAMPLE, write

# The first line of the example of a ``serve --projects`` file (not a memrouter.toml).
PROJECTS_FILE = "# projects.toml"
QUICKSTART = "cd your-project"
BIN = Path(sys.executable).parent


def project(base: Path) -> Path:
    folder = base / "your-project"
    for name, text in SAMPLE.items():
        write(folder / ".serena" / "memories", name, text)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def env(temp: Path | None = None) -> dict[str, str]:
    """The examples' environment: the venv's scripts first on PATH. ``temp``: their temporary folder, made
    inside the test's own, so what an example leaves there (``tempfile.mkdtemp()``) goes with the test's."""
    found = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    if temp is not None:
        temp.mkdir(exist_ok=True)
        found["TMPDIR"] = str(temp)
    return found


def the_one(found: list[Block], what: str) -> Block:
    assert len(found) == 1, f"expected one {what}, found {[str(block) for block in found]}"
    return found[0]


@pytest.mark.parametrize("block", blocks("python"), ids=str)
def test_python_examples_run(block: Block, tmp_path: Path) -> None:
    folder = project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", block.text], cwd=folder, capture_output=True, text=True, env=env(tmp_path / "tmp")
    )
    assert done.returncode == 0, f"{block}\n{block.text}\n{done.stderr}"


def test_the_quickstart_runs(tmp_path: Path) -> None:
    quickstart = the_one([block for block in blocks("sh") if block.text.startswith(QUICKSTART)], "quickstart")
    (tmp_path / "your-project").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "your-project")], check=True)
    done = subprocess.run(
        ["bash", "-e", "-c", quickstart.text], cwd=tmp_path, capture_output=True, text=True, env=env(tmp_path / "tmp")
    )
    assert done.returncode == 0, done.stderr
    assert "conventions/commit-messages" in done.stdout and "imperative mood" in done.stdout


def command_lines() -> list[tuple[str, list[str]]]:
    """Each ``memrouter`` command line of a shell block, with the block it is in."""
    lines = []
    for block in blocks("sh"):
        for line in block.text.splitlines():
            line = line.split("  #")[0].strip()
            words = shlex.split(line, comments=True) if line.count('"') % 2 == 0 else []
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]  # VAR=value prefixes
            if words[:1] == ["memrouter"]:
                lines.append((str(block), words))
    return lines


def options_by_command(words: list[str]) -> dict[tuple[str, ...], list[str]]:
    """Each ``--option`` of a command line, under the command it belongs to (``--root`` under ``memrouter`` itself)."""
    from memrouter.cli import main

    found: dict[tuple[str, ...], list[str]] = {(): []}
    command: tuple[str, ...] = ()
    group: click.Command = main
    rest = iter(words[1:])
    for word in rest:
        if word.startswith("--"):
            found[command].append(word.split("=")[0])
            option = next((p for p in group.params if word.split("=")[0] in getattr(p, "opts", ())), None)
            if isinstance(option, click.Option) and not option.is_flag and "=" not in word:
                next(rest, None)  # its value, which is no command
        elif isinstance(group, click.Group) and word in group.commands:
            command, group = (*command, word), group.commands[word]
            found[command] = []
        elif not word.startswith("-"):
            break  # an argument: what follows belongs to the command reached so far
    found[command] += [word.split("=")[0] for word in rest if word.startswith("--")]
    return found


@pytest.mark.parametrize(
    ("where", "words"), command_lines(), ids=lambda x: x if isinstance(x, str) else " ".join(x[:3])
)
def test_every_command_line_uses_real_options(where: str, words: list[str]) -> None:
    found = options_by_command(words)
    deepest = max(found, key=len)
    for command, options in found.items():
        if not options and command != deepest:
            continue
        shown = help_of(command)
        for option in options:
            assert option in shown, f"{where}: {option} is not an option of memrouter {' '.join(command)}"


@functools.cache
def help_of(command: tuple[str, ...]) -> str:
    """``memrouter <command> --help``, from the command group in this process, once per command (the 101 command
    lines name 56 commands and groups; a process for each line took 11 s of CPU)."""
    from click.testing import CliRunner

    from memrouter.cli import main

    done = CliRunner().invoke(main, [*command, "--help"], prog_name="memrouter")
    assert done.exit_code == 0, done.output
    return done.output


@pytest.mark.parametrize(
    "block", [b for b in blocks("toml") if not b.text.startswith((PROJECTS_FILE, "# .codex/"))], ids=str
)
def test_configuration_examples_load(block: Block, tmp_path: Path) -> None:
    from memrouter.config.settings import Config
    from memrouter.external.backends.configured import backend_settings
    from memrouter.external.backends.forgetful import ForgetfulConfig
    from memrouter.external.backends.graphiti import GraphitiConfig
    from memrouter.external.backends.hindsight import HindsightConfig
    from memrouter.external.backends.pixeltable import PixeltableConfig

    folder = project(tmp_path)
    (folder / "memrouter.toml").write_text(block.text, encoding="utf-8")
    config = Config.load(cwd=folder, env={})
    assert config.unknown_keys == ()
    for name, section in config.backends.items():
        kind, options, _ = backend_settings(name, section)
        if kind == "graphiti":
            GraphitiConfig.from_mapping(options)
        elif kind == "pixeltable":
            PixeltableConfig.from_mapping(options)
        elif kind == "hindsight":
            HindsightConfig.from_mapping(options)
        else:
            ForgetfulConfig.from_mapping({"name": name, **section})
    tomllib.loads(block.text)


def test_the_projects_file_example_loads(tmp_path: Path) -> None:
    from memrouter.config.projects import load_projects

    example = the_one([b for b in blocks("toml") if b.text.startswith(PROJECTS_FILE)], "projects file")
    (tmp_path / "projects.toml").write_text(example.text, encoding="utf-8")
    for name in ("payments-service", "checkout-web"):
        project(tmp_path / "repos").rename(tmp_path / name)
    tokens = {"MEMROUTER_TOKEN_PAYMENTS": "payments-secret", "MEMROUTER_TOKEN_PLATFORM": "platform-secret",
              "MEMROUTER_TOKEN_REVIEW": "review-secret"}  # fmt: skip
    served = load_projects(tmp_path / "projects.toml", env=tokens)
    assert set(served.projects) == {"payments-service", "checkout-web"}
    payments = served.grant_for(b"payments-secret")
    assert payments is not None and payments.projects == {"payments-service"}
    platform = served.grant_for(b"platform-secret")
    assert platform is not None and platform.projects == platform.writable == {"payments-service", "checkout-web"}
    review = served.grant_for(b"review-secret")
    assert review is not None and review.projects == platform.projects and not review.writable
    config = served.config("checkout-web", env={})
    assert config.project_key == "checkout-web" and config.index.url == served.database


def test_the_json_search_example_has_a_hits_keys(memories: Path, tmp_path: Path) -> None:
    from memrouter import Router

    example = json.loads(the_one([b for b in blocks("json") if '"results"' in b.text], "search JSON example").text)
    with Router.open(root=memories, index_dir=tmp_path / "idx") as router:
        hit = router.search("postgres", mode="lexical")[0]
    assert set(example["results"][0]) == set(hit.to_dict())
    # weak_left_out: present when hits below the relevance floor were left out (the example shows it)
    assert set(example) == {"query", "mode", "took_ms", "results", "weak_left_out"}
