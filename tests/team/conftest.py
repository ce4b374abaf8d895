"""A team channel on a temporary folder, with a clock the test moves."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memrouter.team import ManualClock, Team


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def team(tmp_path: Path, clock: ManualClock) -> Iterator[Team]:
    with Team.open(tmp_path / ".memrouter", clock=clock) as opened:
        yield opened
