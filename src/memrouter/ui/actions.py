"""The review queue and the UI's writes: approve and reject, by the person running the UI.

A write is a POST carrying the app's CSRF token and the ``expected_hash`` of
the memory as the page showed it; it goes through ``Router.approve`` /
``Router.reject`` (the same guard, lock, conflict check and audit line as
``memrouter review``), ``Router.save`` (an edit: the write guard, the
memory's lock, ``expected_hash``) or ``Router.promote``, acting as
``user:<git user.name>``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memrouter.core.errors import InvalidInput, NotFound
from memrouter.ops.audit import acting_as
from memrouter.ui.security import same_secret

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from memrouter.ui.context import UiContext

__all__ = ["approve", "edit", "edit_form", "promote", "read_form", "reject", "review"]

MAX_FORM_BYTES = 4 * 1024 * 1024  # a memory's text may be 1,000,000 characters, percent-encoded
_FIELDS = ("csrf", "name", "expected_hash", "reason", "content")


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
    return ui.page(request, "edit.html", memory=memory, title=f"Edit {memory.name}")


def edit(ui: UiContext, request: Request, form: dict[str, str]) -> Response:
    """Save an edited memory through ``Router.save`` with ``expected_hash`` (303 to its page)."""
    from urllib.parse import quote

    from starlette.responses import RedirectResponse

    name, actor = _named(ui, form)
    expected = form.get("expected_hash")
    if not expected:
        raise InvalidInput("an edit needs the hash of the text it started from (expected_hash)")
    content = form.get("content", "").replace("\r\n", "\n")  # browsers send CRLF line ends from a textarea
    with acting_as(actor):
        saved = ui.router.save(content, name, expected_hash=expected, actor=actor)
    return RedirectResponse(f"{ui.base}/memory/{quote(saved.name, safe='/')}", status_code=303)
