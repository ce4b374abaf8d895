"""The write guard's labelled sets (tests/data/guard/): cases, and fake secrets made at load time.

A set is a markdown file of cases, each opened by a line ``=== <label>`` and
running to the next. In the secrets set the label is the secret's kind and
the credential itself is a slot such as ``«ghp»`` or ``«pem:RSA»``, filled
here with random characters of the right shape: the files hold no token a
scanner would take for a live one, and every run tests fresh values.
"""

from __future__ import annotations

import base64
import json
import random
import re
import string
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Case", "DATA", "expand", "fake", "load_cases"]

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "guard"
_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_URLSAFE = _ALNUM + "-_"
_SLOT = re.compile(r"«([a-z_]+)(?::([A-Z ]*))?»")


@dataclass(frozen=True, slots=True)
class Case:
    """One labelled text of a set, and the line of the file it starts on."""

    label: str
    text: str
    line: int


def _pick(rng: random.Random, alphabet: str, count: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(count))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _jwt(rng: random.Random) -> str:
    header = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = {
        "sub": _pick(rng, string.digits, 10),
        "name": "Test User",
        "iat": rng.randrange(1_600_000_000, 1_800_000_000),
    }
    return f"{header}.{_b64url(json.dumps(claims).encode())}.{_pick(rng, _URLSAFE, 43)}"


def _pem(rng: random.Random, label: str) -> str:
    kind = f"{label} PRIVATE KEY" if label else "PRIVATE KEY"
    lines = [_pick(rng, _ALNUM + "+/", 64) for _ in range(6)]
    return f"-----BEGIN {kind}-----\n" + "\n".join(lines) + f"\n{_pick(rng, _ALNUM, 20)}==\n-----END {kind}-----"


def fake(slot: str, rng: random.Random, arg: str = "") -> str:
    """A random credential of the shape ``slot`` names (``ghp``, ``aws_secret``, ``pem`` ...)."""
    makers = {
        "ghp": lambda: "ghp_" + _pick(rng, _ALNUM, 36),
        "gho": lambda: "gho_" + _pick(rng, _ALNUM, 36),
        "ghs": lambda: "ghs_" + _pick(rng, _ALNUM, 36),
        "ghu": lambda: "ghu_" + _pick(rng, _ALNUM, 36),
        "github_pat": lambda: f"github_pat_{_pick(rng, _ALNUM, 22)}_{_pick(rng, _ALNUM, 59)}",
        "glpat": lambda: "glpat-" + _pick(rng, _URLSAFE, 20),
        "xoxb": lambda: (
            f"xoxb-{_pick(rng, string.digits, 11)}-{_pick(rng, string.digits, 13)}-{_pick(rng, _ALNUM, 24)}"
        ),
        "xoxp": lambda: (
            f"xoxp-{_pick(rng, string.digits, 11)}-{_pick(rng, string.digits, 12)}-{_pick(rng, _ALNUM, 32)}"
        ),
        "slack_hook": lambda: (
            f"https://hooks.slack.com/services/T{_pick(rng, _UPPER, 8)}/B{_pick(rng, _UPPER, 10)}/{_pick(rng, _ALNUM, 24)}"
        ),
        "aiza": lambda: "AIza" + _pick(rng, _URLSAFE, 35),
        "sk": lambda: "sk-" + _pick(rng, _ALNUM, 48),
        "sk_proj": lambda: "sk-proj-" + _pick(rng, _URLSAFE, 74),
        "sk_ant": lambda: "sk-ant-api03-" + _pick(rng, _URLSAFE, 93) + "AA",
        "sk_live": lambda: "sk_live_" + _pick(rng, _ALNUM, 24),
        "rk_live": lambda: "rk_live_" + _pick(rng, _ALNUM, 24),
        "aws_id": lambda: "AKIA" + _pick(rng, _UPPER, 16),
        "aws_secret": lambda: _pick(rng, _ALNUM + "/+", 40),
        "jwt": lambda: _jwt(rng),
        "pem": lambda: _pem(rng, arg),
        "password": lambda: _pick(rng, _ALNUM, 10) + rng.choice("!#%&*") + _pick(rng, string.digits, 3),
        "hex": lambda: _pick(rng, "0123456789abcdef", 40),
        "letters": lambda: _pick(rng, string.ascii_letters, 20),  # a generated password with no digit
    }
    if slot not in makers:
        raise KeyError(f"no fake secret of shape {slot!r}")
    return makers[slot]()


def expand(text: str, rng: random.Random) -> str:
    """``text`` with every slot filled by a fresh fake secret."""
    return _SLOT.sub(lambda match: fake(match.group(1), rng, match.group(2) or ""), text)


def load_cases(name: str, *, seed: int | None = 0) -> list[Case]:
    """The cases of ``tests/data/guard/<name>``, slots filled (``seed`` None: a different fill each time)."""
    rng = random.Random(seed)
    cases: list[Case] = []
    label: str | None = None
    start = 0
    body: list[str] = []
    lines = (DATA / name).read_text(encoding="utf-8").splitlines()
    for number, line in enumerate([*lines, "=== end"], 1):
        if line.startswith("=== "):
            if label is not None:
                cases.append(Case(label, expand("\n".join(body).strip("\n") + "\n", rng), start))
            label, start, body = line[4:].strip(), number + 1, []
        elif label is not None:
            body.append(line)
    return cases
