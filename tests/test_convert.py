"""Conversions against hand-written goldens, and their reports, orphans, strict mode and errors.

The expected forms in ``fixtures/conversions/`` were written by hand from the providers'
documentation (see its README), never produced by the converters.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    ArgumentTypeError,
    ConversionError,
    ConversionResult,
    Loss,
    Message,
    OrionMessagesError,
    ToolCall,
    dumps,
    find_orphans,
    fix_orphans,
    from_anthropic,
    from_chat_template,
    from_openai,
    load,
    loads,
    to_anthropic,
    to_chat_template,
    to_openai,
    to_orion_backend,
)
from orion_messages.conversions import MISSING_RESULT_TEXT

from .conftest import FIXTURES

GOLDENS = FIXTURES / "conversions"
STAMP = 1781600000000


def _json(name: str) -> Any:
    return json.loads((GOLDENS / name).read_text(encoding="utf-8"))


def _locations(losses: Any) -> list[str]:
    return [loss.location for loss in losses]


@pytest.fixture
def tool_loop() -> list[Message]:
    return load(GOLDENS / "tool-loop.orion.json")


def test_to_openai_matches_the_golden(tool_loop: list[Message]) -> None:
    result = to_openai(tool_loop)
    assert result.value == _json("tool-loop.openai.json")
    assert _locations(result.losses) == _json("tool-loop.losses.json")["openai"]


def test_openai_arguments_are_the_wire_writers_bytes(tool_loop: list[Message]) -> None:
    # The JSON text of each call's arguments is what orion-core writes for that value.
    calls = [call for message in tool_loop for call in message.tool_calls]
    texts = [
        c["function"]["arguments"]
        for m in to_openai(tool_loop).value
        if m["role"] == "assistant"
        for c in m.get("tool_calls", [])
    ]
    for call, text in zip(calls, texts, strict=True):
        wire = dumps([Message.assistant("m", "", [call], timestamp=0)])
        assert f'"arguments":{text}}}'.encode() in wire


def test_to_anthropic_matches_the_golden(tool_loop: list[Message]) -> None:
    result = to_anthropic(tool_loop)
    assert result.value == _json("tool-loop.anthropic.json")
    assert _locations(result.losses) == _json("tool-loop.losses.json")["anthropic"]


def test_to_chat_template_matches_the_golden(tool_loop: list[Message]) -> None:
    result = to_chat_template(tool_loop, metadata=False)
    assert result.value == _json("tool-loop.chat-template.v2.json")
    assert _locations(result.losses) == _json("tool-loop.losses.json")["chat-template"]


def test_chat_template_string_arguments_are_json_text(tool_loop: list[Message]) -> None:
    objects = to_chat_template(tool_loop, metadata=False).value
    strings = to_chat_template(tool_loop, metadata=False, arguments="string").value
    for plain, text in zip(objects, strings, strict=True):
        for a, b in zip(plain.get("tool_calls", []), text.get("tool_calls", []), strict=True):
            assert json.loads(b["function"]["arguments"]) == a["function"]["arguments"]


def test_to_orion_backend_matches_the_golden(tool_loop: list[Message]) -> None:
    result = to_orion_backend(tool_loop)
    assert result.value == _json("tool-loop.orion-backend.json")
    assert _locations(result.losses) == _json("tool-loop.losses.json")["orion-backend"]


def test_orion_backend_sends_the_system_prompt_first_unless_empty() -> None:
    # orion-core's http_chat_backend_tests: ("system", prompt) first; an empty prompt is not sent.
    history = [
        Message.user("1", "Where is it?", timestamp=0),
        Message.assistant("2", "Under the sea.", timestamp=0),
    ]
    sent = to_orion_backend(history, system_prompt="You are Odin.").value
    assert sent == [
        {"role": "system", "content": "You are Odin."},
        {"role": "user", "content": "Where is it?"},
        {"role": "assistant", "content": "Under the sea."},
    ]
    assert to_orion_backend(history).value[0] == {"role": "user", "content": "Where is it?"}


def test_from_openai_matches_the_golden() -> None:
    result = from_openai(_json("openai-weather.openai.json"), timestamp=STAMP)
    assert dumps(result.value) == (GOLDENS / "openai-weather.orion.json").read_bytes().strip()
    assert _locations(result.losses) == _json("openai-weather.losses.json")


def test_from_anthropic_matches_the_golden() -> None:
    result = from_anthropic(**_json("anthropic-weather.anthropic.json"), timestamp=STAMP)
    assert dumps(result.value) == (GOLDENS / "anthropic-weather.orion.json").read_bytes().strip()
    assert _locations(result.losses) == _json("anthropic-weather.losses.json")


@pytest.mark.parametrize("name", ["tool-loop.chat-template.json", "tool-loop.chat-template.v2.json"])
def test_from_chat_template_reads_the_golden(name: str, tool_loop: list[Message]) -> None:
    back = from_chat_template(_json(name), timestamp=STAMP).value
    assert [(m.role, m.content, m.tool_calls) for m in back] == [
        (m.role, m.content, m.tool_calls) for m in tool_loop
    ]


# --------------------------------------------------------------------------------------------
# Orphans


def _orphaned() -> list[Message]:
    return [
        Message.user("msg-1", "go", timestamp=1),
        Message.assistant(
            "msg-2",
            "",
            [ToolCall(id="c1", name="a", arguments={}), ToolCall(id="c2", name="b", arguments={})],
            timestamp=2,
        ),
        Message.tool_result_message("msg-3", "c1", "a", "ok", timestamp=3),
        Message.tool_result_message("msg-4", "nobody", "z", "stray", timestamp=4),
        Message.user("msg-5", "next", timestamp=5),
    ]


def test_orphans_are_found() -> None:
    assert [str(o) for o in find_orphans(_orphaned())] == [
        '[1].tool_calls[1]: tool call "c2" has no result',
        '[3].tool_result: result for "nobody" answers no earlier tool call',
    ]


def test_orphans_refuse_by_default_for_providers() -> None:
    for convert in (to_openai, to_anthropic):
        with pytest.raises(ConversionError) as caught:
            convert(_orphaned())
        assert [p.location for p in caught.value.problems] == ["[1].tool_calls[1]", "[3].tool_result"]


def test_orphans_drop() -> None:
    result = fix_orphans(_orphaned(), "drop")
    assert [m.id for m in result.value] == ["msg-1", "msg-2", "msg-3", "msg-5"]
    assert [c.id for c in result.value[1].tool_calls] == ["c1"]
    assert _locations(result.losses) == ["[1].tool_calls[1]", "[3]"]
    assert find_orphans(result.value) == []


def test_orphans_synthesize_an_error_result_after_the_answers() -> None:
    result = fix_orphans(_orphaned(), "synthesize")
    added = result.value[3]
    assert [m.id for m in result.value] == ["msg-1", "msg-2", "msg-3", added.id, "msg-5"]
    assert added.tool_result is not None
    assert (added.tool_result.tool_call_id, added.tool_result.is_error) == ("c2", True)
    assert added.content == MISSING_RESULT_TEXT
    assert find_orphans(result.value) == []
    openai = to_openai(_orphaned(), orphans="synthesize")
    assert [m["role"] for m in openai.value] == ["user", "assistant", "tool", "tool", "user"]
    assert "[1].tool_calls[1]" in _locations(openai.losses)


def _answered_twice(first_pending: bool, second_pending: bool) -> list[Message]:
    def result(message_id: str, text: str, pending: bool) -> Message:
        if pending:
            return Message.pending_result(message_id, "c1", "f", timestamp=3)
        return Message.tool_result_message(message_id, "c1", "f", text, timestamp=3)

    return [
        Message.user("msg-1", "read", timestamp=1),
        Message.assistant("msg-2", "", [ToolCall(id="c1", name="f", arguments={})], timestamp=2),
        result("msg-3", "first", first_pending),
        result("msg-4", "second", second_pending),
    ]


@pytest.mark.parametrize(
    ("first_pending", "second_pending", "second"),
    [
        (False, False, 3),  # the later of two completed results is the second one
        (True, False, 2),  # a completed result answers before a placeholder, wherever it sits
        (False, True, 3),
        (True, True, 3),
    ],
)
def test_a_call_answered_twice_is_an_orphan(first_pending: bool, second_pending: bool, second: int) -> None:
    # Anthropic answers 400 "each tool_use must have a single result"; both used to be sent.
    history = _answered_twice(first_pending, second_pending)
    answer = 5 - second
    assert [str(o) for o in find_orphans(history)] == [
        f'[{second}].tool_result: a second result for tool call "c1" (the result at [{answer}] answers it)'
    ]
    assert find_orphans(history)[0].answered_at == answer
    assert not find_orphans(history)[0].is_misplaced
    for convert in (to_openai, to_anthropic):
        with pytest.raises(ConversionError) as caught:
            convert(history)
        assert [p.location for p in caught.value.problems] == [f"[{second}].tool_result"]
    dropped = fix_orphans(history, "drop")
    assert [m.id for m in dropped.value] == ["msg-1", "msg-2", f"msg-{answer + 1}"]
    assert _real(dropped.losses) == [
        f"[{second}]: a second result for its tool call (the result at [{answer}] answers it): dropped"
    ]
    assert fix_orphans(history, "synthesize").value == dropped.value
    kept_text = "" if answer == 2 and first_pending else ("first" if answer == 2 else "second")
    assert to_anthropic(history, orphans="drop").value["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": kept_text}
    ]


def test_a_third_result_for_an_id_sent_twice_in_one_message_is_an_orphan() -> None:
    history = _twice_in_one_message("one", "two", "three")
    assert [str(o) for o in find_orphans(history)] == [
        '[4].tool_result: a second result for tool call "c1" (the result at [2] answers it)'
    ]
    with pytest.raises(ConversionError) as caught:
        to_anthropic(history)  # renamed: the third result takes c1-2, which "two" answers
    assert [p.location for p in caught.value.problems] == ["[4].tool_result"]


def test_a_pending_result_answers_its_call() -> None:
    history = load(GOLDENS / "tool-loop.orion.json")
    assert find_orphans(history) == []


def test_keep_passes_orphans_through() -> None:
    result = to_openai(_orphaned(), orphans="keep")
    assert [m["role"] for m in result.value] == ["user", "assistant", "tool", "tool", "user"]


_UNANSWERED = [
    Message.user("msg-5", "x", timestamp=0),
    Message.assistant("msg-6", "", [ToolCall(id="a", name="b", arguments={})], timestamp=1),
]
_POLICY_TEXT = 'orphans: expected "error", "drop", "synthesize" or "keep", found '


@pytest.mark.parametrize(
    ("policy", "shown"),
    [("Drop", "'Drop'"), ("bogus", "'bogus'"), (None, "None"), ("", "''"), (["drop"], "['drop']")],
)
def test_an_unknown_orphan_policy_is_refused_everywhere(policy: Any, shown: str) -> None:
    converters = (
        lambda: fix_orphans(_UNANSWERED, policy),
        lambda: to_openai(_UNANSWERED, orphans=policy),
        lambda: to_anthropic(_UNANSWERED, orphans=policy),
        lambda: to_chat_template(_UNANSWERED, orphans=policy),
    )
    for convert in converters:
        with pytest.raises(ConversionError) as caught:
            convert()
        assert isinstance(caught.value, ValueError)
        assert [p.location for p in caught.value.problems] == ["orphans"]
        assert str(caught.value) == _POLICY_TEXT + shown


def test_an_unknown_orphan_policy_is_refused_even_without_orphans() -> None:
    with pytest.raises(ConversionError, match=r"^orphans: expected"):
        to_openai([], orphans="bogus")  # type: ignore[arg-type]
    with pytest.raises(ConversionError, match=r"^orphans: expected"):
        fix_orphans([Message.user("m", "x", timestamp=0)], "Keep")  # type: ignore[arg-type]


def _late() -> list[Message]:
    """A call whose result comes after a user message: misplaced, not answered."""
    return [
        Message.user("msg-1", "q", timestamp=0),
        Message.assistant("msg-2", "", [ToolCall(id="c1", name="f", arguments={})], timestamp=1),
        Message.user("msg-3", "hurry", timestamp=2),
        Message.tool_result_message("msg-4", "c1", "f", "ok", timestamp=3),
    ]


def test_a_result_after_another_message_is_misplaced() -> None:
    found = find_orphans(_late())
    assert [(o.index, o.field, o.call_id, o.partner, o.is_misplaced) for o in found] == [
        (1, "tool_calls[0]", "c1", 3, True),
        (3, "tool_result", "c1", 1, True),
    ]
    assert [o.is_call for o in found] == [True, False]
    with pytest.raises(ConversionError) as caught:
        to_openai(_late())
    assert [p.location for p in caught.value.problems] == ["[1].tool_calls[0]", "[3].tool_result"]
    assert "comes too late" in str(caught.value)
    assert "does not follow its call at [1]" in str(caught.value)


@pytest.mark.parametrize(
    "between",
    [
        Message.system("msg-x", "note", timestamp=2),
        Message.assistant("msg-x", "still thinking", timestamp=2),
        Message.user("msg-x", "hurry", timestamp=2),
    ],
)
def test_only_tool_results_may_sit_between_a_call_and_its_result(between: Message) -> None:
    history = [
        Message.assistant(
            "msg-1",
            "",
            [ToolCall(id="c1", name="f", arguments={}), ToolCall(id="c2", name="g", arguments={})],
            timestamp=0,
        ),
        Message.tool_result_message("msg-2", "c2", "g", "two", timestamp=1),
        between,
        Message.tool_result_message("msg-4", "c1", "f", "one", timestamp=3),
    ]
    assert [str(o) for o in find_orphans(history)] == [
        '[0].tool_calls[0]: tool call "c1" has no result right after it (its result at [3] comes too late)',
        '[3].tool_result: result for "c1" does not follow its call at [0] '
        "(only tool results may come between a call and its result)",
    ]


def test_a_system_message_between_a_call_and_its_result_misplaces_it_only_where_it_stays() -> None:
    # Anthropic takes system text in its own parameter, so the result block still opens the
    # user turn right after the tool_use; OpenAI keeps the system message in the list between.
    history = [
        Message.assistant("msg-1", "", [ToolCall(id="c1", name="f", arguments={})], timestamp=0),
        Message.system("msg-2", "note", timestamp=1),
        Message.tool_result_message("msg-3", "c1", "f", "ok", timestamp=2),
    ]
    result = to_anthropic(history)
    assert result.value == {
        "system": "note",
        "messages": [
            {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]},
        ],
    }
    assert [str(loss) for loss in result.losses if "." not in loss.location] == [  # beside ids and timestamps
        "[1]: a system message after the conversation started moves to the system parameter"
    ]
    with pytest.raises(ConversionError):
        to_openai(history)
    assert [o.index for o in find_orphans(history)] == [0, 2]


def test_drop_removes_a_misplaced_result_and_its_call() -> None:
    result = fix_orphans(_late(), "drop")
    # the assistant message held only the call: left empty, it is dropped too (Anthropic refuses it)
    assert [m.id for m in result.value] == ["msg-1", "msg-3"]
    assert _locations(result.losses) == ["[1].tool_calls[0]", "[1]", "[3]"]
    assert find_orphans(result.value) == []
    anthropic = to_anthropic(_late(), orphans="drop")
    assert anthropic.value["messages"] == [
        {"role": "user", "content": "q"},
        {"role": "user", "content": "hurry"},
    ]


def test_synthesize_answers_a_call_in_place_and_drops_its_late_result() -> None:
    result = fix_orphans(_late(), "synthesize")
    added = result.value[2]
    assert [m.id for m in result.value] == ["msg-1", "msg-2", added.id, "msg-3"]
    assert added.tool_result is not None
    assert (added.tool_result.tool_call_id, added.tool_result.is_error) == ("c1", True)
    assert _locations(result.losses) == ["[1].tool_calls[0]", "[3]"]
    assert find_orphans(result.value) == []
    openai = to_openai(_late(), orphans="synthesize")
    assert [m["role"] for m in openai.value] == ["user", "assistant", "tool", "user"]
    assert openai.value[2] == {"role": "tool", "tool_call_id": "c1", "content": MISSING_RESULT_TEXT}


def test_keep_passes_a_misplaced_result_through() -> None:
    result = to_openai(_late(), orphans="keep")
    assert [m["role"] for m in result.value] == ["user", "assistant", "user", "tool"]


def test_drop_keeps_an_assistant_message_that_still_has_text() -> None:
    history = [
        Message.user("msg-1", "q", timestamp=0),
        Message.assistant("msg-2", "Let me look.", [ToolCall(id="c1", name="f", arguments={})], timestamp=1),
        Message.user("msg-3", "next", timestamp=2),
    ]
    result = to_anthropic(history, orphans="drop")
    assert result.value["messages"][1] == {"role": "assistant", "content": "Let me look."}
    assert [loss.location for loss in result.losses if loss.field not in ("id", "timestamp")] == [
        "[1].tool_calls[0]"
    ]


def test_calls_that_are_not_sent_answer_nothing() -> None:
    # tool calls on a user message are not sent (reported), so they are not calls for the check
    asking = Message.user("msg-1", "q", timestamp=0).model_copy(
        update={"tool_calls": (ToolCall(id="c1", name="f", arguments={}),)}
    )
    answer = Message.tool_result_message("msg-2", "c1", "f", "ok", timestamp=1)
    assert [str(o) for o in find_orphans([asking, answer])] == [
        '[1].tool_result: result for "c1" answers no earlier tool call'
    ]
    assert find_orphans([asking]) == []
    result = to_openai([asking], orphans="synthesize")
    assert result.value == [{"role": "user", "content": "q"}]
    assert "[0].tool_calls" in _locations(result.losses)


def test_losses_are_in_input_order_after_an_orphan_fix() -> None:
    result = to_openai(_orphaned(), orphans="synthesize")
    indexes = [loss.index for loss in result.losses]
    assert indexes == sorted(i for i in indexes if i is not None)
    assert _locations(result.losses)[:2] == ["[0].id", "[0].timestamp"]


# --------------------------------------------------------------------------------------------
# Strict mode and accept


def test_strict_refuses_a_lossy_conversion(tool_loop: list[Message]) -> None:
    with pytest.raises(ConversionError) as caught:
        to_openai(tool_loop, strict=True)
    assert "[4].tool_result.is_error" in [p.location for p in caught.value.problems]


def test_strict_accepts_named_fields() -> None:
    history = [Message.user("msg-1", "hi", timestamp=0)]
    assert to_openai(history, strict=True, accept={"id", "timestamp"}).value == [
        {"role": "user", "content": "hi"}
    ]
    with pytest.raises(ConversionError):
        to_openai([history[0].pin()], strict=True, accept={"id", "timestamp"})


def test_strict_chat_template_with_metadata_is_lossless(tool_loop: list[Message]) -> None:
    result = to_chat_template(tool_loop, strict=True)
    assert result.lossless
    assert dumps(from_chat_template(result.value, strict=True).value) == dumps(tool_loop)


# --------------------------------------------------------------------------------------------
# Arguments as JSON text


def test_openai_arguments_that_are_not_json_stay_a_string() -> None:
    messages = [
        {"role": "assistant", "content": None, "tool_calls": [_call("c1", "NaN"), _call("c2", '{"a": 1,}')]},
    ]
    result = from_openai(messages, timestamp=0)
    assert [c.arguments for c in result.value[0].tool_calls] == ["NaN", '{"a": 1,}']
    assert _locations(result.losses) == [
        "[0].tool_calls[0].function.arguments",
        "[0].tool_calls[1].function.arguments",
    ]
    with pytest.raises(ConversionError):
        from_openai(messages, strict=True)


def _call(call_id: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": arguments}}


def test_from_openai_reports_unknown_keys_inside_calls_and_parts() -> None:
    call: dict[str, Any] = {
        "id": "c1",
        "type": "function",
        "index": 0,
        "extra_content": {"google": {"thought_signature": "abc"}},
        "function": {"name": "f", "arguments": "{}", "strict": True},
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]
    result = from_openai(messages, timestamp=0)
    assert result.value[1].tool_calls == (ToolCall(id="c1", name="f", arguments={}),)
    assert _locations(result.losses) == [
        "[0].content[0].cache_control",
        "[1].tool_calls[0].index",
        "[1].tool_calls[0].extra_content",
        "[1].tool_calls[0].function.strict",
    ]
    assert all(loss.reason == "orion-core has no place for this key" for loss in result.losses)


def test_from_anthropic_reports_unknown_keys_inside_blocks() -> None:
    ephemeral = {"type": "ephemeral"}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "hi", "id": "msg_1", "metadata": None},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look.", "citations": [{"type": "char_location"}]},
                {"type": "tool_use", "id": "t1", "name": "f", "input": {}, "cache_control": ephemeral},
                {"type": "tool_use", "id": "t2", "name": "f", "input": {}, "caller": None},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "text", "text": "a", "cache_control": ephemeral},
                        {"type": "text", "text": "b", "citations": None},
                    ],
                    "cache_control": ephemeral,
                },
                {"type": "tool_result", "tool_use_id": "t2", "content": "c", "x_new": 1},
                {"type": "text", "text": "Thanks.", "cache_control": ephemeral},
            ],
        },
    ]
    result = from_anthropic(messages, timestamp=0)
    assert [(m.role.value, m.content) for m in result.value] == [
        ("user", "hi"),
        ("assistant", "Let me look."),
        ("tool_result", "ab"),
        ("tool_result", "c"),
        ("user", "Thanks."),
    ]
    assert _locations(result.losses) == [
        "[0].id",
        "[1].content[0].citations",
        "[1].content[1].cache_control",
        "[2].content[0].cache_control",
        "[2].content[0].content[0].cache_control",
        "[2].content[0].content",  # two text blocks joined
        "[2].content[1].x_new",
        "[2].content[2].cache_control",
    ]
    unknown = [loss for loss in result.losses if loss.location != "[2].content[0].content"]
    assert all(loss.reason == "orion-core has no place for this key" for loss in unknown)


def test_from_chat_template_reports_unknown_keys_inside_calls() -> None:
    call: dict[str, Any] = {
        "id": "c1",
        "type": "function",
        "index": 0,
        "extra_content": None,
        "function": {"name": "f", "arguments": {"a": 1}, "index": 0, "description": None},
    }
    messages: list[dict[str, Any]] = [
        {"role": "assistant", "content": "", "tool_calls": [_call("c0", "{}"), call]},
        {"role": "tool", "tool_call_id": "c0", "content": "x"},
        {"role": "tool", "tool_call_id": "c1", "content": "y"},
    ]
    result = from_chat_template(messages, timestamp=0)
    assert result.value[0].tool_calls[1] == ToolCall(id="c1", name="f", arguments={"a": 1})
    assert _locations(result.losses) == ["[0].tool_calls[1].index", "[0].tool_calls[1].function.index"]
    assert all(loss.reason == "orion-core has no place for this key" for loss in result.losses)


def test_openai_arguments_keep_numbers_and_order() -> None:
    text = '{"z":18446744073709551616,"a":1.0,"m":-0.0,"e":1e-7}'
    back = from_openai([{"role": "assistant", "content": "", "tool_calls": [_call("c", text)]}], timestamp=0)
    arguments = back.value[0].tool_calls[0].arguments
    assert list(arguments) == ["z", "a", "m", "e"]
    assert arguments["z"] == 2**64
    assert type(arguments["a"]) is float
    sent = to_openai(back.value, orphans="keep").value[0]
    assert sent["role"] == "assistant"
    assert sent["tool_calls"][0]["function"]["arguments"] == text


def test_openai_arguments_read_minus_zero_as_serde_json_does() -> None:
    # The reference page: serde_json reads -0 as the float -0.0 and writes it "-0.0".
    text = '{"n":-0,"s":"-0"}'
    back = from_openai([{"role": "assistant", "content": "", "tool_calls": [_call("c", text)]}], timestamp=0)
    assert dumps(back.value).count(b'"n":-0.0,"s":"-0"') == 1


# --------------------------------------------------------------------------------------------
# Invalid input, reported like loads


def test_from_openai_reports_every_problem_with_its_location() -> None:
    bad: list[Any] = [
        {"role": "user", "content": "ok"},
        {"role": "function", "content": "x"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": 7, "type": "function", "function": {"name": "f"}}],
        },
        {"role": "tool", "content": "r"},
        "not a message",
    ]
    with pytest.raises(ConversionError) as caught:
        from_openai(bad)
    assert [p.location for p in caught.value.problems] == [
        "[1].role",
        "[2].tool_calls[0].id",
        "[2].tool_calls[0].function.arguments",
        "[3].tool_call_id",
        "[4]",
    ]


def test_from_anthropic_reports_problems() -> None:
    bad: list[Any] = [
        {"role": "system", "content": "no"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": "text"}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": "yes"}]},
    ]
    with pytest.raises(ConversionError) as caught:
        from_anthropic(bad)
    assert [p.location for p in caught.value.problems] == [
        "[0].role",
        "[1].content[0].input",
        "[2].content[0].is_error",
    ]


def test_from_chat_template_reports_problems() -> None:
    bad: list[Any] = [
        {"role": "tool_result", "content": "x"},
        {"role": "assistant", "content": 5, "tool_calls": [{"function": {"name": "f"}}]},
        {"role": "user", "content": "hi", "orion": {"timestamp": "soon"}},
    ]
    with pytest.raises(ConversionError) as caught:
        from_chat_template(bad)
    assert [p.location for p in caught.value.problems] == [
        "[0].role",
        "[1].content",
        "[1].tool_calls[0].function.arguments",
        "[2].orion.timestamp",
    ]


def _template_call(arguments: Any) -> dict[str, Any]:
    return {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}


def _with_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": "x", "orion": metadata}


_A_ROLE = 'a role, one of "system", "user", "assistant", "tool_call" or "tool_result"'


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            [_with_metadata({"id": "a", "timestamp": "1"})],
            ['[0].orion.timestamp: expected an integer, found the string "1"'],
        ),
        ([_with_metadata({"id": 7})], ["[0].orion.id: expected a string, found the number 7"]),
        (
            [{"role": "user", "content": "x"}, _with_metadata({"pinned": "yes"})],
            ['[1].orion.pinned: expected a boolean (true or false), found the string "yes"'],
        ),
        (
            [_with_metadata({"token_count": -1})],
            ["[0].orion.token_count: expected an integer from 0 to 4294967295, found the number -1"],
        ),
        (
            [_with_metadata({"role": "robot"})],
            [f'[0].orion.role: expected {_A_ROLE}, found the string "robot"'],
        ),
        ([_with_metadata({"content": 5})], ["[0].orion.content: expected a string, found the number 5"]),
        (
            [_with_metadata({"note": float("inf")})],
            [
                "[0].orion.note: expected a finite number, found infinity (such as a number too large for a double)"
            ],
        ),
        (
            [
                {
                    "role": "tool",
                    "content": "r",
                    "tool_call_id": "c",
                    "name": "f",
                    "orion": {"tool_result": {"is_error": "no", "pending": 1}},
                }
            ],
            [
                '[0].orion.tool_result.is_error: expected a boolean (true or false), found the string "no"',
                "[0].orion.tool_result.pending: expected a boolean (true or false), found the number 1",
            ],
        ),
        (
            [_with_metadata({"tool_result": 5})],
            ["[0].orion.tool_result: expected an object, found the number 5"],
        ),
        (
            [_with_metadata({"tool_result": {"tool_call_id": "c", "tool_name": "f", "content": "r"}})],
            ["[0].orion.tool_result.is_error: required key is missing"],
        ),
        ([_with_metadata({"tool_calls": {}})], ["[0].orion.tool_calls: expected an array, found an object"]),
        (
            [_with_metadata({"tool_calls": [{"id": "c", "name": "f"}]})],
            ["[0].orion.tool_calls[0].arguments: required key is missing"],
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_template_call({})],
                    "orion": {"tool_calls": [{"name": 5}]},
                }
            ],
            ["[0].orion.tool_calls[0].name: expected a string, found the number 5"],
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_template_call({})],
                    "orion": {"tool_calls": ["x"]},
                }
            ],
            ['[0].orion.tool_calls[0]: expected an object, found the string "x"'],
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_template_call({})],
                    "orion": {"tool_calls": [{"arguments": float("nan")}]},
                }
            ],
            ["[0].orion.tool_calls[0].arguments: expected a finite number, found NaN"],
        ),
        (
            [{"role": "assistant", "content": "", "tool_calls": [_template_call({"a": float("nan")})]}],
            ["[0].tool_calls[0].function.arguments.a: expected a finite number, found NaN"],
        ),
        (
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [_template_call({"a": float("nan")})],
                    "orion": {"tool_calls": [{"note": 1}]},
                }
            ],
            ["[0].tool_calls[0].function.arguments.a: expected a finite number, found NaN"],
        ),
    ],
)
def test_from_chat_template_locates_problems_in_the_input(
    messages: list[dict[str, Any]], expected: list[str]
) -> None:
    # A value the "orion" metadata gave is reported under it; one from the template's own keys at
    # that key, in the template's spelling (function.arguments): where it is in the input.
    with pytest.raises(ConversionError) as caught:
        from_chat_template(messages, timestamp=0)
    assert [str(problem) for problem in caught.value.problems] == expected


def test_to_converters_refuse_what_is_not_a_message() -> None:
    # An argument of the wrong type, as find_orphans and every function taking messages refuse it.
    for convert in (to_openai, to_anthropic, to_chat_template, to_orion_backend, fix_orphans):
        with pytest.raises(ArgumentTypeError) as caught:
            convert([Message.user("a", "b", timestamp=0), {"role": "user"}])  # type: ignore[list-item]
        assert str(caught.value) == f"{convert.__name__}: [1]: expected a Message, found a dict"


_TIMESTAMP_TEXT = (
    "timestamp: expected a signed 64-bit integer of milliseconds since the Unix epoch "
    "(from -9223372036854775808 to 9223372036854775807) or None, found "
)


@pytest.mark.parametrize(
    ("stamp", "shown"),
    [
        (2**70, "1180591620717411303424"),
        (2**63, "9223372036854775808"),
        (-(2**63) - 1, "-9223372036854775809"),
        (1.5, "1.5"),
        ("5", "'5'"),
        (True, "True"),
    ],
)
def test_from_converters_refuse_a_bad_timestamp(stamp: Any, shown: str) -> None:
    readers: tuple[Callable[[], object], ...] = (
        lambda: from_openai([{"role": "user", "content": "x"}], timestamp=stamp),
        lambda: from_anthropic([{"role": "user", "content": "x"}], timestamp=stamp),
        lambda: from_chat_template([{"role": "user", "content": "x"}], timestamp=stamp),
        lambda: from_openai([], timestamp=stamp),  # refused even when no message would use it
    )
    for read in readers:
        with pytest.raises(ConversionError) as caught:
            read()
        assert [p.location for p in caught.value.problems] == ["timestamp"]
        assert str(caught.value) == _TIMESTAMP_TEXT + shown


def test_from_converters_take_the_extreme_timestamps() -> None:
    for stamp in (-(2**63), 2**63 - 1):
        for read in (from_openai, from_anthropic, from_chat_template):
            assert read([{"role": "user", "content": "x"}], timestamp=stamp).value[0].timestamp == stamp


@pytest.mark.parametrize(
    ("given", "found"),
    [
        ("abc", 'the string "abc"'),
        (b"[]", "bytes"),
        ({"role": "user", "content": "x"}, "an object"),
        (5, "the number 5"),
        (None, "None"),
    ],
)
def test_from_converters_refuse_what_is_not_a_list_once(given: Any, found: str) -> None:
    cases = (
        (from_openai, "OpenAI Chat"),
        (from_anthropic, "Anthropic"),
        (from_chat_template, "chat-template"),
    )
    for read, name in cases:
        with pytest.raises(ConversionError) as caught:
            read(given)
        assert [p.location for p in caught.value.problems] == ["messages"]
        assert str(caught.value) == f"messages: expected a list of {name} message dicts, found {found}"


def test_from_converters_still_take_any_iterable_of_dicts() -> None:
    dicts = ({"role": "user", "content": "x"},)
    assert [m.content for m in from_openai(iter(dicts), timestamp=0).value] == ["x"]
    assert [m.content for m in from_anthropic(d for d in dicts).value] == ["x"]
    assert [m.content for m in from_chat_template(dicts, timestamp=0).value] == ["x"]


@pytest.mark.parametrize(
    ("given", "found"),
    [
        ("abc", "a str"),
        (Message.user("m", "x", timestamp=0), "a Message (put it in a list: [message])"),
        (7, "an int"),
    ],
)
def test_to_converters_refuse_what_is_not_a_list_once(given: Any, found: str) -> None:
    for convert in (to_openai, to_anthropic, to_chat_template, to_orion_backend, fix_orphans):
        with pytest.raises(ArgumentTypeError) as caught:
            convert(given)
        assert str(caught.value) == f"{convert.__name__}: expected an iterable of Message, got {found}"


def test_a_tool_result_message_without_a_result_is_an_error() -> None:
    broken = Message(id="m", role="tool_result", content="x", timestamp=0)
    for convert in (to_openai, to_anthropic, to_chat_template):
        with pytest.raises(ConversionError, match=r"\[0\]\.tool_result"):
            convert([broken], orphans="keep")


# --------------------------------------------------------------------------------------------
# Anthropic specifics


def test_anthropic_wraps_arguments_that_are_not_an_object() -> None:
    history = [
        Message.user("1", "go", timestamp=0),
        Message.assistant("2", "", [ToolCall(id="c", name="f", arguments=[1, 2])], timestamp=0),
        Message.tool_result_message("3", "c", "f", "done", timestamp=0),
    ]
    result = to_anthropic(history)
    assert result.value["messages"][1]["content"][0]["input"] == {"value": [1, 2]}
    assert "[1].tool_calls[0].arguments" in _locations(result.losses)


def test_anthropic_moves_late_system_messages_and_reports_it() -> None:
    history = [Message.user("1", "hi", timestamp=0), Message.system("2", "be brief", timestamp=0)]
    result = to_anthropic(history)
    assert result.value["system"] == "be brief"
    assert "[1]" in _locations(result.losses)


def test_anthropic_reads_its_own_output_back(tool_loop: list[Message]) -> None:
    back = from_anthropic(**to_anthropic(tool_loop).value, timestamp=STAMP)
    assert [(m.role, m.content, m.tool_calls) for m in back.value] == [
        (m.role, m.content, m.tool_calls) for m in tool_loop
    ]
    assert back.value[4].tool_result is not None
    assert back.value[4].tool_result.is_error


def test_loss_report_is_plain_text() -> None:
    history = loads(b'[{"id":"m","role":"user","content":"x","timestamp":0,"x_new":{"a":1}}]')
    losses = to_openai(history).losses
    assert [str(loss) for loss in losses][-1].startswith("[0].x_new: unknown key")


def test_losses_outside_the_messages_have_no_index() -> None:
    result = from_anthropic(
        [], system=[{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    )
    assert [(loss.index, loss.location) for loss in result.losses] == [(None, "system[0].cache_control")]


def test_goldens_folder_has_a_readme() -> None:
    assert Path(GOLDENS / "README.md").is_file()


def test_the_docs_examples_run() -> None:
    import re

    page = (Path(__file__).resolve().parent.parent / "docs" / "conversions.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    assert len(blocks) >= 5
    for number, block in enumerate(blocks):
        exec(compile(block, f"docs/conversions.md, python block {number + 1}", "exec"), {})


# --------------------------------------------------------------------------------------------
# Reused tool-call ids. OpenAI-compatible servers (vLLM, llama.cpp) number calls per response,
# so "call_0" comes back in every turn; OpenAI pairs a tool message with the call right before
# it. Anthropic refuses a request whose tool_use ids repeat ("tool_use ids must be unique").


def _named_call(call_id: str, arguments: str, name: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _reused_openai() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": [_named_call("call_0", '{"q":"x"}', "search")]},
        {"role": "tool", "tool_call_id": "call_0", "content": "found"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_named_call("call_0", '{"path":"a"}', "read_file")],
        },
        {"role": "tool", "tool_call_id": "call_0", "content": "contents"},
    ]


def _reused_history() -> list[Message]:
    return [
        Message.user("msg-1", "q", timestamp=0),
        Message.assistant("msg-2", "", [ToolCall(id="call_0", name="search", arguments={})], timestamp=0),
        Message.tool_result_message("msg-3", "call_0", "search", "found", timestamp=0),
        Message.assistant("msg-4", "", [ToolCall(id="call_0", name="read_file", arguments={})], timestamp=0),
        Message.tool_result_message("msg-5", "call_0", "read_file", "contents", timestamp=0),
    ]


def _real(losses: Any) -> list[str]:
    return [str(loss) for loss in losses if loss.field not in ("id", "timestamp")]


def test_from_openai_names_each_result_after_the_call_it_answers_when_ids_repeat() -> None:
    result = from_openai(_reused_openai(), timestamp=0)
    names = [m.tool_result.tool_name for m in result.value if m.tool_result is not None]
    assert names == ["search", "read_file"]
    assert result.lossless


def test_from_anthropic_names_each_result_after_the_call_it_answers_when_ids_repeat() -> None:
    def use(name: str) -> dict[str, Any]:
        return {"role": "assistant", "content": [{"type": "tool_use", "id": "t0", "name": name, "input": {}}]}

    def answer(text: str) -> dict[str, Any]:
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t0", "content": text}]}

    given = [{"role": "user", "content": "q"}, use("search"), answer("found"), use("read_file"), answer("c")]
    result = from_anthropic(given, timestamp=0)
    names = [m.tool_result.tool_name for m in result.value if m.tool_result is not None]
    assert names == ["search", "read_file"]
    assert result.lossless


def test_to_openai_keeps_reused_ids_and_reports_no_false_tool_name_loss() -> None:
    result = to_openai(_reused_history())
    assert [m.get("tool_call_id") for m in result.value] == [None, None, "call_0", None, "call_0"]
    assert _real(result.losses) == []


def test_to_anthropic_gives_a_repeated_call_id_a_new_one_and_its_result_too() -> None:
    result = to_anthropic(_reused_history())
    assert result.value["messages"] == [
        {"role": "user", "content": "q"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_0", "name": "search", "input": {}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": "found"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "call_0-2", "name": "read_file", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_0-2", "content": "contents"}],
        },
    ]
    assert _real(result.losses) == [
        '[3].tool_calls[0].id: "call_0" is an earlier call\'s id too '
        '(Anthropic requires unique tool_use ids): sent as "call_0-2"',
        '[4].tool_result.tool_call_id: "call_0" sent as "call_0-2", the new id of the call it answers',
    ]
    back = from_anthropic(**result.value, timestamp=0)
    assert [m.tool_result.tool_name for m in back.value if m.tool_result is not None] == [
        "search",
        "read_file",
    ]


def test_to_anthropic_new_ids_are_unique_against_every_id_of_the_request() -> None:
    history = [
        *_reused_history(),
        Message.assistant("msg-6", "", [ToolCall(id="call_0-2", name="f", arguments={})], timestamp=0),
        Message.tool_result_message("msg-7", "call_0-2", "f", "r", timestamp=0),
        Message.assistant("msg-8", "", [ToolCall(id="call_0", name="g", arguments={})], timestamp=0),
        Message.tool_result_message("msg-9", "call_0", "g", "r", timestamp=0),
    ]
    result = to_anthropic(history)
    uses = [b for m in result.value["messages"] for b in m["content"] if isinstance(b, dict)]
    assert [b.get("id", b.get("tool_use_id")) for b in uses] == [
        "call_0", "call_0", "call_0-3", "call_0-3", "call_0-2", "call_0-2", "call_0-4", "call_0-4",
    ]  # fmt: skip
    assert [loss.location for loss in result.losses if "sent as" in loss.reason] == [
        "[3].tool_calls[0].id",
        "[4].tool_result.tool_call_id",
        "[7].tool_calls[0].id",
        "[8].tool_result.tool_call_id",
    ]


def _twice_in_one_message(*results: str) -> list[Message]:
    calls = [ToolCall(id="c1", name="f", arguments={}), ToolCall(id="c1", name="g", arguments={})]
    return [
        Message.user("1", "hi", timestamp=1),
        Message.assistant("2", "", calls, timestamp=1),
        *(
            Message.tool_result_message(f"r{n}", "c1", "f", text, timestamp=1)
            for n, text in enumerate(results)
        ),
    ]


def test_to_anthropic_same_id_twice_in_one_message_pairs_the_second_with_a_second_result() -> None:
    result = to_anthropic(_twice_in_one_message("one", "two"))
    assert result.value["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "f", "input": {}},
                {"type": "tool_use", "id": "c1-2", "name": "g", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "one"},
                {"type": "tool_result", "tool_use_id": "c1-2", "content": "two"},
            ],
        },
    ]
    # The second result names "f", its call is "g": reported as before.
    assert "[3].tool_result.tool_name" in _locations(result.losses)


def test_to_anthropic_same_id_twice_in_one_message_with_one_result_is_an_orphan() -> None:
    history = _twice_in_one_message("one")
    with pytest.raises(ConversionError) as caught:
        to_anthropic(history)
    assert [str(p) for p in caught.value.problems] == [
        '[1].tool_calls[1]: tool call "c1-2" has no result (its id in the conversation is "c1", '
        'sent as "c1-2": Anthropic requires unique tool_use ids)'
    ]
    dropped = to_anthropic(history, orphans="drop")
    assert dropped.value["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}],
    }
    assert _real(dropped.losses) == ["[1].tool_calls[1]: a tool call without a result: dropped"]
    synthesized = to_anthropic(history, orphans="synthesize")
    answers = synthesized.value["messages"][2]["content"]
    assert [(b["tool_use_id"], b.get("is_error", False)) for b in answers] == [("c1", False), ("c1-2", True)]
    assert _locations(x for x in synthesized.losses if x.field not in ("id", "timestamp")) == [
        "[1].tool_calls[1].id",
        "[1].tool_calls[1]",
    ]
    kept = to_anthropic(history, orphans="keep")
    assert [b["id"] for b in kept.value["messages"][1]["content"]] == ["c1", "c1-2"]


# --------------------------------------------------------------------------------------------
# New ids never repeat an id kept from the input


def test_from_chat_template_new_ids_continue_after_the_restored_counters() -> None:
    history = [Message.user("msg-1", "q", timestamp=5), Message.assistant("msg-2", "a", timestamp=6)]
    dicts = to_chat_template(history).value
    dicts.insert(1, {"role": "system", "content": "injected note"})
    dicts.append({"role": "assistant", "content": "more"})
    result = from_chat_template(dicts, timestamp=9)
    assert [m.id for m in result.value] == ["msg-1", "msg-3", "msg-2", "msg-4"]
    assert loads(dumps(result.value), strict=True) == result.value


def test_from_chat_template_new_ids_skip_restored_ids_that_are_not_at_the_start() -> None:
    history = [Message.user("msg-2", "q", timestamp=5), Message.assistant("a-7", "a", timestamp=6)]
    dicts = [{"role": "user", "content": "first"}, *to_chat_template(history).value]
    assert [m.id for m in from_chat_template(dicts, timestamp=0).value] == ["msg-3", "msg-2", "a-7"]


# --------------------------------------------------------------------------------------------
# Text of only whitespace: Anthropic answers 400 "text content blocks must contain
# non-whitespace text".


def test_to_anthropic_leaves_out_whitespace_beside_tool_calls_and_reports_it() -> None:
    history = [
        Message.user("1", "q", timestamp=0),
        Message.assistant("2", "\n\n", [ToolCall(id="c1", name="f", arguments={})], timestamp=0),
        Message.tool_result_message("3", "c1", "f", "ok", timestamp=0),
    ]
    result = to_anthropic(history)
    assert result.value["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "f", "input": {}}],
    }
    assert _real(result.losses) == [
        '[1].content: only whitespace ("\\n\\n") beside tool calls: not sent '
        "(Anthropic refuses text of only whitespace)"
    ]


def test_to_anthropic_drop_removes_a_message_left_with_only_whitespace() -> None:
    history = [
        Message.user("1", "q", timestamp=0),
        Message.assistant("2", "\n", [ToolCall(id="c1", name="f", arguments={})], timestamp=0),
    ]
    result = to_anthropic(history, orphans="drop")
    assert result.value == {"messages": [{"role": "user", "content": "q"}]}
    assert _real(result.losses) == [
        "[1].tool_calls[0]: a tool call without a result: dropped",
        '[1]: only whitespace ("\\n", which the target refuses as text) and no tool call left once '
        "its orphaned calls were dropped: message dropped",
    ]
    # Other targets take whitespace: the message stays, as before.
    assert to_openai(history, orphans="drop").value[1] == {"role": "assistant", "content": "\n"}


@pytest.mark.parametrize(
    ("blank", "shown"),
    [(Message.user("2", " \n", timestamp=0), '" \\n"'), (Message.assistant("2", "\t", timestamp=0), '"\\t"')],
)
def test_to_anthropic_refuses_a_turn_of_only_whitespace(blank: Message, shown: str) -> None:
    history = [Message.user("1", "q", timestamp=0), Message.assistant("a", "ok", timestamp=0), blank]
    with pytest.raises(ConversionError) as caught:
        to_anthropic(history)
    (problem,) = caught.value.problems
    assert problem.location == "[2].content"
    assert problem.message.startswith(f"only whitespace ({shown}): Anthropic refuses text of only")


def test_to_anthropic_leaves_out_a_system_message_of_only_whitespace() -> None:
    history = [
        Message.system("s", "  ", timestamp=0),
        Message.system("t", "Be brief.", timestamp=0),
        Message.user("1", "q", timestamp=0),
    ]
    result = to_anthropic(history)
    assert result.value == {"system": "Be brief.", "messages": [{"role": "user", "content": "q"}]}
    assert _real(result.losses) == [
        '[0].content: only whitespace ("  "): not sent (Anthropic refuses text of only whitespace)'
    ]


def test_to_anthropic_still_sends_empty_text_as_before() -> None:
    # Empty text is not whitespace: a final empty assistant message is allowed (docs/conversions.md).
    history = [Message.user("1", "q", timestamp=0), Message.assistant("2", "", timestamp=0)]
    assert to_anthropic(history).value["messages"][1] == {"role": "assistant", "content": ""}


# --------------------------------------------------------------------------------------------
# Arguments of the wrong kind are refused at once


@pytest.mark.parametrize("mode", ["String", "json", None, 1])
def test_to_chat_template_refuses_an_unknown_arguments_mode(mode: Any) -> None:
    history = [Message.user("1", "q", timestamp=0)]
    with pytest.raises(ConversionError) as caught:
        to_chat_template(history, arguments=mode)
    assert str(caught.value) == f'arguments: expected "object" or "string", found {mode!r}'


def test_to_orion_backend_refuses_a_system_prompt_that_is_not_a_string() -> None:
    with pytest.raises(ArgumentTypeError, match=r"^system_prompt must be a str, got int 5$"):
        to_orion_backend([], system_prompt=5)  # type: ignore[arg-type]


_EVERY_CONVERTER: list[Callable[..., Any]] = [
    to_openai,
    to_anthropic,
    to_chat_template,
    to_orion_backend,
    from_openai,
    from_anthropic,
    from_chat_template,
]


@pytest.mark.parametrize("convert", _EVERY_CONVERTER)
def test_accept_as_one_string_is_refused(convert: Callable[..., Any]) -> None:
    with pytest.raises(ArgumentTypeError) as caught:
        convert([], accept="id,timestamp")
    assert str(caught.value) == (
        'accept must be a collection of field names, such as {"id", "timestamp"}, got str \'id,timestamp\''
    )
    assert isinstance(caught.value, OrionMessagesError)


@pytest.mark.parametrize("convert", _EVERY_CONVERTER)
def test_accept_and_strict_of_the_wrong_type_are_refused(convert: Callable[..., Any]) -> None:
    with pytest.raises(
        ArgumentTypeError, match=r"^accept must be a collection of field names.*got NoneType None$"
    ):
        convert([], accept=None)
    with pytest.raises(ArgumentTypeError, match=r"^accept must hold field names \(str\), got int 1$"):
        convert([], accept=["id", 1])
    with pytest.raises(ArgumentTypeError, match=r"^strict must be a bool, got str 'yes'$"):
        convert([], strict="yes")


# --------------------------------------------------------------------------------------------
# What the readers report


def test_from_anthropic_reports_an_empty_user_turn() -> None:
    # A message that disappears is reported as left out at its own location, [0].
    result = from_anthropic(
        [{"role": "user", "content": []}, {"role": "assistant", "content": "x"}], timestamp=0
    )
    assert [(m.role.value, m.content) for m in result.value] == [("assistant", "x")]
    assert [str(loss) for loss in result.losses] == [
        "[0]: no content blocks: an empty user turn has no place in orion-core (left out)"
    ]


def _with_tool_message(**keys: Any) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [_named_call("a", "{}", "f")]},
        {"role": "tool", "tool_call_id": keys.pop("tool_call_id", "a"), "content": "r", **keys},
    ]


@pytest.mark.parametrize(
    ("keys", "tool_name", "losses"),
    [
        ({"name": "f"}, "f", []),  # the call's name: nothing lost
        ({"name": None}, "f", []),
        (
            {"name": "g"},
            "f",
            ['[1].name: the function name "g" differs from the call\'s "f": tool_name is the call\'s'],
        ),
        (
            {"name": "g", "tool_call_id": "zz"},
            "g",
            ["[1].tool_call_id: no earlier tool call has this id: tool_name taken from the message's name"],
        ),
        ({"name": 5}, "f", ["[1].name: expected the function name (a string), found the number 5: not kept"]),
    ],
)
def test_from_openai_reads_a_tool_messages_name_as_the_function_name(
    keys: dict[str, Any], tool_name: str, losses: list[str]
) -> None:
    result = from_openai(_with_tool_message(**keys), timestamp=0)
    assert result.value[1].tool_result is not None
    assert result.value[1].tool_result.tool_name == tool_name
    assert [str(loss) for loss in result.losses] == losses


def test_a_participant_name_is_still_reported_as_one() -> None:
    result = from_openai([{"role": "user", "content": "hi", "name": "bob"}], timestamp=0)
    assert [str(loss) for loss in result.losses] == [
        "[0].name: orion-core has no place for the participant name"
    ]


@pytest.mark.parametrize(
    ("convert", "given", "expected"),
    [
        (from_openai, [{"role": "assistant", "tool_calls": [{"id": "a", "type": "function"}]}],
         "[0].tool_calls[0].function: required key is missing"),
        (from_openai, [{"role": "assistant", "tool_calls": [{"id": "a", "type": "function", "function": None}]}],
         "[0].tool_calls[0].function: expected an object, found null"),
        (from_anthropic, [{"role": "user"}], "[0].content: required key is missing"),
        (from_anthropic, [{"role": "user", "content": None}],
         "[0].content: expected a string or an array of content blocks, found null"),
        (from_anthropic, [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f"}]}],
         "[0].content[0].input: required key is missing"),
        (from_chat_template, [{"role": "assistant", "tool_calls": [{"id": "a"}]}],
         "[0].tool_calls[0].function: required key is missing"),
    ],
)  # fmt: skip
def test_a_missing_key_is_said_missing_not_null(
    convert: Callable[..., Any], given: Any, expected: str
) -> None:
    with pytest.raises(ConversionError) as caught:
        convert(given, timestamp=0)
    assert str(caught.value) == expected


def test_a_string_argument_round_trips_through_chat_template_dicts_strictly() -> None:
    # Object mode carries a string argument as a string; with the "orion" metadata that string is
    # the value exported, so reading it back loses nothing and strict mode accepts it.
    messages = [
        Message.user("msg-1", "weather?", timestamp=1),
        Message.assistant(
            "msg-2",
            "",
            tool_calls=[ToolCall(id="c1", name="search", arguments="weather in Paris")],
            timestamp=2,
        ),
    ]
    exported = to_chat_template(messages)
    assert exported.lossless
    back = from_chat_template(exported.value, strict=True)
    assert back.losses == ()
    assert back.value == messages
    # Without the metadata the same text may have been meant as JSON: kept, and reported.
    bare = from_chat_template(to_chat_template(messages, metadata=False).value)
    assert [(loss.index, loss.field) for loss in bare.losses if "arguments" in loss.field] == [
        (1, "tool_calls[0].function.arguments")
    ]


def test_from_anthropic_reports_text_after_a_tool_use_block() -> None:
    # An orion-core message holds its text, then its calls: the block order is lost, and said.
    turn = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "t1", "name": "search", "input": {}},
            {"type": "text", "text": "looking"},
        ],
    }
    result = from_anthropic([{"role": "user", "content": "q"}, turn])
    assert [(loss.index, loss.field) for loss in result.losses] == [(1, "content[1]")]
    assert result.value[1].content == "looking"
    assert [call.id for call in result.value[1].tool_calls] == ["t1"]
    in_order = {"role": "assistant", "content": [turn["content"][1], turn["content"][0]]}
    assert from_anthropic([{"role": "user", "content": "q"}, in_order]).losses == ()


_CALL_T1 = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}
_CALL_T1_T2 = {
    "role": "assistant",
    "content": [
        {"type": "tool_use", "id": "t1", "name": "f", "input": {}},
        {"type": "tool_use", "id": "t2", "name": "g", "input": {}},
    ],
}


def _result_block(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


def test_from_anthropic_reports_text_moved_after_a_tool_result() -> None:
    # The results must come right after their calls, so text before one moves after it: not silently.
    turn = {"role": "user", "content": [{"type": "text", "text": "before"}, _result_block("t1", "r")]}
    result = from_anthropic([_CALL_T1, turn], timestamp=0)
    assert [(m.role.value, m.content) for m in result.value] == [
        ("assistant", ""),
        ("tool_result", "r"),
        ("user", "before"),
    ]
    assert [str(loss) for loss in result.losses] == [
        "[1].content[0]: text before a tool_result block: the order is not kept (the results come first)"
    ]
    # Only text that some result follows moves; text after the last result keeps its place.
    blocks = [
        _result_block("t1", "r1"),
        {"type": "text", "text": "between"},
        _result_block("t2", "r2"),
        {"type": "text", "text": "after"},
    ]
    mixed = from_anthropic([_CALL_T1_T2, {"role": "user", "content": blocks}], timestamp=0)
    assert [m.content for m in mixed.value] == ["", "r1", "r2", "betweenafter"]
    assert _locations(mixed.losses) == ["[1].content[1]", "[1].content"]  # moved; two texts joined
    in_order = {"role": "user", "content": [_result_block("t1", "r"), {"type": "text", "text": "after"}]}
    assert from_anthropic([_CALL_T1, in_order], timestamp=0).losses == ()


def test_from_anthropic_reports_a_user_turn_it_leaves_out() -> None:
    # Only unsupported blocks: the turn makes no message, said at the turn as well as at its blocks.
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    result = from_anthropic(
        [{"role": "user", "content": [image, image]}, {"role": "assistant", "content": "a cat"}],
        timestamp=0,
    )
    assert [(m.role.value, m.content) for m in result.value] == [("assistant", "a cat")]
    assert _locations(result.losses) == ["[0].content[0]", "[0].content[1]", "[0]"]
    assert "left out" in result.losses[-1].reason
    with pytest.raises(ConversionError, match=r"\[0\]: strict conversion refused: .*left out"):
        from_anthropic([{"role": "user", "content": [image]}], strict=True, accept={"content[0]"})
    # A turn whose results are kept is not left out: only the image is lost.
    with_result = from_anthropic(
        [_CALL_T1, {"role": "user", "content": [image, _result_block("t1", "r")]}], timestamp=0
    )
    assert [m.role.value for m in with_result.value] == ["assistant", "tool_result"]
    assert _locations(with_result.losses) == ["[1].content[0]"]


def test_from_openai_keeps_a_user_message_without_text_parts() -> None:
    # The documented difference: an OpenAI message is one orion-core message, and OpenAI takes
    # empty content, so the message stays with empty text; only the image is reported.
    part = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    result = from_openai([{"role": "user", "content": [part]}], timestamp=0)
    assert [(m.role.value, m.content) for m in result.value] == [("user", "")]
    assert _locations(result.losses) == ["[0].content[0]"]


@pytest.mark.parametrize(
    ("convert", "messages", "loss"),
    [
        (
            from_openai,
            [{"role": "user", "content": [{"text": "x"}]}],
            "[0].content[0]: a content part without a type has no place in orion-core's text content",
        ),
        (
            from_openai,
            [{"role": "user", "content": [{"type": None, "text": "x"}]}],
            "[0].content[0]: a content part without a type has no place in orion-core's text content",
        ),
        (
            from_anthropic,
            [{"role": "assistant", "content": [{"text": "x"}]}],
            "[0].content[0]: a block without a type has no place in orion-core",
        ),
        (
            from_anthropic,
            [
                _CALL_T1,
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"text": "x"}]}],
                },
            ],
            "[1].content[0].content[0]: a block without a type in a tool result has no place in orion-core",
        ),
    ],
)
def test_a_part_without_a_type_is_said_to_have_none(
    convert: Callable[..., Any], messages: list[dict[str, Any]], loss: str
) -> None:
    assert str(convert(messages, timestamp=0).losses[0]) == loss


def test_a_system_block_without_a_type_is_said_missing() -> None:
    with pytest.raises(ConversionError, match=r"^system\[0\]\.type: required key is missing$"):
        from_anthropic([], system=[{"text": "x"}], timestamp=0)


_LONE = "a\ud800b"  # half of a surrogate pair: a Python str may hold one, UTF-8 text cannot


@pytest.mark.parametrize(
    ("convert", "messages", "system", "location"),
    [
        (from_openai, [{"role": "user", "content": _LONE}], None, "[0].content"),
        (
            from_openai,
            [{"role": "system", "content": [{"type": "text", "text": _LONE}]}],
            None,
            "[0].content[0].text",
        ),
        (
            from_openai,
            [{"role": "assistant", "content": None, "tool_calls": [_named_call(_LONE, "{}", "f")]}],
            None,
            "[0].tool_calls[0].id",
        ),
        (
            from_openai,
            [
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_named_call("a", '{"p": "\ud800"}', "f")],
                }
            ],
            None,
            "[0].tool_calls[0].function.arguments",
        ),
        (
            from_openai,
            [{"role": "tool", "tool_call_id": "a", "name": _LONE, "content": "r"}],
            None,
            "[0].name",
        ),
        (from_anthropic, [{"role": "user", "content": _LONE}], None, "[0].content"),
        (from_anthropic, [], _LONE, "system"),
        (from_anthropic, [], [{"type": "text", "text": _LONE}], "system[0].text"),
        (
            from_anthropic,
            [{"role": "assistant", "content": [{"type": "text", "text": _LONE}]}],
            None,
            "[0].content[0].text",
        ),
        (
            from_anthropic,
            [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {"p": [_LONE]}}],
                }
            ],
            None,
            "[0].content[0].input.p[0]",
        ),
        (
            from_anthropic,
            [
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {_LONE: 1}}],
                }
            ],
            None,
            "[0].content[0].input",
        ),
        (
            from_anthropic,
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": _LONE}]}],
            None,
            "[0].content[0].content",
        ),
        (from_chat_template, [{"role": "user", "content": _LONE}], None, "[0].content"),
        (
            from_chat_template,
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [
                        {
                            "id": "c",
                            "type": "function",
                            "function": {"name": "f", "arguments": {"p": [_LONE]}},
                        }
                    ],
                }
            ],
            None,
            "[0].tool_calls[0].function.arguments.p[0]",
        ),
        (
            from_chat_template,
            [{"role": "user", "content": "hi", "orion": {"id": "m", "note": _LONE}}],
            None,
            "[0].orion.note",
        ),
    ],
)
def test_a_lone_surrogate_is_refused_where_it_is_read(
    convert: Callable[..., Any], messages: list[dict[str, Any]], system: Any, location: str
) -> None:
    # orion-core's strings are UTF-8: refused at its place in the input, not later by dumps.
    extra = {} if system is None else {"system": system}
    with pytest.raises(ConversionError) as caught:
        convert(messages, timestamp=0, **extra)
    assert [problem.location for problem in caught.value.problems] == [location]
    assert "unpaired surrogate" in caught.value.problems[0].message


@pytest.mark.parametrize("text", ["caf\u00e9", "\U0001f600 \u2028 \u4e2d"])
def test_non_ascii_text_is_read_and_dumps(text: str) -> None:
    # Only a lone surrogate is refused: other non-ASCII text is read, and dumps writes it.
    openai = from_openai([{"role": "user", "content": text}], timestamp=0)
    anthropic = from_anthropic([{"role": "user", "content": [{"type": "text", "text": text}]}], timestamp=0)
    for result in (openai, anthropic):
        assert result.value[0].content == text
        assert loads(dumps(result.value))[0].content == text


def test_from_chat_template_reports_a_tool_name_it_cannot_find() -> None:
    # A tool message without "name" takes its call's; with no call of that id it stays empty, said.
    result = from_chat_template([{"role": "tool", "tool_call_id": "zz", "content": "r"}], timestamp=0)
    assert result.value[0].tool_result is not None
    assert result.value[0].tool_result.tool_name == ""
    assert [(loss.index, loss.field) for loss in result.losses] == [(0, "name")]
    named = from_chat_template(
        [{"role": "tool", "tool_call_id": "zz", "name": "f", "content": "r"}], timestamp=0
    )
    assert named.losses == ()


def test_a_result_shows_its_losses_counted_by_field() -> None:
    # Each message loses its id and timestamp; the user message its pin too.
    messages = [Message.user("msg-1", "hi", timestamp=1).pin(), Message.assistant("msg-2", "yo", timestamp=2)]
    result = to_openai(messages)
    assert result.losses_by_field() == [("id", 2), ("timestamp", 2), ("pinned", 1)]
    assert repr(result) == "ConversionResult(value=<list of 2>, 5 losses: id x2, timestamp x2, pinned x1)"
    assert repr(from_openai([])) == "ConversionResult(value=<list of 0>, lossless)"
    assert repr(to_anthropic(messages)).startswith("ConversionResult(value=<dict of messages>, 5 losses: ")
    # List indexes fold; a message lost whole is named as such.
    folded: ConversionResult[list[Any]] = ConversionResult(
        [], (Loss(0, "tool_calls[0].id", "x"), Loss(0, "tool_calls[1].id", "x"), Loss(1, "", "gone"))
    )
    assert folded.losses_by_field() == [("tool_calls[].id", 2), ("(whole message)", 1)]


def test_strict_accepts_a_message_dropped_whole_by_the_name_message() -> None:
    # orphans="drop" drops the stray result whole: its Loss.field is empty.
    with pytest.raises(ConversionError, match=r"\[3\]: strict conversion refused: a result that answers no"):
        to_openai(_orphaned(), orphans="drop", strict=True, accept={"id", "timestamp", "tool_calls[1]"})
    result = to_openai(
        _orphaned(), orphans="drop", strict=True, accept={"id", "timestamp", "tool_calls[1]", "message"}
    )
    assert ("(whole message)", 1) in result.losses_by_field()


def test_from_chat_template_gives_calls_without_an_id_new_ones() -> None:
    # Hugging Face and Ollama histories may leave call ids out; both calls got "" (audit).
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"type": "function", "function": {"name": "a", "arguments": {}}},
                {"id": "call-1", "type": "function", "function": {"name": "b", "arguments": {}}},
                {"type": "function", "function": {"name": "c", "arguments": {}}},
            ],
        },
        {"role": "tool", "content": "ra"},
        {"role": "tool", "content": "rb", "tool_call_id": "call-1"},
        {"role": "tool", "content": "rc"},
    ]
    result = from_chat_template(history, timestamp=0)
    # New ids count on, skipping the ids the input already has.
    assert [c.id for c in result.value[1].tool_calls] == ["call-2", "call-1", "call-3"]
    assert [
        (m.tool_result.tool_call_id, m.tool_result.tool_name) for m in result.value[2:] if m.tool_result
    ] == [
        ("call-2", "a"),
        ("call-1", "b"),
        ("call-3", "c"),
    ]
    assert [str(loss) for loss in result.losses if ".id" in loss.field] == [
        '[1].tool_calls[0].id: missing: given the new id "call-2"',
        '[1].tool_calls[2].id: missing: given the new id "call-3"',
    ]
    assert find_orphans(result.value) == []
    with pytest.raises(ConversionError, match=r"\[1\]\.tool_calls\[0\]\.id: strict conversion refused"):
        from_chat_template(history, timestamp=0, strict=True, accept={"tool_call_id"})


def test_to_anthropic_leaves_an_empty_system_message_out() -> None:
    # Anthropic refuses an empty text block; the message holds nothing to lose.
    history = [
        Message.system("msg-1", "Be brief.", timestamp=1),
        Message.system("msg-2", "", timestamp=1),
        Message.user("msg-3", "hi", timestamp=1),
    ]
    with pytest.raises(ConversionError, match=r"\[1\]: strict conversion refused: an empty system message"):
        to_anthropic(history, strict=True, accept={"id", "timestamp"})
    result = to_anthropic(history, strict=True, accept={"id", "timestamp", "message"})
    assert result.value == {"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}
    assert _real(result.losses) == [
        "[1]: an empty system message: not sent (Anthropic refuses an empty text block)"
    ]
    alone = to_anthropic([history[1], history[2]])
    assert alone.value == {"messages": [{"role": "user", "content": "hi"}]}


def test_from_chat_template_new_call_ids_never_take_a_result_s_id_and_fill_null_ones() -> None:
    # "call-1" names a result in the input: a new id must not claim it. null is no id; "" is
    # one, as orion-core takes it (and an exported conversation must read back exactly).
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"function": {"name": "a", "arguments": {}}},
                {"id": "", "function": {"name": "b", "arguments": {}}},
                {"id": None, "function": {"name": "c", "arguments": {}}},
            ],
        },
        {"role": "tool", "content": "stray", "tool_call_id": "call-1"},
    ]
    result = from_chat_template(history, timestamp=0)
    assert [c.id for c in result.value[1].tool_calls] == ["call-2", "", "call-3"]
    assert [str(loss) for loss in result.losses if loss.field.endswith(".id")] == [
        '[1].tool_calls[0].id: missing: given the new id "call-2"',
        '[1].tool_calls[2].id: missing: given the new id "call-3"',
    ]
    assert result.value[2].tool_result is not None
    assert result.value[2].tool_result.tool_call_id == "call-1"  # still its own, answering none


@pytest.mark.parametrize(
    ("convert", "data", "expected"),
    [
        (
            from_openai,
            [{"role": "bot", "content": "x"}],
            '[0].role: expected "system", "developer", "user", "assistant" or "tool", found the string "bot"',
        ),
        (
            from_anthropic,
            [{"role": "tool", "content": "x"}],
            '[0].role: expected "user" or "assistant", found the string "tool"',
        ),
        (
            from_openai,
            [
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c", "type": "fn", "function": {"name": "n", "arguments": "{}"}}],
                }
            ],
            '[0].tool_calls[0].type: expected "function", found the string "fn"',
        ),
        (
            from_anthropic,
            [{"role": "user", "content": [{"type": 5, "text": "x"}]}],
            None,
        ),
        (
            from_chat_template,
            [{"role": "developer", "content": "x"}],
            '[0].role: expected "system", "user", "assistant" or "tool", found the string "developer"',
        ),
    ],
)
def test_a_refused_value_is_quoted_as_the_codec_quotes_it(
    convert: Callable[[Any], Any], data: Any, expected: str | None
) -> None:
    # The converters wrote Python's repr ('bot'); loads and validate write JSON's "bot".
    if expected is None:  # a block of no known type is a loss, named the same way
        losses = convert(data).losses
        assert losses[0].reason == "a block whose type is the number 5 has no place in orion-core"
        return
    with pytest.raises(ConversionError) as caught:
        convert(data)
    assert str(caught.value) == expected


def test_a_lost_part_is_named_by_its_type_in_json_quotes() -> None:
    losses = from_anthropic(
        [{"role": "user", "content": [{"type": "image", "source": {}}, {"type": "text", "text": "hi"}]}]
    ).losses
    assert [loss.reason for loss in losses] == ['a "image" block has no place in orion-core']


def test_a_quoted_value_keeps_its_apostrophe_and_escapes_what_a_terminal_acts_on() -> None:
    # Quotes were made by swapping Python's for JSON's: "it's" came out as "it"s". A type from
    # the data reached a loss raw: a lone surrogate in it made print() raise.
    with pytest.raises(ConversionError) as caught:
        from_openai([{"role": "it's", "content": "x"}])
    assert str(caught.value).endswith('found the string "it\'s"')
    losses = from_anthropic(
        [{"role": "user", "content": [{"type": "a\ud800\x85b"}, {"type": "text", "text": "hi"}]}]
    ).losses
    assert losses[0].reason == 'a "a\\ud800\\x85b" block has no place in orion-core'
    losses[0].reason.encode("utf-8")  # no lone surrogate left to refuse
