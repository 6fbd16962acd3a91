"""Round-trip properties: ours -> target -> ours equals the original up to exactly what the report named."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from orion_messages import (
    AnthropicRequest,
    ConversionError,
    ConversionResult,
    Loss,
    Message,
    Role,
    dumps,
    from_anthropic,
    from_chat_template,
    from_openai,
    to_anthropic,
    to_chat_template,
    to_openai,
    to_orion_backend,
)
from orion_messages._text import location, quoted
from orion_messages.orion_backend import TOOL_RESULT_PREFIX

from .strategies import agent_conversations, conversations

STAMP = 1234


def _fields(message: Message) -> dict[str, Any]:
    """The message's wire fields, flattened to paths as locations show them, such as
    ``tool_calls[0].arguments`` or ``["a.b"]`` (a key that is not a plain name)."""
    flat: dict[str, Any] = {}
    for key, value in message.model_dump(mode="json", exclude_defaults=True).items():
        if key == "tool_calls":
            for number, call in enumerate(value):
                flat.update({location(("tool_calls", number, k)): v for k, v in call.items()})
            flat["tool_calls"] = len(value)
        elif key == "tool_result" and value is not None:
            flat.update({location(("tool_result", k)): v for k, v in value.items()})
            flat["tool_result"] = True
        else:
            flat[location((key,))] = value
    return flat


def _differences(original: Sequence[Message], back: Sequence[Message]) -> set[str]:
    assert len(original) == len(back)
    found: set[str] = set()
    for index, (a, b) in enumerate(zip(original, back, strict=True)):
        left, right = _fields(a), _fields(b)
        for key in left.keys() | right.keys():
            if key not in left or key not in right or repr(left[key]) != repr(right[key]):
                found.add(_at(index, key))
    return found


def _at(index: int, field: str) -> str:
    """The location of ``field`` (as ``_fields`` names it) in message ``index``."""
    return f"[{index}]{field}" if field.startswith("[") else f"[{index}].{field}"


def _covered(location: str, losses: Sequence[Loss]) -> bool:
    return any(
        location == loss.location or location.startswith((loss.location + ".", loss.location + "["))
        for loss in losses
    )


def _assert_only_reported(original: list[Message], back: list[Message], losses: Sequence[Loss]) -> None:
    unreported = sorted(d for d in _differences(original, back) if not _covered(d, losses))
    assert not unreported, f"changed without a report: {unreported}"


def _no_bare_results(history: list[Message]) -> bool:
    return all(m.tool_result is not None for m in history if m.role is Role.TOOL_RESULT)


@given(agent_conversations())
def test_openai_round_trip_changes_only_what_was_reported(history: list[Message]) -> None:
    there = to_openai(history)
    back = from_openai(there.value, timestamp=STAMP)
    assert not back.losses
    _assert_only_reported(history, back.value, there.losses)


@given(conversations())
def test_openai_round_trip_of_any_messages(history: list[Message]) -> None:
    assume(_no_bare_results(history))
    there = to_openai(history, orphans="keep")
    back = from_openai(there.value, timestamp=STAMP)
    _assert_only_reported(history, back.value, [*there.losses, *back.losses])


def _to_anthropic(history: list[Message], **options: Any) -> ConversionResult[AnthropicRequest] | None:
    """``to_anthropic``, or None when it refuses a turn of only whitespace, checked to be the one
    reason (Anthropic refuses such text, and leaving a user turn out would change the request)."""
    # A system message that is empty or only whitespace is left out (reported; tested in
    # test_convert): the message lists would no longer line up.
    assume(not any(m.role is Role.SYSTEM and not m.content.strip() for m in history))
    try:
        return to_anthropic(history, **options)
    except ConversionError as error:
        refused = error.problems
    for problem in refused:
        index = int(problem.location[1 : problem.location.index("]")])
        message = history[index]
        assert problem.location == f"[{index}].content", problem
        assert message.content.strip() == "" != message.content, problem
        assert message.role is Role.USER or not message.tool_calls, problem
    return None


@given(agent_conversations())
def test_anthropic_round_trip_changes_only_what_was_reported(history: list[Message]) -> None:
    there = _to_anthropic(history)
    if there is None:
        return
    back = from_anthropic(**there.value, timestamp=STAMP)
    assert not back.losses
    _assert_only_reported(history, back.value, there.losses)


@given(conversations())
def test_anthropic_round_trip_of_any_messages(history: list[Message]) -> None:
    assume(_no_bare_results(history))
    roles = [m.role for m in history]
    leading = next((i for i, role in enumerate(roles) if role is not Role.SYSTEM), len(roles))
    assume(Role.SYSTEM not in roles[leading:])  # a later one moves to the system parameter
    there = _to_anthropic(history, orphans="keep")
    if there is None:
        return
    back = from_anthropic(**there.value, timestamp=STAMP)
    _assert_only_reported(history, back.value, [*there.losses, *back.losses])


@given(conversations())
def test_anthropic_tool_use_ids_are_unique_and_results_follow_their_calls(history: list[Message]) -> None:
    # Anthropic refuses a request whose tool_use ids repeat; each renamed id is reported.
    assume(_no_bare_results(history))
    there = _to_anthropic(history, orphans="keep")
    if there is None:
        return
    blocks = [b for m in there.value["messages"] if isinstance(m["content"], list) for b in m["content"]]
    ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
    assert len(ids) == len(set(ids))
    given_ids = {c.id for m in history for c in m.tool_calls} | {
        m.tool_result.tool_call_id for m in history if m.tool_result is not None
    }
    for new in set(ids) - given_ids:  # a new id: the call's rename is reported
        # the reason quotes the id as messages quote text from the data: escaped and cut
        assert any(f"sent as {quoted(new)}" in loss.reason for loss in there.losses), new


def _null_extras(history: list[Message]) -> tuple[list[str], list[Message]]:
    """Where the metadata holds a null that reads back as not given (an unknown key holding null:
    on a message, on a tool_result message's result, on a call of a message the template gives
    calls to), and the conversation without those keys."""
    found: list[str] = []
    kept: list[Message] = []
    for index, message in enumerate(history):
        data = message.model_dump()
        found.extend(location((index, key)) for key, value in data.items() if value is None)
        data = {key: value for key, value in data.items() if value is not None}
        if message.role is Role.TOOL_RESULT and "tool_result" in data:
            result = data["tool_result"]
            found.extend(
                location((index, "tool_result", key)) for key, value in result.items() if value is None
            )
            data["tool_result"] = {key: value for key, value in result.items() if value is not None}
        if message.role in (Role.ASSISTANT, Role.TOOL_CALL) and "tool_calls" in data:
            calls = []
            for number, call in enumerate(data["tool_calls"]):
                nulls = [key for key, value in call.items() if value is None and key != "arguments"]
                found.extend(location((index, "tool_calls", number, key)) for key in nulls)
                calls.append({key: value for key, value in call.items() if key not in nulls})
            data["tool_calls"] = calls
        kept.append(Message.model_validate(data))
    return found, kept


@given(conversations(), st.sampled_from(["object", "string"]))
def test_chat_template_round_trip_is_exact_with_metadata(history: list[Message], mode: str) -> None:
    assume(_no_bare_results(history))
    there = to_chat_template(history, arguments=mode)  # type: ignore[arg-type]
    # docs/conversions.md: a null in the metadata reads as not given, so an unknown key holding
    # null is reported on the way out and does not come back; everything else does.
    nulls, history = _null_extras(history)
    assert sorted(loss.location for loss in there.losses) == sorted(nulls)
    back = from_chat_template(there.value, timestamp=STAMP)
    # A string argument that is not JSON text is read back as that string, and said so.
    for loss in back.losses:
        assert loss.field.endswith(".function.arguments"), loss
        assert loss.index is not None
        number = int(loss.field.split("[")[1].split("]")[0])
        assert isinstance(history[loss.index].tool_calls[number].arguments, str)
    assert dumps(back.value) == dumps(history)


@given(conversations(), st.sampled_from(["object", "string"]))
def test_chat_template_round_trip_without_metadata(history: list[Message], mode: str) -> None:
    assume(_no_bare_results(history))
    there = to_chat_template(history, arguments=mode, metadata=False)  # type: ignore[arg-type]
    back = from_chat_template(there.value, timestamp=STAMP)
    _assert_only_reported(history, back.value, [*there.losses, *back.losses])


@given(conversations(), st.text(max_size=5))
def test_orion_backend_reports_everything_but_role_and_text(history: list[Message], prompt: str) -> None:
    result = to_orion_backend(history, system_prompt=prompt)
    sent = result.value[1:] if prompt else result.value
    assert len(sent) == len(history)
    for index, (message, entry) in enumerate(zip(history, sent, strict=True)):
        prefix = TOOL_RESULT_PREFIX if message.role is Role.TOOL_RESULT else ""
        assert entry["content"] == prefix + message.content
        for field in _fields(message):
            if field in ("tool_calls", "tool_result"):
                continue  # the count and presence: their fields are checked one by one
            answer = message.tool_result
            if answer is not None and message.role is Role.TOOL_RESULT:
                if field == "tool_result.content" and answer.content == message.content:
                    continue  # sent: it is the text
                if field == "tool_result.is_error" and not answer.is_error:
                    continue  # sent: a plain result is what it is
            if field in ("role", "content") and not (field == "role" and message.role is Role.TOOL_RESULT):
                continue
            assert _covered(_at(index, field), result.losses), field


# Text that may hold lone surrogates (a Python str can; UTF-8 text, and so orion-core, cannot).
_ANY_STR = st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=8)


@given(_ANY_STR, _ANY_STR, _ANY_STR)
def test_what_the_readers_accept_dumps_writes(content: str, name: str, value: str) -> None:
    # A string orion-core cannot hold is refused as it is read, never left for dumps to refuse.
    openai: list[dict[str, Any]] = [
        {"role": "user", "content": content},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": value}],
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": name, "arguments": f'"{value}"'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "name": name, "content": value},
    ]
    anthropic: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": content}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c", "name": name, "input": {value: [value]}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c", "content": value}]},
    ]
    readers: list[Callable[[], ConversionResult[list[Message]]]] = [
        lambda: from_openai(openai, timestamp=STAMP),
        lambda: from_anthropic(anthropic, system=content, timestamp=STAMP),
    ]
    lone = not all(_encodes(text) for text in (content, name, value))
    for read in readers:
        if lone:
            with pytest.raises(ConversionError, match="unpaired surrogate"):
                read()
        else:
            dumps(read().value)


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# A chat-template history: assistant turns calling tools with ids from a small set (repeats
# included), and tool messages naming a call id or none, never a tool name.
_template_steps = st.lists(
    st.one_of(
        st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(["f", "g", "h"])), min_size=1, max_size=3),
        st.sampled_from(["a", "b", "c", None]),
    ),
    max_size=30,
)


@given(_template_steps)
def test_chat_template_results_answer_the_oldest_unanswered_call(steps: list[Any]) -> None:
    # The rule of docs/conversions.md, transcribed naively: a result answers the oldest call
    # not yet answered with its id, or the oldest of all when it names none; it takes that
    # call's tool name, and each call is answered once.
    dicts: list[dict[str, Any]] = []
    unanswered: list[tuple[str, str]] = []
    expected: list[tuple[str, str]] = []
    for step in steps:
        if isinstance(step, list):
            calls = [{"id": i, "type": "function", "function": {"name": n, "arguments": {}}} for i, n in step]
            dicts.append({"role": "assistant", "content": "", "tool_calls": calls})
            unanswered.extend(step)
            continue
        dicts.append({"role": "tool", "content": "ok", **({} if step is None else {"tool_call_id": step})})
        match = next((pair for pair in unanswered if step is None or pair[0] == step), None)
        if match is not None:
            unanswered.remove(match)
        expected.append(match if match is not None else (step or "", ""))
    results = [m.tool_result for m in from_chat_template(dicts, timestamp=STAMP).value if m.tool_result]
    assert [(r.tool_call_id, r.tool_name) for r in results] == expected
