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
@click.argument("dataset", type=click.Path(dir_okay=False, path_type=str), required=False)
@click.option("--mode", type=click.Choice(MODES), default=None)
@click.option("--k", "ks", default="1,5,10", show_default=True, help="Cut-offs for recall@k.")
@click.option("--details", is_flag=True, help="Also list the queries that missed (text format).")
@click.option("--rerank", is_flag=True, help="With the second stage on (see [search] rerank).")
@click.option(
    "--from-git",
    "repository",
    type=click.Path(file_okay=False, exists=True, path_type=str),
    default=None,
    help="Instead of DATASET: pairs mined from this git repository's history (docs/search.md).",
)
@click.option("--folder", default=".serena/memories", show_default=True, help="With --from-git: its memories folder.")
@click.option(
    "--snapshots", type=click.IntRange(1, 50), default=4, show_default=True, help="With --from-git: commits asked of."
)
@click.option(
    "--max-files",
    type=click.IntRange(1, 10_000),
    default=10,
    show_default=True,
    help="With --from-git: a commit's subject asks for the one memory it changed if it changed at most this many files.",
)
@click.option(
    "--save",
    type=click.Path(dir_okay=False, path_type=str),
    default=None,
    help="With --from-git: write the mined pairs (JSON).",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="With --from-git: keep the snapshot's memories and index here (reused by the next run).",
)
@FORMAT
@pass_state
@handle_errors
def eval_(
    state: State, dataset: str | None, mode: str | None, ks: str, details: bool, rerank: bool, repository: str | None,
    folder: str, snapshots: int, max_files: int, save: str | None, work: str | None, fmt: str,
) -> None:  # fmt: skip
    """Score retrieval on a golden-query file, or on pairs mined from a repository's history (--from-git):
    recall@k, MRR@10, nDCG@10, latency."""
    cutoffs = _parse_ks(ks)
    if (dataset is None) == (repository is None):
        raise click.UsageError("give a golden-query file (DATASET) or --from-git REPO, not both")
    if repository is not None:
        data = _from_git(state, repository, folder, snapshots, max_files, save, work, mode, cutoffs, rerank)
        label = f"{repository} (mined)"
    else:
        assert dataset is not None
        data = _from_file(state, dataset, mode, cutoffs, rerank)
        label = dataset

    def text() -> str:
        header = [f"recall@{k}" for k in cutoffs] + ["mrr@10", "ndcg@10"]
        lines = [f"{label}  mode={data['mode']}" + ("  rerank" if data["rerank"] else "")]
        if "mined" in data:
            for kind, counts in data["mined"].items():
                dropped = ", ".join(
                    f"{reason} {n}" for reason, n in counts.items() if reason not in ("mined", "kept") and n
                )
                lines.append(
                    f"  {kind}: mined {counts['mined']}, kept {counts['kept']}"
                    + (f" (filtered: {dropped})" if dropped else "")
                )
        if not data["overall"]:
            lines.append("no pairs to score")
            return "\n".join(lines)
        lines.append(f"{'':<14}" + "".join(f"{h:>11}" for h in header) + f"{'queries':>9}")
        for label_, row in [("all", data["overall"]), *data["by_kind"].items()]:
            lines.append(f"{label_:<14}" + "".join(f"{row[h]:>11.3f}" for h in header) + f"{row['queries']:>9}")
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


def _from_file(state: State, dataset: str, mode: str | None, cutoffs: tuple[int, ...], rerank: bool) -> dict[str, Any]:
    from memrouter.ops.evaluation import evaluate, load_golden

    queries = load_golden(dataset)
    router = state.router(rerank=rerank)
    choice = router.search_mode(mode)  # hybrid embeds what is missing first, or says it runs keyword-only
    if choice.notice is not None:
        click.echo(f"memrouter: {choice.notice}", err=True)
    mode = choice.mode
    depth = max(10, *cutoffs)
    router.search(queries[0].query, limit=depth, mode=mode)  # warm caches and models first
    report = evaluate(lambda q: [h.name for h in router.search(q, limit=depth, mode=mode)], queries, cutoffs)
    return {"dataset": dataset, "mode": mode, "rerank": router.config.search.rerank} | report.to_dict()


def _from_git(
    state: State, repository: str, folder: str, snapshots: int, max_files: int, save: str | None, work: str | None,
    mode: str | None, cutoffs: tuple[int, ...], rerank: bool,
) -> dict[str, Any]:  # fmt: skip
    """Mine ``repository`` and score the pairs with this project's search settings (the defaults outside a
    project)."""
    import json
    import tempfile
    from pathlib import Path

    from memrouter.config.settings import Config
    from memrouter.core.errors import ConfigError
    from memrouter.core.records import replace
    from memrouter.ops.history_eval import evaluate_mined, remove_work
    from memrouter.ops.mining import MiningOptions, mine

    mined = mine(repository, MiningOptions(folder=folder, snapshots=snapshots, max_files=max_files))
    if save is not None:
        Path(save).write_text(json.dumps(mined.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
    here = Path(work) if work is not None else Path(tempfile.mkdtemp(prefix="memrouter-eval-"))
    try:
        base = Config.load(root=state.root, index_dir=state.index_dir)
    except ConfigError:
        base = Config(root=here, index_dir=here)  # outside a project: the defaults
    if rerank:
        base = replace(base, search=replace(base.search, rerank=True))
    try:
        return evaluate_mined(
            mined, base, here, mode=mode, ks=cutoffs, progress=lambda line: click.echo(f"memrouter: {line}", err=True)
        )
    finally:
        if work is None:
            remove_work(here)
