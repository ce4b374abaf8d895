"""The ``memrouter`` command group: a thin layer over the Router.

The console script is ``memrouter.console:main``, which runs plain search
command lines itself (``memrouter.search_command``) and hands everything else
to this group. Exit codes: 0 ok, 1 the operation failed, 2 bad usage or bad
input, 3 a backend or protocol error, 4 the local index could not be used.
Errors print one clear line on stderr.
"""

from __future__ import annotations

import functools
import json
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from memrouter.errors import MemoryRouterError, exit_code_for
from memrouter.model import CHANNELS, KINDS, MODES, STATUSES

F = TypeVar("F", bound=Callable[..., Any])

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Output format.",
)


class State:
    """What the group options resolved to, shared with every command."""

    def __init__(self, root: str | None, index_dir: str | None) -> None:
        self.root = root
        self.index_dir = index_dir
        self._router: Any = None

    def router(self) -> Any:
        if self._router is None:
            from memrouter.router import Router

            self._router = Router.open(root=self.root, index_dir=self.index_dir, watch=False)
        return self._router


def handle_errors(func: F) -> F:
    """Turn library errors into one line on stderr and the contract's exit code."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MemoryRouterError as exc:
            click.echo(f"memrouter: {exc}", err=True)
            sys.exit(exit_code_for(exc))
        except OSError as exc:
            click.echo(f"memrouter: {exc}", err=True)
            sys.exit(1)

    return wrapper  # type: ignore[return-value]


def emit(fmt: str, data: Any, text: Callable[[], str]) -> None:
    if fmt == "json":
        click.echo(json.dumps(data, ensure_ascii=False, indent=None, default=str))
    else:
        output = text()
        if output:
            click.echo(output)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--root",
    type=click.Path(file_okay=False, path_type=str),
    envvar="MEMROUTER_ROOT",
    help="Memories folder (default: .serena/memories of the project found from here).",
)
@click.option(
    "--index-dir",
    type=click.Path(file_okay=False, path_type=str),
    envvar="MEMROUTER_INDEX_DIR",
    help="Where the index lives (default: <project>/.memrouter, or the user cache).",
)
@click.version_option(package_name="memrouter")
@click.pass_context
def main(ctx: click.Context, root: str | None, index_dir: str | None) -> None:
    """memrouter: search and manage your project's memories, from one place."""
    ctx.obj = State(root, index_dir)


pass_state = click.make_pass_decorator(State)


@main.command()
@click.option("--full", is_flag=True, help="Re-read every file, not only those whose stat changed.")
@click.option("--lexical-only", is_flag=True, help="Skip embeddings (no model is loaded).")
@click.option("--reembed", is_flag=True, help="Drop vectors made by another embedding model and embed again.")
@FORMAT
@pass_state
@handle_errors
def index(state: State, full: bool, lexical_only: bool, reembed: bool, fmt: str) -> None:
    """Build or refresh the index (full text and embeddings) from the memory files."""
    router = state.router()
    started = time.perf_counter()
    show = sys.stderr.isatty() and fmt == "text"
    with _progress_bar("reading", show) as read_progress, _progress_bar("embedding", show) as embed_progress:
        report = router.refresh(
            full=full, progress=read_progress, embed=not lexical_only, embed_progress=embed_progress, reembed=reembed
        )
    status = router.status()
    data = report.to_dict() | {"took_ms": round((time.perf_counter() - started) * 1000, 1)}
    data["total"] = status["memories"]["total"]
    data["dense"] = status["dense"]

    def text() -> str:
        lines = [
            f"{data['total']} memories indexed: {data['added']} added, {data['updated']} updated, "
            f"{data['removed']} removed, {data['unchanged']} unchanged ({data['took_ms']} ms)"
        ]
        lines += [f"  problem: {name}: {problem}" for name, problem in report.problems.items()]
        dense = data["dense"]
        if dense["chunks"]:
            lines.append(f"{dense['embedded_memories']} memories embedded ({dense['chunks']} chunks, {dense['model']})")
        return "\n".join(lines)

    emit(fmt, data, text)


class _progress_bar:
    """A click progress bar with ETA on a terminal; a no-op callback otherwise."""

    def __init__(self, label: str, show: bool) -> None:
        self.label, self.show, self.done = label, show, 0
        self.bar: Any = None

    def __enter__(self) -> Any:
        if not self.show:
            return None
        return self.update

    def update(self, done: int, total: int) -> None:
        if self.bar is None:
            self.bar = click.progressbar(length=total, label=self.label, file=sys.stderr, show_eta=True)
            self.bar.__enter__()
        self.bar.update(done - self.done)
        self.done = done

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.__exit__(None, None, None)


@main.command()
@click.argument("query")
@click.option("--limit", "-n", type=click.IntRange(1, 200), default=None,
              help="How many results (default from configuration: 10).")
@click.option("--mode", type=click.Choice(MODES), default=None,
              help="Retrieval mode (default from configuration: hybrid).")
@click.option("--channel", multiple=True, help="Only these channels (repeatable).")
@click.option("--kind", multiple=True, help="Only these kinds (repeatable).")
@click.option("--scope", multiple=True, help="Only these scopes (repeatable).")
@click.option("--status", "statuses", multiple=True, help="Only these statuses (repeatable).")
@click.option("--tag", multiple=True, help="Only memories with every one of these tags.")
@click.option("--prefix", default=None, help="Only names starting with this (a folder: 'ci/').")
@click.option("--content", is_flag=True, help="Include each memory's full text (JSON).")
@click.option("--origin", default=None,
              help="Only 'canonical', or only one external backend by name (fails with exit 3 if it is down).")
@click.option("--source", "source_alias", default=None, hidden=True)
@FORMAT
@pass_state
def search(
    state: State,
    query: str,
    limit: int | None,
    mode: str | None,
    channel: tuple[str, ...],
    kind: tuple[str, ...],
    scope: tuple[str, ...],
    statuses: tuple[str, ...],
    tag: tuple[str, ...],
    prefix: str | None,
    content: bool,
    origin: str | None,
    source_alias: str | None,
    fmt: str,
) -> None:
    """Find the memories that best match QUERY."""
    from memrouter.search_command import SearchRequest, run_search

    request = SearchRequest(
        query, root=state.root, index_dir=state.index_dir, limit=limit, mode=mode, channels=channel,
        kinds=kind, scopes=scope, statuses=statuses, tags=tag, prefix=prefix, content=content,
        origin=origin or source_alias, fmt=fmt,
    )  # fmt: skip
    code = run_search(request)
    if code:
        sys.exit(code)


@main.command()
@click.argument("name")
@FORMAT
@pass_state
@handle_errors
def get(state: State, name: str, fmt: str) -> None:
    """Print the memory NAME (the file as stored; JSON adds its fields)."""
    memory = state.router().get(name)
    if fmt == "json":
        emit(fmt, memory.to_dict(), str)
    else:
        click.echo(memory.text, nl=not memory.text.endswith("\n"))


@main.command(name="list")
@click.argument("prefix", required=False)
@click.option("--channel", multiple=True, help="Only these channels (repeatable).")
@click.option("--kind", multiple=True, help="Only these kinds (repeatable).")
@click.option("--scope", multiple=True, help="Only these scopes (repeatable).")
@click.option("--tag", multiple=True, help="Only memories with every one of these tags.")
@click.option("--status", "statuses", multiple=True, help=f"Only these statuses ({', '.join(STATUSES)}; repeatable).")
@FORMAT
@pass_state
@handle_errors
def list_(
    state: State, prefix: str | None, channel: tuple[str, ...], kind: tuple[str, ...], scope: tuple[str, ...],
    tag: tuple[str, ...], statuses: tuple[str, ...], fmt: str,
) -> None:  # fmt: skip
    """List memories (optionally those whose name starts with PREFIX)."""
    items = state.router().list(prefix, channels=channel, kinds=kind, scopes=scope, tags=tag, statuses=statuses)

    def text() -> str:
        if not items:
            return "no memories"
        return "\n".join(f"{item.name}  {item.title}" for item in items)

    emit(fmt, {"count": len(items), "memories": [item.to_dict() for item in items]}, text)


@main.command()
@click.argument("name", required=False)
@click.option("--file", "file_", type=click.File("rb"), help="Read the content from a UTF-8 file ('-' for stdin).")
@click.option("--content", "text_", default=None, help="The content itself.")
@click.option("--title", default=None)
@click.option("--tag", multiple=True, help="A tag (repeatable).")
@click.option("--kind", default=None, help=f"{', '.join(KINDS[:6])}, ... (or your own)")
@click.option("--channel", default=None, type=click.Choice(CHANNELS))
@click.option("--scope", default=None, help="project, global or user:<id>.")
@click.option("--source", default=None, help="Where it came from: ADR-005, a commit, a URL.")
@click.option("--author", default=None, help="Who wrote it: user:alice, agent:x.")
@click.option("--confidence", type=click.FloatRange(0, 1), default=None)
@click.option("--expected-hash", default=None, help="Refuse to overwrite unless the stored file has this hash ('' = must not exist).")
@FORMAT
@pass_state
@handle_errors
def save(
    state: State, name: str | None, file_: Any, text_: str | None, title: str | None, tag: tuple[str, ...],
    kind: str | None, channel: str | None, scope: str | None, source: str | None, author: str | None,
    confidence: float | None, expected_hash: str | None, fmt: str,
) -> None:  # fmt: skip
    """Write a memory (atomically). NAME defaults to one made from the title."""
    from memrouter.errors import InvalidInput

    if (file_ is None) == (text_ is None):
        raise InvalidInput("give the content with exactly one of --file or --content")
    content = _read_text(file_) if file_ is not None else text_
    memory = state.router().save(
        content, name, title=title, tags=tag or None, kind=kind, channel=channel, scope=scope,
        source=source, author=author, confidence=confidence, expected_hash=expected_hash,
    )  # fmt: skip
    emit(fmt, memory.to_dict(content=False), lambda: f"saved {memory.name} ({memory.hash[:12]})")


def _read_text(stream: Any) -> str:
    """A content file's text; ``InvalidInput`` when it is not UTF-8."""
    from memrouter.errors import InvalidInput

    raw = stream.read()
    try:
        return str(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the content file is not UTF-8 text (byte {exc.start})") from exc


@main.command()
@click.argument("name")
@click.option("--reason", default=None, help="Why (recorded, and passed on to synced services).")
@click.option("--expected-hash", default=None, help="Refuse unless the stored file has this hash.")
@FORMAT
@pass_state
@handle_errors
def delete(state: State, name: str, reason: str | None, expected_hash: str | None, fmt: str) -> None:
    """Delete the memory NAME (its file and its index rows)."""
    memory = state.router().delete(name, reason, expected_hash=expected_hash)
    emit(fmt, {"deleted": memory.name, "hash": memory.hash}, lambda: f"deleted {memory.name}")


@main.command()
@FORMAT
@pass_state
@handle_errors
def status(state: State, fmt: str) -> None:
    """Show the index, counts, problems and configuration."""
    data = state.router().status()

    def text() -> str:
        mem = data["memories"]
        lines = [
            f"root:     {data['root']}{' (read-only)' if data['readonly'] else ''}",
            f"index:    {data['index']['path']} ({data['index']['size_bytes'] // 1024} KiB)",
            f"memories: {mem['total']} ("
            + ", ".join(f"{k} {v}" for k, v in mem["by_channel"].items() if v)
            + ")",
        ]
        if data["problems"]:
            lines.append(f"problems: {len(data['problems'])}")
            lines += [f"  {name}: {problem}" for name, problem in data["problems"].items()]
        lines += [f"warning:  {w}" for w in data["warnings"]]
        for b in data.get("backends", []):
            state_ = "up" if b["available"] else "down"
            age = "" if b.get("age_s") is None else f", checked {b['age_s']:.1f} s ago"
            error = f", last error: {b['last_error']}" if b.get("last_error") else ""
            lines.append(f"backend:  {b['name']} {state_} ({b['endpoint']}{age}{error}; {b['synced']} synced)")
        return "\n".join(lines)

    emit(fmt, data, text)


@main.command()
@click.option("--http", "use_http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind with --http.")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True, help="Port with --http.")
@click.option("--token", envvar="MEMROUTER_TOKEN", default=None,
              help="Bearer token HTTP clients must send (required off loopback; env MEMROUTER_TOKEN).")
@click.option("--global-root", envvar="MEMROUTER_GLOBAL_ROOT", type=click.Path(file_okay=False), default=None,
              help="Folder for Serena-style global/<name> memories (default: refused).")
@pass_state
@handle_errors
def serve(
    state: State, use_http: bool, host: str, port: int, token: str | None, global_root: str | None
) -> None:  # fmt: skip
    """Run the MCP server over stdio (or streamable HTTP with --http)."""
    from memrouter.mcp_server import serve as run_server

    def announce() -> None:
        click.echo(f"memrouter: serving MCP at http://{host}:{port}/mcp", err=True)

    run_server(
        state.root, state.index_dir, http=use_http, host=host, port=port, token=token, global_root=global_root,
        on_ready=announce,
    )  # fmt: skip


@main.command()
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


@main.command(name="eval")
@click.argument("dataset", type=click.Path(dir_okay=False, path_type=str))
@click.option("--mode", type=click.Choice(MODES), default=None)
@click.option("--k", "ks", default="1,5,10", show_default=True, help="Cut-offs for recall@k.")
@click.option("--details", is_flag=True, help="Also list the queries that missed (text format).")
@FORMAT
@pass_state
@handle_errors
def eval_(state: State, dataset: str, mode: str | None, ks: str, details: bool, fmt: str) -> None:
    """Score retrieval on a golden-query file: recall@k, MRR@10, nDCG@10, latency."""
    from memrouter.evaluation import evaluate, load_golden

    cutoffs = _parse_ks(ks)
    queries = load_golden(dataset)
    router = state.router()
    mode = router.effective_mode(mode)  # hybrid is lexical until the index holds vectors
    depth = max(10, *cutoffs)
    router.search(queries[0].query, limit=depth, mode=mode)  # warm caches and models first
    report = evaluate(lambda q: [h.name for h in router.search(q, limit=depth, mode=mode)], queries, cutoffs)
    data: dict[str, Any] = {"dataset": dataset, "mode": mode} | report.to_dict()

    def text() -> str:
        header = [f"recall@{k}" for k in cutoffs] + ["mrr@10", "ndcg@10"]
        lines = [f"{dataset}  mode={mode}", f"{'':<14}" + "".join(f"{h:>11}" for h in header) + f"{'queries':>9}"]
        for label, row in [("all", data["overall"]), *data["by_kind"].items()]:
            lines.append(f"{label:<14}" + "".join(f"{row[h]:>11.3f}" for h in header) + f"{row['queries']:>9}")
        lat = data["latency_ms"]
        lines.append(f"latency ms: p50 {lat['p50']}  p95 {lat['p95']}")
        if details:
            for row in data["queries"]:
                if row["missing"]:
                    lines.append(f"  {row['id']} missed {', '.join(row['missing'])}  (top: {', '.join(row['top'][:3])})")
        return "\n".join(lines)

    emit(fmt, data, text)


@main.command()
@click.option("--all", "scope", flag_value="all", default=True, help="Every memory and mapping (default).")
@click.option("--staged", "scope", flag_value="staged", help="Only the memory changes staged in git.")
@click.option("--from-queue", "scope", flag_value="queue", help="Drain the queue the pre-commit hook filled.")
@click.option("--dry-run", is_flag=True, help="Say what would be sent; change nothing.")
@click.option("--force", is_flag=True, help="Re-send memories whose hash did not change.")
@click.option("--backend", default=None, help="Only this backend (default: every configured one).")
@FORMAT
@pass_state
@handle_errors
def sync(state: State, scope: str, dry_run: bool, force: bool, backend: str | None, fmt: str) -> None:
    """Sync the memories one way to the external backends, by content hash."""
    from memrouter.errors import BackendError, BackendUnavailable

    reports = state.router().sync(backend=backend, changes=scope, dry_run=dry_run, force=force)
    data = {"changes": scope, "dry_run": dry_run, "backends": [r.to_dict() for r in reports]}

    def text() -> str:
        lines = []
        for r in reports:
            verb = "would sync" if dry_run else "synced"
            lines.append(
                f"{r.backend}: {verb} {len(r.created)} created, {len(r.updated)} updated, {r.skipped} unchanged, "
                f"{len(r.obsoleted)} obsoleted, {len(r.renamed)} renamed ({r.duration_ms:.0f} ms)"
            )
            lines += [f"  failed: {name}: {why}" for name, why in sorted(r.failed.items())]
        return "\n".join(lines)

    emit(fmt, data, text)
    errors = [r for r in reports if r.error]
    if errors:
        raise BackendUnavailable("; ".join(str(r.error) for r in errors))
    if any(r.failed for r in reports):
        raise BackendError(f"{sum(len(r.failed) for r in reports)} memory(ies) could not be synced")


@main.command()
@click.option("--backend", default=None, help="Only this backend (default: every configured one).")
@click.option("--remote", "check_remote", is_flag=True,
              help="Also fetch every mapped remote memory (one call each; needs the service).")
@FORMAT
@pass_state
@handle_errors
def validate(state: State, backend: str | None, check_remote: bool, fmt: str) -> None:
    """Report how fresh the backends' copies are: in_sync, stale, missing, orphaned."""
    reports = state.router().validate(backend=backend, check_remote=check_remote)
    data: Any = reports[0] if len(reports) == 1 else {"backends": reports}

    def text() -> str:
        lines = []
        for r in reports:
            lines.append(
                f"{r['backend']}: {r['total']} memories: {r['in_sync']} in sync, {r['stale']} stale, "
                f"{r['missing']} missing, {r['orphaned']} orphaned ({r['duration_ms']} ms)"
            )
            lines += [f"  {d['state']}: {d['name']} ({d['reason']})" for d in r["details"][:50]]
            if len(r["details"]) > 50:
                lines.append(f"  ... {len(r['details']) - 50} more (use --format json)")
        return "\n".join(lines)

    emit(fmt, data, text)


@main.command()
@click.argument("action", type=click.Choice(["install", "uninstall"]))
@FORMAT
@pass_state
@handle_errors
def hook(state: State, action: str, fmt: str) -> None:
    """Install or remove the git pre-commit hook that queues memory changes for sync."""
    from pathlib import Path

    from memrouter.config import Config
    from memrouter.sync.hook import install_hook, uninstall_hook
    from memrouter.sync.queue import QUEUE_FILE

    config = Config.load(root=state.root, index_dir=state.index_dir)
    if action == "install":
        result = install_hook(Path(config.root), Path(config.index_dir) / QUEUE_FILE)
    else:
        result = uninstall_hook(Path(config.root))
    emit(fmt, result.to_dict(), lambda: f"{result.action}: {result.hook}")


@main.command(name="embed-serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", type=click.IntRange(1, 65535), default=8090, show_default=True)
@click.option("--token", envvar="MEMROUTER_TOKEN", default=None,
              help="Bearer token clients must send (required off loopback; env MEMROUTER_TOKEN).")
@click.option("--embedder", "embedder_name", default="minilm", show_default=True, help="Registered embedder name.")
@click.option("--dimension", type=click.IntRange(1, 65536), default=None,
              help="Vector size, for embedders that take one (hash).")
@handle_errors
def embed_serve(host: str, port: int, token: str | None, embedder_name: str, dimension: int | None) -> None:
    """Serve an OpenAI-compatible POST /v1/embeddings from the offline embedder."""
    from memrouter.embed_server import serve_embeddings

    options = {} if dimension is None else {"dimension": dimension}

    def announce() -> None:
        click.echo(f"memrouter: serving embeddings at http://{host}:{port}/v1/embeddings", err=True)

    serve_embeddings(
        host, port, token=token, embedder_name=embedder_name, embedder_options=options, on_ready=announce
    )


__all__ = ["main"]
