"""The conversation store's SQLite backend: the standard library's ``sqlite3``, nothing to install.

The database runs in WAL mode (readers never wait for the writer, the writer never waits for
readers) with a busy timeout, so writers from several threads and processes queue for the
lock instead of failing with "database is locked". Every write begins ``BEGIN IMMEDIATE``: it
holds the write lock from its first statement, so positions are read and assigned under it.
"""

from __future__ import annotations

import errno
import os
import sqlite3

from ._store_ops import SyncBackend
from ._store_sql import SQLITE

__all__ = ["connect"]

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a writer waits for another's transaction before ``sqlite3.OperationalError``."""


def connect(path: str) -> SyncBackend:
    """Open (or create) the SQLite database at ``path`` (``:memory:`` for a private one).

    WAL mode is set by the store once the schema version is accepted (``SQLITE.after_upgrade``).
    """
    # isolation_level=None: the driver starts no transactions of its own; the operations'
    # BEGIN IMMEDIATE / COMMIT are the only ones. check_same_thread=False: the backend's lock
    # serializes threads, and the async store runs it on its worker thread.
    folder = os.path.dirname(os.path.abspath(path))
    if path != ":memory:" and not os.path.isdir(
        folder
    ):  # sqlite3 would say only "unable to open database file"
        raise FileNotFoundError(errno.ENOENT, "no such folder for the store's database", path)
    connection = sqlite3.connect(
        path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
    )
    try:
        connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        connection.execute("PRAGMA foreign_keys = ON")
    except BaseException:
        connection.close()
        raise
    return SyncBackend(connection, SQLITE, path)
