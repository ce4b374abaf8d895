"""Secrets in memory text: credentials that must never be stored or recalled.

Each detector is a pattern for one kind of credential, and some add a check
on what matched (a value must look random, an AWS key id needs its secret
nearby, a URL's password must not be a placeholder). Findings carry the kind
and the line, never the value. The patterns are compiled on first use, so
importing this module costs nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from memrouter.guard.verdict import Reason

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (a cold start cost)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["SECRET_KINDS", "find_secrets", "is_placeholder", "looks_random"]

# The words that make a key name a secret's, and the value assigned to it.
_SECRET_WORD = (
    r"(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?key|private[_-]?key|credentials?"
    r"|(?:encryption|signing|master)[_-]?key)"
)
_VALUE = r"[^\s\"'`,;)\]}>]{8,}"
# kind -> (pattern, what the message calls it)
_PATTERNS: dict[str, tuple[str, str]] = {
    "private_key": (
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[ \t]*\r?\n(?:[A-Za-z-]+:[^\n]*\r?\n)*\s*"
        r"[A-Za-z0-9+/=]{24,}",
        "a private key block",
    ),
    "jwt": (r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}", "a JSON web token"),
    "github_token": (
        r"\b(?:ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{36,}(?![A-Za-z0-9])|\bgithub_pat_[A-Za-z0-9_]{50,}",
        "a GitHub token",
    ),
    "gitlab_token": (r"\bglpat-[A-Za-z0-9_-]{20,}", "a GitLab token"),
    "slack_token": (
        r"\bxox[abposre]-[0-9]{6,}-[A-Za-z0-9-]{8,}|https://hooks\.slack\.com/services/T[A-Z0-9]{6,}/B[A-Z0-9]{6,}"
        r"/[A-Za-z0-9]{16,}",
        "a Slack token or webhook",
    ),
    "google_api_key": (r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", "a Google API key"),
    "anthropic_key": (r"\bsk-ant-(?:api|admin)[0-9]{2}-[A-Za-z0-9_-]{32,}", "an Anthropic API key"),
    "openai_key": (r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", "an OpenAI-style API key"),
    "stripe_live_key": (r"\b(?:sk|rk)_live_[A-Za-z0-9]{20,}", "a Stripe live key"),
    "aws_access_key": (
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|APKA)[A-Z0-9]{16}\b",
        "an AWS access key id with its secret key",
    ),
    "url_password": (
        r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@'\"<>()\[\]]{1,64}:([^\s/@'\"<>()\[\]]{1,128})@[A-Za-z0-9]",
        "a password inside a URL",
    ),
    "secret_assignment": (
        rf"(?i)(?<![A-Za-z0-9])[A-Za-z0-9_.-]*?{_SECRET_WORD}[A-Za-z0-9_]*[\"']?\s*(?::=|=>|=|:)[ \t]*[\"'`]?"
        rf"({_VALUE})"
        rf"|\bname:[ \t]*[\"']?[A-Za-z0-9_.-]*?{_SECRET_WORD}[A-Za-z0-9_]*[\"']?[ \t]*\r?\n[ \t]*value:[ \t]*"
        rf"[\"']?({_VALUE})",
        "a password, secret, token or API key assigned a random-looking value",
    ),
}
SECRET_KINDS = tuple(_PATTERNS)
# kind -> (the lower-case words a match cannot do without, how many lines after the word's it may reach)
_ANCHORS: dict[str, tuple[tuple[str, ...], int]] = {
    "private_key": (("-----begin",), 5),
    "jwt": (("eyj",), 0),
    "github_token": (("ghp_", "gho_", "ghs_", "ghu_", "ghr_", "github_pat_"), 0),
    "gitlab_token": (("glpat-",), 0),
    "slack_token": (("xox", "hooks.slack.com"), 0),
    "google_api_key": (("aiza",), 0),
    "anthropic_key": (("sk-ant-",), 0),
    "openai_key": (("sk-",), 0),
    "stripe_live_key": (("_live_",), 0),
    "aws_access_key": (("akia", "asia", "abia", "acca", "agpa", "aida", "aroa", "anpa", "anva", "apka"), 0),
    "url_password": (("://",), 0),
    "secret_assignment": (("pass", "pwd", "secret", "token", "key", "credential"), 1),
}
# kind -> a cheap pattern its match cannot do without: a window lacking it is not searched
_NEEDS = {"secret_assignment": r"[:=]"}

# Values that stand for a secret without being one: containing one of these ...
_PLACEHOLDER_PARTS = (
    "changeme", "change_me", "change-me", "example", "placeholder", "redacted", "your", "dummy", "<", ">", "${",
    "{{", "$(", "%(", "env.", "environ", "getenv", "process.", "settings.", "config.", "secrets.", "vault",
)  # fmt: skip
# ... or, punctuation aside, one of these words with a number or nothing after it.
_PLACEHOLDER_WORDS = r"(?:password|passw0rd|secret|pass|token|apikey|key|test|sample|none|null|x+|\*+|\.+|_+)\d{0,4}"
_AWS_SECRET = r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
# How near (characters) an AWS secret key must stand to its key id.
AWS_SECRET_WINDOW = 400
# A value that looks random: at least this many bits of entropy per character.
MIN_ENTROPY = 3.0
SHORT_ENTROPY_SHARE = 0.7
# A password or secret key's value of letters alone (no digit) counts when it is at least MIN_LETTERS long,
# changes case at least every CASE_RUN letters on average, holds few vowels or lone lower-case letters, and
# less than WORDY_SHARE of it is word-like pieces (``_random_letters``; benchmarks/bench_guard.py measures it).
MIN_LETTERS = 12
CASE_RUN = 4
FEW_VOWELS = 0.35
MANY_VOWELS = 0.5
WORDY_SHARE = 0.8
_PASSWORD_KEY = r"passw(?:or)?d|pwd|passphrase|secret"
_CAMEL_PIECE = r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])"


@lru_cache(maxsize=1)
def _compiled() -> tuple[tuple[str, re.Pattern[str], str, re.Pattern[str] | None], ...]:
    return tuple(
        (kind, re.compile(pattern), label, re.compile(_NEEDS[kind]) if kind in _NEEDS else None)
        for kind, (pattern, label) in _PATTERNS.items()
    )


@lru_cache(maxsize=1)
def _aws_secret() -> re.Pattern[str]:
    return re.compile(_AWS_SECRET)


def is_placeholder(value: str) -> bool:
    """Whether ``value`` stands in for a secret: ``<your-token>``, ``${VAR}``, ``changeme``, ``xxx`` ..."""
    lowered = value.lower()
    if any(part in lowered for part in _PLACEHOLDER_PARTS):
        return True
    if re.fullmatch(_PLACEHOLDER_WORDS, lowered.strip("\"'`[](){}!?-")):
        return True
    return len(set(lowered)) <= 2  # xxxxxxxx, 00000000, abababab


def _entropy(value: str) -> float:
    counts = Counter(value)
    total = len(value)
    return -sum(count / total * math.log2(count / total) for count in counts.values())


def looks_random(value: str) -> bool:
    """Whether ``value`` looks like a generated credential rather than a word, a name or code.

    It needs digits and letters (or symbols), enough entropy per character,
    and must not be a variable, a dotted name, a call, a pattern, a path or a
    word with a number on its end.
    """
    if is_placeholder(value) or len(value) < 8 or not any(c.isdigit() for c in value):
        return False  # generated credentials hold digits; a phrase such as optional-webhook-secret does not
    if value.startswith(("$", "%", "@")) or any(c in value for c in "[({\\|"):
        return False  # a variable, a call, a pattern
    if re.fullmatch(r"[A-Za-z_][\w-]*(?:[./:][A-Za-z_][\w-]*)+/?", value):  # a dotted name, a path, a URL part
        return False
    if re.fullmatch(r"[A-Za-z]+[_-]?[0-9]{1,4}", value) or re.fullmatch(r"[0-9._:-]+", value):
        return False  # a word and a version or year; a number, a time, a version
    classes = sum(
        (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value),
         any(not c.isalnum() for c in value))
    )  # fmt: skip
    # a short password cannot reach MIN_ENTROPY: it needs most of what its length allows
    wanted = min(MIN_ENTROPY, SHORT_ENTROPY_SHARE * math.log2(len(value)))
    return classes >= 2 and any(not c.isalpha() for c in value) and _entropy(value) >= wanted


def _random_letters(value: str) -> bool:
    """Whether ``value``, letters only, reads as drawn at random (``CFkfjVMuVBVKMLtGzrCM``).

    A random draw changes case every two letters on average, holds vowels at 10 in 52 or leaves lone
    lower-case letters, and falls apart into short pieces; words and CamelCase names (``MinimumLengthTwelve``)
    run in long stretches of one case, hold vowels at about two in five, and are mostly made of
    pieces of three letters or more that hold a vowel.
    """
    if len(value) < MIN_LETTERS or not value.isascii() or not value.isalpha() or is_placeholder(value):
        return False
    changes = sum(1 for a, b in zip(value, value[1:], strict=False) if a.isupper() != b.isupper())
    if changes < 3 or changes * CASE_RUN < len(value):
        return False
    vowels = sum(1 for c in value.lower() if c in "aeiou")
    lone = sum(1 for run in re.findall(r"[a-z]+", value) if len(run) == 1)
    if not (vowels <= FEW_VOWELS * len(value) or lone >= 2) or vowels > MANY_VOWELS * len(value):
        return False
    pieces = re.findall(_CAMEL_PIECE, value)
    wordy = sum(len(piece) for piece in pieces if len(piece) >= 3 and re.search("[aeiouy]", piece, re.IGNORECASE))
    return wordy < WORDY_SHARE * len(value)


def _password_value(match: re.Match[str]) -> str | None:
    """The value a password or secret key is assigned in ``match`` (a ``secret_assignment``), else None."""
    value = match.group(1) or match.group(2)
    key = match.group()[: match.start(1 if match.group(1) else 2) - match.start()]
    return value if re.search(_PASSWORD_KEY, key.lower()) else None


def _mixed(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value) and _entropy(value) >= MIN_ENTROPY


def _aws_secret_near(text: str, start: int, end: int) -> bool:
    window = text[max(0, start - AWS_SECRET_WINDOW) : end + AWS_SECRET_WINDOW]
    return any(_mixed(found.group()) for found in _aws_secret().finditer(window))


def _accepts(kind: str, match: re.Match[str], text: str) -> bool:
    """The extra check some kinds make on what their pattern matched."""
    checks: dict[str, Callable[[], bool]] = {
        "openai_key": lambda: _mixed(re.sub(r"^sk-(?:proj-|svcacct-|admin-)?", "", match.group())),
        "aws_access_key": lambda: _aws_secret_near(text, match.start(), match.end()),
        "url_password": lambda: not is_placeholder(match.group(1)) and not match.group(1).startswith(("$", "%")),
        "secret_assignment": lambda: (
            looks_random(match.group(1) or match.group(2)) or _random_letters(_password_value(match) or "")
        ),
    }
    check = checks.get(kind)
    return True if check is None else check()


def find_secrets(text: str) -> list[Reason]:
    """Every secret in ``text``: its kind and line, each place once (the first kind that claims it)."""
    from memrouter.guard.scan import Lowered, matches

    lowered = Lowered(text)
    found: list[Reason] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern, label, needs in _compiled():
        for match in matches(pattern, lowered, *_ANCHORS[kind], needs=needs):
            start, end = match.span()
            if any(start < stop and end > begin for begin, stop in taken) or not _accepts(kind, match, text):
                continue
            taken.append((start, end))
            line = text.count("\n", 0, start) + 1
            found.append(Reason("secret", kind, line, f"{label} (refused; the value is not shown)"))
    found.sort(key=lambda reason: reason.line)
    return found
