"""``conversation_ids()``: the ids alone, by id, a page at a time; and the rows it leaves out.

The expectations are written by hand: the ids sorted by id, the pages of a listing, the argument
errors' texts, and the ids of rows another program wrote (SQLite keeps any type in any column).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from orion_messages import ArgumentTypeError, ArgumentValueError, Message, OrionMessagesError, _store_ops
from orion_messages.cli import main
from orion_messages.store import ConversationInfo, ConversationStore, open_async_store, open_store

from .test_store import raw_sql
from .test_store_paging import id_pages_of

# Created in this order, at these clocks: oldest first (then by id) is k, z, a, m, c.
CREATED = [("m", 5), ("z", 3), ("a", 5), ("k", 3), ("c", 7)]
BY_ID = ["a", "c", "k", "m", "z"]


def filled(url: str, monkeypatch: pytest.MonkeyPatch) -> ConversationStore:
    """The store at ``url`` holding the conversations of ``CREATED``, each created at its clock."""
    store = open_store(url)
    for name, clock in CREATED:
        with monkeypatch.context() as patch:
            patch.setattr(_store_ops, "now_ms", lambda clock=clock: clock)
            store.create(name, title=f"title {name}")
    return store


def test_the_ids_are_listed_by_id(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with filled(store_url, monkeypatch) as store:
        assert store.conversation_ids() == ["a", "c", "k", "m", "z"]
        assert [info.id for info in store.conversations()] == ["k", "z", "a", "m", "c"]  # oldest first


@pytest.mark.parametrize(("size", "pages"), [(1, 5), (2, 3), (4, 2), (5, 1), (6, 1), (2**63 - 1, 1)])
def test_pages_put_end_to_end_are_the_whole_listing(
    store_url: str, monkeypatch: pytest.MonkeyPatch, size: int, pages: int
) -> None:
    with filled(store_url, monkeypatch) as store:
        read = id_pages_of(store, size)
        assert [name for page in read for name in page] == BY_ID
        assert len(read) == pages


def test_a_page_starts_right_after_an_id_that_need_not_exist(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with filled(store_url, monkeypatch) as store:
        assert store.conversation_ids(limit=2) == ["a", "c"]
        assert store.conversation_ids(limit=2, after="c") == ["k", "m"]
        assert store.conversation_ids(after="b") == ["c", "k", "m", "z"]  # no conversation "b"
        store.delete("k")
        assert store.conversation_ids(limit=2, after="k") == ["m", "z"]  # deleted: goes on
        assert store.conversation_ids(after="z") == []
        assert store.conversation_ids(limit=0) == []
        assert store.count_conversations() == 4


def test_a_page_starts_right_after_a_conversation_info_s_id(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As conversations(after=...) takes the previous page's last ConversationInfo; the order stays by id.
    with filled(store_url, monkeypatch) as store:
        k = store.info("k")  # the oldest: conversations(after=k) would give z, a, m, c
        assert store.conversation_ids(after=k) == ["m", "z"]
        assert store.conversation_ids(limit=1, after=k) == ["m"]
        c = store.info("c")
        store.delete("c")
        assert store.conversation_ids(limit=2, after=c) == ["k", "m"]  # deleted: goes on from its place


def test_the_async_store_lists_as_the_sync_one(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    filled(store_url, monkeypatch).close()

    async def run() -> tuple[list[str], list[str], list[str], list[object]]:
        async with await open_async_store(store_url) as store:
            return (
                await store.conversation_ids(),
                await store.conversation_ids(limit=2, after="b"),
                await store.conversation_ids(after=await store.info("k")),
                await store.unusable_conversation_ids(),
            )

    assert asyncio.run(run()) == (["a", "c", "k", "m", "z"], ["c", "k"], ["m", "z"], [])


@pytest.mark.parametrize(
    ("arguments", "error", "text"),
    [
        ({"limit": True}, ArgumentTypeError, "limit must be an int or None, got a bool True"),
        ({"limit": -1}, ArgumentValueError, "limit must be a non-negative integer, got -1"),
        ({"limit": 2**63}, ArgumentValueError, "limit must be at most 2**63 - 1, got 9223372036854775808"),
        (
            {"after": 5},
            ArgumentTypeError,
            "after must be a ConversationInfo, a conversation id or None, got an int 5",
        ),
        (
            {"after": ConversationInfo("", None, None, 1, 1, 0)},
            ArgumentTypeError,
            "after.id (a conversation id) is a non-empty str, got ''",
        ),
        ({"after": ""}, ArgumentTypeError, "after (a conversation id) is a non-empty str, got ''"),
        (
            {"after": "a\x00"},
            ArgumentValueError,
            "after (a conversation id) cannot hold U+0000 (PostgreSQL text cannot), got 'a\\x00'",
        ),
    ],
)
def test_arguments_are_checked_before_the_database_is_touched(
    sqlite_url: str, arguments: dict[str, Any], error: type[Exception], text: str
) -> None:
    store = open_store(sqlite_url)
    store.close()  # a call reaching the database would raise StoreError: the store is closed
    with pytest.raises(error, match=f"^{re.escape(text)}$") as caught:
        store.conversation_ids(**arguments)
    assert isinstance(caught.value, OrionMessagesError)
    assert isinstance(caught.value, TypeError if error is ArgumentTypeError else ValueError)


def test_rows_another_program_wrote_are_left_out_and_listed_apart(sqlite_url: str) -> None:
    # docs/store.md: conversation_ids() lists only ids the other calls take, and never raises for
    # another program's row; unusable_conversation_ids() gives those as the driver reads them.
    with open_store(sqlite_url) as store:
        for name in ("b", "d"):
            store.create(name)
    columns = "INSERT INTO orion_conversations (id, created_ms, updated_ms, message_count, next_position)"
    for value in ("NULL", "''", "x'ff'", "'c' || char(0)", "x'61'"):  # x'61' is the bytes b"a"
        raw_sql(sqlite_url, f"{columns} VALUES ({value}, 1, 1, 0, 0)")
    # A title, metadata or time another program wrote oddly is not read at all.
    raw_sql(sqlite_url, "UPDATE orion_conversations SET title = x'c3', created_ms = 'soon' WHERE id = 'd'")
    with open_store(sqlite_url, create=False) as store:
        assert store.conversation_ids() == ["b", "d"]
        assert store.conversation_ids(limit=1) == ["b"]
        assert store.conversation_ids(limit=1, after="b") == ["d"]
        # NULL first, then text ("" before "c\0"), then blobs: SQLite's order of types.
        assert store.unusable_conversation_ids() == [None, "", "c\x00", b"a", b"\xff"]
        assert store.count_conversations() == 7


def test_a_text_id_that_is_not_utf8_is_left_out_and_listed_apart_as_bytes(sqlite_url: str) -> None:
    # docs/store.md: such a row is left out, never raised. sqlite3 failed to decode it, and the
    # whole listing raised sqlite3.OperationalError; unusable_conversation_ids() missed it.
    with open_store(sqlite_url) as store:
        for name in ("b", "d", "\u00e9"):  # "é" is x'c3a9', valid UTF-8 past ASCII
            store.create(name)
    columns = "INSERT INTO orion_conversations (id, created_ms, updated_ms, message_count, next_position)"
    # By their bytes: "d" < x'c3' < x'c3a9' < x'e282' (a cut "€") < x'ff'.
    for value in ("x'c3'", "x'e282'", "x'ff'", "x'ff00'"):
        raw_sql(sqlite_url, f"{columns} VALUES (CAST({value} AS TEXT), 1, 1, 0, 0)")
    with open_store(sqlite_url, create=False) as store:
        assert store.conversation_ids() == ["b", "d", "\u00e9"]
        assert id_pages_of(store, 1) == [["b"], ["d"], ["\u00e9"]]  # on past x'c3', which sorts before "é"
        assert store.conversation_ids(limit=2, after="d") == ["\u00e9"]
        assert store.conversation_ids(limit=1, after="\u00e9") == []  # x'e282' and x'ff' only are left
        assert store.unusable_conversation_ids() == [b"\xc3", b"\xe2\x82", b"\xff", b"\xff\x00"]
        assert store.count_conversations() == 7


def test_a_page_that_reads_past_a_left_out_id_still_holds_at_most_limit_ids(sqlite_url: str) -> None:
    # docs/store.md: a page holds "at most `limit`" ids, and goes on past a row left out. By their
    # bytes: "d" < x'c3' (not UTF-8, left out) < "\u00e9" x'c3a9' < "\u00ea" x'c3aa' < "\u00eb" x'c3ab'.
    with open_store(sqlite_url) as store:
        for name in ("d", "\u00e9", "\u00ea", "\u00eb"):
            store.create(name)
    raw_sql(
        sqlite_url,
        "INSERT INTO orion_conversations (id, created_ms, updated_ms, message_count, next_position)"
        " VALUES (CAST(x'c3' AS TEXT), 1, 1, 0, 0)",
    )
    listed = ["d", "\u00e9", "\u00ea", "\u00eb"]
    with open_store(sqlite_url, create=False) as store:
        assert store.conversation_ids(limit=2, after="d") == ["\u00e9", "\u00ea"]
        assert store.conversation_ids(limit=1, after="d") == ["\u00e9"]
        for size in (1, 2, 3, 4, 5):
            pages = id_pages_of(store, size)
            assert [name for page in pages for name in page] == listed, size
            assert all(len(page) == size for page in pages[:-1]), size  # every page but the last is full
            assert 1 <= len(pages[-1]) <= size, size


def test_validate_reports_a_text_id_that_is_not_utf8_and_goes_on(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(sqlite_url) as store:
        store.create("a")
        store.append("a", Message.user("msg-1", "hi", timestamp=1))
    raw_sql(
        sqlite_url,
        "INSERT INTO orion_conversations (id, created_ms, updated_ms, message_count, next_position)"
        " VALUES (CAST(x'ff' AS TEXT), 1, 1, 0, 0)",
    )
    assert main(["validate", "--format", "json", sqlite_url]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(f["path"], f["valid"], f["messages"]) for f in report["files"]] == [
        (sqlite_url, False, None),
        (f"{sqlite_url}?conversation=a", True, 1),
    ]
    assert [e["message"] for e in report["files"][0]["errors"]] == [
        "a stored conversation's id is a bytes b'\\xff', not text"
    ]


def test_an_empty_id_is_left_out_on_postgresql_too(postgres_url: str) -> None:
    with open_store(postgres_url) as store:
        store.create("a")
    raw_sql(
        postgres_url,
        "INSERT INTO orion_conversations (id, created_ms, updated_ms, message_count, next_position)"
        " VALUES ('', 1, 1, 0, 0)",
    )
    with open_store(postgres_url, create=False) as store:
        assert store.conversation_ids() == ["a"]
        assert store.unusable_conversation_ids() == [""]
        assert store.count_conversations() == 2
