"""The conversation store's operations, on SQLite and on a real PostgreSQL server.

Expectations come from the golden fixtures (byte-exact loading), from the in-memory
``Conversation`` and ``plan_prune`` (what an operation in place must equal), and from the issue.
"""

from __future__ import annotations

import asyncio
import re
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    ArgumentValueError,
    ContextConfig,
    Conversation,
    ConversationExists,
    ConversationNotFound,
    FormatError,
    Message,
    MessageNotFound,
    PruneStrategy,
    TokenCounter,
    ToolCall,
    count_words,
    dumps,
    dumps_message,
    estimate_tokens,
    load,
    plan_prune,
)
from orion_messages._store_ops import Operation, Statements, Steps
from orion_messages.store import (
    AsyncConversationStore,
    ConversationStore,
    is_store_url,
    open_async_store,
    open_store,
    parse_store_url,
)

from ..conftest import FIXTURES
from ..test_goldens import RYU_TWINS

# The goldens current serde_json writes (those spelled as the old ryu writer did have a zmij twin).
GOLDENS = sorted(
    path
    for path in [
        *FIXTURES.glob("v0.*/*.json"),
        *FIXTURES.glob("zmij/*.json"),
        FIXTURES / "newer" / "unknown-keys.json",
        FIXTURES / "own" / "conversation.json",
    ]
    if ".pretty." not in path.name and path.relative_to(FIXTURES).as_posix() not in RYU_TWINS
)


@contextmanager
def opened(url: str) -> Iterator[ConversationStore]:
    with open_store(url) as store:
        yield store


def raw_sql(url: str, sql: str, params: tuple[Any, ...] = ()) -> None:
    """Run one statement on the store's database behind its back (to corrupt or inspect it)."""
    parsed = parse_store_url(url)
    if parsed.backend == "sqlite":
        # Closed here: sqlite3 frees a connection only when the collector runs (it sits in a
        # reference cycle), and one left open keeps its writes in the -wal file, which the next
        # connection to close (the store's) moves into the database file, changing its bytes.
        with closing(sqlite3.connect(parsed.database)) as database, database:
            database.execute(sql, params)
        return
    import psycopg

    with psycopg.connect(parsed.database, autocommit=True) as connection:
        connection.execute(sql.replace("?", "%s"), params)


def query_sql(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The rows of one query on the store's database, read behind its back."""
    parsed = parse_store_url(url)
    if parsed.backend == "sqlite":
        with closing(sqlite3.connect(parsed.database)) as database:
            return [tuple(row) for row in database.execute(sql, params).fetchall()]
    import psycopg

    with psycopg.connect(parsed.database, autocommit=True) as connection:
        return [tuple(row) for row in connection.execute(sql.replace("?", "%s"), params).fetchall()]


def test_the_query_columns_follow_every_change_of_a_message(store_url: str) -> None:
    # docs/store.md: the columns beside ``data`` are copies for queries; a host filters on them
    # with its own SQL. Only reading back ``data`` never noticed a stale copy.
    call = ToolCall(id="call-1", name="read", arguments={})
    columns = "SELECT id, pinned, pending, token_count FROM orion_messages WHERE conversation_id = ? ORDER BY position"
    with opened(store_url) as store:
        store.create("c1")
        store.extend(
            "c1",
            [
                Message.user("msg-1", "hi", timestamp=1),
                Message.assistant("msg-2", "", [call], timestamp=2),
                Message.pending_result("msg-3", "call-1", "read", timestamp=3).with_token_count(4),
            ],
        )
        assert store.set_pinned("c1", "msg-1", True)
        assert store.set_token_count("c1", "msg-2", 7)
        assert store.set_token_count("c1", "msg-3", 5)  # still pending
        assert query_sql(store_url, columns, ("c1",))[2] == ("msg-3", False, True, 5)
        store.resolve("c1", "call-1", "done")  # a resolved result is no longer pending, nor counted
        assert query_sql(store_url, columns, ("c1",)) == [
            ("msg-1", True, False, None),
            ("msg-2", False, False, 7),
            ("msg-3", False, False, None),
        ]
        assert store.set_pinned("c1", "msg-1", False)
        assert query_sql(store_url, columns, ("c1",))[0] == ("msg-1", False, False, None)


def chat(count: int, prefix: str = "m") -> list[Message]:
    """``count`` turns of a user message and an assistant reply."""
    out: list[Message] = []
    for turn in range(count):
        out.append(Message.user(f"{prefix}{2 * turn}", f"question {turn} " * 20, timestamp=turn))
        out.append(Message.assistant(f"{prefix}{2 * turn + 1}", f"answer {turn} " * 20, timestamp=turn))
    return out


# --------------------------------------------------------------------------------------------
# exactness


def test_every_golden_loads_back_byte_identical(store_url: str) -> None:
    with opened(store_url) as store:
        for path in GOLDENS:
            store.create(path.name)
            store.extend(path.name, load(path))
        for path in GOLDENS:
            assert dumps(store.load(path.name)) == path.read_bytes(), path


def test_each_row_holds_the_exact_dumps_message_text(store_url: str) -> None:
    messages = load(FIXTURES / "v0.7" / "edge-unicode-escapes.json")
    assert any(b"\\u0000" in dumps_message(m) for m in messages)  # the case jsonb refuses
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        rows = store._backend.run(Operation(False, lambda s: _rows(s, "c")))
    assert [data if isinstance(data, bytes) else data.encode() for _, data in rows] == [
        dumps_message(m) for m in messages
    ]


def _rows(s: Statements, conversation_id: str) -> Steps[list[Any]]:
    rows: list[Any] = yield s["all"], (conversation_id,), "all"
    return rows


def test_postgres_keeps_messages_in_a_json_column_never_jsonb(postgres_url: str) -> None:
    import psycopg

    with opened(postgres_url):
        pass
    schema = postgres_url.rsplit("%3D", 1)[1]
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        types = connection.execute(
            "SELECT table_name, data_type FROM information_schema.columns WHERE table_schema = %s "
            "AND column_name = 'data'",
            (schema,),
        ).fetchall()
    assert sorted(types) == [("orion_archived_messages", "json"), ("orion_messages", "json")]


def test_a_corrupt_row_raises_naming_the_conversation_and_position(store_url: str) -> None:
    with opened(store_url) as store:
        store.create("c1")
        store.extend("c1", chat(3))
        raw_sql(
            store_url,
            "UPDATE orion_messages SET data = ? WHERE conversation_id = ? AND position = ?",
            ('{"id":"m2","role":"robot","content":"x","timestamp":1}', "c1", 2),
        )
        with pytest.raises(FormatError) as caught:
            store.load("c1")
        assert caught.value.source == 'conversation "c1", position 2'
        assert "role" in str(caught.value)
        with pytest.raises(FormatError):
            store.load("c1", last=4)  # the window holding it fails too
        assert [m.id for m in store.load("c1", last=3)] == ["m3", "m4", "m5"]  # one without it loads


# --------------------------------------------------------------------------------------------
# conversations


def test_conversations_are_created_listed_described_and_deleted(store_url: str) -> None:
    with opened(store_url) as store:
        first = store.create("a", title="Trip", metadata={"user": 7, "tags": ["x"], "big": 2**70})
        second = store.create(metadata=[1, 2])
        assert len(second.id) == 32
        with pytest.raises(ConversationExists):
            store.create("a")
        store.extend("a", chat(2))
        info = store.info("a")
        assert (info.title, info.metadata, info.message_count) == (
            "Trip",
            {"user": 7, "tags": ["x"], "big": 2**70},
            4,
        )
        assert info.created == first.created
        assert info.updated >= first.updated
        oldest_first = sorted([first, second], key=lambda c: (c.created, c.id))
        assert [c.id for c in store.conversations()] == [c.id for c in oldest_first]
        store.delete("a")
        assert [c.id for c in store.conversations()] == [second.id]
        with pytest.raises(ConversationNotFound):
            store.info("a")
        with pytest.raises(ConversationNotFound):
            store.delete("a")


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.load("nope"),
        lambda s: s.load("nope", since="m"),  # the conversation is missing, not the message
        lambda s: s.load("nope", since="m", last=1),
        lambda s: s.append("nope", Message.user("m", "x")),
        lambda s: s.replace_messages("nope", []),
        lambda s: s.set_pinned("nope", "m", True),
        lambda s: s.set_token_count("nope", "m", 3),
        lambda s: s.resolve("nope", "call", "x"),
        lambda s: s.prune("nope"),
        lambda s: s.count_tokens("nope"),
        lambda s: s.load_archived("nope"),
        lambda s: s.update("nope", title="x"),
    ],
)
def test_every_call_on_a_missing_conversation_raises(sqlite_url: str, call: Any) -> None:
    with opened(sqlite_url) as store, pytest.raises(ConversationNotFound):
        call(store)


# --------------------------------------------------------------------------------------------
# messages


def test_append_extend_and_windows(store_url: str) -> None:
    messages = chat(5)
    with opened(store_url) as store:
        store.create("c")
        store.append("c", messages[0])
        store.extend("c", messages[1:])
        assert store.load("c") == messages
        assert store.load("c", last=3) == messages[-3:]
        assert store.load("c", last=0) == []
        assert store.load("c", last=100) == messages
        assert store.load("c", since="m6") == messages[7:]
        assert store.load("c", since="m2", last=2) == messages[-2:]
        after = len(messages) - 3  # the messages after m2 (m0, m1, m2 come first)
        for last in (after, after + 1, 2 * after - 1, 2 * after, 100):  # "the last `last` of those"
            assert store.load("c", since="m2", last=last) == messages[3:]
        assert store.load("c", since="m9") == []
        with pytest.raises(MessageNotFound):
            store.load("c", since="missing")
        with pytest.raises(ValueError, match="last"):
            store.load("c", last=-1)
        with pytest.raises(TypeError):
            store.extend("c", [messages[0], "not a message"])  # type: ignore[list-item]
        assert store.info("c").message_count == 10  # nothing of the refused batch was added


def test_replace_messages_is_atomic_and_positions_keep_growing(store_url: str) -> None:
    old, new = chat(3, "old"), chat(2, "new")
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", old)
        backend = store._backend

        def replace_then_fail(s: Statements) -> Steps[None]:
            from orion_messages import _store_ops

            yield from _store_ops.replace("c", new, False, "replace_messages").steps(s)
            raise RuntimeError("the host died mid-transaction")

        with pytest.raises(RuntimeError):
            backend.run(Operation(True, replace_then_fail))
        assert store.load("c") == old
        store.replace_messages("c", new)
        assert store.load("c") == new
        assert store.info("c").message_count == 4
        store.append("c", old[0])
        assert store.load("c") == [*new, old[0]]
        store.replace_messages("fresh", old, create=True)
        assert store.load("fresh") == old


def test_set_pinned_matches_the_in_memory_conversation(store_url: str) -> None:
    messages = chat(3)
    expected = Conversation(messages)
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        for message_id, pinned in [("m2", True), ("m2", True), ("m4", True), ("m2", False), ("zz", True)]:
            assert store.set_pinned("c", message_id, pinned) == expected.set_pinned(message_id, pinned)
        assert store.load("c") == list(expected)


def test_set_token_count_matches_the_in_memory_conversation(store_url: str) -> None:
    messages = chat(2)
    expected = Conversation(messages)
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        for message_id, count in [
            ("m1", 12),
            ("m1", 12),
            ("m2", 0),
            ("m1", None),
            ("zz", 5),
            ("m3", 4_294_967_295),
        ]:
            assert store.set_token_count("c", message_id, count) == expected.set_token_count(
                message_id, count
            )
        assert store.load("c") == list(expected)
        assert [m.token_count for m in store.load("c")] == [None, None, 0, 4_294_967_295]


def test_count_tokens_follows_what_changes_a_count_in_place(store_url: str) -> None:
    # The query column that count_tokens sums must follow the message: resolve clears the
    # placeholder's count (the text changed), set_token_count sets one. By hand: 5 + estimate.
    user = Message.user("m1", "hi", timestamp=1).with_token_count(5)
    placeholder = Message.pending_result("m2", "call-1", "t", timestamp=2).with_token_count(7)
    result_text = "x" * 400  # estimate_tokens: 400 characters / 4 = 100
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", [user, placeholder])
        assert store.count_tokens("c") == 12
        store.resolve("c", "call-1", result_text)
        assert store.count_tokens("c") == 5 + estimate_tokens(store.load("c")[1])
        assert estimate_tokens(store.load("c")[1]) >= 100
        assert store.set_token_count("c", "m2", 30)
        assert store.count_tokens("c") == 35


def test_resolve_in_place_matches_the_in_memory_conversation(store_url: str) -> None:
    messages = load(FIXTURES / "v0.8" / "pending-placeholders.json")
    pending = [m.tool_result.tool_call_id for m in messages if m.is_pending and m.tool_result is not None]
    assert pending
    expected = Conversation(messages)
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        assert store.resolve("c", pending[0], "42", is_error=True) == expected.resolve(
            pending[0], "42", is_error=True
        )
        assert store.load("c") == list(expected)
        with pytest.raises(ValueError, match="already resolved"):
            store.resolve("c", pending[0], "again")
        with pytest.raises(KeyError):
            store.resolve("c", "no-such-call", "x")
        assert store.load("c") == list(expected)


def test_prune_in_place_applies_plan_prune_and_archives(store_url: str) -> None:
    messages = [Message.system("sys", "be brief"), *chat(8)]
    messages[3] = messages[3].pin()
    config = ContextConfig(max_context_tokens=600, max_response_tokens=100)
    expected = plan_prune(messages, config)
    assert expected.dropped
    assert expected.kept
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        plan = store.prune("c", config, archive=True)
        assert plan == expected
        assert store.load("c") == expected.kept_messages(messages)
        assert store.load_archived("c") == expected.dropped_messages(messages)
        assert store.info("c").message_count == expected.kept_count
        store.create("d")
        store.extend("d", messages)
        store.prune("d", config)
        assert store.load("d") == expected.kept_messages(messages)
        assert store.load_archived("d") == []


WORKED = [  # docs/pruning.md's ChatML worked example
    Message.user("msg-1", "What is 2+3?", timestamp=1),
    Message.assistant("msg-2", "It is 5.", timestamp=2),
    Message.user("msg-3", "Thanks!", timestamp=3),
]


def test_prune_after_replace_messages_archives_every_dropped_message_in_order(store_url: str) -> None:
    # _store_ops.replace: "Positions keep growing, so an archived message never collides with a
    # new one"; load_archived gives "the messages pruning archived, in their original order".
    # Each prune is the worked example below (13 words available keep only the last turn), so
    # each drops its first two messages: by hand, msg-1 and msg-2, then msg-4 and msg-5.
    config = ContextConfig(max_context_tokens=13, max_response_tokens=0)
    options: dict[str, Any] = {"template": "chatml", "system_prompt": "Be brief.", "counter": count_words}
    again = [
        Message.user("msg-4", "What is 2+3?", timestamp=4),
        Message.assistant("msg-5", "It is 5.", timestamp=5),
        Message.user("msg-6", "Thanks!", timestamp=6),
    ]
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", WORKED)
        store.prune("c", config, archive=True, **options)
        store.replace_messages("c", again)
        plan = store.prune("c", config, archive=True, **options)
        assert plan.dropped == [range(0, 2)]
        assert [m.id for m in store.load("c")] == ["msg-6"]
        assert store.load_archived("c") == [*WORKED[:2], *again[:2]]
        assert store.info("c").message_count == 1


def test_prune_with_a_template_plans_as_orion_core(store_url: str) -> None:
    # Counted in words with ChatML and "Be brief.": fixed 4, turns 8 and 2; 13 available keeps
    # only the last turn (the worked example, by hand).
    config = ContextConfig(max_context_tokens=13, max_response_tokens=0)
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", WORKED)
        options: dict[str, Any] = {"template": "chatml", "system_prompt": "Be brief.", "counter": count_words}
        plan = store.prune("c", config, archive=True, **options)
        assert (plan.kept, plan.dropped, plan.fixed_tokens) == ([range(2, 3)], [range(0, 2)], 4)
        assert [m.id for m in store.load("c")] == ["msg-3"]
        assert [m.id for m in store.load_archived("c")] == ["msg-1", "msg-2"]

        async def pruned_async() -> list[str]:
            async with await open_async_store(store_url) as twin:
                await twin.create("d")
                await twin.extend("d", WORKED)
                await twin.prune("d", config, **options)
                return [m.id for m in await twin.load("d")]

        assert asyncio.run(pruned_async()) == ["msg-3"]


def test_every_write_to_one_conversation_leaves_another_as_it_was(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A message is never misplaced: each statement names its conversation. "b" holds messages
    # at the positions each call on "a" writes, reads or drops (0 to 5), an archive, a token
    # count and a pending result; after every call on "a", everything "b" holds is as it was.
    from orion_messages import _store_ops

    clock = iter(range(1_000, 100_000, 10))
    monkeypatch.setattr(_store_ops, "now_ms", lambda: next(clock))
    config = ContextConfig(max_context_tokens=13, max_response_tokens=0)  # as the worked example
    options: dict[str, Any] = {"template": "chatml", "system_prompt": "Be brief.", "counter": count_words}
    later = [
        Message.user("msg-4", "Again?", timestamp=4),
        Message.assistant("msg-5", "Yes.", timestamp=5),
        Message.pending_result("msg-6", "call-1", "f", timestamp=6),
    ]
    with opened(store_url) as store:
        store.create("b", title="kept", metadata={"b": 1})
        store.extend("b", WORKED)  # positions 0 to 2
        store.prune("b", config, archive=True, **options)  # msg-1 and msg-2 archived
        store.extend("b", later)  # positions 3 to 5
        assert store.set_token_count("b", "msg-3", 5)

        def b_now() -> tuple[Any, ...]:
            return store.info("b"), store.load("b"), store.load_archived("b"), store.count_tokens("b")

        b_before = b_now()
        assert [m.id for m in b_before[1]] == ["msg-3", "msg-4", "msg-5", "msg-6"]
        assert [m.id for m in b_before[2]] == ["msg-1", "msg-2"]
        calls: list[tuple[str, Any]] = [
            ("create", lambda: store.create("a", title="other", metadata={"a": 1})),
            ("extend", lambda: store.extend("a", WORKED)),  # positions 0 to 2
            ("replace_messages", lambda: store.replace_messages("a", WORKED)),  # positions 3 to 5
            ("prune", lambda: store.prune("a", config, archive=True, **options)),  # drops 3 and 4
            ("append", lambda: store.append("a", Message.pending_result("msg-4", "call-1", "f"))),
            ("set_pinned", lambda: store.set_pinned("a", "msg-3", True)),  # position 5
            ("set_token_count", lambda: store.set_token_count("a", "msg-3", 7)),
            ("resolve", lambda: store.resolve("a", "call-1", "done")),
            ("update", lambda: store.update("a", title="renamed", metadata={"a": 2})),
            ("delete", lambda: store.delete("a")),
        ]
        for name, call in calls:
            call()
            assert b_now() == b_before, name
            if name == "resolve":  # the rule of count_tokens, by hand: 7 counted, the rest estimated
                a_messages = store.load("a")
                assert [m.id for m in a_messages] == ["msg-3", "msg-4"]
                assert store.count_tokens("a") == 7 + estimate_tokens(a_messages[1])
                assert [m.id for m in store.load_archived("a")] == ["msg-1", "msg-2"]
                assert store.info("a").message_count == 2


def test_prune_refuses_the_summarize_strategy(store_url: str) -> None:
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", WORKED)
        summarize = ContextConfig(
            max_context_tokens=13, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE
        )
        with pytest.raises(
            ArgumentValueError, match=r"^the store's prune drops turns \(the sliding window\)"
        ):
            store.prune("c", summarize)
        assert store.load("c") == WORKED


def test_a_failed_prune_changes_nothing(store_url: str) -> None:
    messages = chat(4)

    def broken(message: Message) -> int:
        raise RuntimeError("tokenizer crashed")

    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        with pytest.raises(RuntimeError):
            store.prune("c", ContextConfig(max_context_tokens=300, max_response_tokens=10), count=broken)
        assert store.load("c") == messages


def test_count_tokens_agrees_with_the_token_counter(store_url: str) -> None:
    messages = load(FIXTURES / "v0.7" / "token-counts.json") + chat(2)
    assert any(m.token_count is not None for m in messages)
    assert any(m.token_count is None for m in messages)
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        assert store.count_tokens("c") == sum(
            TokenCounter(estimate_tokens, use_token_count=True).counts(messages)
        )
        assert store.count_tokens("c", count=lambda m: 1) == sum(
            1 if m.token_count is None else m.token_count for m in messages
        )


def test_count_tokens_asks_the_counter_only_for_messages_without_a_count(store_url: str) -> None:
    messages = [m.model_copy(update={"token_count": 7}) if i % 3 else m for i, m in enumerate(chat(6))]
    asked: list[str] = []

    def count(message: Message) -> int:
        asked.append(message.id)
        return 100

    with opened(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        # 4 of the 12 messages (indexes 0, 3, 6, 9) have no token_count; the others 7 each.
        assert store.count_tokens("c", count=count) == 4 * 100 + 8 * 7
        assert asked == ["m0", "m3", "m6", "m9"]


def test_a_counter_error_names_the_message_as_load_numbers_it(store_url: str) -> None:
    # Pruning leaves gaps in the stored positions; the error must still name the index that
    # load() gives the message, and its id.
    with opened(store_url) as store:
        store.create("c")
        store.extend("c", chat(6))
        store.prune("c", ContextConfig(max_context_tokens=150, max_response_tokens=10))
        kept = store.load("c")
        assert kept[0].id != "m0"
        with pytest.raises(ArgumentValueError, match=rf'message \[1\] \(id "{kept[1].id}"\)'):
            store.count_tokens("c", count=lambda m: -1 if m.id == kept[1].id else 1)


# --------------------------------------------------------------------------------------------
# async


def test_the_async_store_does_what_the_sync_one_does(store_url: str) -> None:
    messages = chat(4)

    async def scenario() -> tuple[list[Message], list[Message], int, bool]:
        store = await open_async_store(store_url)
        assert isinstance(store, AsyncConversationStore)
        assert repr(store) == f"<AsyncConversationStore {store.where!r}>"
        async with store:
            await store.create("c", title="async")
            await store.extend("c", messages[:-1])
            await store.append("c", messages[-1])
            pinned = await store.set_pinned("c", "m1", True)
            # Calls from several tasks at once take turns on the one connection.
            loads = await asyncio.gather(*(store.load("c", last=2) for _ in range(5)))
            assert all(window == loads[0] for window in loads)
            return await store.load("c"), loads[0], (await store.info("c")).message_count, pinned

    everything, window, count, pinned = asyncio.run(scenario())
    expected = Conversation(messages)
    expected.set_pinned("m1", True)
    assert (everything, window, count, pinned) == (list(expected), list(expected)[-2:], 8, True)
    with opened(store_url) as store:
        assert store.load("c") == list(expected)


# --------------------------------------------------------------------------------------------
# URLs


@pytest.mark.parametrize(
    ("url", "backend", "database", "conversation"),
    [
        ("sqlite:///chats.db", "sqlite", "chats.db", None),
        ("sqlite:////srv/data/chats.db?conversation=c1", "sqlite", "/srv/data/chats.db", "c1"),
        ("sqlite://", "sqlite", ":memory:", None),
        ("sqlite:///:memory:", "sqlite", ":memory:", None),
        ("sqlite:///my%20chats.db", "sqlite", "my chats.db", None),
        ("postgresql://me@db.example/chats", "postgresql", "postgresql://me@db.example/chats", None),
        (
            "postgres://me:secret@db:5433/chats?sslmode=require&conversation=c%202",
            "postgresql",
            "postgresql://me:secret@db:5433/chats?sslmode=require",
            "c 2",
        ),
        # Percent-decoded only, as the path and as libpq: a plus is a plus, not a space.
        ("sqlite:///my+chats.db?conversation=user+42", "sqlite", "my+chats.db", "user+42"),
        ("sqlite:///c.db?conversation=a%2Bb%20c", "sqlite", "c.db", "a+b c"),
        ("sqlite:///c.db?conversation=a=b", "sqlite", "c.db", "a=b"),
    ],
)
def test_store_urls(url: str, backend: str, database: str, conversation: str | None) -> None:
    parsed = parse_store_url(url)
    assert (parsed.backend, parsed.database, parsed.conversation) == (backend, database, conversation)
    assert "secret" not in parsed.display
    assert is_store_url(url)


@pytest.mark.parametrize("text", ["chat.json", "/srv/sqlite/x.jsonl", "C:\\chats\\a.json", "mysql://x/y"])
def test_paths_are_not_store_urls(text: str) -> None:
    assert not is_store_url(text)


def test_a_sqlite_url_with_a_host_or_unknown_parameter_is_refused() -> None:
    from orion_messages import StoreError

    with pytest.raises(StoreError, match="host"):
        parse_store_url("sqlite://server/chats.db")
    with pytest.raises(StoreError, match="mode"):
        parse_store_url("sqlite:///chats.db?mode=ro")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # Decoded strictly: U+FFFD in place of the byte would name another conversation or file.
        (
            "sqlite:///c.db?conversation=a%FFb",
            "sqlite:///c.db?conversation=a%FFb: conversation= is not UTF-8 once percent-decoded (%FF)",
        ),
        (
            "postgresql://me@db/chats?conversation=%C3",
            "postgresql://me@db/chats?conversation=%C3: conversation= is not UTF-8 once percent-decoded (%C3)",
        ),
        ("sqlite:///caf%E9.db", "sqlite:///caf%E9.db: the path is not UTF-8 once percent-decoded (%E9)"),
        ("sqlite:///%00x.db", "sqlite:///%00x.db: the path holds a NUL (%00), which no file name can"),
    ],
)
def test_a_url_that_cannot_name_a_file_or_conversation_is_refused(url: str, expected: str) -> None:
    from orion_messages import StoreError

    with pytest.raises(StoreError) as caught:
        parse_store_url(url)
    assert str(caught.value) == expected
    with pytest.raises(StoreError):
        open_store(url)  # not sqlite3's bare ValueError ("embedded null byte")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # f"sqlite:///{path}" with an empty path: read as memory, its data was lost on close.
        ("sqlite:///", "names no database file; write sqlite:///PATH, or sqlite:// for one in memory"),
        ("sqlite:///?conversation=c", "names no database file"),
        # Forms docs/store.md does not give were read as memory or as a relative file.
        ("sqlite:", "expected sqlite:///PATH, sqlite:////ABSOLUTE/PATH or sqlite:// (in memory)"),
        ("sqlite:/", "expected sqlite:///PATH"),
        ("sqlite:chats.db", "expected sqlite:///PATH"),
        ("sqlite:/srv/chats.db", "expected sqlite:///PATH"),
        # Either value kept would silently ignore the other.
        ("sqlite:///c.db?conversation=a&conversation=b", "conversation= is given twice; give one"),
        ("postgresql://me@db/chats?conversation=a&conversation=a", "conversation= is given twice"),
    ],
)
def test_a_sqlite_url_of_an_undocumented_form_is_refused(url: str, expected: str) -> None:
    from orion_messages import StoreError

    with pytest.raises(StoreError, match=f"^{re.escape(url)}: {re.escape(expected)}"):
        parse_store_url(url)


def test_in_memory_is_a_property_of_the_url() -> None:
    assert parse_store_url("sqlite://").in_memory
    assert parse_store_url("sqlite:///:memory:?conversation=c").in_memory
    assert not parse_store_url("sqlite:///chats.db").in_memory
    assert not parse_store_url("postgresql://me@db/chats").in_memory


def test_opening_sqlite_uses_wal_and_a_busy_timeout(tmp_path: Path) -> None:
    with opened(f"sqlite:///{tmp_path / 'c.db'}") as store:
        connection = store._backend._connection  # type: ignore[attr-defined]
        assert connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert connection.execute("PRAGMA busy_timeout").fetchone()[0] >= 1000


def test_a_store_in_a_missing_folder_is_a_store_error_naming_it(tmp_path: Path) -> None:
    # Every error the store raises on purpose is an OrionMessagesError; the OSError is its cause.
    missing = tmp_path / "nowhere" / "chats.db"
    from orion_messages import StoreError

    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{missing}")
    assert str(caught.value) == f"{missing}: no such folder for the store's database"
    assert isinstance(caught.value.__cause__, FileNotFoundError)
    assert caught.value.__cause__.filename == str(missing)
    assert not missing.parent.exists()


def test_without_a_server_the_postgres_tests_skip_but_fail_under_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    from .conftest import _unavailable

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="no PostgreSQL server: because"):
        _unavailable("because")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI is set"):
        _unavailable("because")


def _comparable(value: Any) -> Any:
    """A call's result with the clock left out (ConversationInfo times differ between two runs)."""
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if hasattr(value, "message_count"):
        return (value.id, value.title, value.metadata, value.message_count)
    return value


def _scenario() -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    pending = Message.pending_result("p1", "call-1", "tool", timestamp=5)
    config = ContextConfig(max_context_tokens=500, max_response_tokens=100)
    return [
        ("create", ("c",), {"title": "t", "metadata": {"k": [1]}}),
        ("create", ("d",), {}),
        ("update", ("c",), {"title": "renamed"}),
        ("update", ("d",), {"title": "d", "metadata": [1, {"2": None}]}),
        ("update", ("c",), {"metadata": None}),
        ("extend", ("c", [*chat(6), pending]), {}),
        ("append", ("c", Message.user("last", "bye", timestamp=9)), {}),
        ("set_pinned", ("c", "m2", True), {}),
        ("set_token_count", ("c", "m3", 17), {}),
        ("resolve", ("c", "call-1", "done"), {"is_error": True}),
        ("count_tokens", ("c",), {}),
        ("count_tokens", ("c",), {"count": lambda m: len(m.content)}),
        ("load", ("c",), {"last": 3}),
        ("load", ("c",), {"since": "m8"}),
        ("prune", ("c", config), {"archive": True}),
        ("load", ("c",), {}),
        ("load_archived", ("c",), {}),
        ("replace_messages", ("d", chat(2)), {}),
        ("replace_messages", ("e", chat(1)), {"create": True}),
        ("info", ("c",), {}),
        ("conversations", (), {}),
        ("count_conversations", (), {}),
        ("conversation_ids", (), {}),
        ("conversation_ids", (), {"limit": 1, "after": "c"}),
        ("unusable_conversation_ids", (), {}),
        ("delete", ("d",), {}),
        ("conversations", (), {}),
        ("count_conversations", (), {}),
        ("conversation_ids", (), {"after": "d"}),
    ]


def test_every_async_call_matches_its_sync_twin(store_url: str, sqlite_url: str) -> None:
    sync_url = sqlite_url if store_url != sqlite_url else sqlite_url.replace("chats.db", "twin.db")
    with opened(sync_url) as store:
        expected = [_comparable(getattr(store, name)(*args, **kwargs)) for name, args, kwargs in _scenario()]

    async def run() -> list[Any]:
        async with await open_async_store(store_url) as store:
            return [
                _comparable(await getattr(store, name)(*args, **kwargs)) for name, args, kwargs in _scenario()
            ]

    assert asyncio.run(run()) == expected
    names = {name for name, _, _ in _scenario()}
    public = {
        name
        for name in vars(ConversationStore)
        if not name.startswith("_") and name not in ("close", "where")
    }
    assert public == names  # the scenario calls every operation
    assert public <= set(vars(AsyncConversationStore))
