from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memrouter.cli import main
from memrouter.core.errors import InvalidInput
from memrouter.ops.evaluation import evaluate, hit_at, load_golden, ndcg_at, recall_at, reciprocal_rank

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_metrics_by_hand() -> None:
    ranked = ["a", "b", "c", "d"]
    assert recall_at(ranked, ["b", "z"], 2) == 0.5
    assert hit_at(ranked, ["z", "d"], 3) == 0.0 and hit_at(ranked, ["z", "d"], 4) == 1.0
    assert reciprocal_rank(ranked, ["c"]) == pytest.approx(1 / 3)
    assert ndcg_at(ranked, ["a"]) == 1.0
    assert ndcg_at(["x", "a"], ["a"]) == pytest.approx(1 / 1.5849625, rel=1e-6)
    assert ndcg_at([], ["a"]) == 0.0


def test_evaluate_aggregates_per_kind() -> None:
    queries = load_golden(EXAMPLES / "golden.json")
    report = evaluate(lambda q: [], queries)
    assert report.summary()["recall@5"] == 0.0 and report.summary()["queries"] == len(queries)
    assert set(report.to_dict()["by_kind"]) == {q.kind for q in queries}


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", '{"queries": []}', '{"queries": [{"query": "x"}]}', '{"queries": [{"query": "", "expected": ["a"]}]}',
     '{"queries": [{"id": 1, "query": "a", "expected": ["x"]}, {"id": 1, "query": "b", "expected": ["y"]}]}'],
)  # fmt: skip
def test_bad_golden_files_are_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "golden.json"
    path.write_text(content)
    with pytest.raises(InvalidInput):
        load_golden(path)


def test_eval_command_on_the_examples(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["--root", str(EXAMPLES / "memories"), "--index-dir", str(tmp_path / "idx"), "eval",
         str(EXAMPLES / "golden.json"), "--mode", "lexical", "--k", "1,5", "--format", "json"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["overall"]["queries"] == 24
    assert data["overall"]["recall@5"] > 0.8  # keyword and body-fact queries are lexical's strength
    assert data["by_kind"]["keyword"]["mrr@10"] == 1.0
    bad = CliRunner().invoke(main, ["--root", str(EXAMPLES / "memories"), "eval", "missing.json", "--k", "x"])
    assert bad.exit_code == 2
