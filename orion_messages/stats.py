"""A conversation counted: messages by role, turns, tool calls, pins, pending results, tokens."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .counting import default_counts
from .models import Message, Role, first_non_message, require_message_list, utc_datetime
from .turns import split_turns

__all__ = ["ConversationStats", "conversation_stats"]


@dataclass(frozen=True)
class ConversationStats:
    """What a conversation holds, counted (``conversation_stats``; ``orion-messages stats``)."""

    messages: int
    """How many messages."""
    roles: Mapping[str, int] = field(hash=False)  # a dict: hash the counts beside it
    """Messages by role, as the wire spells it, every role present (0 when none):
    ``stats.roles["user"]`` (``Role.USER`` finds the same count)."""
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


def conversation_stats(messages: Sequence[Message]) -> ConversationStats:
    """Count what ``messages`` hold: the numbers ``orion-messages stats`` prints.

    Raises:
        ArgumentTypeError: ``messages`` is not a list of messages.
    """
    require_message_list(messages, "conversation_stats")
    error = first_non_message(messages, "conversation_stats")
    if error is not None:
        raise error
    layout = split_turns(messages)
    roles = Counter(message.role for message in messages)
    stamps = [message.timestamp for message in messages]
    return ConversationStats(
        messages=len(messages),
        roles={role.value: roles.get(role, 0) for role in Role},
        turns=len(layout.turns),
        preamble=len(layout.preamble),
        tool_calls=sum(len(message.tool_calls) for message in messages),
        tool_errors=sum(m.tool_result is not None and m.tool_result.is_error for m in messages),
        pinned=sum(message.pinned for message in messages),
        pending=sum(message.is_pending for message in messages),
        tokens=sum(default_counts(messages, [message.token_count for message in messages])),
        token_counts_set=sum(message.token_count is not None for message in messages),
        first_timestamp=min(stamps, default=None),
        last_timestamp=max(stamps, default=None),
    )


def _moment(timestamp: int | None) -> datetime | None:
    if timestamp is None:
        return None
    try:
        return utc_datetime(timestamp)
    except OverflowError:
        return None
