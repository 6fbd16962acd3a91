"""The store's answers to an audit: URLs libpq can read, masked passwords, a literal ``#``,
checked arguments, U+0000 in ids, closing twice, and corrupt rows that must not merge.

Every expectation is written from docs/store.md, not from the code's output.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    FormatError,
    Message,
    StoreError,
    UnknownKeyWarning,
    dumps_message,
)
from orion_messages.cli import main
from orion_messages.store import ConversationStore, masked_url, open_async_store, open_store, parse_store_url

from ..conftest import FIXTURES
from .test_store import raw_sql

GOLDEN = FIXTURES / "v0.7" / "tool-loop-parallel.json"


@pytest.fixture
def store(store_url: str) -> Iterator[ConversationStore]:
    with open_store(store_url) as opened:
        opened.create("c1")
        opened.append("c1", Message.user("msg-1", "hello", timestamp=1))
        yield opened


# --------------------------------------------------------------------------------------------
# URLs


def test_a_postgresql_url_without_a_host_reaches_the_server(postgres_url: str) -> None:
    parts = urlsplit(postgres_url)
    hostless = f"postgresql:///postgres?host={parts.hostname}&port={parts.port}&user=postgres&{parts.query}"
    with open_store(hostless) as store:
        store.create("c1")
    with open_store(postgres_url) as store:
        assert [c.id for c in store.conversations()] == ["c1"]  # the same database and schema


def test_the_libpq_url_keeps_its_slashes_and_parameters_as_written() -> None:
    parsed = parse_store_url("postgresql:///postgres?host=/sock/dir&port=55432&conversation=c1&user=me")
    assert parsed.database == "postgresql:///postgres?host=/sock/dir&port=55432&user=me"
    assert parsed.conversation == "c1"


def test_passwords_are_masked_in_both_forms() -> None:
    parsed = parse_store_url("postgresql://me:s3cret@db.example/chats?password=hunter2&conversation=c1")
    assert parsed.display == "postgresql://me:***@db.example/chats?password=***&conversation=c1"
    assert "s3cret" in parsed.database
    assert "hunter2" in parsed.database


def test_a_password_holding_a_question_mark_is_masked_and_other_values_are_whole() -> None:
    # libpq reads the user information up to the first "@" before any "/": "pa?ss" is the password.
    assert masked_url("postgresql://me:pa?ss@db/chats") == "postgresql://me:***@db/chats"
    # Only a whole value equal to the password is masked, not one that starts like it.
    assert masked_url("postgresql://me:abc@db/x?application_name=abcd") == (
        "postgresql://me:***@db/x?application_name=abcd"
    )


def test_where_masks_a_password_parameter(postgres_url: str) -> None:
    with open_store(f"{postgres_url}&password=hunter2") as store:
        assert "hunter2" not in store.where
        assert "password=***" in store.where
        assert repr(store) == f"<ConversationStore {store.where!r}>"  # shows the masked URL only


def test_the_command_line_never_prints_a_password(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parts = urlsplit(postgres_url)
    url = f"postgresql://postgres:s3cret@{parts.netloc.split('@')[1]}{parts.path}?{parts.query}"
    assert main(["convert", str(GOLDEN), f"{url}&password=hunter2&conversation=c1"]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out
    assert "postgres:***@" in out
    assert "password=***" in out
    assert "s3cret" not in out
    assert "hunter2" not in out


def test_a_connection_error_on_the_command_line_hides_the_password(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Port 1 on the local machine: nothing listens, so the driver's own error is shown.
    url = "postgresql://me:s3cret@127.0.0.1:1/db?password=hunter2&connect_timeout=3&conversation=c"
    assert main(["stats", url]) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "error:" in text
    assert "s3cret" not in text
    assert "hunter2" not in text


def test_a_driver_message_of_several_lines_is_shown_on_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # libpq says "...Connection refused\n\tIs the server running...": neither a raw newline
    # nor its escaped form reaches the terminal, and the hint on the second line is kept.
    assert main(["list", "postgresql://me@127.0.0.1:1/db?connect_timeout=3"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.endswith("\n")
    assert "\\n" not in err
    assert "\\t" not in err
    assert "; Is the server running" in err


def test_a_hash_is_part_of_the_sqlite_path(tmp_path: Path) -> None:
    open_store(f"sqlite:///{tmp_path}/chats#1.db").close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".db") == ["chats#1.db"]


def test_a_hash_is_part_of_the_conversation_id() -> None:
    assert parse_store_url("sqlite:///chats.db?conversation=a#b").conversation == "a#b"


def test_an_empty_conversation_parameter_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(StoreError, match="conversation= names no conversation"):
        parse_store_url("sqlite:///c.db?conversation=")
    assert main(["convert", str(GOLDEN), f"sqlite:///{tmp_path}/c.db?conversation="]) == 1
    assert "names no conversation" in capsys.readouterr().err
    assert not (tmp_path / "c.db").exists()


def test_a_path_object_is_refused_with_the_url_to_write(tmp_path: Path) -> None:
    with pytest.raises(ArgumentTypeError, match=r"a store URL is a str such as 'sqlite:///chats.db'"):
        open_store(tmp_path / "x.db")  # type: ignore[arg-type]
    assert not (tmp_path / "x.db").exists()


# --------------------------------------------------------------------------------------------
# arguments

BAD_IDS: list[Any] = [123, None, ""]

CALLS: list[tuple[str, Callable[[ConversationStore, Any], object]]] = [
    ("info", lambda s, i: s.info(i)),
    ("update", lambda s, i: s.update(i, title="x")),
    ("delete", lambda s, i: s.delete(i)),
    ("append", lambda s, i: s.append(i, Message.user("m", "x", timestamp=1))),
    ("extend", lambda s, i: s.extend(i, [])),
    ("load", lambda s, i: s.load(i)),
    ("load_archived", lambda s, i: s.load_archived(i)),
    ("replace_messages", lambda s, i: s.replace_messages(i, [], create=True)),
    ("set_pinned", lambda s, i: s.set_pinned(i, "msg-1", True)),
    ("resolve", lambda s, i: s.resolve(i, "call", "done")),
    ("prune", lambda s, i: s.prune(i)),
    ("count_tokens", lambda s, i: s.count_tokens(i)),
]


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize(("name", "call"), CALLS, ids=[name for name, _ in CALLS])
def test_every_call_checks_the_conversation_id(
    store: ConversationStore, name: str, call: Callable[[ConversationStore, Any], object], bad: Any
) -> None:
    with pytest.raises(ArgumentTypeError, match=f"a conversation id is a non-empty str, got {bad!r}"):
        call(store, bad)
    assert [c.id for c in store.conversations()] == ["c1"]


def test_the_async_calls_check_the_conversation_id(sqlite_url: str) -> None:
    async def run() -> None:
        async with await open_async_store(sqlite_url) as store:
            with pytest.raises(ArgumentTypeError, match="a conversation id is a non-empty str"):
                await store.load(123)  # type: ignore[arg-type]
            with pytest.raises(ArgumentTypeError, match="a conversation id is a non-empty str"):
                await store.info(None)  # type: ignore[arg-type]

    asyncio.run(run())


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (
            lambda s: s.extend("c1", 5),
            ArgumentTypeError,
            "ConversationStore.extend: expected an iterable of Message",
        ),
        (
            lambda s: s.replace_messages("c1", None),
            ArgumentTypeError,
            "ConversationStore.replace_messages: expected an iterable of Message",
        ),
        (lambda s: s.load("c1", last=2**63), ArgumentValueError, "last must be at most 2\\*\\*63 - 1"),
        (lambda s: s.create("x", metadata="\ud800"), ArgumentTypeError, "metadata must be a JSON value"),
        (lambda s: s.create("x", title=5), ArgumentTypeError, "title must be a str, got int 5"),
        (lambda s: s.set_pinned("c1", 5, True), ArgumentTypeError, "message_id must be a str, got int 5"),
        (lambda s: s.load("c1", since=5), ArgumentTypeError, "since \\(a message id\\) must be a str"),
        (lambda s: s.info("\ud800"), ArgumentValueError, "a conversation id must be valid Unicode"),
        (lambda s: s.prune("c1", archive="yes"), ArgumentTypeError, "archive must be a bool, got str 'yes'"),
    ],
)
def test_wrong_arguments_say_what_was_expected(
    store: ConversationStore, call: Callable[[ConversationStore], object], error: type[Exception], text: str
) -> None:
    with pytest.raises(error, match=text):
        call(store)
    assert [c.id for c in store.conversations()] == ["c1"]
    assert [m.id for m in store.load("c1")] == ["msg-1"]


def test_create_returns_what_is_stored(store: ConversationStore) -> None:
    created = store.create("t", title="Title", metadata={1: (2, 3)})
    assert created.metadata == {"1": [2, 3]}  # as JSON reads it back
    assert store.info("t") == created


# --------------------------------------------------------------------------------------------
# U+0000 in ids (valid JSON text; PostgreSQL's text columns refuse it)


def test_a_pending_result_is_found_past_one_whose_call_id_shares_its_key(store_url: str) -> None:
    # On PostgreSQL "c\x00d" is stored as "c\ufffdd" in the tool_call_id column: resolving
    # "c\ufffdd" reads the first pending row with that key, "c\x00d"'s, and must look past it.
    messages = [
        Message.pending_result("r\x00", "c\x00d", "tool", timestamp=1),
        Message.pending_result("r\ufffd", "c\ufffdd", "tool", timestamp=2),
    ]
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        assert store.resolve("c", "c\ufffdd", "done").id == "r\ufffd"
        assert [m.is_pending for m in store.load("c")] == [True, False]


def test_a_pending_result_found_past_a_shared_key_is_never_a_completed_one(store_url: str) -> None:
    # Resolving "c\x00d" on PostgreSQL reads the first pending row with its key, "c\ufffdd"'s,
    # and looks on: among the pending results only, as Conversation.resolve fills the pending
    # one. By hand: r2 is filled in; r0, completed before it with the same call id, stays.
    messages = [
        Message.tool_result_message("r0", "c\x00d", "tool", "old", timestamp=1),
        Message.pending_result("r1", "c\ufffdd", "tool", timestamp=2),
        Message.pending_result("r2", "c\x00d", "tool", timestamp=3),
    ]
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        assert store.resolve("c", "c\x00d", "done").id == "r2"
        assert [(m.is_pending, m.content) for m in store.load("c")] == [
            (False, "old"),
            (True, ""),
            (False, "done"),
        ]


def test_ids_holding_u0000_are_stored_and_found(store_url: str) -> None:
    messages = [
        Message.user("a\x00b", "first", timestamp=1),
        Message.user("a\ufffdb", "second", timestamp=2),  # what U+0000 becomes in PostgreSQL's id column
        Message.pending_result("r\x00", "c\x00d", "tool", timestamp=3),
        Message.pending_result("r\ufffd", "c\ufffdd", "tool", timestamp=4),
    ]
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        assert [dumps_message(m) for m in store.load("c")] == [dumps_message(m) for m in messages]
        assert [m.id for m in store.load("c", since="a\x00b")] == ["a\ufffdb", "r\x00", "r\ufffd"]
        assert [m.id for m in store.load("c", since="a\ufffdb")] == ["r\x00", "r\ufffd"]
        assert store.set_pinned("c", "a\ufffdb", True)
        assert [m.pinned for m in store.load("c")] == [False, True, False, False]
        assert store.resolve("c", "c\x00d", "done").id == "r\x00"
        assert [m.is_pending for m in store.load("c")] == [False, False, False, True]
        assert not store.set_pinned("c", "a\x00", True)


def test_an_id_holding_u0000_is_not_taken_for_the_id_without_it(store_url: str) -> None:
    # "a\x00b" is another id than "ab" (and than "a\ufffdb"): load(since=...) starts right after
    # the message named, whichever of them comes first. By hand, from the order below.
    messages = [
        Message.user("ab", "first", timestamp=1),
        Message.user("a\ufffdb", "second", timestamp=2),
        Message.user("a\x00b", "third", timestamp=3),
        Message.user("c", "fourth", timestamp=4),
    ]
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        assert [m.id for m in store.load("c", since="a\x00b")] == ["c"]
        assert [m.id for m in store.load("c", since="a\ufffdb")] == ["a\x00b", "c"]
        assert [m.id for m in store.load("c", since="ab", last=1)] == ["c"]
        assert store.set_pinned("c", "a\x00b", True)
        assert [m.pinned for m in store.load("c")] == [False, False, True, False]


# --------------------------------------------------------------------------------------------
# closing


def test_the_async_sqlite_store_closes_twice_and_then_refuses_calls(sqlite_url: str) -> None:
    async def run() -> None:
        store = await open_async_store(sqlite_url)
        await store.close()
        await store.close()
        with pytest.raises(StoreError, match="the store is closed") as caught:
            await store.conversations()
        assert str(caught.value).startswith(store.where)

    asyncio.run(run())


def test_the_async_postgresql_store_refuses_calls_once_closed(postgres_url: str) -> None:
    async def run() -> None:
        store = await open_async_store(postgres_url)
        await store.close()
        await store.close()
        with pytest.raises(StoreError, match="the store is closed"):
            await store.conversations()

    asyncio.run(run())


def test_a_closed_store_refuses_calls_with_a_store_error(store_url: str) -> None:
    store = open_store(store_url)
    store.close()
    store.close()
    with pytest.raises(StoreError, match="the store is closed") as caught:
        store.create("c1")
    assert str(caught.value) == f"{store.where}: the store is closed"


# --------------------------------------------------------------------------------------------
# corrupt rows


def test_two_complementary_corrupt_rows_are_not_merged(sqlite_url: str) -> None:
    # SQLite only: PostgreSQL's json column refuses a row that is not one JSON value.
    store_url = sqlite_url
    first = Message.user("m1", "one", timestamp=1)
    second = Message.user("m2", "two", timestamp=2)
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", [first, second])
    one, two = dumps_message(first).decode(), dumps_message(second).decode()
    cut = two.index(",")  # between two members of the second object
    rows = [(0, f"{one},{two[:cut]}"), (1, two[cut + 1 :])]  # joined by a comma, the two objects again
    for position, text in rows:
        raw_sql(
            store_url,
            "UPDATE orion_messages SET data = ? WHERE conversation_id = 'c' AND position = ?",
            (text, position),
        )
    with open_store(store_url) as store, pytest.raises(FormatError, match='conversation "c", position 0'):
        store.load("c")


def test_validate_names_the_stored_row_before_the_json_path(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(sqlite_url) as store:
        store.create("k")
        store.append("k", Message.user("m1", "one", timestamp=1))
    database = parse_store_url(sqlite_url).database
    with sqlite3.connect(database) as connection:
        connection.execute(
            "UPDATE orion_messages SET data = ?", ('{"id":"m1","role":5,"content":"","timestamp":1}',)
        )
    assert main(["validate", sqlite_url]) == 1
    out = capsys.readouterr().out
    assert f'{sqlite_url}?conversation=k: conversation "k", position 0: role: ' in out


@pytest.mark.parametrize("strict", [False, True])
def test_validate_caps_a_stored_conversations_problems_as_a_files(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], strict: bool
) -> None:
    # 150 messages with one id: 149 duplicate-id problems, warnings (errors with --strict). As
    # for a file, the first 100 are listed and the rest counted (MAX_REPORTED_PROBLEMS).
    with open_store(sqlite_url) as store:
        store.create("dup")
        store.extend("dup", [Message.user("m", "x", timestamp=1) for _ in range(150)])
    assert main(["validate", "--format", "json", *(["--strict"] if strict else []), sqlite_url]) == int(
        strict
    )
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["files"]
    listed = entry["errors" if strict else "warnings"]
    assert (len(listed), entry["omitted"]) == (100, 49)
    assert listed[-1]["location"] == "[100].id"
    assert report["counts"]["errors" if strict else "warnings"] == 149


def test_convert_help_names_store_urls(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "a store URL with ?conversation=ID" in text
    assert "sqlite:///chats.db?conversation=c1" in text


def test_a_conversation_id_or_title_with_u0000_is_refused_on_every_database(store: ConversationStore) -> None:
    # PostgreSQL keeps ids and titles as text, which cannot hold U+0000; both databases refuse
    # it, so an id that works on one works on the other.
    with pytest.raises(ArgumentValueError, match="cannot hold U\\+0000"):
        store.create("a\x00b")
    with pytest.raises(ArgumentValueError, match="cannot hold U\\+0000"):
        store.create("c2", title="t\x00")
    with pytest.raises(ArgumentValueError, match="cannot hold U\\+0000"):
        store.load("c\x001")
    assert [info.id for info in store.conversations()] == ["c1"]


def test_a_stored_unknown_key_left_out_is_named_with_its_conversation(sqlite_url: str) -> None:
    # A row written behind the store's back with a value no double holds: loaded as orion-core
    # loads it, the key left out, and the warning says which conversation (and row) held it.
    message = Message.user("m1", "hi", timestamp=1)
    with open_store(sqlite_url) as store:
        store.create("c")
        store.extend("c", [message, Message.user("m2", "again", timestamp=2)])
    row = dumps_message(message).decode()[:-1] + ',"x":1e400}'
    raw_sql(
        sqlite_url, "UPDATE orion_messages SET data = ? WHERE conversation_id = 'c' AND position = 0", (row,)
    )
    with open_store(sqlite_url) as store:
        with pytest.warns(UnknownKeyWarning) as caught:
            assert store.load("c")[0] == message
        assert [str(w.message).split(": unknown key")[0] for w in caught] == ['conversation "c": [0]']
        raw_sql(
            sqlite_url, "UPDATE orion_messages SET data = '{' WHERE conversation_id = 'c' AND position = 1"
        )
        with pytest.warns(UnknownKeyWarning) as caught, pytest.raises(FormatError, match="position 1"):
            store.load("c")  # read row by row: the first row's warning names its position
        assert [str(w.message).split(": unknown key")[0] for w in caught] == ['conversation "c", position 0']
