"""The one check every command line passes first: arguments and ``MEMROUTER_*`` values must be text.

Python decodes a command line that is not UTF-8 (``memrouter get $'\\xff'``)
into lone surrogates (``\\udcff``), which any later step that encodes text
(a path, a log line, SQLite, JSON) fails on with a traceback. The click group
(``memrouter.cli.app``) refuses such a command line before any command runs,
with one line and exit 2; the fast path of ``memrouter search``
(``memrouter.cli.fast_search``) hands it to the group. Click-free, so the fast
path can ask too.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["ENV_PREFIX", "undecodable"]

ENV_PREFIX = "MEMROUTER_"


def undecodable(args: Sequence[str], env: Mapping[str, str] | None = None) -> str | None:
    """What is not text in ``args`` (or in a ``MEMROUTER_*`` variable of ``env``), as one sentence; None if all is."""
    for position, arg in enumerate(args, 1):
        found = _surrogate(arg)
        if found is not None:
            return f"argument {position} of the command line {found}; give it as UTF-8 text"
    for key, value in sorted((env or {}).items()):
        if key.startswith(ENV_PREFIX):
            found = _surrogate(value) or _surrogate(key)
            if found is not None:
                return f"the environment variable {ascii(key)} {found}; set it to UTF-8 text"
    return None


def _surrogate(text: str) -> str | None:
    """How ``text`` fails to be text: the byte it was decoded from, or the lone surrogate; None if it is text."""
    for char in text:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8, as os.fsdecode keeps it
            return f"holds the byte 0x{code - 0xDC00:02x}, which is not UTF-8"
        if 0xD800 <= code <= 0xDFFF:
            return f"holds a lone surrogate (U+{code:04X}), which is not text"
    return None
