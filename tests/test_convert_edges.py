"""Conversions at their edges: who owns the output, what the readers take, ids the fixes choose,
strings no target can encode, and what ``accept`` and the reports name.

Every expectation is written by hand from docs/conversions.md and the providers' documentation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from orion_messages import (
    ConversionError,
    Message,
    ToolCall,
    dumps,
    fix_orphans,
    from_anthropic,
    from_chat_template,
    from_openai,
    loads,
    to_anthropic,
    to_chat_template,
    to_openai,
    to_orion_backend,
)
from orion_messages.cli import main


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


# --- Provider SDK objects where the readers take an object (docs: "Reading other formats").


def test_from_anthropic_reads_the_sdks_response_blocks() -> None:
    # Anthropic's tool-use guide appends {"role": "assistant", "content": response.content}:
    # the response's TextBlock and ToolUseBlock objects, which the SDK's MessageParam takes.
    anthropic_types = pytest.importorskip("anthropic.types")
    reply = anthropic_types.Message.model_validate(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": "I'll check."},
                {"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": {"city": "Paris"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 20},
        }
    )
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": reply.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "15 C"}]},
    ]
    result = from_anthropic(history, timestamp=0)
    assert result.lossless
    assert [m.role.value for m in result.value] == ["user", "assistant", "tool_result"]
    assert result.value[1].content == "I'll check."
    assert result.value[1].tool_calls == (
        ToolCall(id="toolu_01", name="get_weather", arguments={"city": "Paris"}),
    )
    assert result.value[2].tool_result is not None
    assert result.value[2].tool_result.tool_name == "get_weather"


def test_an_sdk_objects_values_are_checked_as_a_dicts_are() -> None:
    # docs/conversions.md: the conversions never lose anything silently; NaN and infinity are not
    # JSON, refused at their place in an Anthropic input, in a dict or in the SDK's block alike.
    anthropic_types = pytest.importorskip("anthropic.types")
    block = {"type": "tool_use", "id": "toolu_01", "name": "f", "input": {"x": math.nan, "y": math.inf}}
    expected = [
        "[1].content[0].input.x: expected a finite number, found NaN",
        "[1].content[0].input.y: expected a finite number, found infinity (such as a number too large for a double)",
    ]
    for content in ([block], [anthropic_types.ToolUseBlock.model_validate(block)]):
        history: list[dict[str, Any]] = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": content},
        ]
        with pytest.raises(ConversionError) as caught:
            from_anthropic(history, timestamp=0)
        assert [str(problem) for problem in caught.value.problems] == expected


def test_from_openai_reads_the_sdks_message_objects() -> None:
    # OpenAI's function-calling guide appends completion.choices[0].message itself.
    chat = pytest.importorskip("openai.types.chat")
    completion = chat.ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "gpt-4o",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "logprobs": None,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                            }
                        ],
                    },
                }
            ],
        }
    )
    message = completion.choices[0].message
    history = [
        {"role": "user", "content": "Weather?"},
        message,
        {"role": "tool", "tool_call_id": "call_1", "content": "15 C"},
    ]
    result = from_openai(history, timestamp=0)
    assert result.lossless
    assert result.value[1].tool_calls == (
        ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
    )
    # The calls alone, as in {"role": "assistant", "tool_calls": message.tool_calls}.
    calls_only = from_openai([{"role": "assistant", "tool_calls": message.tool_calls}], timestamp=0)
    assert calls_only.value[0].tool_calls == result.value[1].tool_calls


class _Forecast(BaseModel):
    city: str


def test_from_openai_leaves_out_what_the_sdks_parse_derived() -> None:
    # docs/conversions.md: `parsed` and `parsed_arguments`, which the SDK's chat.completions.parse
    # works out from `content` and `arguments`, are no loss; anything else set on the object is.
    chat = pytest.importorskip("openai.types.chat")
    calls = pytest.importorskip("openai.types.chat.parsed_function_tool_call")
    function = calls.ParsedFunction(
        name="f", arguments='{"city":"Paris"}', parsed_arguments={"city": "Paris"}
    )
    call = calls.ParsedFunctionToolCall(id="call_1", type="function", function=function)
    # The SDK's parse() returns the message class parametrized by the caller's own model.
    message = chat.ParsedChatCompletionMessage[_Forecast](
        role="assistant", content='{"city":"Paris"}', parsed=_Forecast(city="Paris"), tool_calls=[call]
    )
    result = from_openai([{"role": "user", "content": "Weather?"}, message], timestamp=0)
    assert result.lossless
    assert result.value[1].content == '{"city":"Paris"}'
    assert result.value[1].tool_calls == (ToolCall(id="call_1", name="f", arguments={"city": "Paris"}),)
    # The calls on their own, the SDK's function in a dict's call, and a key the SDK does not
    # derive, set on the same object.
    calls_only = from_openai([{"role": "assistant", "tool_calls": [call]}], timestamp=0)
    assert calls_only.lossless
    in_a_dict = {"id": "call_1", "type": "function", "function": function}
    assert from_openai([{"role": "assistant", "tool_calls": [in_a_dict]}], timestamp=0).lossless
    message.refusal = "no"
    assert [str(loss) for loss in from_openai([message], timestamp=0).losses] == [
        "[0].refusal: orion-core has no place for this key"
    ]


class _AliasedReply(BaseModel):
    # JSON names unlike the fields' names, and a default the API's JSON never held.
    speaker: str = Field(alias="role")
    text: str = Field(alias="content")
    x_source: str = "cache"


def test_a_model_is_read_by_its_json_names_and_only_the_keys_set() -> None:
    # docs/conversions.md: a model is read as model_dump(by_alias=True, exclude_unset=True), "so a
    # field the model only defaults is not reported as an unknown key".
    result = from_openai([_AliasedReply(role="user", content="Hi")], timestamp=0)
    assert result.lossless
    assert [(m.role.value, m.content) for m in result.value] == [("user", "Hi")]
    set_in_python = from_openai([_AliasedReply(role="user", content="Hi", x_source="live")], timestamp=0)
    assert [str(loss) for loss in set_in_python.losses] == [
        "[0].x_source: orion-core has no place for this key"
    ]


class _OllamaFunction(BaseModel):
    name: str
    arguments: dict[str, Any]


class _OllamaCall(BaseModel):
    id: str | None = None  # as OpenAI-style templates write it (Ollama's own calls have none)
    function: _OllamaFunction


class _OllamaMessage(BaseModel):
    # The shape of the ollama client's Message (a pydantic model), fields left unset left out.
    role: str
    content: str | None = None
    images: list[str] | None = None
    tool_calls: list[_OllamaCall] | None = None


def test_from_chat_template_reads_pydantic_models() -> None:
    call = _OllamaCall(function=_OllamaFunction(name="add", arguments={"a": 2}))
    given: list[Any] = [
        _OllamaMessage(role="user", content="Add 2."),
        _OllamaMessage(role="assistant", content="", tool_calls=[call]),
        {"role": "assistant", "content": "", "tool_calls": [call]},  # a plain dict holding a model
        {"role": "assistant", "content": "", "tool_calls": [{"function": call.function}]},  # deeper
    ]
    result = from_chat_template(given, timestamp=0)
    assert [m.content for m in result.value] == ["Add 2.", "", "", ""]
    assert result.value[1].tool_calls[0].name == "add"
    assert [m.tool_calls[0].arguments for m in result.value[1:]] == [{"a": 2}] * 3
    # The calls came without an id: each gets a new one (reported), no other loss.
    assert [loss.location for loss in result.losses] == [f"[{i}].tool_calls[0].id" for i in (1, 2, 3)]


def test_a_new_call_id_avoids_the_ids_models_hold() -> None:
    # docs/conversions.md: a call without an id gets call-N "unlike every call id and
    # tool_call_id of the input": a model message's, and a model call's in a dict message.
    function = _OllamaFunction(name="f", arguments={})
    given: list[Any] = [
        _OllamaMessage(
            role="assistant", content="", tool_calls=[_OllamaCall(id="call-1", function=function)]
        ),
        {"role": "assistant", "content": "", "tool_calls": [_OllamaCall(id="call-2", function=function)]},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "f", "arguments": {}}}]},
    ]
    result = from_chat_template(given, timestamp=0)
    assert [m.tool_calls[0].id for m in result.value] == ["call-1", "call-2", "call-3"]


def test_the_librarys_own_models_are_still_refused_where_a_dict_belongs() -> None:
    with pytest.raises(ConversionError, match=r"^\[0\]: expected an object, found a Message$"):
        from_openai([Message.user("msg-1", "hi", timestamp=0)], timestamp=0)


# --- The ids of the results orphans="synthesize" adds.


def test_synthesized_results_get_ids_no_other_message_has() -> None:
    # A server reuses call_0 and two turns go unanswered: the first added result takes the
    # documented name, call_0-missing-result; that name is then taken, so the second gets a new
    # msg-N after the highest counter (msg-5), as every new message id is chosen.
    call = ToolCall(id="call_0", name="search", arguments={})
    history = [
        Message.user("msg-1", "find a", timestamp=0),
        Message.assistant("msg-2", "", [call], timestamp=0),
        Message.user("msg-3", "find b", timestamp=0),
        Message.assistant("msg-4", "", [call], timestamp=0),
        Message.user("msg-5", "and?", timestamp=0),
    ]
    fixed = fix_orphans(history, "synthesize").value
    assert [m.id for m in fixed] == [
        "msg-1",
        "msg-2",
        "call_0-missing-result",
        "msg-3",
        "msg-4",
        "msg-6",
        "msg-5",
    ]
    dicts = to_chat_template(history, orphans="synthesize").value
    assert [d["orion"]["id"] for d in dicts] == [m.id for m in fixed]


def test_a_synthesized_result_does_not_take_an_id_already_in_use() -> None:
    history = [
        Message.user("c1-missing-result", "hi", timestamp=0),
        Message.assistant("msg-7", "", [ToolCall(id="c1", name="f", arguments={})], timestamp=0),
    ]
    fixed = fix_orphans(history, "synthesize").value
    assert [m.id for m in fixed] == ["c1-missing-result", "msg-7", "msg-8"]
    assert fixed[2].tool_result is not None
    assert fixed[2].tool_result.tool_call_id == "c1"


# --- A string no target can encode: a lone surrogate in a message built in Python.

_SURROGATE_IN_ARGUMENTS = [
    Message.user("msg-1", "read it", timestamp=0),
    Message.assistant(
        "msg-2", "", [ToolCall(id="c1", name="read", arguments={"p": "caf\udce9"})], timestamp=0
    ),
    Message.tool_result_message("msg-3", "c1", "read", "ok", timestamp=0),
]
_SURROGATE_IN_CONTENT = [Message.user("msg-1", "caf\udce9", timestamp=0)]

_TO_CONVERTERS: list[Any] = [to_openai, to_anthropic, to_chat_template, to_orion_backend]


def _problems(error: pytest.ExceptionInfo[ConversionError]) -> list[tuple[str, str]]:
    return [(problem.location, problem.message) for problem in error.value.problems]


_UNENCODABLE = (
    "the string holds an unpaired surrogate (\\udce9 at character 3), which UTF-8 (the encoding "
    "of what is sent) cannot encode"
)


@pytest.mark.parametrize("convert", _TO_CONVERTERS, ids=lambda f: f.__name__)
def test_to_converters_refuse_a_lone_surrogate_in_the_content_at_its_place(convert: Any) -> None:
    with pytest.raises(ConversionError) as error:
        convert(_SURROGATE_IN_CONTENT)
    assert _problems(error) == [("[0].content", _UNENCODABLE)]


@pytest.mark.parametrize("convert", [to_openai, to_anthropic, to_chat_template], ids=lambda f: f.__name__)
def test_to_converters_refuse_a_lone_surrogate_in_the_arguments_at_its_path(convert: Any) -> None:
    with pytest.raises(ConversionError) as error:
        convert(_SURROGATE_IN_ARGUMENTS)
    assert _problems(error) == [("[1].tool_calls[0].arguments.p", _UNENCODABLE)]


def test_chat_template_string_arguments_refuse_a_lone_surrogate_at_its_path() -> None:
    with pytest.raises(ConversionError) as error:
        to_chat_template(_SURROGATE_IN_ARGUMENTS, arguments="string")
    assert _problems(error) == [("[1].tool_calls[0].arguments.p", _UNENCODABLE)]


def test_a_lone_surrogate_in_a_field_the_target_does_not_send_is_only_that_fields_loss() -> None:
    # OpenAI has no place for message ids: the id is reported lost, and nothing sent holds it.
    result = to_openai([Message.user("msg-\udce9", "hi", timestamp=0)])
    assert result.value == [{"role": "user", "content": "hi"}]
    assert [loss.location for loss in result.losses] == ["[0].id", "[0].timestamp"]


def test_an_unsent_string_beside_an_integer_past_64_bits_is_only_that_fields_loss() -> None:
    # Anthropic takes the integer in an input (orjson, which rules lone surrogates out, refuses
    # it) and the tool name from the call: the result's tool name is only a loss.
    call = ToolCall(id="c1", name="f", arguments={"n": 2**70})
    history = [
        Message.assistant("msg-1", "", [call], timestamp=0),
        Message.tool_result_message("msg-2", "c1", "f\udce9", "ok", timestamp=0),
    ]
    assert "[1].tool_result.tool_name" in [loss.location for loss in to_anthropic(history).losses]


def test_a_lone_surrogate_a_synthesized_result_repeats_is_refused_at_its_place_only() -> None:
    # The added result answers the call with its id: the string is the call's, at [0].
    history = [Message.assistant("msg-1", "", [ToolCall(id="c\udce9", name="f", arguments={})], timestamp=0)]
    with pytest.raises(ConversionError) as error:
        to_openai(history, orphans="synthesize")
    assert [where for where, _ in _problems(error)] == ["[0].tool_calls[0].id"]


def test_to_orion_backend_refuses_a_lone_surrogate_in_the_system_prompt() -> None:
    with pytest.raises(ConversionError) as error:
        to_orion_backend([], system_prompt="caf\udce9")
    assert _problems(error) == [("system_prompt", _UNENCODABLE)]


# --- An empty value under a key orion-core has no place for carries nothing, like null.


def test_from_openai_skips_empty_unknown_values_and_reports_the_others() -> None:
    # Chat Completions replies carry "annotations": [] on every assistant message.
    reply: dict[str, Any] = {
        "role": "assistant",
        "content": "Hi.",
        "refusal": None,
        "annotations": [],
        "x_meta": {},
    }
    cited = {
        "role": "assistant",
        "content": "See.",
        "annotations": [{"type": "url_citation", "url_citation": {"url": "https://example.com"}}],
    }
    given = [{"role": "user", "content": "Hi", "x_tags": [], "x_note": ""}, reply, cited]
    result = from_openai(given, timestamp=0)
    assert [str(loss) for loss in result.losses] == [  # an empty string is a value: reported
        "[0].x_note: orion-core has no place for this key",
        "[2].annotations: orion-core has no place for this key",
    ]


def test_from_anthropic_and_from_chat_template_skip_empty_unknown_values() -> None:
    block = {"type": "text", "text": "Hi.", "citations": []}
    assert from_anthropic([{"role": "assistant", "content": [block]}], timestamp=0).lossless
    assert from_chat_template([{"role": "user", "content": "Hi", "images": []}], timestamp=0).lossless


def test_convert_from_skips_an_empty_request_parameter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps({"messages": [{"role": "user", "content": "Hi"}], "tools": [], "model": "m"})
    )
    assert (
        main(["convert", str(request), str(tmp_path / "out.json"), "--from", "openai", "--timestamp", "0"])
        == 0
    )
    printed = capsys.readouterr().out
    assert "by field: model 1\n" in printed
    assert "tools" not in printed


# --- What from_openai refuses: one problem each, no follow-on.


def test_from_openai_refuses_a_custom_tool_call_with_one_problem() -> None:
    # The SDK's ChatCompletionMessageCustomToolCallParam: {"id", "type": "custom", "custom": {...}}.
    custom = {"id": "call_1", "type": "custom", "custom": {"name": "grep", "input": "TODO"}}
    with pytest.raises(ConversionError) as error:
        from_openai([{"role": "user", "content": "go"}, {"role": "assistant", "tool_calls": [custom]}])
    assert _problems(error) == [("[1].tool_calls[0].type", 'expected "function", found the string "custom"')]


# --- accept= takes the names losses_by_field() and the command line print.

_IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}


def test_accept_takes_a_folded_field_for_every_index() -> None:
    turn = [{"role": "user", "content": [{"type": "text", "text": "Look:"}, _IMAGE, _IMAGE]}]
    assert from_anthropic(turn, timestamp=0, strict=True, accept={"content[]"}).value[0].content == "Look:"
    with pytest.raises(ConversionError):  # the bare name is no folded field: still refused
        from_anthropic(turn, timestamp=0, strict=True, accept={"content"})
    calls = [ToolCall(id="a", name="f", arguments={}), ToolCall(id="b", name="f", arguments={})]
    history = [Message.user("msg-1", "q", timestamp=0), Message.assistant("msg-2", "", calls, timestamp=0)]
    dropped = to_openai(
        history, orphans="drop", strict=True, accept={"id", "timestamp", "message", "tool_calls[]"}
    )
    assert dropped.value == [{"role": "user", "content": "q"}]


def test_accept_takes_a_folded_nested_field() -> None:
    # tool_calls[0].index and tool_calls[1].index (the stream accumulator's bookkeeping) are
    # counted as tool_calls[].index: that name accepts both.
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    given = [{"role": "assistant", "content": None, "tool_calls": [call, {**call, "id": "c2", "index": 1}]}]
    result = from_openai(given, timestamp=0, strict=True, accept={"tool_calls[].index"})
    assert [c.id for c in result.value[0].tool_calls] == ["c1", "c2"]
    # The last part, folded: "content[]" names an image inside a tool result, content[0].content[1].
    use = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    result_block = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "a"}, _IMAGE],
    }
    turns = [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result_block]}]
    assert [loss.field for loss in from_anthropic(turns, timestamp=0).losses] == ["content[0].content[1]"]
    assert len(from_anthropic(turns, timestamp=0, strict=True, accept={"content[]"}).losses) == 1


def test_accept_id_takes_the_renamed_result_id_too() -> None:
    # docs/conversions.md: "id" accepts a tool call's id renamed by to_anthropic; its result is
    # sent with the same new id, one rename reported at both places.
    call = ToolCall(id="call_0", name="f", arguments={})
    history = [
        Message.user("msg-1", "go", timestamp=0),
        Message.assistant("msg-2", "", [call], timestamp=0),
        Message.tool_result_message("msg-3", "call_0", "f", "one", timestamp=0),
        Message.assistant("msg-4", "", [call], timestamp=0),
        Message.tool_result_message("msg-5", "call_0", "f", "two", timestamp=0),
    ]
    request = to_anthropic(history, strict=True, accept={"id", "timestamp"}).value
    assert request["messages"][4]["content"][0]["tool_use_id"] == "call_0-2"


def test_accept_with_an_empty_name_accepts_only_a_field_named_so() -> None:
    with pytest.raises(ConversionError, match=r"\[0\]\.id: strict conversion refused"):
        to_openai([Message.user("msg-1", "hi", timestamp=0)], strict=True, accept={"", "timestamp"})


# --- A long unknown key is cut where it is shown, by the one rule for locations (200 characters).

_LONG_KEY = "k" * 100_000
_LONG_SHOWN = "k" * 197 + "..."


def test_repr_cuts_a_long_field() -> None:
    result = from_openai([{"role": "user", "content": "hi", _LONG_KEY: 3}], timestamp=0)
    assert repr(result) == f"ConversionResult(value=<list of 1>, 1 losses: {_LONG_SHOWN} x1)"
    assert result.losses[0].field == _LONG_KEY  # the loss keeps it whole


def test_convert_report_cuts_a_long_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "long.json"
    source.write_text(
        json.dumps({"messages": [{"role": "user", "content": "hi", _LONG_KEY: 3}], _LONG_KEY: 1})
    )
    assert (
        main(["convert", str(source), str(tmp_path / "o.json"), "--from", "openai", "--timestamp", "0"]) == 0
    )
    lines = capsys.readouterr().out.splitlines()
    # The message's key and the request's are one field name: counted together.
    assert lines[2] == f"  by field: {_LONG_SHOWN} 2"
    assert max(map(len, lines)) < 300


def test_a_request_key_is_located_as_a_message_key_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A key that is not a plain name is quoted in brackets (docs: accept names it that way), so
    # "b", the last part of a dotted path, does not name the request key "a.b".
    source = tmp_path / "request.json"
    source.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "a.b": 1}))
    args = ["convert", str(source), str(tmp_path / "o.json"), "--from", "openai", "--timestamp", "0"]
    assert main([*args, "--strict", "--accept", "b"]) == 1
    assert '["a.b"]: strict conversion refused' in capsys.readouterr().err
    assert main([*args, "--strict", "--accept", '["a.b"]']) == 0


# --- convert --from: a repeated key in a foreign document is refused, as in an orion document.


@pytest.mark.parametrize(
    ("fmt", "text", "shown"),
    [
        ("openai", '[{"role":"user","content":"first","content":"second"}]', '[0]: duplicate key "content"'),
        (
            "anthropic",
            '{"messages":[{"role":"user","content":"hi"}],"system":"A","system":"B"}',
            'duplicate key "system"',
        ),
        (
            "anthropic",
            '[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{"a":1,"a":2}}]}]',
            '[0].content[0].input: duplicate key "a"',
        ),
        ("chat-template", '[{"role":"user","role":"assistant","content":"x"}]', '[0]: duplicate key "role"'),
    ],
)
def test_convert_from_refuses_a_repeated_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str, text: str, shown: str
) -> None:
    source = tmp_path / "in.json"
    source.write_text(text)
    out = tmp_path / "out.json"
    assert main(["convert", str(source), str(out), "--from", fmt, "--timestamp", "0"]) == 1
    assert not out.exists()
    assert capsys.readouterr().err == f"orion-messages: error: {source}: {shown} in one object\n"


# --- from_anthropic: each bad value in a tool_use input at its own path, as loads places them.


_NAN = "expected a finite number, found NaN"
_INFINITY = "expected a finite number, found infinity (such as a number too large for a double)"


def _tool_use(input_value: Any) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": input_value}]}
    ]


@pytest.mark.parametrize(
    ("input_value", "expected"),
    [
        # What json.loads gives for 1e400 (too large for a double) and NaN, neither JSON that
        # orion-core holds; docs/reliability.md places such a value at its path inside the arguments.
        (
            {"path": "a", "opts": {"limit": 1e400, "ratio": math.nan}},
            [(".opts.limit", _INFINITY), (".opts.ratio", _NAN)],
        ),
        # CHANGELOG: the first bad value named is the first in the document.
        ({"xs": [math.nan, math.inf]}, [(".xs[0]", _NAN), (".xs[1]", _INFINITY)]),
        ({"a.b": math.nan}, [('["a.b"]', _NAN)]),  # CHANGELOG: [0]["a.b"] told apart from [0].a.b
    ],
)
def test_from_anthropic_reports_each_bad_number_in_an_input_at_its_path(
    input_value: Any, expected: list[tuple[str, str]]
) -> None:
    with pytest.raises(ConversionError) as error:
        from_anthropic(_tool_use(input_value), timestamp=0)
    assert _problems(error) == [(f"[0].content[0].input{at}", why) for at, why in expected]


def test_from_anthropic_reports_each_key_that_is_not_a_string_and_the_values_beside_it() -> None:
    # docs/conversions.md: "a key that is not a string" is refused as NaN is; one does not end the
    # search. (Their order is not pinned: such keys now come out last-first, before the values.)
    with pytest.raises(ConversionError) as error:
        from_anthropic(_tool_use({1: "x", "ratio": math.nan, 2: "y"}), timestamp=0)
    assert sorted(_problems(error)) == [
        ("[0].content[0].input", "expected an object key (a string), found 1"),
        ("[0].content[0].input", "expected an object key (a string), found 2"),
        ("[0].content[0].input.ratio", _NAN),
    ]


def test_from_anthropic_reports_an_input_nested_too_deeply_at_the_input() -> None:
    deep: dict[str, Any] = {"a": 1}
    for _ in range(200):
        deep = {"k": deep}
    with pytest.raises(ConversionError) as error:
        from_anthropic(_tool_use(deep), timestamp=0)
    assert _problems(error) == [
        ("[0].content[0].input", "expected a JSON value nested at most 120 levels deep, found a deeper one")
    ]


_UNSENT_CALL = Message.model_validate(
    {
        "id": "msg-1",
        "role": "user",
        "content": "q",
        "timestamp": 0,
        "tool_calls": [{"id": "call_0-2", "name": "g", "arguments": {}}],
    }
)


@pytest.mark.parametrize(
    "first",
    [_UNSENT_CALL, Message.tool_result_message("msg-1", "call_0-2", "g", "x", timestamp=0)],
    ids=["a call not sent", "a result of no call"],
)
def test_to_anthropic_new_ids_avoid_the_ids_of_calls_not_sent_and_of_results_too(first: Message) -> None:
    # docs/conversions.md: the new id is never the id of another call anywhere in the
    # conversation, sent or not (a user message's calls are not sent), "nor one a result answers".
    call = ToolCall(id="call_0", name="f", arguments={})
    history = [
        first,
        Message.assistant("msg-2", "", [call], timestamp=0),
        Message.tool_result_message("msg-3", "call_0", "f", "a", timestamp=0),
        Message.assistant("msg-4", "", [call], timestamp=0),
        Message.tool_result_message("msg-5", "call_0", "f", "b", timestamp=0),
    ]
    request = to_anthropic(history, orphans="keep").value
    assert request["messages"][3]["content"][0]["id"] == "call_0-3"
    assert request["messages"][4]["content"][0]["tool_use_id"] == "call_0-3"


def test_a_message_id_no_target_sends_is_not_reported_as_unsendable() -> None:
    # docs/conversions.md: "A string the target has no place for (a message id) is only that
    # field's loss"; only the chat template's "orion" metadata carries the id.
    messages = [Message.user("m\ud800", "hi \ud800", timestamp=0)]
    for convert in (to_openai, to_anthropic, to_orion_backend):
        with pytest.raises(ConversionError) as caught:
            convert(messages)
        assert [problem.location for problem in caught.value.problems] == ["[0].content"], convert
    with pytest.raises(ConversionError) as caught:
        to_chat_template(messages)
    assert [problem.location for problem in caught.value.problems] == ["[0].id", "[0].content"]
    with pytest.raises(ConversionError) as caught:
        to_chat_template(messages, metadata=False)
    assert [problem.location for problem in caught.value.problems] == ["[0].content"]


@pytest.mark.parametrize("options", [{}, {"metadata": False}, {"arguments": "string"}])
def test_a_lone_surrogate_in_an_arguments_key_is_a_conversion_error_for_the_chat_template(
    options: dict[str, Any],
) -> None:
    # docs/conversions.md: every to_* raises ConversionError at each string it would send that
    # holds a lone surrogate, at its place in the conversation.
    messages = [
        Message.user("msg-1", "go", timestamp=0),
        Message.assistant(
            "msg-2", "", timestamp=0, tool_calls=[ToolCall(id="c", name="f", arguments={"k\ud800": 1})]
        ),
    ]
    with pytest.raises(ConversionError) as caught:
        to_chat_template(messages, **options)
    assert [problem.location for problem in caught.value.problems] == ["[1].tool_calls[0].arguments"]


def test_a_tool_results_strings_are_located_where_the_target_sends_them() -> None:
    # docs/conversions.md: each string a target would send that holds a lone surrogate is refused at
    # its place; a string the target has no place for is only a loss. OpenAI and Anthropic send a
    # result's text from tool_result.content (not its tool name, nor the message's own copy);
    # orion-core's chat backend sends the message's content; a chat-template dict the result's
    # name and text.
    messages = [
        Message.user("msg-1", "go", timestamp=0),
        Message.assistant("msg-2", "", timestamp=0, tool_calls=[ToolCall(id="c", name="f", arguments={})]),
        Message.tool_result_message("msg-3", "c", "f\ud800", "out \ud800", timestamp=0),
    ]
    expected: dict[Callable[[list[Message]], object], list[str]] = {
        to_openai: ["[2].tool_result.content"],
        to_anthropic: ["[2].tool_result.content"],
        to_orion_backend: ["[2].content"],
    }
    for convert, locations in expected.items():
        with pytest.raises(ConversionError) as caught:
            convert(messages)
        assert [problem.location for problem in caught.value.problems] == locations, convert
    with pytest.raises(ConversionError) as caught:
        to_chat_template(messages, metadata=False)
    assert [problem.location for problem in caught.value.problems] == [
        "[2].tool_result.tool_name",
        "[2].tool_result.content",
    ]


@pytest.mark.parametrize(
    ("text", "at"),
    [('{"a":{"b":[1,1e400]}}', " at a.b[1]"), ("[0,-1e400]", " at [1]"), ("1e400", "")],
)
def test_arguments_text_with_a_bad_number_is_kept_and_the_number_placed(text: str, at: str) -> None:
    # docs/conversions.md: arguments text is decoded with loads' rules (no infinity); text that is
    # not valid JSON is kept as a string and reported, here with the path of the bad number in it.
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": text}}
    result = from_openai([{"role": "assistant", "content": "", "tool_calls": [call]}], timestamp=0)
    assert result.value[0].tool_calls[0].arguments == text
    (loss,) = result.losses
    assert loss.field == "tool_calls[0].function.arguments"
    assert loss.reason == (
        f"not valid JSON{at} (expected a finite number, found infinity (such as a number too large"
        " for a double)); kept as a string"
    )


@pytest.mark.parametrize("convert", [to_openai, to_anthropic])
def test_a_to_converter_names_an_unknown_key_as_accept_takes_it(convert: Any) -> None:
    # docs/conversions.md: a loss's field shows a key that is not a plain name as a location
    # does (["a.b"]), so that accept= takes it as printed; in both directions.
    message = loads(
        b'[{"id":"a","role":"assistant","content":"","timestamp":1,"a.b":1,"plain":2,'
        b'"tool_calls":[{"id":"c","name":"f","arguments":{},"x y":3}]},'
        b'{"id":"b","role":"tool_result","content":"r","timestamp":2,'
        b'"tool_result":{"tool_call_id":"c","tool_name":"f","content":"r","is_error":false}}]'
    )
    fields = [loss.field for loss in convert(message).losses if loss.reason.startswith("unknown key")]
    assert fields == ['["a.b"]', "plain", 'tool_calls[0]["x y"]']
    accepted = convert(message, strict=True, accept=["id", "timestamp", *fields])
    assert [loss.field for loss in accepted.losses if loss.reason.startswith("unknown key")] == fields
