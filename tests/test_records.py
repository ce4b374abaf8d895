"""Records (``memrouter.core.records``) behave as frozen, slotted dataclasses do, for what memrouter uses."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memrouter.core.model import Filters, Hit, Match, Memory
from memrouter.core.records import FrozenRecordError, field, field_names, record, replace


@record
class Point:
    """A record with a default, a factory and a field left out of equality."""

    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False)

    def norm(self) -> int:
        return abs(self.x) + abs(self.y)


@dataclasses.dataclass(frozen=True, slots=True)
class Twin:
    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    note: str = dataclasses.field(default="", compare=False)


@record(frozen=False)
class Counter:
    name: str
    count: int = 0


values = st.builds(
    lambda x, y, note: (x, y, note), st.integers(-5, 5), st.integers(-5, 5), st.text(max_size=3)
)  # fmt: skip


@given(values, values)
def test_equality_and_hash_follow_the_compared_fields_as_a_dataclass_does(a: Any, b: Any) -> None:
    left, right = Point(a[0], a[1], note=a[2]), Point(b[0], b[1], note=b[2])
    twins = Twin(a[0], a[1], note=a[2]), Twin(b[0], b[1], note=b[2])
    assert (left == right) == (twins[0] == twins[1])
    if left == right:
        assert hash((left.x, left.y)) == hash((right.x, right.y))


def test_a_record_is_frozen_slotted_and_keeps_its_methods() -> None:
    point = Point(3, -4)
    assert point.norm() == 7 and point.tags == [] and point.tags is not Point(1).tags
    with pytest.raises(FrozenRecordError):
        point.x = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        point.other = 1  # type: ignore[attr-defined]
    assert not hasattr(point, "__dict__")
    assert repr(point) == "Point(x=3, y=-4, tags=[], note='')"
    assert Point.__doc__ and Point.__qualname__ == "Point"
    assert field_names(point) == field_names(Point) == ("x", "y", "tags", "note")


def test_replace_copies_with_changes_and_refuses_unknown_fields() -> None:
    point = Point(1, 2, ["a"])
    moved = replace(point, y=5)
    assert (moved.x, moved.y, moved.tags) == (1, 5, ["a"]) and point.y == 2
    with pytest.raises(TypeError):
        replace(point, z=1)
    assert replace(Twin(1), y=3) == Twin(1, 3)  # a dataclass goes to the standard library's replace


def test_records_pickle_and_copy() -> None:
    hit = Hit(name="a", title="A", score=1.0, source="canonical", channel="long_term", path="/p", hash="h",
              snippet="s", why=(Match("lexical", 1, 2.0, "x"),))  # fmt: skip
    for clone in (pickle.loads(pickle.dumps(hit)), copy.copy(hit), copy.deepcopy(hit)):
        assert clone == hit and clone is not hit
    filters = Filters(channels=("long_term",), now="2026-01-01T00:00:00Z")
    assert pickle.loads(pickle.dumps(filters)) == filters and hash(filters) == hash(replace(filters))


def test_a_mutable_record_takes_assignments_and_has_no_hash() -> None:
    counter = Counter("a")
    counter.count += 1
    assert counter == Counter("a", 1)
    with pytest.raises(TypeError):
        hash(counter)


def test_memory_equality_leaves_out_its_extra_fields() -> None:
    one = Memory(name="a", path="/a", text="x", hash="h", body="x", title="A", extra={"k": 1})
    assert one == replace(one, extra={"k": 2})


@record
class Many:
    a: int
    b: list[int] = field(default_factory=list)
    c: str = "c"


def test_the_generic_init_and_the_compiled_one_agree() -> None:
    """A record class starts with a generic ``__init__`` and compiles its own after ``COMPILE_AFTER`` records."""
    from memrouter.core import records

    for _ in range(records.COMPILE_AFTER + 3):
        made = Many(1, c="x")
        assert (made.a, made.b, made.c) == (1, [], "x") and made.b is not Many(2).b
        with pytest.raises(TypeError, match="missing"):
            Many()  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            Many(1, z=2)  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            Many(1, 2, 3, 4)  # type: ignore[call-arg]
        with pytest.raises(TypeError):
            Many(1, a=2)  # type: ignore[misc]
        assert Many(1) == Many(1, [], "c") and Many(1) != Many(2)
    assert Many.__init__ is not records._first_init  # compiled by now
