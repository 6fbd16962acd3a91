"""How ``loads`` treats the cyclic garbage collector: paused while building, left as found.

``loads`` (and the conversions, and ``find_problems``) pause the collector; after a big batch
they move what they built to the oldest generation (so that no collection walks every new model
right after the load). These tests pin the promises around that: the collector's switch and a
host's own frozen objects are left as they were, and a host's young cycles are still collected
by young collections when the calls are small.
"""

from __future__ import annotations

import gc
import sysconfig
import weakref
from collections.abc import Callable, Iterator

import pytest

from orion_messages import (
    Message,
    ToolCall,
    dumps,
    dumps_message,
    find_problems,
    loads,
    loads_message,
    to_openai,
)
from orion_messages._collector import BIG_BATCH
from orion_messages.wire import PAUSED_MESSAGE_SIZE

MESSAGES = [Message.user(f"msg-{k}", f"text {k}", timestamp=k) for k in range(50)]
DOCUMENT = dumps(MESSAGES)
# At least one tracked object a message (the model itself): a batch of BIG_BATCH or more.
BIG_DOCUMENT = dumps([Message.user(f"msg-{k}", "", timestamp=k) for k in range(BIG_BATCH)])


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.enable()
    yield
    if not was_enabled:
        gc.disable()


@pytest.mark.usefixtures("collector_enabled")
def test_loads_leaves_an_enabled_collector_enabled() -> None:
    loads(DOCUMENT)
    assert gc.isenabled()


def test_loads_leaves_a_disabled_collector_disabled() -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        loads(DOCUMENT)
        assert not gc.isenabled()
    finally:
        if was_enabled:
            gc.enable()


@pytest.mark.usefixtures("collector_enabled")
def test_loads_keeps_objects_the_host_froze_frozen() -> None:
    held = [["a host's object"]]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        loads(DOCUMENT)
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
    assert held


@pytest.mark.skipif(bool(sysconfig.get_config_var("Py_GIL_DISABLED")), reason="no generations to move")
@pytest.mark.usefixtures("collector_enabled")
def test_a_big_load_is_in_the_oldest_generation() -> None:
    assert gc.get_freeze_count() == 0
    messages = loads(BIG_DOCUMENT)
    oldest = {id(item) for item in gc.get_objects(generation=2)}
    assert all(id(message) in oldest for message in messages)


@pytest.mark.usefixtures("collector_enabled")
def test_loads_message_of_a_big_message_runs_no_collection() -> None:
    # One message whose arguments hold BIG_BATCH objects: built unpaused, the young generation
    # fills up many times over while it is read.
    call = ToolCall(id="call-1", name="f", arguments={"rows": [{"k": k} for k in range(BIG_BATCH)]})
    line = dumps_message(Message.assistant("msg-1", "", tool_calls=[call], timestamp=1))
    assert len(line) >= PAUSED_MESSAGE_SIZE
    collections: list[str] = []

    def record(phase: str, info: dict[str, int]) -> None:
        collections.append(phase)

    gc.collect()
    gc.callbacks.append(record)
    try:
        message = loads_message(line)
    finally:
        gc.callbacks.remove(record)
    assert collections == []
    assert message.tool_calls[0].arguments == call.arguments


@pytest.fixture
def default_thresholds() -> Iterator[None]:
    """Python's default collection thresholds: a library the tests import raises them."""
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    yield
    gc.set_threshold(*before)


class _Node:
    """A host's object in a reference cycle with itself."""

    def __init__(self) -> None:
        self.me = self


@pytest.mark.usefixtures("collector_enabled", "default_thresholds")
@pytest.mark.parametrize(
    "call",
    [lambda: loads(DOCUMENT), lambda: to_openai(MESSAGES), lambda: find_problems(MESSAGES)],
    ids=["loads", "to_openai", "find_problems"],
)
def test_small_calls_leave_a_hosts_young_cycles_to_young_collections(call: Callable[[], object]) -> None:
    # A host making one cycle a request and calling the library on a short history. Moving the
    # young objects to the oldest generation at every call left every cycle for a full
    # collection that never came (3,000 of 3,000 alive); young collections find most of them.
    alive = [0]

    def collected() -> None:
        alive[0] -= 1

    for _ in range(3000):
        node = _Node()
        alive[0] += 1
        weakref.finalize(node, collected)
        del node
        call()
    assert alive[0] < 3000 // 2
