"""Where a conversation's messages are, by id and by tool call (private).

``Conversation.set_pinned``, ``resolve`` and ``pending`` are called once per agent step; a
look through every message there makes a session quadratic. This index answers them from
positions kept as messages are added or replaced.
"""

from __future__ import annotations

from bisect import bisect
from collections import deque
from collections.abc import Sequence
from operator import attrgetter

from .models import Message, ToolResult

__all__ = ["MessageIndex"]

_ID = attrgetter("id")
_TOOL_RESULT = attrgetter("tool_result")


class MessageIndex:
    """Positions of messages: the first with each id, and the tool results of each tool call.

    Built from the messages in one pass, then kept in step by ``added`` (at the end) and
    ``replaced`` (same position, same id); a conversation whose messages are all replaced
    builds a new one.
    """

    def __init__(self, messages: Sequence[Message]) -> None:
        ids = list(map(_ID, messages))
        # Later entries overwrite earlier ones, so walking backwards leaves each id's first position.
        self._first_with_id: dict[str, int] = dict(
            zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True)
        )
        self._last_result: dict[str, int] = {}  # tool_call_id -> the last result's position
        # tool_call_id -> pending results' positions, ascending. A deque: results are added at the
        # end and resolved from the front, each in constant time.
        self._pending: dict[str, deque[int]] = {}
        for position, result in enumerate(map(_TOOL_RESULT, messages)):
            if result is not None:
                self._add_result(position, result)

    def added(self, position: int, message: Message) -> None:
        """Record ``message``, appended at ``position``."""
        self._first_with_id.setdefault(message.id, position)
        result = message.tool_result
        if result is not None:
            self._add_result(position, result)

    def _add_result(self, position: int, result: ToolResult) -> None:
        self._last_result[result.tool_call_id] = position
        if result.pending:
            self._pending.setdefault(result.tool_call_id, deque()).append(position)

    def replaced(self, position: int, old: Message, new: Message) -> None:
        """Record that ``new`` took ``old``'s place (the same id: pinned, unpinned or resolved)."""
        before, after = old.tool_result, new.tool_result
        pending_before = before.tool_call_id if before is not None and before.pending else None
        pending_after = after.tool_call_id if after is not None and after.pending else None
        if pending_before == pending_after:  # pinned, unpinned, counted: still pending, or never was
            return
        if pending_before is not None:
            positions = self._pending[pending_before]
            if positions[0] == position:  # resolving the first pending result, as resolve does
                positions.popleft()
            else:
                positions.remove(position)
            if not positions:
                del self._pending[pending_before]
        if pending_after is not None:
            positions = self._pending.setdefault(pending_after, deque())
            positions.insert(bisect(positions, position), position)

    def __contains__(self, id: object) -> bool:
        """Whether a message has ``id`` (a ``Container`` of the ids, for ``next_free_counter``)."""
        return id in self._first_with_id

    def first_with_id(self, id: str) -> int | None:
        """The position of the first message with ``id``, or None."""
        return self._first_with_id.get(id)

    def first_pending(self, tool_call_id: str) -> int | None:
        """The position of the first pending result of ``tool_call_id``, or None."""
        positions = self._pending.get(tool_call_id)
        return positions[0] if positions else None

    def last_result(self, tool_call_id: str) -> int | None:
        """The position of the last tool result of ``tool_call_id``, pending or not, or None."""
        return self._last_result.get(tool_call_id)

    def pending(self) -> list[int]:
        """The positions of every pending result, ascending."""
        return sorted(position for positions in self._pending.values() for position in positions)
