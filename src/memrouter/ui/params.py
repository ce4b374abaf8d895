"""Reading a request's query string strictly: one value per field, bounded, or a clear InvalidInput (400)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memrouter.core.errors import InvalidInput

if TYPE_CHECKING:
    from starlette.requests import Request

__all__ = ["MAX_FIELD", "field", "fields", "whole_number"]

MAX_FIELD = 1000


def field(request: Request, key: str, choices: tuple[str, ...] | None = None) -> str | None:
    """The stripped value of ``key`` (None when absent or blank); InvalidInput when repeated, too long or not a choice."""
    values = request.query_params.getlist(key)
    if len(values) > 1:
        raise InvalidInput(f"give {key!r} once, not {len(values)} times")
    value = values[0].strip() if values else ""
    if not value:
        return None
    _check(key, value)
    if choices is not None and value not in choices:
        raise InvalidInput(f"{key!r} must be one of {', '.join(choices)}, not {value!r}")
    return value


def fields(request: Request, key: str, most: int) -> list[str]:
    """Every non-blank value of ``key``, stripped, in order; InvalidInput when more than ``most`` or one is too long."""
    values = [value.strip() for value in request.query_params.getlist(key) if value.strip()]
    if len(values) > most:
        raise InvalidInput(f"give {key!r} at most {most} times, not {len(values)}")
    for value in values:
        _check(key, value)
    return values


def _check(key: str, value: str) -> None:
    if len(value) > MAX_FIELD or "\x00" in value:
        raise InvalidInput(f"{key!r} must be text of at most {MAX_FIELD} characters")


def whole_number(request: Request, key: str, default: int, low: int, high: int) -> int:
    """``key`` as a whole number from ``low`` to ``high`` (``default`` when absent)."""
    value = field(request, key)
    if value is None:
        return default
    if not value.isdigit() or not low <= int(value) <= high:
        raise InvalidInput(f"{key!r} must be a whole number from {low} to {high}")
    return int(value)
