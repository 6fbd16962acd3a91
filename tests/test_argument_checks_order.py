"""A conversation is ordered: a set of messages (or of tool results, calls, events) is refused
wherever a list of them is taken, with ``ArgumentTypeError`` naming the place, instead of being
read in its hashes' order. And the same wrong messages give the same error class from
``find_orphans`` and ``fix_orphans``, each naming itself."""

from __future__ import annotations

import asyncio
import collections.abc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    AgentEndEvent,
    ArgumentTypeError,
    Conversation,
    Message,
    MessageEndEvent,
    ToolCall,
    ToolResult,
    TurnEndEvent,
    conversation_stats,
    dumps,
    find_orphans,
    find_problems,
    fix_orphans,
    messages_from_events,
    open_async_store,
    open_store,
    plan_prune,
    prune,
    save,
    save_jsonl,
    split_turns,
    to_anthropic,
    to_chat_template,
    to_openai,
    to_orion_backend,
)

FIRST = Message.user("msg-1", "first", timestamp=1)
SECOND = Message.user("msg-2", "second", timestamp=2)


def _calls(tmp_path: Path) -> dict[str, Callable[[Any], object]]:
    """Each entry point that takes the messages of a conversation, given ``messages``."""
    store = open_store("sqlite://")
    store.create("c")
    return {
        "dumps": dumps,
        "save": lambda given: save(tmp_path / "chat.json", given),
        "save_jsonl": lambda given: save_jsonl(tmp_path / "chat.jsonl", given),
        "Conversation": Conversation,
        "Conversation.extend": lambda given: Conversation().extend(given),
        "Conversation.replace_messages": lambda given: Conversation().replace_messages(given),
        "ConversationStore.extend": lambda given: store.extend("c", given),
        "find_problems": find_problems,
        "fix_orphans": fix_orphans,
        "to_openai": to_openai,
        "to_anthropic": to_anthropic,
        "to_chat_template": to_chat_template,
        "to_orion_backend": to_orion_backend,
        # These read the messages twice and took only sequences already; now they say why.
        "find_orphans": find_orphans,
        "split_turns": split_turns,
        "plan_prune": lambda given: plan_prune(given),
        "prune": lambda given: prune(given),
        "conversation_stats": conversation_stats,
    }


@pytest.mark.parametrize("kind", [set, frozenset])
def test_every_entry_point_for_messages_refuses_a_set(tmp_path: Path, kind: type) -> None:
    for where, call in _calls(tmp_path).items():
        with pytest.raises(ArgumentTypeError) as raised:
            call(kind([FIRST, SECOND]))
        assert str(raised.value) == (
            f"{where}: expected a list of messages (in order), got a {kind.__name__}, which keeps no order"
        ), where
    assert not (tmp_path / "chat.json").exists()
    assert not (tmp_path / "chat.jsonl").exists()


def test_the_stores_writes_refuse_a_set() -> None:
    expected = "expected a list of messages (in order), got a set, which keeps no order"
    with open_store("sqlite://") as store:
        store.create("c")
        with pytest.raises(ArgumentTypeError) as raised:
            store.replace_messages("c", {FIRST, SECOND})
        assert str(raised.value) == f"ConversationStore.replace_messages: {expected}"
        assert store.load("c") == []

    async def written() -> None:
        store = await open_async_store("sqlite://")
        try:
            await store.create("c")
            with pytest.raises(ArgumentTypeError) as raised:
                await store.extend("c", {FIRST})
            assert str(raised.value) == f"AsyncConversationStore.extend: {expected}"
        finally:
            await store.close()

    asyncio.run(written())


def test_a_message_refuses_a_set_of_tool_calls_however_it_is_built() -> None:
    calls = [ToolCall(id=f"c{k}", name="t", arguments=k) for k in range(3)]
    fields: dict[str, Any] = {"id": "m", "role": "assistant", "content": "", "timestamp": 1}
    built = Message(**fields, tool_calls=calls)
    refused: list[Callable[[], object]] = [
        lambda: Message(**fields, tool_calls=set(calls)),
        lambda: Message.model_validate({**fields, "tool_calls": frozenset(calls)}),
        lambda: built.model_copy(update={"tool_calls": set(calls)}),
    ]
    for build in refused:
        with pytest.raises(ArgumentTypeError) as raised:
            build()
        assert str(raised.value).startswith(
            "Message: tool_calls: expected a list of ToolCall (in order), got a "
        )
    assert [call.id for call in Message(**fields, tool_calls=tuple(calls)).tool_calls] == ["c0", "c1", "c2"]


class _InsertionOrderedSet(collections.abc.Set[Message]):
    """A set type that keeps the order its items came in (as ``ordered_set.OrderedSet`` does)."""

    def __init__(self, items: list[Message]) -> None:
        self._items = dict.fromkeys(items)

    def __contains__(self, item: object) -> bool:
        return item in self._items

    def __iter__(self) -> Iterator[Message]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)


def test_an_ordered_set_type_is_taken_in_its_order_and_a_set_subclass_refused() -> None:
    assert list(Conversation(_InsertionOrderedSet([SECOND, FIRST]))) == [SECOND, FIRST]
    assert dumps(_InsertionOrderedSet([SECOND, FIRST])) == dumps([SECOND, FIRST])

    class _Tagged(frozenset[Message]):
        pass

    with pytest.raises(
        ArgumentTypeError, match=r"^dumps: expected a list of messages \(in order\), got a _Tagged"
    ):
        dumps(_Tagged({FIRST}))


def test_a_dicts_views_keep_its_order_and_are_taken() -> None:
    by_id = {"msg-2": SECOND, "msg-1": FIRST}
    assert dumps(by_id.values()) == dumps([SECOND, FIRST])
    assert list(Conversation(by_id.values())) == [SECOND, FIRST]


def test_an_events_ordered_fields_refuse_a_set() -> None:
    result = ToolResult(tool_call_id="c", tool_name="t", content="", is_error=False)
    refused: list[tuple[Callable[[], object], str]] = [
        (
            lambda: AgentEndEvent(messages={FIRST, SECOND}),
            "AgentEndEvent: messages: expected a list of messages",
        ),
        (
            lambda: AgentEndEvent.model_validate({"messages": frozenset({FIRST})}),
            "AgentEndEvent: messages: expected a list of messages",
        ),
        (
            lambda: AgentEndEvent(messages=[FIRST]).model_copy(update={"messages": {FIRST}}),
            "AgentEndEvent: messages: expected a list of messages",
        ),
        (
            lambda: TurnEndEvent(message=FIRST, tool_results={result}),
            "TurnEndEvent: tool_results: expected a list of tool results",
        ),
        (
            lambda: messages_from_events({MessageEndEvent(message=FIRST)}),
            "messages_from_events: expected a list of events",
        ),
        (
            lambda: Message.assistant("m", "", {ToolCall(id="c", name="t", arguments=1)}, timestamp=1),
            "Message.assistant: tool_calls: expected a list of ToolCall",
        ),
    ]
    for build, words in refused:
        with pytest.raises(ArgumentTypeError) as raised:
            build()
        assert str(raised.value).startswith(f"{words} (in order), got a "), str(raised.value)
        assert str(raised.value).endswith(", which keeps no order")
    # A list or a tuple is taken, in its order.
    assert AgentEndEvent(messages=[SECOND, FIRST]).messages == (SECOND, FIRST)
    assert TurnEndEvent(message=FIRST, tool_results=(result,)).tool_results == (result,)


@pytest.mark.parametrize(
    ("given", "text"),
    [
        ([FIRST, None], "[1]: expected a Message, found a NoneType"),
        ([{"id": "msg-1"}], "[0]: expected a Message, found a dict"),
        ("msg-1", "takes a list of messages, got a str"),
        (FIRST, "takes a list of messages, got a Message"),
        (None, "takes a list of messages, got a NoneType"),
        ({FIRST}, "expected a list of messages (in order), got a set, which keeps no order"),
    ],
)
def test_find_orphans_and_fix_orphans_refuse_the_same_input_alike(given: Any, text: str) -> None:
    # The same wrong argument is one error class from both (ArgumentTypeError, a TypeError).
    for function in (find_orphans, fix_orphans):
        with pytest.raises(ArgumentTypeError) as raised:
            function(given)
        assert function.__name__ in str(raised.value)
    with pytest.raises(ArgumentTypeError) as raised:
        find_orphans(given)
    assert text in str(raised.value)
