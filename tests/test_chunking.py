"""chunk_markdown: structure-aware cuts, exact offsets, bounded sizes."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrouter.core.errors import InvalidInput
from memrouter.index.chunking import Chunk, chunk_markdown
from memrouter.store.markdown import iter_blocks
from memrouter.store.parse import first_heading


def words(text: str) -> int:
    """A simple additive tokenizer: words and punctuation, plus two special tokens."""
    return len(re.findall(r"\w+|[^\w\s]", text)) + 2


def chars(text: str) -> int:
    """A non-additive counter (characters / 3, rounded up) to exercise the exact re-check."""
    return -(-len(text) // 3) + 2


@pytest.fixture(scope="module")
def wordpiece() -> Callable[[str], int]:
    """The real MiniLM tokenizer's count (tokenizer only, no model)."""
    from memrouter.embed.bert import load_tokenizer
    from memrouter.embed.weights import model_dir

    tokenizer = load_tokenizer(model_dir() / "tokenizer.json")
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids) + 2


def check_invariants(text: str, chunks: list[Chunk], count: Callable[[str], int], target: int, limit: int) -> None:
    covered = bytearray(len(text))
    previous_start = -1
    for position, chunk in enumerate(chunks):
        assert chunk.index == position
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.start > previous_start
        previous_start = chunk.start
        assert count(chunk.text) <= target
        assert count(chunk.embed_text) <= limit
        assert chunk.embed_text.endswith(chunk.text)
        covered[chunk.start : chunk.end] = b"\x01" * (chunk.end - chunk.start)
    for offset, character in enumerate(text):
        if not character.isspace():
            assert covered[offset], f"character {offset} ({character!r}) is in no chunk"


BLOCKS = st.one_of(
    st.builds(
        lambda level, title: "#" * level + " " + title, st.integers(1, 4), st.text("abc XYZ", min_size=1, max_size=20)
    ),
    st.lists(
        st.sampled_from(["alpha", "beta.", "gamma!", "delta,", "epsilon?", "zeta", "`eta`", "théta"]),
        min_size=1,
        max_size=120,
    ).map(" ".join),
    st.lists(st.sampled_from(["x = 1", "def f():", "    return x", "print(f())"]), min_size=1, max_size=60).map(
        lambda lines: "```python\n" + "\n".join(lines) + "\n```"
    ),
    st.lists(st.sampled_from(["- item one", "- item two.", "1. step", "| a | b |"]), min_size=1, max_size=40).map(
        "\n".join
    ),
    st.builds(
        lambda title, rule: f"{title}\n{rule}",
        st.text("abc XYZ-", min_size=1, max_size=20),
        st.sampled_from(["===", "---", "-", "= ="]),
    ),
    st.text(min_size=1, max_size=300),
    st.just("word" * 400),
)
MARKDOWN = st.lists(BLOCKS, max_size=12).map("\n\n".join)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=MARKDOWN, target=st.integers(12, 120), prefix=st.sampled_from([None, "", "Title", "A long memory title"]))
def test_chunks_cover_the_text_within_limits(text: str, target: int, prefix: str | None) -> None:
    chunks = chunk_markdown(
        text, words, target_tokens=target, overlap_tokens=target // 5, max_tokens=target, context_prefix=prefix
    )
    check_invariants(text, chunks, words, target, target)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=MARKDOWN, target=st.integers(10, 80))
def test_non_additive_counts_still_respect_limits(text: str, target: int) -> None:
    chunks = chunk_markdown(
        text, chars, target_tokens=target, overlap_tokens=0, max_tokens=target, context_prefix="ctx"
    )
    check_invariants(text, chunks, chars, target, target)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(text=MARKDOWN)
def test_real_tokenizer_never_exceeds_the_model_window(text: str, wordpiece: Callable[[str], int]) -> None:
    chunks = chunk_markdown(text, wordpiece, context_prefix="Memory title")
    check_invariants(text, chunks, wordpiece, 220, 256)


def test_blank_text_has_no_chunks() -> None:
    assert chunk_markdown("", words) == []
    assert chunk_markdown(" \n\n\t ", words) == []


def test_small_memory_is_one_chunk_with_heading_context() -> None:
    text = "# Setup\n\n## Install\n\nRun `make install`.\n"
    (chunk,) = chunk_markdown(text, words, context_prefix="")
    assert chunk.start == 0 and chunk.text == text.strip()
    assert chunk.heading == "Setup"
    assert chunk.embed_text == "Setup\n\n" + chunk.text


def test_sections_start_new_chunks_with_their_heading_path() -> None:
    body = "This paragraph has some words in it. " * 6
    text = f"# Setup\n\n{body}\n\n## Install\n\n{body}\n\n## Configure\n\n{body}\n\n# Usage\n\n{body}"
    chunks = chunk_markdown(text, words, target_tokens=120, overlap_tokens=0, context_prefix="Guide")
    assert [c.heading for c in chunks] == ["Setup", "Setup > Install", "Setup > Configure", "Usage"]
    assert chunks[1].text.startswith("## Install")
    assert chunks[1].embed_text.startswith("Guide > Setup > Install\n\n")


def test_underlined_headings_start_sections_too() -> None:
    body = "This paragraph has some words in it. " * 6
    text = f"Setup\n=====\n\n{body}\n\nInstall\n-------\n\n{body}\n\nUsage\n===\n\n{body}"
    chunks = chunk_markdown(text, words, target_tokens=120, overlap_tokens=0, context_prefix="Guide")
    assert [c.heading for c in chunks] == ["Setup", "Setup > Install", "Usage"]
    assert chunks[1].text.startswith("Install\n-------\n\nThis paragraph")
    assert chunks[1].embed_text.startswith("Guide > Setup > Install\n\n")


@pytest.mark.parametrize(
    "text",
    [
        "- a list item\n---\n\nafter the rule",  # a thematic break after a list
        "> quoted\n---\n\nafter the rule",
        "| a | b |\n|---|---|\n| 1 | 2 |",
        "first line\nsecond line\n---\n\nafter",  # only one-line paragraphs are taken as headings
        "paragraph\n\n---\n\nafter a blank line, a rule",
    ],
)
def test_rules_that_are_not_underlines_leave_no_heading(text: str) -> None:
    assert {chunk.heading for chunk in chunk_markdown(text, words, context_prefix=None)} == {""}


def test_title_is_not_repeated_in_context() -> None:
    text = "# Release notes\n\n" + "Some text. " * 5
    (chunk,) = chunk_markdown(text, words, context_prefix="Release notes")
    assert chunk.embed_text.startswith("Release notes\n\n# Release notes")


def test_no_context_when_prefix_is_none() -> None:
    text = "# A\n\nbody text"
    (chunk,) = chunk_markdown(text, words, context_prefix=None)
    assert chunk.embed_text == chunk.text


def test_code_fence_is_kept_whole_when_it_fits() -> None:
    code = "```python\n" + "\n".join(f"value_{i} = {i}" for i in range(12)) + "\n```"
    text = "Intro sentence here.\n\n" + code + "\n\nOutro sentence here."
    chunks = chunk_markdown(text, words, target_tokens=60, overlap_tokens=0)
    assert any(code in chunk.text for chunk in chunks)


def test_fence_with_blank_lines_and_hash_lines_is_one_block() -> None:
    code = "```bash\n# not a heading\n\necho hi\n```"
    text = "# Real\n\n" + code
    chunks = chunk_markdown(text, words, target_tokens=200)
    assert [c.heading for c in chunks] == ["Real"]


@pytest.mark.parametrize(
    "code",
    [
        "~~~\n```\n# inside\n\nmore\n~~~",  # a fence closes only with its own character
        "````\n```\n# inside\n````",  # and a run at least as long
        "```\n# inside\n    ```\n# still inside\n```",  # indented four spaces, a line of code
        "```inline``` code opens no fence",
    ],
)
def test_fence_closing_follows_the_reader(code: str) -> None:
    text = "# Real\n\n" + code + "\n\n## After\n\ntext"
    chunks = chunk_markdown(text, words, target_tokens=40, overlap_tokens=0, context_prefix=None)
    assert [chunk.heading for chunk in chunks] == ["Real", "Real > After"]
    assert code in chunks[0].text


def test_the_title_and_the_first_section_agree() -> None:
    text = "Release notes\n=============\n\nSome text.\n"
    (chunk,) = chunk_markdown(text, words, context_prefix=first_heading(text))
    assert first_heading(text) == chunk.heading == "Release notes"
    assert chunk.embed_text.startswith("Release notes\n\nRelease notes\n===")


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=MARKDOWN, target=st.integers(12, 120))
def test_chunks_start_where_the_reader_starts_blocks(text: str, target: int) -> None:
    """A chunk starts at a block of store.markdown, or inside a block too big for one chunk."""
    chunks = chunk_markdown(text, words, target_tokens=target, overlap_tokens=target // 5, max_tokens=target)
    blocks = [block for block in iter_blocks(text) if block.kind != "blank"]
    starts = {block.start + len(text[block.start : block.end]) - len(text[block.start : block.end].lstrip())
              for block in blocks}  # fmt: skip
    for chunk in chunks:
        if chunk.start not in starts:
            (inside,) = [block for block in blocks if block.start < chunk.start < block.end]
            assert words(text[inside.start : inside.end]) > target - target // 4


def test_full_chunks_overlap_their_neighbours() -> None:
    text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(60))
    chunks = chunk_markdown(text, words, target_tokens=60, overlap_tokens=15, context_prefix=None)
    assert len(chunks) > 3
    for before, after in zip(chunks, chunks[1:], strict=False):
        assert after.start < before.end  # the tail sentences are repeated
        assert after.end > before.end


def test_huge_line_is_cut_at_words() -> None:
    text = " ".join(f"w{i}" for i in range(1000))
    chunks = chunk_markdown(text, words, target_tokens=50, overlap_tokens=0)
    assert len(chunks) >= 20
    assert all(not c.text.startswith(" ") and re.fullmatch(r"[w\d ]+", c.text) for c in chunks)
    assert all(c.text.split()[0].startswith("w") for c in chunks)


def test_arguments_are_validated() -> None:
    with pytest.raises(InvalidInput):
        chunk_markdown("x", words, target_tokens=300, max_tokens=256)
    with pytest.raises(InvalidInput):
        chunk_markdown("x", words, target_tokens=100, overlap_tokens=100)
    with pytest.raises(InvalidInput):
        chunk_markdown("x", words, target_tokens=2)


def test_real_memories_fit_the_window(wordpiece: Callable[[str], int]) -> None:
    corpus = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "ai-agents-1026"
    if not corpus.is_dir():
        pytest.skip("corpus not available")
    files = sorted(corpus.rglob("*.md"))[:40]
    for path in files:
        text = path.read_text(encoding="utf-8")
        chunks = chunk_markdown(text, wordpiece, context_prefix=path.stem)
        check_invariants(text, chunks, wordpiece, 220, 256)
