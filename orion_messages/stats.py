"""A conversation counted: messages by role, turns, tool calls, pins, pending results, tokens."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from itertools import islice
from typing import NoReturn

from .counting import default_counts
from .models import Message, Role, first_non_message, require_message_iterable, utc_datetime
from .turns import split_turns

__all__ = ["ConversationStats", "conversation_stats"]


class _ReadOnlyCounts(dict[str, int]):
    """The counts by role of frozen stats: a dict (``asdict``, JSON, ``repr`` and ``==`` treat it
    as one) that refuses every change. A copy or a pickle is one again."""

    def _refuse(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("ConversationStats.roles is read-only, as the stats are")

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _refuse

    def __reduce__(self) -> tuple[type[_ReadOnlyCounts], tuple[dict[str, int]]]:
        # Not dict's way (fill an empty one item by item), which the refusals above would stop.
        return type(self), (dict(self),)

    def __copy__(self) -> _ReadOnlyCounts:
        return self  # nothing can change it

    def __deepcopy__(self, memo: dict[int, object]) -> _ReadOnlyCounts:
        return self


@dataclass(frozen=True)
class ConversationStats:
    """What a conversation holds, counted (``conversation_stats``; ``orion-messages stats``)."""

    messages: int
    """How many messages."""
    roles: Mapping[str, int] = field(hash=False)  # a mapping: hash the counts beside it
    """Messages by role, as the wire spells it, every role present (0 when none):
    ``stats.roles["user"]`` (``Role.USER`` finds the same count). Read-only, as the stats are."""
    turns: int
    """orion-core's turns: each starts at a user message (``split_turns``)."""
    preamble: int
    """Messages before the first user message (the system prompt, usually)."""
    tool_calls: int
    """Tool calls made by all messages."""
    tool_errors: int
    """Tool results with ``is_error`` set."""
    pinned: int
    """Pinned messages."""
    pending: int
    """Pending tool-result placeholders."""
    tokens: int
    """The conversation's tokens as the planner counts them by default: each message's
    ``token_count`` where set, else ``estimate_tokens``."""
    token_counts_set: int
    """Messages carrying a ``token_count``."""
    first_timestamp: int | None
    """The earliest ``timestamp`` (ms since the Unix epoch), None for no messages."""
    last_timestamp: int | None
    """The latest ``timestamp``, None for no messages."""

    def __post_init__(self) -> None:
        # A read-only copy: neither the stats nor the caller's dict changes the other.
        object.__setattr__(self, "roles", _ReadOnlyCounts(self.roles))

    @property
    def first_at(self) -> datetime | None:
        """``first_timestamp`` as an aware UTC datetime (None when absent or outside datetime's
        range)."""
        return _moment(self.first_timestamp)

    @property
    def last_at(self) -> datetime | None:
        """``last_timestamp`` as an aware UTC datetime (None when absent or outside datetime's
        range)."""
        return _moment(self.last_timestamp)


def conversation_stats(messages: Iterable[Message]) -> ConversationStats:
    """Count what ``messages`` hold: the numbers ``orion-messages stats`` prints.

    ``messages`` is read once, a batch at a time: any iterable of messages will do (a generator
    over a long log included), and memory holds a batch, not the conversation.

    Raises:
        ArgumentTypeError: ``messages`` is not an iterable of messages (text, a mapping, a
            single ``Message``, None or a number included), is a set (which keeps no order),
            or an item is not a ``Message`` (named by its index).
    """
    require_message_iterable(messages, "conversation_stats")
    tally = _Tally()
    for batch in _batches(messages):
        tally.add(batch)
    return tally.stats()


_BATCH = 1024
"""How many messages ``conversation_stats`` counts at once."""


def _batches(messages: Iterable[Message]) -> Iterator[list[Message]]:
    items = iter(messages)
    while batch := list(islice(items, _BATCH)):
        yield batch


class _Tally:
    """The counts of the messages read so far, a batch at a time."""

    def __init__(self) -> None:
        self.messages = 0
        self.roles: Counter[Role] = Counter()
        self.turns = 0
        self.preamble: int | None = None  # set at the first user message
        self.tool_calls = self.tool_errors = self.pinned = self.pending = 0
        self.tokens = self.token_counts_set = 0
        self.first: int | None = None
        self.last: int | None = None

    def add(self, batch: list[Message]) -> None:
        """Count the next messages (a non-empty list)."""
        if (wrong := first_non_message(batch, "conversation_stats", self.messages)) is not None:
            raise wrong
        # A turn starts at each user message, so the batch's turns are those started in it.
        layout = split_turns(batch)
        if self.preamble is None and layout.turns:
            self.preamble = self.messages + len(layout.preamble)
        self.turns += len(layout.turns)
        self.messages += len(batch)
        self.roles.update(message.role for message in batch)
        self.tool_calls += sum(len(message.tool_calls) for message in batch)
        self.tool_errors += sum(m.tool_result is not None and m.tool_result.is_error for m in batch)
        self.pinned += sum(message.pinned for message in batch)
        self.pending += sum(message.is_pending for message in batch)
        token_counts = [message.token_count for message in batch]
        self.tokens += sum(default_counts(batch, token_counts))
        self.token_counts_set += len(batch) - token_counts.count(None)
        stamps = [message.timestamp for message in batch]
        low, high = min(stamps), max(stamps)
        self.first = low if self.first is None else min(self.first, low)
        self.last = high if self.last is None else max(self.last, high)

    def stats(self) -> ConversationStats:
        """The stats of every message counted."""
        return ConversationStats(
            messages=self.messages,
            roles={role.value: self.roles.get(role, 0) for role in Role},
            turns=self.turns,
            preamble=self.messages if self.preamble is None else self.preamble,
            tool_calls=self.tool_calls,
            tool_errors=self.tool_errors,
            pinned=self.pinned,
            pending=self.pending,
            tokens=self.tokens,
            token_counts_set=self.token_counts_set,
            first_timestamp=self.first,
            last_timestamp=self.last,
        )


def _moment(timestamp: int | None) -> datetime | None:
    if timestamp is None:
        return None
    try:
        return utc_datetime(timestamp)
    except OverflowError:
        return None
