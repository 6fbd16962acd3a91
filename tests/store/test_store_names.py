"""How a store is named and opened: SQLite file names SQLite could take for a URI, PostgreSQL
passwords holding ``@``, ``/`` or ``?``, the store's name in messages, and which message of a
batch a write refuses.

Every expectation is written from docs/store.md and docs/reliability.md, not from the code's
output.
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from orion_messages import FormatError, Message, StoreError, ToolCall
from orion_messages.cli import main
from orion_messages.store import open_async_store, open_store, parse_store_url

from .test_store import raw_sql

# --------------------------------------------------------------------------------------------
# SQLite: a relative path that starts with "file:" is a file name


def test_a_relative_path_starting_with_file_colon_is_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///file:chats.db") as store:
        assert store.where == "file:chats.db"
        store.create("c1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file:chats.db"]
    with open_store("sqlite:///file:chats.db", create=False) as store:
        assert [c.id for c in store.conversations()] == ["c1"]


def test_a_file_name_holding_mode_memory_is_a_file_whose_data_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite would read "file:keep.db?mode=memory" as a database in memory, lost on close.
    monkeypatch.chdir(tmp_path)
    url = "sqlite:///file:keep.db%3Fmode%3Dmemory"
    with open_store(url) as store:
        store.create("c2")
    with open_store(url, create=False) as store:
        assert [c.id for c in store.conversations()] == ["c2"]
    assert (tmp_path / "file:keep.db?mode=memory").is_file()


# --------------------------------------------------------------------------------------------
# SQLite: files that cannot be opened, said by name


def test_a_dangling_symlink_is_no_store_database(tmp_path: Path) -> None:
    link = tmp_path / "chats.db"
    link.symlink_to(tmp_path / "gone.db")
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{link}", create=False)
    assert str(caught.value) == f"{link}: no such store database; nothing was created"
    assert not (tmp_path / "gone.db").exists()


@pytest.mark.parametrize("create", [True, False])
def test_a_name_too_long_says_so_and_is_cut_in_the_message(tmp_path: Path, create: bool) -> None:
    # reliability.md: a file name in a message is cut to 4,096 characters (4,093 and "...").
    name = "a" * 5000 + ".db"
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{name}", create=create)
    reason = os.strerror(errno.ENAMETOOLONG)
    assert str(caught.value) == "a" * 4093 + f"...: cannot open the store's database: {reason}"
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.ENAMETOOLONG


def test_the_store_s_name_is_escaped_as_a_file_name_in_messages(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/odd%09name.db") as store:
        assert store.where == f"{tmp_path}/odd\\tname.db"
        with pytest.raises(StoreError) as caught:
            store.info("nope")
    assert str(caught.value) == f'{tmp_path}/odd\\tname.db: no conversation "nope" in the store'
    assert (tmp_path / "odd\tname.db").is_file()


# --------------------------------------------------------------------------------------------
# Values from the data, in double quotes


def test_an_unknown_sqlite_parameter_is_quoted_as_data() -> None:
    with pytest.raises(StoreError) as caught:
        parse_store_url("sqlite:///chats.db?mode=ro")
    assert str(caught.value) == (
        'sqlite:///chats.db?mode=ro: unknown parameter "mode" (a SQLite URL takes only conversation)'
    )


def test_stored_values_another_program_wrote_are_quoted_as_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    with open_store(url) as store:
        store.create("a")
    raw_sql(url, "UPDATE orion_conversations SET created_ms = 'yesterday'")
    with open_store(url) as store, pytest.raises(StoreError) as caught:
        store.info("a")
    assert str(caught.value) == (
        f'{tmp_path / "chats.db"}: conversation "a": its created_ms is a str "yesterday", not an integer'
    )
    raw_sql(url, "UPDATE orion_store_version SET version = 'abc'")
    with pytest.raises(StoreError) as caught:
        open_store(url)
    assert str(caught.value) == (
        f'{tmp_path / "chats.db"}: the store\'s version is "abc", not a number; it was not made by orion-messages'
    )


# --------------------------------------------------------------------------------------------
# A batch write names the message it refuses


def _batch_with_infinity_at(index: int, size: int) -> list[Message]:
    batch = [Message.user(f"msg-{i}", "x", timestamp=1) for i in range(size)]
    call = ToolCall(id="call-1", name="f", arguments={"x": 1})
    bad = Message.assistant("msg-bad", "", timestamp=1, tool_calls=[call])
    bad.tool_calls[0].arguments["x"] = float("inf")  # changed in place, past validation
    batch[index] = bad
    return batch


@pytest.mark.parametrize("call", ["extend", "replace_messages"])
def test_a_batch_write_names_the_refused_message_by_its_index(store_url: str, call: str) -> None:
    batch = _batch_with_infinity_at(250, 500)
    with open_store(store_url) as store:
        store.create("c1")
        store.append("c1", Message.user("msg-0", "kept", timestamp=1))
        with pytest.raises(FormatError) as caught:
            getattr(store, call)("c1", batch)
        assert [p.location for p in caught.value.problems] == ["[250].tool_calls[0].arguments.x"]
        assert str(caught.value).startswith("[250].tool_calls[0].arguments.x: cannot be written as JSON")
        assert [m.id for m in store.load("c1")] == ["msg-0"]  # nothing written


# --------------------------------------------------------------------------------------------
# PostgreSQL: a password holding "@", "/" or "?" (store.md: from the user name's colon to the
# URL's last "@")

PASSWORD = "s3cr@t/pa?ss-TAIL-SECRET"
PIECES = ("s3cr", "pa?ss", "TAIL", "SECRET")


def test_the_parameters_start_after_a_password_holding_a_question_mark() -> None:
    parsed = parse_store_url(
        f"postgresql://app:{PASSWORD}@db.example:5432/chats?sslmode=disable&conversation=ro-c"
    )
    assert parsed.conversation == "ro-c"
    assert parsed.display == "postgresql://app:***@db.example:5432/chats?sslmode=disable&conversation=ro-c"
    # The password percent-encoded whole: libpq reads it as one, up to the one "@" left.
    assert parsed.database == (
        "postgresql://app:s3cr%40t%2Fpa%3Fss-TAIL-SECRET@db.example:5432/chats?sslmode=disable"
    )


class _PasswordServer:
    """A PostgreSQL server that asks for a cleartext password, keeps what the client sends, and refuses it."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.startup: dict[str, str] = {}
        self.password: str | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection, connection.makefile("rb") as stream:
            body = stream.read(int.from_bytes(stream.read(4), "big") - 4)
            fields = body[4:].decode().split("\0")  # after the protocol version: key, value, ...
            self.startup = dict(zip(fields[0::2], fields[1::2], strict=False))
            connection.sendall(b"R" + (8).to_bytes(4, "big") + (3).to_bytes(4, "big"))  # cleartext
            assert stream.read(1) == b"p"
            self.password = stream.read(int.from_bytes(stream.read(4), "big") - 4).rstrip(b"\0").decode()
            refusal = b'SFATAL\0C28P01\0Mpassword authentication failed for user "app"\0\0'
            connection.sendall(b"E" + (len(refusal) + 4).to_bytes(4, "big") + refusal)

    def url(self, userinfo: str) -> str:
        return f"postgresql://{userinfo}@127.0.0.1:{self.port}/chats?sslmode=disable&gssencmode=disable&connect_timeout=5"


def _refused(url: str) -> Any:
    import psycopg

    with pytest.raises(psycopg.Error) as caught:
        open_store(url)
    return caught.value


@pytest.mark.parametrize(
    ("written", "sent"), [(PASSWORD, PASSWORD), ("p%40ss%2Fw%3Fd", "p@ss/w?d"), ("plain", "plain")]
)
def test_libpq_gets_the_whole_password_and_no_error_text_holds_it(written: str, sent: str) -> None:
    pytest.importorskip("psycopg")
    server = _PasswordServer()
    try:
        error = _refused(server.url(f"app:{written}"))
    finally:
        server.thread.join(10)
        server.listener.close()
    assert server.password == sent
    assert server.startup["user"] == "app"
    assert server.startup["database"] == "chats"
    text = "\n".join([str(error), *getattr(error, "__notes__", [])])
    assert "password authentication failed" in text
    for piece in (*PIECES, "p@ss", "w?d", "plain"):
        assert piece not in text


def test_a_user_name_holding_an_at_sign_is_sent_whole() -> None:
    # store.md: the password runs from the user name's colon; the user name before it is one.
    pytest.importorskip("psycopg")
    server = _PasswordServer()
    try:
        _refused(server.url("me@corp:pw@x"))
    finally:
        server.thread.join(10)
        server.listener.close()
    assert server.startup["user"] == "me@corp"
    assert server.password == "pw@x"


def test_a_password_holding_a_question_mark_reaches_the_server(postgres_url: str) -> None:
    # The test server trusts every client: the password is not checked, the URL around it is read.
    parts = urlsplit(postgres_url)
    url = f"postgresql://postgres:{PASSWORD}@{parts.hostname}:{parts.port}{parts.path}?{parts.query}"
    with open_store(url) as store:
        assert PASSWORD not in store.where
        store.create("c1")
    with open_store(postgres_url) as store:
        assert [c.id for c in store.conversations()] == ["c1"]


def test_the_async_store_reads_such_a_password_too(postgres_url: str) -> None:
    parts = urlsplit(postgres_url)
    url = f"postgresql://postgres:{PASSWORD}@{parts.hostname}:{parts.port}{parts.path}?{parts.query}"

    async def scenario() -> list[str]:
        async with await open_async_store(url) as store:
            await store.create("c1")
            return [c.id for c in await store.conversations()]

    assert asyncio.run(scenario()) == ["c1"]


def test_the_command_line_shows_no_piece_of_such_a_password(capsys: pytest.CaptureFixture[str]) -> None:
    # Port 1 on the local machine: nothing listens, so the driver's own error is shown.
    assert main(["list", f"postgresql://app:{PASSWORD}@127.0.0.1:1/postgres?connect_timeout=3"]) == 1
    assert main(["stats", f"postgresql://app:{PASSWORD}@127.0.0.1:1/postgres?conversation=ro-c"]) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert text.count("orion-messages: error: postgresql://app:***@127.0.0.1:1/postgres") == 2
    assert "name the conversation" not in text  # ?conversation= is found after the password
    for piece in PIECES:
        assert piece not in text


@pytest.mark.parametrize(
    ("written", "why"),
    [
        ("50%off", "the password holds a % that starts no %XX escape; write a % as %25"),
        ("a%00b", "the password holds a NUL (%00), which libpq refuses"),
        ("a%FFb", "the password is not UTF-8 once percent-decoded"),
    ],
)
def test_a_password_libpq_would_refuse_and_quote_is_refused_unquoted(written: str, why: str) -> None:
    with pytest.raises(StoreError) as caught:
        parse_store_url(f"postgresql://app:{written}@db.example/chats")
    assert str(caught.value) == f"postgresql://app:***@db.example/chats: {why}"
