"""A save request's name and text: a title made from plain text, never from nothing."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrouter.core.errors import InvalidInput
from memrouter.core.names import validate_name
from memrouter.store import frontmatter
from memrouter.store.compose import DERIVED_TITLE_CHARS, compose, derive_title


@pytest.mark.parametrize(
    ("text", "title", "name"),
    [
        ("Pool size is 8. Raise it only with ADR-9.", "Pool size is 8", "pool-size-is-8"),
        (
            "> **Note:** deploys freeze on `Fridays`",
            "Note: deploys freeze on Fridays",
            "note-deploys-freeze-on-fridays",
        ),
        (
            "\n\n1. Run `make lint` before pushing\n2. then test",
            "Run make lint before pushing",
            "run-make-lint-before-pushing",
        ),
        ("数据库很好", "数据库很好", "note"),  # no letter of the name alphabet: the fallback name
    ],
)
def test_plain_text_gets_a_title_and_a_name(text: str, title: str, name: str) -> None:
    made, stored = compose(text, None)
    assert made == name
    fields, body = frontmatter.split(stored)
    assert body == text and frontmatter.parse(stored).data["title"] == title


def test_a_heading_or_a_given_title_or_name_is_not_replaced() -> None:
    assert compose("# Pool\n\nEight.", None) == ("pool", "# Pool\n\nEight.")
    assert compose("Eight.", None, title="Pool")[0] == "pool"
    assert compose("Eight.", "db/pool") == ("db/pool", "Eight.")
    with pytest.raises(InvalidInput, match="give the memory a name"):
        compose("Eight.", None, title="!!!")  # a title given that makes no name is still refused


@given(st.text(min_size=1, max_size=400).filter(lambda text: text.strip() and "\x00" not in text))
def test_any_text_gets_a_valid_name_and_a_short_single_line_title(text: str) -> None:
    try:
        name, _ = compose(text, None)
    except InvalidInput as exc:  # text a file cannot hold, or front matter that cannot be read
        assert "Unicode" in str(exc) or "front matter" in str(exc) or "heading" in str(exc), exc
        return
    assert validate_name(name, strict=False) == name and len(name) <= 60
    title = derive_title(text)
    assert "\n" not in title and len(title) <= DERIVED_TITLE_CHARS
