"""orion-core's agent events: the 15 ``AgentEvent`` variants, read and written as JSON Lines.

orion-core serializes ``AgentEvent`` as internally tagged JSON: one object per event whose
``"type"`` key names the variant in snake_case and comes first. ``parse_event`` reads one such
object, ``dump_event`` writes it back as orion-core would, ``iter_events`` reads a JSON Lines
stream and ``messages_from_events`` gives the messages a stream ends (its ``message_end`` events).

Typing is strict, as serde's is: the integer fields are unsigned 32-bit (0 to 4294967295), the
``*_per_sec`` and ``*_ms`` fields are 64-bit floats (an integer such as ``40`` is read, as serde
reads it, and written back as ``40.0``), and messages are full ``Message`` objects. Keys an event
does not know are kept and written back after the known ones.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Generator, Iterable, Mapping
from functools import cache, partial
from typing import Annotated, Any, ClassVar, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import ErrorDetails
from typing_extensions import Self, deprecated

from ._json_rules import INFINITE_NUMBER, JSON_VALUE
from ._problems import blamed_path, describe, integer_ranges, problem_from
from ._text import kind_of, location, quoted, with_article
from ._unknown_values import Origin
from .checks import problems_by_message
from .errors import ArgumentTypeError, FormatError, Problem, require_bool
from .models import U32_MAX, Message, OrderedFromPython, Role, ToolResult, _WireModel, require_ordered
from .storage import _is_blank, _open_regular, _require_path
from .wire import (
    dump_json,
    duplicate_key_problems,
    invalid_field,
    json_input,
    message_fields,
    non_finite_number,
    unencodable_string,
    validate_json,
)

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "EVENT_TYPES",
    "ContextBudgetEvent",
    "ErrorEvent",
    "GenerationStatsEvent",
    "MessageDeltaEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "ToolDeniedEvent",
    "ToolExecEndEvent",
    "ToolExecStartEvent",
    "ToolExecUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
    "WarningEvent",
    "dump_event",
    "iter_events",
    "messages_from_events",
    "parse_event",
]

_FIELDS_HEADING = "Fields:"
"""Where the generated field list starts in an event's docstring (the schemas leave it out)."""

_U32 = Annotated[int, Field(ge=0, le=U32_MAX)]
"""An unsigned 32-bit integer, as Rust's ``u32``: 0 to 4294967295."""


class _Event(_WireModel, frozen=True, allow_inf_nan=False):
    """What every event shares: strict typing, immutability, unknown keys kept (and checked to be JSON)."""

    numbers_unchecked: ClassVar[bool] = False
    """Set once ``model_construct`` put a bool or None in an event's integer or float field,
    which the writer takes without complaint (``True`` as ``1``, ``None`` as ``null``): from
    then on ``dump_event`` looks at those fields of each event it writes. Never cleared, as
    ``values_unchecked`` is not."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        # help() shows the class docstring: list every field there with its own docstring.
        lines = [f"    {name}: {field.description or ''}" for name, field in cls.model_fields.items()]
        cls.__doc__ = f"{inspect.cleandoc(cls.__doc__ or '')}\n\n{_FIELDS_HEADING}\n" + "\n".join(lines)

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:  # type: ignore[override]
        """pydantic's construction without validation; see ``numbers_unchecked``."""
        if _not_a_number_in(values, cls):
            _Event.numbers_unchecked = True
        return cast("Self", super().model_construct(_fields_set, **values))


def _not_a_number_in(values: Mapping[str, Any], event: type[BaseModel]) -> bool:
    """Whether ``values`` (an event's) hold a bool or None in an integer or float field of
    ``event``, where validation refuses them and the writer takes them."""
    # A field left out is the writer's to refuse: it is not looked at here.
    return any(type(values.get(name, 0)) in (bool, type(None)) for name in _number_fields(event))


@cache  # per class
def _number_fields(event: type[BaseModel]) -> tuple[str, ...]:
    """The fields of ``event`` that hold an integer or a float."""
    return tuple(name for name, field in event.model_fields.items() if field.annotation in (int, float))


class AgentStartEvent(_Event, frozen=True):
    """The agent starts a run (``agent_start``)."""

    type: Literal["agent_start"] = "agent_start"
    """The event's tag: ``agent_start``."""


class AgentEndEvent(_Event, frozen=True):
    """The agent finished a run (``agent_end``), with the conversation's messages."""

    type: Literal["agent_end"] = "agent_end"
    """The event's tag: ``agent_end``."""
    messages: Annotated[tuple[Message, ...], OrderedFromPython("AgentEndEvent: messages", "messages")] = (
        Field(strict=False)
    )
    """The agent's messages when the run ended."""

    def __repr_args__(self) -> Iterable[tuple[str | None, Any]]:
        # A host logging events sees this: the conversation counted, not printed whole.
        for name, value in super().__repr_args__():
            yield name, _Shown(f"<tuple of {len(value)}>") if name == "messages" else value


class _Shown(str):
    """Text a repr shows as it is, unquoted."""

    def __repr__(self) -> str:
        return str(self)


class TurnStartEvent(_Event, frozen=True):
    """A turn of the agent loop starts (``turn_start``): one generation and the tools it calls."""

    type: Literal["turn_start"] = "turn_start"
    """The event's tag: ``turn_start``."""


class TurnEndEvent(_Event, frozen=True):
    """A turn of the agent loop ended (``turn_end``), with its assistant message and tool results."""

    type: Literal["turn_end"] = "turn_end"
    """The event's tag: ``turn_end``."""
    message: Message
    """The assistant message the turn generated."""
    tool_results: Annotated[
        tuple[ToolResult, ...], OrderedFromPython("TurnEndEvent: tool_results", "tool results")
    ] = Field(strict=False)
    """The results of the tools the turn called, in order (empty when it called none): tool results, not messages."""


class MessageStartEvent(_Event, frozen=True):
    """A message starts (``message_start``); sent for user and tool-result messages, not assistant ones."""

    type: Literal["message_start"] = "message_start"
    """The event's tag: ``message_start``."""
    message: Message
    """The message."""


class MessageDeltaEvent(_Event, frozen=True):
    """A piece of the assistant's reply as it is generated (``message_delta``)."""

    type: Literal["message_delta"] = "message_delta"
    """The event's tag: ``message_delta``."""
    delta: str
    """The text generated since the previous delta."""
    tokens_generated: _U32
    """Tokens generated so far in this generation (unsigned 32-bit)."""
    tokens_per_sec: float
    """The generation speed so far, in tokens per second."""


class MessageEndEvent(_Event, frozen=True):
    """A message is complete (``message_end``); sent for every message the conversation gains."""

    type: Literal["message_end"] = "message_end"
    """The event's tag: ``message_end``."""
    message: Message
    """The complete message, as the conversation stores it."""


class GenerationStatsEvent(_Event, frozen=True):
    """Statistics of a completed generation (``generation_stats``).

    Sent exactly once per completed generation, after the assistant message is created and
    before its ``message_end``.
    """

    type: Literal["generation_stats"] = "generation_stats"
    """The event's tag: ``generation_stats``."""
    tokens_generated: _U32
    """Tokens the model generated (unsigned 32-bit)."""
    prompt_tokens: _U32
    """Tokens in the prompt sent to the model (unsigned 32-bit)."""
    tokens_per_sec: float
    """The generation speed, in tokens per second."""
    time_to_first_token_ms: float
    """Milliseconds from the request to the first generated token."""
    generation_time_ms: float
    """Milliseconds the whole generation took."""


class ToolExecStartEvent(_Event, frozen=True):
    """A tool starts running (``tool_exec_start``)."""

    type: Literal["tool_exec_start"] = "tool_exec_start"
    """The event's tag: ``tool_exec_start``."""
    tool_call_id: str
    """The id of the tool call being run."""
    tool_name: str
    """The name of the tool."""
    args: JSON_VALUE
    """The call's arguments, any JSON value (as in ``ToolCall.arguments``)."""


class ToolExecUpdateEvent(_Event, frozen=True):
    """Partial output of a running tool (``tool_exec_update``)."""

    type: Literal["tool_exec_update"] = "tool_exec_update"
    """The event's tag: ``tool_exec_update``."""
    tool_call_id: str
    """The id of the tool call being run."""
    tool_name: str
    """The name of the tool."""
    partial: str
    """The partial output text the tool reported."""


class ToolExecEndEvent(_Event, frozen=True):
    """A tool finished (``tool_exec_end``), with its result."""

    type: Literal["tool_exec_end"] = "tool_exec_end"
    """The event's tag: ``tool_exec_end``."""
    tool_call_id: str
    """The id of the tool call that ran."""
    tool_name: str
    """The name of the tool."""
    result: ToolResult = Field(strict=False)
    """The tool's result, as the tool-result message that follows carries it."""


class ToolDeniedEvent(_Event, frozen=True):
    """A tool call was refused before it ran (``tool_denied``)."""

    type: Literal["tool_denied"] = "tool_denied"
    """The event's tag: ``tool_denied``."""
    tool_call_id: str
    """The id of the refused tool call."""
    tool_name: str
    """The name of the tool."""
    reason: str
    """Why the call was refused."""


class ContextBudgetEvent(_Event, frozen=True):
    """How much of the context window the next generation uses (``context_budget``)."""

    type: Literal["context_budget"] = "context_budget"
    """The event's tag: ``context_budget``."""
    used_tokens: _U32
    """Tokens the prompt uses (unsigned 32-bit)."""
    max_tokens: _U32
    """Tokens the context allows (unsigned 32-bit)."""
    messages_in_context: _U32
    """Messages kept in the prompt (unsigned 32-bit)."""
    messages_pruned: _U32
    """Messages pruned to fit (unsigned 32-bit)."""


class WarningEvent(_Event, frozen=True):
    """A warning from the agent (``warning``); the run goes on."""

    type: Literal["warning"] = "warning"
    """The event's tag: ``warning``."""
    message: str
    """The warning text."""


class ErrorEvent(_Event, frozen=True):
    """An error from the agent (``error``)."""

    type: Literal["error"] = "error"
    """The event's tag: ``error``."""
    message: str
    """The error text."""


AgentEvent = Annotated[
    AgentStartEvent
    | AgentEndEvent
    | TurnStartEvent
    | TurnEndEvent
    | MessageStartEvent
    | MessageDeltaEvent
    | MessageEndEvent
    | GenerationStatsEvent
    | ToolExecStartEvent
    | ToolExecUpdateEvent
    | ToolExecEndEvent
    | ToolDeniedEvent
    | ContextBudgetEvent
    | WarningEvent
    | ErrorEvent,
    Field(discriminator="type"),
]
"""Any of orion-core's 15 agent events, told apart by their ``type`` key."""

# NaN and infinity are written as literals so that the shared writer refuses them (see wire.py).
_EVENT: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent, config=ConfigDict(ser_json_inf_nan="constants"))

_EVENT_CLASSES: tuple[type[_Event], ...] = get_args(get_args(AgentEvent)[0])
_CLASS_BY_TYPE = {event.model_fields["type"].default: event for event in _EVENT_CLASSES}

EVENT_TYPES: tuple[str, ...] = tuple(_CLASS_BY_TYPE)
"""Every event ``type`` tag, in orion-core's declaration order (read from the event classes)."""

# The keys each event type knows: a repeated one is serde's "duplicate field"; a key the type does
# not know is skipped unread by serde, repeated or not.
_FIELDS_BY_TYPE = {tag: frozenset(event.model_fields) for tag, event in _CLASS_BY_TYPE.items()}
_RESULT_FIELDS = frozenset(ToolResult.model_fields)


def duplicate_event_key_problems(line: bytes | str, event_type: str) -> list[Problem]:
    """A problem for every known key repeated in one object of an event of type ``event_type``
    (what ``strict`` adds; the line has been read as that event)."""
    fields = _FIELDS_BY_TYPE[event_type]
    return duplicate_key_problems(line, partial(_event_fields, fields))


def _event_fields(fields: frozenset[str], path: tuple[int | str, ...]) -> frozenset[str] | None:
    """The known keys of the object at ``path`` in an event whose own keys are ``fields`` (``StructFields``)."""
    if not path:
        return fields
    head, rest = path[0], path[1:]
    if head not in fields:
        return None  # an unknown key's value: skipped unread
    if head == "message":
        return message_fields(rest)
    if head == "messages" and rest and isinstance(rest[0], int):
        return message_fields(rest[1:])
    if path == ("result",) or (head == "tool_results" and len(rest) == 1 and isinstance(rest[0], int)):
        return _RESULT_FIELDS
    return None


_U32_FIELDS = frozenset(
    name
    for event in _EVENT_CLASSES
    for name, (low, high) in integer_ranges(event).items()
    if (low, high) == (0, U32_MAX)
)
_RANGE_ERRORS = frozenset({"less_than_equal", "greater_than_equal", "less_than", "greater_than"})
_TYPE_LIST = ", ".join(f'"{tag}"' for tag in EVENT_TYPES)


def parse_event(line: bytes | bytearray | memoryview | str, *, strict: bool = False) -> AgentEvent:
    """Read one agent event: a JSON object as orion-core writes it, such as one line of a stream.

    With ``strict=True`` (the meaning ``loads`` gives it), a key repeated in one object and the
    problems ``find_problems`` finds in the messages of an ``agent_end`` event are errors.

    Raises:
        FormatError: with every problem and its location inside the event (``message.timestamp``).
        ArgumentTypeError: ``line`` is not ``bytes``, ``bytearray``, ``memoryview`` or ``str``.
    """
    require_bool("strict", strict)
    return _read_event(json_input(line, "parse_event"), strict=strict)


def _read_event(line: bytes | str, *, strict: bool, origin: Origin | None = None) -> AgentEvent:
    """``parse_event``, for ``iter_events`` too: ``origin`` names the file and the line in the
    warnings for unknown keys left out, as ``read_jsonl``'s do."""
    # serde buffers a tagged enum: the event is read whole.
    event = validate_json(_EVENT, line, _event_problem, read_whole=True, origin=origin)
    if strict and (problems := [*duplicate_event_key_problems(line, event.type), *event_problems(event)]):
        raise FormatError(problems)
    return event


def event_problems(event: AgentEvent) -> list[Problem]:
    """The problems ``find_problems`` finds in an event's messages (an ``agent_end``'s; no other
    event holds a conversation), located in the event, the earlier places they refer to too:
    ``messages[1].id: duplicate message id "msg-1" (first at messages[0])``."""
    if not isinstance(event, AgentEndEvent):
        return []
    return [problem for _index, problem in problems_by_message(event.messages, within="messages")]


def dump_event(event: AgentEvent) -> bytes:
    """Write one agent event as orion-core writes it: compact JSON, ``type`` first, no newline.

    Messages inside are written as ``dumps_message`` writes them (defaults left out); floats
    always carry a fraction or an exponent (``40.0``), as serde writes an ``f64``.

    Raises:
        TypeError: ``event`` is not one of the event models.
        FormatError: the event holds something that cannot be written back losslessly.
    """
    if not isinstance(event, _Event):
        raise ArgumentTypeError(f"expected an agent event, got {kind_of(event)}")
    if (
        _Event.numbers_unchecked
        and _not_a_number_in(event.__dict__, type(event))
        and (found := _invalid_event_field(event)) is not None
    ):
        raise FormatError([found])
    try:
        return dump_json(_EVENT, event)
    except FormatError as error:
        raise _placed(error, event) from None


def _invalid_event_field(event: _Event) -> Problem | None:
    """``invalid_field`` of an event, worded as ``parse_event`` words it. Its class validates
    without the union's tag in the locations, which ``_event_problem`` takes off: put it back."""
    tag = type(event).model_fields["type"].default  # the class's, whatever the instance holds
    return invalid_field(event, partial(_tagged_problem, tag))


def _tagged_problem(tag: str, detail: ErrorDetails) -> Problem:
    return _event_problem({**detail, "loc": (tag, *detail["loc"])})


def _placed(error: FormatError, event: _Event) -> FormatError:
    """The writer's ``error`` for ``event`` placed where the event is at fault, as the message
    writers place theirs: at the first field validation refuses (a value of the wrong type or
    left out, which pydantic's warnings name no place of), the unpaired surrogate, the NaN."""
    problem = error.problems[0]
    try:  # the failing path only: which check refused, the serializer or the scan after it
        _EVENT.serializer.to_json(event, warnings="error")
    except ValueError:
        found = _invalid_event_field(event) or unencodable_string(event, problem)
    else:
        found = non_finite_number(event, problem)
    return error if found is None else FormatError([found])


def iter_events(path: str | os.PathLike[str], *, strict: bool = False) -> Generator[AgentEvent, None, None]:
    """Read a JSON Lines stream of agent events, one event a line, lazily.

    Blank lines are skipped. Every other line must be a whole event: a bad line (a torn last
    line included) raises ``FormatError`` naming the file and the line. ``strict`` is
    ``parse_event``'s, for every line. The file is open while the generator runs: to stop
    early, ``close()`` it (or use ``contextlib.closing``), which closes the file at once.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes are refused:
            decode them with ``os.fsdecode()``), or ``strict`` is not a bool; raised by the call
            itself, before any iteration.
        ArgumentValueError: ``path`` is empty; raised by the call itself.
        FormatError: with the file, the line number and every problem on that line.
        NotARegularFileError: ``path`` names a FIFO, a device or a folder (a FIFO is refused,
            not waited on), when iteration starts.
        OSError: the file cannot be read.
    """
    # Checked here, not in the generator: a bad argument fails at the call, not at first next().
    _require_path(path, "iter_events")
    require_bool("strict", strict)
    return _iter_events(path, strict=strict)


def _iter_events(path: str | os.PathLike[str], *, strict: bool) -> Generator[AgentEvent, None, None]:
    source = os.fspath(path)
    # storage's open: a FIFO or a device is refused (never waited on), as load() refuses it.
    with os.fdopen(_open_regular(path, os.O_RDONLY), "rb") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw.rstrip(b"\r\n")
            if _is_blank(line):  # a log's rule: a form feed is no blank line, but a corrupt record
                continue
            try:
                yield _read_event(line, strict=strict, origin=Origin(source, (number,)))
            except FormatError as error:
                raise error.at_line(number, source=source) from None


def messages_from_events(events: Iterable[AgentEvent]) -> list[Message]:
    """The messages whose ``message_end`` is in an event stream, in the order of those events.

    Each ``message_end`` appends its message; no other event adds one (``agent_end`` and
    ``turn_end`` are not read). So for a run on a restored conversation (orion-core's
    ``agent.replace_messages(saved_messages)``), or a log written per run, only the messages
    ended in the stream are returned: prepend the saved conversation to rebuild the whole one
    (``saved_messages + messages_from_events(events)``). A ``generation_stats`` followed by an
    assistant (or ``tool_call``) message's ``message_end``, with no other ``message_end``
    between them, fills that message's ``token_count`` from ``tokens_generated`` (the host
    filling in the count the agent leaves unset); a message that already has a
    ``token_count`` keeps it.

    Raises:
        ArgumentTypeError: ``events`` is not iterable, or is text, bytes, a mapping, a set (which
            keeps no order) or a single model (one event or one message: put it in a list), or an
            item is not an event model (a dict or a JSON line: ``parse_event`` and ``iter_events``
            read those).
    """
    _require_events(events)
    messages: list[Message] = []
    stats: GenerationStatsEvent | None = None
    for index, event in enumerate(events):
        if not isinstance(event, _Event):
            raise ArgumentTypeError(
                f"[{index}]: expected an event, found {kind_of(event)} (parse_event reads one)"
            )
        if isinstance(event, GenerationStatsEvent):
            stats = event
        elif isinstance(event, MessageEndEvent):
            message = event.message
            if (
                stats is not None
                and message.role in (Role.ASSISTANT, Role.TOOL_CALL)
                and message.token_count is None
            ):
                message = message.with_token_count(stats.tokens_generated)
            stats = None
            messages.append(message)
    return messages


def _require_events(events: object) -> None:
    """Refuse, as a whole, what ``messages_from_events`` would otherwise iterate into nonsense
    (a model's or a mapping's fields, text's characters) or fail on with a bare ``TypeError``."""
    function = "messages_from_events takes events"
    if isinstance(events, (str, bytes, bytearray, Mapping)):
        raise ArgumentTypeError(f"{function}, got {kind_of(events)} (iter_events reads a log)")
    if isinstance(events, BaseModel):  # iterating a model gives its (name, value) pairs
        hint = "put it in a list: [event]" if isinstance(events, _Event) else "not an event"
        raise ArgumentTypeError(f"{function}, got {kind_of(events)} ({hint})")
    if not isinstance(events, Iterable):
        raise ArgumentTypeError(
            f"{function}, got {kind_of(events)} (an iterable of event models, as iter_events gives)"
        )
    require_ordered(events, "messages_from_events", "events")


@deprecated(
    "record_events is deprecated: use messages_from_events", category=None
)  # for type checkers; warns below
def record_events(events: Iterable[AgentEvent]) -> list[Message]:
    """Deprecated alias of ``messages_from_events`` (its name said the opposite of what it does)."""
    warnings.warn(
        "orion_messages.events.record_events is deprecated since 0.2.0 and will be removed in the next "
        "release; use orion_messages.events.messages_from_events",  # the words of the package's aliases
        DeprecationWarning,
        stacklevel=2,
    )
    return messages_from_events(events)


def _event_problem(detail: ErrorDetails) -> Problem:
    """One error detail of an event, located in the event's own keys (not under its type's tag)."""
    kind = detail["type"]
    loc = detail["loc"]
    if kind == "union_tag_not_found":
        return Problem("type", "required key is missing (the event's type)")
    if kind == "union_tag_invalid":
        found = describe(_tag_of(detail.get("input")))
        return Problem("type", f"expected an event type, one of {_TYPE_LIST}, found {found}")
    if kind in ("dict_type", "model_type", "model_attributes_type") and not loc:
        found = detail.get("input")
        return Problem("", f"expected an event (a JSON object), found {describe(found)}{_array_hint(found)}")
    loc = blamed_path(detail)
    tag = loc[0] if loc and loc[0] in EVENT_TYPES else None
    if tag is not None:
        loc = loc[1:]  # the union's tag; the event's own keys follow
    where = location(loc)
    field = loc[-1] if loc else ""
    found = describe(detail.get("input"))
    if kind == "literal_error" and loc == ("type",) and tag is not None:  # model_construct's other tag
        return Problem(
            where, f"expected {quoted(tag)} ({with_article(_CLASS_BY_TYPE[tag].__name__)}), found {found}"
        )
    if kind in _RANGE_ERRORS and len(loc) == 1 and field in _U32_FIELDS:
        return Problem(where, f"expected an integer from 0 to {U32_MAX}, found {found}")
    if kind in ("float_type", "float_parsing"):
        return Problem(where, f"expected a number, found {found}")
    if kind == "finite_number":
        return Problem(where, INFINITE_NUMBER)  # the words of a free value's (arguments, args)
    problem = problem_from(detail)
    return Problem(where, problem.message, problem.line, problem.column)


def _array_hint(found: Any) -> str:
    """What an array given as an event may be: serde's array form of an event (its type first),
    or a conversation; nothing for any other value."""
    if not isinstance(found, list) or not found:
        return ""
    if isinstance(found[0], str) and found[0] in EVENT_TYPES:  # serde reads it: the tag, then the fields
        return " (an event written as an array, which serde reads, is refused: orion-core never writes one)"
    if all(isinstance(item, dict) for item in found):
        return " (it looks like a conversation, a list of messages, which load and loads read)"
    return ""


def _tag_of(value: Any) -> Any:
    return value.get("type") if isinstance(value, dict) else value
