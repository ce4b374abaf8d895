"""Background work waits until the server has answered and gone quiet (``memrouter.mcp.activity``)."""

from __future__ import annotations

import threading

from memrouter.mcp.activity import Activity


def test_quiet_comes_only_after_an_answer_and_a_pause() -> None:
    activity = Activity()
    done = threading.Event()

    def wait() -> None:
        if activity.wait_for_quiet(quiet=0.05, first_answer=60.0):
            done.set()

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert not done.wait(0.2)  # nothing answered yet: no background work however quiet it is
    activity.arrived()
    assert not done.wait(0.2)  # a request in flight
    activity.answered()
    assert done.wait(5)
    waiter.join(5)


def test_with_no_request_at_all_the_wait_ends_on_its_own() -> None:
    assert Activity().wait_for_quiet(quiet=0.01, first_answer=0.05)


def test_a_closing_server_stops_the_wait() -> None:
    stop = threading.Event()
    stop.set()
    assert Activity().wait_for_quiet(quiet=0.01, first_answer=60.0, stop=stop) is False


def test_a_server_that_never_goes_quiet_gets_its_background_work_all_the_same() -> None:
    activity = Activity()
    activity.arrived()
    activity.answered()
    activity.arrived()  # a request in flight for good
    assert activity.wait_for_quiet(quiet=60.0, first_answer=60.0, most=0.05)
