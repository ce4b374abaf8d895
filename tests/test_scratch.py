"""The short-term channel: per-owner scratchpad notes that expire, never files in the repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memrouter import Router
from memrouter.core.errors import InvalidInput
from memrouter.ops.scratch import MAX_NOTE_CHARS, Scratchpad


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_notes_are_per_owner_expire_and_are_collected(tmp_path: Path) -> None:
    clock = Clock()
    pad = Scratchpad(tmp_path, ttl=60, clock=clock)
    pad.write("alice", "plan", "try the retry decorator on flaky suites")
    pad.write("bob", "plan", "bob's own plan")
    assert [n.text for n in pad.read("alice")] == ["try the retry decorator on flaky suites"]
    assert [h.name for h in pad.search("alice", "flaky retry", 5)] == ["scratch:plan"]
    assert pad.search("bob", "flaky retry", 5) == []  # only the owner sees its notes
    clock.now += 61
    assert pad.read("alice") == []
    pad.write("carol", "x", "anything")  # a write collects what expired
    assert pad.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 1
    assert pad.clear("carol") == 1
    pad.close()


@pytest.mark.parametrize(
    "call",
    [
        lambda pad: pad.write("a", "n", "x" * (MAX_NOTE_CHARS + 1)),
        lambda pad: pad.write("a", "n", "   "),
        lambda pad: pad.write("a", "n", "bad \udcff"),
        lambda pad: pad.write("a", "n", "ok", ttl=-5),
        lambda pad: pad.write("", "n", "ok"),
        lambda pad: pad.write("a", "\x00", "ok"),
    ],
)
def test_bad_notes_are_refused_and_change_nothing(tmp_path: Path, call: Any) -> None:
    pad = Scratchpad(tmp_path)
    with pytest.raises(InvalidInput):
        call(pad)
    assert pad.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 0
    pad.close()


def test_search_adds_the_owners_notes_after_the_files(router: Router, memories: Path) -> None:
    before = sorted(p.name for p in memories.parent.parent.rglob("*") if p.is_file())
    router.scratchpad().write("agent-1", "hunch", "the payment suite times out under load because of the pool")
    hits = router.search("payment suite load", owner="agent-1", mode="lexical")
    assert hits[0].name == "incidents/flaky-tests" and hits[-1].name == "scratch:hunch"
    assert hits[-1].channel == "short_term" and hits[-1].source == "scratch"
    assert all(h.source != "scratch" for h in router.search("payment suite load", owner="agent-2", mode="lexical"))
    assert all(h.source != "scratch" for h in router.search("payment suite load", mode="lexical"))
    after = sorted(p.name for p in memories.parent.parent.rglob("*") if p.is_file())
    assert before == after  # nothing of it is a file in the project
    with pytest.raises(InvalidInput, match="scratchpad"):
        router.save("# Note\n\nshort lived\n", channel="short_term")


def test_the_ttl_setting_is_used(memories: Path, tmp_path: Path) -> None:
    (memories.parent.parent / "memrouter.toml").write_text("[scratch]\nttl = 90\n")
    with Router.open(root=memories, index_dir=tmp_path / "idx") as router:
        note = router.scratchpad().write("a", "n", "text")
        assert note.expires - note.created == 90
        assert router.status()["config"]["scratch_ttl"] == 90


WRITER = """
import sys
from pathlib import Path
from memrouter.ops.scratch import Scratchpad
pad = Scratchpad(Path(sys.argv[1]))
for n in range(200):
    pad.write(sys.argv[2], f"note-{n}", f"text {n}")
"""


def test_many_processes_share_the_scratchpad_file(tmp_path: Path) -> None:
    # Eight processes open the new file at once (its switch to WAL once failed here under load).
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), f"owner-{n}"]) for n in range(8)]
    assert [p.wait(timeout=120) for p in writers] == [0] * 8
    pad = Scratchpad(tmp_path)
    assert [len(pad.read(f"owner-{n}")) for n in range(8)] == [200] * 8
    pad.close()
