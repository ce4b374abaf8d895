"""Leases, handoffs, reservations, variables and workflows, driven by the test clock."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memrouter.core.errors import Conflict, InvalidInput, NotFound, VersionConflict
from memrouter.team import ManualClock, Team


def test_claims_follow_priority_dependencies_and_capabilities(team: Team) -> None:
    team.register("alice", ["python"])
    team.register("bob")
    low = team.task_add("low", priority=0)
    high = team.task_add("high", priority=5)
    later = team.task_add("after high", priority=9, depends_on=[high.id])
    typed = team.task_add("needs python", priority=7, requires=["python"])
    assert team.task_claim("bob").id == high.id  # `later` waits for `high`; bob lacks python
    assert team.task_claim("alice").id == typed.id
    assert team.task_claim("bob").id == low.id
    assert team.task_claim("bob") is None
    team.task_complete(high.id, {"ok": True}, agent_id="bob")
    claimed = team.task_claim("alice")
    assert claimed is not None and claimed.id == later.id and claimed.attempts == 1
    assert team.task_get(high.id).result == {"ok": True}


def test_an_expired_lease_returns_the_task_and_counts_an_attempt(team: Team, clock: ManualClock) -> None:
    team.register("alice")
    team.register("bob")
    task = team.task_add("flaky")
    assert team.task_claim("alice", lease_seconds=30) is not None
    clock.advance(29)
    assert team.task_claim("bob") is None
    clock.advance(2)
    again = team.task_claim("bob", lease_seconds=30)
    assert again is not None and again.id == task.id and again.agent == "bob" and again.attempts == 2
    with pytest.raises(Conflict):
        team.task_complete(task.id, agent_id="alice")  # alice's lease is gone
    clock.advance(31)
    third = team.task_claim("alice", lease_seconds=30)
    assert third is not None and third.attempts == 3
    clock.advance(31)
    assert team.task_claim("bob") is None
    parked = team.task_get(task.id)
    assert parked.state == "parked" and "expired" in (parked.error or "")


def test_failures_retry_then_park_and_stale_agents_lose_their_leases(team: Team, clock: ManualClock) -> None:
    team.register("alice", ttl=60)
    team.register("bob", ttl=3600)
    task = team.task_add("hard", max_attempts=2)
    first = team.task_claim("alice", lease_seconds=3000)
    assert first is not None
    clock.advance(61)  # alice is stale: her lease may be taken though it runs for long
    assert team.get_team_state("alice").agents[0].agent.stale
    stolen = team.task_claim("bob", lease_seconds=3000)
    assert stolen is not None and stolen.id == task.id
    failed = team.task_fail(task.id, "compiler crashed", agent_id="bob")
    assert failed.state == "parked" and failed.attempts == 2
    other = team.task_add("no retry")
    assert team.task_claim("bob") is not None
    assert team.task_fail(other.id, "not doable", retry=False, agent_id="bob").state == "failed"


def test_renewing_a_lease_keeps_the_claim(team: Team, clock: ManualClock) -> None:
    team.register("alice")
    team.register("bob")
    task = team.task_add("long")
    team.task_claim("alice", lease_seconds=30)
    clock.advance(25)
    team.task_renew(task.id, 30, agent_id="alice")
    clock.advance(25)
    assert team.task_claim("bob") is None
    assert team.task_complete(task.id, agent_id="alice").state == "done"


def test_handoff_state_machine(team: Team, clock: ManualClock) -> None:
    team.register("alice")
    team.register("bob")
    task = team.task_add("review")
    team.task_claim("alice", lease_seconds=100)
    offer = team.handoff("alice", "bob", {"notes": "half done"}, task_id=task.id)
    assert offer.state == "pending" and [h.id for h in team.pending_handoffs("bob")] == [offer.id]
    with pytest.raises(InvalidInput, match="only the receiving agent"):
        team.handoff_accept(offer.id, "alice")
    accepted = team.handoff_accept(offer.id, "bob")
    assert accepted.state == "accepted" and team.pending_handoffs("bob") == ()
    assert team.task_get(task.id).agent == "bob"  # the claim moved with the handoff
    with pytest.raises(Conflict, match="already accepted"):
        team.handoff_reject(offer.id, "bob")
    second = team.handoff("bob", "alice", {"why": "need eyes"})
    assert team.handoff_reject(second.id, "alice", "busy").state == "rejected"
    with pytest.raises(NotFound):
        team.handoff("alice", "carol", {})
    clock.advance(601)
    team.heartbeat("alice", "working")
    with pytest.raises(Conflict, match="stale"):
        team.handoff("alice", "bob", {})


def test_an_agent_says_where_it_works_and_its_handoffs_carry_that(team: Team) -> None:
    team.register("alice", branch="feat-x", worktree="/work/repo-feat-x")
    team.register("bob")
    roster = {entry.agent.id: entry.agent.to_dict() for entry in team.get_team_state().agents}
    assert (roster["bob"]["branch"], roster["bob"]["worktree"]) == (None, None)
    assert roster["alice"]["branch"] == "feat-x" and roster["alice"]["worktree"] == "/work/repo-feat-x"
    offer = team.handoff("alice", "bob", {"next": "finish the parser"})
    assert (offer.branch, offer.worktree) == ("feat-x", "/work/repo-feat-x")
    team.register("alice", branch="fix-y", worktree="/work/repo-fix-y")  # registering again says where it is now
    assert team.pending_handoffs("bob")[0].branch == "feat-x"  # the handoff keeps where the work was handed off
    assert team.handoff_accept(offer.id, "bob").worktree == "/work/repo-feat-x"
    assert team.get_team_state("alice").agents[0].agent.branch == "fix-y"
    for bad in ({"branch": "a\x00b"}, {"worktree": "x" * 5000}, {"branch": 3}):
        with pytest.raises(InvalidInput):
            team.register("carol", **bad)  # type: ignore[arg-type]
    with pytest.raises(NotFound):
        team.get_team_state("carol")


def test_reservations_conflict_expire_and_release(team: Team, clock: ManualClock) -> None:
    team.register("alice")
    team.register("bob")
    mine = team.reserve("alice", ["src/**"], ttl_seconds=60, reason="refactor")
    assert mine.granted and mine.id
    refused = team.reserve("bob", ["docs/*.md", "src/a.py"])
    assert not refused.granted and refused.reservation is None
    assert [(c.path, c.other_path, c.agent) for c in refused.conflicts] == [("src/a.py", "src/**", "alice")]
    assert team.reserve("bob", ["docs/*.md"]).granted
    assert not team.reserve("alice", ["docs/index.md"], exclusive=False).granted  # bob's is exclusive
    assert team.reserve("alice", ["src/b.py"]).granted  # her own reservations never conflict
    clock.advance(61)
    assert team.reserve("bob", ["src/a.py"]).granted  # alice's src/** expired
    bob = team.reservations("bob")
    assert {r.paths for r in bob} == {("docs/*.md",), ("src/a.py",)}
    with pytest.raises(Conflict):
        team.release("alice", [bob[0].id])
    assert len(team.release("bob")) == 2 and team.reservations("bob") == ()
    shared = team.reserve("alice", ["lib/**"], exclusive=False)
    assert team.reserve("bob", ["lib/x.py"], exclusive=False).granted
    renewed = team.renew("alice", shared.id or "", 7200)
    assert renewed.expires_at == clock() + 7200


def test_compare_and_set_and_ttl(team: Team, clock: ManualClock) -> None:
    assert team.team_set("plan", {"step": 1}, expected_version=0).version == 1
    with pytest.raises(VersionConflict) as caught:
        team.team_set("plan", {"step": 2}, expected_version=0)
    assert caught.value.current_version == 1
    assert team.team_set("plan", {"step": 2}, expected_version=1).version == 2
    team.team_set("flag", True, ttl=10)
    assert [v.key for v in team.team_list()] == ["flag", "plan"]
    clock.advance(10)
    assert [v.key for v in team.team_list()] == ["plan"]
    with pytest.raises(NotFound):
        team.team_get("flag")
    with pytest.raises(VersionConflict):
        team.team_delete("plan", expected_version=1)
    team.team_delete("plan", expected_version=2)
    with pytest.raises(VersionConflict):  # the version carries on past a delete: no ABA
        team.team_set("plan", 1, expected_version=0 + 2)
    assert team.team_set("plan", 1).version == 3


def test_workflow_completion_clears_exactly_its_own_records(team: Team, tmp_path: Path) -> None:
    first = team.workflow_start("feature-a")
    other = team.workflow_start("feature-b")
    team.register("alice", workflow=first.id)
    team.register("zed", workflow=other.id)
    team.register("free")
    done = team.task_add("a1", {"secret": "payload"}, agent_id="alice")
    team.task_add("b1", workflow=other.id)
    team.task_add("loose")
    team.team_set("a/state", 1, workflow=first.id)
    team.team_set("b/state", 1, workflow=other.id)
    team.reserve("alice", ["src/**"])
    team.reserve("zed", ["docs/**"])
    team.handoff("alice", "zed", {"n": 1})
    team.task_claim("alice")
    team.task_complete(done.id, agent_id="alice")
    report = team.workflow_complete(first.id, summary="shipped feature a")
    assert report.cleared == {"agents": 1, "variables": 1, "tasks": 1, "handoffs": 1, "reservations": 1}
    assert report.summary == "shipped feature a" and report.workflow.state == "completed"
    assert report.log is not None and report.log["tasks"][0]["id"] == done.id
    assert "payload" not in json.dumps(report.log)
    assert sorted(a.agent.id for a in team.get_team_state().agents) == ["free", "zed"]
    assert [t.title for t in team.task_list()] == ["b1", "loose"]
    assert [v.key for v in team.team_list()] == ["b/state"]
    assert [r.agent for r in team.reservations()] == ["zed"]
    with pytest.raises(Conflict):
        team.register("late", workflow=first.id)
    audit = (tmp_path / ".memrouter" / "audit.jsonl").read_text().splitlines()
    assert len(audit) >= 15 and "payload" not in "".join(audit) and "shipped" not in "".join(audit)
    assert json.loads(audit[-1])["op"] == "workflow_complete"


def test_bad_input_is_refused_and_changes_nothing(team: Team) -> None:
    team.register("alice")
    task = team.task_add("t")
    before = team_rows(team)
    bad = [
        (NotFound, lambda: team.task_claim("nobody")),
        (NotFound, lambda: team.heartbeat("nobody", "idle")),
        (InvalidInput, lambda: team.heartbeat("alice", "sleeping")),
        (InvalidInput, lambda: team.team_set("big", "x" * 70_000)),
        (InvalidInput, lambda: team.team_set("nan", float("nan"))),
        (InvalidInput, lambda: team.task_claim("alice", lease_seconds=-5)),
        (InvalidInput, lambda: team.task_claim("alice", lease_seconds=0)),
        (InvalidInput, lambda: team.reserve("alice", ["../outside/**"])),
        (InvalidInput, lambda: team.reserve("alice", ["src/../../x"])),
        (InvalidInput, lambda: team.reserve("alice", ["/etc/passwd"])),
        (InvalidInput, lambda: team.reserve("alice", ["~/x"])),
        (InvalidInput, lambda: team.register("bad agent!")),
        (InvalidInput, lambda: team.task_add("t2", depends_on=["not-an-id"])),
        (NotFound, lambda: team.task_add("t2", depends_on=["0" * 32])),
        (InvalidInput, lambda: team.task_complete("x", agent_id="alice")),
        (Conflict, lambda: team.task_complete(task.id, agent_id="alice")),
        (InvalidInput, lambda: team.handoff("alice", "alice", {})),
        (NotFound, lambda: team.workflow_complete("f" * 32)),
    ]
    for error, call in bad:
        with pytest.raises(error):
            call()
    assert team_rows(team) == before


def test_ids_are_random_128_bit(team: Team) -> None:
    ids = [team.task_add(f"t{n}").id for n in range(50)]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids) and len(set(ids)) == 50
    assert sorted(ids) != ids or sorted(ids, reverse=True) != ids


def test_the_team_survives_an_index_rebuild(memories: Path, tmp_path: Path) -> None:
    from memrouter import Router

    with Router.open(root=memories, index_dir=tmp_path / "index") as router:
        router.team().team_set("keep", {"me": 1})
        router.refresh(full=True)
    (tmp_path / "index" / "index.sqlite").unlink()
    with Router.open(root=memories, index_dir=tmp_path / "index") as router:
        router.refresh(full=True)
        assert router.team().team_get("keep").value == {"me": 1}


def team_rows(team: Team) -> list[tuple[str, list[tuple[object, ...]]]]:
    """Every row of every team table, as the store holds them (either store: the same statements)."""
    tables = ("workflows", "agents", "variables", "tasks", "task_deps", "handoffs", "reservations")
    return team._store.read(
        lambda conn: [(t, [tuple(row) for row in conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2")]) for t in tables]
    )


def test_claim_a_named_task(team: Team) -> None:
    team.register("a1", ["python"])
    first = team.task_add("first", priority=9)
    second = team.task_add("second", priority=1)
    blocked = team.task_add("blocked", depends_on=[first.id])
    picked = team.task_claim("a1", task_id=second.id)
    assert picked is not None and picked.id == second.id  # not the higher-priority one
    assert team.task_claim("a1", task_id=second.id) is None  # already claimed
    assert team.task_claim("a1", task_id=blocked.id) is None  # its dependency is not done
    with pytest.raises(NotFound):
        team.task_claim("a1", task_id="0" * 32)
    assert team.task_get(first.id).state == "queued"


def test_handoff_get_shows_any_state(team: Team) -> None:
    team.register("a1")
    team.register("b1")
    offer = team.handoff("a1", "b1", {"notes": "over to you"})
    team.handoff_reject(offer.id, "b1", "busy")
    assert team.handoff_get(offer.id).state == "rejected"
    with pytest.raises(NotFound):
        team.handoff_get("f" * 32)
