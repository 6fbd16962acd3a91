"""Every error the store raises on purpose is an ``OrionMessagesError`` and keeps its builtin base.

The expected classes and texts are written by hand from the audit findings (``resolve``'s plain
``KeyError``/``ValueError``, the plain ``TypeError`` of type checks and of ``load(last=-1)``, and a
``set_pinned`` that took ``"yes"`` for True).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from orion_messages import Conversation, Message, OrionMessagesError, ToolCall
from orion_messages.cli import main
from orion_messages.errors import (
    ArgumentTypeError,
    ArgumentValueError,
    MissingExtraError,
    PendingResultNotFound,
    ResultAlreadyResolved,
    StoreError,
)
from orion_messages.store import ConversationStore, masked_url, open_async_store, open_store, parse_store_url

from .test_store import raw_sql


@pytest.fixture
def store(store_url: str) -> Iterator[ConversationStore]:
    with open_store(store_url) as opened:
        opened.create("c1")
        opened.extend(
            "c1",
            [
                Message.user("msg-1", "weather?", timestamp=1),
                Message.assistant("msg-2", "", timestamp=2),
                Message.pending_result("msg-3", "call-1", "weather", timestamp=3),
            ],
        )
        yield opened


def test_the_error_classes_keep_their_builtin_bases() -> None:
    assert issubclass(PendingResultNotFound, KeyError)
    assert issubclass(PendingResultNotFound, OrionMessagesError)
    assert issubclass(ResultAlreadyResolved, ValueError)
    assert issubclass(ResultAlreadyResolved, OrionMessagesError)
    assert issubclass(ArgumentTypeError, TypeError)
    assert issubclass(ArgumentTypeError, OrionMessagesError)
    assert issubclass(ArgumentValueError, ValueError)
    assert issubclass(ArgumentValueError, OrionMessagesError)


def test_the_texts_without_a_conversation() -> None:
    # KeyError would print its text in quotes; this one prints it as written.
    assert str(PendingResultNotFound("call-9")) == 'no pending result for tool call "call-9"'
    assert (
        str(ResultAlreadyResolved("call-1", index=2))
        == 'the result for tool call "call-1" is already resolved (at [2])'
    )
    assert str(ResultAlreadyResolved("call-1")) == 'the result for tool call "call-1" is already resolved'


def test_resolve_an_unknown_call(store: ConversationStore) -> None:
    with pytest.raises(PendingResultNotFound) as caught:
        store.resolve("c1", "call-9", "x")
    # The store is named, as in every error about what it holds (MessageNotFound and the rest).
    assert str(caught.value) == f'{store.where}: conversation "c1": no pending result for tool call "call-9"'
    assert isinstance(caught.value, KeyError)
    assert (caught.value.tool_call_id, caught.value.conversation_id) == ("call-9", "c1")


def test_resolve_twice(store: ConversationStore) -> None:
    store.resolve("c1", "call-1", "18 °C")
    with pytest.raises(ResultAlreadyResolved) as caught:
        store.resolve("c1", "call-1", "again")
    assert str(caught.value) == (
        f'{store.where}: conversation "c1": the result for tool call "call-1" is already resolved'
    )
    assert isinstance(caught.value, ValueError)
    assert store.load("c1")[2].content == "18 °C"  # unchanged by the refused call


def test_resolve_with_a_call_id_every_turn_reuses(store: ConversationStore) -> None:
    # vLLM and llama.cpp name each turn's call call_0: each resolve fills in the one pending
    # placeholder, as Conversation.resolve does, reading none of the completed results.
    store.create("loop")
    reference = Conversation()
    for turn in range(4):
        call = ToolCall(id="call_0", name="f", arguments={})
        turn_messages = [
            Message.user(f"u{turn}", "q", timestamp=turn),
            Message.assistant(f"a{turn}", "", [call], timestamp=turn),
            Message.pending_result(f"r{turn}", "call_0", "f", timestamp=turn),
        ]
        store.extend("loop", turn_messages)
        reference.extend(turn_messages)
        assert store.resolve("loop", "call_0", f"out {turn}") == reference.resolve("call_0", f"out {turn}")
    assert store.load("loop") == list(reference)
    with pytest.raises(ResultAlreadyResolved):
        store.resolve("loop", "call_0", "again")
    assert store.load("loop") == list(reference)


@pytest.mark.parametrize(
    ("content", "is_error", "text"),
    [(5, False, "content must be a str, got int"), ("x", "no", "is_error must be a bool, got str")],
)
def test_resolve_checks_its_argument_types(
    store: ConversationStore, content: Any, is_error: Any, text: str
) -> None:
    with pytest.raises(ArgumentTypeError, match=text):
        store.resolve("c1", "call-1", content, is_error=is_error)
    assert store.load("c1")[2].is_pending


@pytest.mark.parametrize("pinned", ["yes", "", 1, 0, None])
def test_set_pinned_takes_only_a_bool(store: ConversationStore, pinned: Any) -> None:
    with pytest.raises(TypeError) as caught:
        store.set_pinned("c1", "msg-1", pinned)
    assert isinstance(caught.value, ArgumentTypeError)
    assert str(caught.value) == f"pinned must be a bool, got {type(pinned).__name__} {pinned!r}"
    assert [m.pinned for m in store.load("c1")] == [False, False, False]


def test_set_pinned_with_a_bool_still_works(store: ConversationStore) -> None:
    assert store.set_pinned("c1", "msg-1", True) is True
    assert [m.pinned for m in store.load("c1")] == [True, False, False]


def test_the_async_set_pinned_takes_only_a_bool(store_url: str) -> None:
    open_store(store_url).close()

    async def run() -> None:
        async with await open_async_store(store_url) as store:
            await store.create("c1")
            await store.append("c1", Message.user("msg-1", "hi", timestamp=1))
            await store.set_pinned("c1", "msg-1", "yes")  # type: ignore[arg-type]

    with pytest.raises(ArgumentTypeError, match="pinned must be a bool, got str 'yes'"):
        asyncio.run(run())


def test_the_async_store_names_itself_in_a_resolve_it_refuses(store_url: str) -> None:
    async def run() -> tuple[str, str]:
        async with await open_async_store(store_url) as store:
            await store.create("c1")
            with pytest.raises(PendingResultNotFound) as caught:
                await store.resolve("c1", "call-9", "x")
            return store.where, str(caught.value)

    where, text = asyncio.run(run())
    assert text == f'{where}: conversation "c1": no pending result for tool call "call-9"'


def _nested(levels: int) -> list[object]:
    """An array nested ``levels`` deep (``[]`` is one level)."""
    value: list[object] = []
    for _ in range(levels - 1):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (lambda s: s.create(5), ArgumentTypeError, "a conversation id is a non-empty str, got 5"),
        (lambda s: s.create(""), ArgumentTypeError, "a conversation id is a non-empty str, got ''"),
        (lambda s: s.create("c2", metadata={1.5}), ArgumentTypeError, "metadata must be a JSON value"),
        # Stored, it could not be read back (Python's reader recurses deeper than its writer).
        (
            lambda s: s.create("c2", metadata=_nested(121)),
            ArgumentValueError,
            "metadata may nest at most 120",
        ),
        (
            lambda s: s.create("c2", metadata=_nested(5000)),
            ArgumentValueError,
            "metadata may nest at most 120",
        ),
        (
            lambda s: s.append("c1", "hello"),
            ArgumentTypeError,
            "ConversationStore.append: expected a Message, got a str",
        ),
        (
            lambda s: s.extend("c1", [None]),
            ArgumentTypeError,
            r"ConversationStore.extend: \[0\]: expected a Message, found a NoneType",
        ),
        (
            lambda s: s.replace_messages("c1", [1]),
            ArgumentTypeError,
            r"ConversationStore.replace_messages: \[0\]: expected a Message, found an int",
        ),
        (lambda s: s.load("c1", last=-1), ArgumentValueError, "last must be a non-negative integer, got -1"),
        (
            lambda s: s.load("c1", last=True),
            ArgumentTypeError,
            "last must be an int or None, got a bool True",
        ),
        (lambda s: s.load("c1", last="2"), ArgumentTypeError, "last must be an int or None, got a str '2'"),
    ],
)
def test_argument_errors_are_orion_errors_with_their_builtin_base(
    store: ConversationStore, call: Any, error: type[Exception], text: str
) -> None:
    builtin = TypeError if error is ArgumentTypeError else ValueError
    with pytest.raises(error, match=text) as caught:
        call(store)
    assert isinstance(caught.value, builtin)
    assert isinstance(caught.value, OrionMessagesError)
    assert [m.id for m in store.load("c1")] == ["msg-1", "msg-2", "msg-3"]
    assert [c.id for c in store.conversations()] == ["c1"]


def test_the_message_writes_name_the_method_and_the_wrong_item_s_index(store_url: str) -> None:
    # As Conversation.extend names itself; it was "expected a Message, got NoneType", no call, no index.
    first = Message.user("msg-9", "hi", timestamp=9)
    expected = [
        "{store}.append: expected a Message, got a NoneType",
        "{store}.extend: [1]: expected a Message, found a NoneType",
        "{store}.replace_messages: [2]: expected a Message, found a str",
        "{store}.extend: expected an iterable of Message, got a Message (put it in a list: [message])",
        "{store}.replace_messages: expected an iterable of Message, got an int",
    ]
    calls: list[Any] = [
        lambda s: s.append("c1", None),
        lambda s: s.extend("c1", [first, None]),
        lambda s: s.replace_messages("c1", [first, first, "msg-10"]),
        lambda s: s.extend("c1", first),
        lambda s: s.replace_messages("c1", 5),
    ]
    with open_store(store_url) as store:
        store.create("c1")
        for call, text in zip(calls, expected, strict=True):
            with pytest.raises(ArgumentTypeError) as caught:
                call(store)
            assert str(caught.value) == text.format(store="ConversationStore")
        assert store.load("c1") == []

    async def run() -> list[str]:
        said = []
        async with await open_async_store(store_url) as store:
            for call in calls:
                with pytest.raises(ArgumentTypeError) as caught:
                    await call(store)
                said.append(str(caught.value))
            assert await store.load("c1") == []
        return said

    assert asyncio.run(run()) == [text.format(store="AsyncConversationStore") for text in expected]


def test_resolve_fills_a_placeholder_beside_a_completed_result_as_the_conversation_does(
    store: ConversationStore,
) -> None:
    store.append("c1", Message.tool_result_message("msg-4", "call-1", "weather", "18 °C", timestamp=4))
    assert store.resolve("c1", "call-1", "20 °C").id == "msg-3"
    with pytest.raises(ResultAlreadyResolved):
        store.resolve("c1", "call-1", "again")


def test_resolve_clears_the_placeholder_s_token_count(store: ConversationStore) -> None:
    store.set_pinned("c1", "msg-3", True)
    store.replace_messages("c1", [m.with_token_count(1) for m in store.load("c1")])
    resolved = store.resolve("c1", "call-1", "x" * 400)
    assert resolved.token_count is None
    assert store.load("c1")[2].token_count is None


@pytest.mark.parametrize(
    ("stored", "shown"),
    [("'x'", 'a str "x"'), ("0.5", "a float 0.5"), ("X'00'", "a bytes b'\\x00'")],
)
def test_a_next_position_another_program_wrote_is_a_store_error_naming_it(
    sqlite_url: str, stored: str, shown: str
) -> None:
    # Was: a bare ValueError from int(), or, for 0.5, an IntegrityError once it was truncated to 0.
    with open_store(sqlite_url) as store:
        store.create("c1")
        store.append("c1", Message.user("msg-1", "hi", timestamp=1))
        raw_sql(sqlite_url, f"UPDATE orion_conversations SET next_position = {stored}")
        expected = f'{store.where}: conversation "c1": its next_position is {shown}, not an integer'
        for write in (
            lambda: store.append("c1", Message.user("msg-2", "hi", timestamp=2)),
            lambda: store.set_pinned("c1", "msg-1", True),
        ):
            with pytest.raises(StoreError) as caught:
                write()
            assert str(caught.value) == expected
        assert [m.id for m in store.load("c1")] == ["msg-1"]  # reads still work; nothing changed
        assert not store.load("c1")[0].pinned


def _without_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make this process look as if the ``postgres`` extra were not installed."""
    import orion_messages

    monkeypatch.setitem(sys.modules, "psycopg", None)  # "import psycopg" raises ImportError
    monkeypatch.delitem(sys.modules, "orion_messages._store_postgres", raising=False)
    monkeypatch.delattr(orion_messages, "_store_postgres", raising=False)


def test_a_postgresql_url_without_psycopg_raises_missing_extra_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_psycopg(monkeypatch)
    url = "postgresql://app:secret@db.invalid/chats"
    expected = (
        'postgresql://app:***@db.invalid/chats: a PostgreSQL store needs the "psycopg" package: '
        'pip install "orion-messages[postgres]"'
    )
    with pytest.raises(MissingExtraError) as caught:
        open_store(url)
    assert str(caught.value) == expected
    assert isinstance(caught.value, ImportError)
    assert caught.value.extra == "postgres"
    with pytest.raises(MissingExtraError) as caught:
        asyncio.run(open_async_store(url))
    assert str(caught.value) == expected


def test_the_command_line_says_the_same_without_psycopg(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without_psycopg(monkeypatch)
    assert main(["list", "postgresql://app@db.invalid/chats"]) == 1
    assert capsys.readouterr().err == (
        'orion-messages: error: postgresql://app@db.invalid/chats: a PostgreSQL store needs the "psycopg" '
        'package: pip install "orion-messages[postgres]"\n'
    )


def _store_named(url: str) -> str:
    """The store as its errors name it: a SQLite file's path, a PostgreSQL URL without its password."""
    parsed = parse_store_url(url)
    return parsed.database if parsed.backend == "sqlite" else masked_url(url)


def _driver_error(caught: BaseException, url: str) -> None:
    """A driver's own error: its class and text as the driver made them, the store in a note."""
    assert not isinstance(caught, OrionMessagesError)
    assert not str(caught).startswith(_store_named(url))  # the text is the driver's own
    if sys.version_info >= (3, 11):  # add_note is Python 3.11+
        assert caught.__notes__ == [f"in the store {_store_named(url)}"]


def test_a_driver_error_keeps_its_class_and_names_the_store_in_a_note(store_url: str) -> None:
    import sqlite3

    with open_store(store_url) as store:
        store.create("c")
        raw_sql(store_url, "DROP TABLE orion_messages")  # the table the messages are read from
        driver_errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
        if store_url.startswith("postgresql"):
            import psycopg

            driver_errors = (psycopg.Error,)
        with pytest.raises(driver_errors) as caught:
            store.load("c")
        _driver_error(caught.value, store_url)
        with pytest.raises(driver_errors) as again:  # one note, however many calls fail
            store.load("c")
        _driver_error(again.value, store_url)

    async def load_async() -> None:
        async with await open_async_store(store_url) as store:
            await store.load("c")

    with pytest.raises(driver_errors) as caught:
        asyncio.run(load_async())
    _driver_error(caught.value, store_url)


def _interrupted(*args: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.skipif(sys.version_info < (3, 11), reason="add_note is Python 3.11+")
def test_only_the_drivers_errors_get_the_note(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # docs/store.md: the note is for the driver's errors (sqlite3.Error, psycopg.Error); a stored
    # message the library refuses (FormatError) and an interrupt (Ctrl-C) are not.
    from orion_messages import FormatError, _store_ops

    with open_store(sqlite_url) as store:
        store.create("c")
        store.append("c", Message.user("msg-1", "hi", timestamp=1))
        raw_sql(sqlite_url, """UPDATE orion_messages SET data = '{"id": 5}'""")
        with pytest.raises(FormatError) as damaged:
            store.load("c")
        monkeypatch.setattr(_store_ops, "run_sync", _interrupted)
        with pytest.raises(KeyboardInterrupt) as interrupted:
            store.load("c")
    assert [getattr(caught.value, "__notes__", None) for caught in (damaged, interrupted)] == [None, None]


# Damage that SQLite finds as the store opens (a page size that is no power of two, in the header
# it checks) and damage it finds only as a call reads (every page after the second overwritten).
_PAGE = 4096  # SQLite's default page size


def _bad_page_size(data: bytearray) -> None:
    data[16:18] = b"\x00\x03"


def _pages_overwritten(data: bytearray) -> None:
    data[2 * _PAGE :] = b"\xff" * (len(data) - 2 * _PAGE)


@pytest.mark.parametrize(
    ("damage", "text"),
    [(_bad_page_size, "file is not a database"), (_pages_overwritten, "database disk image is malformed")],
)
@pytest.mark.parametrize("create", [True, False])
def test_a_damaged_sqlite_file_names_itself_in_the_drivers_error(
    tmp_path: Any, damage: Any, text: str, create: bool
) -> None:
    import sqlite3

    path = tmp_path / "chats.db"
    with open_store(f"sqlite:///{path}") as store:
        store.create("c")
        store.extend("c", [Message.user(f"msg-{n}", "x" * 500, timestamp=1) for n in range(1, 50)])
    data = bytearray(path.read_bytes())
    damage(data)
    path.write_bytes(bytes(data))
    with (
        pytest.raises(sqlite3.DatabaseError, match=f"^{text}") as caught,
        open_store(f"sqlite:///{path}", create=create) as store,
    ):
        store.load("c")
    _driver_error(caught.value, f"sqlite:///{path}")


def test_a_postgresql_server_that_cannot_be_reached_is_named_in_the_drivers_error() -> None:
    psycopg = pytest.importorskip("psycopg")
    # Port 1 on this machine: no server listens there, so libpq is refused at once.
    url = "postgresql://app:secret@127.0.0.1:1/chats?connect_timeout=5"
    with pytest.raises(psycopg.OperationalError) as caught:
        open_store(url)
    _driver_error(caught.value, url)
    assert "secret" not in "".join(getattr(caught.value, "__notes__", []))
    with pytest.raises(psycopg.OperationalError) as caught:
        asyncio.run(open_async_store(url))
    _driver_error(caught.value, url)
