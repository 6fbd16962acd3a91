"""Arguments of the wrong kind given to the message models, templates, checks, conversations,
converters and ``FormatError`` are refused with the library's own errors, naming the function and
the argument, instead of a bare AttributeError or TypeError from deep inside, a wrong name, or a
silent coercion. Each expectation is written out by hand."""

from __future__ import annotations

import re
from collections import deque
from typing import Any

import pytest

from orion_messages import (
    TEMPLATES,
    ArgumentTypeError,
    Conversation,
    ConversionError,
    FormatError,
    Message,
    Problem,
    ToolCall,
    find_problems,
    from_anthropic,
    to_anthropic,
    to_openai,
)

USER = Message.user("msg-1", "hi", timestamp=1)
CALL = ToolCall(id="msg-2-call-1", name="clock", arguments={})


def _wrong(value: object) -> Any:
    """A value of a type the signature refuses, passed on purpose."""
    return value


# --- ChatTemplate.format_message (audit A1) -----------------------------------------------------


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@pytest.mark.parametrize(
    ("given", "kind"),
    [(None, "a NoneType"), ("hello", "a str"), ({"role": "user", "content": "x"}, "a dict"), (5, "an int"), ([USER], "a list")],
)  # fmt: skip
def test_format_message_names_what_is_not_a_message(name: str, given: object, kind: str) -> None:
    # It was AttributeError: 'NoneType' object has no attribute 'role', in every template.
    template = TEMPLATES[name]
    cls = type(template).__name__
    with pytest.raises(
        ArgumentTypeError, match=rf"^{cls}\.format_message: message must be a Message, got {kind}$"
    ):
        template.format_message(given)  # type: ignore[arg-type]


def test_format_message_still_renders_a_message() -> None:
    assert TEMPLATES["chatml"].format_message(USER) == "<|im_start|>user\nhi<|im_end|>\n"


# --- find_problems (audit A5) --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "kind"), [(None, "a NoneType"), (5, "an int"), (1.5, "a float"), (object(), "an object")]
)
def test_find_problems_names_what_is_not_a_list(given: object, kind: str) -> None:
    # It was TypeError: 'NoneType' object is not iterable, though the docstring promised this.
    with pytest.raises(ArgumentTypeError, match=rf"^find_problems takes a list of messages, got {kind}$"):
        find_problems(given)  # type: ignore[arg-type]


def test_find_problems_reads_any_iterable_once() -> None:
    duplicate = Message.user(USER.id, "again", timestamp=2)
    problems = find_problems(iter([USER, duplicate]))
    assert [problem.location for problem in problems] == ["[1].id"]
    with pytest.raises(ArgumentTypeError, match=r"^find_problems takes a list of messages, got a Message$"):
        find_problems(USER)  # type: ignore[arg-type]


# --- FormatError's rewrites (audit A15) ----------------------------------------------------------

ERROR = FormatError([Problem("id", "bad")])


def test_format_error_within_refuses_a_location_that_is_not_a_str() -> None:
    # It was TypeError: unsupported operand type(s) for +: 'dict' and 'str'.
    with pytest.raises(ArgumentTypeError, match=r"^FormatError\.within: location must be a str, got a dict$"):
        ERROR.within(_wrong({}))
    assert str(ERROR.within("[3]")) == "[3].id: bad"


def test_format_error_at_line_refuses_a_line_that_is_not_an_int() -> None:
    # It printed "line abc: id: bad".
    with pytest.raises(ArgumentTypeError, match=r"^FormatError\.at_line: line must be an int, got a str$"):
        ERROR.at_line(_wrong("abc"))
    with pytest.raises(ArgumentTypeError, match=r"^FormatError\.at_line: line must be an int, got a bool$"):
        ERROR.at_line(True)
    with pytest.raises(ArgumentTypeError, match=r"^FormatError\.at_line: source must be a str, got an int$"):
        ERROR.at_line(2, source=_wrong(5))
    assert str(ERROR.at_line(2, source="log.jsonl")) == "log.jsonl: line 2: id: bad"


def test_format_error_with_source_refuses_a_source_that_is_not_a_str() -> None:
    # It printed "None: id: bad".
    with pytest.raises(
        ArgumentTypeError, match=r"^FormatError\.with_source: source must be a str, got a NoneType$"
    ):
        ERROR.with_source(_wrong(None))
    assert str(ERROR.with_source("chat.json")) == "chat.json: id: bad"


# --- The named constructors (audit C1, C2, C8) ---------------------------------------------------


def test_pending_result_names_itself_for_a_bad_id_or_timestamp() -> None:
    # Its errors said "Message.tool_result_message: id: ...", the other constructor of the role.
    with pytest.raises(
        ArgumentTypeError, match=r"^Message\.pending_result: id: input should be a valid string, got None$"
    ):
        Message.pending_result(_wrong(None), "c", "f")
    with pytest.raises(
        ArgumentTypeError,
        match=r"^Message\.pending_result: timestamp: input should be a valid integer, got a str$",
    ):
        Message.pending_result("m", "c", "f", timestamp=_wrong("now"))


def test_tool_result_message_still_names_itself() -> None:
    with pytest.raises(
        ArgumentTypeError, match=r"^Message\.tool_result_message: id: input should be a valid string, got 5$"
    ):
        Message.tool_result_message(_wrong(5), "c", "f", "out")


def test_assistant_refuses_one_tool_call_in_place_of_a_list() -> None:
    # It was "tool_calls[0]: ... got a tuple; tool_calls[1]: ...": pydantic iterated the call's fields.
    said = "Message.assistant: tool_calls takes a list of ToolCall, got a ToolCall (put it in a list: [call])"
    with pytest.raises(ArgumentTypeError, match=f"^{re.escape(said)}$"):
        Message.assistant("m", "c", _wrong(CALL))


def test_assistant_refuses_a_mapping_in_place_of_a_list() -> None:
    with pytest.raises(
        ArgumentTypeError,
        match=r"^Message\.assistant: tool_calls takes a list of ToolCall, got a dict \(build each call with ToolCall\(",
    ):
        Message.assistant("m", "c", _wrong({"id": "c", "name": "n", "arguments": {}}))


def test_assistant_refuses_a_dict_for_a_tool_call() -> None:
    # It turned the dict into a ToolCall: the one lenient spot of the typed constructors.
    with pytest.raises(
        ArgumentTypeError,
        match=r"^Message\.assistant: tool_calls\[1\]: expected a ToolCall, got a dict \(build it with ToolCall\(",
    ):
        Message.assistant("m", "c", [CALL, _wrong({"id": "c2", "name": "n", "arguments": {}})])
    with pytest.raises(
        ArgumentTypeError, match=r"^Message\.assistant: tool_calls\[0\]: expected a ToolCall, got an int$"
    ):
        Message.assistant("m", "c", (_wrong(5),))


def test_assistant_takes_any_iterable_of_tool_calls() -> None:
    for calls in ([CALL], (CALL,), iter([CALL]), deque([CALL]), (call for call in [CALL])):
        assert Message.assistant("m", "c", calls, timestamp=1).tool_calls == (CALL,)
    for wrong in (iter, deque):  # the items of any iterable are checked as a list's are
        with pytest.raises(
            ArgumentTypeError, match=r"^Message\.assistant: tool_calls\[0\]: expected a ToolCall, got a dict"
        ):
            Message.assistant("m", "c", _wrong(wrong([{"id": "c", "name": "n", "arguments": {}}])))


# --- Conversation and accept= refuse a mapping or a model whole (audit C3) -----------------------


def test_conversation_refuses_a_dict_whole() -> None:
    # It was "expected a Message, got str": the dict's first key, with no index.
    with pytest.raises(
        ArgumentTypeError, match=r"^Conversation: expected an iterable of Message, got a dict$"
    ):
        Conversation(_wrong({"a": 1}))
    conversation = Conversation([USER])
    with pytest.raises(
        ArgumentTypeError, match=r"^Conversation\.extend: expected an iterable of Message, got a dict$"
    ):
        conversation.extend(_wrong({"id": "msg-2"}))
    with pytest.raises(
        ArgumentTypeError,
        match=r"^Conversation\.replace_messages: expected an iterable of Message, got a dict$",
    ):
        conversation.replace_messages(_wrong({"id": "msg-2"}))
    assert conversation.messages == [USER]


def test_conversation_refuses_a_model_whole() -> None:
    with pytest.raises(
        ArgumentTypeError, match=r"^Conversation: expected an iterable of Message, got a ToolCall$"
    ):
        Conversation(_wrong(CALL))
    with pytest.raises(
        ArgumentTypeError,
        match=r"^Conversation\.extend: expected an iterable of Message, got a Message \(put it in a list: \[message\]\)$",
    ):
        Conversation().extend(_wrong(USER))


def test_conversation_names_the_item_that_is_not_a_message() -> None:
    with pytest.raises(ArgumentTypeError, match=r"^Conversation: \[1\]: expected a Message, found a str$"):
        Conversation([USER, _wrong("hello")])
    conversation = Conversation([USER])
    with pytest.raises(
        ArgumentTypeError, match=r"^Conversation\.extend: \[0\]: expected a Message, found an int$"
    ):
        conversation.extend([_wrong(5)])
    with pytest.raises(ArgumentTypeError, match=r"^Conversation\.append: expected a Message, got a dict$"):
        conversation.append(_wrong({"id": "m"}))
    assert conversation.messages == [USER]


@pytest.mark.parametrize(("accept", "kind"), [(USER, "a Message"), ({"id": True}, "a dict")])
def test_accept_refuses_a_model_or_a_mapping_whole(accept: object, kind: str) -> None:
    # A Message was read as its fields: "accept must hold field names (str), got tuple ('id', 'msg-1')".
    said = f'accept must be a collection of field names, such as {{"id", "timestamp"}}, got {kind}'
    for convert in (to_openai, to_anthropic):
        with pytest.raises(ArgumentTypeError, match=f"^{re.escape(said)}$"):
            convert([USER], strict=True, accept=_wrong(accept))


# --- from_anthropic's system (audit C6) ---------------------------------------------------------


@pytest.mark.parametrize(
    ("system", "found"), [(5, "the number 5"), ({"type": "text", "text": "x"}, "an object")]
)
def test_from_anthropic_says_system_may_be_a_string(system: object, found: str) -> None:
    # It said "system: expected an array, found the number 5", though a string is valid too.
    said = f"system: expected a string or an array of text blocks, found {found}"
    with pytest.raises(ConversionError, match=f"^{re.escape(said)}$"):
        from_anthropic([], system=_wrong(system))
    assert [m.content for m in from_anthropic([], system="be brief", timestamp=0).value] == ["be brief"]
