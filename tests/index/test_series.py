"""Numbered series: which memories are neighbours."""

from __future__ import annotations

from pathlib import Path

from helpers import write

from memrouter import Config, Router
from memrouter.index.series import neighbour_names, neighbours


def test_the_names_next_to_a_numbered_name() -> None:
    assert neighbour_names("chat/d3-12") == ("chat/d3-11", "chat/d3-13")
    assert neighbour_names("retrospective-2025-12-09") == ("retrospective-2025-12-08", "retrospective-2025-12-10")
    assert neighbour_names("note_009") == ("note_008", "note_010")  # zero-padded numbers keep their width
    assert neighbour_names("log-10") == ("log-9", "log-11")
    assert neighbour_names("turn-0") == ("turn-1",)
    for name in ("adr", "v2", "readme", "chat/d3", "plan-2a", "x-1234567890"):
        assert neighbour_names(name) == ()


def test_neighbours_are_the_indexed_ones_that_pass(tmp_path: Path) -> None:
    root = tmp_path / "memories"
    for name in ("chat/d1-1", "chat/d1-2", "chat/d1-4", "other/d1-3", "solo"):
        write(root, name, f"# {name}\n\ntext\n")
    with Router(Config.load(root=root, index_dir=tmp_path / "index"), watch=False) as router:
        router.refresh()
        conn = router.workspace.conn
        ids = dict(conn.execute("SELECT name, id FROM memories"))
        found = neighbours(conn, ids.values())
        named = {name: sorted(n for n in found.get(i, ())) for name, i in ids.items()}
        assert named["chat/d1-1"] == [ids["chat/d1-2"]] and named["chat/d1-2"] == [ids["chat/d1-1"]]
        assert named["chat/d1-4"] == [] and named["other/d1-3"] == [] and named["solo"] == []  # gaps and folders
        assert neighbours(conn, [ids["chat/d1-1"]], lambda m: m != ids["chat/d1-2"]) == {}
        assert neighbours(conn, []) == {}
