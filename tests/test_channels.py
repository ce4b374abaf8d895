"""Channels and time over real files in a real git repository: routing, sprints, promotion, validity."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from memrouter.core.errors import Conflict, InvalidInput, NotFound
from memrouter.router import Router

DAY = 86400.0
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class Clock:
    """A clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    (project / ".serena" / "memories").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    return project / ".serena" / "memories"


@pytest.fixture
def router(root: Path, tmp_path: Path, clock: Clock) -> Iterator[Router]:
    with Router.open(root=root, index_dir=tmp_path / "index", clock=clock) as opened:
        yield opened


def _files(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*.md"))}


def _names(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.name for hit in hits]


def test_named_files_without_kind_or_channel_are_written_where_named(router: Router, root: Path) -> None:
    router.lifecycle.start("s1", weeks=2, goal=None)
    memory = router.save("# Notes\n\nplain text\n", "ops/notes")
    assert memory.name == "ops/notes" and memory.channel == "long_term"
    assert (root / "ops/notes.md").read_text() == "# Notes\n\nplain text\n"


def test_saves_are_routed_by_channel_and_kind(router: Router, root: Path) -> None:
    assert router.save("# Cache plan\n\nno sprint yet\n").name == "cache-plan"  # unnamed, no sprint: long-term
    with pytest.raises(InvalidInput, match="memrouter sprint start ID"):
        router.save("# Probe\n", kind="research")
    sprint = router.lifecycle.start("2026-w01", weeks=2, goal="caching")
    assert (sprint.start, sprint.end, sprint.goal) == ("2026-01-01", "2026-01-14", "caching")
    research = router.save("# Redis probe\n\nlatency numbers\n", kind="research")
    assert research.name == "sprints/2026-w01/redis-probe" and research.channel == "sprint"
    assert router.save("# Loose note\n").name == "sprints/2026-w01/loose-note"  # unnamed agent note: the sprint
    assert router.save("x\n", "probe-2", channel="sprint").name == "sprints/2026-w01/probe-2"
    adr = router.save("# Use Redis\n\nwe use redis\n", kind="adr")
    assert adr.name == "adr/use-redis" and adr.channel == "long_term"  # an ADR saved with no name goes to adr/
    with pytest.raises(InvalidInput, match="in sprint 'old'"):
        router.save("x\n", "sprints/old/x", channel="sprint")
    before = _files(root)
    with pytest.raises(InvalidInput, match="memrouter team"):
        router.save("# Status\n", kind="agent_status")
    with pytest.raises(InvalidInput, match="memrouter team"):
        router.save("x\n", "status", channel="team")
    with pytest.raises(InvalidInput, match="scratchpad"):
        router.save("# Scratch\n", channel="short_term")
    assert _files(root) == before


def test_the_sprint_record_is_a_file_git_sees_and_one_sprint_is_open(router: Router, root: Path, clock: Clock) -> None:
    router.lifecycle.start("s1", weeks=1, goal="ship")
    record = root / "sprints/s1/_sprint.md"
    assert "goal: ship" in record.read_text()
    untracked = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    assert ".serena/memories/sprints/s1/_sprint.md" in untracked
    before = _files(root)
    with pytest.raises(Conflict, match="'s1' is still open"):
        router.lifecycle.start("s2", weeks=1, goal=None)
    with pytest.raises(InvalidInput, match="1 to 52"):
        router.lifecycle.start("s3", weeks=0, goal=None)
    with pytest.raises(NotFound, match="no sprint 'nope'"):
        router.lifecycle.sprint("nope")
    assert _files(root) == before
    assert router.status()["sprint"]["current"]["id"] == "s1"
    assert not any("ended" in w for w in router.status()["warnings"])
    clock.now += 8 * DAY
    status = router.status()
    assert status["sprint"]["current"]["overdue"] is True
    assert any("sprint 's1' ended on 2026-01-07" in w for w in status["warnings"])
    assert router.search("ship") == []  # the record is never a result


def test_sprint_close_promotes_archives_and_dry_run_changes_nothing(router: Router, root: Path) -> None:
    router.lifecycle.start("s1", weeks=2, goal=None)
    router.save("# Retry policy\n\nretry thrice with jitter\n", kind="wip_decision")
    router.save("# Queue probe\n\nqueue depth findings\n", kind="research")
    before = _files(root)
    with pytest.raises(InvalidInput, match="neither promoted nor archived"):
        router.lifecycle.close(promote=["retry-policy"])
    with pytest.raises(NotFound, match="sprints/s1/missing"):
        router.lifecycle.close(promote=["missing"], archive_rest=True)
    plan = router.lifecycle.close(promote=["retry-policy"], archive_rest=True, dry_run=True)
    assert plan.dry_run and [p.target for p in plan.promoted] == ["retry-policy"]
    assert plan.archived == ("sprints/s1/queue-probe",)
    assert _files(root) == before

    done = router.lifecycle.close(promote=["retry-policy"], archive_rest=True)
    assert done.closed == "2026-01-01T00:00:00Z" and router.lifecycle.current() is None
    promoted = router.get("retry-policy")
    assert promoted.channel == "long_term" and promoted.extra["promoted_from"] == "sprints/s1/retry-policy"
    assert promoted.extra["original_sprint"] == "s1" and promoted.extra["promoted_at"] == "2026-01-01T00:00:00Z"
    assert router.get("sprints/s1/retry-policy").superseded_by == "retry-policy"
    assert router.get("sprints/s1/queue-probe").status == "archived"
    assert _names(router.search("retry jitter")) == ["retry-policy"]
    assert "sprints/s1/queue-probe" not in _names(router.search("queue depth"))  # archived: out of the default
    archived = router.search("queue depth", channels=["sprint"], include_archived=True)
    assert _names(archived) == ["sprints/s1/queue-probe"] and archived[0].validity == "archived"
    with pytest.raises(InvalidInput, match="no sprint is open"):
        router.save("# Late\n", kind="research")


def test_the_current_sprint_ranks_above_archived_ones(router: Router) -> None:
    router.lifecycle.start("s1", weeks=2, goal=None)
    router.save("# Cache keys\n\ncache keys cache keys cache keys\n", kind="research")
    router.lifecycle.close(archive_rest=True)
    router.lifecycle.start("s2", weeks=2, goal=None)
    router.save("# Cache eviction\n\ncache eviction\n", kind="research")
    hits = router.search("cache keys", include_archived=True)
    assert _names(hits) == ["sprints/s2/cache-eviction", "sprints/s1/cache-keys"]
    assert [hit.channel for hit in hits] == ["sprint", "sprint"]


def test_promotion_refuses_duplicates_unless_merged(router: Router, root: Path) -> None:
    router.save("# Backoff\n\nexponential backoff for retries\n", "backoff")
    router.lifecycle.start("s1", weeks=2, goal=None)
    router.save("# Backoff\n\nalso cap the delay at 30 s\n", "backoff", channel="sprint")
    router.save("# Pool size\n\npool of 8\n", "pool", channel="sprint")
    # A copy made by hand: the write guard refuses one saved through memrouter (tests/test_guard_paths.py).
    (root / "sprints" / "s1" / "pool-limits.md").write_text("# Pool size\n\npool of 8\n")
    before = _files(root)
    with pytest.raises(Conflict, match="long-term memory 'backoff'.*--merge"):
        router.promote("sprints/s1/backoff", reason="settled")
    with pytest.raises(InvalidInput, match="reason"):
        router.promote("sprints/s1/pool", reason="")
    with pytest.raises(InvalidInput, match="long_term"):
        router.promote("sprints/s1/pool", to="team", reason="x")
    with pytest.raises(InvalidInput, match="only sprint memories"):
        router.promote("backoff", reason="x")
    assert _files(root) == before

    merged = router.promote("sprints/s1/backoff", reason="settled", merge=True)
    assert merged.merged and merged.target == "backoff"
    text = (root / "backoff.md").read_text()
    assert "exponential backoff" in text and "cap the delay at 30 s" in text and "promotion_reason: settled" in text
    assert router.promote("sprints/s1/pool", reason="kept", target="db/pool").target == "db/pool"
    with pytest.raises(Conflict, match="same content"):
        router.promote("sprints/s1/pool-limits", reason="kept")
    with pytest.raises(Conflict, match="already promoted"):
        router.promote("sprints/s1/pool", reason="again")


def test_a_supersede_chain_leaves_default_search_and_history_brings_it_back(router: Router) -> None:
    router.save("# Deploy v1\n\ndeploy with fabric\n", "deploy-v1")
    router.save("---\nsupersedes: deploy-v1\n---\n# Deploy v2\n\ndeploy with ansible\n", "deploy-v2")
    router.save("---\nsupersedes: deploy-v2\n---\n# Deploy v3\n\ndeploy with argo\n", "deploy-v3")
    assert _names(router.search("deploy")) == ["deploy-v3"]
    history = router.search("deploy", include_history=True)
    assert _names(history)[0] == "deploy-v3" and history[0].validity is None
    assert sorted((h.name, h.validity) for h in history[1:]) == [
        ("deploy-v1", "superseded"),
        ("deploy-v2", "superseded"),
    ]
    assert history[1].to_dict()["validity"] == "superseded" and "validity" not in history[0].to_dict()


def test_an_additive_decision_retires_nothing(router: Router) -> None:
    router.save("# Logging\n\nlog as json\n", "logging-json", kind="decision")
    router.save("# Logging fields\n\nlog json with a trace id\n", "logging-trace", kind="decision")
    assert sorted(_names(router.search("log json"))) == ["logging-json", "logging-trace"]


def test_invalidate_and_expiry_follow_the_clock(router: Router, root: Path, clock: Clock) -> None:
    router.save("# Node 18\n\nbuild on node 18\n", "node-18")
    router.save("# Node 22\n\nbuild on node 22\n", "node-22")
    router.save("---\nvalid_until: 2026-01-10\n---\n# Freeze\n\nbuild freeze\n", "freeze")
    router.save("---\nvalid_from: 2026-02-01\n---\n# Thaw\n\nbuild thaw\n", "thaw")
    assert sorted(_names(router.search("build"))) == ["freeze", "node-18", "node-22"]
    before = _files(root)
    with pytest.raises(NotFound, match="nope"):
        router.invalidate("node-18", "moved on", superseded_by="nope")
    with pytest.raises(InvalidInput, match="reason"):
        router.invalidate("node-18", " ")
    assert _files(root) == before
    gone = router.invalidate("node-18", "moved to node 22", superseded_by="node-22")
    assert gone.status == "obsolete" and gone.superseded_by == "node-22" and gone.valid_until == "2026-01-01T00:00:00Z"
    assert gone.extra["invalidation_reason"] == "moved to node 22"
    assert (root / "node-18.md").exists()
    assert sorted(_names(router.search("build"))) == ["freeze", "node-22"]
    clock.now += 40 * DAY
    assert sorted(_names(router.search("build"))) == ["node-22", "thaw"]
    marked = {h.name: h.validity for h in router.search("build", include_history=True)}
    assert marked == {"node-22": None, "thaw": None, "freeze": "expired", "node-18": "superseded"}


def test_every_retriever_leaves_out_what_is_retired(tmp_path: Path) -> None:
    """Lexical, dense and graph candidates all pass the validity filter (one cached set per generation)."""
    project = tmp_path / "p"
    root = project / ".serena" / "memories"
    root.mkdir(parents=True)
    (project / "memrouter.toml").write_text('[embed]\nmodel = "hash"\n[search.weights]\ngraph = 1.0\ndense = 1.0\n')
    (root / "adr-007-queues.md").write_text(
        "---\nsuperseded_by: adr-012-streams\n---\n# ADR-007 Use queues\n\nWe use RabbitMQ queues.\n"
    )
    (root / "adr-012-streams.md").write_text(
        "---\nsupersedes: adr-007-queues\n---\n# ADR-012 Use streams\n\nReplaces ADR-007: Kafka streams, not queues.\n"
    )
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False) as router:
        router.refresh(embed=True)
        hits = router.search("ADR-007 queues RabbitMQ", mode="hybrid")
        assert [hit.name for hit in hits] == ["adr-012-streams"]
        assert {m.retriever for m in hits[0].why} >= {"lexical", "dense"}
        history = router.search("ADR-007 queues RabbitMQ", mode="hybrid", include_history=True)
        assert "adr-007-queues" in [hit.name for hit in history]


def test_one_sprint_memory_is_archived_in_place_and_only_a_sprint_memory(router: Router) -> None:
    from memrouter.core.errors import Conflict, InvalidInput

    router.lifecycle.start("s9", weeks=1, goal=None)
    note = router.save("# Spike\n\nTried a bloom filter; too many false positives.\n", kind="research")
    with pytest.raises(Conflict, match="changed since"):
        router.archive(note.name, expected_hash="0" * 64)
    archived = router.archive(note.name, expected_hash=note.hash)
    assert archived.status == "archived" and archived.body == note.body
    assert note.name not in [hit.name for hit in router.search("bloom filter")]
    assert note.name in [hit.name for hit in router.search("bloom filter", include_archived=True)]
    with pytest.raises(Conflict, match="archived already"):
        router.archive(note.name)
    kept = router.save("# Logging\n\nLogs go to the collector.\n", "logging", channel="long_term")
    with pytest.raises(InvalidInput, match="only sprint memories"):
        router.archive(kept.name)


def test_a_promotion_at_a_stale_hash_is_refused_and_writes_nothing(router: Router, root: Path) -> None:
    from memrouter.core.errors import Conflict

    router.lifecycle.start("s8", weeks=1, goal=None)
    note = router.save("# Cache probe\n\nRedis beat the in-process cache by 3x on p95.\n", kind="research")
    before = sorted(p.relative_to(root) for p in root.rglob("*.md"))
    with pytest.raises(Conflict, match="changed since"):
        router.promote(note.name, reason="settled", expected_hash="0" * 64)
    assert sorted(p.relative_to(root) for p in root.rglob("*.md")) == before
    assert router.get(note.name).superseded_by is None
    done = router.promote(note.name, reason="settled", expected_hash=note.hash)
    assert router.get(note.name).superseded_by == done.target
