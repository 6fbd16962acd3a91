"""Opening only an existing store (``create=False``), and the command line reading without creating.

The expected texts and outcomes are written by hand from the audit finding: reading a mistyped
store URL must fail naming the database and leave nothing behind.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
from pathlib import Path

import pytest

from orion_messages import Message, OrionMessagesError, StoreError, dumps
from orion_messages.cli import main
from orion_messages.store import open_async_store, open_store, parse_store_url

NO_STORE = "no orion-messages store in this database (no orion_store_version table); nothing was created"


def _table_names(url: str) -> list[str]:
    """The tables in the store's database (its schema, on PostgreSQL), read behind its back."""
    parsed = parse_store_url(url)
    if parsed.backend == "sqlite":
        with sqlite3.connect(parsed.database) as connection:
            rows = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        return sorted(row[0] for row in rows)
    import psycopg

    with psycopg.connect(parsed.database, autocommit=True) as connection:
        found = connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        return sorted(row[0] for row in found.fetchall())


def test_a_missing_sqlite_file_is_refused_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{missing}", create=False)
    assert str(caught.value) == f"{missing}: no such store database; nothing was created"
    assert isinstance(caught.value, OrionMessagesError)
    assert not missing.exists()


def test_a_missing_file_in_a_missing_folder_is_refused_the_same_way(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "typo.db"
    with pytest.raises(StoreError, match="no such store database"):
        open_store(f"sqlite:///{missing}", create=False)
    assert not (tmp_path / "nowhere").exists()


def test_a_file_name_with_uri_characters_is_opened_as_named(tmp_path: Path) -> None:
    # '?', '#' and '%' mean something in a file: URI; the file must still be the one named.
    database = tmp_path / "a?b#c%20d.db"
    sqlite3.connect(database).close()
    quoted = str(database).replace("%", "%25").replace("?", "%3F").replace("#", "%23")
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{quoted}", create=False)
    assert str(caught.value) == f"{database}: {NO_STORE}"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a?b#c%20d.db"]


def test_an_empty_database_gets_no_tables(store_url: str) -> None:
    # A fresh SQLite file or PostgreSQL schema: a database, but no store in it.
    parsed = parse_store_url(store_url)
    if parsed.backend == "sqlite":
        sqlite3.connect(parsed.database).close()
    with pytest.raises(StoreError) as caught:
        open_store(store_url, create=False)
    where = parsed.database if parsed.backend == "sqlite" else parsed.display
    assert str(caught.value) == f"{where}: {NO_STORE}"
    assert _table_names(store_url) == []


def test_an_existing_store_opens_with_its_conversations(store_url: str) -> None:
    with open_store(store_url) as store:
        store.create("c1")
        store.append("c1", Message.user("msg-1", "hi", timestamp=1))
    with open_store(store_url, create=False) as store:
        assert [m.id for m in store.load("c1")] == ["msg-1"]
        store.append("c1", Message.assistant("msg-2", "hello", timestamp=2))  # still writable
        assert store.info("c1").message_count == 2


def test_the_async_store_refuses_a_missing_file_too(tmp_path: Path) -> None:
    missing = tmp_path / "typo.db"

    async def run() -> None:
        await open_async_store(f"sqlite:///{missing}", create=False)

    with pytest.raises(StoreError, match=r"typo\.db: no such store database"):
        asyncio.run(run())
    assert not missing.exists()


def test_the_async_store_opens_an_existing_one(store_url: str) -> None:
    open_store(store_url).close()

    async def run() -> list[str]:
        async with await open_async_store(store_url, create=False) as store:
            return [info.id for info in await store.conversations()]

    assert asyncio.run(run()) == []


def test_create_must_be_a_bool(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="create must be a bool, got int 0"):
        open_store(f"sqlite:///{tmp_path / 'c.db'}", create=0)  # type: ignore[arg-type]
    assert not (tmp_path / "c.db").exists()


def test_in_memory_without_create_holds_no_store() -> None:
    with pytest.raises(StoreError, match="no orion-messages store"):
        open_store("sqlite://", create=False)


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "sqlite:///{db}"],
        ["validate", "sqlite:///{db}?conversation=c1"],
        ["stats", "sqlite:///{db}?conversation=c1"],
        ["convert", "sqlite:///{db}?conversation=c1", "{out}"],
    ],
)
def test_reading_a_missing_store_fails_and_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    database = tmp_path / "typo.db"
    out = tmp_path / "out.json"
    assert main([part.format(db=database, out=out) for part in argv]) == 1
    assert f"{database}: no such store database; nothing was created" in capsys.readouterr().err
    assert sorted(tmp_path.iterdir()) == []


def test_writing_to_a_missing_store_still_creates_it(tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_bytes(dumps([Message.user("msg-1", "hi", timestamp=1)]))
    database = tmp_path / "new.db"
    assert main(["convert", str(source), f"sqlite:///{database}?conversation=c1"]) == 0
    with open_store(f"sqlite:///{database}", create=False) as store:
        assert [m.id for m in store.load("c1")] == ["msg-1"]


# --------------------------------------------------------------------------------------------
# a WAL-mode file SQLite cannot read where it lies


def _wal_store(path: Path) -> None:
    """A store file in WAL mode, closed: its -wal and -shm files are gone, as after a copy."""
    with open_store(f"sqlite:///{path}") as store:
        store.create("c")
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


class _Refusing:
    """A connection whose first read fails as SQLite's does, with ``code`` (None: Python 3.10)."""

    def __init__(self, code: int | None) -> None:
        self.code = code

    def execute(self, sql: str) -> None:
        error = sqlite3.OperationalError("unable to open database file")
        if self.code is not None:
            error.sqlite_errorcode = self.code  # type: ignore[attr-defined]
        raise error


# SQLITE_READONLY (8) and its extended codes where the folder may not be written, SQLITE_CANTOPEN
# (14) on a read-only file system; before Python 3.11 there is no code and the header decides.
@pytest.mark.parametrize("code", [8, 8 | (5 << 8), 14, None])
def test_a_wal_file_without_its_side_files_is_said_plainly(tmp_path: Path, code: int | None) -> None:
    from orion_messages import _store_sqlite

    path = tmp_path / "chats.db"
    _wal_store(path)
    with pytest.raises(StoreError, match=r"a store in WAL mode can be read only where its -wal and -shm"):
        _store_sqlite._check_readable(_Refusing(code), str(path), str(path))  # type: ignore[arg-type]


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_other_errors_keep_the_driver_s_own(tmp_path: Path, journal: str) -> None:
    from orion_messages import _store_sqlite

    path = tmp_path / "chats.db"
    _wal_store(path)
    if journal == "delete":
        with sqlite3.connect(path) as connection:
            connection.execute("PRAGMA journal_mode = DELETE")
    code = 5 if journal == "wal" else 14  # SQLITE_BUSY on a WAL file; anything on another
    with pytest.raises(sqlite3.OperationalError):
        _store_sqlite._check_readable(_Refusing(code), str(path), str(path))  # type: ignore[arg-type]


def test_a_wal_store_on_a_read_only_file_system(tmp_path: Path) -> None:
    # The real thing where the machine lets the tests mount (root, as in CI).
    import subprocess

    mount = tmp_path / "mounted"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        _wal_store(mount / "chats.db")
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        with pytest.raises(StoreError, match=r"chats\.db: a store in WAL mode can be read only where"):
            open_store(f"sqlite:///{mount / 'chats.db'}", create=False)
    finally:
        subprocess.run(["umount", str(mount)], check=True)


# --------------------------------------------------------------------------------------------
# a path that names no database


@pytest.mark.parametrize("create", [True, False])
def test_a_folder_is_refused_by_name(tmp_path: Path, create: bool) -> None:
    # sqlite3 said only "unable to open database file", naming no file.
    with pytest.raises(
        StoreError, match=rf"^{re.escape(str(tmp_path))}: a folder, not a store database; name a file in it$"
    ):
        open_store(f"sqlite:///{tmp_path}", create=create)


@pytest.mark.parametrize("create", [True, False])
@pytest.mark.parametrize("content", [b"hello", b'[{"id": "msg-1"}]\n' * 100, bytes(range(256)) * 20])
def test_a_file_that_is_not_a_database_is_refused_by_name(
    tmp_path: Path, create: bool, content: bytes
) -> None:
    # sqlite3 raised DatabaseError("file is not a database"), naming no file.
    path = tmp_path / "chat.json"
    path.write_bytes(content)
    expected = f"{path}: not a SQLite database (the file does not start with SQLite's header)"
    with pytest.raises(StoreError, match=f"^{re.escape(expected)}$") as caught:
        open_store(f"sqlite:///{path}", create=create)
    assert isinstance(caught.value.__cause__, sqlite3.DatabaseError)
    assert path.read_bytes() == content


def test_an_empty_file_is_a_new_database(tmp_path: Path) -> None:
    path = tmp_path / "chats.db"
    path.touch()  # SQLite takes an empty file as an empty database
    with open_store(f"sqlite:///{path}") as store:
        store.create("c")
    assert path.read_bytes().startswith(b"SQLite format 3\x00")


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
@pytest.mark.parametrize("create", [True, False])
def test_a_device_or_a_fifo_is_refused_by_name(tmp_path: Path, create: bool) -> None:
    # sqlite3 said "disk I/O error" for /dev/null and would block on a FIFO.
    fifo = tmp_path / "chats.db"
    os.mkfifo(fifo)
    with pytest.raises(StoreError, match=r"^/dev/null: a character device, not a store database$"):
        open_store("sqlite:////dev/null", create=create)
    with pytest.raises(StoreError, match=rf"^{re.escape(str(fifo))}: a FIFO, not a store database$"):
        open_store(f"sqlite:///{fifo}", create=create)
