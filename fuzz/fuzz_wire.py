"""An atheris (libFuzzer) harness for everything that reads untrusted bytes.

Each input is fed to ``loads`` (lenient and strict), ``loads_message``, ``read_jsonl`` (through a
scratch file) and ``parse_event``. The only exception any of them may raise is ``FormatError``;
anything else is a crash. Whatever loads must also write back (or be refused with
``FormatError``) and read back equal: nothing is lost on a round trip.

Run it (see ``fuzz/README.md``)::

    python fuzz/seed_corpus.py /tmp/fuzz-corpus
    python fuzz/fuzz_wire.py -dict=fuzz/json.dict -max_total_time=3600 /tmp/fuzz-corpus

or ``fuzz/run.sh`` for a long run that keeps going after a crash.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import warnings
from typing import Any

import atheris

with atheris.instrument_imports(include=["orion_messages"]):  # our code, not pydantic's
    from orion_messages import FormatError, dumps, dumps_message, loads, loads_message, read_jsonl
    from orion_messages.events import dump_event, parse_event

# One scratch file for read_jsonl, rewritten for every input (on tmpfs when there is one).
_SCRATCH_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
_SCRATCH = os.path.join(_SCRATCH_DIR, f"orion-fuzz-{os.getpid()}.jsonl")


def _round_trip(value: Any, dump: Any, load: Any) -> None:
    """``load(dump(value)) == value``, or ``dump`` refuses with FormatError."""
    try:
        written = dump(value)
    except FormatError:
        return
    again = load(written)
    if again != value:
        raise AssertionError(f"round trip changed the value:\n{value!r}\n{again!r}")


def test_one_input(data: bytes) -> None:
    """The libFuzzer entry point: one input through every reader."""
    for strict in (False, True):
        try:
            messages = loads(data, strict=strict)
        except FormatError:
            pass
        else:
            _round_trip(messages, dumps, loads)
    try:
        message = loads_message(data)
    except FormatError:
        pass
    else:
        _round_trip(message, dumps_message, loads_message)
    try:
        event = parse_event(data)
    except FormatError:
        pass
    else:
        _round_trip(event, dump_event, parse_event)
    try:
        text = data.decode("utf-8", "surrogatepass")  # str input, lone surrogates included
    except UnicodeDecodeError:
        pass
    else:
        with contextlib.suppress(FormatError):
            loads(text)
    with open(_SCRATCH, "wb") as handle:
        handle.write(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn last line warns; that is a documented result
        with contextlib.suppress(FormatError):
            read_jsonl(_SCRATCH)


def main() -> None:
    """Run libFuzzer over ``test_one_input`` with the command-line flags given."""
    atheris.Setup(sys.argv, test_one_input)
    try:
        atheris.Fuzz()
    finally:
        if os.path.exists(_SCRATCH):
            os.unlink(_SCRATCH)


if __name__ == "__main__":
    main()
