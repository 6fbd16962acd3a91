"""Malformed and hostile input: every reader gives ``FormatError`` with a clear location, or a
documented result, and never anything else.

The corpus is generated here from hand-written valid messages and the reference page's key
table (``/work/shared/reference/orion-core-format.md``): each required key removed, each key
given each JSON type it must not have, numbers just out of range, roles in the wrong case,
documents cut at every offset, trailing data, a BOM, invalid UTF-8, lone surrogates, NaN and
Infinity, duplicate keys, deep nesting, and JSON Lines logs with torn and corrupt lines. The big
inputs (a 200 MB string, a million messages) run in a child process under an address-space limit.
The expected locations and wordings are spelled out by hand from the page, never taken from
the code under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from copy import deepcopy
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    FormatError,
    NotALogError,
    Problem,
    append_jsonl,
    dumps,
    loads,
    loads_message,
    read_jsonl,
)
from orion_messages.storage import TornLineWarning

from .conftest import FIXTURES

try:
    from orion_messages.events import parse_event
except ImportError:  # pragma: no cover - events are being written alongside
    parse_event = None  # type: ignore[assignment]

# --- Hand-written valid messages: one of each shape the page describes. -------------------------

USER: dict[str, Any] = {
    "id": "msg-1",
    "role": "user",
    "content": "What is 2 + 3?",
    "timestamp": 1781512345678,
}
ASSISTANT: dict[str, Any] = {
    "id": "msg-2",
    "role": "assistant",
    "content": "calling add",
    "timestamp": 1781512346001,
    "tool_calls": [{"id": "msg-2-call-1", "name": "add", "arguments": {"a": 2, "b": 3}}],
    "token_count": 7,
    "pinned": True,
}
RESULT: dict[str, Any] = {
    "id": "msg-3",
    "role": "tool_result",
    "content": "5",
    "timestamp": 1781512346010,
    "tool_result": {
        "tool_call_id": "msg-2-call-1",
        "tool_name": "add",
        "content": "5",
        "is_error": False,
        "pending": True,
    },
}
CONVERSATION = [USER, ASSISTANT, RESULT]


def _compact(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _problem(call: Callable[[], object]) -> Problem:
    """Run ``call``; it must raise FormatError (nothing else); return its first problem."""
    with pytest.raises(FormatError) as caught:
        call()
    error = caught.value
    assert error.problems, "a FormatError always names at least one problem"
    text = str(error)
    assert "pydantic" not in text
    assert "Traceback" not in text
    return error.problems[0]


# --- The key table of the reference page. --------------------------------------------------------
# (path inside the message, which message holds it, JSON kind, required on read)
KEYS: list[tuple[tuple[str | int, ...], dict[str, Any], str, bool]] = [
    (("id",), USER, "string", True),
    (("role",), USER, "role", True),
    (("content",), USER, "string", True),
    (("timestamp",), USER, "i64", True),
    (("tool_calls",), ASSISTANT, "array", False),
    (("token_count",), ASSISTANT, "u32?", False),
    (("pinned",), ASSISTANT, "bool", False),
    (("tool_result",), RESULT, "object?", False),
    (("tool_calls", 0, "id"), ASSISTANT, "string", True),
    (("tool_calls", 0, "name"), ASSISTANT, "string", True),
    (("tool_calls", 0, "arguments"), ASSISTANT, "any", True),
    (("tool_result", "tool_call_id"), RESULT, "string", True),
    (("tool_result", "tool_name"), RESULT, "string", True),
    (("tool_result", "content"), RESULT, "string", True),
    (("tool_result", "is_error"), RESULT, "bool", True),
    (("tool_result", "pending"), RESULT, "bool", False),
]

# One value of each JSON type, and how the error message names it when found.
JSON_VALUES: dict[str, tuple[Any, str]] = {
    "null": (None, "null"),
    "true": (True, "true"),
    "integer": (7, "the number 7"),
    "float": (1.5, "the number 1.5"),
    "string": ("7", 'the string "7"'),
    "array": ([], "an array"),
    "object": ({}, "an object"),
}

# Which JSON types each kind accepts, and how the error says what was expected.
ACCEPTS: dict[str, tuple[set[str], str]] = {
    "string": ({"string"}, "expected a string"),
    "role": (set(), "expected a role"),  # only the five exact strings; none of the samples
    "i64": ({"integer"}, "expected an integer"),
    "u32?": ({"integer", "null"}, "expected an integer"),
    "bool": ({"true"}, "expected a boolean"),
    "array": ({"array"}, "expected an array"),
    "object?": ({"object", "null"}, "expected an object"),
    "any": (set(JSON_VALUES), ""),
}


def _location(path: tuple[str | int, ...], prefix: str = "") -> str:
    text = prefix
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _set(message: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    changed = deepcopy(message)
    target: Any = changed
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return changed


def _remove(message: dict[str, Any], path: tuple[str | int, ...]) -> dict[str, Any]:
    changed = deepcopy(message)
    target: Any = changed
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return changed


def _in_conversation(message: dict[str, Any]) -> bytes:
    """The message at index 1 of a three-message conversation."""
    return _compact([USER, message, RESULT])


REQUIRED = [(path, holder) for path, holder, _, required in KEYS if required]


@pytest.mark.parametrize(("path", "holder"), REQUIRED, ids=[_location(p) for p, _ in REQUIRED])
def test_each_required_key_missing_is_named(path: tuple[str | int, ...], holder: dict[str, Any]) -> None:
    broken = _remove(holder, path)
    problem = _problem(lambda: loads(_in_conversation(broken)))
    assert problem.location == _location(path, "[1]")
    assert "missing" in problem.message
    assert problem.line is None  # a problem of content, not of JSON syntax
    problem = _problem(lambda: loads_message(_compact(broken)))
    assert problem.location == _location(path)


WRONG_TYPES = [
    (path, holder, kind, json_type)
    for path, holder, kind, _ in KEYS
    for json_type in JSON_VALUES
    if json_type not in ACCEPTS[kind][0]
]


@pytest.mark.parametrize(
    ("path", "holder", "kind", "json_type"),
    WRONG_TYPES,
    ids=[f"{_location(p)}={t}" for p, _, _, t in WRONG_TYPES],
)
def test_each_key_with_each_wrong_json_type_is_named(
    path: tuple[str | int, ...], holder: dict[str, Any], kind: str, json_type: str
) -> None:
    value, found = JSON_VALUES[json_type]
    broken = _set(holder, path, value)
    problem = _problem(lambda: loads(_in_conversation(broken)))
    assert problem.location == _location(path, "[1]")
    assert problem.message.startswith(ACCEPTS[kind][1])
    assert problem.message.endswith(f"found {found}")


@pytest.mark.parametrize(
    ("path", "holder", "value"),
    [
        (("timestamp",), USER, 2**63),
        (("timestamp",), USER, -(2**63) - 1),
        (("timestamp",), USER, 10**30),
        (("token_count",), ASSISTANT, 2**32),
        (("token_count",), ASSISTANT, -1),
        (("token_count",), ASSISTANT, -(2**63)),
    ],
    ids=["ts=2^63", "ts=-2^63-1", "ts=1e30-int", "tc=2^32", "tc=-1", "tc=-2^63"],
)
def test_out_of_range_integers_are_named(path: tuple[str, ...], holder: dict[str, Any], value: int) -> None:
    problem = _problem(lambda: loads(_in_conversation(_set(holder, path, value))))
    assert problem.location == _location(path, "[1]")
    low, high = (-(2**63), 2**63 - 1) if path == ("timestamp",) else (0, 2**32 - 1)
    assert problem.message == f"expected an integer from {low} to {high}, found the number {value}"


@pytest.mark.parametrize(
    "value",
    [2**63 - 1, -(2**63), 0],
    ids=["i64-max", "i64-min", "zero"],
)
def test_timestamp_range_ends_are_accepted(value: int) -> None:
    assert loads(_in_conversation(_set(USER, ("timestamp",), value)))[1].timestamp == value


@pytest.mark.parametrize("digits", [400, 4400, 100_000])
def test_an_integer_with_very_many_digits_is_a_format_error(digits: int) -> None:
    # Python refuses to turn more than 4300 digits into an int; that must not escape as ValueError.
    document = _in_conversation(ASSISTANT).replace(b'"a":2', b'"a":' + b"9" * digits)
    if digits < 4300:  # serde_json refuses an integer whose double is infinite (from 309 digits)
        problem = _problem(lambda: loads(document))
        assert problem.location == "[1].tool_calls[0].arguments.a"
        assert "an integer that serde_json reads" in problem.message
    else:
        problem = _problem(lambda: loads(document))
        assert problem.message.startswith("malformed JSON")
        assert problem.line == 1


@pytest.mark.parametrize(
    "role",
    [
        "User",
        "USER",
        "Assistant",
        "SYSTEM",
        "Tool_Result",
        "tool",
        "toolResult",
        " user",
        "user ",
        "",
        "usér",
    ],
)
def test_roles_in_the_wrong_case_or_spelling_are_named(role: str) -> None:
    problem = _problem(lambda: loads(_in_conversation(_set(USER, ("role",), role))))
    assert problem.location == "[1].role"
    assert problem.message.startswith("expected a role")
    assert json.dumps(role, ensure_ascii=False) in problem.message


# --- Documents cut short, and data after the end. ------------------------------------------------

COMPACT = _compact(CONVERSATION)
PRETTY = json.dumps(CONVERSATION, indent=2).encode()


@pytest.mark.parametrize("document", [COMPACT, PRETTY], ids=["compact", "pretty"])
def test_a_document_cut_at_any_offset_is_malformed_json_with_a_position(document: bytes) -> None:
    for end in range(len(document)):
        prefix = document[:end]
        with pytest.raises(ValueError, match=r".*"):  # the independent oracle: not JSON at all
            json.loads(prefix)
        problem = _problem(lambda prefix=prefix: loads(prefix))  # type: ignore[misc]
        assert problem.message.startswith("malformed JSON"), (end, problem)
        assert problem.line is not None
        assert problem.column is not None
        assert 1 <= problem.line <= prefix.count(b"\n") + 1, (end, problem)


@pytest.mark.parametrize(
    ("tail", "column"),
    [(b"x", 3), (b"[]", 3), (b" {}", 4), (b"\x00", 3), (b",", 3), (b"]", 3), (b"\n[]", None)],
    ids=["letter", "second-array", "object", "nul", "comma", "bracket", "next-line"],
)
def test_data_after_the_document_is_refused_where_it_starts(tail: bytes, column: int | None) -> None:
    problem = _problem(lambda: loads(b"[]" + tail))
    assert problem.message.startswith("malformed JSON")
    if column is None:
        assert (problem.line, problem.column) == (2, 1)
    else:
        assert (problem.line, problem.column) == (1, column)


def test_trailing_whitespace_is_accepted() -> None:
    # Documented: whitespace after the array is fine, as for serde_json.
    assert loads(COMPACT + b" \n\t\r\n") == loads(COMPACT)


# --- Encodings. --------------------------------------------------------------------------------


def test_a_byte_order_mark_is_refused_at_line_1_column_1() -> None:
    # Documented: serde_json refuses a BOM, so loads does too (strip it yourself if you must).
    for reader in (loads, loads_message):
        problem = _problem(lambda reader=reader: reader(b"\xef\xbb\xbf" + COMPACT))  # type: ignore[misc]
        assert problem.message.startswith("malformed JSON")
        assert (problem.line, problem.column) == (1, 1)


@pytest.mark.parametrize(
    "bad",
    [
        b"\xff",
        b"\xfe",
        b"\xc0\xaf",
        b"\xe2\x82",
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\x80",
        b"\xf8\x88\x80\x80\x80",
    ],
    ids=[
        "ff",
        "fe",
        "overlong-slash",
        "cut-3-byte",
        "encoded-surrogate",
        "above-10ffff",
        "lone-continuation",
        "5-byte",
    ],
)
def test_invalid_utf8_inside_a_string_is_refused_with_a_position(bad: bytes) -> None:
    document = COMPACT.replace(b"What is", b"What " + bad + b" is")
    with pytest.raises(UnicodeDecodeError):
        document.decode("utf-8")  # the oracle: not UTF-8
    problem = _problem(lambda: loads(document))
    assert problem.message.startswith("malformed JSON")
    assert problem.line == 1
    # serde_json checks a string's UTF-8 when the string ends: it reports the closing quote.
    closing_quote = document.index(b'"', document.index(bad))
    assert problem.column == closing_quote + 1


@pytest.mark.parametrize(
    "escape",
    [rb"\ud800", rb"\udc00", rb"\udbff", rb"\ud800\u0041", rb"\udc00\ud800", rb"\ud800x"],
    ids=["high", "low", "last-high", "high-then-A", "low-then-high", "high-then-text"],
)
def test_lone_surrogate_escapes_are_refused(escape: bytes) -> None:
    document = COMPACT.replace(b"What is", b"What " + escape + b" is")
    problem = _problem(lambda: loads(document))
    assert problem.message.startswith("malformed JSON")
    assert problem.line == 1
    problem = _problem(lambda: loads(document.decode()))  # as a str too
    assert problem.message.startswith("malformed JSON")


def test_a_paired_surrogate_escape_is_one_character() -> None:
    document = COMPACT.replace(b"What is", rb"What \ud83d\ude00 is")
    assert loads(document)[0].content == "What \U0001f600 is 2 + 3?"


@pytest.mark.parametrize("where", ["string", "key"])
def test_a_lone_surrogate_in_str_input_is_refused(where: str) -> None:
    text = COMPACT.decode()
    text = (
        text.replace("What is", "What \ud800 is")
        if where == "string"
        else text.replace('"a":2', '"\udc00":2')
    )
    problem = _problem(lambda: loads(text))
    assert "surrogate" in problem.message


# --- NaN and Infinity. -------------------------------------------------------------------------

NON_FINITE_SPOTS = {
    "timestamp": lambda lit: _set(USER, ("timestamp",), "@"),
    "token_count": lambda lit: _set(ASSISTANT, ("token_count",), "@"),
    "arguments": lambda lit: _set(ASSISTANT, ("tool_calls", 0, "arguments"), "@"),
    "nested-arguments": lambda lit: _set(ASSISTANT, ("tool_calls", 0, "arguments"), {"x": [1, {"y": "@"}]}),
    "unknown-key": lambda lit: {**USER, "extra": "@"},
    "unknown-key-in-tool-call": lambda lit: _set(ASSISTANT, ("tool_calls", 0, "extra"), "@"),
}


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("spot", sorted(NON_FINITE_SPOTS))
def test_nan_and_infinity_are_refused_where_they_stand(spot: str, literal: str) -> None:
    document = _in_conversation(NON_FINITE_SPOTS[spot](literal)).replace(b'"@"', literal.encode())
    problem = _problem(lambda: loads(document))
    assert literal.lstrip("-") in problem.message
    assert problem.line == 1
    # serde_json reads a minus sign as a number's start and fails at the letter after it.
    assert problem.column == document.index(literal.encode()) + 1 + literal.startswith("-")


def test_nan_and_infinity_inside_strings_are_plain_text() -> None:
    document = _in_conversation(_set(USER, ("content",), 'NaN "Infinity" -Infinity'))
    assert loads(document)[1].content == 'NaN "Infinity" -Infinity'


@pytest.mark.parametrize("number", ["1e400", "-1e400", "1.7976931348623159e308"])
def test_a_number_too_large_for_a_double_is_refused(number: str) -> None:
    document = _in_conversation(ASSISTANT).replace(b'"a":2', b'"a":' + number.encode())
    problem = _problem(lambda: loads(document))
    assert problem.location == "[1].tool_calls[0].arguments.a"
    assert "finite" in problem.message


# --- Duplicate keys: documented as last-wins; strict=True refuses a known one, as serde. ---------


@pytest.mark.parametrize(
    ("document", "where"),
    [
        (b'[{"id":"a","id":"b","role":"user","content":"x","timestamp":1}]', "[0]"),
        (
            b'[{"id":"b","role":"assistant","content":"x","timestamp":1,'
            b'"tool_calls":[{"id":"c","name":"n","arguments":{"k":1,"k":2}}]}]',
            None,  # a map in serde: the last value wins
        ),
        (b'[{"id":"b","role":"user","content":"x","timestamp":1,"z":1,"z":2}]', None),  # skipped by serde
    ],
    ids=["known-key", "in-arguments", "unknown-key"],
)
def test_duplicate_keys_last_wins_and_strict_refuses_a_known_one(document: bytes, where: str | None) -> None:
    expected = json.loads(document)  # the stdlib also keeps the last value
    assert [m.model_dump(mode="json", exclude_defaults=True) for m in loads(document)] == expected
    if where is None:
        assert [
            m.model_dump(mode="json", exclude_defaults=True) for m in loads(document, strict=True)
        ] == expected
        return
    problem = _problem(lambda: loads(document, strict=True))
    assert problem.location == where
    assert "duplicate key" in problem.message


# --- Deep nesting: never a RecursionError. ------------------------------------------------------


def _nested(depth: int, inner: bytes = b"") -> bytes:
    return b"[" * depth + inner + b"]" * depth


def _with_arguments(arguments: bytes) -> bytes:
    return (
        b'[{"id":"a","role":"assistant","content":"x","timestamp":1,"tool_calls":[{"id":"c","name":"n","arguments":'
        + arguments
        + b"}]}]"
    )


READERS: dict[str, Callable[[bytes], object]] = {
    "loads": loads,
    "loads-strict": lambda data: loads(data, strict=True),
    "loads-str": lambda data: loads(data.decode()),
    "loads_message": lambda data: loads_message(data[1:-1]),
}


@pytest.mark.parametrize("depth", [10, 100])
def test_moderately_nested_arguments_load_whole(depth: int) -> None:
    document = _with_arguments(_nested(depth, b"1"))
    arguments = loads(document)[0].tool_calls[0].arguments
    assert arguments == json.loads(_nested(depth, b"1"))


@pytest.mark.parametrize(
    "inner", [b"", b"NaN", b'1,"k"', b'{"a":1,"a":2}'], ids=["empty", "nan", "values", "dup-keys"]
)
@pytest.mark.parametrize("depth", [10_000, 1_000_000])
@pytest.mark.parametrize("reader", sorted(READERS))
def test_very_deep_nesting_is_a_format_error_not_a_recursion_error(
    reader: str, depth: int, inner: bytes
) -> None:
    document = _with_arguments(_nested(depth, inner))
    problem = _problem(lambda: READERS[reader](document))
    assert problem.message == "malformed JSON: nested too deeply"
    assert problem.line == 1
    assert problem.column is not None
    assert problem.column < 1000


@pytest.mark.parametrize("depth", [1_000, 1_000_000])
def test_deep_nesting_at_the_top_level_is_a_format_error(depth: int) -> None:
    for document in (_nested(depth), b'{"a":' * depth + b"1" + b"}" * depth, b"[" * depth):
        problem = _problem(lambda document=document: loads(document))  # type: ignore[misc]
        assert problem.message == "malformed JSON: nested too deeply"


@pytest.mark.skipif(parse_event is None, reason="orion_messages.events not there yet")
@pytest.mark.parametrize("depth", [10_000, 1_000_000])
@pytest.mark.parametrize("inner", [b"", b"NaN"])
def test_very_deep_event_arguments_are_a_format_error(depth: int, inner: bytes) -> None:
    line = (
        b'{"type":"tool_exec_start","tool_call_id":"c","tool_name":"n","args":' + _nested(depth, inner) + b"}"
    )
    problem = _problem(lambda: parse_event(line))
    assert problem.message.startswith("nested too deeply: serde_json reads 127 levels in all")
    # serde_json: "recursion limit exceeded" at the 127th "[" (level 128, with the event's object)
    assert (problem.line, problem.column) == (1, line.index(b"[") + 127)


# --- JSON Lines: torn tails and corrupt lines. ---------------------------------------------------

LOG_LINES = [_compact(message) for message in CONVERSATION]
LOG = b"".join(line + b"\n" for line in LOG_LINES)


def test_a_log_cut_at_any_offset_reads_back_every_complete_record(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    ends = [LOG.index(b"\n", LOG.index(line)) for line in LOG_LINES]  # offset of each newline
    for cut in range(len(LOG) + 1):
        path.write_bytes(LOG[:cut])
        # Complete records: those whose last byte is inside the cut (a record that only lost its
        # newline is whole, so it counts too).
        whole = sum(1 for end in ends if end <= cut)
        torn = cut not in (0, *ends, *(end + 1 for end in ends))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            messages = read_jsonl(path)
        assert [m.id for m in messages] == [m["id"] for m in CONVERSATION[:whole]], cut
        torn_warnings = [w for w in caught if issubclass(w.category, TornLineWarning)]
        assert len(torn_warnings) == (1 if torn else 0), cut
        if torn:
            assert f"{path}:{whole + 1}:" in str(torn_warnings[0].message)


@pytest.mark.parametrize(
    ("line", "location", "says"),
    [
        (b"{not json", "", "malformed JSON"),
        (b'{"id":"x","role":"User","content":"x","timestamp":1}', "role", "expected a role"),
        (b'{"id":"x","role":"user","content":"x","timestamp":NaN}', "", "NaN"),
        (b"[1,2,3]", "", "expected an object"),
        (b'{"id":"x","role":"user","content":"x","timestamp":1} {}', "", "malformed JSON"),
        (b"\xff\xfe", "", "malformed JSON"),
        (_nested(100_000), "", "nested too deeply"),
    ],
    ids=["not-json", "bad-role", "nan", "array", "two-values", "bad-utf8", "deep"],
)
def test_a_corrupt_middle_line_is_named_by_line_number(
    tmp_path: Path, line: bytes, location: str, says: str
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(LOG_LINES[0] + b"\n" + line + b"\n" + LOG_LINES[2] + b"\n")
    with pytest.raises(FormatError) as caught:
        read_jsonl(path)
    problem = caught.value.problems[0]
    assert problem.line == 2
    assert problem.location == location
    assert says in problem.message
    assert caught.value.source == str(path)
    assert f"{path}: line 2" in str(caught.value)


def test_a_corrupt_line_is_not_mistaken_for_a_torn_tail(tmp_path: Path) -> None:
    # Corrupt with a final newline: an error. The same bytes with no newline at the very end: torn.
    path = tmp_path / "log.jsonl"
    path.write_bytes(LOG + b'{"id":"x","ro\n')
    with pytest.raises(FormatError):
        read_jsonl(path)
    path.write_bytes(LOG + b'{"id":"x","ro')
    with pytest.warns(TornLineWarning):
        assert len(read_jsonl(path)) == 3


def test_a_log_with_a_bom_is_refused_at_line_1(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + LOG)
    with pytest.raises(FormatError) as caught:
        read_jsonl(path)
    assert caught.value.problems[0].line == 1


# --- Hostile fixture files (fixtures/invalid/hostile-*). -----------------------------------------

# Issue 14: an unknown key holding 1e400 loads, as in orion-core (with an UnknownKeyWarning).
HOSTILE = sorted(
    p for p in (FIXTURES / "invalid").glob("hostile-*") if p.name != "hostile-1e400-in-unknown-key.json"
)


@pytest.mark.parametrize("path", HOSTILE, ids=[p.name for p in HOSTILE])
def test_every_hostile_fixture_is_a_format_error(path: Path, tmp_path: Path) -> None:
    data = path.read_bytes()
    if path.suffix == ".jsonl":
        with pytest.raises(FormatError) as caught:
            read_jsonl(path)
        assert caught.value.problems[0].line is not None
    else:
        problem = _problem(lambda: loads(data))
        assert problem.location or problem.line is not None  # always says where


# --- Big inputs, in a child process with an address-space limit. ---------------------------------

_CHILD_PRELUDE = """
import json, resource, sys
limit = {limit}
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from orion_messages import FormatError, dumps, loads
def report(**values):
    values["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps(values))
"""


def _run_child(body: str, limit_mb: int) -> dict[str, Any]:
    code = _CHILD_PRELUDE.format(limit=limit_mb * 2**20) + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_a_200_mb_content_string_loads_round_trips_and_its_errors_are_located() -> None:
    result = _run_child(
        """
        size = 200_000_000
        head = b'[{"id":"a","role":"user","content":"'
        data = head + b"x" * size + b'","timestamp":1}]'
        messages = loads(data)
        length = len(messages[0].content)
        same = dumps(messages) == data
        del messages
        try:
            loads(data[:-1])
        except FormatError as error:
            cut = (error.problems[0].line, error.problems[0].column, error.problems[0].message)
        try:
            loads(data[: len(head) + size] + b'","timestamp":"1"}]')
        except FormatError as error:
            wrong = (error.problems[0].location, error.problems[0].message)
        report(length=length, same=same, cut=cut, wrong=wrong)
        """,
        limit_mb=3072,  # the input is 0.2 GB; the limit is on virtual memory, not RSS
    )
    assert result["length"] == 200_000_000
    assert result["same"] is True
    line, column, message = result["cut"]
    assert message.startswith("malformed JSON")
    assert line == 1
    assert column >= 200_000_000
    assert result["wrong"] == ["[0].timestamp", 'expected an integer, found the string "1"']


def test_a_million_messages_load_and_a_bad_last_one_is_located() -> None:
    result = _run_child(
        """
        count = 1_000_000
        one = b'{"id":"msg-%d","role":"user","content":"hello","timestamp":1781512345678}'
        data = b"[" + b",".join(one % i for i in range(count)) + b"]"
        messages = loads(data)
        loaded = len(messages)
        last = messages[-1].id
        del messages
        bad = data[:-2] + b'.5}]'  # the last timestamp becomes 1781512345678.5
        try:
            loads(bad)
        except FormatError as error:
            first = error.problems[0]
            problem = (first.location, first.message, len(error.problems))
        report(loaded=loaded, last=last, problem=problem, size=len(data))
        """,
        limit_mb=4096,
    )
    assert result["loaded"] == 1_000_000
    assert result["last"] == "msg-999999"
    assert result["problem"] == [
        "[999999].timestamp",
        "expected an integer, found the number 1781512345678.5",
        1,
    ]


# --- Nothing lost: every key and value of every valid golden survives a round trip. -------------

# The only omissions the page documents: optional keys at their defaults are not written.
OMITTED_DEFAULTS: dict[str, Any] = {
    "tool_calls": [],
    "tool_result": None,
    "token_count": None,
    "pinned": False,
}


def _typed(value: Any) -> Any:
    """A JSON value with its types made explicit, so that 1, 1.0 and true never compare equal."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, float):
        return ("float", repr(value))
    return (type(value).__name__, value)


def _without_documented_omissions(message: dict[str, Any]) -> dict[str, Any]:
    kept = {
        k: v
        for k, v in message.items()
        if not (k in OMITTED_DEFAULTS and v == OMITTED_DEFAULTS[k] and type(v) is type(OMITTED_DEFAULTS[k]))
    }
    result = kept.get("tool_result")
    if isinstance(result, dict):
        kept["tool_result"] = {k: v for k, v in result.items() if not (k == "pending" and v is False)}
    return kept


VALID = sorted(
    p
    for folder in ("v0.7", "v0.8", "newer", "own")
    for p in (FIXTURES / folder).glob("*.json")
    if not p.name.endswith(".expected.json")
)


@pytest.mark.parametrize("path", VALID, ids=[f"{p.parent.name}/{p.name}" for p in VALID])
def test_every_valid_fixture_keeps_every_key_and_value(path: Path) -> None:
    original = json.loads(path.read_bytes())
    written = json.loads(dumps(loads(path.read_bytes())))
    assert _typed(written) == _typed([_without_documented_omissions(m) for m in original])


def test_the_round_trip_oracle_can_tell_a_lost_or_changed_value() -> None:
    # The comparison above must not be fooled by 1 == 1.0 == True or by a missing key.
    assert _typed([{"a": 1}]) != _typed([{"a": 1.0}])
    assert _typed([{"a": 1}]) != _typed([{"a": True}])
    assert _typed([{"a": -0.0}]) != _typed([{"a": 0.0}])
    assert _typed([{"a": 1, "b": 2}]) != _typed([{"a": 1}])


# --- Refusing what cannot be written back. ------------------------------------------------------


def _refusals() -> dict[str, Callable[[], Any]]:
    from orion_messages import Message, ToolCall

    plain = Message.user("msg-1", "ok", timestamp=1)
    call = ToolCall(id="msg-2-call-1", name="n", arguments={"a": 1})
    return {
        "surrogate-in-content": lambda: Message.user("msg-1", "a\ud800b", timestamp=1),
        "surrogate-in-id": lambda: Message.user("\udfff", "x", timestamp=1),
        "surrogate-in-argument-key": lambda: Message.assistant(
            "msg-2", "x", [ToolCall(id="c", name="n", arguments={"\ud800": 1})], timestamp=1
        ),
        "surrogate-in-unknown-key": lambda: plain.model_copy(update={"note": "\udc00"}),
        "nan-arguments-via-model_construct": lambda: Message.assistant(
            "msg-2",
            "x",
            [ToolCall.model_construct(**{**call.__dict__, "arguments": float("nan")})],
            timestamp=1,
        ),
        "inf-nested-via-model_construct": lambda: Message.assistant(
            "msg-2",
            "x",
            [ToolCall.model_construct(**{**call.__dict__, "arguments": {"k": [1, float("-inf")]}})],
            timestamp=1,
        ),
        "nan-via-model_construct": lambda: Message.assistant(
            "msg-2", "x", [ToolCall.model_construct(id="c", name="n", arguments=[float("inf")])], timestamp=1
        ),
        "nan-in-unknown-key-via-model_construct": lambda: Message.model_construct(
            **plain.__dict__, score=float("nan")
        ),
    }


REFUSALS = sorted(_refusals())


@pytest.mark.parametrize("case", REFUSALS)
def test_what_cannot_be_written_losslessly_is_refused_and_nothing_changes(case: str, tmp_path: Path) -> None:
    from orion_messages import Message, append_jsonl, dumps_message, save

    bad = _refusals()[case]()
    good = Message.user("msg-0", "kept", timestamp=0)
    conversation_path = tmp_path / "c.json"
    log_path = tmp_path / "log.jsonl"
    save(conversation_path, [good])
    append_jsonl(log_path, good)
    before = (conversation_path.read_bytes(), log_path.read_bytes())
    for write in (
        lambda: dumps([good, bad]),
        lambda: dumps_message(bad),
        lambda: save(conversation_path, [good, bad]),
        lambda: append_jsonl(log_path, bad),
    ):
        problem = _problem(write)
        assert problem.message.startswith("cannot be written as JSON")
        assert "surrogate" in problem.message or "NaN" in problem.message or "Infinity" in problem.message
    assert (conversation_path.read_bytes(), log_path.read_bytes()) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "log.jsonl"]  # no temporary file


def test_a_refused_non_finite_number_names_its_place() -> None:
    from orion_messages import Message, ToolCall

    call = ToolCall.model_construct(id="c", name="n", arguments=float("nan"))
    messages = [Message.user("msg-1", "a", timestamp=1), Message.assistant("msg-2", "b", [call], timestamp=2)]
    assert _problem(lambda: dumps(messages)).location == "[1].tool_calls[0].arguments"


# --- Security: data is only data. ---------------------------------------------------------------

# Payloads that name code in the conventions of popular (de)serializers.
CODE_NAMING_PAYLOADS: list[Any] = [
    {"lc": 1, "type": "constructor", "id": ["langchain", "llms", "openai", "OpenAI"], "kwargs": {"x": 1}},
    {"lc": 1, "type": "constructor", "id": ["os", "system"], "kwargs": {"command": "touch /tmp/pwned"}},
    {"py/object": "os.system", "py/reduce": [{"py/function": "os.system"}, {"py/tuple": ["id"]}]},
    {
        "__class__": "subprocess.Popen",
        "__reduce__": ["os.system", ["id"]],
        "$type": "System.Diagnostics.Process",
    },
    {"__import__": "evil_module_that_does_not_exist", "!!python/object/apply:os.system": ["id"]},
    "!!python/object/apply:os.system ['id']",
]


class _ImportRecorder:
    """A meta-path finder that records every import attempted while it is installed."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        self.names.append(name)
        return None


@pytest.mark.parametrize("payload", CODE_NAMING_PAYLOADS, ids=range(len(CODE_NAMING_PAYLOADS)))
def test_loading_never_imports_or_calls_what_the_data_names(payload: Any, tmp_path: Path) -> None:
    message = {
        "id": "msg-1",
        "role": "assistant",
        "content": json.dumps(payload),
        "timestamp": 1,
        "tool_calls": [{"id": "c", "name": "os.system", "arguments": payload}],
        "lc_payload": payload,
    }
    document = _compact([message])
    (tmp_path / "log.jsonl").write_bytes(document[1:-1] + b"\n")
    loads(document)  # warm up: whatever the library imports lazily on first use
    read_jsonl(tmp_path / "log.jsonl")
    recorder = _ImportRecorder()
    sys.meta_path.insert(0, recorder)
    try:
        loaded = loads(document)
        loaded_strict = loads(document, strict=True)
        from_log = read_jsonl(tmp_path / "log.jsonl")
    finally:
        sys.meta_path.remove(recorder)
    assert recorder.names == []
    assert not Path("/tmp/pwned").exists()
    for messages in (loaded, loaded_strict, from_log):
        call = messages[0].tool_calls[0]
        assert call.arguments == payload  # plain data, equal to the stdlib's reading
        assert type(call.arguments) is type(payload)
        assert messages[0].model_extra == {"lc_payload": payload}


@pytest.mark.parametrize(
    "key",
    [
        "__class__",
        "__dict__",
        "__init__",
        "model_config",
        "model_fields",
        "__pydantic_extra__",
        "pin",
        "model_dump",
        "_private",
        "",
    ],
)
def test_unknown_keys_named_like_attributes_stay_data(key: str) -> None:
    from orion_messages import Message

    document = _compact([{**USER, key: {"lc": 1, "type": "constructor"}}])
    message = loads(document)[0]
    assert type(message) is Message
    assert message.model_extra == {key: {"lc": 1, "type": "constructor"}}
    assert message.pin().pinned is True  # the methods are still the methods
    assert json.loads(dumps([message])) == json.loads(document)


# --- Validation from Python: what the models accept, dumps writes and loads reads back. ---------


def test_self_containing_arguments_are_refused_not_walked_forever() -> None:
    code = "from orion_messages import ToolCall\nx = []\nx.append(x)\ntry:\n    ToolCall(id='c', name='n', arguments=x)\nexcept ValueError:\n    pass\n"
    try:
        subprocess.run([sys.executable, "-c", code], timeout=4, check=True)
    except subprocess.TimeoutExpired:
        pytest.fail("constructing a ToolCall with self-containing arguments hangs")


@pytest.mark.parametrize("kind", ["int-with-5000-digits", "nested-100-deep", "nested-250-deep"])
def test_what_dumps_writes_from_validated_models_loads_back(kind: str) -> None:
    from orion_messages import Message, ToolCall

    arguments: Any = 10**5000
    if kind.startswith("nested"):
        arguments = []  # loads refuses more than about 200 levels; dumps writes up to about 255
        for _ in range(int(kind.split("-")[1])):
            arguments = [arguments]
    try:
        message = Message.assistant("a", "x", [ToolCall(id="c", name="n", arguments=arguments)], timestamp=1)
        written = dumps([message])
    except (ValueError, FormatError):
        return  # refusing up front is fine
    assert loads(written) == [message]


def _nested_lists(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_the_deepest_arguments_the_models_accept_load_back() -> None:
    from orion_messages import Message, ToolCall
    from orion_messages._json_rules import VALUE_DEPTH_MAX as _MAX_DEPTH

    message = Message.assistant(
        "a", "x", [ToolCall(id="c", name="n", arguments=_nested_lists(_MAX_DEPTH))], timestamp=1
    )
    assert loads(dumps([message])) == [message]
    with pytest.raises(ValueError, match=f"at most {_MAX_DEPTH} levels"):
        ToolCall(id="c", name="n", arguments=_nested_lists(_MAX_DEPTH + 1))


# --- Files that are not logs, as append targets (fixtures/hostile/append-target-*). -------------

APPEND_TARGETS = sorted((FIXTURES / "hostile").glob("append-target-*"))


@pytest.mark.parametrize("path", APPEND_TARGETS, ids=[p.name for p in APPEND_TARGETS])
def test_appending_to_a_file_that_is_not_a_log_is_refused_and_changes_nothing(
    path: Path, tmp_path: Path
) -> None:
    target = tmp_path / path.name
    target.write_bytes(path.read_bytes())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused outright: not mended as a torn tail
        with pytest.raises(NotALogError) as caught:
            append_jsonl(target, loads_message(_compact(USER)))
    assert caught.value.source == str(target)
    assert target.read_bytes() == path.read_bytes()


def test_columns_count_bytes_for_every_error() -> None:
    # Two two-byte characters before the fault: a byte column is 8 and 9 (hand-counted), a
    # character column would be 6 and 7. (serde_json places a bad byte in a string at the
    # string's closing quote: it checks the string's UTF-8 when the string ends.)
    assert _problem(lambda: loads(b'["\xc3\xa9\xc3\xa9\xff"]')).column == 8
    assert _problem(lambda: loads(b'["\xc3\xa9\xc3\xa9" x]')).column == 9
    # A NaN after them: byte 10 (a character column would be 8), for text input as for bytes.
    assert _problem(lambda: loads(b'["\xc3\xa9\xc3\xa9", NaN]')).column == 10
    assert _problem(lambda: loads('["\u00e9\u00e9", NaN]')).column == 10


# serde_json's own positions for a document holding no value (measured with serde_json 1.0.87,
# "EOF while parsing a value at line L column C"): the end, as the bytes before it on its line.
@pytest.mark.parametrize(
    ("document", "line", "column"),
    [(b"", 1, 0), (b"  ", 1, 2), (b"\n", 2, 0), (b"  \n ", 2, 1), (b"\n\n", 3, 0), (b"\r\n\t", 2, 1)],
)
def test_an_empty_document_is_placed_at_its_end_as_serde_places_it(
    document: bytes, line: int, column: int
) -> None:
    given: bytes | str
    for given in (document, document.decode()):
        problem = _problem(partial(loads, given))
        assert (problem.message, problem.line, problem.column) == (
            "malformed JSON: the document is empty",
            line,
            column,
        )


def test_invalid_utf8_in_a_key_is_placed_at_the_key_s_closing_quote() -> None:
    document = b'[{"id":"msg-1","role":"user","content":"abc","timestamp":1,"k\xff":1}]'
    problem = _problem(lambda: loads(document))
    assert problem.message.startswith("malformed JSON")
    assert problem.column == document.index(b'":1}') + 1  # serde_json 1.0.87: column 63


# An unknown key's value nested deeper than the parser goes, and malformed: serde_json reads it
# (skipping it) to the fault and reports that, not the depth. Messages and places measured with
# serde_json 1.0.87 at 300 levels: "expected `,` or `]`" at the `}`, "EOF while parsing a list"
# at the end, "expected `,` or `}`" at the extra `]`, "invalid number" at the digit after `0`.
_DEEP = b'[{"id":"a","role":"user","content":"x","timestamp":1,"zz":' + b"[" * 300


@pytest.mark.parametrize(
    ("document", "message", "fault"),
    [
        (_DEEP + b"]" * 299 + b"}]", "expected `,` or `]` in an array", b"}]"),
        (_DEEP + b"]" * 301 + b"}]", "expected `,` or `}` in an object", b"]}]"),
        (_DEEP + b"]" * 299 + b",01]}]", "invalid number", b"1]}]"),
        (_DEEP + b"]" * 299, "the document ends inside an array", b""),
    ],
    ids=["bracket-short", "bracket-over", "bad-number", "cut-short"],
)
def test_a_malformed_unknown_value_deeper_than_the_parser_is_placed_as_serde_places_it(
    document: bytes, message: str, fault: bytes
) -> None:
    problem = _problem(lambda: loads(document))
    # The fault's column, 1-based; at the end, the bytes before it (serde_json's column there).
    column = len(document) - len(fault) + (1 if fault else 0)
    assert (problem.message, problem.line, problem.column) == (f"malformed JSON: {message}", 1, column)
