"""OpenAI Chat Completions messages: ``to_openai`` and ``from_openai``.

Roles map one to one (``tool_call`` is sent as ``assistant``; ``developer`` is read as
``system``); tool calls become ``{id, type: "function", function: {name, arguments}}`` with the
arguments as a JSON string written exactly as orion-core writes them, and results become
``tool`` messages with ``tool_call_id``. OpenAI has no place for message ids, timestamps,
``pinned``, ``token_count``, ``is_error``, ``pending`` or unknown keys: each one is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel
from typing_extensions import NotRequired, TypedDict

from ._arguments import decode_arguments, encode_arguments
from ._collector import collector_paused
from ._conversion_input import (
    _Builder,
    _Input,
    _unknown_keys,
    refuse_unencodable,
    text_content,
    unencodable_problems,
)
from ._problems import describe
from ._text import quoted
from .conversions import (
    ConversionResult,
    OrphanPolicy,
    _fix_orphans,
    _input_list,
    _metadata_losses,
    _remember_calls,
    _Report,
)
from .errors import ConversionError, FormatError, Problem
from .models import Message, Role, ToolCall

__all__ = [
    "OpenAIAssistantMessage",
    "OpenAIMessage",
    "OpenAISystemMessage",
    "OpenAIToolMessage",
    "OpenAIUserMessage",
    "from_openai",
    "to_openai",
]

_TARGET = "OpenAI Chat"

# The message types below are what ``to_openai`` returns, written to be assignable to the OpenAI
# SDK's ``ChatCompletionMessageParam`` members (``openai`` is not needed at run time: a TypedDict is
# structural). Type checkers compare two TypedDicts key by key: every key of the SDK's type must be
# here too, required exactly where it is required there, and with an equivalent type (the items of
# a TypedDict are mutable, so invariant). Keys the converter never writes are declared for that
# alone; ``content`` and ``tool_calls``, whose SDK types are unions of part types that grow from
# one SDK release to the next, are ``Any``: no narrower type equals them in every release.


class OpenAISystemMessage(TypedDict):
    """A ``system`` message of ``to_openai``'s output (the SDK's ``ChatCompletionSystemMessageParam``)."""

    role: Literal["system"]
    """Always ``"system"``."""
    content: Any
    """The system prompt's text, a ``str`` (typed ``Any``, as the SDK's text-or-parts union is)."""
    name: NotRequired[str]
    """A participant's name: never written (declared because the SDK's type has the key)."""


class OpenAIUserMessage(TypedDict):
    """A ``user`` message of ``to_openai``'s output (the SDK's ``ChatCompletionUserMessageParam``)."""

    role: Literal["user"]
    """Always ``"user"``."""
    content: Any
    """The user's text, a ``str`` (typed ``Any``, as the SDK's text-or-parts union is)."""
    name: NotRequired[str]
    """A participant's name: never written (declared because the SDK's type has the key)."""


class OpenAIAssistantMessage(TypedDict):
    """An ``assistant`` message of ``to_openai``'s output (the SDK's ``ChatCompletionAssistantMessageParam``).

    ``assistant`` and ``tool_call`` messages both become one. Only ``role`` is required, as in
    the SDK's type; ``to_openai`` always writes ``content``, and ``tool_calls`` when there are calls.
    """

    role: Literal["assistant"]
    """Always ``"assistant"``."""
    content: NotRequired[Any]
    """The reply's text, a ``str``; ``None`` beside tool calls when the text is empty (the API's
    spelling of "no text"). Always written."""
    tool_calls: NotRequired[Any]
    """A list of function tool calls, ``{"id", "type": "function", "function": {"name", "arguments"}}``
    with the arguments as JSON text; written only when the message has calls. Typed ``Any``: the
    SDK's type of the list changes between releases (custom tool calls joined it)."""
    name: NotRequired[str]
    """A participant's name: never written (declared because the SDK's type has the key)."""
    refusal: NotRequired[str | None]
    """The model's refusal: never written (declared because the SDK's type has the key)."""
    audio: NotRequired[Any]
    """An earlier audio response: never written (declared because the SDK's type has the key)."""
    function_call: NotRequired[Any]
    """The deprecated single function call: never written (declared because the SDK's type has the key)."""


class OpenAIToolMessage(TypedDict):
    """A ``tool`` message of ``to_openai``'s output, one per tool result (the SDK's ``ChatCompletionToolMessageParam``)."""

    role: Literal["tool"]
    """Always ``"tool"``."""
    tool_call_id: str
    """The id of the call this result answers."""
    content: Any
    """The result's text, a ``str`` (typed ``Any``, as the SDK's text-or-parts union is)."""


OpenAIMessage: TypeAlias = (
    OpenAISystemMessage | OpenAIUserMessage | OpenAIAssistantMessage | OpenAIToolMessage
)
"""One message of ``to_openai``'s output, told apart by ``role``.

A ``list[OpenAIMessage]`` is assignable to the OpenAI SDK's ``Iterable[ChatCompletionMessageParam]``
(``client.chat.completions.create(messages=...)``); at run time each one is a plain ``dict``.
"""


@collector_paused()  # the objects built hold no cycles to collect
def to_openai(
    messages: Iterable[Message],
    *,
    orphans: OrphanPolicy = "error",
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[list[OpenAIMessage]]:
    """Convert a conversation to OpenAI Chat Completions ``messages``.

    ``orphans`` decides what happens to a call without a result or a result without a call
    (the API refuses both): ``"error"`` (default), ``"drop"``, ``"synthesize"`` or ``"keep"``.
    ``strict=True`` raises instead of returning losses, except for fields named in ``accept``
    (such as ``{"id", "timestamp"}``; ``"message"`` accepts a message lost whole: dropped, or
    moved out of the list).

    Raises:
        ConversionError: an orphan with ``orphans="error"``, an unknown ``orphans`` policy, a
            tool_result message without a result, a refused loss in strict mode, or a string
            sent that holds a lone surrogate, which UTF-8 cannot encode (a message built in
            Python may hold one), at its place (``[3].tool_calls[0].arguments.p``).
        ArgumentTypeError: ``messages`` is not an iterable of messages (a string, a mapping, a
            single ``Message`` or a set included) or an item is not a ``Message`` (named by its
            index); ``strict`` is not a bool, or ``accept`` is a string (it would be read one
            character at a time), a mapping or a single model (read as its keys or fields), or
            holds a non-string.
    """
    report = _Report(strict=strict, accept=accept)
    fixed, sources, changes = _fix_orphans(messages, orphans, "to_openai")
    report.extend(changes)
    try:
        out = _openai_messages(report, fixed, sources)
    except FormatError as error:  # arguments the writer refuses: a lone surrogate is located
        raise ConversionError(unencodable_problems(fixed, sources) or error.problems) from None
    refuse_unencodable(out, fixed, sources)
    return report.finish(out)


def _openai_messages(report: _Report, fixed: list[Message], sources: list[int | None]) -> list[OpenAIMessage]:
    """The messages for the fixed conversation (``sources``: their input positions)."""
    names: dict[str, str] = {}  # the calls sent so far
    out: list[OpenAIMessage] = []
    problems: list[Problem] = []
    for message, source in zip(fixed, sources, strict=True):
        if message.tool_calls:
            _remember_calls(names, message)
        if source is not None:
            _metadata_losses(report, source, message, why=_TARGET)
        role = message.role
        if role is Role.TOOL_RESULT:
            if message.tool_result is None:
                problems.append(
                    Problem(f"[{source}].tool_result", "a tool_result message must carry a tool result")
                )
                continue
            out.append(_tool_message(report, source, message, names))
        elif role is Role.USER:
            out.append({"role": "user", "content": message.content})
        elif role is Role.SYSTEM:
            out.append({"role": "system", "content": message.content})
        elif message.tool_calls:  # assistant or tool_call
            out.append(
                {
                    "role": "assistant",
                    "content": message.content or None,  # the API's own spelling of "no text"
                    "tool_calls": [_call(call) for call in message.tool_calls],
                }
            )
        else:
            out.append({"role": "assistant", "content": message.content})
    if problems:
        raise ConversionError(problems)
    return out


def _call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": encode_arguments(call.arguments)},
    }


def _tool_message(
    report: _Report, source: int | None, message: Message, names: dict[str, str]
) -> OpenAIToolMessage:
    result = message.tool_result
    assert result is not None  # checked by the caller
    if source is not None:
        _result_losses(report, source, message, names, _TARGET)
    return {"role": "tool", "tool_call_id": result.tool_call_id, "content": result.content}


def _result_losses(report: _Report, index: int, message: Message, names: dict[str, str], why: str) -> None:
    """Report what a result keeps that a tool message (id + content) has no place for."""
    result = message.tool_result
    assert result is not None
    if result.is_error:
        report.lose(
            index,
            "tool_result.is_error",
            f"{why} has no place for is_error: the error is sent as a plain result",
        )
    if result.pending:
        report.lose(
            index,
            "tool_result.pending",
            f"a pending placeholder is sent as a completed result with its content {quoted(result.content)}",
        )
    if (
        names.get(result.tool_call_id, result.tool_name) != result.tool_name
        or result.tool_call_id not in names
    ):
        report.lose(
            index, "tool_result.tool_name", f"{why} takes the tool name from the call, not the result"
        )
    if message.content != result.content:
        report.lose(index, "content", "differs from tool_result.content, which is the text sent")


@collector_paused()  # the objects built hold no cycles to collect
def from_openai(
    messages: Iterable[Mapping[str, Any] | BaseModel],
    *,
    timestamp: int | None = None,
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[list[Message]]:
    """Read OpenAI Chat Completions ``messages`` (dicts, as sent to the API) into a conversation.

    The SDK's objects (``completion.choices[0].message``, its ``tool_calls``) are read as the
    dicts of their fields (any pydantic model: ``model_dump(by_alias=True, exclude_unset=True)``).

    Messages get ids ``msg-1``, ``msg-2``... and ``timestamp`` (default: now). Arguments are
    decoded with ``loads``' rules; a string that is not valid JSON is kept as a string and
    reported. Each tool message takes its tool name from the call it answers: the latest call
    with its ``tool_call_id`` (servers reuse ids such as ``call_0`` across turns); without one,
    from the message's ``name`` (the function name), if any (reported).

    Raises:
        ConversionError: ``messages`` is not a list (a string or a single dict is refused at once),
            ``timestamp`` is not a signed 64-bit integer, the input is not valid OpenAI messages
            (every problem with its location, such as ``[3].tool_calls[0].function.arguments``;
            a string holding a lone surrogate, which orion-core's UTF-8 strings cannot, included),
            or a refused loss in strict mode.
        ArgumentTypeError: as ``to_openai``.
    """
    items = _input_list(messages, "a list of OpenAI Chat message dicts")
    build = _Builder(timestamp)
    reader = _Input()
    report = _Report(strict=strict, accept=accept)
    names: dict[str, str] = {}
    for index, item in enumerate(items):
        where = f"[{index}]"
        data = reader.mapping(item, where)
        if data is None:
            continue
        role = reader.string(data, "role", where)
        if role is None:
            continue
        reader_role = _READERS.get(role)
        if reader_role is None:
            reader.fail(
                f"{where}.role",
                f'expected "system", "developer", "user", "assistant" or "tool", found {describe(role)}',
            )
            continue
        fields = reader_role(reader, report, index, data, names)
        if fields is not None and not reader.problems:
            build.add(**fields)
    reader.done()
    return report.finish(build.messages)


_COMMON_KEYS = frozenset({"role", "content"})


_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})


# Top-level keys of system, user and assistant messages: a participant's name, orion-core has no
# place for (a tool message's name is the function's, read by ``_tool_name``).
_TOP_LEVEL_REASONS = {"name": "orion-core has no place for the participant name"}


def _plain(
    reader: _Input, report: _Report, index: int, data: Mapping[str, Any], names: dict[str, str]
) -> dict[str, Any]:
    role = data["role"]
    _unknown_keys(report, index, data, _COMMON_KEYS, reasons=_TOP_LEVEL_REASONS)
    if role == "developer":
        report.lose(index, "role", "developer is read as system")
    our = Role.USER if role == "user" else Role.SYSTEM
    return {"role": our, "content": text_content(reader, report, index, data, nullable=False)}


_ASSISTANT_KEYS = frozenset({"role", "content", "tool_calls"})


def _assistant(
    reader: _Input, report: _Report, index: int, data: Mapping[str, Any], names: dict[str, str]
) -> dict[str, Any]:
    _unknown_keys(report, index, data, _ASSISTANT_KEYS, reasons=_TOP_LEVEL_REASONS)
    content = text_content(reader, report, index, data, nullable=True)
    calls: list[ToolCall] = []
    raw = data.get("tool_calls")
    for number, item in enumerate(reader.items(raw, f"[{index}].tool_calls") if raw is not None else ()):
        call = _read_call(reader, report, index, number, item)
        if call is not None:
            calls.append(call)
            names[call.id] = call.name  # a result answers the latest call with its id
    return {"role": Role.ASSISTANT, "content": content, "tool_calls": tuple(calls)}


def _read_call(reader: _Input, report: _Report, index: int, number: int, item: Any) -> ToolCall | None:
    where = f"[{index}].tool_calls[{number}]"
    data = reader.mapping(item, where)
    if data is None:
        return None
    call_id = reader.string(data, "id", where)
    kind = reader.string(data, "type", where)
    if kind is not None and kind != "function":  # a custom tool call: no "function" to report too
        reader.fail(f"{where}.type", f'expected "function", found {describe(kind)}')
        return None
    if not reader.present(data, "function", where):
        return None
    function = reader.mapping(data["function"], f"{where}.function")
    if function is None:
        return None
    _unknown_keys(report, index, data, _CALL_KEYS, f"tool_calls[{number}].")
    _unknown_keys(report, index, function, _FUNCTION_KEYS, f"tool_calls[{number}].function.")
    name = reader.string(function, "name", f"{where}.function")
    text = reader.string(function, "arguments", f"{where}.function")
    if call_id is None or name is None or text is None:
        return None
    arguments, invalid, repeated = decode_arguments(text)
    for why in (invalid, repeated):
        if why is not None:
            report.lose(index, f"tool_calls[{number}].function.arguments", why)
    return ToolCall(id=call_id, name=name, arguments=arguments)


_TOOL_KEYS = frozenset({"role", "content", "tool_call_id", "name"})


def _tool(
    reader: _Input, report: _Report, index: int, data: Mapping[str, Any], names: dict[str, str]
) -> dict[str, Any] | None:
    """A tool message: named after the latest call with its id (the call it answers)."""
    _unknown_keys(report, index, data, _TOOL_KEYS)
    call_id = reader.string(data, "tool_call_id", f"[{index}]")
    content = text_content(reader, report, index, data, nullable=False)
    if call_id is None:
        return None
    given = data.get("name")
    if isinstance(given, str) and not reader.utf8(given, f"[{index}].name"):
        return None
    name = _tool_name(report, index, given, names.get(call_id))
    result = {"tool_call_id": call_id, "tool_name": name, "content": content, "is_error": False}
    return {"role": Role.TOOL_RESULT, "content": content, "tool_result": result}


def _tool_name(report: _Report, index: int, given: Any, called: str | None) -> str:
    """The result's tool name: the call's; else the message's ``name`` (a function name some
    servers send on tool messages); else empty. Each departure is reported."""
    if given is not None and not isinstance(given, str):
        report.lose(
            index, "name", f"expected the function name (a string), found {describe(given)}: not kept"
        )
        given = None
    if called is None:
        taken = "taken from the message's name" if given is not None else "left empty"
        report.lose(index, "tool_call_id", f"no earlier tool call has this id: tool_name {taken}")
        return given or ""
    if given is not None and given != called:
        report.lose(
            index,
            "name",
            f"the function name {quoted(given)} differs from the call's {quoted(called)}: tool_name is the call's",
        )
    return called


_READERS = {
    "system": _plain,
    "developer": _plain,
    "user": _plain,
    "assistant": _assistant,
    "tool": _tool,
}
