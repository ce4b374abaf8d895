"""The README's examples run against a temporary project, so the docs cannot rot.

Python blocks run as they are; the Quickstart's shell block runs in a new git
repository; every other ``memrouter`` command line in a shell block is checked
against the command's ``--help`` (servers are not started here: their tests
start them); configuration blocks load without unknown keys; the JSON search
example has the keys a hit really has.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from helpers import SAMPLE, write

README = Path(__file__).resolve().parents[1] / "README.md"
# The first line of the README's example of a ``serve --projects`` file (not a memrouter.toml).
PROJECTS_FILE = "# projects.toml"
BIN = Path(sys.executable).parent


def blocks(language: str) -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [m.group(1) for m in re.finditer(rf"^```{language}\n(.*?)^```", text, re.M | re.S)]


def project(base: Path) -> Path:
    folder = base / "your-project"
    for name, text in SAMPLE.items():
        write(folder / ".serena" / "memories", name, text)
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    return folder


def env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}


def test_python_examples_run(tmp_path: Path) -> None:
    found = blocks("python")
    assert found
    folder = project(tmp_path)
    for code in found:
        done = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, env=env())
        assert done.returncode == 0, f"{code}\n{done.stderr}"


def test_the_quickstart_runs(tmp_path: Path) -> None:
    quickstart = next(block for block in blocks("sh") if block.startswith("cd your-project"))
    (tmp_path / "your-project").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "your-project")], check=True)
    done = subprocess.run(["bash", "-e", "-c", quickstart], cwd=tmp_path, capture_output=True, text=True, env=env())
    assert done.returncode == 0, done.stderr
    assert "conventions/commit-messages" in done.stdout and "imperative mood" in done.stdout


def command_lines() -> list[list[str]]:
    lines = []
    for block in blocks("sh"):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            words = shlex.split(line, comments=True) if line.count('"') % 2 == 0 else []
            while words and "=" in words[0] and not words[0].startswith("-"):
                words = words[1:]  # VAR=value prefixes
            if words[:1] == ["memrouter"]:
                lines.append(words)
    return lines


@pytest.mark.parametrize("words", command_lines(), ids=lambda words: " ".join(words[:3]))
def test_every_command_line_uses_real_options(words: list[str]) -> None:
    from memrouter.cli import main

    command: list[str] = []
    group: click.Command = main
    for word in (word for word in words[1:] if not word.startswith("-")):
        if not isinstance(group, click.Group) or word not in group.commands:
            break  # an argument: the options belong to the command reached so far
        command.append(word)
        group = group.commands[word]
    done = subprocess.run([str(BIN / "memrouter"), *command, "--help"], capture_output=True, text=True, env=env())
    assert done.returncode == 0, done.stderr
    for option in (word.split("=")[0] for word in words if word.startswith("--")):
        assert option in done.stdout or option == "--help", f"{option} is not an option of memrouter {command}"


def test_configuration_examples_load(tmp_path: Path) -> None:
    from memrouter.config.settings import Config
    from memrouter.external.backends.configured import backend_settings
    from memrouter.external.backends.forgetful import ForgetfulConfig
    from memrouter.external.backends.graphiti import GraphitiConfig

    examples = [block for block in blocks("toml") if not block.startswith(PROJECTS_FILE)]
    assert examples
    for text in examples:
        folder = project(tmp_path / str(len(text)))
        (folder / "memrouter.toml").write_text(text, encoding="utf-8")
        config = Config.load(cwd=folder, env={})
        assert config.unknown_keys == ()
        for name, section in config.backends.items():
            kind, options, _ = backend_settings(name, section)
            if kind == "graphiti":
                GraphitiConfig.from_mapping(options)
            else:
                ForgetfulConfig.from_mapping({"name": name, **section})
        tomllib.loads(text)


def test_the_projects_file_example_loads(tmp_path: Path) -> None:
    from memrouter.config.projects import load_projects

    example = next(block for block in blocks("toml") if block.startswith(PROJECTS_FILE))
    (tmp_path / "projects.toml").write_text(example, encoding="utf-8")
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

    example = next(json.loads(block) for block in blocks("json") if '"results"' in block)
    with Router.open(root=memories, index_dir=tmp_path / "idx") as router:
        hit = router.search("postgres", mode="lexical")[0]
    assert set(example["results"][0]) == set(hit.to_dict())
    assert set(example) == {"query", "mode", "took_ms", "results"}
