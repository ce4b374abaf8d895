"""split_content: parts within the limit, cut along markdown structure, lossless."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter.backends.split import split_content


def test_short_text_is_one_part() -> None:
    assert split_content("hello", 10) == ["hello"]
    assert split_content("", 10) == [""]


def test_cuts_between_paragraphs() -> None:
    text = "aaaa aaaa\n\nbbbb bbbb\n\ncccc cccc"
    parts = split_content(text, 20)
    assert parts == ["aaaa aaaa\n\n", "bbbb bbbb\n\ncccc cccc"]


def test_paragraph_boundaries_are_kept_whole() -> None:
    paragraphs = [f"paragraph {i} " + "word " * 30 for i in range(10)]
    text = "\n\n".join(paragraphs)
    parts = split_content(text, 400)
    assert "".join(parts) == text
    for part in parts:
        assert len(part) <= 400
        assert part.startswith("paragraph")


def test_starts_a_new_part_at_a_heading_once_half_full() -> None:
    body = "text " * 50
    text = f"# One\n\n{body}\n\n## Two\n\n{body}"
    parts = split_content(text, 400)
    assert len(parts) == 2
    assert parts[1].startswith("## Two")


def test_long_lines_and_words_are_cut() -> None:
    line = "word " * 100
    text = line + "\n" + "x" * 250
    parts = split_content(text, 100)
    assert "".join(parts) == text
    assert all(len(p) <= 100 for p in parts)


def test_bad_limit() -> None:
    with pytest.raises(ValueError):
        split_content("abc", 0)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(alphabet="abc #\n-", max_size=300),
            st.sampled_from(["\n\n", "# Heading\n", "```\ncode\n```\n", " "]),
        ),
        max_size=30,
    ),
    st.integers(min_value=1, max_value=300),
)
def test_parts_fit_and_concatenate_back(chunks: list[str], limit: int) -> None:
    text = "".join(chunks)
    parts = split_content(text, limit)
    assert all(len(p) <= limit for p in parts)
    assert "".join(parts) == text
    if len(text) <= limit:
        assert parts == [text]
