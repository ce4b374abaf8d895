"""Tokens for lexical search: the same function cuts documents and queries.

Words are runs of letters and digits, lower-cased, with diacritics removed
and English words stemmed. Runs of CJK characters (which have no spaces)
become overlapping character pairs, so those scripts are searchable too.
Stop words are left out of queries, not documents (see ``query_terms``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter

from memrouter.index.stem import stem

__all__ = ["STOP_WORDS", "tokens", "term_counts", "query_terms"]

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
MAX_TERM_LENGTH = 40


@functools.cache
def _cjk() -> re.Pattern[str]:
    """Runs of CJK characters; compiled on first use, as the class takes ~5 ms to compile."""
    return re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further had
    has have having he her here hers herself him himself his how i if in into is it its itself just
    me more most my myself no nor not now of off on once only or other our ours ourselves out over
    own same she should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself yourselves""".split()
)


_CACHE: dict[str, str] = {}
_CACHE_LIMIT = 500_000


def _normal(word: str) -> str:
    """The index form of one lower-case word ("" for words too long to be useful)."""
    if len(word) > MAX_TERM_LENGTH:
        token = ""
    elif word.isascii():
        token = stem(word)
    else:
        folded = "".join(c for c in unicodedata.normalize("NFKD", word) if not unicodedata.combining(c))
        token = stem(folded) if folded.isascii() else folded
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[word] = token
    return token


def _bigrams(run: re.Match[str]) -> str:
    text = run.group()
    if len(text) == 1:
        return f" {text} "
    return " " + " ".join(text[i : i + 2] for i in range(len(text) - 1)) + " "


def tokens(text: str) -> list[str]:
    """Normalised tokens of ``text``, in order (stop words kept)."""
    if not text.isascii():
        cjk = _cjk()
        if cjk.search(text):
            text = cjk.sub(_bigrams, text)
    get = _CACHE.get
    out: list[str] = []
    append = out.append
    for word in _WORD.findall(text.lower()):
        token = get(word)
        if token is None:
            token = _normal(word)
        if token:
            append(token)
    return out


def term_counts(text: str) -> Counter[str]:
    """How often each token occurs in ``text``."""
    return Counter(tokens(text))


def query_terms(query: str) -> list[str]:
    """Distinct query tokens, stop words dropped while other words remain."""
    words = _WORD.findall(query)
    content = [w for w in words if w.lower() not in STOP_WORDS]
    terms = tokens(" ".join(content or words))
    return list(dict.fromkeys(terms))[:64]
