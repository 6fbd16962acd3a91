"""Anthropic Messages: ``to_anthropic`` and ``from_anthropic``.

System messages go to the separate ``system`` parameter; an assistant's tool calls become
``tool_use`` blocks (``id``, ``name``, ``input``) after its text; results become
``tool_result`` blocks (``tool_use_id``, ``content``, ``is_error``), consecutive results grouped
into one user turn as the API requires. Anthropic has no place for message ids, timestamps,
``pinned``, ``token_count``, ``pending`` or unknown keys: each one is reported.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Literal

from typing_extensions import NotRequired, TypedDict

from ._collector import collector_paused
from ._conversion_input import _Builder, _Input, _kind, _unknown_keys, refuse_unencodable
from ._json_rules import copied
from ._problems import describe
from ._text import quoted
from .conversions import (
    _CALLING_ROLES,
    ConversionResult,
    Loss,
    OrphanPolicy,
    _check_policy,
    _fix_orphans,
    _input_list,
    _metadata_losses,
    _remember_calls,
    _Report,
)
from .errors import ConversionError, Problem
from .models import Message, Role, ToolCall, message_list

__all__ = ["AnthropicMessage", "AnthropicRequest", "AnthropicTextBlock", "from_anthropic", "to_anthropic"]

_TARGET = "Anthropic Messages"
_WRAPPED = "value"

# The types below are what ``to_anthropic`` returns, written to be assignable to the Anthropic
# SDK's request types (``anthropic`` is not needed at run time: a TypedDict is structural). Type
# checkers compare two TypedDicts key by key: every key of the SDK's type must be here too,
# required exactly where it is required there, and with an equivalent type (the items of a
# TypedDict are mutable, so invariant). A message's ``role`` and ``content`` are ``Any``: no
# narrower type equals the SDK's in every release. Its ``content`` is a union of block types that
# grows from one release to the next, and its ``role`` was ``Literal["user", "assistant"]``
# (0.38), then took ``"system"`` too, then (2.0) ``MessageParam`` became one type per role.


class AnthropicTextBlock(TypedDict):
    """A text block of the ``system`` parameter (the SDK's ``TextBlockParam``)."""

    type: Literal["text"]
    """Always ``"text"``."""
    text: str
    """One system message's text."""
    cache_control: NotRequired[Any]
    """A prompt-caching breakpoint: never written (declared because the SDK's type has the key)."""
    citations: NotRequired[Any]
    """Citations: never written (declared because the SDK's type has the key)."""


class AnthropicMessage(TypedDict):
    """One turn of ``to_anthropic``'s ``messages`` (the SDK's ``MessageParam``)."""

    role: Any
    """``"user"`` or ``"assistant"``; a user turn may hold tool results. Typed ``Any``: the SDK's
    type of the role changed between releases (a literal of two roles, then three, then one type
    per role)."""
    content: Any
    """A ``str`` (a user turn, or an assistant turn without tool calls), or a list of blocks:
    ``{"type": "text", "text"}`` then ``{"type": "tool_use", "id", "name", "input"}`` for an
    assistant turn with calls, ``{"type": "tool_result", "tool_use_id", "content"}`` (with
    ``"is_error": True`` for an error) for a user turn of results. Typed ``Any``: the SDK's union
    of block types grows from one release to the next."""


class AnthropicRequest(TypedDict):
    """The ``system`` and ``messages`` parameters ``to_anthropic`` returns.

    ``client.messages.create(model=..., max_tokens=..., **request)`` takes them as they are, and
    so does ``from_anthropic(**request)``; at run time the request is a plain ``dict``.
    """

    messages: list[AnthropicMessage]
    """The turns, assignable to the SDK's ``Iterable[MessageParam]``."""
    system: NotRequired[str | list[AnthropicTextBlock]]
    """The system messages' text: a string for one, a list of text blocks for several; absent
    when there are none."""


class _ToolUseBlock(TypedDict):
    """A ``tool_use`` block (private: a message's ``content`` is ``Any``)."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, Any]


class _ToolResultBlock(TypedDict):
    """A ``tool_result`` block (private: a message's ``content`` is ``Any``)."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: NotRequired[bool]


@collector_paused()  # the objects built hold no cycles to collect
def to_anthropic(
    messages: Iterable[Message],
    *,
    orphans: OrphanPolicy = "error",
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[AnthropicRequest]:
    """Convert a conversation to the ``system`` and ``messages`` parameters of Anthropic's Messages API.

    The value is ``{"system": ..., "messages": [...]}`` (``system`` only when there are system
    messages: a string for one, a list of text blocks for several), ready for
    ``client.messages.create(model=..., max_tokens=..., **value)``. Arguments that are not a JSON
    object are wrapped as ``{"value": arguments}`` (``input`` must be an object) and reported.
    ``orphans``, ``strict`` and ``accept`` work as in ``to_openai``.

    Anthropic refuses repeated ``tool_use`` ids in a request: a call whose id an earlier call
    already had is sent with a new one (``call_0-2``), which its result uses too (reported).
    It refuses text of only whitespace: beside tool calls such text is left out, and a system
    message of only whitespace too (reported).

    Raises:
        ConversionError: as ``to_openai`` (a lone surrogate in a string sent included); also a
            user message, or an assistant message without
            tool calls, whose content is only whitespace (leaving the turn out would change
            what the model is asked).
        ArgumentTypeError: as ``to_openai``.
    """
    report = _Report(strict=strict, accept=accept)
    _check_policy(orphans)
    unique = _UniqueIds(message_list(messages, "to_anthropic"))
    try:
        # System messages move to the system parameter: one between a call and its results misplaces nothing.
        fixed, sources, changes = _fix_orphans(
            unique.messages, orphans, "to_anthropic", moved_out=frozenset({Role.SYSTEM}), blank_is_empty=True
        )
    except ConversionError as error:
        raise unique.explain(error) from None
    report.extend(unique.losses(fixed, sources))
    report.extend(changes)
    request = _request(report, fixed, sources)
    refuse_unencodable(request, fixed, sources)
    return report.finish(request)


def _request(report: _Report, fixed: list[Message], sources: list[int | None]) -> AnthropicRequest:
    """The ``system`` and ``messages`` parameters for the fixed messages (``sources``: their input
    positions, ``None`` for an added one)."""
    names: dict[str, str] = {}  # the calls sent so far
    system: list[str] = []
    out: list[AnthropicMessage] = []
    problems: list[Problem] = []
    group: list[_ToolResultBlock] | None = None  # the blocks of the last turn while it is one of tool results
    for message, source in zip(fixed, sources, strict=True):
        if message.tool_calls:
            _remember_calls(names, message)
        if source is not None:
            _metadata_losses(report, source, message, why=_TARGET)
        if message.role is Role.SYSTEM:
            if _send_system(report, source, message.content, started=bool(out)):
                system.append(message.content)
            continue
        if message.role is Role.TOOL_RESULT:
            if message.tool_result is None:
                problems.append(
                    Problem(f"[{source}].tool_result", "a tool_result message must carry a tool result")
                )
                continue
            block = _result_block(report, source, message, names)
            if group is not None:
                group.append(block)
            else:
                group = [block]
                out.append({"role": "user", "content": group})
            continue
        group = None
        if _blank_turn(message):
            problems.append(Problem(f"[{source}].content", _BLANK_TURN.format(quoted(message.content))))
            continue
        out.append(_turn(report, source, message))
    if problems:
        raise ConversionError(problems)
    if not system:
        return {"messages": out}
    if len(system) == 1:
        return {"system": system[0], "messages": out}
    return {"system": [{"type": "text", "text": text} for text in system], "messages": out}


_BLANK = "Anthropic refuses text of only whitespace"
_BLANK_TURN = (
    "only whitespace ({}): " + _BLANK + ", and leaving the turn out would change what the model "
    "is asked; edit or remove the message"
)


def _blank(text: str) -> bool:
    """True for text of only whitespace (not empty): what Anthropic refuses as a text block."""
    return text.isspace()


def _blank_turn(message: Message) -> bool:
    """True for a turn sent as its text alone (user, or assistant without calls) that is only whitespace."""
    return _blank(message.content) and (message.role is Role.USER or not message.tool_calls)


def _send_system(report: _Report, source: int | None, text: str, *, started: bool) -> bool:
    """Whether a system message's text goes to ``system``: not when it is empty or only
    whitespace (reported), which Anthropic refuses as a text block."""
    if not text:
        if source is not None:
            report.lose(
                source, "", "an empty system message: not sent (Anthropic refuses an empty text block)"
            )
        return False
    if _blank(text):
        if source is not None:
            report.lose(source, "content", f"only whitespace ({quoted(text)}): not sent ({_BLANK})")
        return False
    _note_late_system(report, source, started=started)
    return True


class _UniqueIds:
    """The conversation with every repeated tool-call id made unique, as Anthropic requires (private).

    OpenAI-compatible servers reuse ids (``call_0`` in every turn); Anthropic refuses a request
    in which two ``tool_use`` blocks share one. In message order, a sent call whose id an earlier
    call already had gets a new one, ``{id}-2`` (``-3``... when taken: unique against every call
    id of the conversation, sent or not, and every result's ``tool_call_id``). A result takes
    the new id of the call it answers: the first call with its id not yet answered in the calls
    right before it (only results and system messages between, as ``_find_orphans`` reads them
    for Anthropic), else the latest call with its id (the result is misplaced, an orphan either
    way).
    """

    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        """The messages, those with a renamed call or result copied with the new id."""
        self.calls: dict[tuple[int, int], tuple[str, str]] = {}  # (index, call number) -> (old, new)
        self.results: dict[int, tuple[str, str]] = {}  # index -> (old, new)
        sent = [
            call.id for message in messages if message.role in _CALLING_ROLES for call in message.tool_calls
        ]
        if len(set(sent)) == len(sent):
            return  # the common case: nothing to rename
        # Unique against every call id, sent or not (a user message's calls are reported, not
        # sent), and every result's: the docs promise no id used anywhere in the conversation.
        self._taken = {call.id for message in messages for call in message.tool_calls}
        self._taken.update(m.tool_result.tool_call_id for m in messages if m.tool_result is not None)
        self._latest: dict[str, str] = {}  # old id -> the id its latest call is sent with
        self._open: dict[str, deque[str]] = {}  # old id -> the calls right before that results may answer
        self._numbers: dict[str, int] = {}  # old id -> the next number to try for its new ids
        self.messages = [self._renamed(index, message) for index, message in enumerate(messages)]

    def _renamed(self, index: int, message: Message) -> Message:
        if message.role is Role.TOOL_RESULT:
            return self._result(index, message)
        if message.role is Role.SYSTEM:
            return message  # moved to the system parameter: between a call and its results harmlessly
        self._open = {}
        if message.role not in _CALLING_ROLES or not message.tool_calls:
            return message
        calls = list(message.tool_calls)
        for number, call in enumerate(calls):
            new = call.id
            if call.id in self._latest:
                new = self._fresh(call.id)
                calls[number] = call.model_copy(update={"id": new})
                self.calls[(index, number)] = (call.id, new)
            self._latest[call.id] = new
            self._open.setdefault(call.id, deque()).append(new)
        if calls == list(message.tool_calls):
            return message
        return message.model_copy(update={"tool_calls": tuple(calls)})

    def _result(self, index: int, message: Message) -> Message:
        result = message.tool_result
        if result is None:
            return message  # an error later
        old = result.tool_call_id
        waiting = self._open.get(old)
        new = waiting.popleft() if waiting else self._latest.get(old, old)
        if new == old:
            return message
        self.results[index] = (old, new)
        return message.model_copy(update={"tool_result": result.model_copy(update={"tool_call_id": new})})

    def _fresh(self, old: str) -> str:
        # Counts on from the last number given for ``old``: starting at 2 each time made the
        # k-th repeat of ``call_0`` try k names, quadratic over a long conversation.
        number = self._numbers.get(old, 2)
        while f"{old}-{number}" in self._taken:
            number += 1
        new = f"{old}-{number}"
        self._numbers[old] = number + 1
        self._taken.add(new)
        return new

    def losses(self, fixed: list[Message], sources: list[int | None]) -> list[Loss]:
        """A loss for each renamed call and result still sent once the orphans are fixed."""
        if not self.calls and not self.results:
            return []
        sent = {call.id for message in fixed if message.role in _CALLING_ROLES for call in message.tool_calls}
        kept = {
            source for message, source in zip(fixed, sources, strict=True) if message.role is Role.TOOL_RESULT
        }
        losses = [
            Loss(
                index,
                f"tool_calls[{number}].id",
                f"{quoted(old)} is an earlier call's id too ({_UNIQUE}): sent as {quoted(new)}",
            )
            for (index, number), (old, new) in self.calls.items()
            if new in sent
        ]
        losses.extend(
            Loss(
                index,
                "tool_result.tool_call_id",
                f"{quoted(old)} sent as {quoted(new)}, the new id of the call it answers",
            )
            for index, (old, new) in self.results.items()
            if index in kept
        )
        return losses

    def explain(self, error: ConversionError) -> ConversionError:
        """``error`` (the orphans found) with each renamed id shown beside the one given."""
        if not self.calls and not self.results:
            return error
        renamed = {f"[{index}].tool_calls[{number}]": pair for (index, number), pair in self.calls.items()}
        renamed.update({f"[{index}].tool_result": pair for index, pair in self.results.items()})
        problems: list[Problem] = []
        for problem in error.problems:
            pair = renamed.get(problem.location)
            if pair is not None:
                old, new = pair
                renaming = f"its id in the conversation is {quoted(old)}, sent as {quoted(new)}: {_UNIQUE}"
                problem = Problem(problem.location, f"{problem.message} ({renaming})")
            problems.append(problem)
        return ConversionError(problems)


_UNIQUE = "Anthropic requires unique tool_use ids"


def _note_late_system(report: _Report, source: int | None, *, started: bool) -> None:
    """Report a system message that comes after the first turn: it moves to ``system``."""
    if started and source is not None:
        report.lose(
            source, "", "a system message after the conversation started moves to the system parameter"
        )


def _turn(report: _Report, source: int | None, message: Message) -> AnthropicMessage:
    """A user turn, or an assistant turn with its text and tool_use blocks."""
    if message.role is Role.USER:
        return {"role": "user", "content": message.content}
    if not message.tool_calls:
        return {"role": "assistant", "content": message.content}
    text = message.content
    if _blank(text) and source is not None:
        report.lose(
            source, "content", f"only whitespace ({quoted(text)}) beside tool calls: not sent ({_BLANK})"
        )
    blocks: list[AnthropicTextBlock | _ToolUseBlock] = (
        [] if not text or _blank(text) else [{"type": "text", "text": text}]
    )
    blocks.extend(_use_block(report, source, number, call) for number, call in enumerate(message.tool_calls))
    return {"role": "assistant", "content": blocks}


def _use_block(report: _Report, source: int | None, number: int, call: ToolCall) -> _ToolUseBlock:
    arguments = call.arguments
    if not isinstance(arguments, dict):
        if source is not None:
            report.lose(
                source,
                f"tool_calls[{number}].arguments",
                f'not a JSON object: sent wrapped as {{"{_WRAPPED}": ...}} (tool_use input must be an object)',
            )
        arguments = {_WRAPPED: arguments}
    # A copy: the request is the caller's to edit (trim, redact) without changing the message.
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": copied(arguments)}


def _result_block(
    report: _Report, source: int | None, message: Message, names: dict[str, str]
) -> _ToolResultBlock:
    result = message.tool_result
    assert result is not None  # checked by the caller
    if source is not None:
        if result.pending:
            report.lose(
                source,
                "tool_result.pending",
                f"a pending placeholder is sent as a completed result with its content {quoted(result.content)}",
            )
        if result.tool_call_id not in names or names[result.tool_call_id] != result.tool_name:
            report.lose(
                source,
                "tool_result.tool_name",
                f"{_TARGET} takes the tool name from the call, not the result",
            )
        if message.content != result.content:
            report.lose(source, "content", "differs from tool_result.content, which is the text sent")
    block: _ToolResultBlock = {
        "type": "tool_result",
        "tool_use_id": result.tool_call_id,
        "content": result.content,
    }
    if result.is_error:
        block["is_error"] = True
    return block


@collector_paused()  # the objects built hold no cycles to collect
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
    becomes its own tool_result message, named after its ``tool_use`` (the latest one with its
    id); text blocks become the message's content, after the turn's results (text before a
    result is reported at its block: the order is not kept). A user turn with neither text nor
    tool_result blocks (none at all, or only images) makes no message: reported at the turn,
    ``[i]``, as left out. Ids are ``msg-1``, ``msg-2``...; ``timestamp`` defaults to now.
    Losses in ``system`` have ``index=None``. The SDK's objects (a response's ``content``
    blocks, as its tool-use guide appends them) are read as the dicts of their fields.

    Raises:
        ConversionError: ``messages`` is not a list (a string or a single dict is refused at once),
            ``timestamp`` is not a signed 64-bit integer, the input is not valid Anthropic
            messages (every problem with its location; a string holding a lone surrogate,
            which orion-core's UTF-8 strings cannot, included), ``system`` is neither a string
            nor an array of text blocks, or a refused loss in strict mode.
        ArgumentTypeError: as ``to_openai``.
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
                reader.fail(f"{where}.role", f'expected "user" or "assistant", found {describe(role)}')
            continue
        if not reader.present(data, "content", where):
            continue
        content = data["content"]
        if isinstance(content, str):
            if reader.utf8(content, f"{where}.content"):
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


# What a content may be, for errors (a system prompt holds text blocks only).
_STRING_OR_BLOCKS = "a string or an array of content blocks"
_STRING_OR_TEXT_BLOCKS = "a string or an array of text blocks"


def _system_texts(reader: _Input, report: _Report, system: Any) -> list[str]:
    if system is None:
        return []
    if isinstance(system, str):
        return [system] if reader.utf8(system, "system") else []
    texts: list[str] = []
    for number, item in enumerate(reader.items(system, "system", _STRING_OR_TEXT_BLOCKS)):
        where = f"system[{number}]"
        block = reader.mapping(item, where)
        if block is None:
            continue
        if not reader.present(block, "type", where):
            continue
        if block["type"] != "text":
            reader.fail(f"{where}.type", f'expected "text", found {describe(block["type"])}')
            continue
        _unknown_keys(report, None, block, _TEXT_KEYS, f"{where}.")
        texts.append(reader.string(block, "text", where) or "")
    return texts


def _content_blocks(reader: _Input, index: int, content: Any) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
    """Each block of message ``index``'s content that is an object: its number, place and keys.

    A block that is not an object is recorded as a problem by ``reader`` and skipped.
    """
    for number, item in enumerate(reader.items(content, f"[{index}].content", _STRING_OR_BLOCKS)):
        where = f"[{index}].content[{number}]"
        block = reader.mapping(item, where)
        if block is not None:
            yield number, where, block


def _user_blocks(
    reader: _Input, report: _Report, build: _Builder, index: int, content: Any, names: dict[str, str]
) -> None:
    """A user turn's blocks: each tool_result its own message, in block order, then one user
    message of the text blocks joined. orion-core needs the results right after their calls, so
    text before a result moves after it (reported); a turn that makes no message is reported."""
    texts: list[str] = []
    moved: list[int] = []  # the text blocks read since the last tool_result block
    results = 0
    for number, where, block in _content_blocks(reader, index, content):
        kind = block.get("type")
        if kind == "text":
            _unknown_keys(report, index, block, _TEXT_KEYS, f"content[{number}].")
            text = reader.string(block, "text", where) or ""
            if text:
                moved.append(number)
            texts.append(text)
        elif kind == "tool_result":
            for earlier in moved:
                report.lose(index, f"content[{earlier}]", _TEXT_MOVED)
            moved.clear()
            results += 1
            _result_message(reader, report, build, (index, number, where), block, names)
        else:
            report.lose(index, f"content[{number}]", f"{_kind(kind, 'block')} has no place in orion-core")
    if len(texts) > 1:
        report.lose(index, "content", f"{len(texts)} text blocks joined into one text")
    if reader.problems:
        return
    if texts:
        build.add(role=Role.USER, content="".join(texts))
    elif not results:  # nothing of the turn is kept: say so at the turn, not only at its blocks
        report.lose(index, "", _EMPTY_TURN if not content else _NOTHING_READ)


_TEXT_MOVED = "text before a tool_result block: the order is not kept (the results come first)"
_EMPTY_TURN = "no content blocks: an empty user turn has no place in orion-core (left out)"
_NOTHING_READ = "no text or tool_result block: the user turn makes no message (left out)"


def _result_message(
    reader: _Input,
    report: _Report,
    build: _Builder,
    place: tuple[int, int, str],
    block: Mapping[str, Any],
    names: dict[str, str],
) -> None:
    """A ``tool_result`` block as a tool_result message named after the latest ``tool_use`` with
    its id (``place``: the message's index, the block's number and its location)."""
    index, number, where = place
    _unknown_keys(report, index, block, _RESULT_KEYS, f"content[{number}].")
    call_id = reader.string(block, "tool_use_id", where)
    text = _result_text(reader, report, index, number, block.get("content", ""))
    is_error = reader.boolean(block, "is_error", where)
    if call_id is None or reader.problems:
        return
    if call_id not in names:
        report.lose(
            index, f"content[{number}].tool_use_id", "no earlier tool_use has this id: tool_name left empty"
        )
    result = {
        "tool_call_id": call_id,
        "tool_name": names.get(call_id, ""),
        "content": text,
        "is_error": is_error,
    }
    build.add(role=Role.TOOL_RESULT, content=text, tool_result=result)


def _result_text(reader: _Input, report: _Report, index: int, number: int, content: Any) -> str:
    if isinstance(content, str):
        reader.utf8(content, f"[{index}].content[{number}].content")
        return content
    texts: list[str] = []
    for part, item in enumerate(
        reader.items(content, f"[{index}].content[{number}].content", _STRING_OR_BLOCKS)
    ):
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
                f"{_kind(block.get('type'), 'block')} in a tool result has no place in orion-core",
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
            text = reader.string(block, "text", where) or ""
            if calls and text:  # orion-core keeps a message's text apart from its calls, text first
                report.lose(index, f"content[{number}]", "text after a tool_use block: the order is not kept")
            texts.append(text)
        elif kind == "tool_use":
            _unknown_keys(report, index, block, _USE_KEYS, f"content[{number}].")
            call_id = reader.string(block, "id", where)
            name = reader.string(block, "name", where)
            present = reader.present(block, "input", where)
            arguments = reader.mapping(block["input"], f"{where}.input") if present else None
            if call_id is not None and name is not None and arguments is not None:
                call = reader.call(f"{where}.input", call_id, name, dict(arguments))
                if call is not None:
                    calls.append(call)
                    names[call_id] = name  # a result answers the latest call with its id
        else:
            report.lose(index, f"content[{number}]", f"{_kind(kind, 'block')} has no place in orion-core")
    if len(texts) > 1:
        report.lose(index, "content", f"{len(texts)} text blocks joined into one text")
    if not reader.problems:
        build.add(role=Role.ASSISTANT, content="".join(texts), tool_calls=tuple(calls))
