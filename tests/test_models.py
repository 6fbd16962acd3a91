"""The models: orion-core's constructors, immutability, strict typing, timestamps."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    Conversation,
    Message,
    OrionMessagesError,
    Role,
    ToolCall,
    ToolResult,
    dumps_message,
    find_problems,
    loads_message,
)
from orion_messages.models import now_ms


def test_constructors_set_the_role() -> None:
    assert Message.system("msg-1", "s").role is Role.SYSTEM
    assert Message.user("msg-2", "u").role is Role.USER
    assert Message.assistant("msg-3", "a").role is Role.ASSISTANT
    assert Message.tool_result_message("msg-4", "call-1", "read_file", "out").role is Role.TOOL_RESULT


def test_constructors_leave_the_optional_fields_unset() -> None:
    message = Message.user("msg-1", "hi")
    assert message.tool_calls == ()
    assert message.tool_result is None
    assert message.token_count is None
    assert message.pinned is False
    assert message.model_extra == {}


def test_tool_result_stores_its_text_twice() -> None:
    message = Message.tool_result_message("msg-4", "call-1", "read_file", "file contents...", False)
    assert message.content == "file contents..."
    assert message.tool_result == ToolResult(
        tool_call_id="call-1", tool_name="read_file", content="file contents...", is_error=False
    )
    assert message.tool_result.pending is False
    assert not message.is_pending


def test_tool_result_error_flag() -> None:
    message = Message.tool_result_message("msg-4", "call-1", "read_file", "no such file", True)
    assert message.tool_result is not None
    assert message.tool_result.is_error is True


def test_tool_result_pending_keyword_and_pending_result() -> None:
    with pytest.warns(DeprecationWarning, match="pending_result"):
        by_flag = Message.tool_result("msg-5", "call-2", "scan", "", pending=True, timestamp=9)
    placeholder = Message.pending_result("msg-5", "call-2", "scan", timestamp=9)
    assert by_flag == placeholder
    assert placeholder.is_pending
    assert placeholder.tool_result is not None
    assert placeholder.tool_result.pending is True
    assert placeholder.tool_result.is_error is False
    assert placeholder.content == placeholder.tool_result.content == ""
    with_text = Message.pending_result("msg-6", "call-3", "scan", "queued")
    assert with_text.content == "queued"
    assert with_text.tool_result is not None
    assert with_text.tool_result.content == "queued"


def test_tool_result_is_a_constructor_on_the_class_and_a_field_on_instances() -> None:
    assert callable(Message.tool_result)
    assert Message.user("m", "x").tool_result is None
    assert "tool_result" in Message.model_fields


def test_assistant_takes_tool_calls_as_a_list_or_tuple() -> None:
    calls = [ToolCall(id="msg-3-call-1", name="add", arguments={"a": 2, "b": 3})]
    from_list = Message.assistant("msg-3", "", calls, timestamp=1)
    from_tuple = Message.assistant("msg-3", "", tuple(calls), timestamp=1)
    assert from_list == from_tuple
    assert from_list.tool_calls == tuple(calls)


def test_constructors_stamp_now_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    message = Message.user("m", "x")
    after = time.time_ns() // 1_000_000
    assert before <= message.timestamp <= after
    assert message.timestamp <= now_ms()


def test_direct_construction_without_timestamp_is_deprecated_and_stamps_now() -> None:
    before = time.time_ns() // 1_000_000
    with pytest.warns(DeprecationWarning, match="without timestamp= is deprecated"):
        direct = Message(id="m", role="user", content="x")  # type: ignore[call-arg]
    after = time.time_ns() // 1_000_000
    assert before <= direct.timestamp <= after


def test_timestamp_is_required_when_validating_as_on_the_wire() -> None:
    data = {"id": "m", "role": "user", "content": "x"}
    with pytest.raises(ValidationError) as caught:
        Message.model_validate(data)
    assert [(e["type"], e["loc"]) for e in caught.value.errors()] == [("missing", ("timestamp",))]
    with pytest.raises(ValidationError):
        Message.model_validate_json(b'{"id":"m","role":"user","content":"x"}')
    assert "timestamp" in Message.model_json_schema()["required"]


def test_explicit_timestamp_is_kept() -> None:
    assert Message.user("m", "x", timestamp=0).timestamp == 0
    assert Message.system("m", "x", timestamp=-5).timestamp == -5


def test_created_at_is_aware_utc_and_exact() -> None:
    message = Message.user("m", "x", timestamp=1781512345678)
    created = message.created_at
    assert created.tzinfo is not None
    assert created.utcoffset() == timedelta(0)
    assert created == datetime(2026, 6, 15, 8, 32, 25, 678000, tzinfo=timezone.utc)
    assert Message.user("m", "x", timestamp=0).created_at == datetime(1970, 1, 1, tzinfo=timezone.utc)
    before_epoch = Message.user("m", "x", timestamp=-1).created_at
    assert before_epoch == datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=timezone.utc)


def test_created_at_out_of_datetime_range_says_so() -> None:
    with pytest.raises(OverflowError):
        _ = Message.user("m", "x", timestamp=-(2**63)).created_at


def test_models_are_immutable() -> None:
    message = Message.user("m", "x", timestamp=1)
    with pytest.raises(ValidationError):
        message.content = "changed"  # type: ignore[misc]
    call = ToolCall(id="c", name="n", arguments={})
    with pytest.raises(ValidationError):
        call.name = "other"  # type: ignore[misc]
    result = ToolResult(tool_call_id="c", tool_name="n", content="", is_error=False)
    with pytest.raises(ValidationError):
        result.is_error = True  # type: ignore[misc]


def test_pin_and_unpin_return_changed_copies() -> None:
    message = Message.user("msg-5", "Remember: the project is called Orion.", timestamp=1)
    pinned = message.pin()
    assert pinned.pinned is True
    assert message.pinned is False
    assert pinned.model_copy(update={"pinned": False}) == message
    assert pinned.unpin() == message
    assert pinned.pin() == pinned
    assert message.unpin() == message


def test_with_token_count_validates_the_u32_range() -> None:
    message = Message.user("m", "x", timestamp=1)
    assert message.with_token_count(0).token_count == 0
    assert message.with_token_count(2**32 - 1).token_count == 2**32 - 1
    assert message.with_token_count(7).with_token_count(None).token_count is None
    for out_of_range in (-1, 2**32):
        with pytest.raises(ArgumentValueError, match="token_count must be an integer from 0 to 4294967295"):
            message.with_token_count(out_of_range)
    for wrong_type in (True, 1.0, "5"):
        with pytest.raises(ArgumentTypeError, match="token_count must be an int or None"):
            message.with_token_count(wrong_type)  # type: ignore[arg-type]


def _wrong(value: object) -> Any:
    """A value of a type the signature refuses, passed on purpose."""
    return value


@pytest.mark.parametrize(
    ("build", "error", "text"),
    [
        (lambda: Message.user(_wrong(5), "hi"), ArgumentTypeError, "Message.user: id: input should be a valid string, got 5"),
        (lambda: Message.system("m", _wrong(None)), ArgumentTypeError, "Message.system: content: input should be a valid string, got None"),
        (lambda: Message.user("m", "x", timestamp=_wrong("now")), ArgumentTypeError, "Message.user: timestamp: input should be a valid integer, got a str"),
        (lambda: Message.user("m", "x", timestamp=2**63), ArgumentValueError, "Message.user: timestamp: input should be less than or equal to 9223372036854775807, got 9223372036854775808"),
        (lambda: Message.assistant("m", "x", _wrong(5)), ArgumentTypeError, "Message.assistant: tool_calls: input should be a valid tuple, got 5"),
        (lambda: Message.pending_result(_wrong(None), "c", "f"), ArgumentTypeError, "Message.pending_result: id: input should be a valid string, got None"),
        (lambda: Message.pending_result("m", "c", "f", timestamp=-(2**63) - 1), ArgumentValueError, "Message.pending_result: timestamp: input should be greater than or equal to -9223372036854775808, got -9223372036854775809"),
        (lambda: Message.tool_result_message("m", "c", "n", "x", is_error=_wrong("no")), ArgumentTypeError, "Message.tool_result_message: is_error: input should be a valid boolean, got a str"),
        (lambda: Message.pending_result("m", "c", _wrong(None)), ArgumentTypeError, "Message.pending_result: tool_name: input should be a valid string, got None"),
    ],
)  # fmt: skip
def test_constructors_raise_the_library_s_argument_errors(
    build: Callable[[], Message], error: type[OrionMessagesError], text: str
) -> None:
    with pytest.raises(error) as raised:
        build()
    assert str(raised.value) == text
    assert isinstance(raised.value.__cause__, ValidationError)  # pydantic's details stay at hand


def test_pydantic_s_own_entry_points_keep_pydantic_s_error() -> None:
    with pytest.raises(ValidationError):
        Message(id=5, role="user", content="x", timestamp=1)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Message.user("m", "x").model_copy(update={"content": 5})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timestamp", "5"),
        ("timestamp", 1.0),
        ("timestamp", True),
        ("timestamp", 2**63),
        ("timestamp", -(2**63) - 1),
        ("token_count", -1),
        ("token_count", 2**32),
        ("token_count", "1"),
        ("pinned", "true"),
        ("pinned", 1),
        ("content", None),
        ("content", 5),
        ("id", None),
        ("role", "User"),
        ("role", "tool"),
    ],
)
def test_fields_are_strict_from_python_too(field: str, value: object) -> None:
    data: dict[str, object] = {"id": "m", "role": "user", "content": "x", "timestamp": 1}
    data[field] = value
    with pytest.raises(ValidationError):
        Message(**data)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("timestamp", 1.5),
        ("timestamp", 2**64),
        ("token_count", -1),
        ("token_count", 2**32),
        ("role", "bogus"),
        ("pinned", "yes"),
        ("content", None),
        ("note", float("nan")),  # an unknown key: a JSON value, and JSON has no NaN
    ],
)
def test_model_copy_validates_its_update_as_the_constructor_does(field: str, value: object) -> None:
    # The reference page: strict types, i64 timestamps, u32 token counts, five roles; a copy
    # that orion-core could not read back is refused where it is made, not when written.
    message = Message.user("m", "x", timestamp=1)
    with pytest.raises(ValidationError) as raised:
        message.model_copy(update={field: value})
    assert raised.value.errors()[0]["loc"][0] == field


def test_model_copy_keeps_pydantics_fields_set_and_copies_deeply_when_asked() -> None:
    call = ToolCall(id="c", name="n", arguments={"a": [1]})
    message = Message.assistant("m", "x", [call], timestamp=1)
    changed = message.model_copy(update={"token_count": 5})
    assert changed.token_count == 5
    assert changed.model_fields_set == {"id", "role", "content", "timestamp", "tool_calls", "token_count"}
    assert message.model_copy(update={"role": "assistant"}).role is Role.ASSISTANT
    deep = message.model_copy(update={"pinned": True}, deep=True)
    assert deep.tool_calls[0].arguments == {"a": [1]}
    assert deep.tool_calls[0].arguments is not call.arguments


def test_model_validate_json_reads_minus_zero_as_serde_json_does() -> None:
    # The reference page: serde_json reads -0 as the float -0.0, refused in an integer field
    # and kept (written -0.0) in a free JSON value.
    with pytest.raises(ValidationError):
        Message.model_validate_json('{"id":"a","role":"user","content":"","timestamp":-0}')
    call = ToolCall.model_validate_json(b'{"id":"c","name":"n","arguments":[-0, "-0"]}')
    assert call.model_dump_json() == '{"id":"c","name":"n","arguments":[-0.0,"-0"]}'
    # Malformed JSON is reported at its place in the document as given (column 18: the "x").
    with pytest.raises(ValidationError, match="line 1 column 18"):
        ToolCall.model_validate_json('{"id":"c","a":-0 x}')


def test_role_accepts_the_enum_and_its_value_from_python() -> None:
    assert Message(id="m", role=Role.TOOL_CALL, content="", timestamp=1).role is Role.TOOL_CALL
    assert Message(id="m", role="tool_call", content="", timestamp=1).role is Role.TOOL_CALL


def test_tool_result_field_requires_is_error() -> None:
    with pytest.raises(ValidationError):
        ToolResult(tool_call_id="c", tool_name="n", content="")  # type: ignore[call-arg]


def test_tool_call_requires_arguments_but_takes_any_json_value() -> None:
    with pytest.raises(ValidationError):
        ToolCall(id="c", name="n")  # type: ignore[call-arg]
    for value in (None, 1, 1.5, "s", True, [], {}, [1, {"a": [None]}], {"b": 1, "a": 2}, 2**70):
        assert ToolCall(id="c", name="n", arguments=value).arguments == value


def test_unknown_keys_from_python_are_kept() -> None:
    message = Message(id="m", role="user", content="x", timestamp=1, x_origin="web")
    assert message.model_extra == {"x_origin": "web"}


def test_every_public_field_has_a_description() -> None:
    for model in (Message, ToolCall, ToolResult):
        for name, field in model.model_fields.items():
            assert field.description, f"{model.__name__}.{name} has no description"


# Twenty unknown keys in an order no set keeps (a set's order follows the string hash, which
# changes with PYTHONHASHSEED): an edited copy must write them back in this order.
_UNSORTED_KEYS = [f"k{(7 * i) % 20}" for i in range(20)]


def test_an_edited_copy_keeps_the_unknown_keys_in_their_order() -> None:
    extras = ",".join(f'"{key}":{number}' for number, key in enumerate(_UNSORTED_KEYS))
    result = f'{{"tool_call_id":"c","tool_name":"t","content":"","is_error":false,"pending":true,{extras}}}'
    call = '{"id":"a","role":"assistant","content":"","timestamp":1,"tool_calls":[{"id":"c","name":"t","arguments":{}}]}'
    pending = loads_message(
        f'{{"id":"b","role":"tool_result","content":"","timestamp":2,"tool_result":{result},{extras}}}'
    )
    edited = [pending.pin(), pending.with_token_count(3), pending.model_copy(update={"content": "x"})]
    edited.append(Conversation([loads_message(call), pending]).resolve("c", "done"))
    expected_tail = "," + extras + "}"
    for message in edited:
        written = dumps_message(message).decode()
        assert written.endswith(expected_tail)  # the message's own unknown keys, in their order
        assert f'"is_error":false,{extras}}}' in written or f'"pending":true,{extras}}}' in written


@pytest.mark.parametrize("given", ["python", "json"])
def test_a_lax_call_keeps_the_json_types_of_free_values(given: str) -> None:
    # pydantic's per-call strict=False makes every choice lax, where bool takes 1 and int takes
    # 1.0; a free value must still come back as written (orion-core keeps 1, 1.0 and true apart).
    values = [1, 0, 1.0, 0.0, True, False, None, "1", 2.5, -0.0, [1, 1.0, True], {"k": 0}]
    data: dict[str, Any] = {
        "id": "msg-1",
        "role": "assistant",
        "content": "",
        "timestamp": 1,
        "tool_calls": [{"id": "call-1", "name": "f", "arguments": {"v": values}}],
        "x_unknown": values,
    }
    if given == "json":
        message = Message.model_validate_json(dumps_message(Message.model_validate(data)), strict=False)
    else:
        message = Message.model_validate(data, strict=False)
    for kept in (message.tool_calls[0].arguments["v"], message.model_extra["x_unknown"]):  # type: ignore[index]
        assert [type(value) for value in kept] == [type(value) for value in values]
        assert repr(kept) == repr(values)


class _Shouting(Message, frozen=True):
    """A host's own message class, with a method of its own."""

    def shout(self) -> str:
        return self.content.upper()


def test_a_subclass_of_message_reads_and_writes_the_wire_form() -> None:
    # Built from the inherited fields: tool_result must default to None, not to the class-level
    # constructor of the same name.
    line = b'{"id":"msg-1","role":"user","content":"hi","timestamp":1}'
    built = _Shouting.user("msg-1", "hi", timestamp=1)
    read = _Shouting.model_validate_json(line)
    for message in (built, read):
        assert type(message) is _Shouting
        assert message.tool_result is None
        assert not message.is_pending
        assert message.shout() == "HI"
        assert dumps_message(message) == line
        assert message.model_dump_json().encode() == line
        assert message.model_dump() == {"id": "msg-1", "role": Role.USER, "content": "hi", "timestamp": 1}
    assert Conversation([built]).pending() == []
    assert find_problems([built]) == []


def test_a_subclass_carries_a_tool_result_and_a_pending_one() -> None:
    done = _Shouting.tool_result_message("msg-2", "call-1", "clock", "12:00", timestamp=2)
    waiting = _Shouting.pending_result("msg-3", "call-2", "clock", timestamp=3)
    assert dumps_message(done) == (
        b'{"id":"msg-2","role":"tool_result","content":"12:00","timestamp":2,"tool_result":'
        b'{"tool_call_id":"call-1","tool_name":"clock","content":"12:00","is_error":false}}'
    )
    assert waiting.is_pending
    assert not done.is_pending


def test_the_deprecated_tool_result_constructor_is_messages_alone() -> None:
    with pytest.raises(AttributeError):
        _Shouting.tool_result("msg-2", "call-1", "clock", "12:00")  # type: ignore[misc]
    with pytest.warns(DeprecationWarning, match=r"tool_result_message"):
        assert Message.tool_result("msg-2", "call-1", "clock", "12:00", timestamp=2).role is Role.TOOL_RESULT
