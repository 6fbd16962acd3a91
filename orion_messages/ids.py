"""orion-core's id conventions: message ids ``msg-N`` from a counter, tool-call ids ``{message id}-call-{k}``."""

from __future__ import annotations

import re
from collections.abc import Container, Iterable

from ._text import kind_of
from .errors import ArgumentTypeError, ArgumentValueError
from .models import U64_MAX

__all__ = ["message_number", "tool_call_id"]

_COUNTER_ID = re.compile(r"msg-\+?([0-9]+)")
"""``msg-`` and what Rust's ``str::parse::<u64>()`` reads: an optional ``+`` and ASCII digits."""

COUNTER_MAX = U64_MAX
"""The largest N orion-core's message counter (a ``u64``) reads in ``msg-N``."""


def message_number(message_id: str) -> int | None:
    """N for an id ``msg-N`` (orion-core's counter ids), else None.

    N is read as orion-core's ``Agent::replace_messages`` reads it, ``strip_prefix("msg-")`` then
    ``parse::<u64>()``: ASCII digits, optionally after one ``+`` (``msg-+7`` is 7), leading zeros
    allowed (``msg-007`` is 7); no digits, a ``-``, or a value above 2**64 - 1 is no counter (None).

    >>> message_number("msg-+7"), message_number("msg-18446744073709551616")
    (7, None)

    Raises:
        ArgumentTypeError: ``message_id`` is not a str.
    """
    if not isinstance(message_id, str):  # re would raise a bare TypeError, or read bytes
        raise ArgumentTypeError(f"message_number: message_id must be a str, got {kind_of(message_id)}")
    match = _COUNTER_ID.fullmatch(message_id)
    if match is None:
        return None
    digits = match[1].lstrip("0")
    if len(digits) > len(str(COUNTER_MAX)):  # read no further: int() of a huge string is slow
        return None
    value = int(digits or "0")
    return value if value <= COUNTER_MAX else None


def last_counter(message_ids: Iterable[str]) -> int:
    """The largest N among the ``msg-N`` ids (0 when there is none)."""
    return max(filter(None, map(message_number, message_ids)), default=0)


class FreshIds:
    """New message ids ``msg-N`` that no id in ``taken`` has (the package's one numbering, for
    the converters and ``prune``; internal, not exported: ``Conversation.next_id`` is the public
    way to a new id).

    As orion-core numbers its messages, N continues after the highest ``msg-N`` counter among
    ``taken``, so a new id never repeats one of them; past the u64 counter, where ``msg-N`` is
    no counter, the ids taken are skipped.

    Raises:
        ArgumentTypeError: ``taken`` is text or bytes (one id is not the ids in use) or not
            iterable, or an item is not a str.
    """

    def __init__(self, taken: Iterable[str] = ()) -> None:
        if isinstance(taken, (str, bytes, bytearray)) or not isinstance(taken, Iterable):
            raise ArgumentTypeError(f"FreshIds: taken must be an iterable of ids (str), got {kind_of(taken)}")
        self.taken: set[str] = set()
        """The ids in use; each new id is added."""
        for index, id in enumerate(taken):
            if not isinstance(id, str):  # named here: message_number, later, would name itself
                raise ArgumentTypeError(
                    f"FreshIds: taken[{index}]: expected an id (a str), got {kind_of(id)}"
                )
            self.taken.add(id)
        self.last = last_counter(self.taken)
        """N of the last id given (or the highest counter taken)."""

    def next(self) -> str:
        """The next new id."""
        self.last = next_free_counter(self.last, self.taken)
        new = f"msg-{self.last}"
        self.taken.add(new)
        return new


def next_free_counter(last: int, taken: Container[str]) -> int:
    """The first N after ``last`` whose ``msg-N`` is not among the ``taken`` ids.

    Below orion-core's u64 counter the next N is always free (``last`` is at least every counter
    taken); past it, ``msg-N`` is no counter (a reload does not count it), so those taken are
    skipped.
    """
    last += 1
    while f"msg-{last}" in taken:
        last += 1
    return last


def tool_call_id(message_id: str, k: int) -> str:
    """The id orion-core gives the ``k``-th tool call (counting from 1) of message ``message_id``.

    >>> tool_call_id("msg-2", 1)
    'msg-2-call-1'

    Raises:
        ArgumentTypeError: ``message_id`` is not a str, or ``k`` is not an int (a bool included).
        ArgumentValueError: ``k`` is below 1.
    """
    if not isinstance(message_id, str):  # an f-string would write None or b'x' into the id
        raise ArgumentTypeError(f"tool_call_id: message_id must be a str, got {kind_of(message_id)}")
    if type(k) is not int:
        raise ArgumentTypeError(f"tool_call_id: k must be an int, got {kind_of(k)}")
    if k < 1:
        raise ArgumentValueError(f"tool_call_id: k counts a message's tool calls from 1, got {k!r}")
    return f"{message_id}-call-{k}"
