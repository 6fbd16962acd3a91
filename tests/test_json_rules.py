"""The schema of free JSON values (``_json_rules``), and its rules at every depth.

The levels below a value's top are built once per kind and shared by every model that holds a
free value (an ``arguments``, ``args`` or ``parameters`` value, unknown keys), so nothing
pydantic does while it builds a model, a JSON Schema, a subclass or a host's annotated field may
change them. Every rule is tried near the top of a value and deep inside it, and in the values of
a repeated key, which serde_json reads whole before it keeps the last. Expectations are the rules
as docs/reliability.md and docs/compatibility.md state them.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, PlainSerializer, TypeAdapter, ValidationError, WithJsonSchema

from orion_messages import (
    ConversionError,
    FormatError,
    Message,
    UnknownKeyWarning,
    _json_rules,
    anthropic_messages,
    dumps,
    events,
    loads,
    openai_chat,
    parse_event,
    schema,
    templates,
)
from orion_messages._json_rules import VALUE_DEPTH_MAX, top_level_keys
from orion_messages.models import ToolCall

KINDS = [_json_rules._KNOWN, _json_rules._UNKNOWN]


def _built_anew(kind: _json_rules._ValueKind) -> Any:
    return _json_rules._levels.__wrapped__(kind)


def test_the_levels_below_the_top_are_built_once_and_the_top_for_each_model() -> None:
    for kind in KINDS:
        first, second = _json_rules._value_schema(kind), _json_rules._value_schema(kind)
        assert first is not second
        assert first["schema"] is not second["schema"]
        assert all(a is b for a, b in zip(first["definitions"], second["definitions"], strict=True))
    assert _json_rules._levels(KINDS[0]) is not _json_rules._levels(KINDS[1])


def test_the_schema_holds_a_definition_for_each_level_below_the_top() -> None:
    for kind, prefix in zip(KINDS, ["orion-json-value", "orion-json-value-unknown"], strict=True):
        shared = _json_rules._value_schema(kind)
        assert shared["type"] == "definitions"
        assert [level["ref"] for level in shared["definitions"]] == [f"{prefix}-{n}" for n in range(120)]


class _Subclass(ToolCall, frozen=True):
    """A host's own tool call, with values of its own."""

    note: Any = None
    message: Message | None = None


FreeValue: Any = ToolCall.model_fields["arguments"].annotation  # the type, as a host reaches it


class _Annotated(BaseModel):
    """A host's model that writes and describes a free value its own way."""

    logged: Annotated[FreeValue, PlainSerializer(lambda value: "<redacted>", return_type=str)] = None
    shown: Annotated[FreeValue, WithJsonSchema({"type": "object", "title": "host's own"})] = None
    described: Annotated[FreeValue, Field(description="the host's words")] = None


class _Later(ToolCall, frozen=True):
    """A tool call built after the host's annotated model, with nothing of its own."""


def test_building_models_and_their_json_schemas_leaves_the_shared_schemas_unchanged(tmp_path: Path) -> None:
    # Every module that builds models is loaded (the imports above); then more is built here.
    schema.write_schemas(tmp_path)
    for model in (Message, ToolCall, templates.ToolSchema, events.ToolExecStartEvent, _Subclass, _Annotated):
        model.model_json_schema(mode="validation")
        model.model_json_schema(mode="serialization")
    TypeAdapter(list[_Subclass]).json_schema()
    TypeAdapter(openai_chat.OpenAIMessage).json_schema()
    TypeAdapter(anthropic_messages.AnthropicRequest).json_schema()
    for kind in KINDS:
        assert _json_rules._levels(kind) == _built_anew(kind)


def test_a_hosts_annotations_stay_in_its_own_model() -> None:
    assert (
        _Annotated(logged={"a": 1}).model_dump_json()
        == '{"logged":"<redacted>","shown":null,"described":null}'
    )
    shown = _Annotated.model_json_schema()["properties"]["shown"]
    assert shown == {"type": "object", "title": "host's own", "default": None}
    # Models built afterwards write and describe their free values as the library does.
    assert _Later(id="c", name="f", arguments={"a": 1}).model_dump_json() == (
        '{"id":"c","name":"f","arguments":{"a":1}}'
    )
    assert _Later.model_json_schema()["properties"]["arguments"]["type"] == list(_json_rules.JSON_TYPES)
    event = parse_event('{"type":"tool_exec_start","tool_call_id":"c","tool_name":"f","args":{"a":1}}')
    assert event.model_dump_json() == (
        '{"type":"tool_exec_start","tool_call_id":"c","tool_name":"f","args":{"a":1}}'
    )


# Near the top, in the middle, and at the deepest level a value may reach.
DEPTHS = [1, 10, 119]
LIMIT = 17_976_931_348_623_156_225 * 10**289  # serde_json's first refused integer (compatibility.md)
INFINITY = "expected a finite number, found infinity (such as a number too large for a double)"


def _arrays(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def _json_arrays(token: str, depth: int) -> str:
    return "[" * depth + token + "]" * depth


def _chain(container: str, depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value] if container == "array" else {"k": value}
    return value


def _message(arguments: Any, **unknown: Any) -> dict[str, Any]:
    call = {"id": "c", "name": "f", "arguments": arguments}
    return {"id": "m", "role": "assistant", "content": "", "timestamp": 1, "tool_calls": [call], **unknown}


def _document(arguments: str, unknown: str = "") -> str:
    call = f'{{"id":"c","name":"f","arguments":{arguments}}}'
    return f'[{{"id":"m","role":"assistant","content":"","timestamp":1,"tool_calls":[{call}]{unknown}}}]'


def _problems(data: str) -> list[tuple[str, str]]:
    with pytest.raises(FormatError) as caught:
        loads(data)
    return [(problem.location, problem.message) for problem in caught.value.problems]


def _python_errors(data: dict[str, Any], **options: Any) -> list[tuple[str, tuple[int | str, ...]]]:
    with pytest.raises(ValidationError) as caught:
        Message.model_validate(data, **options)
    return [(error["type"], error["loc"]) for error in caught.value.errors()]


# --- The rules, near the top and deep inside. ----------------------------------------------------


@pytest.mark.parametrize("container", ["array", "object"])
def test_a_value_nested_to_the_limit_loads_and_one_level_deeper_is_refused(container: str) -> None:
    for depth in (VALUE_DEPTH_MAX - 1, VALUE_DEPTH_MAX):
        value = _chain(container, depth)
        (message,) = loads(dumps([Message.model_validate(_message(value))]))
        assert message.tool_calls[0].arguments == value
    too_deep = _message(_chain(container, VALUE_DEPTH_MAX + 1))
    assert _python_errors(too_deep) == [("json_value", ("tool_calls", 0, "arguments"))]
    deeper = VALUE_DEPTH_MAX + 1
    json_text = _json_arrays("1", deeper) if container == "array" else '{"k":' * deeper + "1" + "}" * deeper
    ((where, what),) = _problems(_document(json_text))
    assert where == "[0].tool_calls[0].arguments"
    assert what == "expected a JSON value nested at most 120 levels deep, found a deeper one"


@pytest.mark.parametrize("depth", DEPTHS)
@pytest.mark.parametrize("strict", [None, False], ids=["strict", "lax-call"])
def test_true_one_and_one_point_zero_keep_their_types_at_every_depth(depth: int, strict: bool | None) -> None:
    # pydantic's per-call strict=False makes every choice lax (bool takes 1, int takes 1.0, int
    # takes "1"); a free value still comes back as written.
    values = [True, 1, 1.0, False, 0, 0.0, "1", "true", None, 2**70]
    data = _message(_arrays(values, depth), x_u=_arrays(values, depth))
    json_text = _document(
        _json_arrays('[true,1,1.0,false,0,0.0,"1","true",null,1180591620717411303424]', depth)
    )
    from_json = Message.model_validate_json(json_text[1:-1], strict=strict)
    from_python = Message.model_validate(data, strict=strict)
    for message in (from_json, from_python):
        kept = message.tool_calls[0].arguments
        for _ in range(depth):
            (kept,) = kept
        assert [type(value) for value in kept] == [
            bool,
            int,
            float,
            bool,
            int,
            float,
            str,
            str,
            type(None),
            int,
        ]
        assert kept == values
    unknown = from_python.model_extra["x_u"]  # type: ignore[index]
    assert repr(unknown) == repr(_arrays(values, depth))


@pytest.mark.parametrize("depth", DEPTHS)
def test_minus_zero_deep_in_arguments_reads_as_minus_zero_point_zero(depth: int) -> None:
    (message,) = loads(_document(_json_arrays("-0", depth)))
    (value,) = _arrays_content(message.tool_calls[0].arguments, depth)
    assert type(value) is float
    assert math.copysign(1.0, value) == -1.0


def _arrays_content(value: Any, depth: int) -> list[Any]:
    for _ in range(depth - 1):
        (value,) = value
    return list(value)


@pytest.mark.parametrize("depth", DEPTHS)
def test_infinity_at_any_depth_is_refused_where_it_is(depth: int) -> None:
    where = "[0]" * depth
    assert _problems(_document(_json_arrays("1e400", depth))) == [
        (f"[0].tool_calls[0].arguments{where}", INFINITY)
    ]
    for number in (math.inf, -math.inf, math.nan):
        assert _python_errors(_message(_arrays(number, depth))) == [
            ("json_value", ("tool_calls", 0, "arguments"))
        ]
    event = f'{{"type":"tool_exec_start","tool_call_id":"c","tool_name":"n","args":{_json_arrays("-1e400", depth)}}}'
    with pytest.raises(FormatError, match="found infinity"):
        parse_event(event)


@pytest.mark.parametrize("depth", DEPTHS)
def test_infinity_deep_in_an_unknown_key_leaves_the_key_out_with_a_warning(depth: int) -> None:
    with pytest.warns(UnknownKeyWarning) as caught:
        (message,) = loads(_document("{}", f',"x_u":{_json_arrays("1e400", depth)},"x_kept":1'))
    assert message.model_extra == {"x_kept": 1}
    (warning,) = [w.message for w in caught if isinstance(w.message, UnknownKeyWarning)]
    assert (warning.location, warning.key) == ("[0]", "x_u")
    assert warning.reason == INFINITY


@pytest.mark.parametrize("depth", DEPTHS)
def test_integers_at_the_serde_limit_at_any_depth(depth: int) -> None:
    for inside in (LIMIT - 1, -(LIMIT - 1)):
        (message,) = loads(_document(_json_arrays(str(inside), depth)))
        assert message.tool_calls[0].arguments == _arrays(inside, depth)
        assert Message.model_validate(_message(_arrays(inside, depth))).tool_calls[0].arguments == _arrays(
            inside, depth
        )
    # From the limit to the largest double and half a unit past it, an integer is read as that
    # double, which serde_json reads (compatibility.md); twice the limit is refused.
    for band, largest in ((LIMIT, 1.7976931348623157e308), (-LIMIT, -1.7976931348623157e308)):
        (message,) = loads(_document(_json_arrays(str(band), depth)))
        from_python = Message.model_validate(_message(_arrays(band, depth)))
        for arguments in (message.tool_calls[0].arguments, from_python.tool_calls[0].arguments):
            (value,) = _arrays_content(arguments, depth)
            assert (type(value), value) == (float, largest)
    for beyond in (2 * LIMIT, -2 * LIMIT):
        assert _python_errors(_message(_arrays(beyond, depth))) == [
            ("json_value", ("tool_calls", 0, "arguments"))
        ]
        assert _problems(_document(_json_arrays(str(beyond), depth))) == [
            (
                f"[0].tool_calls[0].arguments{'[0]' * depth}",
                "expected an integer that serde_json reads (below about 1.8e308), found a larger one",
            )
        ]


@pytest.mark.parametrize("depth", DEPTHS)
def test_an_unknown_keys_integers_keep_up_to_4000_digits_at_any_depth(depth: int) -> None:
    longest, too_long = 10**4000 - 1, 10**4000
    data = _message({}, x_u=_arrays(longest, depth))
    assert Message.model_validate(data).model_extra == {"x_u": _arrays(longest, depth)}
    (message,) = loads(_document("{}", f',"x_u":{_json_arrays(str(longest), depth)}'))
    assert message.model_extra == {"x_u": _arrays(longest, depth)}
    assert _python_errors(_message({}, x_u=_arrays(too_long, depth))) == [("unknown_json_value", ("x_u",))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (message,) = loads(_document("{}", f',"x_u":{_json_arrays(str(too_long), depth)}'))
    assert message.model_extra == {}
    assert [type(w.message) for w in caught] == [UnknownKeyWarning]


@pytest.mark.parametrize("depth", DEPTHS)
def test_a_key_with_a_lone_surrogate_is_kept_but_not_written_at_any_depth(depth: int) -> None:
    message = Message.model_validate(_message(_arrays({"\ud800": 1}, depth)))
    with pytest.raises(FormatError) as caught:
        dumps([message])
    ((where, what),) = [(p.location, p.message) for p in caught.value.problems]
    assert where == "[0].tool_calls[0].arguments" + "[0]" * depth
    assert "unpaired surrogate" in what


@pytest.mark.parametrize("depth", DEPTHS)
def test_python_values_json_has_no_type_for_are_refused_at_any_depth(depth: int) -> None:
    for value in ((1, 2), {1}, b"x", {1: "a"}, object()):
        assert _python_errors(_message(_arrays(value, depth))) == [
            ("json_value", ("tool_calls", 0, "arguments"))
        ]


# --- A repeated key: serde_json reads each of its values before it keeps the last (a map insert),
# so a value it cannot read makes the document unreadable at any depth (compatibility.md: NaN and
# Infinity are refused even in an unknown key; a number past a double's range in a known value).


def _repeated(bad: str, depth: int) -> str:
    value = f'{{"a":{bad},"a":2}}'
    for _ in range(depth):
        value = f'{{"k":{value}}}'
    return value


@pytest.mark.parametrize("depth", [0, 1, 3, 4, 5, 10, 100])
@pytest.mark.parametrize("bad", ["NaN", "Infinity", "1e400", _json_arrays("1", VALUE_DEPTH_MAX)])
def test_the_first_value_of_a_repeated_key_in_arguments_is_checked_too(bad: str, depth: int) -> None:
    with pytest.raises(FormatError):
        loads(_document(_repeated(bad, depth)))
    event = '{"type":"tool_exec_start","tool_call_id":"c","tool_name":"f","args":%s}'
    with pytest.raises(FormatError):
        parse_event(event % _repeated(bad, depth))


@pytest.mark.parametrize("depth", [0, 1, 3, 4, 5, 10, 100])
@pytest.mark.parametrize("bad", ["NaN", "-Infinity"])
def test_the_first_value_of_a_repeated_key_in_an_unknown_key_is_checked_too(bad: str, depth: int) -> None:
    with pytest.raises(FormatError):
        loads(_document("{}", unknown=f',"x":{_repeated(bad, depth)}'))


# docs/compatibility.md: from serde_json's limit "up to the largest double and half a unit past
# it, an integer ... is read here as the largest double"; past that, it is refused.
_BAND = [LIMIT, 2**1024 - 2**970 - 1]
_PAST_THE_BAND = 2**1024 - 2**970  # rounds to infinity


@pytest.mark.parametrize("band", _BAND)
def test_an_integer_of_the_narrow_band_is_not_blamed_for_another_value(band: int) -> None:
    ((message,),) = [loads(_document(f'{{"a":{band}}}'))]
    assert message.tool_calls[0].arguments == {"a": 1.7976931348623157e308}
    ((where, what),) = _problems(_document(f'{{"a":{band},"b":1e999}}'))
    assert (where, what) == ("[0].tool_calls[0].arguments.b", INFINITY)
    block = {"type": "tool_use", "id": "t", "name": "f", "input": {"a": band, "b": math.nan}}
    with pytest.raises(ConversionError) as caught:
        anthropic_messages.from_anthropic([{"role": "assistant", "content": [block]}], timestamp=0)
    assert [problem.location for problem in caught.value.problems] == ["[0].content[0].input.b"]


def test_an_integer_past_the_band_is_refused_where_it_is() -> None:
    ((where, what),) = _problems(_document(f'{{"a":1,"b":{_PAST_THE_BAND}}}'))
    assert where == "[0].tool_calls[0].arguments.b"
    assert what.endswith("found a larger one")


@pytest.mark.parametrize("band", _BAND)
@pytest.mark.parametrize("where", ["args", "unknown"])
def test_an_event_holding_an_integer_of_the_band_is_refused_as_serde_refuses_it(
    band: int, where: str
) -> None:
    # docs/compatibility.md, "Events are read whole": serde_json reads an event whole, unknown
    # keys included, and refuses every integer from its limit on ("number out of range").
    args, unknown = (f'{{"a":{band}}}', "") if where == "args" else ("{}", f',"x":{band}')
    event = f'{{"type":"tool_exec_start","tool_call_id":"c","tool_name":"f","args":{args}{unknown}}}'
    with pytest.raises(FormatError, match="serde_json reads an event whole"):
        parse_event(event)


def test_the_problem_finder_says_each_problem_in_document_order() -> None:
    # CHANGELOG: an error names the first bad value in the document; from_anthropic lists each.
    value = {1: "x", "ratio": math.nan, 2: ["y", math.inf]}
    assert list(_json_rules.value_problems(value)) == [
        ((), "expected an object key (a string), found 1"),
        (("ratio",), "expected a finite number, found NaN"),
        ((), "expected an object key (a string), found 2"),
    ]
    assert list(_json_rules.value_problems({"a": [1, math.inf], "b": math.nan})) == [
        (("a", 1), INFINITY),
        (("b",), "expected a finite number, found NaN"),
    ]


@pytest.mark.parametrize(
    ("data", "keys"),
    [
        (b'{"type":"warning","message":"x"}', ["type", "message"]),
        (b'{ "a" : [1,{"b":"]"}] , "typ\\u0065" : 1e400, "c":true}', ["a", "type", "c"]),
        (b'{"a":"\\"}","b":2}', ["a", "b"]),  # an escaped quote does not end the string
        (b'{"a":' + b"[" * 3000 + b"]" * 3000 + b',"b":1}', ["a", "b"]),  # past Python's recursion
        (b'{"a":"caf\xe9","b\xffc":1}', ["a", "b\ufffdc"]),  # invalid UTF-8
        (b'{"type":"warning","mes', ["type"]),  # torn: the keys before the cut
        (b'{"a":1 "b":2}', ["a"]),  # stops where the object breaks
        (b'{"a":,"b":1}', ["a"]),
        (b"{}", []),
        (b'[{"a":1}]', []),  # no object opens there
    ],
)
def test_top_level_keys_reads_an_object_s_own_keys_as_far_as_they_read(data: bytes, keys: list[str]) -> None:
    assert list(top_level_keys(data)) == keys
