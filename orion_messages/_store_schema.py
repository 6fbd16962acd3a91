"""The conversation store's schema: its tables, its version number and the upgrades between versions.

``UPGRADES[n]`` holds the statements that take a store from version ``n`` to ``n + 1``; version 0
is an empty database, so creating a store is the first upgrade. Opening a store runs the missing
upgrades and the new version number in one transaction (both databases have transactional DDL):
a failed upgrade leaves the store as it was. A store newer than ``SCHEMA_VERSION`` is refused
untouched. Upgrades are append-only, like the golden fixtures: a released step is never edited.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from ._store_sql import Dialect, render
from ._text import quoted
from .errors import StoreError, StoreVersionError

__all__ = ["READABLE_FROM", "SCHEMA_VERSION", "UPGRADES", "upgrade"]

_MESSAGE_TABLE = """CREATE TABLE {table} (
    conversation_id TEXT NOT NULL REFERENCES orion_conversations (id) ON DELETE CASCADE,
    position {int64} NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    timestamp_ms {int64} NOT NULL,
    pinned {boolean} NOT NULL,
    pending {boolean} NOT NULL,
    tool_call_id TEXT,
    token_count {int64},
    data {json} NOT NULL,{extra}
    PRIMARY KEY (conversation_id, position)
)"""

UPGRADES: dict[int, list[str]] = {
    # 0 -> 1: the first released schema.
    0: [
        "CREATE TABLE orion_store_version (version INTEGER NOT NULL)",
        """CREATE TABLE orion_conversations (
    id TEXT PRIMARY KEY,
    title TEXT,
    metadata {json},
    created_ms {int64} NOT NULL,
    updated_ms {int64} NOT NULL,
    message_count {int64} NOT NULL,
    next_position {int64} NOT NULL
)""",
        _MESSAGE_TABLE.replace("{table}", "orion_messages").replace("{extra}", ""),
        "CREATE INDEX orion_messages_by_id ON orion_messages (conversation_id, id)",
        "CREATE INDEX orion_messages_by_tool_call ON orion_messages (conversation_id, tool_call_id) "
        "WHERE tool_call_id IS NOT NULL",
        _MESSAGE_TABLE.replace("{table}", "orion_archived_messages").replace(
            "{extra}", "\n    archived_ms {int64} NOT NULL,"
        ),
    ],
    # 1 -> 2: an index in the listing's order, so a page of ``conversations(limit=..., after=...)``
    # reads only its own rows instead of sorting every conversation.
    1: [
        "CREATE INDEX orion_conversations_by_created ON orion_conversations (created_ms, id)",
    ],
}
"""The statements from each version to the next, as ``_store_sql`` templates."""

SCHEMA_VERSION = 2
"""The schema version this orion-messages writes and reads."""

READABLE_FROM = 1
"""The oldest schema version this orion-messages uses as it is, without upgrading it.

Version 2 only adds an index, so a version-1 store works unchanged (a page of conversations is
then found by sorting them). Opening with ``create=False`` changes no schema down to this
version: a role that may only read, and an older orion-messages sharing the store, keep working.
"""

_Step = Generator[tuple[str, tuple[Any, ...], str], Any, int]


def upgrade(
    statements: dict[str, str],
    dialect: Dialect,
    where: str,
    target: int = SCHEMA_VERSION,
    *,
    create: bool = True,
) -> _Step:
    """The operation that brings a store to ``target``; returns the version it found.

    With ``create=True`` run in a write transaction; with ``create=False`` in a read one: only
    the version is read, and a store of version ``READABLE_FROM`` or later is left as it is (a
    role that may only read can open it). Raises ``StoreVersionError`` for a store newer than
    ``target``, ``StoreError`` for a version table that is not one row of a known version, and,
    with ``create=False``, ``StoreError`` for a database that holds no store (nothing is created).
    """
    if create and dialect.schema_lock is not None:  # a reader changes nothing, so races no one
        yield dialect.schema_lock, (), "one"
    exists = yield render(dialect.table_exists, dialect), ("orion_store_version",), "one"
    found = 0
    if exists is not None:
        found = _version(where, (yield statements["version"], (), "all"), target)
    elif not create:
        raise StoreError(
            f"{where}: no orion-messages store in this database (no orion_store_version table); "
            "nothing was created"
        )
    if found == target or (not create and found >= READABLE_FROM):
        return found
    if not create:
        raise StoreError(f"{where}: the store has schema version {found}, which this orion-messages reads only after upgrading it; open it with create=True")  # fmt: skip
    for version in range(found, target):
        for template in UPGRADES[version]:
            yield render(template, dialect), (), "none"
    if found == 0:
        yield statements["first_version"], (target,), "none"
    else:
        yield statements["set_version"], (target,), "none"
    return found


def _version(where: str, rows: list[Any], target: int) -> int:
    """The version the store's version table holds: one row, a version from 1 on.

    Raises:
        StoreVersionError: a version newer than ``target``.
        StoreError: no row, several, or a value that no orion-messages wrote (nothing is changed).
    """
    if not rows:
        raise StoreError(f"{where}: the store's version table is empty; it was not made by orion-messages")
    if len(rows) > 1:
        found = ", ".join(quoted(row[0]) for row in rows[:5]) + (", ..." if len(rows) > 5 else "")
        raise StoreError(f"{where}: the store's version table holds {len(rows)} rows ({found}), not one; it was not made by orion-messages")  # fmt: skip
    version = rows[0][0]
    if type(version) is not int:  # a table of the name that orion-messages did not write
        raise StoreError(f"{where}: the store's version is {quoted(version)}, not a number; it was not made by orion-messages")  # fmt: skip
    if version < 1:
        raise StoreError(f"{where}: the store's version is {version}, which no orion-messages writes (versions start at 1); it was not made by orion-messages")  # fmt: skip
    if version > target:
        raise StoreVersionError(where, version, target)
    return version
