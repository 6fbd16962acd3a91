"""What every format conversion shares: the loss report, strict mode, and orphaned tool calls.

A conversion never loses anything silently: it returns a ``ConversionResult`` holding the
converted value and every ``Loss`` (which message, which field, why) that the target format had
no place for. ``strict=True`` raises ``ConversionError`` instead of returning a lossy result,
except for the fields named in ``accept``. The converters themselves live in one module per
format: ``openai_chat``, ``anthropic_messages``, ``chat_template_dicts`` and ``orion_backend``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Generic, Literal, NamedTuple, TypeVar, get_args

from pydantic import BaseModel

from ._collector import collector_paused
from ._problems import describe
from ._text import excerpt, kind_of, location, quoted, shown_location
from .errors import ArgumentTypeError, ConversionError, Problem, require_bool
from .ids import FreshIds
from .models import Message, Role, ToolCall, first_non_message, message_list, require_message_list

__all__ = [
    "MISSING_RESULT_TEXT",
    "ConversionResult",
    "Loss",
    "Orphan",
    "OrphanPolicy",
    "find_orphans",
    "fix_orphans",
]

T = TypeVar("T")

OrphanPolicy = Literal["error", "drop", "synthesize", "keep"]
"""What to do with a tool call without a result or a result without a call.

A result that does not follow its call is both (see ``Orphan``). ``"error"`` raises
``ConversionError``; ``"drop"`` removes the orphaned call or result, and an assistant message
left with no content and no call; ``"synthesize"`` adds an error result (``MISSING_RESULT_TEXT``;
message id ``{call id}-missing-result``, or a new ``msg-N`` when a message has that one) after
each unanswered call's results and drops results without a call; ``"keep"`` passes them
through unchanged. Every change is reported.
Any other value raises ``ConversionError`` naming these four.
"""

_POLICIES: tuple[str, ...] = get_args(OrphanPolicy)

MISSING_RESULT_TEXT = "error: this tool call was never answered (result missing from the history)"
"""The content of the error result that ``orphans="synthesize"`` adds for an unanswered call."""

_CALLING_ROLES = frozenset({Role.ASSISTANT, Role.TOOL_CALL})


@dataclass(frozen=True, slots=True)
class Loss:
    """One thing a conversion could not carry (or changed): which message, which field, why.

    ``index`` is the message's position in the conversion's input (``None`` for a part of the
    input outside the message list, such as Anthropic's ``system`` parameter); ``field`` is the
    path inside that message (``"pinned"``, ``"tool_result.is_error"``, ``"tool_calls[0]"``; empty
    for the whole message).
    """

    index: int | None
    """The position of the message in the input, or ``None`` outside the message list."""
    field: str
    """The path inside the message, such as ``tool_result.is_error``; empty for the whole message
    (which ``accept`` names ``"message"``)."""
    reason: str
    """Why it was lost, in plain words."""

    @property
    def location(self) -> str:
        """The JSON path, such as ``[3].tool_result.is_error``."""
        head = "" if self.index is None else f"[{self.index}]"
        if not self.field:
            return head
        return f"{head}{self.field}" if self.field.startswith("[") or not head else f"{head}.{self.field}"

    def __str__(self) -> str:
        return f"{shown_location(self.location)}: {self.reason}" if self.location else self.reason


@dataclass(frozen=True)
class ConversionResult(Generic[T]):
    """A converted value and everything the conversion could not carry."""

    value: T
    """The converted messages (or request parts) in the target format."""
    losses: tuple[Loss, ...] = ()
    """What the target had no place for, or what a fix changed, in input order."""

    @property
    def lossless(self) -> bool:
        """True when nothing was lost or changed."""
        return not self.losses

    def losses_by_field(self) -> list[tuple[str, int]]:
        """How many losses each field has, most first, list indexes folded (``tool_calls[].id``;
        ``(whole message)`` for a message lost whole): the summary of a long ``losses``."""
        counts = Counter(_folded(loss.field) or "(whole message)" for loss in self.losses)
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

    def __repr__(self) -> str:
        # A notebook shows this: the losses counted by field, not listed one by one.
        value = repr(self.value)
        if isinstance(self.value, list):
            value = f"<list of {len(self.value)}>"
        elif isinstance(self.value, dict):
            value = f"<dict of {', '.join(map(str, self.value))}>"
        if not self.losses:
            return f"ConversionResult(value={value}, lossless)"
        fields = ", ".join(f"{shown_location(field)} x{count}" for field, count in self.losses_by_field())
        return f"ConversionResult(value={value}, {len(self.losses)} losses: {fields})"


# A list index, or a quoted key in brackets (``["a[0]"]``, its quotes and backslashes escaped),
# matched whole so that the digits inside a key's name are never read as an index.
_INDEX_OR_KEY = re.compile(r'\[\d+\]|\["(?:[^"\\]|\\.)*"\]')


def _folded(field: str) -> str:
    """``field`` with its list indexes folded (``tool_calls[2].id`` -> ``tool_calls[].id``); a
    quoted key is left whole (``["a[0]"]``)."""
    if "[" not in field:
        return field
    return _INDEX_OR_KEY.sub(lambda match: match[0] if match[0][1] == '"' else "[]", field)


@dataclass(frozen=True)
class Orphan:
    """A tool call that no result answers right after it, or a result that does not answer one.

    A call is answered by a result that follows its message with only other tool results in
    between (what OpenAI and Anthropic require). A result that comes later (after a user,
    assistant or system message) is *misplaced*: the call is an orphan where it is, the late
    result is one too, and each names the other in ``partner``. A call is answered once: a
    second result for it there is an orphan too (``answered_at``), as Anthropic refuses it.
    """

    index: int
    """The position of the message holding the call or the result."""
    field: str
    """``tool_calls[k]`` for a call, ``tool_result`` for a result."""
    call_id: str
    """The tool-call id concerned."""
    partner: int | None = None
    """For a misplaced result, the position of its call's message; for a call answered only
    too late, the position of that late result; ``None`` otherwise."""
    answered_at: int | None = None
    """For a second result of a call another result already answers, that result's position;
    ``None`` otherwise. A completed result answers before a pending placeholder for the same
    call, which is then the second one, wherever it sits."""

    @property
    def is_call(self) -> bool:
        """True for a call without a result, False for a result without a call (or misplaced)."""
        return self.field != "tool_result"

    @property
    def is_misplaced(self) -> bool:
        """True when the result exists but does not follow its call (see ``partner``)."""
        return self.partner is not None

    def __str__(self) -> str:
        return f"[{self.index}].{self.field}: {self.problem}"

    @property
    def problem(self) -> str:
        """What is wrong, in plain words (``str(orphan)`` without the location)."""
        if self.is_call:
            if self.partner is None:
                return f"tool call {quoted(self.call_id)} has no result"
            return f"tool call {quoted(self.call_id)} has no result right after it (its result at [{self.partner}] comes too late)"
        if self.answered_at is not None:
            return f"a second result for tool call {quoted(self.call_id)} (the result at [{self.answered_at}] answers it)"
        if self.partner is None:
            return f"result for {quoted(self.call_id)} answers no earlier tool call"
        return (
            f"result for {quoted(self.call_id)} does not follow its call at [{self.partner}] "
            "(only tool results may come between a call and its result)"
        )


def _field_names(accept: object) -> frozenset[str]:
    """The ``accept`` parameter as a set of field names (private).

    Raises:
        ArgumentTypeError: a string (it would be read one character at a time), bytes, something
            not iterable, a mapping or a model (read as its keys or fields), or an item that is
            not a string.
    """
    if isinstance(accept, (Mapping, BaseModel)):  # no repr: a model's or a dict's can be long
        raise ArgumentTypeError(
            f'accept must be a collection of field names, such as {{"id", "timestamp"}}, got {kind_of(accept)}'
        )
    if isinstance(accept, (str, bytes, bytearray)) or not isinstance(accept, Iterable):
        raise ArgumentTypeError(
            'accept must be a collection of field names, such as {"id", "timestamp"}, '
            f"got {type(accept).__name__} {excerpt(repr(accept))}"
        )
    names = list(accept)
    for name in names:
        if not isinstance(name, str):
            raise ArgumentTypeError(
                f"accept must hold field names (str), got {type(name).__name__} {excerpt(repr(name))}"
            )
    return frozenset(names)


_WHOLE_MESSAGE = "message"
"""What ``accept`` names a whole-message loss by (a message dropped, or moved out of the list);
its ``Loss.field`` is empty."""


_ALSO_ACCEPTED = {"tool_result.tool_call_id": "id"}
"""Fields ``accept`` also takes under another name: the call id a result carries is an id (a
call's id renamed by ``to_anthropic`` renames its result's too, one change at two places)."""


def _accepted(field: str, accept: Collection[str]) -> bool:
    """Whether ``accept`` names ``field``: whole or its last part, as given or with its list
    indexes folded (``content[]``, ``tool_calls[].index``, as ``losses_by_field`` counts it)."""
    if not field:
        return _WHOLE_MESSAGE in accept or field in accept
    shape = _folded(field)
    return (
        field in accept
        or _last_part(field) in accept
        or shape in accept
        or _last_part(shape) in accept
        or (field in _ALSO_ACCEPTED and _ALSO_ACCEPTED[field] in accept)
    )


def _last_part(field: str) -> str:
    # A key quoted in brackets (``["a.b"]``, see ``location``) holds no ``["`` of its own (its
    # quotes are escaped), so it starts at the last one.
    return field[field.rindex('["') :] if field.endswith('"]') else field.rsplit(".", 1)[-1]


class _Report:
    """Collects losses while converting; ``finish`` applies strict mode (private)."""

    def __init__(self, *, strict: bool, accept: Iterable[str]) -> None:
        require_bool("strict", strict)
        self.losses: list[Loss] = []
        self.strict = strict
        self.accept = _field_names(accept)

    def lose(self, index: int | None, field: str, reason: str) -> None:
        """Record one loss."""
        self.losses.append(Loss(index, field, reason))

    def extend(self, losses: Iterable[Loss]) -> None:
        """Record losses found by an earlier step (an orphan fix)."""
        self.losses.extend(losses)

    def finish(self, value: T) -> ConversionResult[T]:
        """The result, or ``ConversionError`` in strict mode when a loss is not accepted.

        The losses are put in input order (a stable sort: those outside the message list first,
        then by message; within a message, in the order found).
        """
        self.losses.sort(key=_position)
        if self.strict:
            refused = [loss for loss in self.losses if not _accepted(loss.field, self.accept)]
            if refused:
                raise ConversionError(
                    Problem(loss.location, f"strict conversion refused: {loss.reason}") for loss in refused
                )
        return ConversionResult(value, tuple(self.losses))


def _position(loss: Loss) -> int:
    return -1 if loss.index is None else loss.index


def _input_list(value: Any, expected: str) -> list[Any]:
    """``value`` as a list; ``ConversionError`` at once for a string, bytes, a mapping or a model (private).

    Those are iterable, but iterating them would report one problem per character or per key;
    ``expected`` says what the ``messages`` parameter should hold.
    """
    if isinstance(value, (str, bytes, bytearray, Mapping, Message)) or not isinstance(value, Iterable):
        found = "bytes" if isinstance(value, (bytes, bytearray)) else describe(value)
        if isinstance(value, Message):
            found = "a single Message"
        elif value is None:
            found = "None"
        raise ConversionError([Problem("messages", f"expected {expected}, found {found}")])
    return list(value)


def _check_policy(policy: object) -> None:
    """``ConversionError`` naming the accepted values unless ``policy`` is an ``OrphanPolicy`` (private)."""
    if not isinstance(policy, str) or policy not in _POLICIES:
        accepted = ", ".join(f'"{name}"' for name in _POLICIES[:-1]) + f' or "{_POLICIES[-1]}"'
        raise ConversionError([Problem("orphans", f"expected {accepted}, found {excerpt(repr(policy))}")])


@collector_paused()  # the objects built hold no cycles to collect
def find_orphans(messages: Sequence[Message]) -> list[Orphan]:
    """Every tool call without a result right after it, and every result without its call there.

    Only what the converters send counts: calls on assistant and tool_call messages, results on
    tool_result messages. A result answers a call when only other tool_result messages sit
    between the call's message and it; a later one is misplaced (``Orphan.partner``). A pending
    placeholder counts as a result: it answers its call (see ``docs/conversions.md`` for what
    each format receives for it).

    Raises:
        ArgumentTypeError: ``messages`` is not a list of messages (text, a mapping, a single
            ``Message``, a set or an iterator included: it is read twice), or an item is not a
            ``Message`` (named by its index), as ``fix_orphans`` refuses them.
    """
    require_message_list(messages, "find_orphans")
    if (wrong := first_non_message(messages, "find_orphans")) is not None:
        raise wrong
    return _find_orphans(messages, moved_out=frozenset())


def _find_orphans(messages: Sequence[Message], *, moved_out: frozenset[Role]) -> list[Orphan]:
    """``find_orphans`` for a format that moves messages of the roles ``moved_out`` out of the
    list (Anthropic's ``system`` parameter): those sit between a call and its results harmlessly."""
    sent: dict[str, int] = {}  # call id -> the latest message sending it
    run: dict[str, int] = {}  # the calls that results may answer now
    answers: dict[tuple[int, str], list[int]] = {}  # a call -> the results right after it
    late: dict[tuple[int, str], int] = {}  # an unanswered call -> its first misplaced result
    orphans: list[Orphan] = []
    for index, message in enumerate(messages):
        if message.role is Role.TOOL_RESULT:
            result = message.tool_result
            if result is None:
                continue
            call_id = result.tool_call_id
            if call_id in run:
                answers.setdefault((run[call_id], call_id), []).append(index)
            else:
                caller = sent.get(call_id)
                if caller is not None:
                    late.setdefault((caller, call_id), index)
                orphans.append(Orphan(index, "tool_result", call_id, caller))
            continue
        if message.role in moved_out:
            continue
        run = {}
        if message.role in _CALLING_ROLES:
            for call in message.tool_calls:
                sent[call.id] = index
                run[call.id] = index
    for index, message in enumerate(messages):
        if message.role in _CALLING_ROLES:
            orphans.extend(
                Orphan(index, f"tool_calls[{number}]", call.id, late.get((index, call.id)))
                for number, call in enumerate(message.tool_calls)
                if (index, call.id) not in answers
            )
    calls_by_id: dict[int, Counter[str]] = {}  # a calling message -> how often it sends each id
    for (caller, call_id), results in answers.items():
        if len(results) > 1:  # one result never outnumbers its call
            if caller not in calls_by_id:
                calls_by_id[caller] = Counter(call.id for call in messages[caller].tool_calls)
            orphans.extend(_second_results(messages, call_id, results, calls_by_id[caller][call_id]))
    orphans.sort(key=lambda orphan: orphan.index)
    return orphans


def _second_results(
    messages: Sequence[Message], call_id: str, results: list[int], slots: int
) -> list[Orphan]:
    """The results beyond the ``slots`` calls with ``call_id`` they answer (an id sent twice in
    one message takes two); completed results answer first, in order, then pending placeholders."""
    if len(results) <= slots:
        return []
    ranked = sorted(results, key=lambda index: (messages[index].is_pending, index))
    return [Orphan(index, "tool_result", call_id, answered_at=ranked[0]) for index in ranked[slots:]]


@collector_paused()  # the objects built hold no cycles to collect
def fix_orphans(
    messages: Iterable[Message], orphans: OrphanPolicy = "error"
) -> ConversionResult[list[Message]]:
    """Apply an orphan policy to a conversation; every change is reported as a ``Loss``.

    Raises:
        ConversionError: ``orphans="error"`` and there is an orphan, or an unknown policy.
        ArgumentTypeError: ``messages`` is not an iterable of messages (text, a mapping, a single
            ``Message`` or a set included), or an item is not a ``Message`` (named by its
            index), as ``find_orphans`` refuses them.
    """
    fixed, _sources, losses = _fix_orphans(messages, orphans, "fix_orphans")
    return ConversionResult(fixed, tuple(losses))


def _fix_orphans(
    given: Iterable[Message],
    policy: OrphanPolicy,
    function: str,
    *,
    moved_out: frozenset[Role] = frozenset(),
    blank_is_empty: bool = False,
) -> tuple[list[Message], list[int | None], list[Loss]]:
    """The fixed messages, each one's index in the input (``None`` when added), and the changes.

    The policy is checked first, whatever the messages hold; then the messages (``message_list``,
    naming ``function``, the caller's public name): a wrong type there is an argument's, refused
    as ``find_orphans`` and every other function taking messages refuse it, not input to convert.
    ``moved_out``: as in ``_find_orphans``. ``blank_is_empty``: a message whose content is only
    whitespace counts as empty when its calls are all dropped (for a target that refuses such
    text: Anthropic); the whitespace dropped with it is named in the report.
    """
    _check_policy(policy)
    messages = message_list(given, function)
    sources: list[int | None] = list(range(len(messages)))
    if policy == "keep":
        return messages, sources, []
    found = _find_orphans(messages, moved_out=moved_out)
    if not found:
        return messages, sources, []
    if policy == "error":
        raise ConversionError(Problem(f"[{o.index}].{o.field}", o.problem) for o in found)
    return _apply_fix(messages, found, synthesize=policy == "synthesize", blank_is_empty=blank_is_empty)


def _apply_fix(
    messages: list[Message], found: list[Orphan], *, synthesize: bool, blank_is_empty: bool
) -> tuple[list[Message], list[int | None], list[Loss]]:
    """``_fix_orphans`` for ``"drop"`` and ``"synthesize"`` once the orphans are known (private)."""
    calls = {(o.index, o.call_id): o for o in found if o.is_call}
    results = {o.index: o for o in found if not o.is_call}
    fixed: list[Message] = []
    sources: list[int | None] = []
    losses: list[Loss] = []
    owed: list[ToolCall] = []  # unanswered calls waiting for their synthesized results
    owed_after = -1
    ids = FreshIds(message.id for message in messages) if synthesize else FreshIds()
    for index, message in enumerate(messages):
        if owed and message.role is not Role.TOOL_RESULT:
            _owe(fixed, sources, owed, messages[owed_after], ids)
        if index in results:
            losses.append(Loss(index, "", _result_fix(results[index])))
            continue
        orphaned = [n for n, call in enumerate(message.tool_calls) if (index, call.id) in calls]
        if orphaned:
            for number in orphaned:
                orphan = calls[(index, message.tool_calls[number].id)]
                losses.append(Loss(index, f"tool_calls[{number}]", _call_fix(orphan, synthesize)))
            if synthesize:
                owed.extend(message.tool_calls[number] for number in orphaned)
                owed_after = index
            else:
                kept = tuple(call for call in message.tool_calls if (index, call.id) not in calls)
                message = message.model_copy(update={"tool_calls": kept})
                if not kept and (not message.content or (blank_is_empty and message.content.isspace())):
                    losses.append(Loss(index, "", _emptied(message.content)))
                    continue
        fixed.append(message)
        sources.append(index)
    if owed:
        _owe(fixed, sources, owed, messages[owed_after], ids)
    return fixed, sources, losses


_EMPTIED = "no content and no tool call left once its orphaned calls were dropped: message dropped"


def _emptied(content: str) -> str:
    """The reason reported for dropping a message its orphan fix left empty (private)."""
    if not content:
        return _EMPTIED
    return (
        f"only whitespace ({quoted(content)}, which the target refuses as text) and no tool call left "
        "once its orphaned calls were dropped: message dropped"
    )


def _call_fix(orphan: Orphan, synthesize: bool) -> str:
    """The reason reported for fixing an orphaned call (private)."""
    what = (
        "a tool call without a result"
        if orphan.partner is None
        else f"a tool call whose result comes too late (at [{orphan.partner}])"
    )
    return f"{what}: an error result was added" if synthesize else f"{what}: dropped"


def _result_fix(orphan: Orphan) -> str:
    """The reason reported for dropping an orphaned or misplaced result (private)."""
    if orphan.answered_at is not None:
        return f"a second result for its tool call (the result at [{orphan.answered_at}] answers it): dropped"
    if orphan.partner is None:
        return "a result that answers no earlier tool call: dropped"
    return f"a result that does not follow its call (at [{orphan.partner}]): dropped"


def _owe(
    fixed: list[Message], sources: list[int | None], owed: list[ToolCall], caller: Message, ids: FreshIds
) -> None:
    """Append an error result for each owed call (after the results that follow the caller).

    Its id is ``{call id}-missing-result`` unless a message has it already (a server reusing
    ``call_0`` leaves two calls unanswered), then a new ``msg-N`` from ``ids``.
    """
    for call in owed:
        named = f"{call.id}-missing-result"
        if named in ids.taken:
            named = ids.next()  # taken as it is given
        else:
            ids.taken.add(named)
        fixed.append(
            Message.tool_result_message(
                named,
                call.id,
                call.name,
                MISSING_RESULT_TEXT,
                True,
                timestamp=caller.timestamp,
            )
        )
        sources.append(None)
    owed.clear()


class _Reasons(NamedTuple):
    id: str
    timestamp: str
    role: str
    pinned: str
    token_count: str
    extra: str
    calls: str
    result: str


@lru_cache(maxsize=16)
def _reasons(why: str) -> _Reasons:
    """The reasons ``_metadata_losses`` gives for the target ``why`` (made once per target name)."""
    return _Reasons(
        id=f"{why} has no place for message ids",
        timestamp=f"{why} has no place for timestamps",
        role="role tool_call is sent as assistant",
        pinned=f"{why} has no place for pinned",
        token_count=f"{why} has no place for token_count",
        extra=f"unknown key: {why} has no place for it",
        calls=f"tool calls on a message that is not an assistant's: {why} has no place for them",
        result=f"a tool result on a message that is not a tool_result: {why} has no place for it",
    )


def _metadata_losses(
    report: _Report, index: int, message: Message, *, kept: Collection[str] = (), why: str
) -> None:
    """Report the message fields a target has no place for (private, shared by every format).

    ``kept`` names the fields the target carries; ``why`` is the target's name. Written for
    speed: it runs for every message of every conversion.
    """
    add = report.losses.append
    reasons = _reasons(why)
    if "id" not in kept:
        add(Loss(index, "id", reasons.id))
    if "timestamp" not in kept:
        add(Loss(index, "timestamp", reasons.timestamp))
    role = message.role
    if role is Role.TOOL_CALL and "role" not in kept:
        add(Loss(index, "role", reasons.role))
    if message.pinned and "pinned" not in kept:
        add(Loss(index, "pinned", reasons.pinned))
    if message.token_count is not None and "token_count" not in kept:
        add(Loss(index, "token_count", reasons.token_count))
    calls, result = message.tool_calls, message.tool_result
    if "extra" not in kept:
        _extra_losses(add, index, "", message.__pydantic_extra__, reasons.extra)
        for number, call in enumerate(calls):
            if call.__pydantic_extra__:
                _extra_losses(add, index, f"tool_calls[{number}].", call.__pydantic_extra__, reasons.extra)
        if result is not None:
            _extra_losses(add, index, "tool_result.", result.__pydantic_extra__, reasons.extra)
    if calls and role not in _CALLING_ROLES:
        add(Loss(index, "tool_calls", reasons.calls))
    if result is not None and role is not Role.TOOL_RESULT:
        add(Loss(index, "tool_result", reasons.result))


def _extra_losses(
    add: Callable[[Loss], None], index: int, prefix: str, extra: dict[str, Any] | None, reason: str
) -> None:
    if extra:
        for key in extra:
            add(Loss(index, key_field(prefix, key), reason))


def key_field(prefix: str, key: str) -> str:
    """The field of a loss at ``key`` inside ``prefix`` (``tool_calls[0].``), the key shown as a
    location shows it: ``x_extra``, ``["a.b"]`` for one that is not a plain name (escaped, whole),
    so that ``accept=`` names it as the losses print it."""
    shown = location((key,))
    return prefix.removesuffix(".") + shown if shown[:1] == "[" else prefix + shown


def _remember_calls(names: dict[str, str], message: Message) -> None:
    """Add an assistant message's calls to ``names`` (call id to tool name, the latest call wins).

    A result is named after the most recent call with its id before it: the call it answers,
    also when a server reuses ids (``call_0`` in every turn). Only calls a target carries count
    (on assistant and tool_call messages), as only those are there to name a result when the
    target's messages are read back.
    """
    if message.role in _CALLING_ROLES:
        for call in message.tool_calls:
            names[call.id] = call.name
