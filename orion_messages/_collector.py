"""The cyclic garbage collector paused while a large batch of acyclic objects is built."""

from __future__ import annotations

import gc
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large, acyclic batch of objects is built
    (models by a reader, dicts by a conversion, problems by a check).

    Each new object counts towards a collection and collections walk every live model, which
    makes a big load several times slower; the objects built hold no reference cycles. Also a
    decorator, for a function that builds such a batch.

    Re-enabling alone would leave every new model in the youngest generation, and the next
    allocation would walk them all at once (about as long as the load itself, measured). So the
    tracked objects are moved to the oldest generation first, with ``gc.freeze`` then
    ``gc.unfreeze`` (constant time with the GIL); full collections still see them. Skipped when
    the host froze objects itself (``unfreeze`` would undo that) or the build has no GIL (where
    freezing walks the whole heap).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if _FREEZE_IS_CHEAP and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


# Free-threaded builds (3.13t and later) freeze by marking every object in the heap.
_FREEZE_IS_CHEAP = not sysconfig.get_config_var("Py_GIL_DISABLED")
