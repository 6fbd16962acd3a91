"""The conversation: a validated list of messages, the host's twin of orion-core's agent history."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, overload

from .checks import check
from .errors import Problem
from .models import Message
from .turns import Turns, split_turns

if TYPE_CHECKING:
    from collections.abc import Callable

    from .pruning import ContextConfig, PrunePlan, PruneResult

__all__ = ["Conversation"]

_COUNTER_ID = re.compile(r"msg-([0-9]+)")


def _require_message(message: object) -> None:
    if not isinstance(message, Message):
        raise TypeError(f"expected a Message, got {type(message).__name__}")


class _MessagesView(Sequence[Message]):
    """A read-only view of the conversation's list, without copying it."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Message]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"<{len(self._items)} messages>"


class Conversation:
    """A validated list of messages with orion-core's agent operations.

    ``messages`` is a read-only view; change the conversation through ``append``, ``extend``,
    ``set_pinned``, ``resolve`` and ``replace_messages``. Messages themselves are immutable.
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: list[Message] = []
        self._last_counter = 0
        self.extend(messages)

    @property
    def messages(self) -> Sequence[Message]:
        """The messages, in order (a read-only view, not a copy)."""
        return _MessagesView(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    def __getitem__(self, index: int) -> Message:
        return self._messages[index]

    def __repr__(self) -> str:
        return f"Conversation({len(self._messages)} messages)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Conversation):
            return NotImplemented
        return self._messages == other._messages

    __hash__ = None  # type: ignore[assignment]

    def append(self, message: Message) -> None:
        """Add one message at the end."""
        _require_message(message)
        self._messages.append(message)
        self._count(message)

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages at the end, in order; nothing is added if an item is not a ``Message``."""
        new = list(messages)
        for message in new:
            _require_message(message)
        for message in new:
            self.append(message)

    def replace_messages(self, messages: Iterable[Message]) -> None:
        """Replace every message (orion-core's ``agent.replace_messages``).

        ``next_id`` continues past every ``msg-N`` in the new messages and never goes back, so an
        id handed out before the replacement is not handed out again. Nothing changes if an
        item is not a ``Message``.
        """
        new = list(messages)
        for message in new:
            _require_message(message)
        self._messages = []
        self.extend(new)

    def set_pinned(self, id: str, pinned: bool) -> bool:
        """Pin or unpin the first message with ``id``; False when there is none, as in orion-core."""
        for index, message in enumerate(self._messages):
            if message.id == id:
                self._messages[index] = message.pin() if pinned else message.unpin()
                return True
        return False

    def next_id(self) -> str:
        """A fresh ``msg-N`` id, past every ``msg-N`` in the conversation and every id given before."""
        self._last_counter += 1
        return f"msg-{self._last_counter}"

    def pending(self) -> list[Message]:
        """The tool-result placeholders whose results are still to come, in order."""
        return [message for message in self._messages if message.is_pending]

    def resolve(self, tool_call_id: str, content: str, *, is_error: bool = False) -> Message:
        """Fill in a pending tool result: same id, same position, ``pending`` false.

        Returns the resolved message.

        Raises:
            KeyError: no tool-result message answers ``tool_call_id``.
            ValueError: the result for ``tool_call_id`` is already resolved.
        """
        if not isinstance(content, str):
            raise TypeError(f"content must be a str, got {type(content).__name__}")
        if not isinstance(is_error, bool):
            raise TypeError(f"is_error must be a bool, got {type(is_error).__name__}")
        resolved_at: int | None = None
        for index, message in enumerate(self._messages):
            result = message.tool_result
            if result is None or result.tool_call_id != tool_call_id:
                continue
            if result.pending:
                new_result = result.model_copy(
                    update={"content": content, "is_error": is_error, "pending": False}
                )
                resolved = message.model_copy(update={"content": content, "tool_result": new_result})
                self._messages[index] = resolved
                return resolved
            resolved_at = index
        if resolved_at is not None:
            raise ValueError(
                f'the result for tool call "{tool_call_id}" is already resolved (at [{resolved_at}])'
            )
        raise KeyError(f'no pending result for tool call "{tool_call_id}"')

    def turns(self) -> Turns:
        """The preamble and orion-core's turns, as index ranges."""
        return split_turns(self._messages)

    def check(self) -> list[Problem]:
        """The semantic problems in the conversation (see ``orion_messages.check``)."""
        return check(self._messages)

    def _count(self, message: Message) -> None:
        match = _COUNTER_ID.fullmatch(message.id)
        if match is not None:
            self._last_counter = max(self._last_counter, int(match[1]))

    def plan_prune(
        self, config: ContextConfig | None = None, *, count: Callable[[Message], int] | None = None
    ) -> PrunePlan:
        """Which turns fit ``config``'s context window (see ``orion_messages.plan_prune``)."""
        from .pruning import _conversation_plan

        return _conversation_plan(self, self._messages, config, count)

    def prune(
        self,
        config: ContextConfig | None = None,
        *,
        count: Callable[[Message], int] | None = None,
        summarize: Callable[[list[Message], str | None], str] | None = None,
    ) -> PruneResult:
        """Prune to ``config``'s context window (see ``orion_messages.prune``).

        The sliding window leaves the conversation as it is (the result holds what to send). A
        summary that succeeds replaces the folded messages here too, as orion-core does, with a
        fresh id from ``next_id``.
        """
        from .pruning import _conversation_prune

        result = _conversation_prune(self, self._messages, config, count, summarize, self.next_id)
        if result.summary is not None:
            self.replace_messages(result.messages)
        return result
