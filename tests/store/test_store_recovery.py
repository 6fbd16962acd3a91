"""A call that fails or is cancelled leaves the store usable: no transaction left open, no
connection left dead.

docs/store.md promises that every call is one transaction, whole or not at all, and that
cancelling an awaited call on PostgreSQL rolls it back. These tests break calls where an audit
found them leaving the store stuck: a COMMIT that fails, a cancel while BEGIN is on the wire, a
task cancelled twice, and a connection the server closed.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import sqlite3
from contextlib import suppress
from pathlib import Path

import pytest

from orion_messages import Message, _store_sqlite
from orion_messages.store import open_async_store, open_store


def batch(name: str, size: int) -> list[Message]:
    """``size`` user messages with ids ``name-0``...: a batch that must land whole or not at all."""
    return [Message.user(f"{name}-{index}", "hello", timestamp=index) for index in range(size)]


def whole_batches(ids: list[str]) -> dict[str, int]:
    """How many messages of each batch are stored (each must be 0 or the batch's size)."""
    counts: dict[str, int] = {}
    for message_id in ids:
        name = message_id.rsplit("-", 1)[0]
        counts[name] = counts.get(name, 0) + 1
    return counts


# --------------------------------------------------------------------------------------------
# SQLite: a COMMIT that fails


def test_a_failed_commit_is_rolled_back_and_the_next_call_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A rollback-journal file (a copy restored by a tool; create=False keeps its mode): a reader
    # holding a shared lock makes the writer's COMMIT fail once the busy timeout runs out.
    monkeypatch.setattr(_store_sqlite, "BUSY_TIMEOUT_SECONDS", 0.2)
    path = tmp_path / "chats.db"
    open_store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA journal_mode = DELETE")
    reader = sqlite3.connect(path, isolation_level=None)
    with open_store(f"sqlite:///{path}", create=False) as store:
        store.create("c")
        reader.execute("BEGIN")
        reader.execute("SELECT COUNT(*) FROM orion_messages").fetchone()
        with pytest.raises(sqlite3.OperationalError):
            store.append("c", Message.user("lost", "hi"))
        reader.execute("COMMIT")
        store.append(
            "c", Message.user("kept", "hi")
        )  # was: "cannot start a transaction within a transaction"
        assert [m.id for m in store.load("c")] == ["kept"]
        assert store.info("c").message_count == 1
        other = sqlite3.connect(path, timeout=0.2, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # the store holds no write lock any more
        other.execute("ROLLBACK")
        other.close()
    reader.close()


# --------------------------------------------------------------------------------------------
# PostgreSQL: cancelled calls


def test_a_call_cancelled_while_its_begin_is_sent_leaves_no_transaction(postgres_url: str) -> None:
    async def run() -> list[str]:
        async with await open_async_store(postgres_url) as store:
            await store.create("c")
            task = asyncio.create_task(store.info("c"))  # a read: BEGIN ... READ ONLY
            await asyncio.sleep(0)  # the task has sent its BEGIN and waits for the reply
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # Was: ReadOnlySqlTransaction, the write running inside the read's leftover transaction.
            await store.append("c", Message.user("m", "hi"))
            return [m.id for m in await store.load("c")]

    assert asyncio.run(run()) == ["m"]


@pytest.mark.parametrize("cancels", [1, 2])
def test_calls_cancelled_anywhere_land_whole_or_not_at_all(postgres_url: str, cancels: int) -> None:
    # A task cancelled twice makes psycopg close the connection; the next call opens another.
    chance = random.Random(cancels)
    sizes = {f"b{trial}": chance.choice([1, 3, 40]) for trial in range(40)}

    async def run() -> tuple[list[str], int]:
        async with await open_async_store(postgres_url) as store:
            await store.create("c")
            for name, size in sizes.items():
                task = asyncio.create_task(store.extend("c", batch(name, size)))
                for _ in range(cancels):
                    await asyncio.sleep(chance.uniform(0, 0.004))
                    task.cancel()
                with suppress(asyncio.CancelledError):  # a cancel after the end changes nothing
                    await task
                await store.info("c")  # the store still answers after every cancel
            await store.extend("c", batch("last", 2))
            return [m.id for m in await store.load("c")], (await store.info("c")).message_count

    ids, count = asyncio.run(run())
    assert count == len(ids)
    assert ids[-2:] == ["last-0", "last-1"]
    stored = whole_batches(ids[:-2])
    assert all(stored[name] == sizes[name] for name in stored), stored


# --------------------------------------------------------------------------------------------
# PostgreSQL: a connection the server closed


def _terminate(server_url: str, application: str) -> None:
    """Close, from the server's side, every connection named ``application``."""
    import psycopg

    with psycopg.connect(server_url, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (application,),
        ).fetchall()
    assert ended == [(True,)]


def test_a_lost_connection_is_reopened_on_the_next_call(postgres_url: str) -> None:
    import psycopg

    application = f"orion-victim-{secrets.token_hex(4)}"
    with open_store(f"{postgres_url}&application_name={application}") as store:
        store.create("c")
        _terminate(postgres_url, application)
        with pytest.raises(psycopg.OperationalError):  # the call that finds it lost says so
            store.info("c")
        store.append("c", Message.user("m", "hi"))  # was: "the connection is closed", for good
        assert [m.id for m in store.load("c")] == ["m"]


def test_the_async_store_reopens_a_lost_connection_too(postgres_url: str) -> None:
    import psycopg

    application = f"orion-victim-{secrets.token_hex(4)}"

    async def run() -> list[str]:
        async with await open_async_store(f"{postgres_url}&application_name={application}") as store:
            await store.create("c")
            _terminate(postgres_url, application)
            with pytest.raises(psycopg.OperationalError):
                await store.info("c")
            await store.append("c", Message.user("m", "hi"))
            return [m.id for m in await store.load("c")]

    assert asyncio.run(run()) == ["m"]


def test_a_closed_store_is_not_reopened(postgres_url: str) -> None:
    from orion_messages import StoreError

    store = open_store(postgres_url)
    store.close()
    with pytest.raises(StoreError, match="the store is closed"):
        store.info("c")


def test_a_transaction_left_open_on_the_connection_is_ended_before_the_next_call(postgres_url: str) -> None:
    # The safety net behind the fixes above: whatever left a transaction open (an interrupt
    # between BEGIN and the rollback), the next call starts from a clean connection.
    with open_store(postgres_url) as store:
        store.create("c")
        connection = store._backend._connection  # type: ignore[attr-defined]
        connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        store.append("c", Message.user("m", "hi"))  # not inside the leftover read-only transaction
        assert [m.id for m in store.load("c")] == ["m"]

    async def run() -> list[str]:
        async with await open_async_store(postgres_url) as store:
            connection = store._backend._connection  # type: ignore[attr-defined]
            await connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            await store.append("c", Message.user("n", "hi"))
            return [m.id for m in await store.load("c")]

    assert asyncio.run(run()) == ["m", "n"]


def test_sqlite_ends_a_transaction_left_open_before_the_next_call(sqlite_url: str) -> None:
    # As on PostgreSQL: an interrupt during the ROLLBACK itself leaves the transaction open.
    with open_store(sqlite_url) as store:
        store.create("c")
        store._backend._connection.execute("BEGIN IMMEDIATE")  # type: ignore[attr-defined]
        store.append("c", Message.user("m", "hi"))  # was: "cannot start a transaction within a transaction"
        assert [m.id for m in store.load("c")] == ["m"]
