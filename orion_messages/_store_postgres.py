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
    NAMED_ERRORS,
    Finished,
    Operation,
    Steps,
    SyncBackend,
    advance,
    closed_error,
    name_store,
)
from ._store_sql import POSTGRES, statements

__all__ = ["AsyncBackend", "connect", "connect_async"]

T = TypeVar("T")

_IDLE = psycopg.pq.TransactionStatus.IDLE
"""The connection's state between two calls: no transaction open, no query running."""


def connect(url: str, where: str) -> SyncBackend:
    """A sync backend on a new connection to ``url`` (a libpq URL or conninfo string)."""
    return _ReconnectingBackend(url, where)


async def connect_async(url: str, where: str) -> AsyncBackend:
    """An async backend on a new ``psycopg.AsyncConnection`` to ``url``."""
    return AsyncBackend(await psycopg.AsyncConnection.connect(url, autocommit=True), url, where)


class _ReconnectingBackend(SyncBackend):
    """``SyncBackend`` on psycopg, which opens a new connection when the last one was lost."""

    def __init__(self, url: str, where: str) -> None:
        # autocommit: psycopg starts no transactions of its own; the operations' BEGIN/COMMIT are the only ones.
        # binary: bigint, boolean and bytea rows arrive without text parsing.
        super().__init__(psycopg.connect(url, autocommit=True), POSTGRES, where, binary=True)
        self._url = url

    def ready(self) -> None:
        """A connection ready for a transaction: a new one if the server closed the last (a
        restart, an idle timeout, an admin), and none left open by an interrupted call."""
        if self._connection.closed:
            self._connection = psycopg.connect(self._url, autocommit=True)
        elif self._connection.info.transaction_status != _IDLE:
            self._connection.rollback()


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
        self.closed = False
        """Whether ``close`` was called; every later call raises ``StoreError``."""

    async def run(self, operation: Operation[T]) -> T:
        """Run ``operation`` in one transaction and return its result (``run_sync``, awaited)."""
        steps = operation.steps(self.statements)
        async with self._lock:
            if self.closed:
                raise closed_error(self.where)
            try:
                await self._ready()
                return await self._run(operation.write, steps)
            except NAMED_ERRORS as error:
                name_store(error, self.where)
                raise

    async def _ready(self) -> None:
        """A connection ready for a transaction: a new one if the last was lost, none left open.

        A call cancelled twice can leave its ROLLBACK unsent (or make psycopg close the
        connection); the next call ends what it left.
        """
        if self._connection.closed:
            self._connection = await psycopg.AsyncConnection.connect(self._url, autocommit=True)
        elif self._connection.info.transaction_status != _IDLE:
            await self._connection.rollback()

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
        async with self._lock:
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
