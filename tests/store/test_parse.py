"""parse.first_heading: a memory's title is its first level-1 heading, as store.markdown reads it."""

from __future__ import annotations

import pytest

from memrouter.store.parse import first_heading, parse_memory


@pytest.mark.parametrize(
    ("body", "title"),
    [
        ("# Title\n\ntext", "Title"),
        ("intro\n\n## Section\n\n# Later title #\n", "Later title"),
        ("Underlined title\n================\n\ntext", "Underlined title"),
        ("Section\n-------\n\n# Title\n", "Title"),  # an underline of "-" is level 2
        ("```bash\n# a shell comment\n```\n# Title\n", "Title"),
        ("~~~~\n```\n# inside\n~~~~\n# Title\n", "Title"),
        ("# C#\n", "C#"),
        ("#\n\n# \n\n# Named\n", "Named"),  # a heading with no text is no title
        ("   # Indented\n", "Indented"),
        ("#NoSpace\n", None),
        ("    # code\n", None),
        ("no heading here\n", None),
        ("", None),
    ],
)
def test_first_heading(body: str, title: str | None) -> None:
    assert first_heading(body) == title


def test_a_yaml_comment_in_broken_front_matter_is_no_title() -> None:
    text = "---\n# owner: me\ntitle: [unclosed\n---\n# Real title\n"
    memory = parse_memory("notes/x", "/x.md", text)
    assert memory.problems and memory.body == text  # the broken block stays in the body
    assert memory.title == "Real title"


def test_without_a_heading_the_name_is_the_title() -> None:
    assert parse_memory("notes/plain-note", "/p.md", "Just text.\n").title == "plain-note"
