"""How ``loads`` treats the cyclic garbage collector: paused while building, left as found.

``loads`` pauses the collector and moves what it built to the oldest generation (so that no
collection walks every new model right after the load); these tests pin the promises around
that: the collector's switch and a host's own frozen objects are left as they were.
"""

from __future__ import annotations

import gc
import sysconfig
from collections.abc import Iterator

import pytest

from orion_messages import Message, dumps, loads

DOCUMENT = dumps([Message.user(f"msg-{k}", f"text {k}", timestamp=k) for k in range(50)])


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
def test_loaded_messages_are_in_the_oldest_generation() -> None:
    assert gc.get_freeze_count() == 0
    messages = loads(DOCUMENT)
    oldest = {id(item) for item in gc.get_objects(generation=2)}
    assert all(id(message) in oldest for message in messages)
    assert loads(DOCUMENT) == messages
