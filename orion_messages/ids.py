"""orion-core's id conventions: message ids ``msg-N`` from a counter, tool-call ids ``{message id}-call-{k}``."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .errors import ArgumentValueError

__all__ = ["message_number", "tool_call_id"]

_COUNTER_ID = re.compile(r"msg-([0-9]+)")


_COUNTER_DIGITS_MAX = 4000
"""The most digits (leading zeros aside) of an N read from ``msg-N``; Python reads 4300."""


def message_number(message_id: str) -> int | None:
    """N for an id ``msg-N`` (orion-core's counter ids), else None.

    An N of more than ``_COUNTER_DIGITS_MAX`` digits is no counter any agent reached: None.
    """
    match = _COUNTER_ID.fullmatch(message_id)
    if match is None:
        return None
    digits = match[1].lstrip("0") or "0"
    return int(digits) if len(digits) <= _COUNTER_DIGITS_MAX else None


def last_counter(message_ids: Iterable[str]) -> int:
    """The largest N among the ``msg-N`` ids (0 when there is none)."""
    return max(filter(None, map(message_number, message_ids)), default=0)


def tool_call_id(message_id: str, k: int) -> str:
    """The id orion-core gives the ``k``-th tool call (counting from 1) of message ``message_id``.

    >>> tool_call_id("msg-2", 1)
    'msg-2-call-1'
    """
    if type(k) is not int or k < 1:
        raise ArgumentValueError(f"k counts a message's tool calls from 1, got {k!r}")
    return f"{message_id}-call-{k}"
