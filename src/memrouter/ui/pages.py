"""The reading pages: search (with time travel), a memory, the graph around a memory or entity."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrouter.core.errors import InvalidInput, MemoryRouterError, NotFound
from memrouter.core.model import CHANNELS, MODES, STATUSES, Memory, Provenance, Relation
from memrouter.ops.branches import diverged
from memrouter.ops.verify import verify
from memrouter.repo.git import GitError
from memrouter.ui.graphview import MAX_OPEN, Drawing, build
from memrouter.ui.params import field, fields, whole_number
from memrouter.ui.render import diff_lines, utc

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.ui.context import UiContext

__all__ = ["graph", "graph_drawing", "landing", "memory", "relative_path", "search"]

MAX_VERSIONS_SHOWN = 10
RECENT_SHOWN = 10
PENDING_SHOWN = 5
STALE_SHOWN = 10
_FIELDS = (
    "channel", "kind", "scope", "status", "tags", "source", "author", "created", "updated", "confidence",
    "verified_by", "valid_from", "valid_until", "supersedes", "superseded_by", "expires", "anchors",
)  # fmt: skip
_PROVENANCE = ("author", "source", "created", "updated", "confidence", "verified_by")


def search(ui: UiContext, request: Request) -> Response:
    """The search form and, given ``q``, the hits with snippet and why."""
    form = {
        "q": field(request, "q"),
        "mode": field(request, "mode", MODES) or ui.router.config.search.mode,  # as the agents search
        "channel": field(request, "channel", CHANNELS),
        "status": field(request, "status", STATUSES),
        "kind": field(request, "kind"),
        "tag": field(request, "tag"),
        "prefix": field(request, "prefix"),
        "as_of": field(request, "as_of"),
    }
    limit = whole_number(request, "limit", 20, 1, 100)
    hits: list[Any] = []
    if form["q"] is not None:
        hits = ui.router.search(
            form["q"], limit, form["mode"], channels=form["channel"], statuses=form["status"], kinds=form["kind"],
            tags=form["tag"], prefix=form["prefix"], as_of=form["as_of"],
        )  # fmt: skip
    return ui.page(
        request, "search.html", form=form, hits=hits, modes=MODES, channels=CHANNELS, statuses=STATUSES,
        searched=form["q"] is not None, commits=ui.git.slider_commits(), title="Search",
        landing=landing(ui) if form["q"] is None else None,
    )  # fmt: skip


def landing(ui: UiContext) -> dict[str, Any]:
    """What the page without a query shows under the search form: the memories changed last, the channels
    with their counts, what waits for review, the memories whose anchored code changed (stale or broken)."""
    router = ui.router
    listed = {summary.name: summary for summary in router.list()}  # indexed, pending review left out
    changed = sorted((stat for stat in router.store.scan() if stat.name in listed), key=lambda stat: -stat.mtime_ns)
    recent = [(listed[stat.name], utc(stat.mtime_ns / 1e9)[:10]) for stat in changed[:RECENT_SHOWN]]
    status = router.status()
    try:
        failing = verify(router.workspace, diff=False).failing
    except MemoryRouterError:
        failing = ()  # not in a git repository: nothing is anchored
    stale = sorted(failing, key=lambda found: (found.status != "broken", found.name))
    return {
        "total": status["memories"]["total"], "by_channel": status["memories"]["by_channel"],
        "warnings": status["warnings"], "recent": recent, "pending": router.pending(), "stale": stale[:STALE_SHOWN],
        "stale_total": len(stale), "pending_shown": PENDING_SHOWN,
    }  # fmt: skip


def relative_path(ui: UiContext, path: str | None) -> str | None:
    """A memory's file as the repository names it: relative to the git work tree (else to the project folder)."""
    if path is None:
        return None
    for base in (ui.git.top, ui.router.config.project_dir):
        if base is not None:
            try:
                return Path(path).resolve().relative_to(Path(base).resolve()).as_posix()
            except ValueError:
                continue
    return path


def _fields(ui: UiContext, memory: Memory, provenance: Provenance | None) -> list[tuple[str, str, str]]:
    """One panel: (field, value, where it came from) for each field that says something. Provenance fields
    are the provenance's (the front matter, else the file's git history, and then they say ``from git``)."""
    values: dict[str, Any] = {name: getattr(memory, name) for name in _FIELDS}
    values["path"] = relative_path(ui, memory.path)
    from_git: tuple[str, ...] = ()
    if provenance is not None:
        values.update({name: getattr(provenance, name) for name in _PROVENANCE})
        from_git = provenance.from_git
    shown: list[tuple[str, str, str]] = []
    for name in ("path", *_FIELDS):
        value = values[name]
        if value in (None, (), ""):
            continue
        text = ", ".join(value) if isinstance(value, tuple) else str(value)
        shown.append((name.replace("_", " "), text, "from git" if name in from_git else ""))
    for key, value in sorted(memory.extra.items()):
        shown.append((key, ", ".join(map(str, value)) if isinstance(value, list) else str(value), ""))
    return shown


def _history(ui: UiContext, name: str) -> list[dict[str, Any]]:
    """The committed versions (newest first), each with its diff from the version before it."""
    try:
        versions = ui.router.history(name, MAX_VERSIONS_SHOWN + 1)
    except (InvalidInput, NotFound, GitError):
        return []  # not in a git repository, or never committed
    texts: list[str] = []
    for version in versions:
        try:
            texts.append(ui.router.get_as_of(name, version.commit)[0].text if version.change != "D" else "")
        except NotFound:
            texts.append("")
    shown = []
    for at, version in enumerate(versions[:MAX_VERSIONS_SHOWN]):
        older = texts[at + 1] if at + 1 < len(texts) else ""
        shown.append({"version": version, "diff": diff_lines(older, texts[at])})
    return shown


def _neighbours(ui: UiContext, name: str, as_of: str | None = None) -> list[Relation]:
    try:
        return ui.router.neighbors(name, as_of=as_of)
    except NotFound:
        return []


def memory(ui: UiContext, request: Request) -> Response:
    """One memory: rendered body, front matter, provenance, history with diffs, neighbours, guard flags."""
    name = request.path_params["name"]
    as_of = field(request, "as_of")
    version = None
    if as_of is not None:
        found, version = ui.router.get_as_of(name, as_of)
    else:
        found = ui.router.get(name)
    flags = found.extra.get("flags")
    anchors, anchors_error = _anchors(ui, found.name) if as_of is None else (None, None)
    provenance = _provenance(ui, found.name) if as_of is None else None
    return ui.page(
        request, "memory.html", memory=found, fields=_fields(ui, found, provenance), as_of=as_of, version=version,
        path=relative_path(ui, found.path), history=_history(ui, found.name), neighbours=_neighbours(ui, found.name),
        sync=ui.router.sync_states(found.name, found.hash) if as_of is None else [],
        flags=[str(f) for f in flags] if isinstance(flags, list) else [], title=found.title or found.name,
        anchors=anchors, anchors_error=anchors_error, diverged=_diverged(ui, found.name) if as_of is None else None,
    )  # fmt: skip


def _diverged(ui: UiContext, name: str) -> Any:
    """The memory's versions when two branches changed it differently (``memrouter branches``), else None."""
    return next((found for found in diverged(ui.router.config) if found.name == name), None)


def _provenance(ui: UiContext, name: str) -> Provenance | None:
    """The memory's provenance; None outside git (its front matter alone is shown then)."""
    try:
        return ui.router.provenance(name)
    except GitError:
        return None


def _anchors(ui: UiContext, name: str) -> tuple[Any, str | None]:
    """The memory's anchors checked against the code now (``memrouter verify``), or why they could not be."""
    try:
        report = verify(ui.router.workspace, [name])
    except MemoryRouterError as exc:
        return None, f"anchors not checked: {exc}"
    return (report.memories[0] if report.memories else None), None


def _drawing(ui: UiContext, request: Request) -> tuple[Any, Drawing | None]:
    """The entity named by ``?name=`` and its drawn neighbourhood with the ``?open=`` nodes opened (None, None: no name)."""
    name = field(request, "name")
    if name is None:
        return None, None
    opened = fields(request, "open", MAX_OPEN)
    entity = ui.router.get_entity(name, include_relations=False)
    return entity, build(entity.name, entity.kind, opened, lambda node: _neighbours(ui, node))


def graph(ui: UiContext, request: Request) -> Response:
    """The graph around a memory or entity, drawn; without a name, edge counts and dangling references."""
    entity, drawing = _drawing(ui, request)
    stats = ui.router.graph_stats() if entity is None else None
    return ui.page(
        request, "graph.html", name=field(request, "name"), entity=entity, drawing=drawing, stats=stats, title="Graph"
    )


def graph_drawing(ui: UiContext, request: Request) -> Response:
    """The drawing alone, as a fragment the graph page swaps in when a node is opened or closed."""
    entity, drawing = _drawing(ui, request)
    if drawing is None:
        raise InvalidInput("say which memory or entity to draw: ?name=")
    return ui.page(request, "graph_drawing.html", entity=entity, drawing=drawing)
