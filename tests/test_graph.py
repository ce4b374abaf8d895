"""The knowledge graph: extraction, storage in the index, incremental updates, the API, bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers import write
from hypothesis import given
from hypothesis import strategies as st

from memrouter import Router
from memrouter.core.errors import InvalidInput, NotFound
from memrouter.index.graph.extract import MAX_EDGES, extract
from memrouter.store.files import MemoryStore


def parsed(name: str, text: str, root: Path) -> object:
    return MemoryStore(root).parse_bytes(name, str(root / f"{name}.md"), text.encode())


def edges_of(name: str, text: str, root: Path) -> set[tuple[str, str]]:
    memory = parsed(name, text, root)
    return {(e.type, e.key) for e in extract(memory).edges}  # type: ignore[arg-type]


def open_router(root: Path, tmp_path: Path) -> Router:
    return Router.open(root=root, index_dir=tmp_path / "idx", watch=False)


def test_explicit_relations_are_read_from_front_matter_links_and_relation_lines(tmp_path: Path) -> None:
    text = (
        "---\nsupersedes: adr/adr-007-old\ndepends_on: [\"[[PostgreSQL]]\"]\nowner: '[[Team Core]]'\n"
        "title: New\n---\n# New\n\nSee [[User Service|the service]], mem:ops/runbook and [x](../adr/adr-003-y.md).\n"
        "- depends_on [[Redis]] (cache)\n- [decision] Use queues #messaging\n"
    )
    found = edges_of("adr/adr-012-new", text, tmp_path)
    assert ("supersedes", "mem:adr/adr-007-old") in found
    assert ("depends_on", "mem:postgresql") in found
    assert ("owner", "mem:team-core") in found
    assert ("links_to", "mem:user-service") in found
    assert ("links_to", "mem:ops/runbook") in found
    assert ("links_to", "path:adr/adr-003-y.md") in found
    assert ("depends_on", "mem:redis") in found
    assert ("observation", "category:decision") in found and ("tagged", "tag:messaging") in found


def test_mentions_need_their_context_and_fenced_code_is_never_read(tmp_path: Path) -> None:
    text = (
        "# Notes\n\nADR-012 and adr-7 decided it; fixed in PR #4017 and owner/repo#12; step #2 is prose.\n"
        "Reverted commit a72ee868c; the colour 1234567 and the word deadbeef are not commits; "
        "\nabc1234f alone is not either.\nEdit `src/memrouter/router.py` and scripts/*.ps1, not Node.js.\n"
        '```bash\n[[ "$X" != y ]] && echo ADR-999 see #555 src/hidden.py\n```\n'
    )
    found = edges_of("notes", text, tmp_path)
    assert {("mentions", "adr:12"), ("mentions", "adr:7"), ("mentions", "issue:#4017")} <= found
    assert ("mentions", "issue:owner/repo#12") in found and ("mentions", "issue:#2") not in found
    assert ("mentions", "commit:a72ee86") in found
    assert not any(key.startswith("commit:") and key != "commit:a72ee86" for _, key in found)
    assert {("about_code", "path:src/memrouter/router.py"), ("about_code", "path:scripts/*.ps1")} <= found
    assert not any("Node" in key or "999" in key or "555" in key or "hidden" in key for _, key in found)
    assert not any(key.startswith("mem:") for _, key in found)  # the bash test is not a wikilink


def test_a_memory_answers_to_its_name_title_aliases_path_and_adr_id(tmp_path: Path) -> None:
    memory = parsed(
        "adr/adr-012-queues", "---\naliases: [Queue Decision]\nentity: QueueService\n---\n# ADR-012: Queues\n", tmp_path
    )
    keys = set(extract(memory).keys)  # type: ignore[arg-type]
    assert {"mem:adr/adr-012-queues", "mem:adr-012-queues", "mem:queue-decision", "mem:queueservice"} <= keys
    assert {"adr:12", "path:adr/adr-012-queues.md"} <= keys


def test_forward_references_resolve_when_the_target_is_written(memories: Path, tmp_path: Path) -> None:
    write(memories, "api", "# API\n\n- depends_on [[Billing Service]] (invoices)\n")
    with open_router(memories, tmp_path) as router:
        router.refresh()
        assert router.get_entity("Billing Service").kind == "mem"  # an entity: no memory yet
        router.save("# Billing Service\n\nCharges cards.\n", name="billing-service")
        entity = router.get_entity("Billing Service")
        assert entity.kind == "memory" and entity.name == "billing-service"
        assert [(r.source, r.type, r.line, r.detail) for r in entity.relations] == [
            ("api", "depends_on", 3, "invoices")
        ]
        router.delete("billing-service")
        assert router.get_entity("Billing Service").kind == "mem"


def test_edges_change_with_the_memory_only(memories: Path, tmp_path: Path) -> None:
    write(memories, "a", "# A\n\nSee [[b]].\n")
    write(memories, "b", "# B\n\nplain\n")
    with open_router(memories, tmp_path) as router:
        router.refresh()
        assert [r.target for r in router.neighbors("a")] == ["b"]
        write(memories, "a", "# A\n\nNow [[c]] only.\n")
        router.refresh()
        assert [r.target for r in router.neighbors("a")] == ["c"]
        assert router.neighbors("b") == []
        conn = sqlite3.connect(tmp_path / "idx" / "index.sqlite")
        query = "SELECT edges FROM graph_rows JOIN memories m ON m.id = memory_id WHERE m.name = 'a'"
        (edges,) = conn.execute(query).fetchone()
        assert [edge[:2] for edge in json.loads(edges)] == [["links_to", "mem:c"]]
        conn.close()


@pytest.mark.parametrize("batch", [1, 2, 1024])  # extracted as each memory comes, two at a time, at the flush
def test_rows_collected_in_one_transaction_are_written_once_and_dropped_with_their_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    from memrouter.index.sqlite.connection import connect
    from memrouter.index.sqlite.graph import GraphRows
    from memrouter.index.sqlite.refresh import delete_memory, upsert_memory, write_transaction
    from memrouter.index.sqlite.schema import MIGRATIONS, migrate

    monkeypatch.setattr(GraphRows, "BATCH", batch)
    root = tmp_path / "m"
    conn = connect(tmp_path / "index.sqlite")
    migrate(conn, MIGRATIONS)
    first = parsed("a", "# A\n\nSee [[b]] and ADR-3.\n", root)
    second = parsed("a", "# A\n\nNow [[c]] only.\n", root)
    gone = parsed("d", "# D\n\nSee [[a]].\n", root)
    with write_transaction(conn) as writer:
        upsert_memory(conn, writer, first, 1, 1)  # type: ignore[arg-type]
        upsert_memory(conn, writer, second, 2, 2)  # type: ignore[arg-type]
        upsert_memory(conn, writer, gone, 1, 1)  # type: ignore[arg-type]
        assert delete_memory(conn, writer, "d")
    rows = conn.execute("SELECT keys, edges FROM graph_rows").fetchall()
    assert len(rows) == 1  # "d" was deleted in the transaction: its collected row was never written
    assert [edge[:2] for edge in json.loads(rows[0][1])] == [["links_to", "mem:c"]]
    assert set(json.loads(rows[0][0])) == set(extract(second).keys)  # type: ignore[arg-type]
    conn.close()


def test_related_path_and_types(memories: Path, tmp_path: Path) -> None:
    write(memories, "adr/adr-007-old", "# ADR-007 Old queues\n")
    write(memories, "adr/adr-012-new", "---\nsupersedes: '[[adr/adr-007-old]]'\n---\n# ADR-012 New queues\n")
    write(memories, "billing", "# Billing\n\n- depends_on [[adr/adr-012-new]] (queues)\n")
    with open_router(memories, tmp_path) as router:
        related = {r.name: r for r in router.related("ADR-007", depth=2)}
        assert related["adr/adr-012-new"].depth == 1 and related["billing"].depth == 2
        assert [r.type for r in related["billing"].via] == ["supersedes", "depends_on"]
        only = router.related("ADR-007", depth=2, types=["supersedes"])
        assert [r.name for r in only] == ["adr/adr-012-new"]
        path = router.path("billing", "adr/adr-007-old")
        assert path.found and [r.type for r in path.relations] == ["depends_on", "supersedes"]
        assert path.to_dict()["relations"][0]["detail"] == "queues"
        assert not router.path("billing", "billing").relations
        with pytest.raises(NotFound):
            router.get_entity("nothing-by-this-name")
        with pytest.raises(InvalidInput):
            router.related("billing", depth=9)


def test_as_of_keeps_edges_of_memories_valid_then(memories: Path, tmp_path: Path) -> None:
    write(memories, "old", "---\nvalid_until: 2024-01-01\n---\n# Old\n\n- uses [[db]]\n")
    write(memories, "new", "---\nvalid_from: 2024-01-01\n---\n# New\n\n- uses [[db]]\n")
    with open_router(memories, tmp_path) as router:
        assert {r.source for r in router.neighbors("db", as_of="2023-06-01")} == {"old"}
        assert {r.source for r in router.neighbors("db", as_of="2024-06-01")} == {"new"}


def test_bad_input_self_links_cycles_outside_links_odd_names_and_huge_memories(memories: Path, tmp_path: Path) -> None:
    outside = memories.parent / "outside.md"
    outside.write_text("# Outside\n\nsecret [[loop-a]]\n", encoding="utf-8")
    write(
        memories,
        "loop-a",
        "# Loop A\n\n[[loop-a]] mem:loop-a [[loop-b]] [up](../outside.md) [up2](../../x/outside.md)\n",
    )
    write(memories, "loop-b", "# Loop B\n\n[[loop-a]]\n")
    write(
        memories, "odd", '# Odd\n\n[[ ]] [[a|]] [[日本語 ノート]] [[x\u0000y]] [[%00/../..]] [[ "$v" ]] mem:.. [[#]]\n'
    )
    links = "\n".join(f"- [[target-{n}]] ADR-{n % 9999} #{n + 100}" for n in range(10_000))
    write(memories, "huge", "# Huge\n\n" + links + "\n")
    with open_router(memories, tmp_path) as router:
        router.refresh()
        assert [r.target for r in router.neighbors("loop-a") if r.source == "loop-a"] == ["loop-b"]
        assert {r.name for r in router.related("loop-a", depth=4)} == {"loop-b"}
        assert router.path("loop-a", "loop-b").found
        assert not any("outside" in r.target for r in router.neighbors("loop-a"))
        assert len(router.neighbors("huge")) == MAX_EDGES
        stats = router.graph_stats()
        assert stats["memories"] >= 4 and stats["dangling_count"] >= 1
        for fmt in ("json", "graphml", "dot"):
            assert router.graph_export(fmt)
        assert router.get_entity("日本語 ノート").kind == "mem"


def test_a_missing_graph_table_is_damage_and_is_repaired(memories: Path, tmp_path: Path) -> None:
    write(memories, "a", "# A\n\n[[b]]\n")
    with open_router(memories, tmp_path) as router:
        router.refresh()
    conn = sqlite3.connect(tmp_path / "idx" / "index.sqlite")
    conn.execute("DROP TABLE graph_rows")
    conn.commit()
    conn.close()
    with open_router(memories, tmp_path) as router:
        assert [r.target for r in router.neighbors("a")] == ["b"]


def test_an_index_from_before_the_graph_gets_its_edges_on_the_next_refresh(memories: Path, tmp_path: Path) -> None:
    write(memories, "a", "# A\n\n[[b]]\n")
    with open_router(memories, tmp_path) as router:
        router.refresh()
    conn = sqlite3.connect(tmp_path / "idx" / "index.sqlite")  # as an older memrouter left it
    conn.executescript(
        "DROP TABLE graph_rows; DELETE FROM schema_migrations WHERE name IN ('0200_knowledge_graph', '0202_graph_rows');"
    )
    conn.close()
    with open_router(memories, tmp_path) as router:
        assert [r.target for r in router.neighbors("a")] == ["b"]


def test_the_graph_weight_decides_whether_the_graph_retriever_is_fused(memories: Path, tmp_path: Path) -> None:
    from test_config_keys import configured

    write(memories, "adr/adr-007-queues", "# ADR-007 Queues\n\nWe use a broker.\n")
    write(memories, "adr/adr-012-streams", "---\nsupersedes: '[[adr/adr-007-queues]]'\n---\n# Streams\n\nLogs.\n")
    for weight, fused in ((0.0, False), (1.0, True)):
        configured(memories, f'[search.weights]\ngraph = {weight}\n[embed]\nmodel = "hash"\n')
        with Router.open(root=memories, index_dir=tmp_path / f"idx{weight}", watch=False) as router:
            router.refresh(embed=True)
            hits = router.search("what replaced ADR-007", mode="hybrid")
            why = [m for hit in hits for m in hit.why if m.retriever == "graph"]
            assert bool(why) is fused
            if fused:
                streams = next(h for h in hits if h.name == "adr/adr-012-streams")
                graph = next(m for m in streams.why if m.retriever == "graph")
                assert graph.detail == "graph: ADR-007 -names-> adr/adr-007-queues <-supersedes- adr/adr-012-streams"


def test_the_retriever_walks_on_from_the_best_lexical_hits(memories: Path, tmp_path: Path) -> None:
    from test_config_keys import configured

    write(memories, "deploy-checklist", "# Deploy checklist\n\nBefore a release read [[zebra-notes]].\n")
    write(memories, "zebra-notes", "# Zebra notes\n\nStripes and grazing.\n")
    for weight in (0.0, 0.1):
        configured(memories, f'[search.weights]\ngraph = {weight}\n[embed]\nmodel = "hash"\n')
        with Router.open(root=memories, index_dir=tmp_path / f"idx{weight}", watch=False) as router:
            router.refresh(embed=True)
            assert [h.name for h in router.search("release checklist", mode="lexical")] == ["deploy-checklist"]
            hits = {h.name: h for h in router.search("release checklist", mode="hybrid", limit=5)}
            graph = (
                [m.detail for m in hits["zebra-notes"].why if m.retriever == "graph"] if "zebra-notes" in hits else []
            )
            # Reached only through the link from the best lexical hit, and said so.
            assert graph == (["graph: deploy-checklist -links_to-> zebra-notes"] if weight else [])
            assert hits and next(iter(hits)) == "deploy-checklist"


@pytest.mark.parametrize(
    ("line", "key", "taken"),
    [
        ("See `mem:ops/runbook` first.", "mem:ops/runbook", True),  # Serena writes mem: references in code spans
        ("regex `VERDICT:[[:space:]]*` and [[:alpha:]] in prose", "mem:space", False),  # POSIX classes
        ("Epics (#1002-#1005) and #1948-1950 stay open.", "issue:#1002", True),
        ("Excluded: #2050/#2510 vendor portability.", "issue:#2510", True),
        ("**Issue #5** (MEDIUM): research.md has an unused field.", "issue:#5", False),  # a review finding
        ("#1351 (Renovate dashboard) stays.", "issue:#1351", True),
        ("Measured on `origin/main` at `088292977f`.", "commit:0882929", True),
        ("Results against `77e305c6e`, conflicted-file counts:", "commit:77e305c", True),
        ("- 8f34b6a4: spec ignore directives", "commit:8f34b6a", True),
        ("(`md5 ddf7726679a84c0c09d3de3c39504b99`) parses clean", "commit:ddf7726", False),
        ("- **Agent a3e1df2**: Creating 5 sub-issues", "commit:a3e1df2", False),
        ("Full analysis: `.agents/analysis/knowledge-set.md`", "path:.agents/analysis/knowledge-set.md", True),
        ("**Get-Milestone.Tests.ps1**: the tests", "path:Get-Milestone.Tests.ps1", True),
    ],
)
def test_mention_rules_measured_on_the_corpora(tmp_path: Path, line: str, key: str, taken: bool) -> None:
    assert (key in {k for _, k in edges_of("notes/x", f"# X\n\n{line}\n", tmp_path)}) is taken


def test_the_retriever_skips_only_word_runs_that_can_name_no_known_memory(memories: Path, tmp_path: Path) -> None:
    from memrouter.index.graph.extract import query_keys
    from memrouter.index.sqlite.connection import connect
    from memrouter.index.sqlite.graph import read_graph

    write(memories, "notes/Build_Cache.md-tips", "# Déjà vu: Build Cache\n\nSee [[Release Train 2]] and README.md.\n")
    write(memories, "zsh-arrays", "---\naliases: [Bad Substitution]\n---\n# Zsh arrays\n")
    with open_router(memories, tmp_path) as router:
        router.refresh()
    conn = connect(tmp_path / "idx" / "index.sqlite")
    view = read_graph(conn)
    conn.close()
    queries = [
        "déjà vu build cache", "notes/build_cache.md tips", "release train 2 and zsh arrays", "BAD substitution!",
        "readme.md", "nothing known here", "build_cache.md-tips in notes", "_ underscores_ __",
    ]  # fmt: skip
    for query in queries:
        every = [key for key in query_keys(query) if view.knows(key)]
        assert [key for key in query_keys(query, view.vocabulary) if view.knows(key)] == every
    assert [key for key in query_keys("release train 2", view.vocabulary) if view.knows(key)] == ["mem:release-train-2"]


@given(st.text(alphabet="ab09-_/ .A\\", max_size=12))
def test_a_name_already_slugged_keeps_its_key(text: str) -> None:
    from memrouter.index.graph.extract import _slugged_key, name_key

    assert name_key(text) == _slugged_key(text)


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("src/app.py opens the text", [(0, "about_code", "path:src/app.py", "src/app.py")]),
        ("ésrc/app.py", []),  # a word character before it, even a non-ASCII one: no path
        # The same path read again after another character: the first spot is no path, the second is.
        ("x:src/a.py and src/a.py", [(15, "about_code", "path:src/a.py", "src/a.py")]),
        ("~/bar.py, $x/y.py, %z/w.py", []),
        ("İ ADR-7 and Ådr-8", [(2, "mentions", "adr:7", "ADR-007")]),  # "İ" lowers to two characters; "Å" is no A
        ("Déjà vu: commit 1a2b3c4d landed", [(16, "mentions", "commit:1a2b3c4", "1a2b3c4")]),
        (
            "see docs/adr-012.md",
            [(9, "mentions", "adr:12", "ADR-012"), (4, "about_code", "path:docs/adr-012.md", "docs/adr-012.md")],
        ),
    ],
)
def test_mentions_depend_on_the_character_before_them_and_read_non_ascii_text(
    text: str, found: list[tuple[int, str, str, str]]
) -> None:
    from memrouter.index.graph.mentions import mentions

    assert list(mentions(text)) == found
    assert list(mentions(text)) == found  # a second reading (cached spots) finds the same


def test_fences_of_tildes_and_backticks_hide_their_mentions(tmp_path: Path) -> None:
    text = "# X\n\n~~~\nADR-001\n~~~\n```\nADR-002\n```\nADR-003 and ~ alone, `ADR-004`\n"
    assert edges_of("notes/x", text, tmp_path) == {("mentions", "adr:3"), ("mentions", "adr:4")}
    assert edges_of("notes/y", text.replace("~~~", "```"), tmp_path) == {("mentions", "adr:3"), ("mentions", "adr:4")}


@given(st.text(alphabet="pyisjonmdtx1./- a", max_size=40))
def test_extensions_found_through_their_prefix_tree_are_the_listed_ones(text: str) -> None:
    import re

    from memrouter.index.graph.mentions import _EXTENSIONS, _PATH_END

    listed = re.compile(r"\.(?:" + _EXTENSIONS + r")(?![\w/-])")
    assert [m.span() for m in _PATH_END.finditer(text)] == [m.span() for m in listed.finditer(text)]


def test_edges_keep_their_order_and_the_line_of_their_first_mention(tmp_path: Path) -> None:
    text = (
        "# X\n\nEdit src/b.py first.\nSee [a](notes/adr-009.md) and ADR-004.\nFixes #4017.\n"
        "Reverted commit a72ee868c.\nsrc/b.py again, ADR-004 again, [[ADR-005]].\n"
    )
    memory = parsed("x", text, tmp_path)
    assert [tuple(edge) for edge in extract(memory).edges] == [  # type: ignore[arg-type]
        ("links_to", "path:notes/adr-009.md", "notes/adr-009.md", 4, None),
        ("links_to", "mem:adr-005", "ADR-005", 7, None),
        ("mentions", "adr:4", "ADR-004", 4, None),  # not adr:9: a link is no mention
        ("mentions", "issue:#4017", "#4017", 5, None),
        ("mentions", "commit:a72ee86", "a72ee86", 6, None),
        ("about_code", "path:src/b.py", "src/b.py", 3, None),
    ]
