"""The wire codec: what ``loads`` rejects, and what ``dumps`` writes, against the reference page.

Each file in ``fixtures/invalid/`` breaks one rule of the page. The table below says, by hand,
where the problem must be reported (a JSON path, or the line and the text a column must point
at) and what the message must say; the whole ``FormatError`` text is also snapshot-tested so
that messages stay clear and stable.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    FormatError,
    Message,
    Problem,
    Role,
    ToolCall,
    ToolResult,
    UnknownKeyWarning,
    dumps,
    dumps_message,
    loads,
    loads_message,
)
from orion_messages.events import parse_event

from .conftest import FIXTURES

INVALID = FIXTURES / "invalid"

ROLE_LIST = 'one of "system", "user", "assistant", "tool_call" or "tool_result"'
I64_RANGE = "an integer from -9223372036854775808 to 9223372036854775807"
U32_RANGE = "an integer from 0 to 4294967295"


@dataclass(frozen=True)
class Rejection:
    """Where one invalid file's first problem must be reported, and what it must say."""

    location: str
    says: str
    line: int | None = None
    at: bytes | None = None  # the text the column must point into (JSON syntax errors)
    count: int = 1


# One entry per file in fixtures/invalid/ (except the reliability suite's hostile-* files).
REJECTIONS: dict[str, Rejection] = {
    "integer-as-string.json": Rejection(
        "[0].timestamp", 'expected an integer, found the string "1781513700000"'
    ),
    "timestamp-float.json": Rejection("[0].timestamp", "expected an integer, found the number 1.0"),
    "timestamp-exponent.json": Rejection("[0].timestamp", "expected an integer, found the number 1000.0"),
    "timestamp-2-pow-63.json": Rejection("[0].timestamp", f"expected {I64_RANGE}, found the number {2**63}"),
    "timestamp-below-i64.json": Rejection(
        "[0].timestamp", f"expected {I64_RANGE}, found the number {-(2**63) - 1}"
    ),
    "boolean-as-string.json": Rejection(
        "[0].pinned", 'expected a boolean (true or false), found the string "true"'
    ),
    "boolean-as-number.json": Rejection(
        "[0].pinned", "expected a boolean (true or false), found the number 1"
    ),
    "string-null.json": Rejection("[0].content", "expected a string, found null"),
    "id-number.json": Rejection("[0].id", "expected a string, found the number 1"),
    "list-null.json": Rejection("[1].tool_calls", "expected an array, found null"),
    "tool-calls-object.json": Rejection("[0].tool_calls", "expected an array, found an object"),
    "role-capitalized.json": Rejection("[0].role", f'expected a role, {ROLE_LIST}, found the string "User"'),
    "role-tool.json": Rejection("[0].role", f'expected a role, {ROLE_LIST}, found the string "tool"'),
    "role-number.json": Rejection("[0].role", f"expected a role, {ROLE_LIST}, found the number 1"),
    "token-count-negative.json": Rejection("[0].token_count", f"expected {U32_RANGE}, found the number -1"),
    "token-count-2-pow-32.json": Rejection(
        "[0].token_count", f"expected {U32_RANGE}, found the number {2**32}"
    ),
    "token-count-float.json": Rejection("[0].token_count", "expected an integer, found the number 12.0"),
    "lone-surrogate.json": Rejection("", "lone surrogate", 1, b"\\ud800"),
    "lone-low-surrogate.json": Rejection("", "lone surrogate", 1, b"\\udc00"),
    "invalid-utf8.json": Rejection("", "invalid UTF-8", 1, b"\xe9"),
    "utf8-encoded-surrogate.json": Rejection("", "invalid UTF-8", 1, b"\xed\xa0\x80"),
    "nan.json": Rejection("", "found NaN (JSON has no NaN or infinity)", 1, b"NaN"),
    "infinity.json": Rejection("", "found Infinity (JSON has no NaN or infinity)", 1, b"Infinity"),
    "negative-infinity.json": Rejection("", "found -Infinity (JSON has no NaN or infinity)", 1, b"-Infinity"),
    "number-out-of-range.json": Rejection(
        "[0].tool_calls[0].arguments.x",
        "expected a finite number, found infinity (such as a number too large",
    ),
    "top-level-object.json": Rejection("", "expected a JSON array of messages, found an object"),
    "top-level-string.json": Rejection("", 'expected a JSON array of messages, found the string "[]"'),
    "trailing-characters.json": Rejection("", "unexpected data after the end of the document", 1, b"x"),
    "trailing-second-array.json": Rejection("", "unexpected data after the end of the document", 2, b"[]"),
    "missing-timestamp.json": Rejection("[0].timestamp", "required key is missing"),
    "missing-every-key.json": Rejection("[0].id", "required key is missing", count=4),
    "tool-call-missing-arguments.json": Rejection("[0].tool_calls[0].arguments", "required key is missing"),
    "tool-call-name-null.json": Rejection("[0].tool_calls[0].name", "expected a string, found null"),
    "tool-result-missing-is-error.json": Rejection("[0].tool_result.is_error", "required key is missing"),
    "tool-result-is-error-string.json": Rejection(
        "[0].tool_result.is_error", 'expected a boolean (true or false), found the string "false"'
    ),
    "tool-result-pending-null.json": Rejection(
        "[0].tool_result.pending", "expected a boolean (true or false), found null"
    ),
    "tool-result-array.json": Rejection(
        "[0].tool_result",
        "(a struct written as an array of its fields, which serde reads, is refused: orion-core never writes one), found an array",
    ),
    "message-not-object.json": Rejection("[1]", "expected an object, found the number 42"),
    "malformed-unterminated.json": Rejection("", "the document ends", 1, b","),
    "malformed-missing-colon.json": Rejection("", "expected `:`", 1, b' "msg-1"'),
    "malformed-trailing-comma.json": Rejection("", "trailing comma", 7, b"}"),
    "malformed-single-quotes.json": Rejection("", "expected an object key", 1, b"'id'"),
    "empty-file.json": Rejection("", "the document is empty", 1, b""),
    "byte-order-mark.json": Rejection("", "starts with a byte order mark", 1, b"\xef\xbb\xbf"),
    "raw-control-character.json": Rejection("", "control character", 1, b"\x01"),
    "invalid-escape.json": Rejection("", "invalid escape", 1, b"\\x41"),
    "nested-too-deeply.json": Rejection("", "nested too deeply", 1, b"[" * 250),
    "several-problems.json": Rejection("[0].id", "expected a string, found the number 5", count=5),
}

# Files valid by the page's types but refused by loads(strict=True).
STRICT_ONLY = {"duplicate-key.json"}


def _invalid_files() -> list[str]:
    return sorted(p.name for p in INVALID.glob("*") if p.is_file() and not p.name.startswith("hostile-"))


def test_every_invalid_file_has_a_hand_written_expectation() -> None:
    assert set(_invalid_files()) == set(REJECTIONS) | STRICT_ONLY


@pytest.mark.parametrize("name", sorted(REJECTIONS))
def test_invalid_file_is_rejected_where_the_table_says(name: str) -> None:
    raw = (INVALID / name).read_bytes()
    expected = REJECTIONS[name]
    with pytest.raises(FormatError) as caught:
        loads(raw)
    problems = caught.value.problems
    assert len(problems) == expected.count
    first = problems[0]
    assert first.location == expected.location
    assert expected.says in first.message
    assert first.line == expected.line
    if expected.at is not None:
        assert first.column is not None
        line = raw.split(b"\n")[first.line - 1 if first.line else 0]
        start = line.index(expected.at)
        # The column (1-based) points into the offending text, or just past its end; at the
        # end of a document (no text: ``at`` is empty) serde_json counts the bytes before it.
        low = start + 1 if expected.at else start
        assert low <= first.column <= start + len(expected.at) + 1, (first.column, start)
    else:
        assert first.column is None
    assert isinstance(caught.value, ValueError)
    assert "pydantic" not in str(caught.value)
    assert "errors.pydantic.dev" not in str(caught.value)


NOT_TEXT = {"invalid-utf8.json", "utf8-encoded-surrogate.json"}  # cannot be a str


@pytest.mark.parametrize("name", sorted(set(REJECTIONS) - NOT_TEXT))
def test_invalid_file_is_rejected_from_str_input_too(name: str) -> None:
    with pytest.raises(FormatError) as caught:
        loads((INVALID / name).read_bytes().decode("utf-8"))
    assert caught.value.problems[0].location == REJECTIONS[name].location


@pytest.mark.parametrize("name", sorted(REJECTIONS))
def test_invalid_file_error_text_snapshot(name: str, snapshot: SnapshotAssertion) -> None:
    with pytest.raises(FormatError) as caught:
        loads((INVALID / name).read_bytes())
    assert str(caught.value) == snapshot


def test_several_problems_are_all_listed() -> None:
    with pytest.raises(FormatError) as caught:
        loads((INVALID / "several-problems.json").read_bytes())
    assert [p.location for p in caught.value.problems] == [
        "[0].id",
        "[0].role",
        "[0].timestamp",
        "[1].token_count",
        "[1].pinned",
    ]
    assert str(caught.value).startswith("5 problems:\n  [0].id: ")


def test_duplicate_keys_keep_the_last_by_default() -> None:
    # A documented difference: serde rejects a duplicate field; the default path keeps the last.
    (message,) = loads((INVALID / "duplicate-key.json").read_bytes())
    assert message.content == "second"


def test_duplicate_keys_are_rejected_when_strict(snapshot: SnapshotAssertion) -> None:
    with pytest.raises(FormatError) as caught:
        loads((INVALID / "duplicate-key.json").read_bytes(), strict=True)
    (problem,) = caught.value.problems
    assert problem.location == "[0]"
    assert '"content"' in problem.message
    assert str(caught.value) == snapshot


def test_strict_finds_repeated_known_keys_at_every_level_as_serde_does() -> None:
    # serde refuses a repeated field of a struct ("duplicate field"); in arguments (a map) the
    # last value wins, and an unknown key's value is skipped: no error in either.
    raw = (
        '[{"id":"m","role":"assistant","content":"","timestamp":1,"x":{"y":1,"y":2},"tool_calls":'
        '[{"id":"c","name":"n","arguments":{"a":1,"b":{"x":1,"x":2}},"name":"n"}],'
        '"tool_result":{"tool_call_id":"c","tool_name":"n","content":"","is_error":false,"is_error":true}}]'
    )
    assert loads(raw)[0].tool_calls[0].arguments == {"a": 1, "b": {"x": 2}}
    with pytest.raises(FormatError) as caught:
        loads(raw, strict=True)
    duplicates = [(p.location, p.message) for p in caught.value.problems if "duplicate" in p.message]
    assert sorted(duplicates) == [
        ("[0].tool_calls[0]", 'duplicate key "name" in one object'),
        ("[0].tool_result", 'duplicate key "is_error" in one object'),
    ]


def test_strict_finds_a_repeated_known_key_beside_a_very_deep_value() -> None:
    deep = "[" * 2000 + "]" * 2000
    raw = '[{"id":"a","id":"b","role":"user","content":"c","timestamp":1,"x":' + deep + "}]"
    with pytest.raises(FormatError, match=r'\[0\]: duplicate key "id"'):
        loads(raw, strict=True)


def test_strict_reports_semantic_problems_that_the_default_loads() -> None:
    raw = (
        '[{"id":"msg-1","role":"user","content":"a","timestamp":1},'
        '{"id":"msg-1","role":"tool_result","content":"x","timestamp":2,'
        '"tool_result":{"tool_call_id":"nope","tool_name":"t","content":"y","is_error":false}}]'
    )
    assert len(loads(raw)) == 2
    with pytest.raises(FormatError) as caught:
        loads(raw, strict=True)
    assert [p.location for p in caught.value.problems] == [
        "[1].id",
        "[1].tool_result.tool_call_id",
        "[1].content",
    ]


def test_nesting_within_the_limit_loads() -> None:
    depth = 100
    raw = (
        '[{"id":"m","role":"assistant","content":"","timestamp":1,"tool_calls":'
        '[{"id":"c","name":"n","arguments":' + "[" * depth + "]" * depth + "}]}]"
    )
    arguments = loads(raw)[0].tool_calls[0].arguments
    for _ in range(depth - 1):
        (arguments,) = arguments
    assert arguments == []


@pytest.mark.parametrize("strict", [False, True])
def test_absurd_nesting_is_a_format_error_not_a_recursion_error(strict: bool) -> None:
    for middle in ("", "NaN", '{"a":1,"a":2}'):
        raw = "[" * 100_000 + middle + "]" * 100_000
        with pytest.raises(FormatError, match="nested too deeply"):
            loads(raw, strict=strict)


def test_non_finite_words_inside_strings_are_text() -> None:
    raw = '[{"id":"NaN","role":"user","content":"Infinity -Infinity NaN \\"NaN\\"","timestamp":1}]'
    (message,) = loads(raw)
    assert message.id == "NaN"
    assert message.content == 'Infinity -Infinity NaN "NaN"'


def test_nan_position_skips_strings_that_spell_it() -> None:
    raw = '[{"id":"NaN","role":"assistant","content":"x","timestamp":1,\n"tool_calls":[{"id":"c","name":"n","arguments":NaN}]}]'
    with pytest.raises(FormatError) as caught:
        loads(raw)
    (problem,) = caught.value.problems
    second_line = raw.split("\n")[1]
    assert (problem.line, problem.column) == (2, second_line.index("NaN") + 1)


# A raw control character (here \x01) where serde reads the string, and where it skips it (an
# unknown key's value, at any depth): serde_json's reader reports it in a string it reads after
# stepping over it, in one it skips before (``parse_str_bytes`` and ``ignore_str`` in its read.rs).
READ_CONTROL = [
    b'[{"id":"m","role":"user","content":"a\x01","timestamp":1}]',
    b'[{"id":"m","role":"user","x\x01":1,"content":"","timestamp":1}]',  # a key is read, known or not
    b'[{"id":"m","role":"user","content":"","timestamp":1,"tool_calls":[{"id":"c","name":"n","arguments":["\x01"]}]}]',
]
SKIPPED_CONTROL = [
    b'[{"id":"m","role":"user","x":"a\x01","content":"","timestamp":1}]',
    b'[{"id":"m","role":"user","x":{"k\x01":[1]},"content":"","timestamp":1}]',
    b'[{"id":"m","role":"user","content":"","timestamp":1,"tool_calls":[{"id":"c","name":"n","arguments":1,"x":["\x01"]}]}]',
    b'[{"id":"m","role":"tool_result","content":"","timestamp":1,"tool_result":{"x":"\x01"}}]',
    b'[\n  {\n    "id": "m",\n    "x": "ab\x01"\n  }\n]',
]


def _place(document: bytes, *, skipped: bool) -> tuple[int, int]:
    """serde_json's line and column for the control character: the bytes before it on its line,
    and the character itself too where serde reads the string."""
    at = document.index(b"\x01")
    line_start = document.rfind(b"\n", 0, at) + 1
    return document.count(b"\n", 0, at) + 1, at - line_start + (0 if skipped else 1)


@pytest.mark.parametrize(
    ("document", "skipped"), [(d, False) for d in READ_CONTROL] + [(d, True) for d in SKIPPED_CONTROL]
)
def test_a_control_character_is_placed_where_serde_places_it(document: bytes, skipped: bool) -> None:
    record = document.strip(b"[]\n ")  # the message alone, as a JSON Lines record holds it
    for read, data in ((loads, document), (loads_message, record)):
        with pytest.raises(FormatError) as caught:
            read(data)
        assert [(problem.line, problem.column) for problem in caught.value.problems] == [
            _place(data, skipped=skipped)
        ]


def test_a_control_character_in_an_event_is_placed_at_it() -> None:
    """serde reads an event whole, unknown keys included (an internally tagged enum)."""
    line = b'{"type":"warning","message":"m","x":"\x01"}'
    with pytest.raises(FormatError) as caught:
        parse_event(line)
    assert [(problem.line, problem.column) for problem in caught.value.problems] == [
        (1, line.index(b"\x01") + 1)
    ]


def test_lone_surrogate_in_str_input_is_a_format_error() -> None:
    with pytest.raises(FormatError, match="surrogate"):
        loads('[{"id":"\ud800","role":"user","content":"c","timestamp":1}]')


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview, str])
def test_loads_takes_bytes_bytearray_memoryview_and_str(kind: type) -> None:
    raw = (FIXTURES / "v0.7/reference-example.json").read_bytes()
    data = raw.decode() if kind is str else kind(raw)
    assert dumps(loads(data)) == raw


# --- dumps: what the wire table says is written ----------------------------------------------


def test_dumps_writes_the_wire_table_order_and_omissions() -> None:
    plain = Message.user("msg-1", "hi", timestamp=5)
    assert dumps([plain]) == b'[{"id":"msg-1","role":"user","content":"hi","timestamp":5}]'
    full = Message.tool_result_message("msg-2", "c", "t", "out", timestamp=6).with_token_count(3).pin()
    assert dumps_message(full) == (
        b'{"id":"msg-2","role":"tool_result","content":"out","timestamp":6,'
        b'"tool_result":{"tool_call_id":"c","tool_name":"t","content":"out","is_error":false},'
        b'"token_count":3,"pinned":true}'
    )
    pending = Message.pending_result("msg-3", "c", "t", timestamp=7)
    assert dumps_message(pending).endswith(b'"is_error":false,"pending":true}}')


def test_dumps_writes_defaults_that_equal_the_omitted_values_explicitly_where_required() -> None:
    # timestamp 0, is_error false and token_count 0 are values, not omissions.
    message = Message.tool_result_message("", "", "", "", timestamp=0).with_token_count(0)
    assert dumps_message(message) == (
        b'{"id":"","role":"tool_result","content":"","timestamp":0,'
        b'"tool_result":{"tool_call_id":"","tool_name":"","content":"","is_error":false},"token_count":0}'
    )


def test_dumps_escapes_like_serde() -> None:
    text = '\x00\x01\x08\t\n\x0b\x0c\r\x1f"\\/\x7f\u2028é😀'
    out = dumps_message(Message.user("m", text, timestamp=1))
    expected_content = (
        b'"\\u0000\\u0001\\b\\t\\n\\u000b\\f\\r\\u001f\\"\\\\/\x7f\xe2\x80\xa8\xc3\xa9\xf0\x9f\x98\x80"'
    )
    assert b'"content":' + expected_content + b"," in out


# The spellings of the reference page ("Facts from the real serde"): zmij, serde_json >= 1.0.146;
# and ryu, before it (the same digits, no sign on a positive exponent).
ZMIJ_AND_RYU = [
    (1e20, b"1e+20", b"1e20"),
    (1e16, b"1e+16", b"1e16"),
    (1e15, b"1000000000000000.0", b"1000000000000000.0"),
    (40.0, b"40.0", b"40.0"),
    (100.0, b"100.0", b"100.0"),
    (0.1, b"0.1", b"0.1"),
    (1.5e-7, b"1.5e-7", b"1.5e-7"),
    (1e-7, b"1e-7", b"1e-7"),
    (1e-6, b"1e-6", b"1e-6"),
    (0.00001, b"0.00001", b"0.00001"),
    (-0.0, b"-0.0", b"-0.0"),
    (1.5e21, b"1.5e+21", b"1.5e21"),
    (1e300, b"1e+300", b"1e300"),
    (1.7976931348623157e308, b"1.7976931348623157e+308", b"1.7976931348623157e308"),
    (5e-324, b"5e-324", b"5e-324"),
    (-2.5e300, b"-2.5e+300", b"-2.5e300"),
]


@pytest.mark.parametrize(("value", "spelled", "old"), ZMIJ_AND_RYU)
def test_dumps_spells_floats_as_current_serde_json(value: float, spelled: bytes, old: bytes) -> None:
    call = ToolCall(id="c", name="n", arguments={"v": value, "s": "1e+20"})
    out = dumps_message(Message.assistant("m", "", [call], timestamp=1))
    assert b'"arguments":{"v":' + spelled + b',"s":"1e+20"}' in out


@pytest.mark.parametrize(("value", "spelled", "old"), ZMIJ_AND_RYU)
def test_float_style_ryu_spells_floats_as_serde_json_before_1_0_146(
    value: float, spelled: bytes, old: bytes
) -> None:
    call = ToolCall(id="c", name="n", arguments={"v": value, "s": "1e+20"})
    message = Message.assistant("m", "", [call], timestamp=1)
    assert b'"arguments":{"v":' + old + b',"s":"1e+20"}' in dumps_message(message, float_style="ryu")
    assert b'"arguments":{"v":' + old + b',"s":"1e+20"}' in dumps([message], float_style="ryu")
    assert loads(dumps([message], float_style="ryu")) == [message]


def test_dumps_pretty_is_serde_to_string_pretty() -> None:
    message = Message.assistant(
        "m", "", [ToolCall(id="c", name="n", arguments={"a": [], "b": {}, "c": [1]})], timestamp=1
    )
    assert dumps([message], indent=2) == (
        b"[\n"
        b"  {\n"
        b'    "id": "m",\n'
        b'    "role": "assistant",\n'
        b'    "content": "",\n'
        b'    "timestamp": 1,\n'
        b'    "tool_calls": [\n'
        b"      {\n"
        b'        "id": "c",\n'
        b'        "name": "n",\n'
        b'        "arguments": {\n'
        b'          "a": [],\n'
        b'          "b": {},\n'
        b'          "c": [\n'
        b"            1\n"
        b"          ]\n"
        b"        }\n"
        b"      }\n"
        b"    ]\n"
        b"  }\n"
        b"]"
    )
    assert dumps([], indent=2) == b"[]"
    assert dumps([]) == b"[]"


def test_dumps_takes_any_iterable() -> None:
    messages = [Message.user("a", "x", timestamp=1), Message.user("b", "y", timestamp=2)]
    assert dumps(iter(messages)) == dumps(messages) == dumps(tuple(messages))


def test_dumps_refuses_a_lone_surrogate() -> None:
    with pytest.raises(FormatError, match="unpaired surrogate"):
        dumps([Message.user("m", "\ud800", timestamp=1)])


def test_non_json_arguments_are_refused_when_built() -> None:
    for bad in ({1: "a"}, (1, 2), {"a": {1, 2}}, [b"x"], float("nan"), [float("inf")]):
        with pytest.raises(ValueError, match="expected"):
            ToolCall(id="c", name="n", arguments=bad)


def test_an_unknown_key_that_cannot_be_written_back_loads_without_it_and_warns() -> None:
    # orion-core skips unknown values unread (reference page), so this document loads there.
    raw = '[{"id":"m","role":"user","content":"c","timestamp":1,"x":[1e400],"y":2}]'
    with pytest.warns(UnknownKeyWarning) as caught:
        (message,) = loads(raw)
    assert message.model_extra == {"y": 2}
    (warning,) = [w.message for w in caught]
    assert isinstance(warning, UnknownKeyWarning)
    assert (warning.location, warning.key) == ("[0]", "x")
    assert 'unknown key "x"' in str(warning)


def test_loads_message_and_dumps_message_round_trip() -> None:
    raw = (FIXTURES / "v0.7/tool-loop-parallel.json").read_bytes()
    for item in json.loads(raw):
        line = json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode()
        message = loads_message(line)
        assert dumps_message(message) == line


def test_loads_message_refuses_an_array_and_reports_locations_without_an_index() -> None:
    with pytest.raises(FormatError) as caught:
        loads_message(b'{"id":"m","role":"user","content":"c","timestamp":"1"}')
    assert caught.value.problems[0].location == "timestamp"
    with pytest.raises(FormatError):
        loads_message(b"[]")


def test_problem_and_error_text() -> None:
    problem = Problem("[3].tool_result.is_error", "required key is missing")
    assert str(problem) == "[3].tool_result.is_error: required key is missing"
    assert str(Problem("", "malformed JSON: x", 2, 5)) == "line 2, column 5: malformed JSON: x"
    error = FormatError([problem], source="chat.json")
    assert str(error) == "chat.json: [3].tool_result.is_error: required key is missing"
    assert error.with_source("other.json").source == "other.json"
    moved = FormatError([Problem("timestamp", "bad")]).at_line(12, source="log.jsonl")
    assert str(moved) == "log.jsonl: line 12: timestamp: bad"


def test_roles_are_spelled_as_on_the_wire() -> None:
    assert [role.value for role in Role] == ["system", "user", "assistant", "tool_call", "tool_result"]
    assert str(Role.TOOL_CALL) == "tool_call"


# serde_json reads an integer beyond 64 bits as a double (its first 20 digits times a power of
# ten) and refuses one whose double is infinite. Measured with serde_json itself: this 309-digit
# integer is the largest it reads, and the next one is "number out of range".
SERDE_LARGEST_INT = int("17976931348623156224" + "9" * 289)
OUT_OF_DOUBLE_RANGE = 2**1024 - 2**970  # rounds to infinity as a double


def _with_arguments(value: bytes) -> bytes:
    call = b'[{"id":"c","name":"n","arguments":' + value + b"}]"
    return b'[{"id":"m","role":"assistant","content":"","timestamp":1,"tool_calls":' + call + b"}]"


def test_integers_in_arguments_are_kept_exact_up_to_what_serde_json_reads() -> None:
    largest = SERDE_LARGEST_INT
    message = Message.assistant(
        "m", "", [ToolCall(id="c", name="n", arguments=[largest, -largest])], timestamp=1
    )
    assert loads(dumps([message])) == [message]
    assert loads(_with_arguments(str(largest).encode()))[0].tool_calls[0].arguments == largest
    with pytest.raises(ValueError, match="that serde_json reads"):
        ToolCall(id="c", name="n", arguments={"n": OUT_OF_DOUBLE_RANGE})
    for too_large in (OUT_OF_DOUBLE_RANGE, -OUT_OF_DOUBLE_RANGE, 10**400):
        with pytest.raises(FormatError, match="that serde_json reads"):
            loads(_with_arguments(str(too_large).encode()))
    # Between the two, an integer still rounds to the largest double: it is read as that double
    # (docs/compatibility.md), and written as a double orion-core reads.
    (message,) = loads(_with_arguments(str(largest + 1).encode()))
    assert message.tool_calls[0].arguments == 1.7976931348623157e308


def test_an_unknown_keys_integers_may_be_longer_as_serde_skips_them_unread() -> None:
    # orion-core loads such a message (the value is skipped); the value is kept up to 4000 digits.
    longest = 10**4000 - 1
    document = b'[{"id":"m","role":"user","content":"","timestamp":1,"x":' + str(longest).encode() + b"}]"
    (message,) = loads(document)
    assert message.model_extra == {"x": longest}
    assert dumps([message]) == document
    with pytest.warns(UnknownKeyWarning, match="at most 4000 digits"):
        (message,) = loads(document.replace(b'"x":', b'"x":9'))
    assert message.model_extra == {}


def test_writers_refuse_what_is_not_a_list_of_messages(tmp_path: Path) -> None:
    from orion_messages import append_jsonl, save, save_jsonl

    message = Message.user("msg-1", "hi", timestamp=1)
    with pytest.raises(TypeError, match="got a str"):
        dumps("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got a Message"):
        dumps(message)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^dumps: \[1\]: expected a Message, found a dict$"):
        dumps([message, {"id": "msg-2"}])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="expected a Message, got a dict"):
        dumps_message({"id": "msg-2"})  # type: ignore[arg-type]
    log = tmp_path / "log.jsonl"
    save_jsonl(log, [message])
    before = log.read_bytes()
    with pytest.raises(TypeError):
        append_jsonl(log, {"id": "msg-2", "role": "user", "content": "x"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^save_jsonl: \[1\]: expected a Message, found a dict$"):
        save_jsonl(log, [message, {"id": "msg-2"}])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        save(tmp_path / "c.json", "abc")  # type: ignore[arg-type]
    assert log.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["log.jsonl"]


def test_a_wrong_type_set_without_validation_is_refused_where_it_is() -> None:
    message = Message.user("msg-1", "hi", timestamp=1)
    smuggled = Message.model_construct(**{**message.__dict__, "timestamp": 1.5})
    with pytest.raises(FormatError) as raised:
        dumps([message, smuggled])
    (problem,) = raised.value.problems
    assert problem.location == "[1].timestamp"
    assert "expected an integer" in problem.message


def test_a_wrong_type_set_without_validation_raises_no_warning_of_pydantics() -> None:
    # Looking for a lone surrogate in it dumped the message again, with pydantic's serializer
    # warning; under -W error that warning replaced the FormatError.
    smuggled = Message.model_construct(id="msg-1", role=Role.USER, content={"not": "text"}, timestamp=1)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FormatError, match=r"^\[0\]\.content: expected a string, found an object$"):
            dumps([smuggled])


def test_a_wrong_type_set_without_validation_in_a_model_inside_a_message_is_refused_where_it_is() -> None:
    # The models a message holds were taken as they are when the message was looked at: the
    # writer's refusal named only the message ("[1]: cannot be written as JSON: Pydantic ...").
    call = ToolCall.model_construct(id=7, name="t", arguments={})  # type: ignore[arg-type]
    result = ToolResult.model_construct(tool_call_id="c", tool_name="t", content=5, is_error=False)  # type: ignore[arg-type]
    calling = Message.model_construct(
        id="msg-2",
        role=Role.ASSISTANT,
        content="",
        timestamp=2,
        tool_calls=(ToolCall(id="c", name="t", arguments={}), call),
    )
    answer = Message.model_construct(
        id="msg-3", role=Role.TOOL_RESULT, content="5", timestamp=3, tool_result=result
    )
    with pytest.raises(FormatError) as raised:
        dumps([Message.user("msg-1", "hi", timestamp=1), calling])
    assert [(p.location, p.message) for p in raised.value.problems] == [
        ("[1].tool_calls[1].id", "expected a string, found the number 7")
    ]
    with pytest.raises(FormatError) as raised:
        dumps_message(answer)
    assert [(p.location, p.message) for p in raised.value.problems] == [
        ("tool_result.content", "expected a string, found the number 5")
    ]


def test_a_wrong_type_is_named_with_its_article() -> None:
    with pytest.raises(TypeError, match=r"^dumps: \[0\]: expected a Message, found an int$"):
        dumps([1])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^expected a Message, got a dict$"):
        dumps_message({})  # type: ignore[arg-type]


def test_strict_reading_scans_for_repeated_keys_only_where_one_may_repeat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The scanner puts a Python hook on every object; orjson's quick check spares it on clean input.
    from orion_messages import _json_rules

    scans: list[object] = []
    scan = _json_rules.scan_repeated_keys

    def counted(data: bytes | str) -> list[tuple[tuple[int | str, ...], str]]:
        scans.append(data)
        return scan(data)

    monkeypatch.setattr(_json_rules, "scan_repeated_keys", counted)
    clean = b'[{"id":"msg-1","role":"user","content":"a: b \\u003c","timestamp":1}]'
    assert loads(clean, strict=True)[0].content == "a: b <"
    assert scans == []
    repeated = b'[{"id":"msg-1","role":"user","content":"a","content":"b","timestamp":1}]'
    with pytest.raises(FormatError, match=r'\[0\]: duplicate key "content" in one object'):
        loads(repeated, strict=True)
    escaped_colon = '[{"id":"msg-1","role":"user","content":"a\\u003a b","timestamp":1}]'
    assert loads(escaped_colon, strict=True)[0].content == "a: b"
    assert scans == [repeated, escaped_colon]  # an escaped colon could hide a repeat: scanned


@pytest.mark.parametrize(
    "document",
    [
        b'[{"id":"msg-1","role":"user","content":"hi","timestamp":1}]',
        b'[\n  {\n    "id": "msg-1"',
        '  [ {"id":"msg-1","role":"user","content":"hi","timestamp":1}]',
    ],
)
def test_loads_message_says_a_conversation_is_not_one_message(document: bytes | str) -> None:
    with pytest.raises(FormatError) as caught:
        loads_message(document)
    (problem,) = caught.value.problems
    assert problem.message.startswith("expected one message (a JSON object), found a JSON array of objects")


def test_loads_message_still_names_a_struct_written_as_an_array() -> None:
    with pytest.raises(FormatError, match="a struct written as an array of its fields"):
        loads_message(b'["msg-1","user","hi",1]')


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (Message.user("msg-2", "a\ud800b", timestamp=1), "[1].content"),
        (
            Message.assistant(
                "msg-2", "", [ToolCall(id="c", name="f", arguments={"p": [1, "\udc00"]})], timestamp=1
            ),
            "[1].tool_calls[0].arguments.p[1]",
        ),
        (
            Message.tool_result_message("msg-2", "c", "f\ud800", "ok", timestamp=1),
            "[1].tool_result.tool_name",
        ),
    ],
)
def test_a_lone_surrogate_set_from_python_is_refused_at_its_string(message: Message, where: str) -> None:
    # A Python str may hold half of a surrogate pair; UTF-8 cannot, so dumps refuses it, there.
    first = Message.user("msg-1", "hi", timestamp=1)
    with pytest.raises(FormatError) as caught:
        dumps([first, message])
    (problem,) = caught.value.problems
    assert problem.location == where
    assert "unpaired surrogate" in problem.message


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ('[{"id":"a"}]'.encode("utf-16"), "UTF-16"),  # the platform's order, with its mark
        (b"\xfe\xff" + '[{"id":"a"}]'.encode("utf-16-be"), "UTF-16"),
        (b"\xff\xfe" + '[{"id":"a"}]'.encode("utf-16-le"), "UTF-16"),
        ('[{"id":"a"}]'.encode("utf-32"), "UTF-32"),
    ],
)
def test_a_utf16_or_utf32_document_is_named_as_such_where_serde_stops(data: bytes, encoding: str) -> None:
    # serde_json: "expected value at line 1 column 1" (no JSON value starts with the mark).
    with pytest.raises(FormatError) as caught:
        loads(data)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (1, 1)
    assert f"starts with a {encoding} byte order mark" in problem.message
    assert "UTF-8" in problem.message


@pytest.mark.parametrize("indent", [-1, 1025, 2**64])
def test_an_indent_out_of_range_is_the_librarys_value_error(indent: int) -> None:
    # Not pydantic-core's OverflowError ("can't convert negative int to unsigned", "int too
    # big to convert"); widths up to 1024 are taken.
    message = Message.user("msg-1", "hi", timestamp=1)
    with pytest.raises(ArgumentValueError, match=rf"^indent must be between 0 and 1024, got {indent}$"):
        dumps([message], indent=indent)
    with pytest.raises(ArgumentValueError, match=rf"^indent must be between 0 and 1024, got {indent}$"):
        dumps_message(message, indent=indent)
    assert dumps_message(message, indent=1024).startswith(b"{\n" + b" " * 1024 + b'"id"')


@pytest.mark.parametrize(
    "stranger",
    [
        None,
        ToolCall(id="c1", name="f", arguments={}),
        ToolResult(tool_call_id="c1", tool_name="f", content="", is_error=False),
    ],
    ids=["None", "ToolCall", "ToolResult"],
)
def test_the_writers_refuse_none_and_other_models_in_a_list_of_messages(
    stranger: object, tmp_path: Path
) -> None:
    # pydantic-core itself writes None as null and another model by the fields it shares with
    # a message ({"id":"c1"}): a file no reader takes.
    from orion_messages import load, save

    message = Message.user("msg-1", "hi", timestamp=1)
    with pytest.raises(ArgumentTypeError, match=r"^dumps: \[1\]: expected a Message, found "):
        dumps([message, stranger])  # type: ignore[list-item]
    path = tmp_path / "c.json"
    save(path, [message])
    with pytest.raises(ArgumentTypeError, match=r"^save: \[1\]: expected a Message, found "):
        save(path, [message, stranger])  # type: ignore[list-item]
    assert load(path) == [message]


def test_a_str_or_bytes_subclass_reads_as_the_plain_type() -> None:
    # numpy.str_ and a host's own subclasses: the -0 scan looked its whitespace up by type.
    class Text(str):
        pass

    class Data(bytes):
        pass

    document = '[{"id":"m","role":"assistant","content":"","timestamp":1,"tool_calls":[{"id":"c","name":"n","arguments":{"a":-0}}]}]'

    class Shown(str):
        def __str__(self) -> str:
            return "not the document"

    for given in (Text(document), Data(document.encode()), Shown(document)):
        (message,) = loads(given)
        assert repr(message.tool_calls[0].arguments) == "{'a': -0.0}"
    with pytest.raises(FormatError, match="the document is empty"):
        loads(Text("  "))


@pytest.mark.parametrize("value", [{"a": "\ud800"}, ["\udfff"], "\ud800"])
def test_arguments_holding_a_lone_surrogate_are_a_format_error(value: object) -> None:
    from orion_messages._arguments import encode_arguments

    with pytest.raises(FormatError, match="a string holds an unpaired surrogate"):
        encode_arguments(value)


def test_an_indent_of_zero_is_taken_by_the_writers(tmp_path: Path) -> None:
    # The writers take 0 to 1024 (wire.INDENT_MAX): 0 is in the range, as json.dumps takes it.
    from orion_messages import load, save

    messages = [Message.user("msg-1", "hi", timestamp=1)]
    assert loads(dumps(messages, indent=0)) == messages
    save(tmp_path / "c.json", messages, indent=0)
    assert load(tmp_path / "c.json") == messages


def test_arguments_changed_in_place_to_hold_themselves_are_refused_not_walked_forever() -> None:
    call = ToolCall(id="c1", name="f", arguments={"a": [1]})
    call.arguments["a"].append(call.arguments)  # past validation, as the docs say not to
    with pytest.raises(FormatError):
        dumps([Message.assistant("msg-1", "", [call], timestamp=1)])
