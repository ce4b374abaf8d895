"""Commands over the memories: index, search, get, list, save, delete, status."""

from __future__ import annotations

import sys
import time
from typing import Any

import click

from memrouter.cli.common import AGENT, FORMAT, State, click_options, emit, handle_errors, pass_state
from memrouter.cli.search_options import SEARCH_OPTIONS
from memrouter.core.model import CHANNELS, KINDS, STATUSES


@click.command()
@click.option("--full", is_flag=True, help="Re-read every file, not only those whose stat changed.")
@click.option("--lexical-only", is_flag=True, help="Skip embeddings (no model is loaded).")
@click.option("--reembed", is_flag=True, help="Drop vectors made by another embedding model and embed again.")
@click.option(
    "--database", metavar="URL", default=None,
    help="Also build or refresh this project's rows in a PostgreSQL database (postgresql://...).",
)  # fmt: skip
@FORMAT
@pass_state
@handle_errors
def index(state: State, full: bool, lexical_only: bool, reembed: bool, database: str | None, fmt: str) -> None:
    """Build or refresh the index (full text and embeddings) from the memory files."""
    router = state.router()
    started = time.perf_counter()
    show = sys.stderr.isatty() and fmt == "text"
    with _progress_bar("reading", show) as read_progress, _progress_bar("embedding", show) as embed_progress:
        report = router.refresh(
            full=full, progress=read_progress, embed=not lexical_only, embed_progress=embed_progress, reembed=reembed
        )
    status = router.status()
    data = report.to_dict() | {
        "files_ms": round(report.took_ms, 1),
        "took_ms": round((time.perf_counter() - started) * 1000, 1),
    }
    data["total"] = status["memories"]["total"]
    data["dense"] = status["dense"]
    if database is not None or router.config.index.url:
        data["database"] = router.publish(database)

    def text() -> str:
        spent = f"files {data['files_ms']} ms"
        if report.embedded or report.embed_ms >= 1:
            spent += f", embedding {report.embedded} in {round(report.embed_ms)} ms"
        lines = [
            f"{data['total']} memories indexed: {data['added']} added, {data['updated']} updated, "
            f"{data['removed']} removed, {data['unchanged']} unchanged ({data['took_ms']} ms: {spent})"
        ]
        lines += [f"  problem: {name}: {problem}" for name, problem in report.problems.items()]
        dense = data["dense"]
        if dense["chunks"]:
            lines.append(f"{dense['embedded_memories']} memories embedded ({dense['chunks']} chunks, {dense['model']})")
        if "database" in data:
            pushed = data["database"]
            lines.append(
                f"database, project {pushed['project']!r}: {pushed['added']} added, {pushed['updated']} updated, "
                f"{pushed['removed']} removed, {pushed['unchanged']} unchanged"
            )
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


@click.command()
@click.argument("query")
@click_options(SEARCH_OPTIONS)
@pass_state
def search(state: State, /, query: str, source: str | None, **options: Any) -> None:
    """Find the memories that best match QUERY.

    Without --channel the long-term and sprint channels are searched, and
    only what is in effect now.
    """
    from memrouter.cli.fast_search import SearchRequest, run_search

    options["origin"] = options["origin"] or source  # --source: the earlier spelling of --origin
    request = SearchRequest(query, root=state.root, index_dir=state.index_dir, **options)
    code = run_search(request)
    if code:
        sys.exit(code)


@click.command()
@click.argument("name")
@click.option("--as-of", default=None, help="As committed at this date (2026-01-05) or commit.")
@FORMAT
@pass_state
@handle_errors
def get(state: State, name: str, as_of: str | None, fmt: str) -> None:
    """Print the memory NAME (the file as stored; JSON adds its fields)."""
    memory = state.router().get(name, as_of=as_of)
    if fmt == "json":
        emit(fmt, memory.to_dict(), str)
    else:
        click.echo(memory.text, nl=not memory.text.endswith("\n"))


@click.command(name="list")
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


@click.command()
@click.argument("name", required=False)
@click.option("--file", "file_", type=click.File("rb"), help="Read the content from a UTF-8 file ('-' for stdin).")
@click.option("--content", "text_", default=None, help="The content itself.")
@click.option("--title", default=None)
@click.option("--tag", multiple=True, help="A tag (repeatable).")
@click.option("--kind", default=None, help=f"{', '.join(KINDS[:6])}, ... (or your own)")
@click.option("--channel", default=None, type=click.Choice(CHANNELS))
@click.option("--scope", default=None, help="project, global or user:<id>.")
@click.option("--source", default=None, help="Where it came from: ADR-005, a commit, a URL.")
@click.option("--author", default=None, help="Who wrote it: user:alice, agent:x (default: you, or --agent).")
@AGENT
@click.option("--confidence", type=click.FloatRange(0, 1), default=None)
@click.option(
    "--expected-hash",
    default=None,
    help="Refuse to overwrite unless the stored file has this hash ('' = must not exist).",
)
@FORMAT
@pass_state
@handle_errors
def save(
    state: State, name: str | None, file_: Any, text_: str | None, title: str | None, tag: tuple[str, ...],
    kind: str | None, channel: str | None, scope: str | None, source: str | None, author: str | None,
    agent: str | None, confidence: float | None, expected_hash: str | None, fmt: str,
) -> None:  # fmt: skip
    """Write a memory (atomically), stamped with its author and creation time. NAME defaults to one from the title."""
    from memrouter.core.errors import InvalidInput
    from memrouter.ops.audit import acting_as
    from memrouter.ops.provenance import save_stamped

    if (file_ is None) == (text_ is None):
        raise InvalidInput("give the content with exactly one of --file or --content")
    content = _read_text(file_) if file_ is not None else str(text_)
    router = state.router()
    actor = state.actor(agent)
    with acting_as(actor):
        memory = save_stamped(
            router.workspace, content, name, actor=actor, title=title, tags=tag or None, kind=kind, channel=channel,
            scope=scope, source=source, author=author, confidence=confidence, expected_hash=expected_hash,
        )  # fmt: skip
    emit(fmt, memory.to_dict(content=False), lambda: f"saved {memory.name} ({memory.hash[:12]})")


def _read_text(stream: Any) -> str:
    """A content file's text; ``InvalidInput`` when it is not UTF-8."""
    from memrouter.core.errors import InvalidInput

    raw = stream.read()
    try:
        return str(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"the content file is not UTF-8 text (byte {exc.start})") from exc


@click.command()
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


@click.command()
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
            f"index:    {data['index']['path']} ({data['index']['size_bytes'] // 1024} KiB"
            + ("" if data["index"]["mode"] == "file" else f", {data['index']['mode']}")
            + (f", {data['index']['busy_waits']} busy waits" if data["index"]["busy_waits"] else "")
            + ")",
            f"memories: {mem['total']}" + (f" ({by_channel})" if (by_channel := _counts(mem["by_channel"])) else ""),
        ]
        current = data["sprint"]["current"]
        if current:
            lines.append(
                f"sprint:   {current['id']} ({current['start']} to {current['end']}, {current['memories']} memories)"
            )
        if data["problems"]:
            lines.append(f"problems: {len(data['problems'])}")
            lines += [f"  {name}: {problem}" for name, problem in data["problems"].items()]
        database = data.get("database")
        if database:
            found = f"{database['memories']} memories" if database["available"] else "down, searching the local index"
            lines.append(f"database: {database['url']} project {database['project']!r} ({found})")
        endpoint = data["dense"].get("endpoint")
        if endpoint:
            state_ = "up" if endpoint["ok"] else "down"
            lines.append(f"embed:    {endpoint['url']} model {endpoint['model']!r} {state_}")
        rerank = data.get("rerank_endpoint")
        if rerank:
            lines.append(f"rerank:   {rerank['url']} {'up' if rerank['ok'] else 'down'}")
        lines += [f"warning:  {w}" for w in data["warnings"]]
        for b in data.get("backends", []):
            state_ = "up" if b["available"] else "down"
            age = "" if b.get("age_s") is None else f", checked {b['age_s']:.1f} s ago"
            error = f", last error: {b['last_error']}" if b.get("last_error") else ""
            lines.append(f"backend:  {b['name']} {state_} ({b['endpoint']}{age}{error}; {b['synced']} synced)")
        return "\n".join(lines)

    emit(fmt, data, text)


def _counts(counts: dict[str, int]) -> str:
    """``long_term 3, sprint 1``: the non-zero counts."""
    return ", ".join(f"{key} {value}" for key, value in counts.items() if value)


@click.command()
@click.argument("name")
@click.option("--limit", "-n", type=click.IntRange(1, 200), default=20, show_default=True)
@FORMAT
@pass_state
@handle_errors
def history(state: State, name: str, limit: int, fmt: str) -> None:
    """List the committed versions of memory NAME (renames followed), newest first."""
    found = state.router().history(name, limit)

    def text() -> str:
        if not found:
            return f"{name}: no committed version"
        return "\n".join(f"{v.short}  {v.date[:10]}  {v.change}  {v.author}  {v.subject}  ({v.path})" for v in found)

    emit(fmt, {"name": name, "versions": [v.to_dict() for v in found]}, text)
