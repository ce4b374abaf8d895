"""split_content: parts within the limit, cut along markdown structure, lossless."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter.external.backends.split import split_content
from memrouter.store.markdown import iter_blocks


def cuts(parts: list[str]) -> list[int]:
    """The offsets where one part ends and the next begins."""
    offsets, position = [], 0
    for part in parts[:-1]:
        position += len(part)
        offsets.append(position)
    return offsets


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


def test_a_fence_is_not_cut_at_its_blank_lines_or_comments() -> None:
    intro = "intro " * 40
    code = "```bash\n" + "echo one\n\n# a comment, not a heading\n\n" * 6 + "```\n"
    text = f"# Title\n\n{intro}\n\n{code}\nafter the code\n"
    parts = split_content(text, 400)
    assert "".join(parts) == text
    assert any(code in part for part in parts)
    assert not any(part.startswith("# a comment") for part in parts)


def test_a_heading_stays_with_its_first_block() -> None:
    text = "a" * 50 + "\n\n## Section\n\n" + "b" * 150 + "\n"
    parts = split_content(text, 200)  # the part is not half full, yet the heading moves on with its text
    assert parts == ["a" * 50 + "\n\n", "## Section\n\n" + "b" * 150 + "\n"]


def test_a_line_that_leads_into_a_fence_stays_with_it() -> None:
    text = "text " * 30 + "\n\nExample:\n```\nrun it\n```\n"
    parts = split_content(text, 160)
    assert parts[-1] == "Example:\n```\nrun it\n```\n"


def test_an_underlined_heading_starts_a_part_once_half_full() -> None:
    body = "text " * 50
    text = f"One\n===\n\n{body}\n\nTwo\n---\n\n{body}"
    parts = split_content(text, 400)
    assert len(parts) == 2 and parts[1].startswith("Two\n---")


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


MARKDOWN_PIECES = st.lists(
    st.one_of(
        st.sampled_from(["# Heading", "## Sub", "Title\n=====", "- item\n- item", "| a |\n|---|", "", ""]),
        st.text(alphabet="abc .\n", max_size=200),
        st.lists(st.sampled_from(["x = 1", "", "# comment", "```py", "    ```"]), max_size=12).map(
            lambda lines: "```\n" + "\n".join(lines) + "\n```"
        ),
    ),
    max_size=25,
).map("\n".join)


@settings(max_examples=200, deadline=None)
@given(MARKDOWN_PIECES, st.integers(min_value=20, max_value=400))
def test_parts_are_cut_between_blocks(text: str, limit: int) -> None:
    """Every cut is where store.markdown starts a block, unless the block alone is over the limit."""
    parts = split_content(text, limit)
    assert "".join(parts) == text and all(len(part) <= limit for part in parts)
    blocks = list(iter_blocks(text))
    starts = {block.start for block in blocks}
    for cut in cuts(parts):
        if cut not in starts:
            (inside,) = [block for block in blocks if block.start < cut < block.end]
            assert inside.end - inside.start > limit
    for block in blocks:
        if block.kind == "fence" and block.end - block.start <= limit:
            assert not any(block.start < cut < block.end for cut in cuts(parts))
