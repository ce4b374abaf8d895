"""The janitor over a real project: findings with evidence, a dry run that changes nothing, an idempotent apply."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write

from memrouter import Router
from memrouter.cli import main
from memrouter.store import frontmatter

NOW = 1_790_000_000.0  # 2026-09-21

DB_OLD = (
    "---\nupdated: '2026-01-01T00:00:00Z'\n---\n# Staging database\n\n"
    "The staging database runs PostgreSQL on the shared cluster.\n\n- port: 5432\n- owner: platform\n"
)
DB_NEW = "---\nupdated: '2026-06-01T00:00:00Z'\n---\n# Staging database\n\nMoved last week.\n\n- port: 5433\n"
LONG = (
    "Retry a failing CI job once, then quarantine the test in the flaky list and open an issue with the job "
    "link, the runner image and the seed, so the owner can reproduce it locally before the next release branch "
    "is cut; never retry more than once because retries hide real regressions from the nightly report."
)


def project(tmp_path: Path) -> Path:
    root = tmp_path / "project" / ".serena" / "memories"
    write(root, "db/staging-old", DB_OLD)
    write(root, "db/staging-new", DB_NEW)
    write(root, "ci/flaky-a", f"---\nupdated: '2026-02-01T00:00:00Z'\n---\n# Flaky jobs\n\n{LONG}\n")
    write(root, "ci/flaky-b", f"---\nupdated: '2026-03-01T00:00:00Z'\n---\n# Flaky CI jobs\n\n{LONG.replace('once, then', 'once and then')}\n")  # fmt: skip
    write(
        root,
        "copy-one",
        "---\nupdated: '2026-03-01T00:00:00Z'\n---\n# Deploy windows\n\nDeploys happen on Tuesdays and Thursdays before noon.\n",
    )
    write(root, "copy-two", "---\nupdated: '2026-04-01T00:00:00Z'\n---\n# Deploy windows\n\nDeploys happen on Tuesdays and Thursdays before noon.\n")  # fmt: skip
    write(root, "expired-note", "---\nvalid_until: '2026-01-01'\n---\n# Freeze\n\nCode freeze until New Year.\n")
    write(root, "pending/guess", "---\nstatus: pending_review\n---\n# Staging database\n\n- port: 9999\n")
    write(root, "cache", "---\nupdated: '2026-04-01T00:00:00Z'\n---\n# Cache\n\nThe cache is enabled in production.\n")
    write(root, "cache-later", "---\nupdated: '2026-05-01T00:00:00Z'\n---\n# Cache\n\nThe cache is not enabled in production.\n")  # fmt: skip
    write(root, "unrelated", "# Logging\n\nLogs go to the central collector with a 30 day retention.\n")
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def test_dry_run_finds_everything_with_evidence_and_changes_nothing(tmp_path: Path) -> None:
    root = project(tmp_path)
    before = snapshot(root)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False, clock=lambda: NOW) as router:
        report = router.janitor()
    assert snapshot(root) == before and report.dry_run
    by = {(f.reason, f.names) for f in report.findings}
    assert ("duplicate", ("copy-two", "copy-one")) in by
    assert ("near_duplicate", ("ci/flaky-a", "ci/flaky-b")) in by
    assert ("contradiction", ("db/staging-old", "db/staging-new")) in by
    assert ("contradiction", ("cache", "cache-later")) in by
    assert ("expired", ("expired-note",)) in by
    assert not any("pending/guess" in f.names for f in report.findings)  # the review queue's, not the janitor's
    assert any("await review" in notice for notice in report.notices)
    conflict = next(f for f in report.findings if f.names == ("db/staging-old", "db/staging-new"))
    assert conflict.evidence["statements"] == [{"kind": "fact", "key": "port", "older": "5432", "newer": "5433"}]
    proposals = {p.name: p for p in report.proposals}
    assert set(proposals) == {"copy-one", "ci/flaky-a", "db/staging-old", "cache", "expired-note"}
    assert proposals["db/staging-old"].superseded_by == "db/staging-new"
    assert "5432 -> 5433" in proposals["db/staging-old"].reason
    assert proposals["expired-note"].action == "expire" and proposals["expired-note"].superseded_by is None
    assert not any(p.applied for p in report.proposals)
    assert json.loads(json.dumps(report.to_dict()))["counts"]["contradiction"] == 2


def test_apply_supersedes_through_the_write_path_never_deletes_and_is_idempotent(tmp_path: Path) -> None:
    root = project(tmp_path)
    before = snapshot(root)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False, clock=lambda: NOW) as router:
        applied = router.janitor(apply=True)
        assert all(p.applied for p in applied.proposals) and len(applied.proposals) == 5
        again = router.janitor(apply=True)
        assert again.proposals == () and again.findings == ()
        found = [hit.name for hit in router.search("staging database port", mode="lexical")]
        assert "db/staging-new" in found and "db/staging-old" not in found  # the newer wins
        history = router.search("staging database port", mode="lexical", include_history=True)
        assert next(hit.validity for hit in history if hit.name == "db/staging-old") == "superseded"
    after = snapshot(root)
    assert set(after) == set(before)  # nothing deleted
    changed = {name for name in after if after[name] != before[name]}
    assert changed == {f"{n}.md" for n in ("copy-one", "ci/flaky-a", "db/staging-old", "cache", "expired-note")}
    old = frontmatter.parse(after["db/staging-old.md"].decode()).data
    assert old["status"] == "obsolete" and old["superseded_by"] == "db/staging-new"
    assert "5432 -> 5433" in old["invalidation_reason"]
    assert frontmatter.split(after["db/staging-old.md"].decode())[1] == frontmatter.split(DB_OLD)[1]  # body kept
    assert after["pending/guess.md"] == before["pending/guess.md"]


def test_sprint_memories_of_a_closed_sprint_expire_and_an_overdue_sprint_is_a_notice(tmp_path: Path) -> None:
    root = tmp_path / "project" / ".serena" / "memories"
    write(root, "keep", "# Keep\n\nlong-term knowledge\n")
    now = [NOW]
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False, clock=lambda: now[0]) as router:
        router.lifecycle.start("s1", weeks=1, goal=None)
        router.save("# Spike\n\nwe tried a cache\n", "spike", kind="research")
        router.lifecycle.close(archive_rest=True)
        write(root, "sprints/s1/late-note", "# Late\n\nadded after the close by hand\n")
        router.lifecycle.start("s2", weeks=1, goal=None)
        now[0] += 30 * 86400
        report = router.janitor()
        assert {(f.reason, f.names) for f in report.findings} == {("sprint_over", ("sprints/s1/late-note",))}
        assert any("sprint s2 ended" in notice for notice in report.notices)
        router.janitor(apply=True)
        assert router.get("sprints/s1/late-note").status == "obsolete"
        assert router.janitor().proposals == ()


def test_expired_scratchpad_notes_are_reported_then_collected(tmp_path: Path) -> None:
    root = tmp_path / "m"
    write(root, "a", "# A\n\nnote\n")
    now = [NOW]
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False, clock=lambda: now[0]) as router:
        assert router.janitor().notices == ()  # no scratchpad: none is made
        assert not (tmp_path / "idx" / "scratch.sqlite").exists()
        router.scratchpad().write("agent-1", "draft", "thinking", ttl=60)
        now[0] += 120
        assert "1 short-term scratchpad notes are past their TTL" in router.janitor().notices[0]
        assert "1 expired short-term scratchpad notes collected" in router.janitor(apply=True).notices[0]
        assert router.janitor().notices == ()


def test_usage_reports_never_accessed_and_stale_memories(tmp_path: Path) -> None:
    root = tmp_path / "m"
    for name in ("read-often", "read-long-ago", "never"):
        write(root, name, f"# {name}\n\nbody of {name}\n")
    now = [NOW]
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False, clock=lambda: now[0]) as router:
        router.get("read-long-ago")
        now[0] += 100 * 86400
        router.get("read-often")
        router.get("read-often")
        usage = router.janitor().usage
    assert usage["never_accessed_names"] == ["never"] and usage["stale_names"] == ["read-long-ago"]
    assert usage["accessed"] == 2 and usage["accesses"] == 3 and usage["stale_days"] == 90


@pytest.mark.parametrize("flags", [[], ["--dry-run"], ["--apply"]])
def test_the_command_prints_the_report_and_applies_only_when_asked(tmp_path: Path, flags: list[str]) -> None:
    root = project(tmp_path)
    before = snapshot(root)
    args = ["--root", str(root), "--index-dir", str(tmp_path / "idx"), "janitor", *flags, "--format", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["dry_run"] is (flags != ["--apply"]) and len(data["proposals"]) == 5
    assert (snapshot(root) == before) is (flags != ["--apply"])
    text = CliRunner().invoke(main, args[:-2])
    assert text.exit_code == 0
    assert ("would supersede" in text.output) is (flags != ["--apply"])


def test_a_memory_changed_after_the_analysis_is_skipped_and_said_so(tmp_path: Path) -> None:
    from memrouter.ops.janitor.run import _apply

    root = project(tmp_path)
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False, clock=lambda: NOW) as router:
        report = router.janitor()
        hashes = {p.name: router.get(p.name).hash for p in report.proposals}
        edited = DB_OLD.replace("shared cluster", "shared cluster (checked today)")
        write(root, "db/staging-old", edited)  # someone edits it between the report and the apply
        done, skipped = _apply(router.workspace, list(report.proposals), hashes)
        assert skipped == ["db/staging-old changed since the analysis; not changed (run the janitor again)"]
        assert [p.name for p in done if not p.applied] == ["db/staging-old"]
        assert (root / "db/staging-old.md").read_text() == edited
        assert router.get("copy-one").status == "obsolete"


def test_idle_team_workflows_are_proposed_then_completed_keeping_their_log(tmp_path: Path) -> None:
    from memrouter.team import ManualClock

    root = tmp_path / "m"
    write(root, "a", "# A\n\nnote\n")
    now = [NOW]
    with Router.open(root=root, index_dir=tmp_path / "idx", watch=False, clock=lambda: now[0]) as router:
        if router.config.index.url is None:  # (in PostgreSQL the team channel's tables always exist)
            assert router.janitor().team == {}  # no team channel: none is made
            assert not (tmp_path / "idx" / "team.sqlite").exists()
        team = router.team()
        team.clock = clock = ManualClock(NOW)
        left = team.workflow_start("abandoned migration")
        team.register("agent-1", ["python"], workflow=left.id)
        team.task_add("port the schema", workflow=left.id, agent_id="agent-1")
        team.team_set("migration/step", 3, workflow=left.id, agent_id="agent-1")
        busy = team.workflow_start("release")
        clock.advance(13 * 86400)
        team.register("agent-2", ["go"], workflow=busy.id)  # activity 13 days in: busy stays live
        clock.advance(2 * 86400)
        now[0] = clock()

        found = router.janitor().team
        assert found["workflow_idle_days"] == 14
        assert [(w["id"], w["completed"]) for w in found["idle_workflows"]] == [(left.id, False)]
        assert found["idle_workflows"][0]["records"] == {
            "agents": 1, "variables": 1, "tasks": 1, "handoffs": 0, "reservations": 0,
        }  # fmt: skip
        assert team.workflow(left.id).state == "active"  # a dry run changes nothing

        applied = router.janitor(apply=True).team
        assert [(w["id"], w["completed"]) for w in applied["idle_workflows"]] == [(left.id, True)]
        done = team.workflow(left.id)
        assert done.state == "completed" and done.summary is not None and "janitor" in done.summary
        assert team.workflow(busy.id).state == "active"
        assert [agent.agent.id for agent in team.get_team_state().agents] == ["agent-2"]
        assert router.janitor().team["idle_workflows"] == []  # idempotent
