from __future__ import annotations

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from memrouter.store import frontmatter
from memrouter.store.parse import content_hash, parse_memory

DOC = (
    "---\n"
    "title: Old title\n"
    "reviewers:   [bob, 'carol']   # odd spacing and a comment\n"
    "nested:\n"
    "  deep: {a: 1}\n"
    "  list:\n"
    "    - x\n"
    "tags: [a]\n"
    "---\n"
    "# Heading\n\nBody text.\n"
)


def test_untouched_keys_survive_byte_for_byte() -> None:
    updated = frontmatter.update(DOC, {"tags": ["a", "b"], "kind": "adr"})
    assert "reviewers:   [bob, 'carol']   # odd spacing and a comment\n" in updated
    assert "nested:\n  deep: {a: 1}\n  list:\n    - x\n" in updated
    assert updated.endswith("---\n# Heading\n\nBody text.\n")
    data = frontmatter.parse(updated).data
    assert data["tags"] == ["a", "b"] and data["kind"] == "adr" and data["title"] == "Old title"


def test_removing_a_key_and_no_change_is_identity() -> None:
    assert frontmatter.update(DOC, {}) == DOC
    assert "title:" not in frontmatter.update(DOC, {"title": None})


def test_plain_file_gets_front_matter_only_when_needed() -> None:
    plain = "# Title\n\nText\n"
    assert frontmatter.update(plain, {}) == plain
    assert frontmatter.update(plain, {"kind": None}) == plain
    updated = frontmatter.update(plain, {"kind": "fact"})
    assert updated == "---\nkind: fact\n---\n# Title\n\nText\n"


def test_invalid_yaml_keeps_the_whole_text_as_body() -> None:
    text = "---\ntitle: [unclosed\n---\n# Real title\n\nbody\n"
    memory = parse_memory("x", "/x.md", text)
    assert memory.problems and "invalid YAML" in memory.problems[0]
    assert memory.body == text
    assert memory.title == "Real title"


def test_both_corpus_front_matter_styles() -> None:
    claude_style = "---\nname: impl-9\ndescription: TDD first\ntype: implementation\nconfidence: HIGH\n---\n\n# Impl\n"
    memory = parse_memory("implementation/impl-9", "/p", claude_style)
    assert memory.kind == "implementation" and memory.confidence == 0.9 and memory.title == "Impl"
    assert memory.extra["description"] == "TDD first"
    citation_style = "---\nid: test-x\nsubject: Test citation verification\ntags:\n  - testing\n---\nbody\n"
    memory = parse_memory("testing/test-x", "/p", citation_style)
    assert memory.title == "Test citation verification" and memory.tags == ("testing",)


def test_defaults_for_plain_files() -> None:
    memory = parse_memory("notes/a", "/a.md", "no heading here\n")
    assert memory.title == "a" and memory.channel == "long_term" and memory.status == "active"
    assert memory.hash == content_hash("no heading here\n")
    sprint = parse_memory("sprints/w1/x", "/x.md", "---\nkind: research\n---\n# R\n")
    assert sprint.channel == "sprint"


def test_unknown_channel_and_status_are_reported_not_fatal() -> None:
    memory = parse_memory("a", "/a", "---\nchannel: forever\nstatus: weird\nconfidence: 7\n---\n# A\n")
    assert memory.channel == "long_term" and memory.status == "active" and memory.confidence == 1.0
    assert len(memory.problems) == 3


KEYS = st.one_of(
    st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True),
    st.sampled_from(["no", "on", "yes", "off", "true", "null", "y", "~"]),  # YAML quotes these
    st.text(alphabet="ab:'\"#- ü\\?[{&*!|>%@`,.", min_size=1, max_size=6),
)
VALUES = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), max_size=30),
    st.integers(),
    st.lists(st.text(alphabet="abcxyz -", max_size=8), max_size=3),
)


@given(st.dictionaries(KEYS, VALUES, max_size=5), st.dictionaries(KEYS, VALUES, max_size=3))
def test_update_round_trip(existing: dict[str, object], changes: dict[str, object]) -> None:
    start = frontmatter.update("# T\n\nbody\n", existing)
    updated = frontmatter.update(start, changes)
    data = frontmatter.parse(updated).data
    expected = {**existing, **changes}
    if not expected:
        assert updated == "# T\n\nbody\n"
        return
    assert data == yaml.safe_load(yaml.safe_dump(expected))
    assert frontmatter.split(updated)[1] == "# T\n\nbody\n"
    # Each key is written once: replaced in place, never appended a second time.
    assert len(yaml.compose(frontmatter.split(updated)[0]).value) == len(expected)


def test_a_quoted_key_keeps_its_own_entry_when_its_neighbour_is_rewritten() -> None:
    text = "---\na: 1\n'no': keep\n\"on\": keep\nit's: keep\nx:y: keep\n---\nbody\n"
    updated = frontmatter.update(text, {"a": 2, "on": "changed"})
    assert updated == "---\na: 2\n'no': keep\n'on': changed\nit's: keep\nx:y: keep\n---\nbody\n"


@pytest.mark.parametrize("opening", ["---\n", "---\r\n"])
def test_split_handles_line_endings(opening: str) -> None:
    raw, body = frontmatter.split(f"{opening}a: 1\n---\nbody")
    assert raw is not None and "a: 1" in raw and body == "body"
