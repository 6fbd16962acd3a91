"""Turns: how orion-core groups a conversation's messages for pruning.

A turn starts at each ``user`` message and holds every following non-user message up to the next
user message; the messages before the first user message form the preamble.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import eq, itemgetter
from typing import TYPE_CHECKING, Any

from .models import Message, Role, first_non_message, require_message_list

__all__ = ["TurnLayout", "split_turns"]

_ROLE = itemgetter("role")


@dataclass(frozen=True)
class TurnLayout:
    """A conversation split into turns, as orion-core splits it for pruning.

    A turn starts at each ``user`` message and holds every following non-user message up to the
    next user message. Messages before the first user message form the ``preamble``.
    """

    preamble: range
    """The messages before the first user message (such as a system message); may be empty."""
    turns: list[range]
    """One range of message indexes per turn, in order."""

    def __repr__(self) -> str:
        # A notebook shows this: a long list of turns is counted, not listed.
        return f"TurnLayout(preamble={self.preamble!r}, turns={turns_repr(self.turns)})"


TURNS_SHOWN = 6
"""The most turns a repr lists (``TurnLayout``, ``PrunePlan``); more are counted."""


def turns_repr(turns: list[range]) -> str:
    """``turns`` for a repr: listed up to ``TURNS_SHOWN``, else counted
    (``<16 turns, 32 messages>``)."""
    if len(turns) <= TURNS_SHOWN:
        return repr(turns)
    return f"<{len(turns)} turns, {sum(map(len, turns))} messages>"


def _user_starts(roles: Sequence[object], offset: int = 0) -> list[int]:
    """The indexes (plus ``offset``) of the ``user`` entries of a role column, found at C speed."""
    return list(compress(range(offset, offset + len(roles)), map(eq, roles, repeat(Role.USER))))


def _turn_ranges(starts: Sequence[int], stop: int) -> list[range]:
    """One range per turn, from the turns' first indexes and the end of the messages."""
    return list(map(range, starts, [*starts[1:], stop]))


def split_turns(messages: Sequence[Message]) -> TurnLayout:
    """Split ``messages`` into the preamble and orion-core's turns.

    Raises:
        ArgumentTypeError: ``messages`` is not a list of messages.
    """
    require_message_list(messages, "split_turns")
    try:
        roles = [_ROLE(vars(message)) for message in messages]
    except (TypeError, KeyError) as error:  # what reading a non-message's fields raises
        raise first_non_message(messages, "split_turns") or error from None
    starts = _user_starts(roles)
    first = starts[0] if starts else len(messages)
    return TurnLayout(range(first), _turn_ranges(starts, len(messages)))


if not TYPE_CHECKING:  # only at run time: type checkers report the old name, and any typo, as missing

    def __getattr__(name: str) -> Any:
        if name == "Turns":
            warnings.warn(
                "orion_messages.turns.Turns is deprecated; use TurnLayout (same class)",
                DeprecationWarning,
                stacklevel=2,
            )
            return TurnLayout
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
