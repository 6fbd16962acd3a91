"""Paging through ``conversations()``, and ``load(since=..., last=...)`` reading only its window.

The expectations are written by hand (the listing of conversations created at chosen times, the
messages of each window, the argument errors' texts) or are properties (pages put end to end are
the whole listing; a load reads no more rows than it returns).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from typing import Any

import pytest

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    ConversationNotFound,
    Message,
    OrionMessagesError,
    _store_ops,
)
from orion_messages._store_ops import ConversationInfo, Operation, Statements, Steps
from orion_messages.store import ConversationStore, open_async_store, open_store

from .test_store import chat

# Each conversation and the clock when it is created, in the order of creation.
CREATED = [
    ("m", 5),
    ("b", 5),
    ("z", 3),
    ("a", 5),
    ("k", 3),
    ("c", 7),
    ("y", 3),
    ("d", 9),
    ("e", 9),
    ("n", 7),
    ("f", 5),
]
# Oldest first; created in the same millisecond, by id (written out by hand from CREATED).
LISTED = [("k", 3), ("y", 3), ("z", 3), ("a", 5), ("b", 5), ("f", 5), ("m", 5), ("c", 7), ("n", 7), ("d", 9), ("e", 9)]  # fmt: skip
IDS = [name for name, _ in LISTED]


def create_at(store: ConversationStore, monkeypatch: pytest.MonkeyPatch, name: str, clock: int) -> None:
    """Create the conversation ``name`` with the store's clock standing at ``clock``."""
    with monkeypatch.context() as patch:
        patch.setattr(_store_ops, "now_ms", lambda: clock)
        store.create(name, title=f"title {name}", metadata={"name": name})


@pytest.fixture
def store(store_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[ConversationStore]:
    """A store holding the conversations of ``CREATED``, each created at its time."""
    with open_store(store_url) as opened:
        for name, clock in CREATED:
            create_at(opened, monkeypatch, name, clock)
        yield opened


def pages_of(
    store: ConversationStore, size: int, after: str | None = None
) -> Iterator[list[ConversationInfo]]:
    """The pages of ``size`` conversations after ``after`` (None: from the first), as a host reads
    them: each page after the previous page's last conversation."""
    page = store.conversations(limit=size, after=after)
    for _ in range(PAGES_MAX):
        if not page:
            return
        yield page
        page = store.conversations(limit=size, after=page[-1].id)
    raise AssertionError("the pages never end")


PAGES_MAX = 1000
"""More pages than any test's conversations make: a paging that never ends fails, not hangs."""


def id_pages_of(store: ConversationStore, size: int) -> list[list[str]]:
    """The pages of ``size`` ids (``conversation_ids``), each after the previous page's last id."""
    pages: list[list[str]] = []
    page = store.conversation_ids(limit=size)
    while page:
        pages.append(page)
        assert len(pages) <= PAGES_MAX, "the pages never end"
        page = store.conversation_ids(limit=size, after=page[-1])
    return pages


def ids(infos: list[ConversationInfo]) -> list[str]:
    """The conversations' ids, in order."""
    return [info.id for info in infos]


# --------------------------------------------------------------------------------------------
# the order


def test_the_listing_is_oldest_first_then_by_id(store: ConversationStore) -> None:
    listed = store.conversations()
    assert [(info.id, info.created) for info in listed] == LISTED
    assert [(info.title, info.metadata) for info in listed] == [
        (f"title {name}", {"name": name}) for name in IDS
    ]


def test_count_conversations_counts_what_the_listing_holds(store: ConversationStore) -> None:
    assert store.count_conversations() == len(IDS)
    store.delete("b")
    store.create("new one")
    store.delete("c")
    assert store.count_conversations() == len(IDS) - 1


def test_an_empty_store_counts_0(store_url: str) -> None:
    with open_store(store_url) as empty:
        assert empty.count_conversations() == 0


# --------------------------------------------------------------------------------------------
# pages


@pytest.mark.parametrize("size", [1, 2, 3, 4, 10, 11, 12, 100, 2**63 - 1])
def test_pages_put_end_to_end_are_the_whole_listing(store: ConversationStore, size: int) -> None:
    pages = list(pages_of(store, size))
    assert [info for page in pages for info in page] == store.conversations()
    assert ids([info for page in pages for info in page]) == IDS
    assert len(pages) == -(-len(IDS) // size)  # as few pages as the size allows
    assert all(len(page) == size for page in pages[:-1])  # every page but the last is full
    assert 1 <= len(pages[-1]) <= size


def test_a_limit_of_0_gives_an_empty_page(store: ConversationStore) -> None:
    assert store.conversations(limit=0) == []
    for name in IDS:
        assert store.conversations(limit=0, after=name) == []
    with pytest.raises(ConversationNotFound):
        store.conversations(limit=0, after="nope")  # the id is still checked


def test_a_page_starts_right_after_the_conversation_after(store: ConversationStore) -> None:
    for index, name in enumerate(IDS):
        assert ids(store.conversations(after=name)) == IDS[index + 1 :]
        assert ids(store.conversations(limit=2, after=name)) == IDS[index + 1 : index + 3]
    assert ids(store.conversations(limit=3)) == ["k", "y", "z"]
    assert ids(store.conversations(limit=3, after="z")) == ["a", "b", "f"]
    assert ids(store.conversations(limit=3, after="m")) == ["c", "n", "d"]
    assert store.conversations(limit=3, after="e") == []


def test_after_a_missing_or_deleted_conversation_raises(store: ConversationStore) -> None:
    with pytest.raises(ConversationNotFound) as caught:
        store.conversations(limit=2, after="nope")
    assert caught.value.conversation_id == "nope"
    assert str(caught.value) == f'{store.where}: no conversation "nope" in the store'
    store.delete("b")
    with pytest.raises(ConversationNotFound):
        store.conversations(limit=2, after="b")
    assert ids(store.conversations(limit=2, after="a")) == ["f", "m"]  # an earlier one goes on


def test_a_page_after_an_id_starts_at_its_creation_whatever_changed_since(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/store.md: the listing is by (created, id), and a page after an id starts at that
    # conversation's place in it; a message or a title added since moves `updated`, not the place.
    with monkeypatch.context() as patch:
        patch.setattr(_store_ops, "now_ms", lambda: 100)
        store.append("a", Message.user("m1", "hi"))
        store.update("k", title="renamed")
    assert (store.info("a").created, store.info("a").updated) == (5, 100)
    assert ids(store.conversations(after="a")) == ["b", "f", "m", "c", "n", "d", "e"]
    assert ids(store.conversations(limit=2, after="k")) == ["y", "z"]
    assert ids([info for page in pages_of(store, 3) for info in page]) == IDS


def test_conversations_created_or_deleted_between_pages_shift_nothing(
    store: ConversationStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = store.conversations(limit=4)
    assert ids(first) == ["k", "y", "z", "a"]
    store.delete("y")  # already read
    store.delete("f")  # not read yet
    create_at(store, monkeypatch, "x", 4)  # before the page's end: not in a later page
    create_at(store, monkeypatch, "aa", 5)  # after it, in the same millisecond as "a"
    create_at(store, monkeypatch, "g", 10)  # a new one, as a host's clock makes them
    rest = [info for page in pages_of(store, 4, after="a") for info in page]
    assert ids(rest) == ["aa", "b", "m", "c", "n", "d", "e", "g"]


def test_the_async_store_pages_as_the_sync_one(store: ConversationStore, store_url: str) -> None:
    async def run() -> list[str]:
        found: list[str] = []
        async with await open_async_store(store_url) as opened:
            page = await opened.conversations(limit=3)
            while page:
                found += ids(page)
                assert len(found) <= PAGES_MAX, "the pages never end"
                page = await opened.conversations(limit=3, after=page[-1].id)
            assert await opened.conversations(limit=0) == []
            assert ids(await opened.conversations(after="n")) == ["d", "e"]
            with pytest.raises(ConversationNotFound):
                await opened.conversations(after="nope")
            with pytest.raises(ArgumentValueError, match="limit must be a non-negative integer, got -1"):
                await opened.conversations(limit=-1)
        return found

    assert asyncio.run(run()) == IDS


# --------------------------------------------------------------------------------------------
# argument errors


@pytest.mark.parametrize(
    ("arguments", "error", "text"),
    [
        ({"limit": True}, ArgumentTypeError, "limit must be an int or None, got a bool True"),
        ({"limit": "2"}, ArgumentTypeError, "limit must be an int or None, got a str '2'"),
        ({"limit": 2.0}, ArgumentTypeError, "limit must be an int or None, got a float 2.0"),
        ({"limit": -1}, ArgumentValueError, "limit must be a non-negative integer, got -1"),
        ({"limit": 2**63}, ArgumentValueError, "limit must be at most 2**63 - 1, got 9223372036854775808"),
        (
            {"after": 5},
            ArgumentTypeError,
            "after must be a ConversationInfo, a conversation id or None, got an int 5",
        ),
        ({"after": ""}, ArgumentTypeError, "after (a conversation id) is a non-empty str, got ''"),
        (
            {"after": "a\x00"},
            ArgumentValueError,
            "after (a conversation id) cannot hold U+0000 (PostgreSQL text cannot), got 'a\\x00'",
        ),
        (
            {"after": "\ud800"},
            ArgumentValueError,
            "after (a conversation id) must be valid Unicode, got '\\ud800' (a lone surrogate at index 0)",
        ),
    ],
)
def test_argument_errors(
    store: ConversationStore, arguments: dict[str, Any], error: type[Exception], text: str
) -> None:
    builtin = TypeError if error is ArgumentTypeError else ValueError
    with pytest.raises(error, match=re.escape(text)) as caught:
        store.conversations(**arguments)
    assert str(caught.value) == text
    assert isinstance(caught.value, builtin)
    assert isinstance(caught.value, OrionMessagesError)


def test_arguments_are_checked_before_the_database_is_touched(store_url: str) -> None:
    store = open_store(store_url)
    store.close()  # a call reaching the database would raise StoreError: the store is closed
    with pytest.raises(ArgumentValueError, match="limit must be a non-negative integer"):
        store.conversations(limit=-1)
    with pytest.raises(
        ArgumentTypeError,
        match=re.escape("after must be a ConversationInfo, a conversation id or None, got a bytes"),
    ):
        store.conversations(after=b"c")  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# load(since=..., last=...)

# (since, last, the ids expected), worked out by hand for chat(5): m0 ... m9.
WINDOWS = [
    ("m2", 3, ["m7", "m8", "m9"]),
    ("m2", 0, []),
    ("m2", 7, ["m3", "m4", "m5", "m6", "m7", "m8", "m9"]),  # exactly every message after m2
    ("m2", 8, ["m3", "m4", "m5", "m6", "m7", "m8", "m9"]),  # more than there are
    ("m0", 1, ["m9"]),
    ("m0", 2**63 - 1, ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9"]),
    ("m6", 2, ["m8", "m9"]),
    ("m8", 5, ["m9"]),
    ("m9", 4, []),
    ("m9", 0, []),
]


def counted(operation: Operation[list[Message]], fetched: list[int]) -> Operation[list[Message]]:
    """``operation``, noting in ``fetched`` how many rows each of its reads of rows returned."""

    def steps(s: Statements) -> Steps[list[Message]]:
        inner = operation.steps(s)
        result: Any = None
        while True:
            try:
                step = inner.send(result)
            except StopIteration as done:
                value: list[Message] = done.value
                return value
            result = yield step
            if step[2] == "all":
                fetched.append(len(result))

    return Operation(operation.write, steps)


def test_load_since_and_last_gives_the_last_of_those_after_and_reads_only_them(store_url: str) -> None:
    messages = chat(5)
    assert [m.id for m in messages] == [f"m{number}" for number in range(10)]
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        for since, last, expected in WINDOWS:
            loaded = store.load("c", since=since, last=last)
            assert [m.id for m in loaded] == expected, (since, last)
            assert loaded == [m for m in messages if m.id in expected]
            fetched: list[int] = []
            window = store._backend.run(counted(_store_ops.load("c", last, since), fetched))
            assert window == loaded
            assert fetched == [len(expected)], (since, last)  # one read, of the rows returned


def test_load_since_and_last_reads_the_window_of_a_long_conversation(store_url: str) -> None:
    messages = chat(200)
    with open_store(store_url) as store:
        store.create("c")
        store.extend("c", messages)
        fetched: list[int] = []
        window = store._backend.run(counted(_store_ops.load("c", 3, "m10"), fetched))
        assert [m.id for m in window] == ["m397", "m398", "m399"]
        assert fetched == [3]


# --------------------------------------------------------------------------------------------
# after a ConversationInfo


def info_pages_of(store: ConversationStore, size: int) -> Iterator[list[ConversationInfo]]:
    """The pages of ``size`` conversations, each after the previous page's last ``ConversationInfo``."""
    page = store.conversations(limit=size)
    for _ in range(PAGES_MAX):
        if not page:
            return
        yield page
        page = store.conversations(limit=size, after=page[-1])
    raise AssertionError("the pages never end")


@pytest.mark.parametrize("size", [1, 3, 11, 12])
def test_pages_after_an_info_are_the_pages_after_its_id(store: ConversationStore, size: int) -> None:
    assert list(info_pages_of(store, size)) == list(pages_of(store, size))


def test_a_page_after_a_deleted_conversation_s_info_goes_on_from_its_place(store: ConversationStore) -> None:
    first = store.conversations(limit=4)
    assert ids(first) == ["k", "y", "z", "a"]
    store.delete("a")  # the page's last, deleted before the next page is read
    assert ids(store.conversations(limit=3, after=first[-1])) == ["b", "f", "m"]
    with pytest.raises(ConversationNotFound):
        store.conversations(limit=3, after="a")  # by id it must still exist


def test_an_info_of_another_time_pages_from_that_time(store: ConversationStore) -> None:
    # Only the info's (created, id) counts: the place it names, whether or not it was listed.
    assert ids(store.conversations(limit=2, after=ConversationInfo("b", None, None, 5, 0, 0))) == ["f", "m"]
    assert ids(store.conversations(after=ConversationInfo("zz", None, None, 7, 0, 0))) == ["d", "e"]
    assert ids(store.conversations(after=ConversationInfo("a", None, None, -(2**63), 0, 0))) == IDS


@pytest.mark.parametrize(
    ("after", "error", "said"),
    [
        (ConversationInfo("a", None, None, True, 0, 0), ArgumentTypeError, "after.created must be an int, got a bool True"),
        (ConversationInfo("a", None, None, "5", 0, 0), ArgumentTypeError, "after.created must be an int, got a str '5'"),  # type: ignore[arg-type]
        (ConversationInfo("a", None, None, 2**63, 0, 0), ArgumentValueError, f"after.created must fit in 64 bits, got {2**63}"),
        (ConversationInfo("", None, None, 5, 0, 0), ArgumentTypeError, "after.id (a conversation id) is a non-empty str, got ''"),
        (5, ArgumentTypeError, "after must be a ConversationInfo, a conversation id or None, got an int 5"),
    ],
)  # fmt: skip
def test_a_bad_after_is_refused_before_the_database_is_touched(
    store: ConversationStore, after: Any, error: type[Exception], said: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(said)}$"):
        store.conversations(limit=2, after=after)
