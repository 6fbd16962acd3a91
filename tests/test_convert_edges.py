"""Conversions at their edges: who owns the output, what the readers take, ids the fixes choose,
strings no target can encode, and what ``accept`` and the reports name.

Every expectation is written by hand from docs/conversions.md and the providers' documentation.
"""

from __future__ import annotations

from typing import Any

from orion_messages import (
    Message,
    ToolCall,
    dumps,
    from_chat_template,
    to_anthropic,
    to_chat_template,
)


def _nested_call_history() -> list[Message]:
    call = ToolCall(id="c1", name="f", arguments={"path": "a", "opts": {"depth": 1}, "list": [{"x": 1}]})
    scalar = ToolCall(id="c2", name="g", arguments=[{"y": 2}])
    return [
        Message.user("msg-1", "q", timestamp=0),
        Message.assistant("msg-2", "", [call, scalar], timestamp=0),
        Message.tool_result_message("msg-3", "c1", "f", "ok", timestamp=0),
        Message.tool_result_message("msg-4", "c2", "g", "ok", timestamp=0),
    ]


def test_to_anthropic_output_is_the_callers_own() -> None:
    # docs/conversions.md: the values are plain dicts to splat into client.messages.create(...);
    # editing the request (trimming, redacting) must not rewrite the frozen conversation.
    history = _nested_call_history()
    before = dumps(history)
    blocks = to_anthropic(history).value["messages"][1]["content"]
    blocks[0]["input"]["path"] = "CHANGED"
    blocks[0]["input"]["opts"]["depth"] = 99
    blocks[0]["input"]["list"][0]["x"] = 99
    blocks[1]["input"]["value"][0]["y"] = 99  # a non-object sent wrapped as {"value": ...}
    assert dumps(history) == before
    assert history[1].tool_calls[0].arguments == {"path": "a", "opts": {"depth": 1}, "list": [{"x": 1}]}


def test_to_chat_template_output_is_the_callers_own() -> None:
    history = _nested_call_history()
    extra = Message.model_validate(
        {"id": "msg-5", "role": "user", "content": "x", "timestamp": 0, "x_note": {"a": [1]}}
    )
    history.append(extra)
    before = dumps(history)
    dicts = to_chat_template(history).value
    dicts[1]["tool_calls"][0]["function"]["arguments"]["opts"]["depth"] = 99
    dicts[1]["tool_calls"][1]["function"]["arguments"][0]["y"] = 99
    dicts[4]["orion"]["x_note"]["a"].append(2)
    assert dumps(history) == before


def test_from_chat_template_output_does_not_share_the_input() -> None:
    given: list[dict[str, Any]] = [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"opts": {"depth": 1}}}}
        ]},
    ]  # fmt: skip
    messages = from_chat_template(given, timestamp=0).value
    given[0]["tool_calls"][0]["function"]["arguments"]["opts"]["depth"] = 2
    assert messages[0].tool_calls[0].arguments == {"opts": {"depth": 1}}
