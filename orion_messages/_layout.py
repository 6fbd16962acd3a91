"""What planning reads from a message list besides the counts: turns, pins, and tool links.

Built in one pass over each message's ``__dict__`` (pydantic keeps the fields there) with C-level
column scans, and extended in place when messages are appended, so a conversation that grows by
one message is laid out again by looking at that message only.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Sequence
from itertools import accumulate, compress, repeat
from operator import attrgetter, is_not, ne
from typing import NamedTuple

from .models import Message, Role
from .turns import _turn_ranges

__all__: list[str] = []

_USER = Role.USER
_ID = attrgetter("id")


class _Columns(NamedTuple):
    """What planning reads of a run of messages; indexes count from the run's offset."""

    size: int
    """How many messages the run holds."""
    user_at: list[int]
    """The indexes of the user messages (each starts a turn)."""
    pinned_at: list[int]
    """The indexes of the pinned messages."""
    call_at: list[int]
    """For each tool call, in order, the index of the message asking for it (``call_ids``: its id)."""
    call_ids: list[str]
    result_at: list[int]
    """The indexes of the messages with a tool result, and (``result_ids``) the calls they answer."""
    result_ids: list[str]
    pending_at: list[int]
    """The indexes of the pending tool results."""
    token_counts: list[int | None]
    """Every message's ``token_count``."""


def _read_columns(messages: Sequence[Message], offset: int = 0) -> _Columns:
    """The columns of ``messages``, in one pass that reads each message's ``__dict__`` once.

    Pydantic keeps the fields in ``__dict__``. The ids of a message's calls and of its result
    are read in the same pass: validation allocated those objects beside the message, so they
    are read while that stretch of memory is in the cache (a second pass over them cost more
    than the pass over the messages). One plain loop with bound ``append`` methods, which
    allocates almost nothing per message, measured faster than a C-level pass per field.
    """
    user_at: list[int] = []
    pinned_at: list[int] = []
    call_at: list[int] = []
    call_ids: list[str] = []
    result_at: list[int] = []
    result_ids: list[str] = []
    pending_at: list[int] = []
    token_counts: list[int | None] = []
    add_token_count = token_counts.append
    for index, fields in enumerate(map(vars, messages), offset):
        if fields["role"] == _USER:
            user_at.append(index)
        if fields["pinned"]:
            pinned_at.append(index)
        if calls := fields["tool_calls"]:
            call_ids += map(_ID, calls)
            call_at += repeat(index, len(calls))
        if (result := fields["tool_result"]) is not None:
            result_at.append(index)
            result_ids.append(result.tool_call_id)
            if result.pending:
                pending_at.append(index)
        add_token_count(fields["token_count"])
    return _Columns(
        len(token_counts),
        user_at,
        pinned_at,
        call_at,
        call_ids,
        result_at,
        result_ids,
        pending_at,
        token_counts,
    )


class _Layout:
    """Turns, pinned messages, pending results and cross-turn call/result links of a message list.

    ``starts`` holds each turn's first index; ``links`` are the (lower, higher) message indexes of a
    call and a result that lie in different turns (a result in another turn than its call).

    A result answers one call: the latest call with its id before it, or, when none is, the first
    one after it. So a server that names every turn's call ``call_0`` ties no turn to another.
    """

    __slots__ = (
        "_callers",
        "_calls_in_order",
        "links",
        "pending",
        "pinned",
        "size",
        "starts",
        "unanswered",
    )

    def __init__(self) -> None:
        self.size = 0
        self.starts: list[int] = []
        self.pinned: list[int] = []
        self.pending: list[int] = []
        self.links: list[tuple[int, int]] = []
        self._callers: dict[str, int] = {}
        # Calls taken in by the fast path, not yet in ``_callers``: (ids, message indexes).
        self._calls_in_order: tuple[list[str], list[int]] | None = None
        self.unanswered: dict[str, list[int]] = {}

    @property
    def callers(self) -> dict[str, int]:
        """The message asking for each tool call id (the latest laid out, when ids repeat)."""
        if self._calls_in_order is not None:
            ids, owners = self._calls_in_order
            self._callers = dict(zip(ids, owners, strict=True))
            self._calls_in_order = None
        return self._callers

    @property
    def preamble(self) -> range:
        """The messages before the first user message."""
        return range(self.starts[0] if self.starts else self.size)

    @property
    def turns(self) -> list[range]:
        """One range of message indexes per turn."""
        return _turn_ranges(self.starts, self.size)

    def turn_of(self, index: int) -> int:
        """The turn holding message ``index`` (-1 for the preamble)."""
        return bisect_right(self.starts, index) - 1

    def extend(self, columns: _Columns) -> None:
        """Take in messages (their columns) appended after the ones already laid out."""
        self.size += columns.size
        self.starts += columns.user_at
        self.pinned += columns.pinned_at
        self.pending += columns.pending_at
        if not (columns.call_at or columns.result_at) or self._take_answered_in_order(columns):
            return
        if not self._take_new_calls(columns.call_at, columns.call_ids):
            self._take_in_order(columns)
            return
        if columns.result_at:
            self._take_results(columns.result_at, columns.result_ids)

    def _take_answered_in_order(self, columns: _Columns) -> bool:
        """Take in a whole history whose results answer its calls one by one, in order.

        What orion-core's agent writes (call ids unique, results in the order of the calls):
        the result at position k answers the call at position k, so neither an index of the calls
        (``callers``, built when more messages come) nor a lookup per result is needed. Returns
        False, taking nothing, for any other history.
        """
        ids, answers = columns.call_ids, columns.result_ids
        if (
            self.unanswered  # a result laid out before is answered by a caller or waits here
            or self._callers
            or self._calls_in_order is not None
            or ids[: len(answers)] != answers
            or len(set(ids)) != len(ids)
        ):
            return False
        self._calls_in_order = (ids, columns.call_at)
        if not answers:
            return True
        callers = columns.call_at[: len(answers)]
        turn = self._turn_numbers()
        crossing = map(ne, map(turn.__getitem__, callers), map(turn.__getitem__, columns.result_at))
        self.links += (
            (min(pair), max(pair))
            for pair in compress(zip(callers, columns.result_at, strict=True), crossing)
        )
        return True

    def _turn_numbers(self) -> list[int]:
        """For every message, how many turns start at or before it (what ``bisect_right`` on
        ``starts`` gives one index at a time), in two passes in C."""
        starts = bytearray(self.size)
        deque(map(starts.__setitem__, self.starts, repeat(1)), maxlen=0)
        return list(accumulate(starts))

    def replace(self, index: int, old: Message, new: Message) -> bool:
        """Take in message ``index`` replaced: True when done, False when only laying out every
        message again can (the new message starts or ends a turn, or asks for or answers other
        calls). Pinning, unpinning and resolving change only the pinned and pending lists."""
        if index >= self.size:
            return True  # not laid out yet: read when the layout is extended
        if (old.role == _USER) != (new.role == _USER) or _links_of(old) != _links_of(new):
            return False
        _set_membership(self.pinned, index, new.pinned)
        _set_membership(self.pending, index, new.is_pending)
        return True

    def _link(self, call_at: int, result_at: int) -> None:
        if self.turn_of(call_at) != self.turn_of(result_at):
            self.links.append((min(call_at, result_at), max(call_at, result_at)))

    def _take_new_calls(self, owners: list[int], ids: list[str]) -> bool:
        """Take in calls whose ids no call or result laid out has, nor another of them: the
        results then answer them whatever their order. False, taking nothing, otherwise."""
        new = dict(zip(ids, owners, strict=True))
        if (
            len(new) != len(ids)
            or not self.callers.keys().isdisjoint(new)
            or not self.unanswered.keys().isdisjoint(new)
        ):
            return False
        self.callers.update(new)
        return True

    def _take_in_order(self, columns: _Columns) -> None:
        """Take in calls and results in message order, each result tied to the call it answers
        (see the class); the rare path of repeated ids, one Python step per call or result."""
        calls = zip(columns.call_at, repeat(False), columns.call_ids)
        results = zip(columns.result_at, repeat(True), columns.result_ids)
        callers = self.callers
        for index, is_result, call_id in sorted([*calls, *results]):
            if not is_result:
                callers[call_id] = index
                for result_at in self.unanswered.pop(call_id, ()):
                    self._link(index, result_at)
            elif (owner := callers.get(call_id)) is None:
                self.unanswered.setdefault(call_id, []).append(index)
            else:
                self._link(owner, index)

    def _take_results(self, result_at: list[int], ids: list[str]) -> None:
        owners = list(map(self.callers.get, ids))
        known = list(map(is_not, owners, repeat(None)))
        answered = list(compress(result_at, known))
        callers: list[int] = list(compress(owners, known))  # type: ignore[arg-type]  # no None left
        starts = self.starts
        crossing = map(
            ne, map(bisect_right, repeat(starts), answered), map(bisect_right, repeat(starts), callers)
        )
        self.links += (
            (min(pair), max(pair)) for pair in compress(zip(callers, answered, strict=True), crossing)
        )
        if len(answered) != len(result_at):
            for index, call_id, owner in zip(result_at, ids, owners, strict=True):
                if owner is None:
                    self.unanswered.setdefault(call_id, []).append(index)


def _links_of(message: Message) -> tuple[tuple[str, ...], str | None]:
    """What of a message ties it to others: the ids of its calls and of the call it answers."""
    result = message.tool_result
    return tuple(map(_ID, message.tool_calls)), None if result is None else result.tool_call_id


def _set_membership(indexes: list[int], index: int, member: bool) -> None:
    """Add ``index`` to the sorted ``indexes`` or remove it, as ``member`` says."""
    at = bisect_left(indexes, index)
    present = at < len(indexes) and indexes[at] == index
    if member and not present:
        indexes.insert(at, index)
    elif present and not member:
        del indexes[at]
