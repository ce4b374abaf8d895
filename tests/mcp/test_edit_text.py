"""The text edits behind edit_memory and rename_memory (``memrouter.store.edit``)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrouter.core.errors import InvalidInput
from memrouter.store.edit import replace_text, rewrite_references


def test_literal_mode_is_verbatim() -> None:
    assert replace_text("a.b a*b", "a*b", r"\1 $!1") == (r"a.b \1 $!1", 1)
    with pytest.raises(InvalidInput, match="No matches"):
        replace_text("abc", "x", "y")
    with pytest.raises(InvalidInput, match="matches 2 occurrences"):
        replace_text("aa", "a", "b")
    assert replace_text("aa", "a", "b", allow_multiple_occurrences=True) == ("bb", 2)


def test_regex_mode_multiline_dotall_and_groups() -> None:
    text = "start\nkeep\nend\nstart again"
    assert replace_text(text, r"^start$.*?^end$", "X", "regex") == ("X\nstart again", 1)
    assert replace_text("k=v", r"(\w)=(\w)", "$!2=$!1", "regex") == ("v=k", 1)
    assert replace_text("ab", r"(a)(x)?b", "[$!2]", "regex") == ("[]", 1)  # an unmatched group is empty
    with pytest.raises(InvalidInput, match=r"\$!3"):
        replace_text("ab", r"(a)b", "$!3", "regex")
    with pytest.raises(InvalidInput, match="ambiguous"):
        replace_text("<a>one\n<a>two\n</a>", "<a>.*?</a>", "x", "regex")
    assert replace_text("<a>one</a>", "<a>.*?</a>", "x", "regex") == ("x", 1)  # one line: not ambiguous
    with pytest.raises(InvalidInput, match="invalid regular expression"):
        replace_text("ab", "(", "", "regex")
    with pytest.raises(InvalidInput, match="mode"):
        replace_text("ab", "a", "", "glob")


@given(st.text(), st.text(min_size=1), st.text())
def test_literal_replacement_equals_str_replace(text: str, needle: str, repl: str) -> None:
    count = text.count(needle)
    if count == 0:
        with pytest.raises(InvalidInput):
            replace_text(text, needle, repl, allow_multiple_occurrences=True)
    else:
        assert replace_text(text, needle, repl, allow_multiple_occurrences=True) == (text.replace(needle, repl), count)


@pytest.mark.parametrize(
    ("text", "expected", "count"),
    [
        ("see `mem:auth`", "see `mem:new/auth`", 1),
        ("mem:auth. Next", "mem:new/auth. Next", 1),
        ("(mem:auth), mem:auth;", "(mem:new/auth), mem:new/auth;", 2),
        ("mem:auth-v2 mem:authz mem:auth/sub mem:auth.md2", "mem:auth-v2 mem:authz mem:auth/sub mem:auth.md2", 0),
        ("xmem:auth notmem:auth", "xmem:auth notmem:auth", 0),
        ("plain auth", "plain auth", 0),
    ],
)
def test_rewrite_references_only_whole_names(text: str, expected: str, count: int) -> None:
    assert rewrite_references(text, "auth", "new/auth") == (expected, count)


NAMES = st.from_regex(re.compile(r"[a-z0-9][a-z0-9_-]{0,10}(/[a-z0-9][a-z0-9_-]{0,10}){0,2}"), fullmatch=True)


@given(NAMES, NAMES, st.lists(st.sampled_from([" ", "`", "(", ")", ".", ",", "\n", "word"]), max_size=6))
def test_rewrite_then_back_restores_the_text(old: str, new: str, glue: list[str]) -> None:
    text = "".join(glue) + f"`mem:{old}`" + "".join(reversed(glue))
    if f"mem:{new}" in text:
        return
    forward, count = rewrite_references(text, old, new)
    assert count >= 1 and f"mem:{new}" in forward
    back, _ = rewrite_references(forward, new, old)
    assert back == text
