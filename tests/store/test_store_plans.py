"""The lookups by message id and tool call id search their index, on both databases.

``load(since=...)``, ``set_pinned`` and ``resolve`` find their messages with the statements
``LOOKUPS`` names. Each must search the ``(conversation_id, id)`` or ``(conversation_id,
tool_call_id)`` index for the few matching rows, never walk the conversation's primary key
through every row (a cost that grows with the conversation, paid on every step of an agent:
SQLite did that while the statements said ``ORDER BY position``). The statements are taken from
``_store_sql`` as the store runs them, and the plans from the databases themselves. Sorting the
matches must still put the first by position first, whatever order the index holds them in.

A page of ``conversations(limit=..., after=...)`` must read its rows from the
``(created_ms, id)`` index in the listing's order, never sort every conversation; and the
windows of ``load(last=...)`` and ``load(since=..., last=...)`` must read the primary key
backwards from the conversation's end, never every row.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from orion_messages import Conversation, Message, ToolCall
from orion_messages._store_sql import POSTGRES, SQLITE, Statements, statements
from orion_messages.store import open_store, parse_store_url

LOOKUPS = {
    "position_of": "orion_messages_by_id",  # load(since=...)
    "by_id": "orion_messages_by_id",  # set_pinned; load(since=...) for an id holding U+FFFD
    "by_tool_call": "orion_messages_by_tool_call",  # resolve, when no result is pending
    "pending_by_tool_call": "orion_messages_by_tool_call",  # resolve, where a key is shared
    "first_pending_by_tool_call": "orion_messages_by_tool_call",  # resolve, the common case
}
COLUMN = {"orion_messages_by_id": "id", "orion_messages_by_tool_call": "tool_call_id"}
TURNS = 300


def lookups(s: Statements) -> dict[str, str]:
    """The statements reading messages by conversation and an indexed column, with that index."""
    index = {column: name for name, column in COLUMN.items()}
    found = {}
    for name, sql in s.items():
        match = re.search(r"FROM orion_messages WHERE conversation_id = \S+ AND (\w+) = ", sql)
        if match and match.group(1) in index:
            found[name] = index[match.group(1)]
    return found


@pytest.mark.parametrize("dialect", [SQLITE, POSTGRES], ids=lambda d: d.name)
def test_every_lookup_by_an_indexed_column_is_checked(dialect: Any) -> None:
    assert lookups(statements(dialect)) == LOOKUPS


def agent_turns(count: int) -> list[Message]:
    """``count`` turns of a question, a tool call, its result and an answer."""
    out: list[Message] = []
    for turn in range(count):
        call = ToolCall(id=f"call-{turn}", name="read_file", arguments={"path": f"f{turn}"})
        out += [
            Message.user(f"u{turn}", f"question {turn}", timestamp=turn),
            Message.assistant(f"a{turn}", "", [call], timestamp=turn),
            Message.tool_result_message(f"r{turn}", call.id, call.name, f"body {turn}", timestamp=turn),
            Message.assistant(f"b{turn}", f"answer {turn}", timestamp=turn),
        ]
    return out


def parameters(name: str) -> tuple[str, str]:
    """A lookup's parameters: a message or call in the middle of conversation ``c``."""
    return ("c", f"call-{TURNS // 2}" if LOOKUPS[name] == "orion_messages_by_tool_call" else f"u{TURNS // 2}")


def fill(url: str) -> None:
    """Conversation ``c`` of ``TURNS`` turns and a smaller ``other``, through the store's own extend."""
    with open_store(url) as store:
        store.create("c")
        store.extend("c", agent_turns(TURNS))
        store.create("other")
        store.extend("other", agent_turns(20))


# --------------------------------------------------------------------------------------------
# SQLite


@pytest.mark.parametrize("analyzed", [False, True], ids=["no statistics", "after ANALYZE"])
@pytest.mark.parametrize("name", sorted(LOOKUPS))
def test_sqlite_searches_the_index_of_the_lookup(sqlite_url: str, name: str, analyzed: bool) -> None:
    fill(sqlite_url)
    index = LOOKUPS[name]
    with sqlite3.connect(parse_store_url(sqlite_url).database) as connection:
        if analyzed:  # the store never runs ANALYZE, but a host's `PRAGMA optimize` may
            connection.execute("ANALYZE")
        sql = statements(SQLITE)[name]
        details = [row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", parameters(name))]
    search = re.compile(
        rf"SEARCH orion_messages USING (COVERING )?INDEX {index} \(conversation_id=\? AND {COLUMN[index]}=\?\)"
    )
    assert [detail for detail in details if search.fullmatch(detail)], details
    assert not [detail for detail in details if detail.startswith("SCAN")], details
    primary_key = ("sqlite_autoindex", "PRIMARY KEY")
    assert not [detail for detail in details if any(name in detail for name in primary_key)], details


# --------------------------------------------------------------------------------------------
# PostgreSQL


def generic(sql: str) -> str:
    """``sql`` with ``$1, $2...`` for psycopg's ``%s``, for ``PREPARE``."""
    parts = sql.split("%s")
    return parts[0] + "".join(f"${number}{part}" for number, part in enumerate(parts[1:], 1))


def postgres_plan(connection: Any, sql: str, values: Sequence[Any], plan: str, label: str) -> str:
    """PostgreSQL's plan of ``sql`` with ``values``, as text: ``custom``, planned for the values
    as the first executions are, or ``generic``, the plan a prepared statement may settle on
    after five executions (prepared as ``label``)."""
    if plan == "custom":
        rows = connection.execute(f"EXPLAIN {sql}", values).fetchall()
    else:
        connection.execute("SET plan_cache_mode = force_generic_plan")
        connection.execute(f"PREPARE {label} AS {generic(sql)}")
        listed = ", ".join(f"'{value}'" for value in values)
        rows = connection.execute(f"EXPLAIN EXECUTE {label}({listed})").fetchall()
    return "\n".join(row[0] for row in rows)


@pytest.mark.parametrize("plan", ["custom", "generic"])
@pytest.mark.parametrize("name", sorted(LOOKUPS))
def test_postgres_searches_the_index_of_the_lookup(postgres_url: str, name: str, plan: str) -> None:
    import psycopg

    fill(postgres_url)
    index = LOOKUPS[name]
    sql = statements(POSTGRES)[name]
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("ANALYZE orion_messages")
        text = postgres_plan(connection, sql, parameters(name), plan, "lookup")
    assert re.search(rf"Index (Only )?Scan (using|on) {index}\b", text), text
    assert re.search(rf"Index Cond: \(\(conversation_id = .+\) AND \({COLUMN[index]} = .+\)\)", text), text
    assert "Seq Scan" not in text, text
    assert "orion_messages_pkey" not in text, text


# --------------------------------------------------------------------------------------------
# the order of the matches


@contextmanager
def connection_to(url: str) -> Iterator[Any]:
    """A DB-API connection (autocommit) to the store's database, behind the store's back."""
    parsed = parse_store_url(url)
    if parsed.backend == "sqlite":
        sqlite = sqlite3.connect(parsed.database, isolation_level=None)
        try:
            yield sqlite
        finally:
            sqlite.close()
        return
    import psycopg

    with psycopg.connect(parsed.database, autocommit=True) as postgres:
        yield postgres


def in_index_order(connection: Any, backend: str, index: str, value: str) -> list[int]:
    """The positions of ``c``'s rows with ``value`` in ``index``'s column, in the index's order."""
    column = COLUMN[index]
    if backend == "sqlite":
        sql = f"SELECT position FROM orion_messages INDEXED BY {index} WHERE conversation_id = 'c' AND {column} = ?"
        return [row[0] for row in connection.execute(sql, (value,))]
    connection.execute("SET enable_seqscan = off")
    connection.execute("SET enable_bitmapscan = off")
    sql = f"SELECT position FROM orion_messages WHERE conversation_id = 'c' AND {column} = %s"
    assert index in "".join(row[0] for row in connection.execute(f"EXPLAIN {sql}", (value,)))
    return [row[0] for row in connection.execute(sql, (value,))]


def test_the_first_match_by_position_stays_first_whatever_the_index_order(store_url: str) -> None:
    call = ToolCall(id="call", name="read_file", arguments={})
    messages = [
        Message.user("dup", "first", timestamp=1),
        Message.assistant("a", "", [call], timestamp=2),
        Message.pending_result("r1", "call", "read_file", timestamp=3),
        Message.user("dup", "second", timestamp=4),
        Message.pending_result("r2", "call", "read_file", timestamp=5),
        Message.user("z", "last", timestamp=6),
    ]
    backend = parse_store_url(store_url).backend
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        # Move the first matches (positions 0 and 2) behind the second ones in the indexes: taken
        # out and put back, they get a later rowid (SQLite) or heap slot (PostgreSQL).
        with connection_to(store_url) as connection:
            for sql in (
                "CREATE TEMP TABLE moved AS SELECT * FROM orion_messages "
                "WHERE conversation_id = 'c' AND position IN (0, 2)",
                "DELETE FROM orion_messages WHERE conversation_id = 'c' AND position IN (0, 2)",
                "INSERT INTO orion_messages SELECT * FROM moved",
            ):
                connection.execute(sql)
            assert in_index_order(connection, backend, "orion_messages_by_id", "dup") == [3, 0]
            assert in_index_order(connection, backend, "orion_messages_by_tool_call", "call") == [4, 2]
        expected = Conversation(messages)
        assert store.load("c") == messages
        assert store.load("c", since="dup") == messages[1:]
        assert store.set_pinned("c", "dup", True) is expected.set_pinned("dup", True) is True
        assert store.resolve("c", "call", "done") == expected.resolve("call", "done")
        stored = store.load("c")
        assert stored == list(expected)
        assert (stored[0].pinned, stored[3].pinned) == (True, False)
        assert (stored[2].is_pending, stored[4].is_pending) == (False, True)


# --------------------------------------------------------------------------------------------
# the pages of conversations()

# The statements reading a page of conversations (``conversations(limit=...)``, with ``after``
# or without; ``conversation_ids``' pages of ids alike), each with the number of its parameters:
# a page of 20 after a conversation in the middle.
PAGES = {"page": 1, "page_after": 3, "id_page": 2}
LISTING_INDEX = "orion_conversations_by_created"
# The index each page reads: the listing's, or for the ids alone the primary key's.
PAGE_INDEX = {"page": LISTING_INDEX, "page_after": LISTING_INDEX}
CONVERSATIONS = 300


def fill_conversations(url: str) -> tuple[Any, ...]:
    """``CONVERSATIONS`` conversations, through the store's own create; the ``page_after``
    parameters of a page of 20 after the one in the middle."""
    with open_store(url) as store:
        for number in range(CONVERSATIONS):
            store.create(f"c{number:04}", title=f"chat {number}", metadata={"user": number})
        middle = store.info(f"c{CONVERSATIONS // 2:04}")
    return middle.created, middle.id, 20


def page_parameters(name: str, after: tuple[Any, ...]) -> tuple[Any, ...]:
    """The parameters of the page statement ``name``: the last of ``fill_conversations``' ones."""
    return after[-PAGES[name] :]


def test_every_page_statement_is_checked() -> None:
    for dialect in (SQLITE, POSTGRES):
        paged = {
            name
            for name, sql in statements(dialect).items()
            if re.search(r"orion_conversations .*LIMIT", sql)
        }
        assert paged == set(PAGES)


@pytest.mark.parametrize("analyzed", [False, True], ids=["no statistics", "after ANALYZE"])
def test_sqlite_reads_a_page_from_its_index(sqlite_url: str, analyzed: bool) -> None:
    after = fill_conversations(sqlite_url)
    expected = {
        "page": rf"SCAN orion_conversations USING INDEX {LISTING_INDEX}",
        "page_after": rf"SEARCH orion_conversations USING INDEX {LISTING_INDEX} \(\(created_ms,id\)>\(\?,\?\)\)",
        # The ids alone are in the primary key's index: it covers them.
        "id_page": r"SEARCH orion_conversations USING COVERING INDEX sqlite_autoindex_orion_conversations_1 "
        r"\(id>\?\)",
    }
    with sqlite3.connect(parse_store_url(sqlite_url).database) as connection:
        if analyzed:
            connection.execute("ANALYZE")
        for name in PAGES:
            sql = statements(SQLITE)[name]
            plan = [
                row[3]
                for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", page_parameters(name, after))
            ]
            # One step, in the index's order: no sort of every conversation (USE TEMP B-TREE).
            assert len(plan) == 1, (name, plan)
            assert re.fullmatch(expected[name], plan[0]), (name, plan)


@pytest.mark.parametrize("plan", ["custom", "generic"])
def test_postgres_reads_a_page_from_its_index(postgres_url: str, plan: str) -> None:
    import psycopg

    after = fill_conversations(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("ANALYZE orion_conversations")
        for name in PAGES:
            sql = statements(POSTGRES)[name]
            text = postgres_plan(connection, sql, page_parameters(name, after), plan, f"page_{name}")
            index = PAGE_INDEX.get(name, "orion_conversations_pkey")
            assert re.search(rf"Index (Only )?Scan using {index}\b", text), text
            if name == "page_after":
                assert re.search(r"Index Cond: \(+ROW\(created_ms, id\) > ROW\(.+\)\)", text), text
            if name == "id_page":
                assert re.search(r"Index Cond: \(+id > ", text), text
            assert "Sort" not in text, text
            assert "Seq Scan" not in text, text


# --------------------------------------------------------------------------------------------
# the windows of load(last=...) and load(since=..., last=...)

# Each window statement with its parameters: the last 20 of conversation ``c``, after position 600.
WINDOWS = {"last": ("c", 20), "last_after": ("c", 600, 20)}


@pytest.mark.parametrize("analyzed", [False, True], ids=["no statistics", "after ANALYZE"])
def test_sqlite_reads_a_window_from_the_primary_key_s_end(sqlite_url: str, analyzed: bool) -> None:
    fill(sqlite_url)
    with sqlite3.connect(parse_store_url(sqlite_url).database) as connection:
        if analyzed:
            connection.execute("ANALYZE")
        for name, values in WINDOWS.items():
            sql = statements(SQLITE)[name]
            plan = [row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", values)]
            # One search of the primary key, in its order (walked backwards): no sort of the rows.
            assert len(plan) == 1, (name, plan)
            assert re.fullmatch(
                r"SEARCH orion_messages USING INDEX sqlite_autoindex_orion_messages_1 "
                r"\(conversation_id=\?( AND position>\?)?\)",
                plan[0],
            ), (name, plan)


@pytest.mark.parametrize("plan", ["custom", "generic"])
def test_postgres_reads_a_window_from_the_primary_key_s_end(postgres_url: str, plan: str) -> None:
    import psycopg

    fill(postgres_url)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("ANALYZE orion_messages")
        for name, values in WINDOWS.items():
            sql = statements(POSTGRES)[name]
            text = postgres_plan(connection, sql, values, plan, f"window_{name}")
            assert re.search(r"Limit .*\n\s*->  Index Scan Backward using orion_messages_pkey\b", text), text
            assert "Sort" not in text, text
            assert "Seq Scan" not in text, text
