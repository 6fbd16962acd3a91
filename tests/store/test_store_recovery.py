"""A call that fails or is cancelled leaves the store usable: no transaction left open, no
connection left dead.

docs/store.md promises that every call is one transaction, whole or not at all, and that
cancelling an awaited call on PostgreSQL rolls it back. These tests break calls where audits
found them leaving the store stuck: a COMMIT that fails, a cancel while BEGIN is on the wire, a
task cancelled twice, a connection the server closed, a Ctrl-C between sending a statement and
reading its result (which also left the conversation's row lock held), and an async store used
from a second event loop.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import sqlite3
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from orion_messages import Message, StoreError, _store_sqlite
from orion_messages.store import AsyncConversationStore, open_async_store, open_store


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


# --------------------------------------------------------------------------------------------
# PostgreSQL: an interrupt (Ctrl-C) between sending a statement and reading its result


def _interrupt_once_sent(monkeypatch: pytest.MonkeyPatch, statement: str) -> None:
    """Make the first sync ``execute`` of a statement starting with ``statement`` raise
    KeyboardInterrupt once the statement is sent and before its result is read: where a Ctrl-C
    outside psycopg's own handler leaves the connection busy (``ACTIVE``)."""
    import psycopg

    real_execute = psycopg.Cursor.execute
    real_wait = psycopg.Connection.wait
    armed = [False]

    def execute(self: Any, query: Any, params: Any = None, **options: Any) -> Any:
        if isinstance(query, str) and query.startswith(statement):
            monkeypatch.setattr(psycopg.Cursor, "execute", real_execute)  # once
            armed[0] = True
        return real_execute(self, query, params, **options)

    def wait(self: Any, generator: Any, *args: Any, **options: Any) -> Any:
        if not armed[0]:
            return real_wait(self, generator, *args, **options)
        armed[0] = False
        next(generator)  # psycopg sends the statement, then would wait for its result
        assert self.info.transaction_status == psycopg.pq.TransactionStatus.ACTIVE
        raise KeyboardInterrupt

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    monkeypatch.setattr(psycopg.Connection, "wait", wait)


def _lock_waits(url: str, conversation_id: str) -> float:
    """How long another worker waits for the conversation's row lock (``LockNotAvailable`` past 5 s)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as other:
        other.execute("SET lock_timeout = '5s'")
        started = time.monotonic()
        with other.transaction():
            other.execute("SELECT 1 FROM orion_conversations WHERE id = %s FOR UPDATE", (conversation_id,))
        return time.monotonic() - started


@pytest.mark.parametrize(
    "statement",
    ["BEGIN", "SELECT next_position", "UPDATE orion_conversations SET next_position", "COMMIT"],
)
def test_an_interrupt_while_a_statement_is_sent_leaves_no_lock_and_a_working_store(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch, statement: str
) -> None:
    # Was: every later call raised "another command is already in progress", and the server
    # session stayed idle in transaction holding the row lock, blocking every other writer.
    with open_store(postgres_url) as store:
        store.create("c")
        store.append("c", Message.user("first", "hi"))
        _interrupt_once_sent(monkeypatch, statement)
        with pytest.raises(KeyboardInterrupt):
            store.extend("c", batch("cut", 3))
        monkeypatch.undo()
        # Before the store's next call: the server has ended the transaction, the lock is free.
        assert _lock_waits(postgres_url, "c") < 4
        store.append("c", Message.user("last", "hi"))
        ids = [m.id for m in store.load("c")]
        # A COMMIT that was sent may have landed; the batch is whole either way.
        assert ids in (["first", "last"], ["first", "cut-0", "cut-1", "cut-2", "last"])
        if statement != "COMMIT":
            assert ids == ["first", "last"]
        assert store.info("c").message_count == len(ids)


def test_a_connection_left_mid_statement_is_replaced_before_the_next_call(postgres_url: str) -> None:
    # The safety net for an interrupt that also cut the cleanup short: a statement sent and its
    # result never read (ACTIVE) cannot be rolled back; the next call opens a new connection.
    with open_store(postgres_url) as store:
        store.create("c")
        store._backend._connection.pgconn.send_query(b"SELECT 1")  # type: ignore[attr-defined]
        store.append("c", Message.user("m", "hi"))  # was: "another command is already in progress"
        assert [m.id for m in store.load("c")] == ["m"]

    async def run() -> list[str]:
        async with await open_async_store(postgres_url) as store:
            store._backend._connection.pgconn.send_query(b"SELECT 1")  # type: ignore[attr-defined]
            await store.append("c", Message.user("n", "hi"))
            return [m.id for m in await store.load("c")]

    assert asyncio.run(run()) == ["m", "n"]


def test_a_connection_left_in_pipeline_mode_is_replaced_before_the_next_call(postgres_url: str) -> None:
    # An interrupt while psycopg enters pipeline mode for executemany can leave libpq in it, the
    # transaction status IDLE: every later statement waited forever for a result.
    store = open_store(postgres_url)
    store.create("c")
    store._backend._connection.pgconn.enter_pipeline_mode()  # type: ignore[attr-defined]
    done: list[list[str]] = []

    def call() -> None:
        store.append("c", Message.user("m", "hi"))
        done.append([m.id for m in store.load("c")])

    # On a thread, and closed only once it is done: a call that hangs fails the test, not blocks it.
    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(10)
    assert done == [["m"]]
    store.close()


# --------------------------------------------------------------------------------------------
# PostgreSQL: an async store used from one event loop after another


def test_an_async_store_serves_a_later_event_loop(postgres_url: str) -> None:
    # A store opened once and used by successive asyncio.run calls (or pytest's loop per test).
    async def first() -> AsyncConversationStore:
        store = await open_async_store(postgres_url)
        await store.create("c")
        await asyncio.gather(*(store.append("c", Message.user(f"a{n}", "x")) for n in range(5)))
        return store

    store = asyncio.run(first())

    async def second() -> list[str]:
        # Concurrent calls: was RuntimeError "... is bound to a different event loop".
        await asyncio.gather(*(store.append("c", Message.user(f"b{n}", "x")) for n in range(5)))
        return [m.id for m in await store.load("c")]

    ids = asyncio.run(second())
    assert sorted(ids) == ["a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2", "b3", "b4"]
    asyncio.run(store.close())


def test_an_async_store_refuses_a_second_loop_while_another_loop_s_call_runs(postgres_url: str) -> None:
    import psycopg

    store = asyncio.run(open_async_store(postgres_url))
    asyncio.run(store.create("c"))
    with psycopg.connect(postgres_url, autocommit=True) as holder:
        holder.execute("BEGIN")
        holder.execute("SELECT 1 FROM orion_conversations WHERE id = 'c' FOR UPDATE")
        # A thread's event loop runs a call that waits for the row lock held above.
        waiting = threading.Thread(target=asyncio.run, args=(store.append("c", Message.user("m", "x")),))
        waiting.start()
        deadline = time.monotonic() + 10
        while not holder.execute("SELECT 1 FROM pg_locks WHERE NOT granted").fetchall():
            assert time.monotonic() < deadline, "the thread's call never waited for the lock"
            time.sleep(0.01)
        with pytest.raises(StoreError) as caught:  # the timeout: not a call that waits forever
            asyncio.run(asyncio.wait_for(store.info("c"), 5))
        holder.execute("COMMIT")
        waiting.join(10)
    assert str(caught.value) == (
        f"{store.where}: the store is in use by calls running in another event loop; an async "
        "PostgreSQL store serves one event loop at a time: open a store for each loop"
    )
    assert asyncio.run(store.load("c"))[0].id == "m"  # that loop's calls have ended: this one may
    asyncio.run(store.close())


# The async store follows the sync store's rule: a call cancelled mid-statement closes the
# connection, so the server releases the conversation's row lock at once.


def _cancel_async_once_sent(monkeypatch: pytest.MonkeyPatch, statement: str) -> None:
    """The async twin of ``_interrupt_once_sent``: the first ``execute`` of ``statement`` is sent,
    then the call is cancelled before its result is read (the connection is left ``ACTIVE``)."""
    import psycopg

    real_execute = psycopg.AsyncCursor.execute
    real_wait = psycopg.AsyncConnection.wait
    armed = [False]

    async def execute(self: Any, query: Any, params: Any = None, **options: Any) -> Any:
        if isinstance(query, str) and query.startswith(statement):
            monkeypatch.setattr(psycopg.AsyncCursor, "execute", real_execute)  # once
            armed[0] = True
        return await real_execute(self, query, params, **options)

    async def wait(self: Any, generator: Any, *args: Any, **options: Any) -> Any:
        if not armed[0]:
            return await real_wait(self, generator, *args, **options)
        armed[0] = False
        next(generator)  # psycopg sends the statement, then would wait for its result
        assert self.info.transaction_status == psycopg.pq.TransactionStatus.ACTIVE
        raise asyncio.CancelledError

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", execute)
    monkeypatch.setattr(psycopg.AsyncConnection, "wait", wait)


def test_an_async_call_cancelled_mid_statement_leaves_no_row_lock(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def run() -> tuple[float, list[str]]:
        store = await open_async_store(postgres_url)
        try:
            await store.create("c")
            await store.append("c", Message.user("first", "hi", timestamp=1))
            _cancel_async_once_sent(monkeypatch, "UPDATE orion_conversations SET next_position")
            with pytest.raises(asyncio.CancelledError):
                await store.extend("c", batch("cut", 3))
            monkeypatch.undo()
            # Before the store's next call: the lock is free for another worker.
            waited = await asyncio.to_thread(_lock_waits, postgres_url, "c")
            await store.append("c", Message.user("last", "hi", timestamp=2))
            return waited, [m.id for m in await store.load("c")]
        finally:
            await store.close()

    waited, ids = asyncio.run(run())
    assert waited < 4
    assert ids == ["first", "last"]
