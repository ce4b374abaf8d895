"""``memrouter import`` from each format (fixtures built here), re-imports that change nothing, the write guard's
refusals counted, ``memrouter export`` archives that import back with identical hashes, and the digest."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrouter.cli import main
from memrouter.ops.context.tokens import count_tokens
from memrouter.ops.importing import project_key
from memrouter.router import Router
from memrouter.testing.guard_sets import fake

PASSWORD = 'password: "CFkfjVMuVBVKMLtGzrCM"'  # letters alone, quoted: the guard refuses it


def repository(base: Path) -> Path:
    project = base / "app"
    (project / ".serena" / "memories").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project


def cli(project: Path, *args: str) -> Any:
    cwd = os.getcwd()
    os.chdir(project)
    try:
        return CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(cwd)


def imported(project: Path, *args: str) -> dict[str, Any]:
    done = cli(project, "import", *args, "--format", "json")
    assert done.exit_code in (0, 1), done.output
    report: dict[str, Any] = json.loads(done.output)
    assert (done.exit_code == 1) == bool(report["counts"]["refused"] or report["counts"]["conflict"])
    return report


def memory_files(project: Path) -> dict[str, str]:
    root = project / ".serena" / "memories"
    return {
        str(p.relative_to(root))[:-3]: p.read_text() for p in sorted(root.rglob("*.md")) if ".memrouter" not in str(p)
    }


def write(folder: Path, files: dict[str, str]) -> Path:
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    return folder


def test_claude_code_auto_memory_from_its_own_place(tmp_path: Path) -> None:
    project = repository(tmp_path)
    memory = Path.home() / ".claude" / "projects" / project_key(project) / "memory"
    write(memory, {
        "MEMORY.md": "# Memory index\n\n- [Flaky tests](flaky_tests.md) — the port clash\n",
        "flaky_tests.md": "---\nname: flaky-tests\ndescription: why the port tests fail\ntype: project\n---\n"
                          "The port tests clash on 8080 when run in parallel; use PORT_BASE.\n",
        "feedback_style.md": "---\nname: style\ndescription: how the user wants answers\ntype: feedback\n---\n"
                             "# Answers\n\nShort answers.\n\n## Commits\n\nOne commit per change.\n",
        "leak.md": f"# Leak\n\nThe staging database {PASSWORD}\n",
    })  # fmt: skip
    report = imported(project, "--kind", "claude-code")
    assert report["counts"] == {"created": 4, "updated": 0, "unchanged": 0, "refused": 1, "conflict": 0}
    (refused,) = [item for item in report["items"] if item["action"] == "refused"]
    assert refused["name"] == "imported/claude-code/leak" and "secret_assignment" in refused["reason"]
    assert "CFkfjVMuVBVKMLtGzrCM" not in json.dumps(report) and "CFkfjVMuVBVKMLtGzrCM" not in str(memory_files(project))
    with Router.open(root=project / ".serena" / "memories") as router:
        flaky = router.get("imported/claude-code/flaky_tests")
        assert flaky.kind == "project" and flaky.source == "import:claude-code:flaky_tests.md"
        assert flaky.title == "why the port tests fail" and flaky.body.startswith("The port tests clash")
        commits = router.get("imported/claude-code/feedback_style/commits")
        assert commits.source == "import:claude-code:feedback_style.md#Commits" and commits.kind == "feedback"
        assert router.search("port clash parallel", mode="lexical")[0].name == "imported/claude-code/flaky_tests"
    # re-importing changes nothing; an edit of the source updates that memory alone
    before = memory_files(project)
    again = imported(project, "--kind", "claude-code")
    assert again["counts"] == {"created": 0, "updated": 0, "unchanged": 4, "refused": 1, "conflict": 0}
    assert memory_files(project) == before
    (memory / "flaky_tests.md").write_text((memory / "flaky_tests.md").read_text().replace("8080", "9090"))
    changed = imported(project, "--kind", "claude-code")
    assert changed["counts"]["updated"] == 1 and changed["counts"]["created"] == 0
    assert "9090" in memory_files(project)["imported/claude-code/flaky_tests"]


@pytest.mark.parametrize("kind", ["codex", "serena"])
def test_codex_memories_and_serena_global_memories(kind: str, tmp_path: Path) -> None:
    project = repository(tmp_path)
    home = Path.home() / (".codex" if kind == "codex" else ".serena")
    write(home / "memories", {"build.md": "# Build\n\nUse `uv sync` before the tests.\n",
                              "nested/deploy.md": "Deploy with `make ship`.\n"})  # fmt: skip
    report = imported(project, "--kind", kind)
    assert report["counts"]["created"] == 2
    names = sorted(item["name"] for item in report["items"])
    assert names == [f"imported/{kind}/build", f"imported/{kind}/nested/deploy"]
    assert f"source: import:{kind}:nested/deploy.md\n" in memory_files(project)[f"imported/{kind}/nested/deploy"]


def test_basic_memory_and_obsidian_folders_keep_front_matter_and_turn_wikilinks_into_mem_links(tmp_path: Path) -> None:
    project = repository(tmp_path)
    notes = write(tmp_path / "basic", {
        "Deploy.md": "---\ntitle: Deploy notes\ntype: note\npermalink: deploy-notes\ntags: [ops]\n---\n"
                     "# Deploy notes\n\nWe deploy on Tuesdays; see [[Rollback]] and [[people/Alice|our SRE]].\n\n"
                     "## Relations\n\n- relates_to [[Rollback#Steps]]\n- mentions [[Nowhere]]\n",
        "Rollback.md": "# Rollback\n\nForward-only migrations.\n\n## Steps\n\nRun `make rollback`.\n",
        "people/Alice.md": "Alice runs the on-call rotation.\n",
    })  # fmt: skip
    report = imported(project, str(notes), "--kind", "basic-memory")
    assert report["counts"]["created"] == 5
    files = memory_files(project)
    deploy = files["imported/basic-memory/deploy/deploy-notes"]
    assert "permalink: deploy-notes\n" in deploy and "- ops\n" in deploy and "type: note\n" in deploy
    assert "see [Rollback](mem:imported/basic-memory/rollback/rollback)" in deploy
    assert "[our SRE](mem:imported/basic-memory/people/alice)" in deploy
    relations = files["imported/basic-memory/deploy/relations"]
    assert "[Rollback](mem:imported/basic-memory/rollback/steps)" in relations and "[[Nowhere]]" in relations
    with Router.open(root=project / ".serena" / "memories") as router:
        edges = {(r.type, r.target) for r in router.neighbors("imported/basic-memory/deploy/deploy-notes")}
        assert any(target == "imported/basic-memory/rollback/rollback" for _, target in edges)
    vault = write(tmp_path / "vault", {".obsidian/app.json": "{}", "Idea.md": "An idea worth [[Idea|keeping]].\n"})
    report = imported(project, str(vault))
    assert report["kind"] == "obsidian" and [item["name"] for item in report["items"]] == ["imported/obsidian/idea"]
    assert "[keeping](mem:imported/obsidian/idea)" in memory_files(project)["imported/obsidian/idea"]


def test_mem0_and_openmemory_json_exports(tmp_path: Path) -> None:
    project = repository(tmp_path)
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(json.dumps({"results": [
        {"id": "6c1f0f7e-aaaa", "memory": "Prefers pytest over unittest", "user_id": "alice",
         "categories": ["preferences"], "created_at": "2026-01-05T10:00:00Z", "metadata": {"app": "cli"}},
        {"id": "7d2a", "memory": f"The deploy key is {fake('ghp', __import__('random').Random(3))}"},
        {"id": "8e3b", "memory": "   "},
    ]}))  # fmt: skip
    report = imported(project, str(mem0))
    assert report["kind"] == "mem0" and report["counts"]["created"] == 1 and report["counts"]["refused"] == 1
    (name,) = [item["name"] for item in report["items"] if item["action"] == "created"]
    assert name == "imported/mem0/prefers-pytest-over-unittest-6c1f0f7e"
    with Router.open(root=project / ".serena" / "memories") as router:
        memory = router.get(name)
        assert memory.tags == ("preferences",) and memory.created == "2026-01-05T10:00:00Z"
        assert memory.source == "import:mem0:mem0.json#6c1f0f7e-aaaa" and memory.extra["mem0_user_id"] == "alice"
    openmemory = tmp_path / "openmemory.json"
    openmemory.write_text(json.dumps({"memories": [{"id": "f00d", "content": "The API is versioned by date"}]}))
    assert imported(project, str(openmemory), "--kind", "mem0")["counts"]["created"] == 1


def test_a_single_file_dry_run_conflicts_and_bad_input(tmp_path: Path) -> None:
    project = repository(tmp_path)
    notes = write(tmp_path, {"notes.md": "# Notes\n\nAlpha beta gamma delta.\n\n## More\n\nEpsilon zeta eta.\n"})
    dry = imported(project, str(notes / "notes.md"), "--dry-run")
    assert [(i["name"], i["action"]) for i in dry["items"]] == [
        ("imported/notes/notes", "created"), ("imported/notes/more", "created")
    ]  # fmt: skip
    assert memory_files(project) == {}
    write(project / ".serena" / "memories", {"imported/notes/more.md": "# Mine\n\nA memory written by hand.\n"})
    report = imported(project, str(notes / "notes.md"))
    assert report["counts"] == {"created": 1, "updated": 0, "unchanged": 0, "refused": 0, "conflict": 1}
    assert memory_files(project)["imported/notes/more"] == "# Mine\n\nA memory written by hand.\n"
    # a repository file read in place as a source is not copied
    (project / "CLAUDE.md").write_text("# App\n\nRun make test.\n")
    done = cli(project, "import", "CLAUDE.md")
    assert done.exit_code == 2 and "read in place already" in done.output
    assert cli(project, "import").exit_code == 2
    assert cli(project, "import", str(notes), "--kind", "martian").exit_code == 2
    (tmp_path / "broken.json").write_text("{not json")
    assert cli(project, "import", str(tmp_path / "broken.json")).exit_code == 2


TEXTS = st.lists(
    st.tuples(
        st.lists(
            st.sampled_from("alpha beta gamma delta kiwi mango plum river stone cloud ünïcode 日本".split()),
            min_size=6,
            max_size=30,
        ),  # fmt: skip
        st.booleans(),
        st.sampled_from(["\n", "\r\n", ""]),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=TEXTS)
def test_export_then_import_restores_every_memory_with_identical_hashes(texts: Any, tmp_path_factory: Any) -> None:
    base = tmp_path_factory.mktemp("roundtrip")
    source = repository(base / "a")
    root = source / ".serena" / "memories"
    for number, (words, with_front_matter, ending) in enumerate(texts):
        body = f"# Note {number}\n\nunique{number}x " + " ".join(words) + ending
        text = f"---\ntags: [t{number}]\nconfidence: 0.8\n---\n{body}" if with_front_matter else body
        path = root / f"n/{number}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))  # by hand, byte for byte
    archive = base / "archive.jsonl"
    assert cli(source, "export", str(archive)).exit_code == 0
    lines = [json.loads(line) for line in archive.read_text().splitlines()]
    assert lines[0]["format"] == "memrouter-archive" and lines[0]["memories"] == len(texts)
    target = repository(base / "b")
    report = imported(target, str(archive))
    assert report["counts"]["created"] == len(texts), report
    original = {p.relative_to(root): p.read_bytes() for p in root.rglob("*.md")}
    restored_root = target / ".serena" / "memories"
    assert {p.relative_to(restored_root): p.read_bytes() for p in restored_root.rglob("*.md")} == original
    with Router.open(root=restored_root) as router:
        assert {line["name"]: line["hash"] for line in lines[1:]} == {m.name: m.hash for m in router.list()}
    assert imported(target, str(archive))["counts"]["unchanged"] == len(texts)


def test_an_archive_line_whose_hash_does_not_match_is_refused(tmp_path: Path) -> None:
    project = repository(tmp_path)
    archive = tmp_path / "a.jsonl"
    archive.write_text(json.dumps({"name": "x", "text": "# X\n\nchanged after export\n", "hash": "0" * 64}) + "\n")
    report = imported(project, str(archive))
    assert report["counts"]["refused"] == 1 and memory_files(project) == {}


def test_the_digest_goes_between_markers_in_a_budget_and_is_never_read_back(tmp_path: Path) -> None:
    project = repository(tmp_path)
    root = project / ".serena" / "memories"
    write(root, {
        "conventions/commits.md": "---\nkind: convention\n---\n# Commit messages\n\nImperative mood; name the issue.\n",
        "decisions/db.md": "---\nkind: decision\npinned: true\n---\n# Database\n\nPostgreSQL, one per region.\n",
        **{f"facts/f{n}.md": f"# Fact {n}\n\nFact number {n} about the ledger service and its quirks.\n"
           for n in range(60)},
    })  # fmt: skip
    agents = project / "AGENTS.md"
    agents.write_text("# Agents\n\nRun make test.\n")
    dry = cli(project, "export", "--digest", "--dry-run", "--max-tokens", "300")
    assert dry.exit_code == 0 and "+<!-- memrouter:digest start -->" in dry.output
    assert agents.read_text() == "# Agents\n\nRun make test.\n"
    assert cli(project, "export", "--digest", "--max-tokens", "300").exit_code == 0
    text = agents.read_text()
    assert text.startswith("# Agents\n\nRun make test.\n\n<!-- memrouter:digest start -->\n")
    section = text.split("<!-- memrouter:digest start -->\n")[1].split("<!-- memrouter:digest end -->")[0]
    assert count_tokens(section) <= 300 + 20  # the budget, and the "more" line
    lines = [line for line in section.splitlines() if line.startswith("- ")]
    assert lines[0].startswith("- **Database** [decision]") and lines[1].startswith("- **Commit messages**")
    assert 3 <= len(lines) < 62 and "more: `memrouter list`" in section
    assert cli(project, "export", "--digest", "--max-tokens", "300").exit_code == 0
    assert agents.read_text() == text  # idempotent
    with Router.open(root=root) as router:  # AGENTS.md is a source; its digest is not read back
        assert router.search("Imperative mood", mode="lexical")[0].name == "conventions/commits"
        assert [hit.name for hit in router.search("Imperative mood", mode="lexical")] == ["conventions/commits"]
    into = project / "CLAUDE.md"
    assert cli(project, "export", "--digest", "--into", str(into)).exit_code == 0
    assert "<!-- memrouter:digest end -->" in into.read_text()
