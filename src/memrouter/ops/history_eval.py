"""Scoring retrieval on pairs mined from a repository's history (``memrouter eval --from-git``).

Each snapshot's memories (``memrouter.ops.mining``) are written to one working
folder in turn, indexed with the settings given, and the pairs asked of that
snapshot are searched. The folder and its index are reused from one snapshot to
the next, so only the memories that changed are embedded again.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memrouter.config.settings import Config, IndexConfig
from memrouter.core.records import replace
from memrouter.ops.evaluation import EvalReport, GoldenQuery, evaluate
from memrouter.ops.mining import MinedSet, snapshot_texts
from memrouter.ops.search import effective_mode, search
from memrouter.ops.workspace import Workspace

__all__ = ["evaluate_mined", "remove_work", "snapshot_config", "write_snapshot"]

Progress = Callable[[str], None]


def snapshot_config(base: Config, work: Path) -> Config:
    """``base``'s search and embedding settings over the memories in ``work/memories`` (index in
    ``work/index``), without its database, services or project."""
    return replace(
        base, root=work / "memories", index_dir=work / "index", project_dir=None, backends={}, index=IndexConfig(),
        source=None, unknown_keys=(), claude_flow=None, embed_background=False,
    )  # fmt: skip


def write_snapshot(root: Path, texts: dict[str, str]) -> None:
    """Make ``root`` hold exactly ``texts`` (name -> text) as ``<name>.md`` files; unchanged files are left
    as they are, so a refresh reads only what changed."""
    root.mkdir(parents=True, exist_ok=True)
    wanted = {root / f"{name}.md": text for name, text in texts.items()}
    for path in list(root.rglob("*.md")):
        if path not in wanted and not any(part.startswith(".") for part in path.relative_to(root).parts):
            path.unlink()
    for path, text in wanted.items():
        if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == text:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()


def evaluate_mined(
    mined: MinedSet,
    base: Config,
    work: Path,
    *,
    mode: str | None = None,
    ks: Sequence[int] = (1, 5, 10),
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Search every pair of ``mined`` against its snapshot with ``base``'s settings (``mode``: the
    configured one when None); the report of ``EvalReport.to_dict`` with the snapshots and the mining
    counts beside it. ``work`` keeps the memories and the index between snapshots (and between runs)."""
    report = EvalReport(tuple(sorted(set(ks))))
    depth = max(10, *report.ks)
    used: set[str] = set()
    config = snapshot_config(base, work)
    for snapshot in mined.snapshots:
        pairs = mined.for_snapshot(snapshot.commit)
        if not pairs:
            continue
        write_snapshot(config.root, snapshot_texts(Path(mined.repository), snapshot.commit, mined.folder))
        if progress is not None:
            progress(f"snapshot {snapshot.commit[:10]}: {snapshot.memories} memories, {len(pairs)} pairs")
        ws = Workspace(config, watch=False)
        try:
            ws.index.refresh(embed=(mode or base.search.mode) != "lexical")
            chosen = effective_mode(ws, mode)
            used.add(chosen)
            asked = [GoldenQuery(pair.id, pair.query, pair.expected, pair.kind) for pair in pairs]
            part = evaluate(_searcher(ws, chosen, depth), asked, report.ks)
        finally:
            ws.close()
        report.rows += part.rows
        report.latencies_ms += part.latencies_ms
    found: dict[str, Any] = {
        "repository": mined.repository,
        "folder": mined.folder,
        "mode": ", ".join(sorted(used)) or (mode or base.search.mode),
        "rerank": base.search.rerank,
        "snapshots": [
            {"commit": s.commit, "memories": s.memories, "pairs": len(mined.for_snapshot(s.commit))}
            for s in mined.snapshots
        ],  # fmt: skip
        "mined": mined.counts,
    }
    if not report.rows:
        return found | {"overall": {}, "by_kind": {}, "latency_ms": {"p50": None, "p95": None}, "queries": []}
    return found | report.to_dict()


def _searcher(ws: Workspace, mode: str, depth: int) -> Callable[[str], list[str]]:
    def names(query: str) -> list[str]:
        return [hit.name for hit in search(ws, query, limit=depth, mode=mode)]

    return names


def remove_work(work: Path) -> None:
    """Remove a working folder made for one run."""
    shutil.rmtree(work, ignore_errors=True)
