from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrouter.core.errors import InvalidInput
from memrouter.core.names import MAX_NAME_LENGTH, path_for_name, validate_name

SEGMENT = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,20}", fullmatch=True).filter(lambda s: s not in (".", ".."))


@given(st.lists(SEGMENT, min_size=1, max_size=5))
def test_valid_names_round_trip_to_paths(segments: list[str]) -> None:
    name = "/".join(segments)
    if len(name) > MAX_NAME_LENGTH:
        return
    assert validate_name(name) == name
    assert validate_name(f"mem:{name}.md") == name
    root = Path("/tmp/root-that-need-not-exist")
    assert path_for_name(root, name) == root / f"{name}.md"


@given(st.text(max_size=60))
def test_any_text_is_either_a_safe_name_or_rejected(raw: str) -> None:
    try:
        name = validate_name(raw)
    except InvalidInput:
        return
    assert not name.startswith("/")
    assert ".." not in name.split("/")
    assert "" not in name.split("/")
    assert "\\" not in name


@pytest.mark.parametrize(
    "bad",
    [
        "", "   ", "../secret", "a/../../b", "/etc/passwd", "a//b", "./a", "a/./b", "C:/x", "a\\b",
        "Upper", "spaces in name", "x" * 201, "a/\x00b", "ｅｔｃ/passwd", "..", "a/..",
    ],
)  # fmt: skip
def test_bad_names_are_refused_with_a_reason(bad: str) -> None:
    with pytest.raises(InvalidInput) as info:
        validate_name(bad)
    assert str(info.value)


def test_existing_files_may_have_looser_names() -> None:
    assert validate_name("Notes/Design Review", strict=False) == "Notes/Design Review"
    with pytest.raises(InvalidInput):
        validate_name("../x", strict=False)


def test_symlink_escaping_the_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("secret")
    (root / "link").symlink_to(outside)
    with pytest.raises(InvalidInput, match="outside"):
        path_for_name(root, "link/secret")
    assert path_for_name(root, "inside/ok") == root / "inside" / "ok.md"
