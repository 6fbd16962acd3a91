"""The conversation store's PostgreSQL backend: psycopg 3, sync and native async.

Imported only when a ``postgresql://`` URL is opened, so psycopg (the ``postgres`` extra) is
needed only then. Writes run at READ COMMITTED and begin by locking the conversation's row
(``SELECT ... FOR UPDATE``): writers to one conversation take turns, positions are read and
assigned under the lock, and writers to different conversations never wait for each other.
Reads run in a REPEATABLE READ, READ ONLY transaction: one snapshot, never a serialization failure.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from typing import Any, TypeVar

import psycopg

from ._store_ops import (
    Finished,
    Operation,
    Steps,
    SyncBackend,
    advance,
    closed_error,
    name_store,
)
from ._store_sql import POSTGRES, statements
from .errors import StoreError

__all__ = ["AsyncBackend", "connect", "connect_async"]

T = TypeVar("T")

_IDLE = psycopg.pq.TransactionStatus.IDLE
"""The connection's state between two calls: no transaction open, no query running."""
_ROLLS_BACK = (psycopg.pq.TransactionStatus.INTRANS, psycopg.pq.TransactionStatus.INERROR)
"""The states a ROLLBACK ends: a transaction open, idle or failed, and no statement running."""
_PIPELINE_OFF = psycopg.pq.PipelineStatus.OFF
"""Out of pipeline mode (``executemany`` enters it; an interrupt can leave it there)."""


def connect(url: str, where: str) -> SyncBackend:
    """A sync backend on a new connection to ``url`` (a libpq URL or conninfo string).

    A connection that fails raises psycopg's error, with a note naming the store (``where``).
    """
    try:
        return _ReconnectingBackend(url, where)
    except psycopg.Error as error:  # a reconnect later fails inside a call, which names the store
        name_store(error, where)
        raise


async def connect_async(url: str, where: str) -> AsyncBackend:
    """An async backend on a new ``psycopg.AsyncConnection`` to ``url`` (failing as ``connect``)."""
    try:
        connection = await psycopg.AsyncConnection.connect(url, autocommit=True)
    except psycopg.Error as error:
        name_store(error, where)
        raise
    return AsyncBackend(connection, url, where)


class _ReconnectingBackend(SyncBackend):
    """``SyncBackend`` on psycopg, which opens a new connection when the last one was lost or given up."""

    def __init__(self, url: str, where: str) -> None:
        # autocommit: psycopg starts no transactions of its own; the operations' BEGIN/COMMIT are the only ones.
        # binary: bigint, boolean and bytea rows arrive without text parsing.
        super().__init__(psycopg.connect(url, autocommit=True), POSTGRES, where, binary=True)
        self._url = url

    def ready(self) -> None:
        """A connection ready for a transaction: a new one if the server closed the last (a
        restart, an idle timeout, an admin) or ``_settle`` gave it up, and none left open by an
        interrupted call."""
        _settle(self._connection)
        if self._connection.closed:
            self._connection = psycopg.connect(self._url, autocommit=True)

    def failed(self) -> None:
        """After a failed call: ``_settle`` now, so the server releases the call's row lock at once,
        not at this store's next call."""
        _settle(self._connection)


def _settle(connection: psycopg.Connection[Any]) -> None:
    """Leave ``connection`` idle or closed after a call that failed or was interrupted.

    A transaction left open is rolled back. A connection that cannot be rolled back is closed,
    and the server then ends its transaction and releases its locks: a statement still in
    progress (an interrupt after psycopg sent it, before it read the result: ``ACTIVE``, where
    every command fails with "another command is already in progress"), a ROLLBACK that fails.
    """
    if connection.closed or _clean(connection):
        return
    if connection.info.transaction_status in _ROLLS_BACK:
        with suppress(psycopg.Error):  # pipeline mode refuses it, a lost connection fails it
            connection.rollback()
    if not _clean(connection):
        connection.close()


async def _settle_async(connection: psycopg.AsyncConnection[Any]) -> None:
    """``_settle``, awaited: the same rule for the async store."""
    if connection.closed or _clean(connection):
        return
    if connection.info.transaction_status in _ROLLS_BACK:
        with suppress(psycopg.Error):
            await connection.rollback()
    if not _clean(connection):
        await connection.close()


def _clean(connection: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> bool:
    """Whether a call may start on ``connection``: no transaction, no statement, no pipeline."""
    return connection.info.transaction_status == _IDLE and connection.pgconn.pipeline_status == _PIPELINE_OFF


class AsyncBackend:
    """``SyncBackend``'s twin on an ``AsyncConnection``: the same operations, awaited."""

    dialect = POSTGRES

    def __init__(self, connection: psycopg.AsyncConnection[Any], url: str, where: str) -> None:
        self.where = where
        """The database, for messages (the URL without its password)."""
        self.statements = statements(POSTGRES)
        self._connection = connection
        self._url = url
        self._lock = asyncio.Lock()  # one transaction at a time on the connection
        self._loop: asyncio.AbstractEventLoop | None = None
        """The event loop ``_lock`` serves (None until the first call)."""
        self._calls = 0
        """Calls begun and not ended, those waiting for the lock included."""
        self.closed = False
        """Whether ``close`` was called; every later call raises ``StoreError``."""

    async def run(self, operation: Operation[T]) -> T:
        """Run ``operation`` in one transaction and return its result (``run_sync``, awaited)."""
        steps = operation.steps(self.statements)
        lock = self._loop_lock()
        self._calls += 1
        try:
            async with lock:
                if self.closed:
                    raise closed_error(self.where)
                try:
                    await self._ready()
                    return await self._run(operation.write, steps)
                except BaseException as error:
                    name_store(error, self.where)
                    await _settle_async(self._connection)  # the row lock released now (``failed``)
                    raise
        finally:
            self._calls -= 1

    def _loop_lock(self) -> asyncio.Lock:
        """The lock that makes this event loop's calls take turns on the connection.

        An ``asyncio.Lock`` works in one event loop only, and the connection in any: a store
        used by a later loop (a second ``asyncio.run``, pytest's loop per test) gets a new lock,
        once every call of the earlier loop has ended. Calls from two loops at once (threads
        each running one) would share the connection mid-transaction: refused.
        """
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            if self._calls:
                raise StoreError(
                    f"{self.where}: the store is in use by calls running in another event loop; "
                    "an async PostgreSQL store serves one event loop at a time: open a store for each loop"
                )
            self._loop, self._lock = loop, asyncio.Lock()
        return self._lock

    async def _ready(self) -> None:
        """A connection ready for a transaction: a new one if the last was lost, none left open.

        A call cancelled twice can leave its ROLLBACK unsent (or make psycopg close the
        connection); the next call ends what it left (``_settle``).
        """
        await _settle_async(self._connection)
        if self._connection.closed:
            self._connection = await psycopg.AsyncConnection.connect(self._url, autocommit=True)

    async def _run(self, write: bool, steps: Steps[T]) -> T:
        async with self._connection.cursor(binary=True) as cursor:
            # BEGIN and COMMIT inside the try, as in ``run_sync``: a call cancelled while its
            # BEGIN is on the wire must still roll back what the server began.
            try:
                await cursor.execute(POSTGRES.begin_write if write else POSTGRES.begin_read)
                result: Any = None
                while not isinstance(step := advance(steps, result), Finished):
                    result = await _execute(cursor, *step)
                await cursor.execute("COMMIT")
            except BaseException:
                await _rollback(cursor)
                raise
            return step.value

    async def close(self) -> None:
        """Close the connection; closing again does nothing."""
        async with self._loop_lock():
            self.closed = True
            await self._connection.close()


async def _execute(cursor: psycopg.AsyncCursor[Any], sql: str, params: Any, fetch: str) -> Any:
    if fetch == "many":
        await cursor.executemany(sql, params)
        return None
    await cursor.execute(sql, params)
    if fetch == "one":
        return await cursor.fetchone()
    if fetch == "all":
        return await cursor.fetchall()
    return cursor.rowcount


async def _rollback(cursor: psycopg.AsyncCursor[Any]) -> None:
    # The error that stopped the operation is the one to report (see ``run_sync``).
    with suppress(Exception):
        await cursor.execute("ROLLBACK")
