"""Reservation globs: refused when they leave the repository; overlap checks never miss a real overlap."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter.core.errors import InvalidInput
from memrouter.team.globs import may_overlap, normalize_glob


@pytest.mark.parametrize("bad", ["/abs", "../x", "a/../../b", "a/..", "~/x", "C:/x", "a\\b", "", " "])
def test_globs_outside_the_repository_are_refused(bad: str) -> None:
    with pytest.raises(InvalidInput):
        normalize_glob(bad)


def test_spellings_are_normalised() -> None:
    assert normalize_glob("./src//a.py") == "src/a.py"
    assert normalize_glob("src/**/**/x") == "src/**/x"
    assert normalize_glob(".") == "**"


@pytest.mark.parametrize(
    ("a", "b", "overlap"),
    [
        ("src/**", "src/a.py", True),
        ("src", "src/a.py", True),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/a.md", False),
        ("src/*.py", "docs/*.py", False),
        ("**/*.py", "docs/x/y.py", True),
        ("a*b", "*c", False),
        ("a*", "*b", True),
        ("SRC/A.py", "src/a.py", True),
        ("tests/test_[ab].py", "tests/test_c.py", False),
    ],
)
def test_overlap_examples(a: str, b: str, overlap: bool) -> None:
    assert may_overlap(a, b) is overlap and may_overlap(b, a) is overlap


def _matches(glob: str, path: str) -> bool:
    """The reference meaning, by regular expression: the glob matches the path or a folder above it."""
    regex = ""
    for part in glob.split("/"):
        if part == "**":
            regex += "(?:[^/]+/)*"
        else:
            regex += "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in part) + "/"
    return re.match(regex, path + "/") is not None


SEGMENT = st.sampled_from(["a", "b", "ab", "*", "a*", "*b", "?", "**"])
PATH_SEGMENT = st.sampled_from(["a", "b", "ab", "ba", "aab"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(SEGMENT, min_size=1, max_size=3),
    st.lists(SEGMENT, min_size=1, max_size=3),
    st.lists(PATH_SEGMENT, min_size=1, max_size=4),
)
def test_a_path_matching_both_globs_is_always_reported(a: list[str], b: list[str], path: list[str]) -> None:
    glob_a, glob_b = normalize_glob("/".join(a)), normalize_glob("/".join(b))
    target = "/".join(path)
    if _matches(glob_a, target) and _matches(glob_b, target):
        assert may_overlap(glob_a, glob_b), (glob_a, glob_b, target)
