from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from helpers import write

from memrouter import Conflict, InvalidInput, NotFound, Router


def test_save_get_list_delete_round_trip(router: Router, memories: Path) -> None:
    memory = router.save("Body about okapis.\n", "zoo/okapi", title="Okapi facts", tags=["zoo"], kind="fact")
    assert (memories / "zoo" / "okapi.md").is_file()
    stored = router.get("zoo/okapi")
    assert stored.title == "Okapi facts" and stored.tags == ("zoo",) and stored.kind == "fact"
    assert stored.text.startswith("---\ntags:\n- zoo\nkind: fact\n---\n# Okapi facts\n")
    assert stored.hash == memory.hash
    assert [hit.name for hit in router.search("okapi", mode="lexical")] == ["zoo/okapi"]
    assert [item.name for item in router.list("zoo/")] == ["zoo/okapi"]
    router.delete("zoo/okapi", reason="test")
    assert not (memories / "zoo").exists()
    assert router.search("okapi", mode="lexical") == []
    with pytest.raises(NotFound):
        router.get("zoo/okapi")


def test_save_keeps_unknown_front_matter_and_name_from_title(router: Router, memories: Path) -> None:
    original = (memories / "adr" / "adr-001-postgres.md").read_text()
    router.save(original, "adr/adr-001-postgres", tags=["database"], confidence=0.8)
    text = (memories / "adr" / "adr-001-postgres.md").read_text()
    assert "reviewers: [bob]  # kept as written\n" in text
    assert "confidence: 0.8" in text
    made = router.save("# Deploy Windows: Fridays!\n\nNever deploy on Friday.\n")
    assert made.name == "deploy-windows-fridays"


def test_save_with_expected_hash_detects_concurrent_edit(router: Router, memories: Path) -> None:
    memory = router.get("conventions/commit-messages")
    write(memories, "conventions/commit-messages", "# Changed by someone else\n")
    with pytest.raises(Conflict):
        router.save("# Mine\n", "conventions/commit-messages", expected_hash=memory.hash)
    assert router.get("conventions/commit-messages").title == "Changed by someone else"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"content": ""},
        {"content": "   "},
        {"content": "x", "name": "../up"},
        {"content": "x", "name": "/abs"},
        {"content": "x", "name": "ok", "channel": "forever"},
        {"content": "x", "name": "ok", "confidence": 3},
        {"content": "x", "name": "ok", "status": "dead"},
        {"content": "x\x00y", "name": "ok"},
        {"content": "# !!!\n\nA heading that makes no name, and no name given"},
    ],
)
def test_bad_saves_change_nothing(router: Router, memories: Path, kwargs: dict) -> None:  # type: ignore[type-arg]
    before = sorted(p.relative_to(memories) for p in memories.rglob("*"))
    with pytest.raises(InvalidInput):
        router.save(**kwargs)
    assert sorted(p.relative_to(memories) for p in memories.rglob("*")) == before


def test_status_reports_counts_problems_and_config(router: Router, memories: Path) -> None:
    write(memories, "broken", "---\ntitle: [oops\n---\n# Broken front matter\n\nstill searchable\n")
    (memories / "latin.md").write_bytes(b"# caf\xe9 notes\n")
    status = router.status()
    assert status["memories"]["total"] == 8
    assert status["memories"]["by_channel"]["sprint"] == 1
    assert "invalid YAML" in status["problems"]["broken"]
    assert "UTF-8" in status["problems"]["latin"]
    from memrouter.index.sqlite.schema import MIGRATIONS

    assert status["index"]["schema"] == sorted(m.name for m in MIGRATIONS)
    assert [hit.name for hit in router.search("still searchable", mode="lexical")][0] == "broken"


def test_corrupt_index_is_rebuilt_with_a_warning(memories: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    index_dir.mkdir()
    (index_dir / "index.sqlite").write_bytes(b"this is not a database" * 100)
    with Router.open(root=memories, index_dir=index_dir) as router:
        assert router.search("postgres", mode="lexical")
        assert any("unusable" in warning for warning in router.status()["warnings"])
    assert list(index_dir.glob("index.sqlite.corrupt-*"))


def test_foreign_database_is_not_trusted(memories: Path, tmp_path: Path) -> None:
    index_dir = tmp_path / "idx"
    index_dir.mkdir()
    conn = sqlite3.connect(index_dir / "index.sqlite")
    conn.execute("CREATE TABLE memories (x)")
    conn.commit()
    conn.close()
    with Router.open(root=memories, index_dir=index_dir) as router:
        assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"


def test_damage_found_during_use_triggers_a_rebuild(router: Router) -> None:
    router.search("postgres", mode="lexical")
    router.workspace.conn.execute("DROP TABLE terms")  # simulate a damaged table
    assert router.search("postgres", mode="lexical")[0].name == "adr/adr-001-postgres"


def test_read_only_root_uses_the_cache_dir(memories: Path, tmp_path: Path) -> None:
    readonly = tmp_path / "ro"
    readonly.mkdir()
    write(readonly, "a", "# Alpha\n\nread only text\n")
    readonly.chmod(0o555)
    try:
        with Router.open(root=readonly) as router:
            assert "memrouter" in str(router.config.index_dir)
            assert router.search("read only", mode="lexical")[0].name == "a"
    finally:
        readonly.chmod(0o755)


def test_index_refresh_is_incremental(router: Router, memories: Path) -> None:
    first = router.refresh()
    assert first.to_dict()["added"] == 6
    assert router.refresh().unchanged == 6
    write(memories, "incidents/flaky-tests", "# Flaky tests incident\n\nrewritten\n")
    (memories / "plain-no-heading.md").unlink()
    report = router.refresh()
    assert report.updated == ["incidents/flaky-tests"] and report.removed == ["plain-no-heading"]
    assert router.refresh(full=True).changed == []


def test_names_come_from_the_files_while_the_index_was_never_built(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    for name, text in {
        "a": "# A\n", "ci/b": "# B\n", "c": "---\nstatus: pending_review\n---\n# C\n", "ci/d": "---\ntags: [x]\n---\n# D\n",
    }.items():  # fmt: skip
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / f"{name}.md").write_text(text, encoding="utf-8")
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        assert router.names() == ["a", "ci/b", "ci/d"]  # pending review left out, as list leaves it out
        assert router.names("ci/") == ["ci/b", "ci/d"]
        assert (
            router.workspace.index.indexed(
                lambda: router.workspace.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
            )
            == 0
        )
        assert [s.name for s in router.list()] == router.names()  # list builds the index; the names agree
        assert router.names() == ["a", "ci/b", "ci/d"]
