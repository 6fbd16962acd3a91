"""Turn-aware pruning: fit a conversation into the model's context window, as orion-core does.

``plan_prune`` decides which turns to keep, with orion-core's turns, order of keeping and
refusals (reference page, "How orion-core prunes"); ``prune`` applies a plan and, with the
``Summarize`` strategy, folds the dropped turns into one pinned summary message.

Where orion-core loses data this module does not: the preamble (the messages before the first
user message, such as a system message) is kept and counted like the host's fixed overhead; a
turn holding a pending tool result is kept like a pinned one; and turns tied together by a tool
call and its result (a result in a later turn than its call) are kept or dropped together, so a
result is never kept without its call nor a call without its results.

Token counts come from a ``TokenCounter``, which counts each message once and remembers the count
for as long as the message lives; the default one reads ``token_count`` where the host filled it
in and otherwise estimates ``max(1, chars // 4)``.
"""

from __future__ import annotations

import json
import weakref
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from functools import partial
from itertools import accumulate, chain, compress, repeat
from operator import attrgetter, eq, is_not, ne

import orjson

from .conversation import Conversation
from .errors import ContextOverflowError
from .models import Message, Role
from .turns import split_turns

__all__ = [
    "SUMMARY_PREFIX",
    "ContextConfig",
    "ContextOverflowError",
    "PrunePlan",
    "PruneResult",
    "PruneStrategy",
    "TokenCounter",
    "estimate_tokens",
    "is_summary",
    "plan_prune",
    "prune",
    "tokenizer_counter",
]

SUMMARY_PREFIX = "[Summary of earlier conversation]\n"
"""How a summary message's content starts (orion-core's marker)."""

_TOKEN_COUNT = attrgetter("token_count")
_PINNED = attrgetter("pinned")
_TOOL_CALLS = attrgetter("tool_calls")
_TOOL_RESULT = attrgetter("tool_result")
_START = attrgetter("start")
_ID = attrgetter("id")
_PENDING = attrgetter("pending")
_CALL_ID = attrgetter("tool_call_id")


class PruneStrategy(str, Enum):
    """What happens to the turns that do not fit (orion-core's strategies)."""

    SLIDING_WINDOW = "sliding_window"
    """Leave the oldest turns out of the context (orion-core's default)."""
    SUMMARIZE = "summarize"
    """Fold the turns left out, and any earlier summary, into one pinned summary message."""

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ContextConfig:
    """The context window to fit a conversation into, with orion-core's defaults."""

    max_context_tokens: int = 4096
    """The model's whole context window, in tokens."""
    max_response_tokens: int = 2048
    """Tokens kept free for the model's reply."""
    reserved_tokens: int = 0
    """What the host sends outside the message list (system prompt, tool schemas): orion-core's fixed overhead."""
    strategy: PruneStrategy = PruneStrategy.SLIDING_WINDOW
    """What happens to the turns that do not fit."""

    def __post_init__(self) -> None:
        for name in ("max_context_tokens", "max_response_tokens", "reserved_tokens"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ValueError(f"ContextConfig.{name} must be a non-negative int, got {value!r}")
        if not isinstance(self.strategy, PruneStrategy):
            object.__setattr__(self, "strategy", PruneStrategy(self.strategy))

    @property
    def available_tokens(self) -> int:
        """``max(0, max_context_tokens - max_response_tokens)``: the room for the prompt."""
        return max(0, self.max_context_tokens - self.max_response_tokens)


# --- counting ---------------------------------------------------------------------------------


def _arguments_text(arguments: object) -> str:
    try:
        return orjson.dumps(arguments).decode()
    except TypeError:  # an int past 64 bits, deep nesting or a cycle, built from Python
        pass
    try:
        return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # a cycle, an int too long for str(), not JSON
        return _rough_json(arguments)


def _rough_json(value: object) -> str:
    """Text as long as the compact JSON of ``value``, for values ``json`` cannot write.

    Iterative; a container met again is written as ``null``; an int too long for ``str()``
    becomes as many ``9`` as it has digits; anything else not JSON is written as its ``str``.
    """
    out: list[str] = []
    seen: set[int] = set()
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Literal):
            out.append(item.text)
        elif isinstance(item, (dict, list, tuple)):
            if id(item) in seen:
                out.append("null")
                continue
            seen.add(id(item))
            pieces: list[object] = []
            if isinstance(item, dict):
                out.append("{")
                for number, (key, member) in enumerate(item.items()):
                    comma = "," if number else ""
                    pieces += [_Literal(comma + json.dumps(str(key), ensure_ascii=False) + ":"), member]
                stack.append(_Literal("}"))
            else:
                out.append("[")
                for number, member in enumerate(item):
                    if number:
                        pieces.append(_Literal(","))
                    pieces.append(member)
                stack.append(_Literal("]"))
            stack.extend(reversed(pieces))
        elif type(item) is int:
            out.append("-" * (item < 0) + "9" * (int(item.bit_length() * 0.30103) + 1))
        else:
            out.append(json.dumps(item, ensure_ascii=False, default=str))
    return "".join(out)


@dataclass(frozen=True)
class _Literal:
    """Text to write as is, on ``_rough_json``'s stack."""

    text: str


def _text_parts(message: Message) -> list[str]:
    parts = [message.content]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(_arguments_text(call.arguments))
    return parts


def estimate_tokens(message: Message | str) -> int:
    """orion-core's estimate, ``max(1, chars // 4)``.

    For a message, the characters are those of its content plus each tool call's name and
    arguments (as compact JSON text); for a string, its own characters.
    """
    if isinstance(message, str):
        return max(1, len(message) // 4)
    return max(1, sum(map(len, _text_parts(message))) // 4)


class TokenCounter:
    """A ``Message -> int`` counter that counts each message once.

    Counts are remembered per message object for as long as the message lives (messages are
    immutable; a changed copy is a new object and is counted afresh). With ``use_token_count``,
    a message's ``token_count`` is used where the host filled it in and ``count`` is asked only
    for the others. Pass the same counter to every plan to benefit from the cache.
    """

    __slots__ = ("__weakref__", "_count", "_counts", "_refs", "_use_token_count")

    def __init__(self, count: Callable[[Message], int], *, use_token_count: bool = False) -> None:
        self._count = count
        self._use_token_count = use_token_count
        self._counts: dict[int, int] = {}
        self._refs: dict[int, weakref.ref[Message]] = {}

    def __call__(self, message: Message) -> int:
        """The message's token count, counted on first sight and remembered."""
        if self._use_token_count and message.token_count is not None:
            return message.token_count
        cached = self._counts.get(id(message))
        return self._count_new(message, None) if cached is None else cached

    def __len__(self) -> int:
        """How many message counts are remembered."""
        return len(self._counts)

    def counts(self, messages: Sequence[Message]) -> list[int]:
        """The token count of each message, in order; only messages never seen before are counted."""
        values: list[int | None]
        if self._use_token_count:
            values = list(map(_TOKEN_COUNT, messages))
            lookup = self._counts.get
            for index in _gaps(values):
                message = messages[index]
                cached = lookup(id(message))
                values[index] = self._count_new(message, index) if cached is None else cached
        else:
            values = list(map(self._counts.get, map(id, messages)))
            for index in _gaps(values):
                values[index] = self._count_new(messages[index], index)
        return values  # type: ignore[return-value]  # every None was filled in

    def _count_new(self, message: Message, index: int | None) -> int:
        value = self._count(message)
        if type(value) is not int or value < 0:
            where = f" for message [{index}]" if index is not None else ""
            raise ValueError(
                f"the token counter returned {value!r}{where} (id {message.id!r}); expected a non-negative int"
            )
        key = id(message)
        self._counts[key] = value
        self._refs[key] = weakref.ref(message, partial(self._forget, key))
        return value

    def _forget(self, key: int, _ref: object) -> None:
        self._counts.pop(key, None)
        self._refs.pop(key, None)


def _gaps(values: list[int | None]) -> Iterator[int]:
    """The indexes of the ``None`` entries, found at C speed; entries may be filled in meanwhile."""
    index = -1
    while True:
        try:
            index = values.index(None, index + 1)
        except ValueError:
            return
        yield index


def tokenizer_counter(tokenize: Callable[[str], int], *, use_token_count: bool = True) -> TokenCounter:
    """A counter from a text tokenizer (``str -> int``, such as ``lambda s: len(enc.encode(s))``).

    A message counts ``tokenize`` of its content plus, for each tool call, of its name and of its
    arguments as compact JSON text. With ``use_token_count`` (the default), a ``token_count``
    the host filled in is used instead.
    """

    def count(message: Message) -> int:
        return sum(map(tokenize, _text_parts(message)))

    return TokenCounter(count, use_token_count=use_token_count)


_DEFAULT_COUNTER = TokenCounter(estimate_tokens, use_token_count=True)
_COUNTERS: weakref.WeakKeyDictionary[Callable[[Message], int], TokenCounter] = weakref.WeakKeyDictionary()


def _counter(count: Callable[[Message], int] | None) -> TokenCounter:
    if count is None:
        return _DEFAULT_COUNTER
    if isinstance(count, TokenCounter):
        return count
    try:
        counter = _COUNTERS.get(count)
        if counter is None:
            # The counter refers to the callable weakly, so that the cache entry goes with it.
            counter = _COUNTERS[count] = TokenCounter(partial(_call_weakly, weakref.ref(count)))
    except TypeError:  # neither hashable nor weakly referenceable: cache for this call only
        return TokenCounter(count)
    return counter


def _call_weakly(ref: weakref.ref[Callable[[Message], int]], message: Message) -> int:
    count = ref()
    assert count is not None  # the caller holds it while planning
    return count(message)


# --- planning ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrunePlan:
    """Which turns to keep: index ranges into the planned messages, one per turn, in order."""

    preamble: range
    """The messages before the first user message; always kept and counted."""
    kept: list[range]
    """The kept turns, in order (not necessarily contiguous: an old pinned turn survives)."""
    dropped: list[range]
    """The dropped turns, in order."""
    preamble_tokens: int
    """What the preamble costs."""
    kept_tokens: int
    """What the kept messages cost: the preamble plus the kept turns."""
    dropped_tokens: int
    """What the dropped turns cost."""
    budget: int
    """The room for the messages: ``available_tokens - reserved_tokens``; ``kept_tokens`` never exceeds it."""

    @property
    def kept_count(self) -> int:
        """How many messages are kept, the preamble included."""
        return len(self.preamble) + sum(map(len, self.kept))

    @property
    def dropped_count(self) -> int:
        """How many messages are dropped."""
        return sum(map(len, self.dropped))

    def kept_messages(self, messages: Sequence[Message]) -> list[Message]:
        """The kept messages of ``messages`` (the list this plan was made for), in order."""
        out = list(messages[: self.preamble.stop])
        for turn in self.kept:
            out.extend(messages[turn.start : turn.stop])
        return out

    def dropped_messages(self, messages: Sequence[Message]) -> list[Message]:
        """The dropped messages of ``messages`` (the list this plan was made for), in order."""
        out: list[Message] = []
        for turn in self.dropped:
            out.extend(messages[turn.start : turn.stop])
        return out


class _Layout:
    """What planning reads from a message list besides the counts, extended in place on append.

    ``turn_of[i]`` is message ``i``'s turn number (-1 for the preamble); ``links`` are the
    message indexes of a call and a result that lie in different turns.
    """

    __slots__ = (
        "callers",
        "counter",
        "links",
        "messages",
        "more_callers",
        "pending",
        "pinned",
        "prefix",
        "result_at",
        "result_ids",
        "starts",
        "turn_of",
        "turns",
        "unanswered",
    )

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.turns: list[range] = []
        self.starts: list[int] = []
        self.turn_of: list[int] = []
        self.pinned: list[int] = []
        self.pending: list[int] = []
        self.links: list[tuple[int, int]] = []
        self.result_at: list[int] = []
        self.result_ids: list[str] = []
        self.callers: dict[str, int] = {}
        self.more_callers: dict[str, list[int]] = {}
        self.unanswered: dict[str, list[int]] = {}
        self.counter: TokenCounter | None = None
        self.prefix: list[int] = [0]

    @property
    def preamble(self) -> range:
        return range(self.starts[0] if self.starts else len(self.messages))

    def extend(self, tail: Sequence[Message]) -> None:
        """Take in messages appended after the ones already laid out."""
        offset = len(self.messages)
        self.messages.extend(tail)
        end = len(self.messages)
        tail_turns = split_turns(tail)
        last_turn = len(self.turns) - 1
        # The messages before the tail's first user message continue the last turn (or the preamble).
        self.turn_of.extend(repeat(last_turn, tail_turns.preamble.stop))
        if offset and self.turns:
            last = self.turns[-1]
            self.turns[-1] = range(last.start, offset + tail_turns.preamble.stop)
        new_turns = tail_turns.turns
        if offset:
            new_turns = [range(offset + turn.start, offset + turn.stop) for turn in new_turns]
        self.turns.extend(new_turns)
        self.starts.extend(map(_START, new_turns))
        self.turn_of.extend(
            chain.from_iterable(map(repeat, range(last_turn + 1, len(self.turns)), map(len, new_turns)))
        )
        self.pinned.extend(compress(range(offset, end), map(_PINNED, tail)))
        self._take_calls(tail, offset)
        self._take_results(tail, offset)
        if self.counter is not None:
            counts = accumulate(self.counter.counts(tail), initial=self.prefix[-1])
            next(counts)
            self.prefix.extend(counts)

    def prefix_for(self, counter: TokenCounter) -> list[int]:
        """Prefix sums of the messages' counts: ``prefix[i]`` is what messages ``[0:i]`` cost."""
        if counter is not self.counter:
            self.counter = counter
            self.prefix = list(accumulate(counter.counts(self.messages), initial=0))
        return self.prefix

    def _link(self, call_at: int, result_at: int) -> None:
        if self.turn_of[call_at] != self.turn_of[result_at]:
            self.links.append((min(call_at, result_at), max(call_at, result_at)))

    def _take_calls(self, tail: Sequence[Message], offset: int) -> None:
        calls = list(map(_TOOL_CALLS, tail))
        call_at = list(compress(range(offset, offset + len(tail)), calls))
        if not call_at:
            return
        per_message = list(filter(None, calls))
        ids = list(map(_ID, chain.from_iterable(per_message)))
        if len(ids) == len(call_at):  # one call a message, the usual case
            owners = call_at
        else:
            owners = list(chain.from_iterable(map(repeat, call_at, map(len, per_message))))
        new = dict(zip(ids, owners, strict=True))
        if (
            len(new) == len(ids)
            and self.callers.keys().isdisjoint(new)
            and self.unanswered.keys().isdisjoint(new)
        ):
            self.callers.update(new)
            return
        # Repeated ids, or calls answering results laid out earlier: tie each call to them.
        for call_id, owner in zip(ids, owners, strict=True):
            first = self.callers.setdefault(call_id, owner)
            if first != owner:
                self.more_callers.setdefault(call_id, []).append(owner)
                for result_at in compress(self.result_at, map(eq, self.result_ids, repeat(call_id))):
                    self._link(owner, result_at)
            for result_at in self.unanswered.pop(call_id, ()):
                self._link(owner, result_at)

    def _take_results(self, tail: Sequence[Message], offset: int) -> None:
        results = list(map(_TOOL_RESULT, tail))
        result_at = list(compress(range(offset, offset + len(tail)), results))
        if not result_at:
            return
        present = list(filter(None, results))
        self.pending.extend(compress(result_at, map(_PENDING, present)))
        ids = list(map(_CALL_ID, present))
        self.result_at.extend(result_at)
        self.result_ids.extend(ids)
        owners = list(map(self.callers.get, ids))
        known = list(map(is_not, owners, repeat(None)))
        answered = list(compress(result_at, known))
        callers: list[int] = list(compress(owners, known))  # type: ignore[arg-type]  # no None left
        turn = self.turn_of.__getitem__
        crossing = map(ne, map(turn, answered), map(turn, callers))
        self.links.extend(
            (min(pair), max(pair)) for pair in compress(zip(callers, answered, strict=True), crossing)
        )
        if len(answered) != len(result_at):
            for index, call_id, owner in zip(result_at, ids, owners, strict=True):
                if owner is None:
                    self.unanswered.setdefault(call_id, []).append(index)
        if self.more_callers:
            for index, call_id in zip(result_at, ids, strict=True):
                for owner in self.more_callers.get(call_id, ()):
                    self._link(owner, index)


_LAYOUTS: dict[int, tuple[weakref.ref[object], _Layout]] = {}
"""The layout of each conversation planned, by ``id``; an entry goes when its conversation does."""


def _layout(messages: Sequence[Message], owner: object | None) -> _Layout:
    """The layout of ``messages``; with an ``owner``, kept and extended from one plan to the next."""
    if owner is None:
        layout = _Layout()
        layout.extend(messages)
        return layout
    key = id(owner)
    entry = _LAYOUTS.get(key)
    layout = entry[1] if entry is not None else _Layout()
    seen = len(layout.messages)
    if seen > len(messages) or layout.messages != messages[:seen]:
        layout, seen = _Layout(), 0  # changed, not just appended to: lay out afresh
    if entry is None or entry[1] is not layout:
        _LAYOUTS[key] = (weakref.ref(owner, lambda _ref: _LAYOUTS.pop(key, None)), layout)
    if seen < len(messages):
        layout.extend(messages[seen:])
    return layout


def plan_prune(
    messages: Sequence[Message],
    config: ContextConfig | None = None,
    *,
    count: Callable[[Message], int] | None = None,
) -> PrunePlan:
    """Decide which turns of ``messages`` fit ``config``'s context window, as orion-core does.

    ``available = max(0, max_context_tokens - max_response_tokens)``; the overhead is
    ``reserved_tokens`` plus the preamble's cost and must be below ``available``. The latest turn
    must fit; then every older turn holding a pinned message or a pending result is kept, oldest
    first; then, from the newest older turn backwards, each other turn is kept while it fits, and
    the walk stops at the first one that does not.

    ``count`` is a ``Message -> int`` (default: ``token_count`` where set, else ``estimate_tokens``).
    A plain callable is wrapped in a ``TokenCounter`` remembered for as long as the callable lives.

    Raises:
        ContextOverflowError: orion-core's refusals (no room at all, the latest turn does not
            fit, the pinned turns do not fit), with the numbers.
    """
    return _plan(messages, ContextConfig() if config is None else config, _counter(count), None)


def _plan(
    messages: Sequence[Message], config: ContextConfig, counter: TokenCounter, owner: object | None
) -> PrunePlan:
    layout = _layout(messages, owner)
    prefix = layout.prefix_for(counter)
    turns = layout.turns
    preamble = layout.preamble
    size = len(layout.messages)
    preamble_tokens = prefix[preamble.stop]
    available = config.available_tokens
    overhead = config.reserved_tokens + preamble_tokens
    if overhead >= available:
        detail = ""
        if preamble:
            detail = (
                f" (reserved_tokens {config.reserved_tokens} + preamble, messages "
                f"[0:{preamble.stop}], {preamble_tokens})"
            )
        raise ContextOverflowError("overhead", overhead, available, detail)
    budget = available - config.reserved_tokens
    remaining = available - overhead
    if not turns:
        return PrunePlan(preamble, [], [], preamble_tokens, preamble_tokens, 0, budget)

    # Units: turns kept or dropped together. A call and its result in different turns tie every
    # turn between them into one unit; a turn tied to the preamble (always kept) is protected.
    turn_of = layout.turn_of
    protected_turns = {turn_of[index] for index in chain(layout.pinned, layout.pending)}
    spans: list[tuple[int, int]] = []
    for low, high in layout.links:
        if turn_of[low] < 0:
            protected_turns.add(turn_of[high])
        else:
            spans.append((turn_of[low], turn_of[high]))
    protected_turns.discard(-1)
    if spans:
        unit_starts: list[int] = []
        position = 0
        for low, high in _merged(spans):
            unit_starts.extend(range(position, low + 1))
            position = high + 1
        unit_starts.extend(range(position, len(turns)))
    else:
        unit_starts = list(range(len(turns)))
    unit_count = len(unit_starts)
    unit_starts.append(len(turns))
    protected_units = sorted({bisect_right(unit_starts, turn) - 1 for turn in protected_turns})
    bounds_at = [*layout.starts, size] if spans else None

    def unit_range(unit: int) -> range:
        if bounds_at is None:
            return turns[unit]
        return range(bounds_at[unit_starts[unit]], bounds_at[unit_starts[unit + 1]])

    def unit_cost(unit: int) -> int:
        span = unit_range(unit)
        return prefix[span.stop] - prefix[span.start]

    latest = unit_count - 1
    cost = unit_cost(latest)
    if cost > remaining:
        span = unit_range(latest)
        raise ContextOverflowError(
            "latest", cost, remaining, f" (latest turn, messages [{span.start}:{span.stop}])", span
        )
    remaining -= cost

    protected_tokens = 0
    for unit in protected_units:
        if unit == latest:
            continue
        cost = unit_cost(unit)
        protected_tokens += cost
        if cost > remaining:
            span = unit_range(unit)
            what = " or pending result" if layout.pending else ""
            raise ContextOverflowError(
                "pinned",
                protected_tokens,
                remaining + protected_tokens - cost,
                f" (the turn with a pinned message{what} at messages [{span.start}:{span.stop}] costs {cost}, {remaining} left)",
                span,
            )
        remaining -= cost

    protected_set = set(protected_units)
    stop = -1  # the newest unit that did not fit; it and every unprotected unit older are dropped
    for unit in range(latest - 1, -1, -1):
        if unit in protected_set:
            continue
        cost = unit_cost(unit)
        if cost > remaining:
            stop = unit
            break
        remaining -= cost

    kept: list[range] = []
    dropped: list[range] = []
    position = 0  # the next unit to place
    for unit in (*(u for u in protected_units if u <= stop), stop + 1):
        dropped.extend(turns[unit_starts[position] : unit_starts[unit]])
        if unit <= stop:
            kept.extend(turns[unit_starts[unit] : unit_starts[unit + 1]])
        position = unit + 1
    kept.extend(turns[unit_starts[stop + 1] :])
    kept_tokens = budget - remaining
    return PrunePlan(
        preamble, kept, dropped, preamble_tokens, kept_tokens, prefix[size] - kept_tokens, budget
    )


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    spans.sort()
    merged = [spans[0]]
    for low, high in spans[1:]:
        last_low, last_high = merged[-1]
        if low <= last_high:
            merged[-1] = (last_low, max(last_high, high))
        else:
            merged.append((low, high))
    return merged


# --- pruning ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PruneResult:
    """A pruned conversation: what to send, what was left out, and how."""

    messages: list[Message]
    """The messages to send, in order (with the summary in place when one was made)."""
    dropped: list[Message]
    """The messages left out (folded into the summary when one was made), in order."""
    plan: PrunePlan
    """The plan, with index ranges into the input messages."""
    tokens: int
    """What ``messages`` cost (``plan.kept_tokens``, adjusted for the summary when one was made)."""
    summary: Message | None = None
    """The new summary message, when the ``Summarize`` strategy made one."""
    summary_error: Exception | None = field(default=None)
    """Why summarizing failed (the exception raised, or a ``ValueError`` for an empty or oversized summary); the sliding window applied."""

    @property
    def summarized(self) -> bool:
        """True when the dropped turns were folded into a new summary."""
        return self.summary is not None


def is_summary(message: Message) -> bool:
    """True for a summary message: a pinned user message whose content starts with the summary prefix."""
    return message.pinned and message.role is Role.USER and message.content.startswith(SUMMARY_PREFIX)


def prune(
    messages: Sequence[Message],
    config: ContextConfig | None = None,
    *,
    count: Callable[[Message], int] | None = None,
    summarize: Callable[[list[Message], str | None], str] | None = None,
    new_id: Callable[[], str] | None = None,
) -> PruneResult:
    """Prune ``messages`` to ``config``'s context window (see ``plan_prune``).

    With ``PruneStrategy.SUMMARIZE``, the dropped turns and any earlier summary are folded by
    ``summarize(messages_to_fold, prior_summary_text)`` into one pinned user message starting with
    ``SUMMARY_PREFIX``, placed at the lowest removed index, with id ``new_id()`` (default: a fresh
    ``msg-N`` past every id in ``messages``). If ``summarize`` raises, returns an empty text, or the
    summary does not fit the room left, nothing is folded: the sliding window applies and
    ``summary_error`` says why.

    Raises:
        ContextOverflowError: as ``plan_prune``.
        ValueError: the strategy is ``SUMMARIZE`` and no ``summarize`` was given.
    """
    config = ContextConfig() if config is None else config
    if config.strategy is PruneStrategy.SUMMARIZE and summarize is None:
        raise ValueError("the Summarize strategy needs a summarize(messages_to_fold, prior_summary) callable")
    return _prune(messages, config, _counter(count), summarize, new_id, None)


def _prune(
    messages: Sequence[Message],
    config: ContextConfig,
    counter: TokenCounter,
    summarize: Callable[[list[Message], str | None], str] | None,
    new_id: Callable[[], str] | None,
    owner: object | None,
) -> PruneResult:
    plan = _plan(messages, config, counter, owner)
    kept = plan.kept_messages(messages)
    dropped = plan.dropped_messages(messages)
    window = PruneResult(kept, dropped, plan, plan.kept_tokens)
    if summarize is None or config.strategy is not PruneStrategy.SUMMARIZE or not plan.dropped:
        return window

    latest_start = plan.kept[-1].start
    lowest_dropped = plan.dropped[0].start
    priors = [
        index
        for index in compress(range(latest_start), map(_PINNED, messages[:latest_start]))
        if is_summary(messages[index])
    ]
    prior_text = "\n\n".join(messages[index].content[len(SUMMARY_PREFIX) :] for index in priors) or None
    try:
        text = summarize(dropped, prior_text)
        if not isinstance(text, str):
            raise TypeError(f"summarize returned {type(text).__name__}, expected str")
        if text.startswith(SUMMARY_PREFIX):
            text = text[len(SUMMARY_PREFIX) :]
        if not text.strip():
            raise ValueError("summarize returned an empty summary")
    except Exception as error:
        return PruneResult(kept, dropped, plan, plan.kept_tokens, None, error)

    lowest = min([lowest_dropped, *priors])
    draft = Message.user("", SUMMARY_PREFIX + text).pin()  # counted before an id is spent on it
    prior_tokens = sum(counter(messages[index]) for index in priors)
    summary_tokens = counter(draft)
    room = plan.budget - plan.kept_tokens + prior_tokens
    if summary_tokens > room:
        too_big = ValueError(
            f"the summary ({summary_tokens} tokens) does not fit the room left ({room} tokens)"
        )
        return PruneResult(kept, dropped, plan, plan.kept_tokens, None, too_big)

    summary_id = new_id() if new_id is not None else Conversation(messages).next_id()
    summary = draft.model_copy(update={"id": summary_id})
    removed = set(priors)
    new_messages: list[Message] = list(messages[: plan.preamble.stop])
    placed = False
    for turn in plan.kept:
        if not placed and turn.start >= lowest:
            new_messages.append(summary)
            placed = True
        new_messages.extend(messages[i] for i in turn if i not in removed)
    folded = sorted([*priors, *(i for turn in plan.dropped for i in turn)])
    return PruneResult(
        new_messages,
        [messages[i] for i in folded],
        plan,
        plan.kept_tokens - prior_tokens + summary_tokens,
        summary,
        None,
    )


def _conversation_plan(
    conversation: object,
    messages: Sequence[Message],
    config: ContextConfig | None,
    count: Callable[[Message], int] | None,
) -> PrunePlan:
    """``plan_prune`` for a ``Conversation``, keeping its layout from one plan to the next."""
    return _plan(messages, ContextConfig() if config is None else config, _counter(count), conversation)


def _conversation_prune(
    conversation: object,
    messages: Sequence[Message],
    config: ContextConfig | None,
    count: Callable[[Message], int] | None,
    summarize: Callable[[list[Message], str | None], str] | None,
    new_id: Callable[[], str],
) -> PruneResult:
    """``prune`` for a ``Conversation``, keeping its layout from one plan to the next."""
    config = ContextConfig() if config is None else config
    if config.strategy is PruneStrategy.SUMMARIZE and summarize is None:
        raise ValueError("the Summarize strategy needs a summarize(messages_to_fold, prior_summary) callable")
    return _prune(messages, config, _counter(count), summarize, new_id, conversation)
