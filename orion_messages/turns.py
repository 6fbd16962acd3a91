"""Turns: how orion-core groups a conversation's messages for pruning."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .models import Message, Role

__all__ = ["Turns", "split_turns"]


@dataclass(frozen=True)
class Turns:
    """A conversation split into turns, as orion-core splits it for pruning.

    A turn starts at each ``user`` message and holds every following non-user message up to the
    next user message. Messages before the first user message form the ``preamble``.
    """

    preamble: range
    """The messages before the first user message (such as a system message); may be empty."""
    turns: list[range]
    """One range of message indexes per turn, in order."""


def split_turns(messages: Sequence[Message]) -> Turns:
    """Split ``messages`` into the preamble and orion-core's turns."""
    starts = [index for index, message in enumerate(messages) if message.role is Role.USER]
    ends = [*starts[1:], len(messages)] if starts else []
    first = starts[0] if starts else len(messages)
    return Turns(range(first), [range(start, end) for start, end in zip(starts, ends, strict=True)])
