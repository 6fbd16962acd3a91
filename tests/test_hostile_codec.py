"""Hostile input for the codec (issues 9, 10 and 14): error paths that stay linear, reports that
stay small, and serde's readings of ``-0``, unknown keys and nesting.

Expectations come from the reference page ("Facts from the real serde") and the hand-written
fixtures under ``fixtures/invalid/hostile-*`` and ``fixtures/hostile/``.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import tracemalloc
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orion_messages import (
    FormatError,
    Message,
    Role,
    ToolCall,
    TurnEndEvent,
    UnknownKeyWarning,
    dump_event,
    dumps,
    dumps_message,
    loads,
    loads_message,
    parse_event,
)
from orion_messages import _json_rules as json_rules
from orion_messages._json_rules import (
    INT_DIGITS_MAX,
    SERDE_DEPTH_LIMIT,
    VALUE_DEPTH_MAX,
    duplicate_key_paths,
    first_non_finite_literal,
    minus_zero_as_float,
    open_path,
)
from orion_messages.errors import MAX_REPORTED_PROBLEMS

from .conftest import FIXTURES

HOSTILE = FIXTURES / "hostile"
INVALID = FIXTURES / "invalid"


def _problems(read: Any, data: Any) -> list[tuple[str, str]]:
    with pytest.raises(FormatError) as caught:
        read(data)
    return [(p.location, p.message) for p in caught.value.problems]


# --- The NaN error path is linear (issue 9). -----------------------------------------------------


def _peak_bytes(action: Any) -> int:
    tracemalloc.start()
    with pytest.raises(FormatError):
        action()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_nan_after_a_long_string_is_reported_with_its_place() -> None:
    raw = (INVALID / "hostile-nan-after-long-string.json").read_bytes()
    ((where, what),) = _problems(loads, raw)
    assert where == ""
    assert "found NaN" in what


@pytest.mark.parametrize("as_text", [False, True], ids=["bytes", "str"])
def test_nan_after_a_long_string_costs_memory_bounded_by_the_input(as_text: bool) -> None:
    # Was ~120 bytes per character of the string (a backtracking regex). Now a small multiple of
    # the input: measured by allocations, never by time.
    size = 4_000_000
    raw = b'[{"id":"m","role":"user","content":"' + b"a" * size + b'","timestamp":1,"x":NaN}]'
    data: bytes | str = raw.decode() if as_text else raw
    peak = _peak_bytes(lambda: loads(data))
    assert peak < 6 * size, peak


def test_the_literal_scanner_skips_escaped_quotes_and_reports_line_and_column() -> None:
    data = b'["a\\"NaN\\\\", \n  "x", -Infinity]'
    # Line 2, column 9: the letter after the sign, where serde_json stops ("invalid number").
    assert first_non_finite_literal(data) == ("-Infinity", 2, 9)
    assert first_non_finite_literal(data.decode()) == ("-Infinity", 2, 9)
    assert first_non_finite_literal(b'["NaN", "Infinity"]') is None


def test_a_nan_that_damage_put_outside_strings_is_not_reported_before_the_damage() -> None:
    # The first quote is lost, so the scanner sees the key "NaN" outside strings, cut before a
    # two-byte character; the parser stops at the damage, which is what is reported.
    raw = b'[{\x00id":"","k":{"NaN":"\\"\xc2\x80"}}]'
    assert first_non_finite_literal(raw) == ("NaN", 1, 17)
    with pytest.raises(FormatError) as caught:
        loads(raw)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (1, 3)
    assert problem.message.startswith("malformed JSON")
    assert "NaN" not in problem.message


def test_the_scanner_memory_does_not_grow_with_escapes() -> None:
    size = 1_000_000
    raw = b'["' + b'\\"' * size + b'", NaN]'
    tracemalloc.start()
    assert first_non_finite_literal(raw) is not None
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 3 * len(raw), peak  # the line holding the literal is decoded once, for its column


# --- Error reports are capped (issue 9). ---------------------------------------------------------


def test_an_error_report_holds_the_first_problems_and_counts_the_rest() -> None:
    raw = (INVALID / "hostile-600-problems.json").read_bytes()
    with pytest.raises(FormatError) as caught:
        loads(raw)
    error = caught.value
    assert len(error.problems) == MAX_REPORTED_PROBLEMS
    assert error.omitted == 600 - MAX_REPORTED_PROBLEMS
    assert error.problems[0].location == "[0].timestamp"
    assert str(error).startswith("600 problems:")
    assert str(error).endswith(f"... and {600 - MAX_REPORTED_PROBLEMS} more")
    placed = error.at_line(3, source="log.jsonl")
    assert (len(placed.problems), placed.omitted) == (MAX_REPORTED_PROBLEMS, error.omitted)


def test_a_capped_report_beside_an_unknown_value_serde_skips_counts_only_known_fields() -> None:
    # The unknown key's 1e400 is not a problem (orion-core skips it unread); the 150 wrong
    # timestamps are what is reported: the first 100 of them, and 50 more counted.
    unknown = b'{"id":"a","role":"user","content":"","timestamp":0,"x":1e400}'
    wrong = [b'{"id":"m%d","role":"user","content":"","timestamp":"%d"}' % (n, n) for n in range(150)]
    with pytest.raises(FormatError) as caught:  # and no warning: the document does not load
        loads(b"[" + b",".join([unknown, *wrong]) + b"]")
    error = caught.value
    assert (len(error.problems), error.omitted) == (MAX_REPORTED_PROBLEMS, 50)
    assert [p.location for p in error.problems] == [f"[{n}].timestamp" for n in range(1, 101)]
    assert str(error).startswith("150 problems:")


# --- -0 is not an integer (issue 14). ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "where"),
    [
        ("hostile-minus-zero-timestamp.json", "[0].timestamp"),
        ("hostile-minus-zero-token-count.json", "[0].token_count"),
    ],
)
def test_minus_zero_is_refused_where_an_integer_is_required(name: str, where: str) -> None:
    # serde_json: invalid type: floating point `-0.0`, expected i64
    assert _problems(loads, (INVALID / name).read_bytes()) == [
        (where, "expected an integer, found the number -0.0")
    ]


def test_minus_zero_is_refused_in_u32_event_fields() -> None:
    line = b'{"type":"context_budget","used_tokens":-0,"max_tokens":1,"messages_in_context":0,"messages_pruned":0}'
    assert _problems(parse_event, line) == [("used_tokens", "expected an integer, found the number -0.0")]


def test_minus_zero_in_a_free_value_reads_and_writes_as_minus_zero_point_zero() -> None:
    raw = (HOSTILE / "arguments-minus-zero.json").read_bytes()
    (message,) = loads(raw)
    arguments = message.tool_calls[0].arguments
    assert type(arguments["z"]) is float
    assert math.copysign(1.0, arguments["z"]) == -1.0
    assert arguments["s"] == "-0"  # a string stays a string
    assert b'"arguments":{"z":-0.0,"f":-0.0,"s":"-0"}' in dumps([message])
    line = b'{"type":"tool_exec_start","tool_call_id":"c","tool_name":"n","args":[-0]}'
    assert dump_event(parse_event(line)) == line.replace(b"[-0]", b"[-0.0]")


def test_minus_zero_rewriting_leaves_strings_and_other_numbers_alone() -> None:
    assert minus_zero_as_float(b'["-0",-0,-0.5,-0e1,-01,[-0]]') == b'["-0",-0.0,-0.5,-0e1,-01,[-0.0]]'
    assert minus_zero_as_float('{"k\\"-0":-0}') == '{"k\\"-0":-0.0}'
    unchanged = b'{"date":"2026-01-02","n":-10}'
    assert minus_zero_as_float(unchanged) is unchanged


# A "-0" inside text: told apart by what precedes it (a diff hunk, a UUID, a time zone) or by the
# quotes before it (after "[", ":" or ","), without walking the document string by string.
_MINUS_ZERO_IN_TEXT = [
    "@@ -0,0 +1,5 @@ new file",
    "id 3f2a-0b1c-4d5e",
    "UTC-0 ",
    "a-0",
    "line-0\nnext",
    "values [-0, 1]",
    'he said "delta: -0" twice',
    "a, -0 b",
    "C:\\Users\\me [-0]",
    'quoted \\" [-0',
]


@pytest.mark.parametrize("text", _MINUS_ZERO_IN_TEXT)
def test_a_minus_zero_inside_text_costs_no_walk(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_walk(data: Any, kind: str) -> Any:
        raise AssertionError("the document was walked string by string")

    monkeypatch.setattr(json_rules, "_outside_strings", no_walk)
    document = json.dumps([{"id": "msg-1", "role": "user", "content": text, "timestamp": 1}])
    for data in (document, document.encode()):
        assert minus_zero_as_float(data) is data
    assert loads(document)[0].content == text


def test_a_long_run_of_backslashes_before_a_quote_is_walked_and_read_right() -> None:
    text = "[-0, x: -0 " + "\\" * 10  # in JSON the closing quote follows 20 backslashes: too many to count
    document = json.dumps([{"k": text, "v": [-1, 2]}]).replace("-1", "-0")
    assert minus_zero_as_float(document) == document.replace('"v": [-0,', '"v": [-0.0,')
    assert json.loads(minus_zero_as_float(document))[0]["k"] == text


def _render(value: Any, space: str) -> str:
    """``value`` as JSON text, ``space`` after every separator; MINUS_ZERO is the integer ``-0``."""
    if value is _MINUS_ZERO:
        return "-0"
    if isinstance(value, list):
        return "[" + space + ("," + space).join(_render(item, space) for item in value) + "]"
    if isinstance(value, dict):
        items = (json.dumps(key) + ":" + space + _render(item, space) for key, item in value.items())
        return "{" + space + ("," + space).join(items) + "}"
    return json.dumps(value)


_MINUS_ZERO = object()
_TEXT_NEAR_MINUS_ZERO = st.text(st.sampled_from('-0[,: "\\\nab.e'), max_size=12)
_DOCUMENTS = st.recursive(
    st.one_of(
        st.just(_MINUS_ZERO), st.integers(-5, 5), st.sampled_from([-0.5, 0.0, -0.0]), _TEXT_NEAR_MINUS_ZERO
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_TEXT_NEAR_MINUS_ZERO, children, max_size=4)
    ),
    max_leaves=10,
)


def _typed(value: Any) -> Any:
    """``value`` with every number tagged by its type and sign, so that 0, 0.0 and -0.0 differ."""
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, float):
        return ("float", math.copysign(1.0, value), value)
    return value


@given(_DOCUMENTS, st.sampled_from(["", " ", "\n  ", " " * 70]))
def test_minus_zero_rewriting_reads_as_serde_does(document: Any, space: str) -> None:
    # The oracle: the standard library's parser, told to read the integer -0 as serde_json does.
    text = _render(document, space)
    expected = _typed(json.loads(text, parse_int=lambda digits: -0.0 if digits == "-0" else int(digits)))
    assert _typed(json.loads(minus_zero_as_float(text))) == expected
    assert _typed(json.loads(minus_zero_as_float(text.encode()))) == expected


def test_a_syntax_error_after_a_minus_zero_is_reported_where_it_is_in_the_input() -> None:
    ((_, what),) = _problems(loads, b'[{"x":-0,"y":tru}]')
    with pytest.raises(FormatError) as caught:
        loads(b'[{"x":-0,"y":tru}]')
    assert caught.value.problems[0].column == 17  # where jiter meets "}" in "tru}", in the input as given
    assert what.startswith("malformed JSON")


# --- Unknown keys: whatever orion-core loads, this library loads (issue 14). ---------------------


def test_an_unknown_value_nested_ten_thousand_levels_loads_with_a_warning() -> None:
    raw = (HOSTILE / "unknown-key-10000-deep.json").read_bytes()
    with pytest.warns(UnknownKeyWarning) as caught:
        (message,) = loads(raw)
    assert message.model_extra == {"x_kept": 1}
    (warning,) = [w.message for w in caught if isinstance(w.message, UnknownKeyWarning)]
    assert (warning.location, warning.key) == ("[0]", "x_deep")
    assert "nested" in warning.reason


def test_unwritable_unknown_keys_are_named_at_every_level() -> None:
    raw = (
        b'{"id":"m","role":"tool_result","content":"","timestamp":1,'
        b'"tool_result":{"tool_call_id":"c","tool_name":"n","content":"","is_error":false,"x":1e400},"y":-1e999}'
    )
    with pytest.warns(UnknownKeyWarning) as caught:
        message = loads_message(raw)
    assert message.model_extra == {}
    assert {(w.message.location, w.message.key) for w in caught} == {("tool_result", "x"), ("", "y")}  # type: ignore[union-attr]


def test_an_unknown_key_serde_cannot_read_refuses_an_event_unlike_a_message() -> None:
    # serde skips an unknown key's value in a message unread, but reads an event whole first.
    with pytest.warns(UnknownKeyWarning):
        (message,) = loads(b'[{"id":"m","role":"user","content":"","timestamp":1,"x":1e400}]')
    assert message.model_extra == {}
    ((where, what),) = _problems(parse_event, b'{"type":"turn_start","x":1e400}')
    assert (where, "serde_json reads an event whole" in what) == ("x", True)


def test_a_wrong_known_field_beside_an_unwritable_unknown_value_is_the_only_problem() -> None:
    # serde skips x unread and refuses only pinned; x is no problem of the document.
    raw = b'{"id":"m","role":"user","content":"","timestamp":1,"x":1e400,"pinned":"yes"}'
    assert [where for where, _ in _problems(loads_message, raw)] == ["pinned"]


def test_nan_in_an_unknown_key_is_still_malformed_json() -> None:
    # serde refuses NaN even where it skips a value: it is not JSON.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ((_, what),) = _problems(loads, b'[{"id":"m","role":"user","content":"","timestamp":1,"x":NaN}]')
    assert "found NaN" in what


def test_writable_unknown_keys_load_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (message,) = loads(b'[{"id":"m","role":"user","content":"","timestamp":1,"x":[1e300,{"a":null}]}]')
    assert message.model_extra == {"x": [1e300, {"a": None}]}


# --- Nesting of free values (issue 10/14). -------------------------------------------------------


def test_the_depth_rule_leaves_room_below_serde_and_jiter() -> None:
    deepest_place = 5  # event -> messages -> message -> tool_calls -> call -> arguments
    assert deepest_place + VALUE_DEPTH_MAX < SERDE_DEPTH_LIMIT
    assert INT_DIGITS_MAX < 4300


def test_arguments_at_the_depth_limit_load_and_one_deeper_are_refused() -> None:
    (message,) = loads((HOSTILE / "arguments-120-deep.json").read_bytes())
    assert loads(dumps([message])) == [message]
    event = b'{"type":"agent_end","messages":' + dumps([message]) + b"}"
    assert parse_event(event).messages == (message,)  # type: ignore[union-attr]
    ((where, what),) = _problems(loads, (INVALID / "hostile-arguments-121-deep.json").read_bytes())
    assert where == "[0].tool_calls[0].arguments"
    assert f"at most {VALUE_DEPTH_MAX} levels" in what


# --- Forms serde reads and orion-core never writes (issue 14). -----------------------------------


def test_a_struct_as_an_array_and_a_role_as_a_map_are_refused_with_a_reason() -> None:
    ((where, what),) = _problems(loads, (INVALID / "hostile-struct-as-array.json").read_bytes())
    assert where == "[0]"
    assert "struct written as an array" in what
    ((where, what),) = _problems(loads, (INVALID / "hostile-role-as-map.json").read_bytes())
    assert where == "[0].role"
    assert "role written as an object" in what


# --- Strict, one meaning (issue 10). -------------------------------------------------------------


def test_strict_finds_duplicate_keys_in_a_message_and_an_event() -> None:
    message = b'{"id":"m","role":"user","content":"a","content":"b","timestamp":1}'
    assert loads_message(message).content == "b"  # lenient: the last value wins
    assert _problems(lambda d: loads_message(d, strict=True), message) == [
        ("", 'duplicate key "content" in one object')
    ]
    event = b'{"type":"warning","message":"a","message":"b"}'
    assert _problems(lambda d: parse_event(d, strict=True), event) == [
        ("", 'duplicate key "message" in one object')
    ]


def test_strict_on_an_event_checks_the_messages_it_carries() -> None:
    event = (
        b'{"type":"agent_end","messages":[{"id":"m","role":"user","content":"","timestamp":1},'
        b'{"id":"m","role":"user","content":"","timestamp":2}]}'
    )
    assert isinstance(parse_event(event), object)
    ((where, what),) = _problems(lambda d: parse_event(d, strict=True), event)
    assert where == "messages[1].id"
    assert "duplicate message id" in what


def test_the_duplicate_key_detector_names_every_repeat() -> None:
    assert duplicate_key_paths(b'[{"a":1,"b":{"c":1,"c":2},"a":3}]') == [((0,), "a"), ((0, "b"), "c")]
    assert duplicate_key_paths(b'[{"a":1}]') == []
    assert duplicate_key_paths(b"[{") == []  # malformed: the main parser reports it


# --- Models (issue 14). --------------------------------------------------------------------------


def test_model_dump_json_is_the_wire_form() -> None:
    message = Message.tool_result_message("m", "c", "n", "out", timestamp=1)
    assert message.model_dump_json().encode() == dumps_message(message)
    assert b'"pinned"' not in dumps_message(message)
    # The omission rules sit on the fields, so the Python form leaves out what the wire does.
    assert "pinned" not in message.model_dump()
    assert "token_count" not in message.model_dump()
    assert message.pin().model_dump()["pinned"] is True


def test_the_role_is_written_as_its_string_and_stays_an_enum() -> None:
    (message,) = loads(b'[{"id":"m","role":"tool_call","content":"","timestamp":1}]')
    assert message.role is Role.TOOL_CALL
    assert dumps([message]) == b'[{"id":"m","role":"tool_call","content":"","timestamp":1}]'


def test_tool_result_message_is_the_constructor_and_the_old_one_warns() -> None:
    new = Message.tool_result_message("m", "c", "n", "out", True, timestamp=1)
    assert new.tool_result is not None
    assert new.tool_result.is_error is True
    with pytest.warns(DeprecationWarning, match="tool_result_message"):
        old = Message.tool_result("m", "c", "n", "out", True, timestamp=1)
    assert old == new
    with pytest.warns(DeprecationWarning, match="pending_result"):
        placeholder = Message.tool_result("m", "c", "n", "", pending=True, timestamp=1)
    assert placeholder == Message.pending_result("m", "c", "n", timestamp=1)


def test_event_help_lists_every_field() -> None:
    doc = TurnEndEvent.__doc__ or ""
    for name in TurnEndEvent.model_fields:
        assert f"    {name}: " in doc


def test_true_one_and_one_point_zero_stay_apart_in_free_values() -> None:
    call = ToolCall(id="c", name="n", arguments=[True, 1, 1.0, False, 0, None])
    assert b'"arguments":[true,1,1.0,false,0,null]' in dumps_message(
        Message.assistant("m", "", [call], timestamp=1)
    )


def test_only_values_set_past_validation_turn_on_the_output_scan() -> None:
    # A fresh process: the flag is process-wide and never cleared.
    script = """
import json
import math
from orion_messages import Message, ToolCall, dumps, loads
from orion_messages.models import _WireModel
m = loads(b'[{"id":"m","role":"user","content":"","timestamp":1}]')[0]
dumps([m.pin().unpin().with_token_count(3)])
call = ToolCall(id="c", name="n", arguments={"a": 1.5})
call.model_copy(update={"arguments": {"a": 2.5}, "name": "x"})
assert _WireModel.values_unchecked is False
ToolCall.model_construct(id="c", name="n", arguments=[math.nan])
assert _WireModel.values_unchecked is True
"""
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr


def test_a_message_constructed_without_a_required_field_is_not_written() -> None:
    # pydantic's serializer writes such a message without the field: a file load refuses. A
    # fresh process, as the count that turns the look on is process-wide.
    script = """
import gc, pathlib, sys, tempfile
from orion_messages import FormatError, Message, Role, ToolResult, dumps, dumps_message, load, save
from orion_messages.models import _WireModel
Message.model_construct(id="m", role=Role.USER, content="", timestamp=1)
assert _WireModel.incomplete_alive == 0
good = Message.user("msg-1", "hi", timestamp=1)
path = pathlib.Path(tempfile.mkdtemp()) / "c.json"
save(path, [good])
cases = [
    (Message.model_construct(id="msg-2", role=Role.USER, content="x"), "[1].timestamp"),
    (Message.model_construct(id="msg-2", role=Role.TOOL_RESULT, content="x", timestamp=2,
        tool_result=ToolResult.model_construct(tool_call_id="c", tool_name="t", content="x")),
     "[1].tool_result.is_error"),
]
assert _WireModel.incomplete_alive == 2  # a message and a tool result
for broken, where in cases:
    for write in (lambda: dumps([good, broken]), lambda: save(path, [good, broken])):
        try:
            write()
        except FormatError as error:
            assert [p.location for p in error.problems] == [where], error
        else:
            sys.exit("written: " + where)
    try:
        dumps_message(broken)
    except FormatError as error:
        assert [p.location for p in error.problems] == [where[4:]], error
    else:
        sys.exit("dumps_message wrote it")
assert load(path) == [good]
assert dumps([good]) == b'[{"id":"msg-1","role":"user","content":"hi","timestamp":1}]'
del cases, broken, write
gc.collect()
assert _WireModel.incomplete_alive == 0  # gone with them: the writers look no more
"""
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr


def test_a_copy_of_an_incomplete_message_is_not_written_either() -> None:
    # copy, deepcopy, model_copy and pickle copy the missing field's absence: each copy is
    # looked at while it lives, after the original is gone.
    script = """
import copy, gc, pickle, sys
from orion_messages import FormatError, Message, Role, dumps
from orion_messages.models import _WireModel
original = Message.model_construct(id="msg-1", role=Role.USER, content="x")
copies = [copy.copy(original), copy.deepcopy(original), original.model_copy(), pickle.loads(pickle.dumps(original))]
del original
gc.collect()
for made in copies:
    try:
        dumps([made])
    except FormatError as error:
        assert [p.location for p in error.problems] == ["[0].timestamp"], error
    else:
        sys.exit("a copy was written without its timestamp")
del copies, made
gc.collect()
assert _WireModel.incomplete_alive == 0
copy.copy(Message.user("msg-2", "y", timestamp=2))
assert _WireModel.incomplete_alive == 0  # a complete message is not counted
from orion_messages import ToolCall
call = ToolCall.model_construct(id="c1", name="f")  # no arguments, inside a validated message
try:
    dumps([Message.assistant("msg-3", "", [call], timestamp=3)])
except FormatError as error:
    assert [p.location for p in error.problems] == ["[0].tool_calls[0].arguments"], error
else:
    sys.exit("a tool call was written without its arguments")
"""
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert completed.returncode == 0, completed.stderr


def test_an_event_model_dump_json_is_its_wire_form() -> None:
    line = b'{"type":"turn_start"}'
    assert parse_event(line).model_dump_json().encode() == line
    stats = b'{"type":"message_delta","delta":"a","tokens_generated":1,"tokens_per_sec":40.0}'
    assert parse_event(stats).model_dump_json().encode() == stats


# serde skips an unknown key's value unread, but still reads it as JSON: brackets matched,
# commas, literals and escapes checked, at any depth (serde_json's ignore_value; measured:
# NaN 300 levels down is "expected value"). Beyond the parser's depth the same holds here.
_DEEP = 300


@pytest.mark.parametrize("inner", ["NaN", "1 2", "tru", '"\\x"', "[1,]", "01", '{"a" 1}'])
def test_malformed_json_deep_in_an_unknown_key_is_refused_where_it_is(inner: str) -> None:
    head = '[{"id":"a","role":"user","content":"c","timestamp":1,"x":' + "[" * _DEEP
    document = head + inner + "]" * _DEEP + "}]"
    with pytest.raises(FormatError) as raised:
        loads(document)
    (problem,) = raised.value.problems
    assert problem.message.startswith("malformed JSON")
    assert problem.line == 1
    assert problem.column is not None
    assert len(head) < problem.column <= len(head) + len(inner) + 1


@pytest.mark.parametrize("inner", ["1", '"\\ud800"', "{}", '{"a":[true,null,-0.5e3]}', " "])
def test_well_formed_json_deep_in_an_unknown_key_loads_without_it(inner: str) -> None:
    document = (
        '[{"id":"a","role":"user","content":"c","timestamp":1,"x":' + "[" * _DEEP + inner + "]" * _DEEP + "}]"
    )
    with pytest.warns(UnknownKeyWarning, match='unknown key "x" left out'):
        (message,) = loads(document)
    assert message.model_extra == {}


def test_a_wrong_known_field_beside_a_deep_unknown_value_is_reported_as_itself() -> None:
    # Before: "nested too deeply", which hid the real fault; the deep value alone would load.
    deep = "[" * _DEEP + "]" * _DEEP
    document = '[{"id":"a","role":"user","content":"c","timestamp":"1","x":' + deep + "}]"
    assert _problems(loads, document) == [("[0].timestamp", 'expected an integer, found the string "1"')]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ('[{"id":"m","x":{"y":[1,2,{"z":"', ((0, "x", "y", 2, "z"), False)),  # in a value
        ('[{"id":"m","x":{"', ((0, "x", ""), True)),  # where a key starts
        ('[{"a":1},{"b":[]} , ', ((2,), False)),  # closed containers are left, the next item counted
        ('[{"k\\u00e9\\"y":[', ((0, 'k\u00e9"y', 0), False)),  # keys are decoded
        ('[{"id" 1', None),  # broken before the end
    ],
)
def test_open_path_names_the_containers_open_at_a_place(
    document: str, expected: tuple[tuple[int | str, ...], bool] | None
) -> None:
    for data in (document, document.encode()):
        assert open_path(data, len(data)) == expected


def test_open_path_gives_up_on_a_key_that_is_not_utf8() -> None:
    assert open_path(b'[{"id":"m","\xff":{"x":"', 25) is None


# --- A value serde skips unread, and a fault elsewhere (CLI audit, item 7). -------------------------
# jiter stops at a number too long for it or at a lone surrogate escape; serde skips both in an
# unknown key and stops at the real fault. Positions measured with interop/rust's orion-serde
# (serde_json 1.0.87), and by hand: _HEAD fills columns 1-58, the value starts at 59 (a
# 5000-digit number ends at 5058, "\ud800" with its quotes at 66); in a record, one column less.
_HEAD = '[{"id":"a","role":"user","content":"x","timestamp":1,"zz":'
_DIGITS = "1" * 5000
_SURROGATE = '"\\ud800"'


@pytest.mark.filterwarnings("ignore::orion_messages.UnknownKeyWarning")
@pytest.mark.parametrize(
    ("document", "line", "column", "message"),
    [
        (_HEAD + _DIGITS + "},]", 1, 5061, "trailing comma"),  # at the "]"
        (_HEAD + _DIGITS + "}]x", 1, 5061, "unexpected data after the end of the document"),
        (_HEAD + _SURROGATE + "},]", 1, 69, "trailing comma"),
        (_HEAD + _SURROGATE + "}] x", 1, 70, "unexpected data after the end of the document"),
        (_HEAD + _DIGITS + ',"y" 1}]', 1, 5064, "expected `:` after an object key"),
        (_HEAD + _DIGITS + ',"y":NaN}]', 1, 5064, "expected a JSON value, found NaN"),
        (_HEAD + _DIGITS + "}", 1, 5059, "the document ends inside an array"),
        (_HEAD + "-" + _DIGITS + "x}]", 1, 5060, "expected `,` or `}` in an object"),
        (_HEAD + _DIGITS + ',"y":"\\udc00"},]', 1, 5074, "trailing comma"),  # two skipped values
        (_HEAD + _DIGITS + "},\n" + _HEAD[1:] + _SURROGATE + "}\n,]", 3, 2, "trailing comma"),
        (_HEAD + '{"\\ud800":' + _DIGITS + ",,}}]", 1, 5070, "expected an object key"),  # in its object
        # A fault in the skipped string itself: these loaded before, serde refuses them.
        (_HEAD + '"\\ud800\x01"}]', 1, 65, "control character"),  # the byte before, as serde skips
        (_HEAD + '"\\ud800\\q"}]', 1, 67, "invalid escape"),
        # The fault before the value: as before.
        (_HEAD + '1},,{"zz":' + _DIGITS + "}]", 1, 62, "expected a JSON value"),
    ],
)
def test_a_fault_past_a_value_serde_skips_is_reported_where_serde_reports_it(
    document: str, line: int, column: int, message: str
) -> None:
    for data in (document, document.encode()):
        with pytest.raises(FormatError) as raised:
            loads(data)
        (problem,) = raised.value.problems
        assert (problem.line, problem.column) == (line, column), problem
        assert problem.message.startswith(f"malformed JSON: {message}")


def test_an_unreadable_value_in_a_known_place_still_comes_before_a_later_fault() -> None:
    # serde reads arguments: "number out of range" at the last digit (5105), not the trailing comma.
    document = _HEAD[:-6] + ',"tool_calls":[{"id":"c","name":"n","arguments":{"a":' + _DIGITS + "}}]},]"
    with pytest.raises(FormatError) as raised:
        loads(document)
    (problem,) = raised.value.problems
    assert (problem.line, problem.column, problem.message) == (1, 5105, "malformed JSON: number out of range")


@pytest.mark.filterwarnings("ignore::orion_messages.UnknownKeyWarning")
def test_a_record_with_a_skipped_value_and_trailing_data_is_refused_at_the_data(tmp_path: Any) -> None:
    from orion_messages import read_jsonl

    record = _HEAD[1:]
    with pytest.raises(FormatError) as raised:
        loads_message(record + _SURROGATE + "}x")
    assert [(p.line, p.column) for p in raised.value.problems] == [(1, 67)]
    with pytest.raises(FormatError) as raised:
        loads_message(record + _DIGITS + "}x")
    assert [(p.line, p.column) for p in raised.value.problems] == [(1, 5059)]
    path = tmp_path / "log.jsonl"
    path.write_text(record + "1}\n" + record + _DIGITS + "} x\n")
    with pytest.raises(FormatError) as raised:
        read_jsonl(path)
    assert "5060" in str(raised.value)
    assert "number out of range" not in str(raised.value)


def test_an_event_reads_the_unknown_value_first_as_serde_does() -> None:
    # serde reads an event whole: "number out of range" at the last digit, before the "x".
    with pytest.raises(FormatError) as raised:
        parse_event('{"type":"agent_start","zz":' + _DIGITS + "}x")
    assert [(p.line, p.column) for p in raised.value.problems] == [(1, 5027)]


@pytest.mark.parametrize(
    ("name", "line", "column"),
    [  # serde_json's positions (orion-serde): the "]" after the comma, the "x", the byte before \x01
        ("hostile-5000-digits-in-unknown-key-then-trailing-comma.json", 1, 5061),
        ("hostile-lone-surrogate-in-unknown-key-then-trailing-data.json", 2, 1),
        ("hostile-lone-surrogate-and-control-character-in-unknown-key.json", 1, 65),
    ],
)
def test_hostile_files_with_a_skipped_value_and_a_fault_are_refused_at_the_fault(
    name: str, line: int, column: int
) -> None:
    with pytest.raises(FormatError) as raised:
        loads((INVALID / name).read_bytes())
    assert [(p.line, p.column) for p in raised.value.problems] == [(line, column)]
