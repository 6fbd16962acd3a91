"""Planning a prune: which turns fit the model's context window, decided as orion-core decides.

orion-core's plan (reference page, "How orion-core prunes"; chat-templates.md section 6) is a short
loop over precomputed costs, ``_keep`` below: refuse when the fixed overhead leaves no room; keep the
latest turn, or refuse; keep every older pinned turn, oldest first, or refuse; then walk back from
the newest older turn keeping each turn while it fits, and stop at the first that does not.

Two ways to get the costs:

- **With a chat template** (``template=``), exactly as orion-core: the fixed overhead is the count of
  the rendered system block plus the count of the assistant prefix, each message costs the count
  of its rendered fragment (``counter`` counts text), the messages before the first user message
  are neither counted nor kept, and only pinned turns are protected.
- **Without one** (our own choice): each message costs its ``token_count`` where set, else
  ``estimate_tokens`` (or a message counter, ``count=``); the fixed overhead is ``reserved_tokens``
  plus the preamble, which is kept; a turn holding a pending result is protected like a pinned one;
  and turns tied by a tool call and its result in another turn are kept or dropped together.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import accumulate, compress, pairwise
from operator import not_, sub
from typing import TYPE_CHECKING, Literal

from ._layout import _Columns, _Layout, _read_columns
from ._text import excerpt, kind_of, shown_int
from .counting import (
    MessageCounter,
    TokenCounter,
    _require_message_counter,
    default_counts,
    message_counts,
)
from .errors import ArgumentTypeError, ArgumentValueError, ContextOverflowError
from .models import Message, first_non_message, require_message_list
from .templates import ChatTemplate, ToolSchema, get_template
from .text_counters import (
    TextCounter,
    callable_counter,
    checked_count,
    counter_name,
    estimate_text_tokens,
    returns_count,
)
from .turns import turns_repr

__all__ = ["ContextConfig", "PrunePlan", "PruneStrategy", "plan_prune"]


class PruneStrategy(str, Enum):
    """What happens to the turns that do not fit (orion-core's strategies)."""

    SLIDING_WINDOW = "sliding_window"
    """Leave the oldest turns out of the context (orion-core's default)."""
    SUMMARIZE = "summarize"
    """Fold the turns left out, and any earlier summary, into one pinned summary message."""

    def __str__(self) -> str:
        return self.value


def _strategy(value: object) -> PruneStrategy:
    """``ContextConfig.strategy`` given by its value (``"summarize"``), or why it cannot be."""
    values = ", ".join(repr(strategy.value) for strategy in PruneStrategy)
    if not isinstance(value, str):
        raise ArgumentTypeError(
            f"ContextConfig.strategy must be a PruneStrategy or one of {values}, got {kind_of(value)} {value!r}"
        )
    try:
        return PruneStrategy(value)
    except ValueError:
        raise ArgumentValueError(
            f"ContextConfig.strategy must be one of {values}, got {excerpt(repr(value))}"
        ) from None


@dataclass(frozen=True)
class ContextConfig:
    """The context window to fit a conversation into, with orion-core's defaults."""

    max_context_tokens: int = 4096
    """The model's whole context window, in tokens."""
    max_response_tokens: int = 2048
    """Tokens kept free for the model's reply (orion-core's default, 2048): lower it with a
    small ``max_context_tokens``, or nothing is left for the prompt and every plan is refused."""
    reserved_tokens: int = 0
    """Tokens sent outside the message list that the plan cannot see (without a template: your
    system prompt and tool schemas, orion-core's fixed overhead); added to the fixed overhead."""
    strategy: PruneStrategy = PruneStrategy.SLIDING_WINDOW
    """What happens to the turns that do not fit; given by its value too (``"summarize"``)."""

    if TYPE_CHECKING:  # for type checkers: the strategy may be given by its value, as at run time

        def __init__(
            self,
            max_context_tokens: int = ...,
            max_response_tokens: int = ...,
            reserved_tokens: int = ...,
            strategy: PruneStrategy | Literal["sliding_window", "summarize"] = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        for name in ("max_context_tokens", "max_response_tokens", "reserved_tokens"):
            value = getattr(self, name)
            if type(value) is not int:
                raise ArgumentTypeError(
                    f"ContextConfig.{name} must be an int, got {kind_of(value)} {value!r}"
                )
            if value < 0:
                raise ArgumentValueError(
                    f"ContextConfig.{name} must be a non-negative int, got {shown_int(value)}"
                )
        if not isinstance(self.strategy, PruneStrategy):
            object.__setattr__(self, "strategy", _strategy(self.strategy))

    @property
    def available_tokens(self) -> int:
        """``max(0, max_context_tokens - max_response_tokens)``: the room for the prompt."""
        return max(0, self.max_context_tokens - self.max_response_tokens)


@dataclass(frozen=True)
class PrunePlan:
    """Which turns to keep: index ranges into the planned messages, one per turn, in order."""

    preamble: range
    """The messages before the first user message (sent and counted without a template; left
    out, as orion-core does, with one: see ``preamble_kept``)."""
    kept: list[range]
    """The kept turns, in order (not necessarily contiguous: an old pinned turn survives)."""
    dropped: list[range]
    """The dropped turns, in order."""
    preamble_tokens: int
    """What the preamble costs (0 with a template: orion-core does not count it)."""
    kept_tokens: int
    """What the kept messages cost: the kept turns, plus the preamble when it is kept."""
    dropped_tokens: int
    """What the dropped turns cost."""
    budget: int
    """The room for the messages: ``available_tokens`` less the fixed overhead other than the
    preamble (``reserved_tokens``; with a template also the system block and prefix);
    ``kept_tokens`` never exceeds it."""
    fixed_tokens: int = 0
    """The fixed overhead, as orion-core's refusals state it: ``reserved_tokens`` plus the preamble
    without a template; the system block, the assistant prefix and ``reserved_tokens`` with one."""
    preamble_kept: bool = True
    """Whether ``kept_messages`` and ``kept_count`` include the preamble (False with a template)."""

    def __repr__(self) -> str:
        # A notebook shows this: a long list of turns is counted, not listed.
        fields = ", ".join(
            f"{name}={turns_repr(value) if isinstance(value, list) else repr(value)}"
            for name, value in vars(self).items()
        )
        return f"PrunePlan({fields})"

    @property
    def kept_count(self) -> int:
        """How many messages are kept, the preamble included when it is kept."""
        return len(self.preamble) * self.preamble_kept + sum(map(len, self.kept))

    @property
    def dropped_count(self) -> int:
        """How many messages are dropped."""
        return sum(map(len, self.dropped))

    def _require_planned(self, messages: Sequence[Message], function: str) -> None:
        """Refuse what cannot be the list this plan was made for: not a list of messages, or a
        list of another length (the plan's ranges would pick a wrong subset from it). Its
        length is the preamble's plus every turn's: together they cover the planned list."""
        require_message_list(messages, function, " (the plan's ranges index into it)")
        planned = self.preamble.stop + sum(map(len, self.kept)) + self.dropped_count
        if len(messages) != planned:
            raise ArgumentValueError(
                f"{function}: the plan was made for a list of {planned} messages, got {len(messages)}"
            )

    def kept_messages(self, messages: Sequence[Message]) -> list[Message]:
        """The kept messages of ``messages`` (the list this plan was made for), in order.

        Raises:
            ArgumentTypeError: ``messages`` is not a list of messages.
            ArgumentValueError: ``messages`` is not as long as the list the plan was made for.
        """
        self._require_planned(messages, "PrunePlan.kept_messages")
        out = list(messages[: self.preamble.stop]) if self.preamble_kept else []
        for turn in self.kept:
            out += messages[turn.start : turn.stop]
        return out

    def dropped_messages(self, messages: Sequence[Message]) -> list[Message]:
        """The dropped messages of ``messages`` (the list this plan was made for), in order.

        Raises:
            ArgumentTypeError: ``messages`` is not a list of messages.
            ArgumentValueError: ``messages`` is not as long as the list the plan was made for.
        """
        self._require_planned(messages, "PrunePlan.dropped_messages")
        out: list[Message] = []
        for turn in self.dropped:
            out += messages[turn.start : turn.stop]
        return out


@dataclass(frozen=True)
class _Counting:
    """How one plan counts: the cache key of its per-message costs, how to count messages, the
    fixed overhead it adds, and whether it plans exactly as orion-core (with a template)."""

    key: object
    count: Callable[[Sequence[Message], _Columns, int], list[int]]
    fixed: int = 0
    templated: bool = False


def _counting(
    count: MessageCounter | None,
    template: ChatTemplate | str | None,
    system_prompt: str,
    tools: Sequence[ToolSchema],
    counter: TextCounter | None,
) -> _Counting:
    if not isinstance(system_prompt, str):
        raise ArgumentTypeError(f"system_prompt must be a str, got {kind_of(system_prompt)}")
    if template is None:
        if counter is not None:
            raise ArgumentTypeError(
                "counter= counts rendered text and needs a template=; without one pass a message "
                "counter (Message -> int) as count="
            )
        if system_prompt or tools:
            raise ArgumentValueError(
                "system_prompt and tools are rendered by a template=; without one, give their cost "
                "as ContextConfig.reserved_tokens"
            )
        if count is None:
            return _Counting(
                None, lambda messages, columns, offset: default_counts(messages, columns.token_counts)
            )
        count = _require_message_counter(count, "count=")
        return _Counting(count, lambda messages, columns, offset: message_counts(messages, count, offset))
    if count is not None:
        raise ArgumentTypeError(
            "with a template=, messages are counted as rendered text: pass counter=, not count="
        )
    if isinstance(template, str):
        template = get_template(template)
    elif not isinstance(template, ChatTemplate):
        raise ArgumentTypeError(
            f"template must be a ChatTemplate or a template's name, got {kind_of(template)}"
        )
    text_count = estimate_text_tokens if counter is None else _text_counter(counter)
    system_block = template.format_system(system_prompt, tools)
    fixed = checked_count(text_count(system_block), text_count, "text", "the system block")
    prefix = text_count(template.assistant_prefix())
    fixed += checked_count(prefix, text_count, "text", "the assistant prefix")

    def rendered(messages: Sequence[Message], columns: object, offset: int) -> list[int]:
        render = template.format_message
        return [
            _rendered_tokens(text_count, render(message), index, message)
            for index, message in enumerate(messages, start=offset)
        ]

    return _Counting((template, text_count), rendered, fixed, True)


def _text_counter(counter: object) -> TextCounter:
    """``counter`` checked to be a text counter, early, with a message that says what to use instead."""
    if isinstance(counter, TokenCounter):
        raise ArgumentTypeError(
            "counter= takes a text counter (str -> int), got a TokenCounter (Message -> int): give it "
            "as count= without a template, or pass a text counter such as estimate_text_tokens"
        )
    return callable_counter(counter)  # type: ignore[arg-type]  # callable_counter checks it


def _rendered_tokens(counter: Callable[[str], int], text: str, index: int, message: Message) -> int:
    """``counter`` of ``text``, the rendered fragment of message ``index``, checked."""
    try:
        value = counter(text)
    except (AttributeError, TypeError) as error:
        # What a message counter given a str raises: said so where it happens, cause attached,
        # once the counter shows that it counts messages (as count= decides the reverse). It
        # counted callable_counter's sample text, so this is mostly a bug of its own: kept as is.
        if not returns_count(counter, message):
            raise
        raise ArgumentTypeError(
            f"the text counter {counter_name(counter)} raised {type(error).__name__} on message "
            f"[{index}]. counter= takes a str -> int; a Message -> int counter goes in count= "
            "(without a template)"
        ) from error
    return checked_count(value, counter, "text", index, message)


class _Column:
    """One way of counting's per-message costs and their running sums, extended on append."""

    __slots__ = ("costs", "dirty", "prefix")

    def __init__(self) -> None:
        self.costs: list[int] = []
        self.prefix: list[int] = [0]
        self.dirty: set[int] = set()


class _PlanCache:
    """What a conversation keeps from one plan to the next: its layout and its per-message costs.

    ``Conversation`` holds one and tells it what changed (``changed``, ``reset``); appended
    messages are noticed by length and laid out and counted alone. Not for lists that change
    behind its back: a plain list is planned with a fresh cache each time.
    """

    __slots__ = ("_columns", "_layout")

    _MAX_COLUMNS = 4  # ways of counting remembered at once (e.g. two templates and their counters)

    def __init__(self) -> None:
        self._layout: _Layout | None = None
        self._columns: dict[object, _Column] = {}

    def changed(self, index: int, old: Message, new: Message) -> None:
        """Message ``index``, ``old``, was replaced by ``new`` (pinned, unpinned, resolved)."""
        if self._layout is not None and not self._layout.replace(index, old, new):
            self._layout = None  # rebuilt from the columns of every message: no counting involved
        for column in self._columns.values():
            if index < len(column.costs):
                column.dirty.add(index)

    def update(self, messages: Sequence[Message], counting: _Counting) -> tuple[_Layout, list[int]]:
        """The layout of ``messages`` and the running sums of their costs (``prefix[i]`` is what
        messages ``[0:i]`` cost), extended by what was appended since the last call."""
        column = self._column(counting.key)
        if column.dirty:
            self._recount(column, counting, messages)
        if self._layout is None:
            self._layout = _Layout()
        layout = self._layout
        seen = len(column.costs)
        start = min(layout.size, seen)
        if start < len(messages):
            tail = messages[start:] if start else messages
            columns = _read_columns(tail, start)  # one pass over the new messages, shared by both
            if layout.size < len(messages):
                layout.extend(_sliced(columns, layout.size - start, layout.size))
            if seen < len(messages):
                fresh = tail[seen - start :] if seen > start else tail
                new = counting.count(fresh, _sliced(columns, seen - start, seen), seen)
                column.costs += new
                column.prefix += accumulate(new, initial=column.prefix[-1])
                del column.prefix[seen + 1]  # accumulate repeats its initial value
        return layout, column.prefix

    @staticmethod
    def _recount(column: _Column, counting: _Counting, messages: Sequence[Message]) -> None:
        """Count the replaced messages again and redo the running sums from the first of them."""
        low = min(column.dirty)
        for index in sorted(column.dirty):
            one = messages[index : index + 1]
            column.costs[index] = counting.count(one, _read_columns(one), index)[0]
        column.dirty.clear()
        del column.prefix[low + 1 :]
        column.prefix += accumulate(column.costs[low:], initial=column.prefix[low])
        del column.prefix[low + 1]  # accumulate repeats its initial value

    def _column(self, key: object) -> _Column:
        try:
            column = self._columns.get(key)
        except TypeError:  # an unhashable counter: counted for this plan only
            return _Column()
        if column is None:
            if len(self._columns) >= self._MAX_COLUMNS:
                del self._columns[next(iter(self._columns))]
            column = self._columns[key] = _Column()
        return column


def _context_config(config: ContextConfig | None, function: str) -> ContextConfig:
    """``config``, or the defaults for None; an ``ArgumentTypeError`` naming ``function`` for
    anything else."""
    if config is None:
        return ContextConfig()
    if not isinstance(config, ContextConfig):
        raise ArgumentTypeError(f"{function}: config must be a ContextConfig or None, got {kind_of(config)}")
    return config


def plan_prune(
    messages: Sequence[Message],
    config: ContextConfig | None = None,
    *,
    count: MessageCounter | None = None,
    template: ChatTemplate | str | None = None,
    system_prompt: str = "",
    tools: Sequence[ToolSchema] = (),
    counter: TextCounter | None = None,
) -> PrunePlan:
    """Decide which turns of ``messages`` fit ``config``'s context window, as orion-core does.

    With ``template`` (a chat template), the plan is orion-core's own: ``counter`` (a text counter,
    ``str -> int``; default the chars/4 estimate) counts the rendered system block of
    ``system_prompt`` and ``tools`` plus the assistant prefix as the fixed overhead, and each
    message's rendered fragment as its cost. Without one, each message costs ``count(message)``
    (a message counter; default ``token_count`` where set, else ``estimate_tokens``), and the fixed
    overhead is ``reserved_tokens`` plus the preamble (see the module docstring for the other
    differences).

    Raises:
        ContextOverflowError: orion-core's three refusals, with its text; the details (turn at
            fault, room it had) are attributes.
        UnknownTemplateError: ``template`` names no template orion-core knows (a ``ValueError``).
        ArgumentTypeError: a text counter given as ``count`` or a message counter as ``counter``;
            ``messages`` not a list (an iterator, say); ``template``, ``system_prompt`` or
            ``tools`` of the wrong type (a ``TypeError``).
        ArgumentValueError: ``system_prompt`` or ``tools`` without a ``template`` (a ``ValueError``);
            a tool's ``parameters`` holding a lone surrogate (``tools[0].parameters.a``).
    """
    require_message_list(messages, "plan_prune", " (the plan's ranges index into it)")
    config = _context_config(config, "plan_prune")
    counting = _counting(count, template, system_prompt, tools, counter)
    return _plan(_PlanCache(), messages, config, counting)


def _plan(
    cache: _PlanCache,
    messages: Sequence[Message],
    config: ContextConfig,
    counting: _Counting,
) -> PrunePlan:
    try:
        layout, prefix = cache.update(messages, counting)
    except (TypeError, KeyError, AttributeError):  # what reading a non-message's fields raises
        wrong = first_non_message(messages, "plan_prune")
        if wrong is None:
            raise  # as it was, with its cause (a counter's own error)
        raise wrong from None
    if counting.templated:
        return _plan_as_orion_core(layout, prefix, config, counting.fixed + config.reserved_tokens)
    return _plan_without_template(layout, prefix, config)


def _sliced(columns: _Columns, skip: int, first_index: int) -> _Columns:
    """The columns without their first ``skip`` messages, which start at message ``first_index``."""
    if skip == 0:
        return columns

    def after(indexes: list[int]) -> int:
        return bisect_left(indexes, first_index)

    calls_from, results_from = after(columns.call_at), after(columns.result_at)
    return _Columns(
        columns.size - skip,
        columns.user_at[after(columns.user_at) :],
        columns.pinned_at[after(columns.pinned_at) :],
        columns.call_at[calls_from:],
        columns.call_ids[calls_from:],
        columns.result_at[results_from:],
        columns.result_ids[results_from:],
        columns.pending_at[after(columns.pending_at) :],
        columns.token_counts[skip:],
    )


def _keep(
    costs: list[int], protected: list[int], fixed: int, available: int, spans: list[range]
) -> tuple[list[bool], int]:
    """orion-core's plan over precomputed costs: which units (turns) to keep, and what they cost.

    ``protected`` lists the pinned units, oldest first; ``spans`` are the units' message ranges
    (for the refusals' ``turn``). Steps as numbered in chat-templates.md section 6.
    """
    if fixed >= available:  # 2. fixed overhead
        raise ContextOverflowError("overhead", fixed, available, fixed_tokens=fixed, budget=available)
    budget = available - fixed  # 5.
    keep = [False] * len(costs)
    if not costs:  # 3. no turns: nothing kept or dropped
        return keep, 0
    latest = len(costs) - 1
    if costs[latest] > budget:  # 5. the latest turn must fit
        raise ContextOverflowError("latest", costs[latest], available, fixed_tokens=fixed, turn=spans[latest])
    remaining = budget - costs[latest]
    keep[latest] = True
    for unit in protected:  # 5. every earlier pinned turn, oldest first, or refuse
        if unit == latest:
            continue
        if costs[unit] > remaining:
            pinned_total = sum(costs[pinned] for pinned in protected)  # the latest too, when pinned
            raise ContextOverflowError(
                "pinned", pinned_total, available, fixed_tokens=fixed, budget=remaining, turn=spans[unit]
            )
        remaining -= costs[unit]
        keep[unit] = True
    for unit in range(latest - 1, -1, -1):  # 5. newest first, stepping over pinned turns
        if keep[unit]:
            continue
        if costs[unit] > remaining:
            break  # the walk stops at the first turn that does not fit
        remaining -= costs[unit]
        keep[unit] = True
    return keep, budget - remaining


def _split(turns: list[range], keep: list[bool]) -> tuple[list[range], list[range]]:
    """The kept turns and the dropped turns, in order."""
    return list(compress(turns, keep)), list(compress(turns, map(not_, keep)))


def _costs(prefix: list[int], starts: Sequence[int], stops: Sequence[int]) -> list[int]:
    """What each run of messages ``[starts[i]:stops[i]]`` costs, from the running sums."""
    at = prefix.__getitem__
    return list(map(sub, map(at, stops), map(at, starts)))


def _plan_as_orion_core(layout: _Layout, prefix: list[int], config: ContextConfig, fixed: int) -> PrunePlan:
    """orion-core's plan: the turns alone, the preamble neither counted nor kept, pins protect."""
    turns = layout.turns
    costs = _costs(prefix, layout.starts, [*layout.starts[1:], layout.size])
    pinned = sorted({layout.turn_of(index) for index in layout.pinned} - {-1})
    available = config.available_tokens
    keep, used = _keep(costs, pinned, fixed, available, turns)
    kept, dropped = _split(turns, keep)
    total = prefix[-1] - prefix[layout.preamble.stop]
    return PrunePlan(layout.preamble, kept, dropped, 0, used, total - used, available - fixed, fixed, False)


def _plan_without_template(layout: _Layout, prefix: list[int], config: ContextConfig) -> PrunePlan:
    """Our plan without a template: the same loop over units of tied turns, the preamble kept."""
    preamble = layout.preamble
    preamble_tokens = prefix[preamble.stop]
    fixed = config.reserved_tokens + preamble_tokens
    available = config.available_tokens
    turns = layout.turns
    units, unit_starts, protected = _units(layout, turns)
    if units is turns:  # no tied turns, the usual case
        costs = _costs(prefix, layout.starts, [*layout.starts[1:], layout.size])
    else:
        costs = _costs(prefix, [unit.start for unit in units], [unit.stop for unit in units])
    keep_units, used = _keep(costs, protected, fixed, available, units)
    if unit_starts is None:
        keep = keep_units
    else:
        keep = [
            kept
            for unit, kept in enumerate(keep_units)
            for _ in range(unit_starts[unit], unit_starts[unit + 1])
        ]
    kept, dropped = _split(turns, keep)
    kept_tokens = preamble_tokens + used
    budget = available - config.reserved_tokens
    return PrunePlan(
        preamble, kept, dropped, preamble_tokens, kept_tokens, prefix[-1] - kept_tokens, budget, fixed
    )


def _units(layout: _Layout, turns: list[range]) -> tuple[list[range], list[int] | None, list[int]]:
    """Units of turns kept or dropped together: their message ranges, the index of each unit's
    first turn and one past the last (None when each turn is a unit of its own), and the
    protected units, oldest first.

    A call and its result in different turns tie every turn between them into one unit; a unit
    holding a pinned message or a pending result is protected, and so is a turn tied to the
    preamble (which is always kept).
    """
    turn_of = layout.turn_of
    protected_turns = {turn_of(index) for index in (*layout.pinned, *layout.pending)}
    spans: list[tuple[int, int]] = []
    for low, high in layout.links:
        if turn_of(low) < 0:
            protected_turns.add(turn_of(high))
        else:
            spans.append((turn_of(low), turn_of(high)))
    protected_turns.discard(-1)
    if not spans:
        return turns, None, sorted(protected_turns)
    unit_starts: list[int] = []
    position = 0
    for low, high in _merged(spans):
        unit_starts += range(position, low + 1)
        position = high + 1
    unit_starts += range(position, len(turns) + 1)
    bounds = [*layout.starts, layout.size]
    units = [range(bounds[start], bounds[stop]) for start, stop in pairwise(unit_starts)]
    protected = sorted({bisect_right(unit_starts, turn) - 1 for turn in protected_turns})
    return units, unit_starts, protected


def _merged(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping (low, high) spans merged, in order."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(spans):
        if merged and low <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return merged
