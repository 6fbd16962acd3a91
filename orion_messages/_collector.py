"""The cyclic garbage collector paused while a large batch of acyclic objects is built."""

from __future__ import annotations

import gc
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["BIG_BATCH", "collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large, acyclic batch of objects is built
    (models by a reader, dicts by a conversion, problems by a check).

    Each new object counts towards a collection and collections walk every live model, which
    makes a big load several times slower; the objects built hold no reference cycles. Also a
    decorator, for a function that builds such a batch.

    Re-enabling alone would leave a big batch in the youngest generation, and the next
    allocation would walk it all at once (about as long as the load itself, measured). So after
    a batch of ``BIG_BATCH`` objects or more, the tracked objects are moved to the oldest
    generation first, with ``gc.freeze`` then ``gc.unfreeze`` (constant time with the GIL); full
    collections still see them. Not after a smaller batch: the move takes the host's young
    objects along, and its cycles among them would wait for a full collection (a host calling a
    conversion on every request would otherwise never collect young cycles at all). Skipped too
    when the host froze objects itself (``unfreeze`` would undo that) or the build has no GIL
    (where freezing walks the whole heap).
    """
    was_enabled = gc.isenabled()
    young_before = gc.get_count()[0]
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            built = gc.get_count()[0] - young_before  # net new tracked objects
            if built >= BIG_BATCH and _FREEZE_IS_CHEAP and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


BIG_BATCH = 10_000
"""Tracked objects a paused block must add before they are moved to the oldest generation as it
ends (about 2,500 loaded messages): a young collection walks fewer in under a millisecond."""


# Free-threaded builds (3.13t and later) freeze by marking every object in the heap.
_FREEZE_IS_CHEAP = not sysconfig.get_config_var("Py_GIL_DISABLED")
