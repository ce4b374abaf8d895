"""Argument checks shared by the team channel's operations: names, numbers, JSON values."""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Iterable
from typing import Any

from memrouter.core.errors import InvalidInput
from memrouter.team.records import MAX_VALUE_BYTES

__all__ = [
    "MAX_SECONDS",
    "check_agent_id",
    "check_key",
    "check_names",
    "check_seconds",
    "check_plain_text",
    "decode",
    "encode",
    "new_id",
]

# A lease, TTL or expiry may last at most a week: the channel holds live state, not archives.
MAX_SECONDS = 7 * 24 * 3600.0
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,127}")
_KEY = re.compile(r"[^\x00-\x1f\x7f]{1,256}")
_ID = re.compile(r"[0-9a-f]{32}")


def new_id() -> str:
    """A random 128-bit id, as 32 hex digits: neither guessable nor sequential."""
    return secrets.token_hex(16)


def check_id(value: object, what: str) -> str:
    if not isinstance(value, str) or not _ID.fullmatch(value):
        raise InvalidInput(f"{what} must be an id of 32 hex digits, not {str(value)[:80]!r}")
    return value


def check_agent_id(value: object, what: str = "agent id") -> str:
    """1 to 128 characters: letters, digits and ``. _ : @ / + -``, starting with a letter or digit."""
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise InvalidInput(
            f"{what} must be 1 to 128 letters, digits or . _ : @ / + - (starting with a letter or digit), "
            f"not {str(value)[:80]!r}"
        )
    return value


def check_names(values: Iterable[str] | None, what: str, *, limit: int = 64) -> tuple[str, ...]:
    """Capability names and the like: each a valid name, at most ``limit``, duplicates dropped."""
    if values is None:
        return ()
    if isinstance(values, str):
        raise InvalidInput(f"{what} must be a list of names, not one string")
    names = tuple(dict.fromkeys(check_agent_id(value, what[:-1] if what.endswith("s") else what) for value in values))
    if len(names) > limit:
        raise InvalidInput(f"at most {limit} {what}, not {len(names)}")
    return names


def check_key(value: object) -> str:
    if not isinstance(value, str) or not _KEY.fullmatch(value):
        raise InvalidInput("a key must be 1 to 256 characters without control characters")
    return value


def check_plain_text(value: object, what: str, *, limit: int, required: bool = True) -> str | None:
    """Plain text (a title, a message, a reason): no control characters but newline and tab."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise InvalidInput(f"{what} must be a non-empty string")
    if len(value) > limit:
        raise InvalidInput(f"{what} is {len(value)} characters; at most {limit}")
    if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", value):
        raise InvalidInput(f"{what} must not hold control characters")
    return value


def check_seconds(value: object, what: str, *, required: bool = True, at_most: float = MAX_SECONDS) -> float | None:
    """A positive number of seconds, at most ``at_most`` (a week unless said)."""
    if value is None and not required:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidInput(f"{what} must be a number of seconds")
    if value <= 0:
        raise InvalidInput(f"{what} must be positive, not {value}")
    if value > at_most:
        span = " (a week)" if at_most == MAX_SECONDS else ""
        raise InvalidInput(f"{what} is at most {at_most:.0f} seconds{span}, not {value}")
    return float(value)


def check_int(value: object, what: str, *, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidInput(f"{what} must be a whole number from {low} to {high}, not {str(value)[:40]!r}")
    return value


def encode(value: Any, what: str) -> str:
    """``value`` as compact JSON, refused past ``MAX_VALUE_BYTES``; values are data, never code."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"{what} must be JSON data (objects, arrays, strings, finite numbers): {exc}") from exc
    except RecursionError as exc:
        raise InvalidInput(f"{what} is nested too deeply") from exc
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} is not valid Unicode") from exc
    if size > MAX_VALUE_BYTES:
        raise InvalidInput(f"{what} is {size} bytes as JSON; at most {MAX_VALUE_BYTES}")
    return text


def decode(text: str | None) -> Any:
    return None if text is None else json.loads(text)
