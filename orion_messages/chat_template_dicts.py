"""Chat-template dicts, as Hugging Face ``apply_chat_template`` and Ollama take them.

``to_chat_template`` gives ``{"role", "content"}`` dicts with roles ``system``, ``user``,
``assistant`` (with ``tool_calls``: ``{id, type: "function", function: {name, arguments}}``) and
``tool`` (with ``tool_call_id`` and ``name``). Templates disagree on the arguments, so
``arguments="object"`` (a JSON value, the transformers docs' and Ollama's choice) or
``arguments="string"`` (JSON text written as orion-core writes it) picks one.

Templates read only the keys they know, so with ``metadata=True`` (the default) everything else
(ids, timestamps, ``pinned``, ``token_count``, ``is_error``, ``pending``, unknown keys) rides
along under one extra key, ``"orion"``, and ``from_chat_template`` restores the conversation
exactly. With ``metadata=False`` those are reported as losses instead.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ValidationError

from ._arguments import decode_arguments, encode_arguments
from ._collector import collector_paused
from ._conversion_input import (
    Sent,
    _Input,
    _stamp,
    _unknown_keys,
    as_data,
    refuse_unencodable,
    text_content,
    unencodable_problems,
)
from ._json_rules import copied
from ._problems import blamed_path, describe, problem_from
from ._text import excerpt, location, quoted
from .conversions import ConversionResult, OrphanPolicy, _fix_orphans, _input_list, _Report, key_field
from .errors import ConversionError, FormatError, Problem, require_bool
from .ids import FreshIds
from .models import Message, Role, ToolCall

__all__ = ["METADATA_KEY", "ArgumentsMode", "from_chat_template", "to_chat_template"]

METADATA_KEY = "orion"
"""The key under which ``to_chat_template(metadata=True)`` keeps what templates have no place for."""

ArgumentsMode = Literal["object", "string"]
"""How tool-call arguments appear in chat-template dicts: a JSON value, or JSON text.

Any other value raises ``ConversionError`` naming these two.
"""

_ARGUMENTS_MODES: tuple[str, ...] = get_args(ArgumentsMode)

_ROLES = {
    Role.SYSTEM: "system",
    Role.USER: "user",
    Role.ASSISTANT: "assistant",
    Role.TOOL_CALL: "assistant",
    Role.TOOL_RESULT: "tool",
}
_READ_ROLES = {
    "system": Role.SYSTEM,
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "tool": Role.TOOL_RESULT,
}


@collector_paused()  # the objects built hold no cycles to collect
def to_chat_template(
    messages: Iterable[Message],
    *,
    arguments: ArgumentsMode = "object",
    metadata: bool = True,
    orphans: OrphanPolicy = "keep",
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[list[dict[str, Any]]]:
    """Convert a conversation to chat-template dicts (``apply_chat_template(messages=...)``, Ollama).

    ``orphans`` defaults to ``"keep"``: templates render orphans as they are. ``strict`` and
    ``accept`` work as in ``to_openai``. An unknown key holding ``null`` is reported with the
    metadata too: ``from_chat_template`` reads a ``null`` there as not given.

    Raises:
        ConversionError: a tool_result message without a result, an orphan with
            ``orphans="error"``, an unknown ``orphans`` policy or ``arguments`` mode, a refused
            loss in strict mode, or a string sent (the ``"orion"`` metadata included) that holds
            a lone surrogate, at its place.
        ArgumentTypeError: ``messages`` or an item of it, as ``to_openai``; ``strict`` or
            ``metadata`` is not a bool, or ``accept`` is a string or holds a non-string.
    """
    require_bool("metadata", metadata)
    report = _Report(strict=strict, accept=accept)
    _check_arguments_mode(arguments)
    fixed, sources, changes = _fix_orphans(messages, orphans, "to_chat_template")
    report.extend(changes)
    sent = None if metadata else _SENT  # the "orion" metadata carries every field
    try:
        out = _template_dicts(report, fixed, sources, arguments, metadata=metadata)
    except (FormatError, UnicodeEncodeError) as error:
        # A lone surrogate the writer refuses (string arguments; a key, which the overlay's JSON
        # dump encodes): located where it is, in a field sent or, failing that, in any field.
        found = unencodable_problems(fixed, sources, sent) or unencodable_problems(fixed, sources, None)
        raise ConversionError(found or _unlocated(error)) from None
    refuse_unencodable(out, fixed, sources, sent)
    return report.finish(out)


def _template_dicts(
    report: _Report, fixed: list[Message], sources: list[int | None], mode: ArgumentsMode, *, metadata: bool
) -> list[dict[str, Any]]:
    """The dicts for the fixed conversation (``sources``: their input positions)."""
    out: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for message, source in zip(fixed, sources, strict=True):
        if message.role is Role.TOOL_RESULT and message.tool_result is None:
            problems.append(
                Problem(f"[{source}].tool_result", "a tool_result message must carry a tool result")
            )
            continue
        entry = _entry(message, mode)
        standard = _standard(entry, [])
        overlay = _diff(message.model_dump(mode="json"), standard)
        if metadata:
            entry[METADATA_KEY] = overlay
            if source is not None:
                _null_losses(report, source, overlay, standard)
        elif source is not None:
            for field in _paths(overlay, standard):
                report.lose(source, field, "chat-template dicts carry this only with metadata=True")
        out.append(entry)
    if problems:
        raise ConversionError(problems)
    return out


def _null_losses(report: _Report, source: int, overlay: dict[str, Any], standard: dict[str, Any]) -> None:
    """Report each key of the metadata holding ``null`` (an unknown key's value): read back as
    not given (``_given``), the key does not come back."""
    kept = _given(overlay, standard)
    if kept != overlay:
        back = set(_paths(kept, standard))
        for field in _paths(overlay, standard):
            if field not in back:
                report.lose(
                    source,
                    field,
                    f"holds null, which from_chat_template reads in the {quoted(METADATA_KEY)} metadata as not given",
                )


_SENT = Sent(
    {"role": True, "tool_result": {"tool_call_id": True, "tool_name": True, "content": True}},
    {"role": True, "content": True, "tool_calls": True},
)
"""What a chat-template dict carries without the metadata: a result's id, tool name and text."""


def _unlocated(error: FormatError | UnicodeEncodeError) -> list[Problem]:
    """The writer's own problems, when no string of the messages is found to hold the surrogate."""
    return error.problems if isinstance(error, FormatError) else [Problem("", f"cannot be written: {error}")]


def _check_arguments_mode(mode: object) -> None:
    """``ConversionError`` naming the accepted values unless ``mode`` is an ``ArgumentsMode``."""
    if not isinstance(mode, str) or mode not in _ARGUMENTS_MODES:
        accepted = " or ".join(f'"{name}"' for name in _ARGUMENTS_MODES)
        raise ConversionError([Problem("arguments", f"expected {accepted}, found {excerpt(repr(mode))}")])


def _entry(message: Message, mode: ArgumentsMode) -> dict[str, Any]:
    result = message.tool_result
    if message.role is Role.TOOL_RESULT and result is not None:
        return {
            "role": "tool",
            "content": result.content,
            "tool_call_id": result.tool_call_id,
            # Hugging Face templates read "name", Ollama's chat API "tool_name"; each ignores the other.
            "name": result.tool_name,
            "tool_name": result.tool_name,
        }
    entry: dict[str, Any] = {"role": _ROLES[message.role], "content": message.content}
    if message.tool_calls and message.role in (Role.ASSISTANT, Role.TOOL_CALL):
        entry["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {
                    "name": call.name,
                    # A copy: the dicts are the caller's to edit without changing the message.
                    "arguments": encode_arguments(call.arguments)
                    if mode == "string"
                    else copied(call.arguments),
                },
            }
            for call in message.tool_calls
        ]
    return entry


_ArgumentLoss = tuple[str, str, bool, int]
"""``(field, why, exported, call)`` for the arguments text of the ``call``-th tool call:
``exported`` when any ``"orion"`` metadata makes it no loss (text kept as a string is what was
exported); else only metadata that gives that call's arguments does (``_restores_arguments``)."""


def _standard(entry: Mapping[str, Any], losses: list[_ArgumentLoss]) -> dict[str, Any]:
    """The orion message (as a JSON dict, without id and timestamp) a template dict stands for.

    ``losses`` receives what reading its arguments text could not keep.
    """
    role = _READ_ROLES[entry["role"]]
    data: dict[str, Any] = {"role": role.value, "content": entry.get("content") or ""}
    if role is Role.TOOL_RESULT:
        data["tool_result"] = {
            "tool_call_id": entry.get("tool_call_id"),
            "tool_name": entry.get("name", entry.get("tool_name")),  # None: from the call
            "content": data["content"],
            "is_error": False,
        }
    calls = entry.get("tool_calls")
    if calls:
        data["tool_calls"] = [_standard_call(call, losses, number) for number, call in enumerate(calls)]
    return data


def _standard_call(call: Any, losses: list[_ArgumentLoss], number: int) -> dict[str, Any]:
    call = as_data(call)  # checked to be an object (a model read as one) by ``_check_call``
    function = as_data(call.get("function")) or {}
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        arguments, invalid, repeated = decode_arguments(arguments)
        field = f"tool_calls[{number}].function.arguments"
        if invalid is not None:
            losses.append((field, invalid, True, number))
        if repeated is not None:
            losses.append((field, repeated, False, number))
    return {"id": call.get("id"), "name": function.get("name"), "arguments": arguments}  # None: a new one


def _diff(actual: dict[str, Any], standard: dict[str, Any]) -> dict[str, Any]:
    """What ``actual`` holds beyond ``standard``: the keys ``_restore`` needs to rebuild it."""
    overlay: dict[str, Any] = {}
    for key, value in actual.items():
        base = standard.get(key)
        if key == "tool_calls" and isinstance(base, list) and len(base) == len(value):
            calls = [
                {k: v for k, v in call.items() if k not in known or known[k] != v}
                for call, known in zip(value, base, strict=True)
            ]
            if any(calls):
                overlay[key] = calls
        elif key == "tool_result" and isinstance(base, dict):
            part = {k: v for k, v in value.items() if k not in base or base[k] != v}
            if part:
                overlay[key] = part
        elif key not in standard or base != value or type(base) is not type(value):
            overlay[key] = value
    return overlay


def _merges(key: str, base: object, value: object) -> bool:
    """Whether ``_restore`` merges the metadata's ``value`` for ``key`` into the template's ``base``
    (call by call for ``tool_calls``, key by key for ``tool_result``) rather than replacing it."""
    if key == "tool_calls":
        return isinstance(base, list) and isinstance(value, list) and len(base) == len(value)
    return key == "tool_result" and isinstance(base, dict) and isinstance(value, Mapping)


def _restore(standard: dict[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """The message ``standard`` stands for, with the ``"orion"`` metadata ``overlay`` laid over it."""
    data = dict(standard)
    for key, value in overlay.items():
        if not _merges(key, data.get(key), value):
            data[key] = value
        elif key == "tool_calls":
            data[key] = [
                {**call, **part} if isinstance(part, Mapping) else part
                for call, part in zip(data[key], value, strict=True)
            ]
        else:
            data[key] = {**data[key], **value}
    return data


_CALL_PLACES: dict[int | str, tuple[str, ...]] = {
    "id": ("id",),
    "name": ("function", "name"),
    "arguments": ("function", "arguments"),
}


def _input_location(
    loc: tuple[int | str, ...], entry: Mapping[str, Any], standard: dict[str, Any], overlay: Mapping[str, Any]
) -> tuple[int | str, ...]:
    """Where, in the template dict ``entry``, the value at ``loc`` of the restored message was given.

    ``_restore`` laid the metadata ``overlay`` over ``standard`` (read from the template's own
    keys), so a value the metadata gave is under ``"orion"`` at its own path; any other is at its
    template key (``_template_location``). Pydantic's ``loc`` is of the restored message, which
    is neither.
    """
    if not loc or not isinstance(loc[0], str) or loc[0] not in overlay:
        return _template_location(loc, entry)
    key, value = loc[0], overlay[loc[0]]
    if not _merges(key, standard.get(key), value):
        return (METADATA_KEY, *loc)
    # Merged: a key the metadata's call or result does not hold was read from the template.
    if key == "tool_calls":
        part = value[loc[1]] if len(loc) > 1 else None
        given = not isinstance(part, Mapping) or len(loc) < 3 or loc[2] in part
    else:
        given = len(loc) < 2 or loc[1] in value
    return (METADATA_KEY, *loc) if given else _template_location(loc, entry)


def _template_location(loc: tuple[int | str, ...], entry: Mapping[str, Any]) -> tuple[int | str, ...]:
    """Where a restored message's value read by ``_standard`` is in the template dict, in its
    spelling: a call's ``name`` is ``tool_calls[k].function.name``, a result's ``tool_name`` is
    ``name`` (or ``tool_name``), its ``tool_call_id`` and ``content`` are top-level."""
    if len(loc) > 2 and loc[0] == "tool_calls":
        return ("tool_calls", loc[1], *_CALL_PLACES.get(loc[2], (loc[2],)), *loc[3:])
    if len(loc) > 1 and loc[0] == "tool_result":
        name = "name" if "name" in entry else "tool_name"  # the key _standard read it from
        field = name if loc[1] == "tool_name" else loc[1]
        return (field, *loc[2:])
    return loc


def _paths(overlay: Mapping[str, Any], standard: Mapping[str, Any]) -> list[str]:
    """The field paths an overlay holds (``pinned``, ``tool_result.is_error``, ``tool_calls[0].x``;
    a key that is not a plain name as ``key_field`` shows it).

    A result or calls missing from ``standard`` altogether are one path, the whole field.
    """
    paths: list[str] = []
    for key, value in overlay.items():
        if key == "tool_result" and key in standard and isinstance(value, dict):
            paths.extend(key_field("tool_result.", part) for part in value)
        elif (
            key == "tool_calls"
            and key in standard
            and isinstance(value, list)
            and all(isinstance(c, dict) for c in value)
        ):
            paths.extend(
                key_field(f"tool_calls[{n}].", part) for n, call in enumerate(value) for part in call
            )
        else:
            paths.append(key_field("", key))
    return paths


_KNOWN_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "tool_name", METADATA_KEY})


@collector_paused()  # the objects built hold no cycles to collect
def from_chat_template(
    messages: Iterable[Mapping[str, Any] | BaseModel],
    *,
    timestamp: int | None = None,
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[list[Message]]:
    """Read chat-template dicts (Hugging Face, Ollama) back into a conversation.

    A pydantic model (the ollama client's ``Message``, a tool call) is read as the dict it dumps
    to (``model_dump(by_alias=True, exclude_unset=True)``, its values as they are).

    Arguments may be a JSON value or JSON text (``loads``' rules; text not valid JSON is kept as
    a string, reported unless the ``"orion"`` metadata says it is what was exported; a repeated
    key keeps its last value, reported). A ``null`` key (but ``role``) is absent, in the metadata
    too (``_given``). ``content`` may be typed parts, as for ``from_openai``. A ``tool`` message without
    ``tool_call_id`` answers the oldest unanswered call (reported). The ``"orion"`` key restores
    ids, timestamps and everything else ``to_chat_template`` kept. A message without it gets a
    new id ``msg-N``, N counting on after the highest ``msg-N`` among the restored ids (as
    orion-core numbers messages), so no two messages share an id; ``timestamp`` defaults to now.

    Raises:
        ConversionError: ``messages`` is not a list (a string or a single dict is refused at once),
            ``timestamp`` is not a signed 64-bit integer, the input is not valid chat-template
            dicts (every problem with its location), or a refused loss in strict mode.
        ArgumentTypeError: ``strict`` is not a bool, or ``accept`` is a string or holds a non-string.
    """
    items = [as_data(item) for item in _input_list(messages, "a list of chat-template message dicts")]
    stamp = _stamp(timestamp)
    reader = _Input()
    report = _Report(strict=strict, accept=accept)
    ids = FreshIds(_restored_ids(items))
    call_ids = _CallNumbering(items)
    out: list[Message] = []
    unanswered = _Unanswered()
    for index, item in enumerate(items):
        entry = _checked_entry(reader, report, index, item)
        if entry is None:
            continue
        losses: list[_ArgumentLoss] = []
        standard = _standard(entry, losses)
        overlay = _metadata(report, index, entry, standard, losses)
        call_ids.fill(report, index, standard)
        _pair_result(report, index, standard, unanswered)
        data = _restore(standard, overlay)
        if "id" not in data:
            data["id"] = ids.next()
        data.setdefault("timestamp", stamp)
        try:
            message = Message.model_validate(data)
        except ValidationError as error:
            for detail in error.errors(include_url=False):
                where = _input_location(blamed_path(detail), entry, standard, overlay)
                reader.fail(location((index, *where)), problem_from(detail).message)
            continue
        unanswered.add(message.tool_calls)
        out.append(message)
    reader.done()
    return report.finish(out)


def _metadata(
    report: _Report,
    index: int,
    entry: Mapping[str, Any],
    standard: dict[str, Any],
    losses: list[_ArgumentLoss],
) -> Mapping[str, Any]:
    """The entry's ``"orion"`` metadata (``_given``: its ``null`` values left out), or ``{}``
    without it, when ``losses`` are reported (``standard``: what the template's keys say).

    With the metadata, text kept as a string is what was exported (``to_chat_template`` puts in
    it every value that reads back differently): only without it is that a loss. A repeated key
    is no loss only where the metadata gives the call's arguments (the text as exported).
    """
    overlay = entry.get(METADATA_KEY)
    given = isinstance(overlay, Mapping)
    for field, why, exported, call in losses:
        if not (given and (exported or _restores_arguments(overlay, call))):
            report.lose(index, field, why)
    return _given(overlay, standard) if isinstance(overlay, Mapping) else {}


def _restores_arguments(overlay: Any, call: int) -> bool:
    """Whether the metadata ``overlay`` gives the ``call``-th tool call's arguments."""
    calls = overlay.get("tool_calls") if isinstance(overlay, Mapping) else None
    if not isinstance(calls, list) or call >= len(calls) or not isinstance(calls[call], Mapping):
        return False
    return calls[call].get("arguments") is not None


def _given(overlay: Mapping[str, Any], standard: dict[str, Any]) -> Mapping[str, Any]:
    """The metadata without its ``null`` values: its own keys', and those of a result or of
    calls it lays over the template's (``_merges``); a whole value it gives is kept as it is.

    ``null`` there means "not given": ``to_chat_template`` writes none (a field that is ``null``
    in orion-core is left out; an unknown key holding one is reported), while Arrow (Hugging Face
    ``datasets``) gives every message every key any message has, ``null`` where it had none. Read
    as values, they would replace what the template's keys say (``"tool_result": null`` would
    erase the result).
    """
    out = {key: value for key, value in overlay.items() if value is not None}
    result, calls = out.get("tool_result"), out.get("tool_calls")
    if result is not None and _merges("tool_result", standard.get("tool_result"), result):
        out["tool_result"] = _without_nulls(result)
    if calls is not None and _merges("tool_calls", standard.get("tool_calls"), calls):
        out["tool_calls"] = [_without_nulls(call) if isinstance(call, Mapping) else call for call in calls]
    return out


def _without_nulls(part: Mapping[str, Any]) -> dict[str, Any]:
    """``part`` without the keys whose value is ``null``."""
    return {key: value for key, value in part.items() if value is not None}


def _restored_ids(items: list[Any]) -> list[str]:
    """The message ids the ``"orion"`` metadata restores: a new id must differ from them all."""
    found: list[str] = []
    for item in items:
        overlay = item.get(METADATA_KEY) if isinstance(item, Mapping) else None
        if isinstance(overlay, Mapping) and isinstance(overlay.get("id"), str):
            found.append(overlay["id"])
    return found


class _CallNumbering:
    """New ids ``call-N`` for tool calls that came without one (or with ``null``), unlike every
    call id and result ``tool_call_id`` of the input.

    Hugging Face and Ollama histories may leave ids out; an orion-core call needs one for its
    result to name. A given id is kept, ``""`` included: orion-core takes it, and an exported
    conversation must read back exactly.
    """

    def __init__(self, items: list[Any]) -> None:
        self.taken = {
            value
            for item in items
            if isinstance(item, Mapping)
            for value in (item.get("tool_call_id"), *_call_ids(item.get("tool_calls")))
            if isinstance(value, str)
        }
        self.last = 0

    def fill(self, report: _Report, index: int, standard: dict[str, Any]) -> None:
        """Give each call of ``standard`` without an id a new one, reported as a loss."""
        for number, call in enumerate(standard.get("tool_calls") or ()):
            if call["id"] is None:
                call["id"] = self._next()
                report.lose(
                    index, f"tool_calls[{number}].id", f"missing: given the new id {quoted(call['id'])}"
                )

    def _next(self) -> str:
        self.last += 1  # counts on past the taken ids: a result must never be claimed by a new one
        while f"call-{self.last}" in self.taken:
            self.last += 1
        return f"call-{self.last}"


def _call_ids(calls: object) -> list[object]:
    """The ``id`` of each call in a ``tool_calls`` value, whatever the value holds."""
    if not isinstance(calls, list):
        return []
    return [call.get("id") for call in map(as_data, calls) if isinstance(call, Mapping)]


class _Unanswered:
    """The tool calls read so far that no result has answered yet, oldest first.

    Each is taken once: by the oldest with a result's call id, or the oldest of all for a result
    without one. Constant time a result: a history can hold a hundred thousand calls.
    """

    def __init__(self) -> None:
        self._calls: list[tuple[str, str]] = []  # (call id, tool name) of every call, in order
        self._by_id: dict[str, deque[int]] = {}  # call id -> its unanswered calls, oldest first
        self._answered: set[int] = set()
        self._oldest = 0  # no call before this one is unanswered

    def add(self, calls: Iterable[ToolCall]) -> None:
        """Calls of the next message, waiting for their results."""
        for call in calls:
            self._by_id.setdefault(call.id, deque()).append(len(self._calls))
            self._calls.append((call.id, call.name))

    def take(self, call_id: str | None) -> tuple[str, str] | None:
        """The (call id, tool name) a result answers, no longer unanswered; None if none is."""
        if call_id is None:
            while self._oldest in self._answered:
                self._oldest += 1
            if self._oldest == len(self._calls):
                return None
            call_id = self._calls[self._oldest][0]
        waiting = self._by_id.get(call_id)
        if not waiting:
            return None
        number = waiting.popleft()  # the oldest with this id (the oldest of all, for no id)
        self._answered.add(number)
        return self._calls[number]


def _pair_result(report: _Report, index: int, standard: dict[str, Any], unanswered: _Unanswered) -> None:
    """Fill a result's missing call id (the oldest unanswered call) and tool name (the call's)."""
    result = standard.get("tool_result")
    if result is None:
        return
    call_id = result["tool_call_id"]
    match = unanswered.take(call_id)
    if call_id is None:
        result["tool_call_id"] = match[0] if match else ""
        report.lose(
            index,
            "tool_call_id",
            "missing: paired with the oldest unanswered call"
            if match
            else "missing, and no call is unanswered: left empty",
        )
    if result["tool_name"] is None:
        result["tool_name"] = match[1] if match is not None else ""
        if match is None:
            report.lose(
                index, "name", "missing, and no earlier call has this id to name the tool: left empty"
            )


def _checked_entry(reader: _Input, report: _Report, index: int, item: Any) -> Mapping[str, Any] | None:
    """The dict, if its role, content, tool calls and metadata have the right types: a key that
    is ``null`` read as absent (but ``role``), typed content parts read as text."""
    where = f"[{index}]"
    entry = reader.mapping(item, where)
    if entry is None:
        return None
    # Arrow (Hugging Face datasets) gives every message every key. By identity: ``in`` compares
    # with ==, which a numpy array (a row read with_format("numpy")) refuses to answer.
    if any(value is None for value in entry.values()):
        entry = {key: value for key, value in entry.items() if value is not None or key == "role"}
    before = len(reader.problems)
    role = reader.string(entry, "role", where)
    if role is not None and role not in _READ_ROLES:
        reader.fail(
            f"{where}.role", f'expected "system", "user", "assistant" or "tool", found {describe(role)}'
        )
    if not isinstance(entry.get("content", ""), str):  # typed parts, as from_openai reads them
        entry = {**entry, "content": text_content(reader, report, index, entry, nullable=True)}
    elif "content" in entry:
        reader.utf8(entry["content"], f"{where}.content")
    names = [
        reader.string(entry, key, where, required=False) for key in ("tool_call_id", "name", "tool_name")
    ]
    if role == "tool" and names[1] is not None and names[2] is not None and names[1] != names[2]:
        report.lose(
            index, "tool_name", f"differs from name {quoted(names[1])}, which gives the tool's name: not kept"
        )
    if role in _READ_ROLES and role != "tool":  # only a tool message has a use for these keys
        for key, given in zip(("tool_call_id", "name", "tool_name"), names, strict=True):
            if given is not None:
                report.lose(index, key, _UNUSED_KEY_REASONS[key])
    calls = entry.get("tool_calls")
    for number, call in enumerate(reader.items(calls, f"{where}.tool_calls") if calls is not None else ()):
        _check_call(reader, report, index, number, call)
    overlay = entry.get(METADATA_KEY)
    if overlay is not None and reader.mapping(overlay, f"{where}.{METADATA_KEY}") is not None:
        reader.utf8_value(overlay, f"{where}.{METADATA_KEY}")
    _unknown_keys(report, index, entry, _KNOWN_KEYS)
    return entry if len(reader.problems) == before else None


_UNUSED_KEY_REASONS = {
    "tool_call_id": "only a tool message answers a call: not kept",
    "name": "orion-core has no place for the participant name",
    "tool_name": "only a tool message names a tool: not kept",
}
"""Why a key a template reads only on a tool message is lost on another message."""

_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})


def _check_call(reader: _Input, report: _Report, index: int, number: int, call: Any) -> None:
    """Check one ``tool_calls`` item's types; report its unknown keys and its function's."""
    where = f"[{index}].tool_calls[{number}]"
    data = reader.mapping(call, where)
    if data is None:
        return
    if data.get("id") is not None:  # null, like a missing id, gets a new one
        reader.string(data, "id", where, required=False)
    _unknown_keys(report, index, data, _CALL_KEYS, f"tool_calls[{number}].")
    function = (
        reader.mapping(data["function"], f"{where}.function")
        if reader.present(data, "function", where)
        else None
    )
    if function is not None:
        _unknown_keys(report, index, function, _FUNCTION_KEYS, f"tool_calls[{number}].function.")
        reader.string(function, "name", f"{where}.function")
        if "arguments" not in function:
            reader.fail(f"{where}.function.arguments", "required key is missing")
        else:
            reader.utf8_value(function["arguments"], f"{where}.function.arguments")
