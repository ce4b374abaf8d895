"""``[sources]``: CLAUDE.md, AGENTS.md, Cursor rules and ADRs searched in place as read-only memories, split by
heading, with their path and heading as provenance, following edits like memory files."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from memrouter.config.settings import Config
from memrouter.core.errors import ConfigError, InvalidInput, NotFound
from memrouter.router import Router

CLAUDE = """# Acme app

The app sells quokka plush toys.

## Build and test

Run `make test`; the flaky port tests need `PORT_BASE=9000`.

## Style

Format with ruff.

## Style

Second style section: imports sorted.

<!-- memrouter:guide start -->
## Project memory (memrouter)

zebra guidance that memrouter itself wrote
<!-- memrouter:guide end -->
"""
ADR = """# ADR-003: Use PostgreSQL

## Context

We need transactions across the ledger tables.

## Decision

PostgreSQL 16 with pgvector, one database per region.
"""
RULE = """---
description: Python conventions for the billing service
globs: ["billing/**/*.py"]
alwaysApply: false
---
Use type hints everywhere; never a bare except.
"""


def repository(base: Path) -> Path:
    project = base / "app"
    (project / ".serena" / "memories").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "CLAUDE.md").write_text(CLAUDE)
    (project / "AGENTS.md").write_text("Run the linters before you push.\n")
    (project / "docs" / "adr").mkdir(parents=True)
    (project / "docs" / "adr" / "0003-postgres.md").write_text(ADR)
    (project / "docs" / "adr" / "README.txt").write_text("not markdown: not read\n")
    (project / ".cursor" / "rules").mkdir(parents=True)
    (project / ".cursor" / "rules" / "python.mdc").write_text(RULE)
    (project / "README.md").write_text("# Readme\n\nnot a source by default\n")
    (project / ".serena" / "memories" / "deploys.md").write_text("# Deploys\n\nWe deploy on Tuesdays.\n")
    return project


def opened(project: Path, **kwargs: object) -> Router:
    return Router.open(config=Config.load(cwd=project, env={}), **kwargs)  # type: ignore[arg-type]


def test_sources_are_split_by_heading_with_path_and_heading_as_provenance(tmp_path: Path) -> None:
    project = repository(tmp_path)
    with opened(project) as router:
        names = [item.name for item in router.list()]
        assert names == [
            ".cursor/rules/python.mdc#python", "AGENTS.md#agents", "CLAUDE.md#acme-app", "CLAUDE.md#build-and-test",
            "CLAUDE.md#style", "CLAUDE.md#style-2", "deploys", "docs/adr/0003-postgres.md#adr-003-use-postgresql",
            "docs/adr/0003-postgres.md#context", "docs/adr/0003-postgres.md#decision",
        ]  # fmt: skip
        build = router.get("CLAUDE.md#build-and-test")
        assert build.text == "## Build and test\n\nRun `make test`; the flaky port tests need `PORT_BASE=9000`.\n"
        assert build.source == "CLAUDE.md#Build and test" and build.title == "Acme app: Build and test"
        assert build.path == str(project / "CLAUDE.md")
        decision = router.get("docs/adr/0003-postgres.md#decision")
        assert decision.kind == "adr" and decision.source == "docs/adr/0003-postgres.md#Decision"
        rule = router.get(".cursor/rules/python.mdc#python")
        assert rule.title == "Python conventions for the billing service"  # the rule's description, not "---"
        assert rule.text == "Use type hints everywhere; never a bare except.\n" and rule.kind == "convention"
        assert rule.extra["globs"] == ["billing/**/*.py"] and rule.extra["alwaysApply"] is False
        assert router.get("AGENTS.md#agents").source == "AGENTS.md"
        hits = router.search("flaky port tests", mode="lexical")
        assert hits[0].name == "CLAUDE.md#build-and-test"
        assert router.search("ledger transactions region", mode="lexical")[0].name.startswith("docs/adr/")
        # memrouter's own marked sections are not read back
        assert router.search("zebra guidance", mode="lexical") == []
        context = router.assemble_context("how do I run the flaky port tests", format="markdown")
        assert "PORT_BASE=9000" in context.rendered


def test_sources_follow_edits_like_memory_files(tmp_path: Path) -> None:
    project = repository(tmp_path)
    with opened(project, watch=True) as router:  # a long-lived router, as the MCP server holds
        assert router.search("quokka", mode="lexical")[0].name == "CLAUDE.md#acme-app"
        claude = project / "CLAUDE.md"
        claude.write_text(CLAUDE.replace("## Style\n\nFormat with ruff.\n\n", "").replace("quokka", "wombat"))

        def names(query: str) -> list[str]:
            for _ in range(50):
                found = [hit.name for hit in router.search(query, mode="lexical")]
                if found or query != "wombat":
                    return found
                time.sleep(0.1)
            return found

        assert names("wombat") == ["CLAUDE.md#acme-app"] and names("quokka") == []
        assert "CLAUDE.md#style-2" not in [item.name for item in router.list()]  # one Style section left
        assert router.get("CLAUDE.md#style").text.endswith("imports sorted.\n")
        (project / "docs" / "adr" / "0004-queues.md").write_text("# ADR-004: Queues\n\nUse SQS for the mailer.\n")
        (project / "docs" / "adr" / "0003-postgres.md").unlink()
        for _ in range(50):
            listed = [item.name for item in router.list()]
            if "docs/adr/0004-queues.md#adr-004-queues" in listed:
                break
            time.sleep(0.1)
        assert [name for name in listed if name.startswith("docs/")] == ["docs/adr/0004-queues.md#adr-004-queues"]
        with pytest.raises(NotFound):
            router.get("docs/adr/0003-postgres.md#decision")
        # a rebuild of the index from nothing finds the same sections
        report = router.refresh(full=True)
        assert report.added == [] and report.removed == []


def test_sources_are_configured_and_checked(tmp_path: Path) -> None:
    project = repository(tmp_path)
    (project / "memrouter.toml").write_text('[sources]\nglobs = ["README.md", "docs/**/*.md"]\n')
    with opened(project) as router:
        names = [item.name for item in router.list()]
        assert "README.md#readme" in names and "docs/adr/0003-postgres.md#decision" in names
        assert not any(name.startswith(("CLAUDE.md", "AGENTS.md", ".cursor")) for name in names)
        assert router.status()["config"]["sources"] == ["README.md", "docs/**/*.md"]
    (project / "memrouter.toml").write_text("[sources]\nglobs = []\n")
    with opened(project) as router:
        assert [item.name for item in router.list()] == ["deploys"]
    for bad in ('globs = "CLAUDE.md"', 'globs = ["../secrets.md"]', 'globs = ["/etc/*.md"]'):
        (project / "memrouter.toml").write_text(f"[sources]\n{bad}\n")
        with pytest.raises(ConfigError):
            Config.load(cwd=project, env={})


def test_a_root_outside_a_repository_reads_no_sources_and_a_memory_file_cannot_take_a_sections_name(
    tmp_path: Path,
) -> None:
    project = repository(tmp_path)
    root = project / ".serena" / "memories"
    (root / "CLAUDE.md#style.md").write_text("# Impostor\n\nnot a section\n")
    with opened(project) as router:
        assert router.get("CLAUDE.md#style").text.startswith("## Style\n\nFormat with ruff.")
        assert "rename the file" in str(router.status()["problems"])
        with pytest.raises(InvalidInput, match="read-only"):
            router.delete("CLAUDE.md#style")
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "a.md").write_text("# A\n\nalpha\n")
    with Router.open(root=loose, index_dir=tmp_path / "idx") as router:
        assert [item.name for item in router.list()] == ["a"]


def test_the_janitor_never_retires_a_source_section(tmp_path: Path) -> None:
    project = repository(tmp_path)
    section = "## Build and test\n\nRun `make test`; the flaky port tests need `PORT_BASE=9000`.\n"
    (project / ".serena" / "memories" / "build.md").write_text(section)  # an exact copy, written by hand
    with opened(project) as router:
        report = router.janitor(apply=True)
        retired = [p.name for p in report.proposals if p.applied]
        assert not any("#" in name for name in retired)
    assert (project / "CLAUDE.md").read_text() == CLAUDE
