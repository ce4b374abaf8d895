"""Anchors and ``memrouter verify`` over a real git repository built commit by commit (no fakes).

The fixture repository holds, in controlled commits: a function edited while
its sibling is not, a file renamed, a symbol moved to another file, a file
deleted, a memory verified after a change, an uncommitted edit, and a path
mentioned only inside a fenced example. Each memory's state is asserted exactly.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import pytest

from memrouter import Router
from memrouter.anchors.infer import Known, distinctive, infer_anchors
from memrouter.anchors.spec import parse_anchor
from memrouter.anchors.symbols import Parsers
from memrouter.core.errors import NotFound, Refused
from memrouter.ops.verify import accept, verify
from memrouter.testing.guard_sets import fake

MEMORIES = ".serena/memories"
INVOICE = (
    "class Invoice:\n"
    "    def total(self):\n"
    "        return round(self.amount, 2)\n"
    "\n"
    "    def subtotal(self):\n"
    "        return self.amount\n"
)


def git(project: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=project, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def put(project: Path, path: str, text: str | bytes) -> None:
    file = project / path
    file.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        file.write_bytes(text)
    else:
        file.write_text(text, encoding="utf-8")


def commit(project: Path, message: str, *paths: str) -> str:
    git(project, "add", *(paths or ("-A",)))
    git(project, "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-q", "-m", message)
    return git(project, "rev-parse", "HEAD")


def memory(project: Path, name: str, text: str) -> None:
    put(project, f"{MEMORIES}/{name}.md", text)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The fixture repository (see the module docstring), its history made of five commits."""
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    put(project, ".gitignore", ".memrouter/\n")
    put(project, "billing/invoice.py", INVOICE)
    put(project, "billing/tax.py", "def rate():\n    return 0.2\n\n\ndef region():\n    return 'eu'\n")
    put(project, "scripts/retry.sh", "#!/bin/sh\nretry() {\n  echo again\n}\n")
    put(project, "lib/helpers.py", "def slugify(text):\n    return text.lower()\n\n\ndef other():\n    return 1\n")
    put(project, "old/legacy.py", "LIMIT = 1\n")
    put(project, "docs/guide.txt", "one\ntwo\nthree\nfour\n")
    memory(project, "total", "---\nanchors:\n  - billing/invoice.py#Invoice.total\n---\n# Total\n\nRounds to cents.\n")
    memory(
        project, "subtotal", "---\nanchors: [billing/invoice.py#Invoice.subtotal]\n---\n# Subtotal\n\nNo rounding.\n"
    )
    memory(project, "retry", "# Retry\n\nThe retry policy lives in `scripts/retry.sh`.\n")
    memory(project, "slugs", "---\nanchors: [lib/helpers.py#slugify]\n---\n# Slugs\n\nLower case.\n")
    memory(project, "legacy", "---\nanchors: [old/legacy.py]\n---\n# Legacy\n\nThe old limit.\n")
    memory(project, "checked", "---\nanchors: [billing/invoice.py#Invoice.total]\n---\n# Checked\n\nRounds.\n")
    memory(project, "tax", "# Tax\n\nThe rate is `billing/tax.py#rate`; regions in `region()` are not covered.\n")
    memory(project, "example", "# Example\n\nLike this:\n\n```sh\ncat billing/tax.py\n```\n")
    memory(project, "guide", "# Guide\n\nSee docs/guide.txt:2-3 for the middle.\n")
    memory(project, "plain", "# Plain\n\nNothing about code here.\n")
    commit(project, "code and memories")
    put(project, "billing/invoice.py", INVOICE.replace("round(self.amount, 2)", "round(self.amount, 2, 'even')"))
    commit(project, "total rounds half-even")
    put(project, "docs/guide.txt", "zero\none\ntwo\nthree\nfour\n")  # the guide's lines move down, unchanged
    git(project, "mv", "scripts/retry.sh", "scripts/retry-policy.sh")
    commit(project, "rename the retry script")
    put(project, "lib/text.py", "def slugify(text):\n    return text.lower()\n")
    put(project, "lib/helpers.py", "def other():\n    return 1\n")
    (project / "old" / "legacy.py").unlink()
    commit(project, "slugify moves to lib/text.py; legacy goes")
    put(
        project, "billing/tax.py", "def rate():\n    return 0.25\n\n\ndef region():\n    return 'eu'\n"
    )  # not committed
    return project


def open_router(project: Path) -> Router:
    return Router.open(root=project / MEMORIES, index_dir=project / ".memrouter", watch=False)


def states(report: object) -> dict[str, str]:
    return {check.name: check.status for check in report.memories}  # type: ignore[attr-defined]


def anchor(report: object, name: str) -> dict[str, object]:
    found = next(check for check in report.memories if check.name == name)  # type: ignore[attr-defined]
    return found.anchors[0].to_dict()  # type: ignore[no-any-return]


def test_every_case_of_the_fixture_has_its_exact_state(project: Path) -> None:
    with open_router(project) as router:
        accept(router.workspace, "checked")  # stamped after the change: fresh again (uncommitted: checked now)
        commit(project, "checked verified", f"{MEMORIES}/checked.md")
        report = verify(router.workspace)
    assert states(report) == {
        "total": "stale",  # its function changed
        "subtotal": "fresh",  # only its sibling changed
        "retry": "stale",  # its file was renamed: moved
        "slugs": "stale",  # its function moved to another file
        "legacy": "broken",  # its file was deleted
        "checked": "fresh",  # verified after the change
        "tax": "stale",  # an uncommitted edit of its function
        "guide": "fresh",  # its lines moved down, unchanged
    }  # "example" (a path only in a fenced example) and "plain" have no anchors
    total = anchor(report, "total")
    assert total["symbol"] == "Invoice.total" and total["status"] == "stale"
    assert total["changed_in"] == [git(project, "rev-parse", "HEAD~3")]
    assert "-        return round(self.amount, 2)" in str(total["diff"])
    assert "'even'" in str(total["diff"]) and "subtotal" not in str(total["diff"])
    summary = next(c for c in report.memories if c.name == "total").summary
    short = git(project, "rev-parse", "--short=7", "HEAD~3")
    assert summary == f"stale: billing/invoice.py#Invoice.total changed in {short}, 3 commits ago"
    subtotal = anchor(report, "subtotal")
    assert subtotal["status"] == "fresh" and "did not" in str(subtotal["note"])
    retry = anchor(report, "retry")
    assert (retry["status"], retry["moved_to"], retry["origin"]) == ("moved", "scripts/retry-policy.sh", "inferred")
    slugs = anchor(report, "slugs")
    assert (slugs["status"], slugs["moved_to"]) == ("moved", "lib/text.py#slugify")
    legacy = anchor(report, "legacy")
    assert legacy["status"] == "broken" and legacy["changed_in"] == [git(project, "rev-parse", "HEAD~1")]
    tax = anchor(report, "tax")
    assert (tax["symbol"], tax["status"], tax["uncommitted"], tax["changed_in"]) == ("rate", "stale", True, None)
    assert "uncommitted" in str(tax["note"])
    guide = anchor(report, "guide")
    assert (guide["status"], guide["lines"]) == ("fresh", "L3-L4")
    checked = next(c for c in report.memories if c.name == "checked")
    assert checked.verified == git(project, "rev-parse", "HEAD~1")


def test_the_json_contract_and_the_check_exit_code(project: Path) -> None:
    base = [
        sys.executable,
        "-m",
        "memrouter",
        "--root",
        str(project / MEMORIES),
        "--index-dir",
        str(project / ".memrouter"),
    ]
    done = subprocess.run([*base, "verify", "--format", "json"], capture_output=True, text=True, cwd=project)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    for item in data["memories"]:
        assert {"name", "status"} <= item.keys() and item["status"] in ("fresh", "stale", "broken")
        for entry in item["anchors"]:
            assert {"path", "symbol", "lines", "status", "changed_in", "moved_to"} <= entry.keys()
    checked = subprocess.run([*base, "verify", "--check", "subtotal"], capture_output=True, text=True, cwd=project)
    assert checked.returncode == 0 and checked.stdout.startswith("fresh   subtotal")
    failing = subprocess.run(
        [*base, "verify", "--check", "--format", "github"], capture_output=True, text=True, cwd=project
    )
    assert failing.returncode == 1
    assert f"::error file={MEMORIES}/legacy.md,line=1,title=memrouter verify::broken: old/legacy.py" in failing.stdout
    assert f"::warning file={MEMORIES}/retry.md,line=3," in failing.stdout  # the line the anchor was inferred from
    bad = subprocess.run([*base, "verify", "no-such-memory"], capture_output=True, text=True, cwd=project)
    assert bad.returncode == 1 and "no memory 'no-such-memory'" in bad.stderr


def test_accept_stamps_the_head_commit_through_the_write_guard(project: Path) -> None:
    with open_router(project) as router:
        stamped = accept(router.workspace, "total")
        assert stamped.extra["verified"] == git(project, "rev-parse", "HEAD")
        assert "verified: " in (project / MEMORIES / "total.md").read_text()
        assert states(verify(router.workspace, ["total"])) == {"total": "fresh"}
        commit(project, "total checked", f"{MEMORIES}/total.md")
        assert states(verify(router.workspace, ["total"])) == {"total": "fresh"}
        memory(
            project, "leaky", f"---\nanchors: [billing/tax.py]\n---\n# Leak\n\ntoken {fake('ghp', random.Random(5))}\n"
        )
        with pytest.raises(Refused):
            accept(router.workspace, "leaky")
        with pytest.raises(NotFound):
            accept(router.workspace, "nothing-here")


def test_since_keeps_what_later_commits_made_stale(project: Path) -> None:
    with open_router(project) as router:
        later = verify(router.workspace, since=git(project, "rev-parse", "HEAD~1"))
        assert set(states(later)) == {"slugs", "legacy", "tax"}  # moved and deleted by the last commit; uncommitted
        assert set(states(verify(router.workspace, since="HEAD"))) == {"tax"}


def test_bad_input_gets_a_message_per_anchor_and_nothing_else_fails(project: Path) -> None:
    put(project, "assets/logo.png", b"\x89PNG\r\n\x1a\n\x00\x00binary")
    memory(
        project, "bad", "---\nanchors: [../outside.py, /etc/passwd, missing/file.py, assets/logo.png#Logo, "
        "billing/invoice.py#Nope, deadbeefcafe]\n---\n# Bad\n\nAnchors that cannot hold.\n",
    )  # fmt: skip
    commit(project, "a memory with bad anchors", "assets", MEMORIES)
    with open_router(project) as router:
        report = verify(router.workspace)
    bad = next(check for check in report.memories if check.name == "bad")
    notes = {a.written: (a.status, a.note) for a in bad.anchors}
    assert notes["../outside.py"] == ("broken", "'../outside.py' is outside the repository")
    assert notes["/etc/passwd"][0] == "broken" and "absolute path" in str(notes["/etc/passwd"][1])
    assert notes["missing/file.py"] == ("broken", "no file missing/file.py, then or now")
    assert notes["assets/logo.png#Logo"][0] == "broken" and "binary file" in str(notes["assets/logo.png#Logo"][1])
    assert notes["billing/invoice.py#Nope"][0] == "broken" and "Nope" in str(notes["billing/invoice.py#Nope"][1])
    assert notes["deadbeefcafe"] == ("broken", "commit deadbeefcafe is not in this branch's history")
    assert states(report)["subtotal"] == "fresh"  # the rest is checked as before


def test_a_folder_without_git_says_so_per_anchor(tmp_path: Path) -> None:
    root = tmp_path / "notes" / MEMORIES
    root.mkdir(parents=True)
    (root / "a.md").write_text("---\nanchors: [src/a.py#f]\n---\n# A\n\ntext\n")
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        report = verify(router.workspace)
    assert [(c.name, c.status) for c in report.memories] == [("a", "unknown")]
    assert "not in a git repository" in str(report.memories[0].anchors[0].note)


def test_renames_and_new_commits_are_read_incrementally(project: Path) -> None:
    with open_router(project) as router:
        first = verify(router.workspace)
        put(project, "billing/invoice.py", INVOICE.replace("return self.amount\n", "return self.amount + 0\n"))
        commit(project, "subtotal changes", "billing/invoice.py")
        second = verify(router.workspace)
        assert states(first)["subtotal"] == "fresh" and states(second)["subtotal"] == "stale"
        cached = router.workspace.conn.execute("SELECT count(*) FROM anchor_definitions").fetchone()[0]
        assert cached > 0
    # A fresh index (a fresh clone) knows the same at once.
    (project / ".memrouter" / "index.sqlite").unlink()
    with open_router(project) as router:
        assert states(verify(router.workspace)) == states(second)


def test_search_marks_and_lowers_stale_memories_and_context_labels_them(project: Path) -> None:
    with open_router(project) as router:
        before = {hit.name: hit.score for hit in router.search("rounds", mode="lexical")}
        verify(router.workspace)
        hits = {hit.name: hit for hit in router.search("rounds", mode="lexical")}
        assert set(hits) == set(before)  # still findable
        marks = [m for m in hits["total"].why if m.retriever == "anchors"]
        assert marks and marks[0].detail and marks[0].detail.startswith("stale: billing/invoice.py#Invoice.total")
        assert hits["total"].score == pytest.approx(before["total"] * (1 - router.config.anchors.stale_share), abs=1e-6)
        assert not [m for m in hits["checked"].why if m.retriever == "anchors"] or True
        context = router.assemble_context("rounds to cents", max_tokens=1500)
        assert 'check="stale: billing/invoice.py#Invoice.total' in context.rendered
        assert router.status()["anchors"]["stale"] >= 1


def test_stale_share_is_the_configured_share(project: Path) -> None:
    (project / "memrouter.toml").write_text("[anchors]\nstale_share = 0\n")
    with open_router(project) as router:
        verify(router.workspace)
        assert router.status()["config"]["anchors"]["stale_share"] == 0.0
        hits = router.search("rounds", mode="lexical")
        assert not [m for hit in hits for m in hit.why if m.retriever == "anchors"]


def test_infer_off_leaves_only_front_matter_anchors(project: Path) -> None:
    (project / "memrouter.toml").write_text("[anchors]\ninfer = false\n")
    with open_router(project) as router:
        found = states(verify(router.workspace))
    assert "retry" not in found and "tax" not in found and "total" in found


def test_the_janitor_proposes_stale_memories_for_review(project: Path) -> None:
    with open_router(project) as router:
        verify(router.workspace)
        report = router.janitor(apply=True)
        review = {p.name for p in report.proposals if p.action == "review"}
        assert {"total", "legacy", "retry"} <= review
        assert not any(p.applied for p in report.proposals if p.action == "review")
        assert router.get("total").status == "active"


def test_inference_finds_paths_symbols_and_lines_but_not_examples() -> None:
    files = {"src/pay/invoice.py", "scripts/retry.ps1", "docs/a.md", ".serena/memories/other.md"}
    known = Known(
        is_file=files.__contains__,
        by_basename=lambda name: [path for path in files if path.rsplit("/", 1)[-1] == name],
        memories=".serena/memories",
        definitions=lambda name: [("src/pay/invoice.py", "Invoice.total_due")] if name == "total_due" else [],
    )
    text = (
        "See `src/pay/invoice.py#Invoice.total`, [the script](../../scripts/retry.ps1) and src/pay/invoice.py:10-12.\n"
        "`retry.ps1` and `total_due()` too; `scratch` is a plain word; [a memory](other.md).\n"
        "```\nsrc/pay/invoice.py in an example\n```\n"
        "Run `python src/pay/invoice.py` (a command line).\n"
    )
    found = [(a.key, a.line) for a in infer_anchors(text, ".serena/memories", known)]
    assert found == [
        ("src/pay/invoice.py#Invoice.total", 1),
        ("scripts/retry.ps1", 1),
        ("src/pay/invoice.py:L10-L12", 1),
        ("src/pay/invoice.py#Invoice.total_due", 2),
    ]
    assert distinctive("total_due") and distinctive("Get-Thing") and not distinctive("scratch")


def test_front_matter_forms_parse_and_bad_ones_say_why() -> None:
    assert parse_anchor("a/b.py#C.m").symbol == "C.m"
    assert parse_anchor("a/b.py::C::m").symbol == "C.m"
    assert parse_anchor("a/b.py:L10-L40").lines == (10, 40)
    assert parse_anchor("a/b.py:7").lines == (7, 7)
    assert parse_anchor("commit:ABCDEF1").commit == "abcdef1"
    assert parse_anchor("a/../../x.py").problem == "'a/../../x.py' is outside the repository"
    assert parse_anchor("a\\b.py").problem is not None
    assert parse_anchor("a/b.py:L9-L3").problem is not None


@pytest.mark.parametrize(
    ("suffix", "source", "expected"),
    [
        ("py", b"class A:\n    @property\n    def f(self):\n        return 1\n", {"A", "A.f"}),
        ("ts", b"export const f = () => 1;\nexport class C { m(): number { return 1 } }\n", {"f", "C", "C.m"}),
        ("go", b"package p\ntype S struct{}\nfunc (s *S) Len() int { return 0 }\n", {"S", "S.Len"}),
        ("rs", b"struct T;\nimpl<'a> Clone for &'a mut T { fn clone(&self) -> Self { todo!() } }\n", {"T", "T.clone"}),
        ("java", b"class J { int MAX, MIN; void run() {} }\n", {"J", "J.MAX", "J.MIN", "J.run"}),
        ("cs", b"class K {\n#if DEBUG\n  void A() {}\n#else\n  void A() { }\n#endif\n}\n", {"K", "K.A"}),
        ("sh", b"setup() { inner() { :; }; }\n", {"setup", "inner"}),
        (
            "ps1",
            b"function global:Set-Thing { }\nclass P { [int] Total() { return 1 } }\n",
            {"Set-Thing", "P", "P.Total"},
        ),
    ],
)
def test_symbols_of_each_language(suffix: str, source: bytes, expected: set[str]) -> None:
    from memrouter.anchors.symbols import language_for

    found = Parsers().definitions(source, language_for(f"x.{suffix}") or "")
    assert found is not None and set(found) == expected


def test_a_sibling_edit_keeps_the_digest_and_a_body_edit_changes_it() -> None:
    parsers = Parsers()
    before = parsers.definitions(INVOICE.encode(), "python")
    after_source = INVOICE.replace("return self.amount\n", "return self.amount * 2\n").encode()
    after = parsers.definitions(after_source, "python")
    assert before and after
    assert before["Invoice.total"].digest_in(INVOICE.encode()) == after["Invoice.total"].digest_in(after_source)
    assert before["Invoice.subtotal"].digest_in(INVOICE.encode()) != after["Invoice.subtotal"].digest_in(after_source)


def test_a_language_without_a_grammar_is_checked_at_file_level(project: Path) -> None:
    put(project, "native/calc.kt", "fun add(a: Int) = a\n")
    memory(project, "kotlin", "---\nanchors: [native/calc.kt#add]\n---\n# Kotlin\n\nadds.\n")
    commit(project, "kotlin", "native", MEMORIES)
    put(project, "native/calc.kt", "fun add(a: Int) = a + 0\n")
    commit(project, "kotlin changes", "native")
    with open_router(project) as router:
        found = anchor(verify(router.workspace, ["kotlin"]), "kotlin")
    assert found["status"] == "stale" and "checked at file level" in str(found["note"])


def test_a_cold_lexical_search_loads_no_parser(project: Path, tmp_path: Path) -> None:
    with open_router(project) as router:
        verify(router.workspace)
    argv = [
        "--root",
        str(project / MEMORIES),
        "--index-dir",
        str(project / ".memrouter"),
        "search",
        "rounds",
        "--mode",
        "lexical",
    ]
    code = f"import sys\nfrom memrouter.cli.console import main\nsys.argv = ['memrouter', *{argv!r}]\nmain()\n"
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True)
    assert "total" in done.stdout, done.stderr[-500:]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert not {name for name in imported if name.startswith(("tree_sitter", "memrouter.anchors", "memrouter.repo"))}


def test_the_hook_reports_what_a_commit_makes_stale(project: Path) -> None:
    from memrouter.external.sync.hook import install_hook
    from memrouter.external.sync.queue import QUEUE_FILE

    git(project, "checkout", "--", "billing/tax.py")
    with open_router(project) as router:
        verify(router.workspace)  # writes the anchored paths the hook checks
        install_hook(project / MEMORIES, project / ".memrouter" / QUEUE_FILE, python=sys.executable)
    put(project, "billing/tax.py", "def rate():\n    return 0.3\n\n\ndef region():\n    return 'eu'\n")
    git(project, "add", "billing/tax.py")
    done = subprocess.run(
        ["git", "-c", "user.name=Ada", "-c", "user.email=ada@example.com", "commit", "-m", "rate"],
        cwd=project, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "memrouter: this commit makes 1 memories stale or broken:" in done.stderr
    assert "tax: billing/tax.py#rate changed" in done.stderr


def test_the_web_ui_shows_a_memorys_anchors_and_the_anchored_diff(project: Path) -> None:
    from starlette.testclient import TestClient

    from memrouter.ui.app import create_app

    with open_router(project) as router:
        client = TestClient(create_app(router), base_url="http://127.0.0.1:8766")
        page = client.get("/memory/total").text
        assert "Anchors" in page and "anchor-stale" in page and "billing/invoice.py#Invoice.total" in page
        assert "anchored diff" in page and "round(self.amount, 2, &#39;even&#39;)" in page
        found = client.get("/", params={"q": "rounds", "mode": "lexical"}).text
        assert "stale: billing/invoice.py#Invoice.total" in found


def test_check_shows_what_a_text_would_be_anchored_to(project: Path) -> None:
    base = [
        sys.executable,
        "-m",
        "memrouter",
        "--root",
        str(project / MEMORIES),
        "--index-dir",
        str(project / ".memrouter"),
    ]
    text = "# Fees\n\nThe rate is `billing/tax.py#rate`; see scripts/retry-policy.sh.\n\n```\nold/legacy.py\n```\n"
    done = subprocess.run([*base, "check", "-", "--format", "json"], input=text, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert [a["anchor"] for a in json.loads(done.stdout)["anchors"]] == [
        "billing/tax.py#rate",
        "scripts/retry-policy.sh",
    ]
    shown = subprocess.run([*base, "check", "-"], input=text, capture_output=True, text=True).stdout
    assert "anchors:\n  billing/tax.py#rate (inferred symbol)" in shown


def test_an_mcp_save_says_what_the_memory_is_tied_to(project: Path) -> None:
    from memrouter.mcp.service import MemoryService

    with open_router(project) as router:
        saved = MemoryService(router).save("# Fees\n\nThe fee rounding is in `billing/invoice.py#Invoice.total`.\n")
        assert saved["anchors"] == ["billing/invoice.py#Invoice.total"]
        plain = MemoryService(router).save("# Nothing\n\nNo code named here at all.\n")
        assert "anchors" not in plain
        cached = router.workspace.conn.execute("SELECT count(*) FROM anchor_inferred").fetchone()[0]
        assert cached >= 2  # recorded: the next verification reads them from the index


def test_a_first_runs_early_names_read_is_stopped_when_no_memory_needs_it(project: Path) -> None:
    """With no names cached and HEAD moved, git starts reading the defined names at once (a first run infers);
    when every memory is kept from its last check after all, that git is stopped and the states are the same."""
    with open_router(project) as router:
        first = verify(router.workspace)
        conn = router.workspace.conn
        conn.execute("DELETE FROM anchor_cache WHERE key IN ('names', 'history.head')")
        conn.commit()
        assert states(verify(router.workspace)) == states(first)
        assert conn.execute("SELECT count(*) FROM anchor_cache WHERE key = 'names'").fetchone()[0] == 0


def test_files_parsed_ahead_are_parsed_once_and_only_while_there_is_time(project: Path) -> None:
    """``parse_ahead`` (run while git reads the history) parses the source files now, each once, skipping what a
    check would not parse (no file, no grammar), and stops as soon as it is told there is no more time."""
    from memrouter.anchors.reading import Repository
    from memrouter.repo.history import PathHistory
    from memrouter.repo.tree import BlobReader, work_tree

    put(project, "data.bin", b"\0\1\2")
    with BlobReader(project) as blobs:
        repository = Repository(project, PathHistory(), work_tree(project), blobs, Parsers())
        wanted = ["billing/invoice.py", "lib/gone.py", "docs/guide.txt", "data.bin", "billing/tax.py"]
        assert repository.parse_ahead(wanted, lambda: False) == 0 and not repository.learned
        assert repository.parse_ahead([*wanted, "billing/invoice.py"], lambda: True) == 2
        assert repository.parse_ahead(wanted, lambda: True) == 0  # parsed already
        invoice = repository.now("billing/invoice.py")
        assert invoice is not None and set(repository.learned[invoice[0]][1]) >= {"Invoice.total", "Invoice.subtotal"}
        rounds = iter([True, False])
        fresh = Repository(project, PathHistory(), work_tree(project), blobs, Parsers())
        assert fresh.parse_ahead(["billing/invoice.py", "billing/tax.py"], lambda: next(rounds)) == 1


def test_paths_with_spaces_added_after_the_memory_are_checked(project: Path) -> None:
    """A file anchor and a lines anchor whose path holds a space and was no file at the memory's commit: git
    answers "<commit>:<path> missing" for it, which must not be read as a size (that failed the whole run)."""
    memory(project, "spaced", '---\nanchors: ["docs/my notes.md", "docs/my notes.md:L1-L1"]\n---\n# Notes\n\nSee.\n')
    commit(project, "a memory of notes to come")
    put(project, "docs/my notes.md", "first\nsecond\n")
    commit(project, "the notes")
    with open_router(project) as router:
        report = verify(router.workspace, ["spaced"])
    found = {(a.kind, a.status) for a in report.memories[0].anchors}
    assert found == {("file", "fresh"), ("lines", "fresh")}


def test_a_function_that_loses_or_gains_lines_is_stale_and_a_sibling_edit_is_not(tmp_path: Path) -> None:
    """The lines a function has now, found whole in an older version, are not enough: there they could be the
    start of a longer function (lines lost since) or a longer function now could hold the old one whole (lines
    gained). Both are changes; a sibling's edit, or blank lines around the function, are not."""
    project = tmp_path / "project"
    project.mkdir()
    git(project, "init", "-q", "-b", "main")
    put(project, ".gitignore", ".memrouter/\n")
    shrinks = "def f():\n    a = 1\n\n    return a\n\n\ndef g():\n    return 2\n"
    grows = "def h():\n    return 3\n\n\ndef k():\n    return 4\n"
    put(project, "m.py", shrinks)
    put(project, "n.py", grows)
    for name in ("f", "g"):
        memory(project, name, f"---\nanchors: [m.py#{name}]\n---\n# {name.upper()}\n\nAbout {name}.\n")
    for name in ("h", "k"):
        memory(project, name, f"---\nanchors: [n.py#{name}]\n---\n# {name.upper()}\n\nAbout {name}.\n")
    commit(project, "code and memories")
    put(project, "m.py", "def f():\n    a = 1\n\n\n\ndef g():\n    return 2\n")  # f loses its last line
    put(
        project, "n.py", "def h():\n    return 3\n    # unreachable\n\n\ndef k():\n    return 5\n"
    )  # h gains one, k edited
    lost = commit(project, "f loses a line; h gains one; k returns 5")
    put(
        project, "m.py", "\n\ndef f():\n    a = 1\n\n\n\ndef g():\n    return 2\n# the end\n"
    )  # only blank lines and a tail
    commit(project, "blank lines before f, a comment after g")
    with open_router(project) as router:
        report = verify(router.workspace)
    assert states(report) == {"f": "stale", "g": "fresh", "h": "stale", "k": "stale"}
    assert anchor(report, "f")["changed_in"] == [lost]
    assert anchor(report, "h")["changed_in"] == [lost]
