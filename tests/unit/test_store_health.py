"""The one rule of the A2A task store's availability (``StoreHealth``), over any order of the probe's
results and the calls' outcomes: the outage begins only with a failed probe, ends with a working probe
or a call started after it began, and each one is a WARNING, an INFO and a change told to subscribers,
in turn."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from e2a_grpc.a2a_server import store_outage
from e2a_grpc.a2a_server.store_outage import StoreHealth

#: What can happen to the task store: the probe's two results, a call that meets an outage, a call that
#: works having started now, and one that works having started before anything happened.
EVENTS = ("probe fails", "probe answers", "call fails", "call works", "old call works")


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.levels: list[int] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.levels.append(record.levelno)


@contextlib.contextmanager
def availability_lines() -> Iterator[list[int]]:
    """The levels of the availability lines (INFO and above) logged while the block runs."""
    handler = _Lines()
    store_outage.log.addHandler(handler)
    level = store_outage.log.level
    store_outage.log.setLevel(logging.INFO)
    try:
        yield handler.levels
    finally:
        store_outage.log.removeHandler(handler)
        store_outage.log.setLevel(level)


@given(st.lists(st.sampled_from(EVENTS), max_size=40))
def test_outages_begin_with_the_probe_and_each_is_one_pair_of_lines_and_changes(events: list[str]) -> None:
    health = StoreHealth()
    changes: list[bool] = []
    health.on_change(changes.append)
    long_ago = time.monotonic() - 1
    with availability_lines() as levels:
        for event in events:
            was_available = health.available
            if event == "probe fails":
                health.probed("OSError: refused")
                assert not health.available
            elif event == "probe answers":
                health.probed(None)
                assert health.available
            elif event == "call fails":
                assert health.outage(ConnectionResetError(104, "reset"))
                assert health.available == was_available  # a call alone never begins an outage
                assert health.check_wanted.is_set() or not was_available
                health.check_wanted.clear()
            elif event == "call works":
                health.worked(time.monotonic())
                assert health.available
            else:
                health.worked(long_ago)
                assert health.available == was_available  # under way before: says nothing
    assert changes == [index % 2 == 1 for index in range(len(changes))]  # False, True, False, ...
    assert levels == [logging.WARNING if index % 2 == 0 else logging.INFO for index in range(len(levels))]
    assert len(levels) == len(changes)
    assert health.available == (not changes or changes[-1])
