from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from memrouter.core.lazylog import LazyLogger


def test_records_carry_the_name_level_and_callers_line(caplog: pytest.LogCaptureFixture) -> None:
    log = LazyLogger("memrouter.example")
    with caplog.at_level(logging.DEBUG, logger="memrouter.example"):
        log.debug("d %s", 1)
        log.info("i %s", 2)
        log.warning("w %s", 3)
        log.error("e %s", 4)
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("memrouter.example", "DEBUG", "d 1"),
        ("memrouter.example", "INFO", "i 2"),
        ("memrouter.example", "WARNING", "w 3"),
        ("memrouter.example", "ERROR", "e 4"),
    ]
    assert {r.funcName for r in caplog.records} == {"test_records_carry_the_name_level_and_callers_line"}
    assert {r.filename for r in caplog.records} == {"test_lazylog.py"}


def test_logging_is_imported_only_when_something_is_logged() -> None:
    code = (
        "import sys\n"
        "import memrouter.router, memrouter.ops.writes, memrouter.index.sqlite.db, memrouter.index.sqlite.dense, memrouter.store.watch\n"
        "print('logging' in sys.modules)\n"
        "memrouter.ops.writes.log.debug('x')\n"
        "print('logging' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]
