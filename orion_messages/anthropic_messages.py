"""Anthropic Messages: ``to_anthropic`` and ``from_anthropic``.

System messages go to the separate ``system`` parameter; an assistant's tool calls become
``tool_use`` blocks (``id``, ``name``, ``input``) after its text; results become
``tool_result`` blocks (``tool_use_id``, ``content``, ``is_error``), consecutive results grouped
into one user turn as the API requires. Anthropic has no place for message ids, timestamps,
``pinned``, ``token_count``, ``pending`` or unknown keys: each one is reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ._conversion_input import _Builder, _Input, _unknown_keys
from .conversions import (
    ConversionResult,
    OrphanPolicy,
    _fix_orphans,
    _input_list,
    _metadata_losses,
    _remember_calls,
    _Report,
)
from .errors import ConversionError, Problem
from .models import Message, Role, ToolCall

__all__ = ["from_anthropic", "to_anthropic"]

_TARGET = "Anthropic Messages"
_WRAPPED = "value"


def to_anthropic(
    messages: Iterable[Message],
    *,
    orphans: OrphanPolicy = "error",
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[dict[str, Any]]:
    """Convert a conversation to the ``system`` and ``messages`` parameters of Anthropic's Messages API.

    The value is ``{"system": ..., "messages": [...]}`` (``system`` only when there are system
    messages: a string for one, a list of text blocks for several), ready for
    ``client.messages.create(model=..., max_tokens=..., **value)``. Arguments that are not a JSON
    object are wrapped as ``{"value": arguments}`` (``input`` must be an object) and reported.
    ``orphans``, ``strict`` and ``accept`` work as in ``to_openai``.

    Raises:
        ConversionError: as ``to_openai``.
    """
    report = _Report(strict=strict, accept=accept)
    # System messages move to the system parameter: one between a call and its results misplaces nothing.
    fixed, sources, changes = _fix_orphans(messages, orphans, moved_out=frozenset({Role.SYSTEM}))
    report.extend(changes)
    names: dict[str, str] = {}  # the calls sent so far
    system: list[str] = []
    out: list[dict[str, Any]] = []
    problems: list[Problem] = []
    grouping = False  # the last turn is a user turn of tool results
    for message, source in zip(fixed, sources, strict=True):
        if message.tool_calls:
            _remember_calls(names, message)
        if source is not None:
            _metadata_losses(report, source, message, why=_TARGET)
        if message.role is Role.SYSTEM:
            _note_late_system(report, source, started=bool(out))
            system.append(message.content)
            continue
        if message.role is Role.TOOL_RESULT:
            if message.tool_result is None:
                problems.append(
                    Problem(f"[{source}].tool_result", "a tool_result message must carry a tool result")
                )
                continue
            block = _result_block(report, source, message, names)
            if grouping:
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
            grouping = True
            continue
        grouping = False
        out.append(_turn(report, source, message))
    if problems:
        raise ConversionError(problems)
    value: dict[str, Any] = {"messages": out}
    if system:
        value = {
            "system": system[0] if len(system) == 1 else [{"type": "text", "text": s} for s in system],
            **value,
        }
    return report.finish(value)


def _note_late_system(report: _Report, source: int | None, *, started: bool) -> None:
    """Report a system message that comes after the first turn: it moves to ``system``."""
    if started and source is not None:
        report.lose(
            source, "", "a system message after the conversation started moves to the system parameter"
        )


def _turn(report: _Report, source: int | None, message: Message) -> dict[str, Any]:
    """A user turn, or an assistant turn with its text and tool_use blocks."""
    if message.role is Role.USER or not message.tool_calls:
        role = "user" if message.role is Role.USER else "assistant"
        return {"role": role, "content": message.content}
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    blocks.extend(_use_block(report, source, number, call) for number, call in enumerate(message.tool_calls))
    return {"role": "assistant", "content": blocks}


def _use_block(report: _Report, source: int | None, number: int, call: ToolCall) -> dict[str, Any]:
    arguments = call.arguments
    if not isinstance(arguments, dict):
        if source is not None:
            report.lose(
                source,
                f"tool_calls[{number}].arguments",
                f'not a JSON object: sent wrapped as {{"{_WRAPPED}": ...}} (tool_use input must be an object)',
            )
        arguments = {_WRAPPED: arguments}
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": arguments}


def _result_block(
    report: _Report, source: int | None, message: Message, names: dict[str, str]
) -> dict[str, Any]:
    result = message.tool_result
    assert result is not None  # checked by the caller
    if source is not None:
        if result.pending:
            report.lose(
                source,
                "tool_result.pending",
                f"a pending placeholder is sent as a completed result with its content {result.content!r}",
            )
        if result.tool_call_id not in names or names[result.tool_call_id] != result.tool_name:
            report.lose(
                source,
                "tool_result.tool_name",
                f"{_TARGET} takes the tool name from the call, not the result",
            )
        if message.content != result.content:
            report.lose(source, "content", "differs from tool_result.content, which is the text sent")
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": result.content,
    }
    if result.is_error:
        block["is_error"] = True
    return block


def from_anthropic(
    messages: Iterable[Mapping[str, Any]],
    *,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    timestamp: int | None = None,
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[list[Message]]:
    """Read Anthropic Messages ``messages`` (and the ``system`` parameter) into a conversation.

    ``from_anthropic(**to_anthropic(conversation).value)`` reads a converted request back. The
    system prompt becomes system messages first (one per text block); each ``tool_result`` block
    becomes its own tool_result message, named after its ``tool_use``; text blocks become the
    message's content. Ids are ``msg-1``, ``msg-2``...; ``timestamp`` defaults to now. Losses
    in ``system`` have ``index=None``.

    Raises:
        ConversionError: ``messages`` is not a list (a string or a single dict is refused at once),
            ``timestamp`` is not a signed 64-bit integer, the input is not valid Anthropic
            messages (every problem with its location), or a refused loss in strict mode.
    """
    items = _input_list(messages, "a list of Anthropic message dicts")
    build = _Builder(timestamp)
    reader = _Input()
    report = _Report(strict=strict, accept=accept)
    for text in _system_texts(reader, report, system):
        build.add(role=Role.SYSTEM, content=text)
    names: dict[str, str] = {}
    for index, item in enumerate(items):
        where = f"[{index}]"
        data = reader.mapping(item, where)
        if data is None:
            continue
        _unknown_keys(report, index, data, _MESSAGE_KEYS)
        role = reader.string(data, "role", where)
        if role not in ("user", "assistant"):
            if role is not None:
                reader.fail(f"{where}.role", f'expected "user" or "assistant", found {role!r}')
            continue
        content = data.get("content")
        if isinstance(content, str):
            build.add(role=Role(role), content=content)
        elif role == "user":
            _user_blocks(reader, report, build, index, content, names)
        else:
            _assistant_blocks(reader, report, build, index, content, names)
    reader.done()
    return report.finish(build.messages)


_MESSAGE_KEYS = frozenset({"role", "content"})
_TEXT_KEYS = frozenset({"type", "text"})
_USE_KEYS = frozenset({"type", "id", "name", "input"})
_RESULT_KEYS = frozenset({"type", "tool_use_id", "content", "is_error"})


def _system_texts(reader: _Input, report: _Report, system: Any) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [system]
    texts: list[str] = []
    for number, item in enumerate(reader.items(system, "system")):
        where = f"system[{number}]"
        block = reader.mapping(item, where)
        if block is None:
            continue
        if block.get("type") != "text":
            reader.fail(f"{where}.type", f'expected "text", found {block.get("type")!r}')
            continue
        _unknown_keys(report, None, block, _TEXT_KEYS, f"{where}.")
        texts.append(reader.string(block, "text", where) or "")
    return texts


def _content_blocks(reader: _Input, index: int, content: Any) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
    """Each block of message ``index``'s content that is an object: its number, place and keys.

    A block that is not an object is recorded as a problem by ``reader`` and skipped.
    """
    for number, item in enumerate(reader.items(content, f"[{index}].content")):
        where = f"[{index}].content[{number}]"
        block = reader.mapping(item, where)
        if block is not None:
            yield number, where, block


def _user_blocks(
    reader: _Input, report: _Report, build: _Builder, index: int, content: Any, names: dict[str, str]
) -> None:
    texts: list[str] = []
    for number, where, block in _content_blocks(reader, index, content):
        kind = block.get("type")
        if kind == "text":
            _unknown_keys(report, index, block, _TEXT_KEYS, f"content[{number}].")
            texts.append(reader.string(block, "text", where) or "")
        elif kind == "tool_result":
            _unknown_keys(report, index, block, _RESULT_KEYS, f"content[{number}].")
            call_id = reader.string(block, "tool_use_id", where)
            text = _result_text(reader, report, index, number, block.get("content", ""))
            is_error = reader.boolean(block, "is_error", where)
            if call_id is None or reader.problems:
                continue
            if call_id not in names:
                report.lose(
                    index,
                    f"content[{number}].tool_use_id",
                    "no earlier tool_use has this id: tool_name left empty",
                )
            result = {
                "tool_call_id": call_id,
                "tool_name": names.get(call_id, ""),
                "content": text,
                "is_error": is_error,
            }
            build.add(role=Role.TOOL_RESULT, content=text, tool_result=result)
        else:
            report.lose(index, f"content[{number}]", f"a {kind!r} block has no place in orion-core")
    if len(texts) > 1:
        report.lose(index, "content", f"{len(texts)} text blocks joined into one text")
    if texts and not reader.problems:
        build.add(role=Role.USER, content="".join(texts))


def _result_text(reader: _Input, report: _Report, index: int, number: int, content: Any) -> str:
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for part, item in enumerate(reader.items(content, f"[{index}].content[{number}].content")):
        where = f"[{index}].content[{number}].content[{part}]"
        block = reader.mapping(item, where)
        if block is None:
            continue
        if block.get("type") == "text":
            _unknown_keys(report, index, block, _TEXT_KEYS, f"content[{number}].content[{part}].")
            texts.append(reader.string(block, "text", where) or "")
        else:
            report.lose(
                index,
                f"content[{number}].content[{part}]",
                f"a {block.get('type')!r} block in a tool result has no place in orion-core",
            )
    if len(texts) > 1:
        report.lose(index, f"content[{number}].content", f"{len(texts)} text blocks joined into one text")
    return "".join(texts)


def _assistant_blocks(
    reader: _Input, report: _Report, build: _Builder, index: int, content: Any, names: dict[str, str]
) -> None:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for number, where, block in _content_blocks(reader, index, content):
        kind = block.get("type")
        if kind == "text":
            _unknown_keys(report, index, block, _TEXT_KEYS, f"content[{number}].")
            texts.append(reader.string(block, "text", where) or "")
        elif kind == "tool_use":
            _unknown_keys(report, index, block, _USE_KEYS, f"content[{number}].")
            call_id = reader.string(block, "id", where)
            name = reader.string(block, "name", where)
            arguments = reader.mapping(block.get("input"), f"{where}.input")
            if call_id is not None and name is not None and arguments is not None:
                call = reader.call(f"{where}.input", call_id, name, dict(arguments))
                if call is not None:
                    calls.append(call)
                    names.setdefault(call_id, name)
        else:
            report.lose(index, f"content[{number}]", f"a {kind!r} block has no place in orion-core")
    if len(texts) > 1:
        report.lose(index, "content", f"{len(texts)} text blocks joined into one text")
    if not reader.problems:
        build.add(role=Role.ASSISTANT, content="".join(texts), tool_calls=tuple(calls))
