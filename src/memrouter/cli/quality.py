"""Commands that measure: doctor (the dense index, HNSW recall) and eval (retrieval quality)."""

from __future__ import annotations

from typing import Any

import click

from memrouter.cli.common import FORMAT, State, emit, handle_errors, pass_state
from memrouter.core.model import MODES


@click.command()
@click.option("--recall", is_flag=True, help="Measure HNSW recall@10 against exact search on this index.")
@click.option("--samples", type=click.IntRange(1, 10_000), default=200, show_default=True)
@FORMAT
@pass_state
@handle_errors
def doctor(state: State, recall: bool, samples: int, fmt: str) -> None:
    """Check the index: vector search recall (--recall) and the dense index's state."""
    router = state.router()
    data: dict[str, Any] = {"dense": router.status()["dense"]}
    if recall:
        data["recall"] = router.measure_recall(samples=samples)

    def text() -> str:
        dense = data["dense"]
        lines = [f"dense index: {dense['embedded_memories']} memories, {dense['chunks']} chunks ({dense['model']})"]
        if dense["reembed_needed"]:
            lines.append(f"  {dense['other_model_chunks']} chunks from another model: run memrouter index --reembed")
        if recall:
            r = data["recall"]
            lines.append(
                f"HNSW recall@{r['k']}: {r['recall']} over {r['samples']} sampled queries "
                f"({r['chunks']} chunks; search uses {r.get('search_path', 'exact')})"
            )
        return "\n".join(lines)

    emit(fmt, data, text)


def _parse_ks(value: str) -> tuple[int, ...]:
    try:
        ks = tuple(sorted({int(part) for part in value.split(",") if part.strip()}))
    except ValueError as exc:
        raise click.BadParameter("use a comma-separated list of whole numbers, e.g. 1,5,10") from exc
    if not ks or ks[0] < 1 or ks[-1] > 200:
        raise click.BadParameter("each k must be between 1 and 200")
    return ks


@click.command(name="eval")
@click.argument("dataset", type=click.Path(dir_okay=False, path_type=str))
@click.option("--mode", type=click.Choice(MODES), default=None)
@click.option("--k", "ks", default="1,5,10", show_default=True, help="Cut-offs for recall@k.")
@click.option("--details", is_flag=True, help="Also list the queries that missed (text format).")
@click.option("--rerank", is_flag=True, help="With the second stage on (see [search] rerank).")
@FORMAT
@pass_state
@handle_errors
def eval_(state: State, dataset: str, mode: str | None, ks: str, details: bool, rerank: bool, fmt: str) -> None:
    """Score retrieval on a golden-query file: recall@k, MRR@10, nDCG@10, latency."""
    from memrouter.ops.evaluation import evaluate, load_golden

    cutoffs = _parse_ks(ks)
    queries = load_golden(dataset)
    router = state.router(rerank=rerank)
    choice = router.search_mode(mode)  # hybrid embeds what is missing first, or says it runs keyword-only
    if choice.notice is not None:
        click.echo(f"memrouter: {choice.notice}", err=True)
    mode = choice.mode
    depth = max(10, *cutoffs)
    router.search(queries[0].query, limit=depth, mode=mode)  # warm caches and models first
    report = evaluate(lambda q: [h.name for h in router.search(q, limit=depth, mode=mode)], queries, cutoffs)
    data: dict[str, Any] = {"dataset": dataset, "mode": mode, "rerank": router.config.search.rerank} | report.to_dict()

    def text() -> str:
        header = [f"recall@{k}" for k in cutoffs] + ["mrr@10", "ndcg@10"]
        lines = [
            f"{dataset}  mode={mode}" + ("  rerank" if data["rerank"] else ""),
            f"{'':<14}" + "".join(f"{h:>11}" for h in header) + f"{'queries':>9}",
        ]
        for label, row in [("all", data["overall"]), *data["by_kind"].items()]:
            lines.append(f"{label:<14}" + "".join(f"{row[h]:>11.3f}" for h in header) + f"{row['queries']:>9}")
        lat = data["latency_ms"]
        lines.append(f"latency ms: p50 {lat['p50']}  p95 {lat['p95']}")
        if details:
            for row in data["queries"]:
                if row["missing"]:
                    lines.append(
                        f"  {row['id']} missed {', '.join(row['missing'])}  (top: {', '.join(row['top'][:3])})"
                    )
        return "\n".join(lines)

    emit(fmt, data, text)
