"""store.markdown: the one reader of markdown structure (blocks, exact offsets)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrouter.store.markdown import Block, iter_blocks


def blocks(text: str) -> list[Block]:
    return list(iter_blocks(text))


def kinds(text: str) -> list[str]:
    return [block.kind for block in iter_blocks(text)]


def headings(text: str) -> list[tuple[int, str]]:
    return [(block.level, block.text) for block in iter_blocks(text) if block.kind == "heading"]


def check_cover(text: str, found: list[Block]) -> None:
    """The blocks tile ``text`` exactly, with line numbers that match the offsets."""
    position, line = 0, 0
    for block in found:
        assert block.start == position and block.end > block.start
        assert block.line == line == text.count("\n", 0, block.start)
        assert block.end_line > block.line
        ends_open = not text[block.start : block.end].endswith("\n")  # the last line may lack its "\n"
        assert block.end_line - block.line == text.count("\n", block.start, block.end) + ends_open
        assert (block.kind == "heading") == (block.level > 0)
        position, line = block.end, block.end_line
    assert position == len(text)


# -- headings ------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("# Title", [(1, "Title")]),
        ("###### Six", [(6, "Six")]),
        ("   ## Indented up to three", [(2, "Indented up to three")]),
        ("#\tTabbed", [(1, "Tabbed")]),
        ("# Closed ##", [(1, "Closed")]),
        ("# C#", [(1, "C#")]),  # a closing run needs a space before it
        ("# a # b", [(1, "a # b")]),
        ("## ##", [(2, "")]),
        ("#", [(1, "")]),
        ("# Windows\r\n", [(1, "Windows")]),
        ("#NoSpace", []),
        ("####### Seven", []),
        ("    # Four spaces is code", []),
    ],
)
def test_atx_headings(line: str, expected: list[tuple[int, str]]) -> None:
    assert headings(line) == expected


def test_setext_headings_are_a_line_underlined() -> None:
    text = "Title\n=====\n\nSection\n---\ntext after\n"
    found = blocks(text)
    assert [(b.kind, b.level, b.text) for b in found[:1]] == [("heading", 1, "Title")]
    assert text[found[0].start : found[0].end] == "Title\n=====\n"
    assert headings(text) == [(1, "Title"), (2, "Section")]
    assert kinds(text) == ["heading", "blank", "heading", "paragraph"]


@pytest.mark.parametrize(
    "text",
    [
        "- a list item\n---\n",
        "1. a step\n===\n",
        "> quoted\n---\n",
        "| a | b |\n|---|---|\n",
        "first line\nsecond line\n---\n",  # only a single line is taken as heading text
        "paragraph\n\n---\n",
        "***\n---\n",
        "    indented code\n---\n",
    ],
)
def test_underlines_that_make_no_heading(text: str) -> None:
    assert headings(text) == []


# -- fences --------------------------------------------------------------


def test_a_fence_hides_headings_and_blank_lines() -> None:
    text = "# Real\n```bash\n# a comment\n\nTitle\n=====\n```\nafter\n"
    assert kinds(text) == ["heading", "fence", "paragraph"]
    assert headings(text) == [(1, "Real")]


@pytest.mark.parametrize(
    ("fence", "rest"),
    [
        ("~~~\n```\n# in\n~~~\n", "x\n"),  # the other character does not close
        ("````\n```\n# in\n````\n", "x\n"),  # a shorter run does not close
        ("```\n# in\n`````\n", "x\n"),  # a longer run does
        ("   ```\n# in\n   ```\n", "x\n"),  # both indented up to three spaces
        ("```\n# in\n    ```\n# still in\n```\n", "x\n"),  # four spaces do not close
        ("```py\n# in\n``` not a close\n```   \n", "x\n"),
    ],
)
def test_fence_closing_rules(fence: str, rest: str) -> None:
    text = fence + rest
    found = blocks(text)
    assert found[0].kind == "fence" and text[found[0].start : found[0].end] == fence
    assert kinds(text)[1:] == ["paragraph"]


def test_an_unclosed_fence_runs_to_the_end() -> None:
    text = "intro\n```\n# not a heading\n\nmore\n"
    assert kinds(text) == ["paragraph", "fence"]
    assert blocks(text)[-1].end == len(text)


@pytest.mark.parametrize("line", ["    ```", "```x`y```", "``"])
def test_lines_that_open_no_fence(line: str) -> None:
    assert "fence" not in kinds(f"{line}\n# heading\n")


# -- other blocks ----------------------------------------------------------


def test_paragraphs_lists_and_blank_runs() -> None:
    text = "para one\ncontinued\n\n\n- item\n  more\n- item\n\n1. step\n\n  \t\nlast"
    assert kinds(text) == ["paragraph", "blank", "list", "blank", "list", "blank", "paragraph"]


def test_front_matter_is_one_block_and_never_read_as_markdown() -> None:
    text = "---\n# a YAML comment\ntitle: x\n---\n# Heading\n"
    found = blocks(text)
    assert found[0].kind == "front_matter" and found[0].end_line == 4
    assert text[found[0].start : found[0].end] == "---\n# a YAML comment\ntitle: x\n---\n"
    assert headings(text) == [(1, "Heading")]


def test_offsets_and_line_numbers() -> None:
    text = "# A\r\n\r\nbody\r\n"
    check_cover(text, blocks(text))
    lines = [(b.kind, b.line, b.end_line) for b in blocks(text)]
    assert lines == [("heading", 0, 1), ("blank", 1, 2), ("paragraph", 2, 3)]
    assert blocks("") == []


def test_reading_is_lazy() -> None:
    text = "# Title\n" + "a paragraph\n\n" * 10
    first = next(iter_blocks(text))
    assert (first.kind, first.text, first.end) == ("heading", "Title", 8)


# -- properties ------------------------------------------------------------

LINES = st.sampled_from(
    ["", "  ", "text", "# h1", "## h2", "#", "===", "---", "- item", "1. step", "> quote", "| a |", "```", "```py", "````",
     "~~~", "   ```", "    ```", "***", "Title", "\t", "\r", "---\r", "# x #"]
)  # fmt: skip
DOCUMENTS = st.one_of(
    st.text(),
    st.lists(st.one_of(LINES, st.text(max_size=12)), max_size=40).map("\n".join),
    st.lists(LINES, max_size=40).map("\n".join).map(lambda body: "---\nk: v\n---\n" + body),
)


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS)
def test_blocks_cover_any_text_exactly(text: str) -> None:
    check_cover(text, blocks(text))


CODE_LINES = st.lists(
    st.sampled_from(["# comment", "", "Title", "===", "```", "~~~", "- x", "    ```", "``` y", "````"]), max_size=8
)
PLAIN_LINES = LINES.filter(lambda line: not line.lstrip(" ").startswith(("```", "~~~")) or line.startswith("    "))


def closes(line: str, marker: str) -> bool:
    run = line.strip()
    return len(line) - len(line.lstrip(" ")) <= 3 and set(run) == {marker[0]} and len(run) >= len(marker)


@st.composite
def fenced(draw: st.DrawFn) -> str:
    """A closed fence whose body holds anything but its own closing run."""
    marker = draw(st.sampled_from("`~")) * draw(st.integers(3, 5))
    body = [line for line in draw(CODE_LINES) if not closes(line, marker)]
    return "\n".join([marker + draw(st.sampled_from(["", "py", " bash"])), *body, marker]) + "\n"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(fenced(), PLAIN_LINES.map(lambda line: line + "\n")), max_size=20))
def test_fences_are_never_split(pieces: list[str]) -> None:
    pieces = ["intro\n", *pieces]  # so that no "---" line opens front matter
    text = "".join(pieces)
    found = blocks(text)
    check_cover(text, found)
    spans = {(block.start, block.end) for block in found if block.kind == "fence"}
    position = 0
    for piece in pieces:
        if piece.startswith(("```", "~~~")):
            assert (position, position + len(piece)) in spans
        position += len(piece)
    assert len(spans) == sum(piece.startswith(("```", "~~~")) for piece in pieces)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["heading", "fence", "paragraph", "list"]), max_size=12), st.integers(1, 6))
def test_a_document_built_from_blocks_reads_back(shape: list[str], level: int) -> None:
    source = {
        "heading": f"{'#' * level} Heading {level}",
        "fence": "```sh\n# comment\n\nmake\n```",
        "paragraph": "Some text\nwrapped over lines.",
        "list": "- one\n- two\n  continued",
    }
    text = "\n\n".join(source[kind] for kind in shape)
    assert [kind for kind in kinds(text) if kind != "blank"] == shape
    assert headings(text) == [(level, f"Heading {level}")] * shape.count("heading")
