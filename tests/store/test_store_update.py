"""``update``: a conversation's title and metadata changed after ``create``, on both databases.

Every expectation is written by hand from docs/store.md and the brief (a desktop host renames a
chat after its first message, records tags and model names in its metadata): an argument left
out stays, ``None`` clears, the checks and errors are ``create``'s, ``updated`` moves to now and
``created`` stays, and a refused call changes nothing.
"""

from __future__ import annotations

import asyncio
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    ConversationNotFound,
    Message,
    OrionMessagesError,
    StoreError,
    now_ms,
)
from orion_messages._store_ops import Operation, Statements, Steps
from orion_messages.store import ConversationInfo, ConversationStore, open_async_store, open_store

from .test_store import raw_sql

A_WHILE_AGO = 1_000_000  # 1970-01-01T00:16:40Z, in milliseconds: long before any test runs


@pytest.fixture
def store(store_url: str) -> Iterator[ConversationStore]:
    """A store holding "c1" (titled, with metadata and one message) and "c2" (bare)."""
    with open_store(store_url) as opened:
        opened.create("c1", title="New chat", metadata={"user": 42})
        opened.append("c1", Message.user("msg-1", "What's the weather in Paris?", timestamp=1))
        opened.create("c2")
        yield opened


def _set_back(url: str, conversation_id: str) -> None:
    """Put the conversation's ``created`` and ``updated`` far in the past, behind the store's back."""
    raw_sql(
        url,
        "UPDATE orion_conversations SET created_ms = ?, updated_ms = ? WHERE id = ?",
        (A_WHILE_AGO, A_WHILE_AGO, conversation_id),
    )


def _nested(levels: int) -> list[object]:
    """An array nested ``levels`` deep (``[]`` is one level)."""
    value: list[object] = []
    for _ in range(levels - 1):
        value = [value]
    return value


# --------------------------------------------------------------------------------------------
# what changes


def test_rename_keeps_the_metadata_and_returns_what_info_reads(store: ConversationStore) -> None:
    renamed = store.update("c1", title="Weather in Paris")
    assert (renamed.id, renamed.title, renamed.metadata, renamed.message_count) == (
        "c1",
        "Weather in Paris",
        {"user": 42},
        1,
    )
    assert store.info("c1") == renamed
    assert store.info("c2").title is None  # the other conversation is untouched


def test_title_none_clears_the_title(store: ConversationStore) -> None:
    cleared = store.update("c1", title=None)
    assert (cleared.title, cleared.metadata) == (None, {"user": 42})
    assert store.info("c1") == cleared


def test_metadata_is_replaced_whole_and_the_title_stays(store: ConversationStore) -> None:
    tags = {"tags": ["travel", "weather"], "model": "orion-large", "big": 2**70, "nul": "a\x00b"}
    replaced = store.update("c1", metadata=tags)
    assert replaced.title == "New chat"
    # Replaced, not merged: "user" is gone. 2**70 and U+0000 come back exactly.
    assert replaced.metadata == {
        "tags": ["travel", "weather"],
        "model": "orion-large",
        "big": 1180591620717411303424,
        "nul": "a\x00b",
    }
    assert store.info("c1") == replaced


def test_metadata_is_stored_as_json_reads_it_back(store: ConversationStore) -> None:
    assert store.update("c2", metadata={1: (2, 3)}).metadata == {"1": [2, 3]}
    assert store.info("c2").metadata == {"1": [2, 3]}
    for value in ["just text", 7, 1.5, True, [], {}]:  # any JSON value, as create takes
        assert store.update("c2", metadata=value).metadata == value
        assert store.info("c2").metadata == value


def test_metadata_none_clears_it(store: ConversationStore) -> None:
    cleared = store.update("c1", metadata=None)
    assert (cleared.title, cleared.metadata) == ("New chat", None)
    assert store.info("c1") == cleared


def test_both_at_once(store: ConversationStore) -> None:
    both = store.update("c2", title="Paris trip", metadata={"model": "orion-small"})
    assert (both.title, both.metadata, both.message_count) == ("Paris trip", {"model": "orion-small"}, 0)
    assert store.info("c2") == both


def test_conversations_lists_the_new_values(store: ConversationStore) -> None:
    store.update("c1", title="Weather in Paris")
    store.update("c2", metadata={"tags": ["empty"]})
    listed = [(c.id, c.title, c.metadata) for c in store.conversations()]
    assert listed == [("c1", "Weather in Paris", {"user": 42}), ("c2", None, {"tags": ["empty"]})]


def test_the_messages_are_untouched(store: ConversationStore) -> None:
    before = store.load("c1")
    store.update("c1", title="Weather in Paris", metadata=[1])
    assert store.load("c1") == before
    assert [m.id for m in before] == ["msg-1"]


# --------------------------------------------------------------------------------------------
# times


def test_updated_moves_to_now_and_created_stays(store: ConversationStore, store_url: str) -> None:
    changes: list[dict[str, Any]] = [
        {"title": "Renamed"},
        {"metadata": {"k": 1}},
        {"title": None, "metadata": None},
    ]
    for change in changes:
        _set_back(store_url, "c1")
        earliest = now_ms()
        changed = store.update("c1", **change)
        latest = now_ms()
        assert changed.created == A_WHILE_AGO, change
        assert earliest <= changed.updated <= latest, change
        assert store.info("c1") == changed


def test_neither_argument_changes_nothing_and_returns_the_info(
    store: ConversationStore, store_url: str
) -> None:
    _set_back(store_url, "c1")
    same = store.update("c1")
    assert same == ConversationInfo("c1", "New chat", {"user": 42}, A_WHILE_AGO, A_WHILE_AGO, 1)
    assert store.info("c1") == same  # updated did not move


# --------------------------------------------------------------------------------------------
# refusals


def _unchanged(store: ConversationStore) -> None:
    assert [(c.id, c.title, c.metadata, c.message_count) for c in store.conversations()] == [
        ("c1", "New chat", {"user": 42}, 1),
        ("c2", None, None, 0),
    ]


WRONG: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"title": 5}, ArgumentTypeError, "title must be a str, got int 5"),
    ({"title": b"Paris"}, ArgumentTypeError, "title must be a str, got bytes b'Paris'"),
    ({"title": ["Paris"]}, ArgumentTypeError, "title must be a str, got list"),
    ({"metadata": {1.5}}, ArgumentTypeError, "metadata must be a JSON value"),
    ({"metadata": object()}, ArgumentTypeError, "metadata must be a JSON value"),
    ({"metadata": float("nan")}, ArgumentTypeError, "metadata must be a JSON value"),
    ({"metadata": "\ud800"}, ArgumentTypeError, "metadata must be a JSON value"),
    # A good title with bad metadata: neither is stored.
    ({"title": "Renamed", "metadata": {"k": {1.5}}}, ArgumentTypeError, "metadata must be a JSON value"),
    ({"title": "t\x00"}, ArgumentValueError, "title cannot hold U\\+0000"),
    ({"title": "\ud800"}, ArgumentValueError, "title must be valid Unicode"),
    ({"metadata": _nested(121)}, ArgumentValueError, "metadata may nest at most 120 levels"),
    ({"metadata": _nested(5000)}, ArgumentValueError, "metadata may nest at most 120 levels"),
]


@pytest.mark.parametrize(("change", "error", "text"), WRONG)
def test_wrong_arguments_are_refused_and_nothing_changes(
    store: ConversationStore, store_url: str, change: dict[str, Any], error: type[Exception], text: str
) -> None:
    _set_back(store_url, "c1")
    with pytest.raises(error, match=text) as caught:
        store.update("c1", **change)
    assert isinstance(caught.value, TypeError if error is ArgumentTypeError else ValueError)
    assert isinstance(caught.value, OrionMessagesError)
    _unchanged(store)
    assert store.info("c1").updated == A_WHILE_AGO


@pytest.mark.parametrize(("change", "error", "text"), WRONG)
def test_wrong_arguments_are_refused_before_the_database_is_touched(
    store_url: str, change: dict[str, Any], error: type[Exception], text: str
) -> None:
    # On a closed store any call that reached the database would raise StoreError instead.
    closed = open_store(store_url)
    closed.close()
    with pytest.raises(error, match=text):
        closed.update("c1", **change)


def test_metadata_nested_120_levels_is_kept(store: ConversationStore) -> None:
    deepest = _nested(120)
    assert store.update("c2", metadata=deepest).metadata == deepest
    assert store.info("c2").metadata == deepest


@pytest.mark.parametrize("bad", [123, None, ""])
def test_the_conversation_id_is_checked(store: ConversationStore, bad: Any) -> None:
    with pytest.raises(ArgumentTypeError, match=f"a conversation id is a non-empty str, got {bad!r}"):
        store.update(bad, title="x")
    _unchanged(store)


@pytest.mark.parametrize("change", [{"title": "x"}, {"metadata": [1]}, {"title": None, "metadata": None}, {}])
def test_a_missing_conversation_raises_and_is_not_created(
    store: ConversationStore, change: dict[str, Any]
) -> None:
    with pytest.raises(ConversationNotFound) as caught:
        store.update("nope", **change)
    assert isinstance(caught.value, StoreError)
    _unchanged(store)


def test_a_title_and_metadata_change_together_or_not_at_all(store: ConversationStore) -> None:
    from orion_messages import _store_ops

    def update_then_fail(s: Statements) -> Steps[None]:
        yield from _store_ops.update("c1", "Renamed", {"k": 1}).steps(s)
        raise RuntimeError("the host died mid-transaction")

    with pytest.raises(RuntimeError):
        store._backend.run(Operation(True, update_then_fail))
    _unchanged(store)


def test_a_closed_store_refuses_update(store_url: str) -> None:
    store = open_store(store_url)
    store.create("c1")
    store.close()
    changes: list[dict[str, Any]] = [{"title": "x"}, {"metadata": {"k": 1}}, {}]
    for change in changes:
        with pytest.raises(StoreError, match="the store is closed") as caught:
            store.update("c1", **change)
        assert str(caught.value) == f"{store.where}: the store is closed"


# --------------------------------------------------------------------------------------------
# async


def test_the_async_update_does_what_the_sync_one_does(store_url: str) -> None:
    async def run() -> list[ConversationInfo]:
        async with await open_async_store(store_url) as store:
            await store.create("c1", title="New chat", metadata={"user": 42})
            await store.append("c1", Message.user("msg-1", "hi", timestamp=1))
            seen = [
                await store.update("c1", title="Weather in Paris"),
                await store.update("c1", metadata={"tags": ["travel"]}),
                await store.update("c1", title=None),
                await store.update("c1"),
            ]
            assert await store.info("c1") == seen[-1]
            assert await store.conversations() == [seen[-1]]
            return seen

    seen = asyncio.run(run())
    assert [(i.title, i.metadata, i.message_count) for i in seen] == [
        ("Weather in Paris", {"user": 42}, 1),
        ("Weather in Paris", {"tags": ["travel"]}, 1),
        (None, {"tags": ["travel"]}, 1),
        (None, {"tags": ["travel"]}, 1),
    ]
    assert len({i.created for i in seen}) == 1
    with open_store(store_url) as store:
        assert store.info("c1") == seen[-1]


def test_the_async_update_refuses_what_the_sync_one_refuses(store_url: str) -> None:
    async def run() -> None:
        async with await open_async_store(store_url) as store:
            await store.create("c1", title="New chat")
            with pytest.raises(ArgumentTypeError, match="title must be a str, got int 5"):
                await store.update("c1", title=5)  # type: ignore[arg-type]
            with pytest.raises(ArgumentValueError, match="metadata may nest at most 120 levels"):
                await store.update("c1", title="Renamed", metadata=_nested(121))
            with pytest.raises(ConversationNotFound):
                await store.update("nope", title="x")
            with pytest.raises(ArgumentTypeError, match="a conversation id is a non-empty str"):
                await store.update(None, title="x")  # type: ignore[arg-type]
            assert [(c.id, c.title) for c in await store.conversations()] == [("c1", "New chat")]

    asyncio.run(run())


def test_the_async_closed_store_refuses_update_after_checking_arguments(store_url: str) -> None:
    async def run() -> None:
        store = await open_async_store(store_url)
        await store.close()
        with pytest.raises(StoreError, match="the store is closed") as caught:
            await store.update("c1", title="x")
        assert str(caught.value) == f"{store.where}: the store is closed"
        with pytest.raises(ArgumentTypeError, match="metadata must be a JSON value"):
            await store.update("c1", metadata={1.5})  # refused before the database, closed or not

    asyncio.run(run())


# --------------------------------------------------------------------------------------------
# what a type checker shows a user

_USER_CODE = textwrap.dedent(
    """\
    from orion_messages import open_store

    store = open_store("sqlite://")
    maybe: str | None = None
    store.update("c1", title="Weather in Paris")
    store.update("c1", title=None)
    store.update("c1", title=maybe, metadata={"tags": ["travel"]})
    store.update("c1", metadata=None)
    store.update("c1")
    title: str | None = store.update("c1").title
    store.update("c1", title=5)  # expect: arg-type
    store.update("c1", "Weather")  # expect: call-arg
    store.update("c1", name="Weather")  # expect: call-arg
    """
)


def test_mypy_takes_a_str_or_none_for_the_title_and_nothing_else(tmp_path: Path) -> None:
    mypy_api = pytest.importorskip("mypy.api")
    user = tmp_path / "user.py"
    user.write_text(_USER_CODE)
    out, _, _ = mypy_api.run(["--strict", "--cache-dir", str(tmp_path / "cache"), str(user)])
    reported = {
        (int(m[1]), m[2]) for m in re.finditer(r"^.*?user\.py:(\d+): error: .*\[([\w-]+)\]$", out, re.M)
    }
    found = (re.search(r"# expect: ([\w-]+)$", line) for line in _USER_CODE.splitlines())
    expected = {(number, match[1]) for number, match in enumerate(found, 1) if match}
    assert reported == expected, out
