"""The async executor's selector: timers on time, I/O still at once, polling capped."""

from __future__ import annotations

import asyncio
import os
import selectors
import threading
import time

import pytest

from agenteval._executors import _async
from agenteval._executors._timers import POLL_BURST, POLL_SHARE, PromptSelector


def test_io_that_arrives_while_waiting_for_a_timer_is_reported() -> None:
    selector = PromptSelector()
    read, write = os.pipe()
    try:
        selector.register(read, selectors.EVENT_READ)
        threading.Timer(0.01, os.write, (write, b"x")).start()
        events = selector.select(2.0)
        assert [key.fd for key, _ in events] == [read]
        assert selector.select(0) == selector.select(0)  # looking does not wait or poll
    finally:
        selector.close()
        os.close(read)
        os.close(write)


def test_a_wait_that_ends_empty_ends_at_its_deadline_not_before() -> None:
    selector = PromptSelector()
    try:
        for timeout in (0.0004, 0.003, 0.02):
            started = time.monotonic()
            assert selector.select(timeout) == []
            assert time.monotonic() - started >= timeout
    finally:
        selector.close()


def test_polling_takes_at_most_a_share_of_the_time() -> None:
    selector = PromptSelector()
    try:
        cpu, wall = time.process_time(), time.monotonic()
        for _ in range(300):  # timers falling due every moment: all polling if uncapped
            selector.select(0.001)
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    finally:
        selector.close()
    assert wall >= 0.3
    # uncapped, polling would take the whole 0.3 s and more of CPU
    assert cpu < POLL_SHARE * wall + POLL_BURST + 0.1


def test_the_items_loop_uses_it_unless_the_user_chose_another_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = _async._new_loop()
    try:
        assert isinstance(loop._selector, PromptSelector)  # type: ignore[attr-defined]
    finally:
        loop.close()

    class Theirs(asyncio.DefaultEventLoopPolicy):
        pass

    monkeypatch.setattr(asyncio, "get_event_loop_policy", lambda: Theirs())
    loop = _async._new_loop()
    try:
        assert not isinstance(getattr(loop, "_selector", None), PromptSelector)
    finally:
        loop.close()
