"""The review queue and the UI's writes: approve and reject, by the person running the UI.

A write is a POST carrying the app's CSRF token and the ``expected_hash`` of
the memory as the page showed it; it goes through ``Router.approve`` /
``Router.reject`` (the same guard, lock, conflict check and audit line as
``memrouter review``), ``Router.save`` (an edit: the write guard, the
memory's lock, ``expected_hash``), a new memory (stamped with its author as
``memrouter save`` does, never over another) or ``Router.promote``, acting as
``user:<git user.name>``. An edit or a new memory is checked first: its
button ``check`` shows the write guard's verdict (``Router.check``) and writes
nothing; a save the guard refuses comes back with the verdict and the text,
each line holding a secret replaced by a note (a page never shows a secret).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memrouter.core.errors import InvalidInput, NotFound, Refused
from memrouter.core.model import KINDS
from memrouter.guard.secrets import find_secrets
from memrouter.ops.audit import acting_as
from memrouter.ops.provenance import save_stamped
from memrouter.ui.security import same_secret

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.ui.context import UiContext

__all__ = ["approve", "edit", "edit_form", "new", "new_form", "promote", "read_form", "reject", "review"]

MAX_FORM_BYTES = 4 * 1024 * 1024  # a memory's text may be 1,000,000 characters, percent-encoded
_FIELDS = ("csrf", "name", "expected_hash", "reason", "content", "action", "title", "kind", "tags")
CHECK, SAVE = "check", "save"  # a write form's two buttons: the guard's verdict (nothing written), then the write


async def read_form(ui: UiContext, request: Request) -> dict[str, str]:
    """The POSTed form's fields; 403 without the CSRF token, 400 when malformed."""
    from starlette.exceptions import HTTPException

    length = request.headers.get("content-length") or "0"
    if not length.isdigit():
        raise HTTPException(400, "the Content-Length header is not a number")
    if int(length) > MAX_FORM_BYTES:
        raise HTTPException(413, "the form is too large")
    kind = request.headers.get("content-type", "").partition(";")[0].strip()
    if kind != "application/x-www-form-urlencoded":
        raise HTTPException(400, "send the form as application/x-www-form-urlencoded")
    form = await request.form(max_files=0, max_fields=len(_FIELDS))
    values: dict[str, str] = {}
    for key, value in form.multi_items():
        if key not in _FIELDS or key in values or not isinstance(value, str):
            raise HTTPException(400, f"unexpected form field {key!r}")
        values[key] = value
    if not same_secret(values.get("csrf"), ui.csrf):
        raise HTTPException(403, "this form did not come from this UI (missing or wrong CSRF token); reload the page")
    return values


def _reasons(ui: UiContext, memory: Any) -> list[str]:
    """The guard's reasons for holding ``memory``, checked again now."""
    verdict = ui.router.check(memory.text, memory.name, actor=memory.author)
    return [str(reason) for reason in verdict.reasons]


def review(ui: UiContext, request: Request) -> Response:
    """The memories pending review, each with its text, author and the guard's reasons."""
    items = []
    for summary in ui.router.pending():
        try:
            memory = ui.router.get(summary.name)
        except NotFound:
            continue  # rejected or changed since the index was read
        items.append({"memory": memory, "reasons": _reasons(ui, memory)})
    return ui.page(request, "review.html", items=items, title="Review queue")


def _act(ui: UiContext, request: Request, form: dict[str, str], *, approving: bool) -> Response:
    from starlette.responses import RedirectResponse

    name, actor = _named(ui, form)
    expected = form.get("expected_hash") or None
    reason = form.get("reason") or None
    with acting_as(actor):
        if approving:
            ui.router.approve(name, actor=actor, reason=reason, expected_hash=expected)
        else:
            ui.router.reject(name, actor=actor, reason=reason or "", expected_hash=expected)
    return RedirectResponse(ui.base + "/review", status_code=303)


def _named(ui: UiContext, form: dict[str, str]) -> tuple[str, str]:
    """The memory a write form names, and who writes it (the UI must know)."""
    name = form.get("name", "").strip()
    if not name:
        raise InvalidInput("say which memory: the form needs a name")
    if ui.reviewer is None:
        raise InvalidInput("the UI does not know who you are: set `git config user.name NAME` and restart it")
    return name, ui.reviewer


def approve(ui: UiContext, request: Request, form: dict[str, str]) -> Response:
    """Approve one pending memory (303 back to the queue)."""
    return _act(ui, request, form, approving=True)


def reject(ui: UiContext, request: Request, form: dict[str, str]) -> Response:
    """Reject (delete) one pending memory; a reason is required (303 back to the queue)."""
    return _act(ui, request, form, approving=False)


def promote(ui: UiContext, request: Request, form: dict[str, str]) -> Response:
    """Promote a sprint memory to long-term through ``Router.promote``, at the hash the page showed
    (a memory changed since is a 409, nothing changed; 303 back to the timeline)."""
    from starlette.responses import RedirectResponse

    name, actor = _named(ui, form)
    with acting_as(actor):
        ui.router.promote(
            name, reason=form.get("reason") or f"promoted by {actor} in the web UI",
            expected_hash=form.get("expected_hash") or None,
        )  # fmt: skip
    return RedirectResponse(ui.base + "/timeline", status_code=303)


def archive(ui: UiContext, request: Request, form: dict[str, str]) -> Response:
    """Archive a sprint memory through ``Router.archive``, at the hash the page showed (303 back to the timeline)."""
    from starlette.responses import RedirectResponse

    name, actor = _named(ui, form)
    with acting_as(actor):
        ui.router.archive(name, expected_hash=form.get("expected_hash") or None)
    return RedirectResponse(ui.base + "/timeline", status_code=303)


def edit_form(ui: UiContext, request: Request) -> Response:
    """A memory's whole text (front matter included) in a form, with the hash it was read at."""
    memory = ui.router.get(request.path_params["name"])
    return _edit_page(ui, request, memory.name, memory.text, memory.hash, None)


def _edit_page(
    ui: UiContext, request: Request, name: str, content: str, expected: str, verdict: Any, status: int = 200
) -> Response:
    return ui.page(
        request, "edit.html", status, name=name, content=content, expected=expected, verdict=verdict,
        title=f"Edit {name}",
    )  # fmt: skip


def _action(form: dict[str, str]) -> str:
    action = form.get("action") or SAVE
    if action not in (CHECK, SAVE):
        raise InvalidInput(f"unknown action {action!r}: check or save")
    return action


def _text(form: dict[str, str]) -> str:
    return form.get("content", "").replace("\r\n", "\n")  # browsers send CRLF line ends from a textarea


def _without_secrets(content: str, verdict: Any) -> str:
    """``content`` to show again in a refused form: each line holding a secret replaced by a note saying so (a
    page never repeats a secret); no text at all when a secret cannot be placed on a line."""
    lines = content.split("\n")
    for reason in verdict.reasons:
        if reason.category != "secret":
            continue
        if not 0 < reason.line <= len(lines):
            return ""
        lines[reason.line - 1] = f"[this line held a secret ({reason.kind}): keep it out of memories]"
    kept = "\n".join(lines)
    return "" if find_secrets(kept) else kept


def edit(ui: UiContext, request: Request, form: dict[str, str]) -> Response:
    """Check an edited memory (the guard's verdict; nothing written) or save it through ``Router.save`` with
    ``expected_hash`` (303 to its page; refused: the form again with the verdict, 400)."""
    name, actor = _named(ui, form)
    expected = form.get("expected_hash")
    if not expected:
        raise InvalidInput("an edit needs the hash of the text it started from (expected_hash)")
    content = _text(form)
    if _action(form) == CHECK:
        verdict = ui.router.check(content, name, actor=actor)
        return _edit_page(ui, request, name, _without_secrets(content, verdict), expected, verdict)
    try:
        with acting_as(actor):
            saved = ui.router.save(content, name, expected_hash=expected, actor=actor)
    except Refused as exc:  # the text typed comes back with the reasons, never lost
        return _edit_page(ui, request, name, _without_secrets(content, exc.verdict), expected, exc.verdict, 400)
    return _to_memory(ui, saved.name)


def _to_memory(ui: UiContext, name: str) -> Response:
    from urllib.parse import quote

    from starlette.responses import RedirectResponse

    return RedirectResponse(f"{ui.base}/memory/{quote(name, safe='/')}", status_code=303)


def new_form(ui: UiContext, request: Request) -> Response:
    """An empty memory to write: its text, and optionally a name, title, kind and tags."""
    return _new_page(ui, request, {}, None)


def _new_page(ui: UiContext, request: Request, form: dict[str, str], verdict: Any, status: int = 200) -> Response:
    return ui.page(request, "new.html", status, form=form, verdict=verdict, kinds=KINDS, title="New memory")


def new(ui: UiContext, request: Request, form: dict[str, str]) -> Response:
    """Check a new memory (the guard's verdict; nothing written) or save it as ``memrouter save`` does (stamped
    with its author and creation time) with ``expected_hash=""``, so never over another memory (409)."""
    if ui.reviewer is None:
        raise InvalidInput("the UI does not know who you are: set `git config user.name NAME` and restart it")
    actor = ui.reviewer
    content = _text(form)
    if not content.strip():
        raise InvalidInput("write the memory's text first")
    name = form.get("name", "").strip() or None
    if _action(form) == CHECK:
        verdict = ui.router.check(content, name, actor=actor)
        return _new_page(ui, request, {**form, "content": _without_secrets(content, verdict)}, verdict)
    tags = [tag.strip() for tag in form.get("tags", "").split(",") if tag.strip()]
    try:
        with acting_as(actor):
            saved = save_stamped(
                ui.router.workspace, content, name, actor=actor, title=form.get("title", "").strip() or None,
                kind=form.get("kind", "").strip() or None, tags=tags or None, expected_hash="",
            )  # fmt: skip
    except Refused as exc:  # the text typed comes back with the reasons, never lost
        return _new_page(ui, request, {**form, "content": _without_secrets(content, exc.verdict)}, exc.verdict, 400)
    return _to_memory(ui, saved.name)
