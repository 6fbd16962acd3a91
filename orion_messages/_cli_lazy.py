"""Loading the command line's modules: each when a command first needs it, Ctrl-C held back meanwhile.

Most of the package's modules build pydantic models as they load, tenths of a second in all. A
command loads only what it uses (``LazyModule``): ``--help``, or ``validate`` and ``stats`` of a
file, never load the store (asyncio, sqlite3), the conversions, the schemas or the event models.

Ctrl-C raised inside pydantic-core while it builds a model comes out wrapped in its
``SchemaError``, a traceback; held back while a module loads (``interrupts_held``), it arrives
once the import is over, as ``KeyboardInterrupt`` (the call that stops holding it back raises
it), so the command ends as Ctrl-C ends it at any other time.
"""

from __future__ import annotations

import importlib
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["LazyModule", "interrupts_held"]


@contextmanager
def interrupts_held() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back while the block runs, where the platform can (not on Windows)."""
    holding = hasattr(signal, "pthread_sigmask")
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if holding else set()
    try:
        yield
    finally:
        if holding:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class LazyModule:
    """A module of this package, imported when one of its names is first read.

    Where it is used, the module is also imported under ``TYPE_CHECKING``, so type checkers
    (and tests/test_layers.py) see the import itself.
    """

    def __init__(self, name: str) -> None:
        self._name = f"{__package__}.{name}"

    def __getattr__(self, attribute: str) -> Any:
        module = sys.modules.get(self._name)
        if module is None:
            with interrupts_held():
                module = importlib.import_module(self._name)
        return getattr(module, attribute)
