"""Mutation fuzzing of the valid golden fixtures: whatever the bytes, readers raise FormatError only.

Hypothesis takes a real golden file (conversations from ``fixtures/v0.7``, ``v0.8``, ``newer`` and
``own``; agent event streams from ``fixtures/events``), applies a few byte flips, insertions
(random bytes or JSON tokens), deletions, duplications and a truncation, and feeds the result to
``loads`` (lenient and strict, bytes and str), ``loads_message``, ``read_jsonl`` and
``parse_event``. The property, from the issue: nothing but ``FormatError`` is ever raised, and
whatever loads writes back and reads back equal (or ``dumps`` refuses it with ``FormatError``).
The long-running counterpart is the atheris harness in ``fuzz/``.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orion_messages import FormatError, dumps, dumps_message, loads, loads_message, read_jsonl

from .conftest import FIXTURES

try:
    from orion_messages.events import dump_event, parse_event
except ImportError:  # pragma: no cover - events are being written alongside
    dump_event = parse_event = None  # type: ignore[assignment]

# A built conversation, in case the golden folders are ever empty.
BUILT = (
    b'[{"id":"msg-1","role":"user","content":"What is 2 + 3?","timestamp":1781512345678},'
    b'{"id":"msg-2","role":"assistant","content":"...","timestamp":1781512346001,'
    b'"tool_calls":[{"id":"msg-2-call-1","name":"add","arguments":{"a":2,"b":3.5,"c":[null,true]}}]},'
    b'{"id":"msg-3","role":"tool_result","content":"5","timestamp":1781512346010,"tool_result":'
    b'{"tool_call_id":"msg-2-call-1","tool_name":"add","content":"5","is_error":false,"pending":true}},'
    b'{"id":"msg-4","role":"assistant","content":"The sum is 5.","timestamp":1781512346500,'
    b'"token_count":4,"pinned":true,"x-new":{"k":"\\u00e9\\ud83d\\ude00"}}]'
)


def _golden(folders: tuple[str, ...], pattern: str) -> list[bytes]:
    files: list[bytes] = []
    for folder in folders:
        files.extend(p.read_bytes() for p in sorted((FIXTURES / folder).glob(pattern)) if p.is_file())
    return files


SEEDS = [*_golden(("v0.7", "v0.8", "newer", "own"), "*.json*"), BUILT]
# The old tool-loop stream (turn_end.tool_results as messages) is refused since issue 14.
EVENT_SEEDS = [seed for seed in _golden(("events",), "*.jsonl") if b'"tool_results":[{"id"' not in seed]

TOKENS = [
    b"[", b"]", b"{", b"}", b",", b":", b'"', b"\\", b"null", b"true", b"NaN", b"-Infinity", b"1e400",
    b"-0", b"9223372036854775808", b"4294967296", b"\\ud800", b"\\udc00", b"\\u0000", b"\xff", b"\xed\xa0\x80",
    b"\xef\xbb\xbf", b"\n", b"\r\n", b" ", b'"id":', b'"role":"User"', b'"timestamp":1.5', b'"pinned":null',
    b'"tool_calls":{}', b'"type":"warning"', b"[" * 300, b"]" * 300,
]  # fmt: skip

_mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 2**16), st.integers(1, 255)),
    st.tuples(st.just("insert"), st.integers(0, 2**16), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("token"), st.integers(0, 2**16), st.sampled_from(TOKENS)),
    st.tuples(st.just("delete"), st.integers(0, 2**16), st.integers(1, 16)),
    st.tuples(st.just("duplicate"), st.integers(0, 2**16), st.integers(1, 64)),
)


def _mutate(seed: bytes, mutations: list[tuple[str, int, Any]], cut: int | None) -> bytes:
    data = bytearray(seed)
    for kind, where, what in mutations:
        at = where % (len(data) + 1)
        if kind == "flip" and data:
            data[at % len(data)] ^= what
        elif kind in ("insert", "token"):
            data[at:at] = what
        elif kind == "delete":
            del data[at : at + what]
        elif kind == "duplicate":
            data[at:at] = data[at : at + what]
    if cut is not None:
        del data[cut % (len(data) + 1) :]
    return bytes(data)


mutated = st.builds(
    _mutate,
    st.sampled_from(SEEDS),
    st.lists(_mutation, min_size=1, max_size=4),
    st.none() | st.integers(0, 2**16),
)


def _only_format_errors(read: Callable[[], Any]) -> Any:
    """Run ``read``; return its result, or None when it raised FormatError."""
    try:
        return read()
    except FormatError as error:
        problems = error.problems
    assert problems, "a FormatError names at least one problem"
    return None


def _round_trips(value: Any, dump: Callable[[Any], bytes], load: Callable[[bytes], Any]) -> None:
    try:
        written = dump(value)
    except FormatError:
        return  # refusing is allowed; writing something that does not read back is not
    assert load(written) == value


@settings(max_examples=300, deadline=None)
@given(data=mutated)
def test_mutated_conversations_give_format_error_or_round_trip(data: bytes) -> None:
    for strict in (False, True):
        messages = _only_format_errors(lambda strict=strict: loads(data, strict=strict))  # type: ignore[misc]
        if messages is not None:
            _round_trips(messages, dumps, loads)
    try:
        text = data.decode("utf-8", "surrogatepass")  # lone surrogates included
    except UnicodeDecodeError:
        pass
    else:
        _only_format_errors(lambda: loads(text))
    message = _only_format_errors(lambda: loads_message(data))
    if message is not None:
        _round_trips(message, dumps_message, loads_message)


@settings(max_examples=150, deadline=None)
@given(data=mutated)
def test_mutated_logs_give_format_error_or_messages(data: bytes) -> None:
    # A conversation file read as JSON Lines is hostile too: one line, an array, not a message.
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        path.write_bytes(data.replace(b"},{", b"}\n{"))  # some whole records to go with the damage
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a torn last line warns: a documented result
            _only_format_errors(lambda: read_jsonl(path))


EVENT_LINES = [line for seed in EVENT_SEEDS for line in seed.splitlines() if line.strip()]


@pytest.mark.skipif(parse_event is None or not EVENT_LINES, reason="no events module or event fixtures yet")
@settings(max_examples=200, deadline=None)
@given(
    data=st.builds(
        _mutate,
        st.sampled_from(EVENT_LINES or [b"{}"]),
        st.lists(_mutation, min_size=1, max_size=4),
        st.none() | st.integers(0, 2**16),
    )
)
def test_mutated_events_give_format_error_or_round_trip(data: bytes) -> None:
    event = _only_format_errors(lambda: parse_event(data))
    if event is not None:
        _round_trips(event, dump_event, parse_event)


def test_the_seeds_are_valid_so_that_mutations_start_from_real_files() -> None:
    assert len(SEEDS) > 1
    for seed in SEEDS:
        if seed.lstrip().startswith(b"["):
            loads(seed)
        else:
            for line in seed.splitlines():
                if line.strip():
                    loads_message(line)
    if parse_event is not None:
        for line in EVENT_LINES:
            parse_event(line)
