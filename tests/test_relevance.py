"""Relevance (0-1, one meaning in every mode), the floor under weak matches, `why` and plain snippets in text."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from helpers import write

from memrouter import Router
from memrouter.cli import main
from memrouter.cli.fast_search import format_hits
from memrouter.ops.relevance import FLOOR, Features, relevance


def _search(memories: Path, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    base = ["--root", str(memories), "--index-dir", str(tmp_path / "idx")]
    result = CliRunner().invoke(main, [*base, "search", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_relevance_is_a_probability_that_never_rises_down_the_list(router: Router) -> None:
    hits = router.search("flaky tests retry in CI", limit=10)
    judged = [hit.relevance for hit in hits]
    assert judged and all(value is not None and 0.0 <= value <= 1.0 for value in judged)
    assert judged == sorted(judged, reverse=True)  # type: ignore[type-var]
    assert hits[0].name == "ci/flaky-tests" and not hits[0].weak
    assert all(hit.weak == (hit.relevance < FLOOR) for hit in hits)  # type: ignore[operator]


def test_relevance_grows_with_coverage_and_meaning_and_falls_with_rank() -> None:
    assert relevance(Features(1.0, None, 1)) > relevance(Features(0.3, None, 1)) > relevance(Features(0.3, None, 8))
    assert relevance(Features(0.5, 0.8, 1)) > relevance(Features(0.5, 0.2, 1))


def test_a_question_nothing_answers_gets_no_good_match_with_the_closest_marked_weak(
    memories: Path, tmp_path: Path
) -> None:
    """Nothing passes the floor: "no good match", and the closest hits still listed, each marked weak (a right
    answer worded apart from its question is flagged, never hidden)."""
    code, out, _ = _search(memories, tmp_path, "which linter do we use", "--mode", "lexical")
    assert code == 0
    assert out.startswith("no good match for 'which linter do we use'; the closest, all below the relevance floor:")
    ranked = [line for line in out.splitlines() if line[:4].strip().rstrip(".").isdigit()]
    assert ranked and all("[weak]" in line for line in ranked)
    code, out, _ = _search(memories, tmp_path, "which linter do we use", "--mode", "lexical", "--format", "json")
    data = json.loads(out)
    assert data["results"] and all(hit["weak"] for hit in data["results"]) and "weak_left_out" not in data
    assert {"query", "mode", "took_ms", "results"} <= set(data)


def test_weak_hits_give_way_to_good_ones_unless_asked_for(memories: Path, tmp_path: Path) -> None:
    code, out, _ = _search(memories, tmp_path, "flaky tests in CI", "--mode", "lexical", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["results"] and not any(hit["weak"] for hit in data["results"])
    if data.get("weak_left_out"):
        code, out, _ = _search(
            memories, tmp_path, "flaky tests in CI", "--mode", "lexical", "--weak", "--format", "json"
        )
        assert sum(hit["weak"] for hit in json.loads(out)["results"]) == data["weak_left_out"]
        code, out, _ = _search(memories, tmp_path, "flaky tests in CI", "--mode", "lexical")
        assert "--weak shows them" in out and "[weak]" not in out


def test_text_output_shows_relevance_why_and_a_snippet_without_markup(memories: Path, tmp_path: Path) -> None:
    write(
        memories,
        "money",
        "# Money\n\nAmounts use **banker's** rounding: `ROUND_HALF_EVEN`.\n",
    )
    code, out, _ = _search(memories, tmp_path, "rounding money", "--mode", "lexical")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(" 1. money  0.") and lines[0].endswith("Money")
    assert lines[1] == "    Money Amounts use banker's rounding: ROUND_HALF_EVEN."
    assert lines[2].startswith("    why: keywords #1 (") and lines[2].endswith("; lexical search")
    assert "**" not in out and "\x1b[" not in out  # no markup and no terminal emphasis when piped


def test_json_keeps_the_contract_keys_and_adds_relevance(memories: Path, tmp_path: Path) -> None:
    code, out, _ = _search(memories, tmp_path, "PostgreSQL transactions", "--mode", "lexical", "--format", "json")
    assert code == 0
    first = json.loads(out)["results"][0]
    contract = {"name", "title", "score", "source", "channel", "path", "hash", "why"}
    assert contract <= set(first) and first["name"] == "adr/adr-001-postgres"
    assert first["score"] > 1.0  # `score` keeps its meaning: the pipeline's ranking score
    assert 0.0 <= first["relevance"] <= 1.0 and first["weak"] is False


def test_format_hits_emphasises_matches_only_on_a_terminal(router: Router) -> None:
    hits = router.search("PostgreSQL transactions", mode="lexical", limit=1)
    assert "\x1b[1m" in format_hits(hits, query="PostgreSQL transactions", mode="lexical", emphasis=True)
    assert "\x1b[1m" not in format_hits(hits, query="PostgreSQL transactions", mode="lexical")
