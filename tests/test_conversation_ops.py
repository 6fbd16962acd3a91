"""Conversation's agent operations against a plain list doing them the slow, obvious way.

``set_pinned``, ``resolve`` and ``pending`` answer from an index kept as messages come and go;
the reference here reads every message each time, as orion-core's agent does (first match by
id; the first pending result of a tool call). Ids and tool-call ids come from small pools, so
they repeat, as they do in real logs (``call_0`` every turn).
"""

from __future__ import annotations

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from orion_messages import Conversation, Message, PendingResultNotFound, ResultAlreadyResolved

IDS = st.sampled_from(["msg-1", "msg-2", "msg-3", "m"])
CALLS = st.sampled_from(["call_0", "call_1", "c"])


def _reference_resolve(messages: list[Message], call: str, content: str, is_error: bool) -> int | Exception:
    """The position resolved, or the error ``resolve`` documents, reading every message: the
    first placeholder of the id is filled in; with none, the last completed result is named."""
    answers = [
        (index, message.tool_result.pending)
        for index, message in enumerate(messages)
        if message.tool_result is not None and message.tool_result.tool_call_id == call
    ]
    placeholders = [index for index, pending in answers if pending]
    if placeholders:
        return placeholders[0]
    if answers:
        return ResultAlreadyResolved(call, index=answers[-1][0])
    return PendingResultNotFound(call)


class ConversationOperations(RuleBasedStateMachine):
    """Random appends, pins, resolutions and replacements, checked after every step."""

    def __init__(self) -> None:
        super().__init__()
        self.conversation = Conversation()
        self.expected: list[Message] = []

    def _add(self, message: Message) -> None:
        self.conversation.append(message)
        self.expected.append(message)

    @rule(id=IDS, text=st.text(max_size=3))
    def append_user(self, id: str, text: str) -> None:
        self._add(Message.user(id, text, timestamp=1))

    @rule(id=IDS, call=CALLS, pending=st.booleans(), pinned=st.booleans(), counted=st.booleans())
    def append_result(self, id: str, call: str, pending: bool, pinned: bool, counted: bool) -> None:
        if pending:
            message = Message.pending_result(id, call, "tool", timestamp=2)
        else:
            message = Message.tool_result_message(id, call, "tool", "done", timestamp=2)
        message = message.with_token_count(7) if counted else message
        self._add(message.pin() if pinned else message)

    @rule(id=IDS, pinned=st.booleans())
    def set_pinned(self, id: str, pinned: bool) -> None:
        found = next((i for i, message in enumerate(self.expected) if message.id == id), None)
        assert self.conversation.set_pinned(id, pinned) is (found is not None)
        if found is not None:
            message = self.expected[found]
            self.expected[found] = message.pin() if pinned else message.unpin()

    @rule(id=IDS, count=st.one_of(st.none(), st.integers(0, 2**32 - 1)))
    def set_token_count(self, id: str, count: int | None) -> None:
        found = next((i for i, message in enumerate(self.expected) if message.id == id), None)
        assert self.conversation.set_token_count(id, count) is (found is not None)
        if found is not None:
            self.expected[found] = self.expected[found].model_copy(update={"token_count": count})

    @rule(call=CALLS, content=st.text(max_size=3), is_error=st.booleans())
    def resolve(self, call: str, content: str, is_error: bool) -> None:
        outcome = _reference_resolve(self.expected, call, content, is_error)
        if isinstance(outcome, Exception):
            with pytest.raises(type(outcome)) as raised:
                self.conversation.resolve(call, content, is_error=is_error)
            assert str(raised.value) == str(outcome)
            return
        resolved = self.conversation.resolve(call, content, is_error=is_error)
        old = self.expected[outcome]
        assert (resolved.id, resolved.pinned, resolved.content) == (old.id, old.pinned, content)
        assert resolved.tool_result is not None
        assert (resolved.tool_result.is_error, resolved.tool_result.pending) == (is_error, False)
        assert resolved.token_count is None  # the placeholder's count was for other text
        self.expected[outcome] = resolved

    @rule(keep=st.lists(st.booleans()))
    def replace_messages(self, keep: list[bool]) -> None:
        kept = [message for message, wanted in zip(self.expected, keep, strict=False) if wanted]
        self.conversation.replace_messages(kept)
        self.expected = kept

    @invariant()
    def same_messages_and_pending(self) -> None:
        assert list(self.conversation.messages) == self.expected
        assert self.conversation.pending() == [message for message in self.expected if message.is_pending]


ConversationOperations.TestCase.settings = settings(max_examples=200, stateful_step_count=30, deadline=None)
test_conversation_operations = ConversationOperations.TestCase
