"""Real consumers: the providers' SDK request types and a real model's chat template.

The OpenAI and Anthropic outputs are validated in strict mode against the typed request params
their Python SDKs ship (``openai``, ``anthropic``; test-only dependencies). Validation must give
back exactly what was sent: a key the type does not know is dropped by the TypedDict validator,
so an equality check catches it. The chat-template dicts are rendered by Qwen3-4B's real
``chat_template`` (``fixtures/conversions/templates``) in a Jinja environment set up the way
transformers' ``apply_chat_template`` sets up its own (sandboxed, ``trim_blocks``,
``lstrip_blocks``, ``tojson`` as ``json.dumps`` without ASCII escaping or key sorting).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from anthropic.types import MessageParam, TextBlockParam
from hypothesis import assume, given
from jinja2.sandbox import ImmutableSandboxedEnvironment
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter

from orion_messages import (
    ConversionError,
    Message,
    Role,
    ToolCall,
    load,
    to_anthropic,
    to_chat_template,
    to_openai,
)

from .conftest import FIXTURES
from .strategies import agent_conversations

GOLDENS = FIXTURES / "conversions"
OPENAI: TypeAdapter[list[ChatCompletionMessageParam]] = TypeAdapter(list[ChatCompletionMessageParam])
ANTHROPIC: TypeAdapter[list[MessageParam]] = TypeAdapter(list[MessageParam])
ANTHROPIC_SYSTEM: TypeAdapter[str | list[TextBlockParam]] = TypeAdapter(str | list[TextBlockParam])


def _materialized(value: Any) -> Any:
    """Validated values with pydantic's lazy iterators (the SDKs' ``Iterable[...]``) made lists."""
    if isinstance(value, dict):
        return {key: _materialized(item) for key, item in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    return [_materialized(item) for item in value]


def _check_openai(messages: Sequence[Mapping[str, Any]]) -> None:
    assert _materialized(OPENAI.validate_python(messages, strict=True)) == messages


def _check_anthropic(request: Mapping[str, Any]) -> None:
    assert set(request) <= {"system", "messages"}
    assert _materialized(ANTHROPIC.validate_python(request["messages"], strict=True)) == request["messages"]
    if "system" in request:
        assert (
            _materialized(ANTHROPIC_SYSTEM.validate_python(request["system"], strict=True))
            == request["system"]
        )
    # What the API refuses beyond the SDK's types: "text content blocks must contain
    # non-whitespace text" and "tool_use ids must be unique".
    blocks = [b for m in request["messages"] if isinstance(m["content"], list) for b in m["content"]]
    system = request.get("system", [])
    texts = [
        *(m["content"] for m in request["messages"] if isinstance(m["content"], str)),
        *(b["text"] for b in blocks if b["type"] == "text"),
        *([system] if isinstance(system, str) else [b["text"] for b in system]),
    ]
    assert not any(text.isspace() for text in texts)
    ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
    assert len(ids) == len(set(ids))


def test_the_sdk_check_can_fail() -> None:
    with pytest.raises(ValueError, match="is_error"):
        _check_anthropic(
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "x", "is_error": "yes"}],
                    }
                ]
            }
        )
    with pytest.raises(AssertionError):
        _check_openai([{"role": "tool", "tool_call_id": "x", "content": "", "is_error": True}])


def test_goldens_are_valid_sdk_params() -> None:
    _check_openai(json.loads((GOLDENS / "tool-loop.openai.json").read_text(encoding="utf-8")))
    _check_anthropic(json.loads((GOLDENS / "tool-loop.anthropic.json").read_text(encoding="utf-8")))


@given(agent_conversations())
def test_openai_output_is_a_valid_request(history: list[Message]) -> None:
    _check_openai(to_openai(history).value)


@given(agent_conversations())
def test_anthropic_output_is_a_valid_request(history: list[Message]) -> None:
    try:
        request = to_anthropic(history).value
    except ConversionError as error:  # a turn of only whitespace, which the API refuses
        refused = error.problems
    else:
        _check_anthropic(request)
        return
    assert all(problem.message.startswith("only whitespace") for problem in refused)


def test_anthropic_output_with_reused_ids_is_a_valid_request() -> None:
    call = ToolCall(id="call_0", name="f", arguments={})
    history = [
        Message.user("1", "q", timestamp=0),
        Message.assistant("2", " ", [call, call], timestamp=0),
        Message.tool_result_message("3", "call_0", "f", "a", timestamp=0),
        Message.tool_result_message("4", "call_0", "f", "b", timestamp=0),
        Message.assistant("5", "", [call], timestamp=0),
        Message.tool_result_message("6", "call_0", "f", "c", timestamp=0),
    ]
    _check_anthropic(to_anthropic(history).value)
    with pytest.raises(AssertionError):  # the check itself catches a repeated id
        _check_anthropic({"messages": [{"role": "assistant", "content": [_use("x"), _use("x")]}]})


def _use(call_id: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "f", "input": {}}


# --------------------------------------------------------------------------------------------
# A real chat template


def _environment() -> ImmutableSandboxedEnvironment:
    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def tojson(value: Any, ensure_ascii: bool = False, indent: int | None = None) -> str:
        return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, sort_keys=False)

    environment.filters["tojson"] = tojson
    return environment


def _render(messages: list[dict[str, Any]]) -> str:
    template = _environment().from_string(
        (GOLDENS / "templates" / "qwen3-4b.jinja").read_text(encoding="utf-8")
    )
    return template.render(messages=messages, tools=None, add_generation_prompt=False)


def test_qwen3_renders_the_golden_from_object_arguments() -> None:
    history = load(GOLDENS / "tool-loop.orion.json")
    expected = (GOLDENS / "tool-loop.qwen3-4b.txt").read_text(encoding="utf-8")
    assert _render(to_chat_template(history, metadata=False).value) == expected
    # The metadata key is invisible to the template.
    assert _render(to_chat_template(history).value) == expected


def test_qwen3_renders_string_arguments_as_written() -> None:
    history = load(GOLDENS / "tool-loop.orion.json")
    expected = (GOLDENS / "tool-loop.qwen3-4b.txt").read_text(encoding="utf-8")
    for spaced, compact in [
        ('{"path": "/etc/hostname"}', '{"path":"/etc/hostname"}'),
        ('{"depth": 1, "path": "/srv"}', '{"depth":1,"path":"/srv"}'),
        ('{"url": "https://example.com"}', '{"url":"https://example.com"}'),
    ]:
        expected = expected.replace(spaced, compact)
    assert _render(to_chat_template(history, arguments="string").value) == expected


@given(agent_conversations())
def test_qwen3_renders_every_result_in_order(history: list[Message]) -> None:
    assume(history)  # the template reads messages[0]
    assume(all("<tool_response>" not in m.content for m in history))
    rendered = _render(to_chat_template(history).value)
    results = [m.tool_result.content for m in history if m.role is Role.TOOL_RESULT and m.tool_result]
    position = 0
    for text in results:
        position = rendered.index(f"<tool_response>\n{text}\n</tool_response>", position) + 1
