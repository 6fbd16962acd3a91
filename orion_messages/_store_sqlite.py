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
import time
from pathlib import Path

from ._store_ops import SyncBackend, name_store
from ._store_sql import SQLITE
from ._text import shown_place
from .errors import NotARegularFileError, StoreError
from .storage import _require_regular_file

__all__ = ["IN_MEMORY", "connect"]

_SQLITE_BUSY = 5  # SQLite's primary result codes (sqlite3.SQLITE_BUSY... from Python 3.11 on)
_SQLITE_READONLY = 8
_SQLITE_CANTOPEN = 14
_NO_WAL_FILES = (_SQLITE_READONLY, _SQLITE_CANTOPEN)
"""The primary codes of a WAL-mode file whose -wal and -shm files SQLite can neither find nor make."""

IN_MEMORY = ":memory:"
"""SQLite's name for a private database held in memory (the store URL ``sqlite://``)."""

BUSY_TIMEOUT_SECONDS = 30.0
"""How long a writer waits for another's transaction before ``sqlite3.OperationalError``."""


def connect(path: str, *, create: bool = True) -> SyncBackend:
    """Open the SQLite database at ``path`` (``:memory:`` for a private one), creating it unless ``create=False``.

    WAL mode is set by ``configure``, once the store has accepted the schema version, and only
    for a writer's open (``create=True``): with ``create=False`` the file is only read. The
    store is named in messages (``where``) by ``path`` as a file name is shown (``shown_place``).

    Raises:
        StoreError: the folder for a new database does not exist (the ``FileNotFoundError`` as
            its cause); with ``create=False``, no database at ``path`` (nothing is created);
            ``path`` names a folder, a device, a FIFO or a socket, or a file that is not a
            SQLite database; the system refuses to look at ``path`` (a name too long, no
            permission: the ``OSError`` as its cause).
    """
    where = shown_place(path)
    _require_database_file(path, where)
    try:
        connection = _opened(path, where, create=create)
    except sqlite3.Error as error:  # "unable to open database file", "file is not a database"...
        name_store(error, where)
        raise
    return _SqliteBackend(connection, SQLITE, where)


def _opened(path: str, where: str, *, create: bool) -> sqlite3.Connection:
    """A connection to the database at ``path``, set up and its header read (see ``connect``)."""
    if path == IN_MEMORY:
        connection = _connect(IN_MEMORY, uri=False)
    elif create:
        folder = os.path.dirname(path) or "."
        if not os.path.isdir(folder):  # sqlite3 would say only "unable to open"
            missing = FileNotFoundError(errno.ENOENT, "no such folder for the store's database", path)
            raise StoreError(f"{where}: no such folder for the store's database") from missing
        connection = _connect(_file_uri(path, "rwc"), uri=True)
    else:
        connection = _connect_existing(path, where)
    try:
        connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        connection.execute("PRAGMA foreign_keys = ON")
        _check_readable(connection, path, where, create=create)
    except BaseException:
        connection.close()
        raise
    return connection


def _file_uri(path: str, mode: str) -> str:
    """The ``file:`` URI of the file ``path`` names, opened in ``mode`` (``rw``, ``rwc``).

    Every open of a file goes through one, so the name is always a file's: SQLite reads a plain
    name that starts with ``file:`` as a URI (``file:x.db?mode=memory``: a database in memory),
    where this URI holds the absolute path with its ``?``, ``#`` and ``%`` percent-encoded.
    """
    # absolute(), not abspath(): "link/../x.db" is the file the system finds, through the link.
    return f"{Path(path).absolute().as_uri()}?mode={mode}"


def _connect(database: str, *, uri: bool) -> sqlite3.Connection:
    # isolation_level=None: the driver starts no transactions of its own; the operations'
    # BEGIN IMMEDIATE / COMMIT are the only ones. check_same_thread=False: the backend's lock
    # serializes threads, and the async store runs it on its worker thread.
    return sqlite3.connect(
        database, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False, uri=uri
    )


def _require_database_file(path: str, where: str) -> None:
    """Refuse a path that names something other than a file, which sqlite3 reports only as
    "unable to open database file" or "disk I/O error", naming nothing (a FIFO would block),
    and one the system refuses to look at, saying why (a name too long, no permission)."""
    if path == IN_MEMORY:
        return
    try:
        _require_regular_file(path)
    except NotARegularFileError as error:
        hint = "; name a file in it" if error.kind == "a folder" else ""
        raise StoreError(f"{where}: {error.kind}, not a store database{hint}") from None
    except FileNotFoundError:
        return  # created, or refused as missing (a dangling symlink too), below
    except OSError as error:
        raise StoreError(f"{where}: cannot open the store's database: {error.strerror}") from error


def _connect_existing(path: str, where: str) -> sqlite3.Connection:
    """Open the database at ``path`` only if it exists (``mode=rw``: SQLite itself never creates it)."""
    try:
        return _connect(_file_uri(path, "rw"), uri=True)
    except sqlite3.OperationalError:
        if os.path.exists(path):  # a symlink to nothing is no database either
            raise  # it exists but cannot be opened (no permission): the driver says why
        raise StoreError(f"{where}: no such store database; nothing was created") from None


def _check_readable(connection: sqlite3.Connection, path: str, where: str, *, create: bool = False) -> None:
    """Read the file's header now, so that a file SQLite cannot read is said plainly: one that
    is not a database, or, for a reader (``create=False``), a WAL-mode file it cannot open.

    A reader of a WAL-mode file needs its ``-wal`` and ``-shm`` files, or a folder where SQLite
    may create them; a file in rollback mode (``delete``) is read with no other file.
    """
    try:
        connection.execute("PRAGMA schema_version").fetchone()
    except sqlite3.OperationalError as error:
        # SQLITE_READONLY where the folder may not be written, SQLITE_CANTOPEN on a read-only
        # file system. sqlite_errorcode is Python 3.11+; before it, the header decides alone.
        code = getattr(error, "sqlite_errorcode", None)
        if create or not _in_wal_mode(path) or (code is not None and code & 0xFF not in _NO_WAL_FILES):
            raise
        raise StoreError(
            f"{where}: a store in WAL mode can be read only where its -wal and -shm files exist or "
            f"SQLite may create them in its folder ({error})"
        ) from error
    except sqlite3.DatabaseError as error:  # SQLITE_NOTADB: decided by the header, on 3.10 too
        if _header(path)[: len(_SQLITE_MAGIC)] == _SQLITE_MAGIC:
            raise
        raise StoreError(
            f"{where}: not a SQLite database (the file does not start with SQLite's header)"
        ) from error


_SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def _header(path: str) -> bytes:
    """The first bytes of the file at ``path`` (its 100-byte SQLite header); empty if unreadable."""
    try:
        with open(path, "rb") as file:
            return file.read(100)
    except OSError:
        return b""


def _in_wal_mode(path: str) -> bool:
    """Whether the file's header says WAL mode (its read and write versions, bytes 18-19, are 2)."""
    return _header(path)[18:20] == b"\x02\x02"


class _SqliteBackend(SyncBackend):
    def ready(self) -> None:
        """End a transaction an interrupted call left open (a second Ctrl-C during its ROLLBACK),
        so the next call does not fail with "cannot start a transaction within a transaction"."""
        if self._connection.in_transaction:
            self._connection.rollback()

    def configure(self) -> None:
        """Put the database in WAL mode (kept in the file's header, so a newer store is never touched).

        The switch needs every other connection out of the way, and SQLite reports it busy at
        once instead of calling the busy handler: wait and retry, up to the busy timeout.
        """
        deadline = time.monotonic() + BUSY_TIMEOUT_SECONDS
        delay = 0.001
        while True:
            try:
                with self._lock:
                    mode = self._connection.execute("PRAGMA journal_mode").fetchone()[0]
                    if mode.lower() != "wal":
                        self._connection.execute("PRAGMA journal_mode = WAL").fetchone()
                return
            except sqlite3.OperationalError as error:
                # sqlite_errorcode is Python 3.11+; before it, an OperationalError here is the busy one.
                code = getattr(error, "sqlite_errorcode", None)
                busy = code is None or code & 0xFF == _SQLITE_BUSY
                if not busy or time.monotonic() > deadline:
                    raise
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
