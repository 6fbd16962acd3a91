"""The conversation store's SQL, written once for SQLite and PostgreSQL.

Every statement is a template with ``?`` placeholders and a few dialect slots (``{json}``,
``{for_update}``...); ``statements(dialect)`` renders the whole table for one database, once,
when a store opens. The operations (``_store_ops``) only name statements, so both backends and
the sync and async stores run the same SQL.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["POSTGRES", "SQLITE", "Dialect", "Statements", "statements"]


@dataclass(frozen=True)
class Dialect:
    """What differs between the databases: types, placeholders, locking and transactions."""

    name: str
    placeholder: str
    """The driver's parameter marker: ``?`` for sqlite3, ``%s`` for psycopg."""
    int64: str
    boolean: str
    json: str
    """The column type holding exact JSON text (never PostgreSQL's ``jsonb``, which rewrites it)."""
    json_in: str
    """A JSON parameter, cast where the column type needs it."""
    json_out: str
    """How a JSON column is read back as its exact text (str or UTF-8 bytes); ``{column}`` is the column."""
    for_update: str
    """The row lock a write takes on the conversation row (SQLite locks the database instead)."""
    begin_write: str
    begin_read: str
    schema_lock: str | None
    """Serializes schema creation and upgrades between processes, where the BEGIN does not."""
    table_exists: str
    nul: str
    """What U+0000 becomes in the ``id`` and ``tool_call_id`` columns (PostgreSQL's text refuses it)."""
    unusable_id: str
    """True of a conversation row whose id no call takes (``_store_ops.checked_id`` refuses it):
    another program's NULL or empty text, and in SQLite, whose columns keep any type, a blob or
    a text holding U+0000 (PostgreSQL's text holds neither). SQL cannot tell a text that is not
    UTF-8: ``text_read`` hands it to the operations, which leave it out too."""
    text_read: str
    """How a conversation's text column (``{column}``: its id or title) is read, as two columns:
    the value as the driver reads it, except, in SQLite, a text as its bytes, and whether it was
    so read. Another program may write a text that is not UTF-8 (SQLite keeps it), which sqlite3
    would fail to decode, failing the whole read: the operations decode it
    (``_store_ops._listed_id``)."""
    id_after: str
    """The id a page of ids starts after, as the statement takes it: in SQLite a text made of the
    bytes given, so a page goes on past an id that is not UTF-8 (read as bytes)."""
    maybe_not_utf8: str
    """True of every id that may be a text that is not UTF-8 (in SQLite, one holding a byte past
    ASCII), among which ``unusable_conversation_ids`` decodes to find them."""


SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    int64="INTEGER",
    boolean="INTEGER",
    json="TEXT",
    json_in="?",
    # As bytes: the UTF-8 text is handed to the parser as stored, with no decoding to str between.
    json_out="CAST({column} AS BLOB)",
    for_update="",
    # IMMEDIATE takes the write lock at BEGIN, so positions are read and written under it; a
    # deferred BEGIN would fail with SQLITE_BUSY on upgrade instead of waiting its turn.
    begin_write="BEGIN IMMEDIATE",
    begin_read="BEGIN",
    schema_lock=None,
    table_exists="SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
    nul="\x00",
    unusable_id="id IS NULL OR id = '' OR typeof(id) <> 'text' OR instr(id, char(0)) > 0",
    text_read="CASE WHEN typeof({column}) = 'text' THEN CAST({column} AS BLOB) ELSE {column} END, "
    "typeof({column}) = 'text'",
    id_after="CAST(? AS TEXT)",
    # SQLite's GLOB reads each byte past ASCII, valid UTF-8 or not, as a character past U+007F.
    maybe_not_utf8="id GLOB '*[^' || char(1) || '-' || char(127) || ']*'",
)

POSTGRES = Dialect(
    name="postgresql",
    placeholder="%s",
    int64="BIGINT",
    boolean="BOOLEAN",
    json="JSON",
    json_in="?::json",
    # As UTF-8 bytes (bytea, read in binary): the text reaches the parser as stored, no str between.
    json_out="convert_to({column}::text, 'UTF8')",
    for_update=" FOR UPDATE",
    begin_write="BEGIN",
    # One snapshot for the few statements a read runs; read-only transactions never fail to serialize.
    begin_read="BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
    schema_lock="SELECT pg_advisory_xact_lock(7061726) ",  # any constant, the same in every process
    table_exists="SELECT 1 FROM pg_tables WHERE schemaname = current_schema() AND tablename = ?",
    nul="\ufffd",
    unusable_id="id IS NULL OR id = ''",
    text_read="{column}, FALSE",
    id_after="?",
    maybe_not_utf8="FALSE",  # a database's text is valid in its encoding
)

_MESSAGE_COLUMNS = (
    "conversation_id, position, id, role, timestamp_ms, pinned, pending, tool_call_id, token_count, data"
)
_CONVERSATION_COLUMNS = "{id_read}, {title_read}, {metadata}, created_ms, updated_ms, message_count"

_TEMPLATES = {
    # conversations
    "create": "INSERT INTO orion_conversations (id, title, metadata, created_ms, updated_ms, message_count, "
    "next_position) VALUES (?, ?, {json_in}, ?, ?, 0, 0) ON CONFLICT (id) DO NOTHING",
    "info": f"SELECT {_CONVERSATION_COLUMNS} FROM orion_conversations WHERE id = ?",
    "list": f"SELECT {_CONVERSATION_COLUMNS} FROM orion_conversations ORDER BY created_ms, id",
    "count_conversations": "SELECT COUNT(*) FROM orion_conversations",
    # Paging is keyset paging: a page starts right after the (created_ms, id) of the previous
    # page's last conversation, so a page reads only its own rows from the index on
    # (created_ms, id) (schema version 2), however deep into the listing it is. Row values need
    # SQLite 3.15 or later. tests/store/test_store_plans.py checks both databases' plans.
    "created": "SELECT created_ms FROM orion_conversations WHERE id = ?",
    "page": f"SELECT {_CONVERSATION_COLUMNS} FROM orion_conversations ORDER BY created_ms, id LIMIT ?",
    "page_after": f"SELECT {_CONVERSATION_COLUMNS} FROM orion_conversations WHERE (created_ms, id) > (?, ?) "
    "ORDER BY created_ms, id LIMIT ?",
    # The ids alone, by id: a page starts after an id, which need not exist any more, and is
    # read from the primary key's index. The ids no call takes are listed apart.
    "id_page": "SELECT {id_read} FROM orion_conversations WHERE id > {id_after} AND NOT ({unusable_id}) "
    "ORDER BY id LIMIT ?",
    "unusable_ids": "SELECT {id_read}, ({unusable_id}) FROM orion_conversations "
    "WHERE {unusable_id} OR {maybe_not_utf8} ORDER BY id",
    "delete_archived": "DELETE FROM orion_archived_messages WHERE conversation_id = ?",
    "delete_messages": "DELETE FROM orion_messages WHERE conversation_id = ?",
    "delete": "DELETE FROM orion_conversations WHERE id = ?",
    "lock": "SELECT next_position FROM orion_conversations WHERE id = ?{for_update}",
    "grow": "UPDATE orion_conversations SET next_position = ?, message_count = message_count + ?, "
    "updated_ms = ? WHERE id = ?",
    "recount": "UPDATE orion_conversations SET next_position = ?, message_count = ?, updated_ms = ? WHERE id = ?",
    "shrink": "UPDATE orion_conversations SET message_count = message_count - ?, updated_ms = ? WHERE id = ?",
    "touch": "UPDATE orion_conversations SET updated_ms = ? WHERE id = ?",
    "retitle": "UPDATE orion_conversations SET title = ?, updated_ms = ? WHERE id = ?",
    "set_metadata": "UPDATE orion_conversations SET metadata = {json_in}, updated_ms = ? WHERE id = ?",
    # messages
    "insert": f"INSERT INTO orion_messages ({_MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, {{json_in}})",
    "all": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? ORDER BY position",
    "last": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? "
    "ORDER BY position DESC LIMIT ?",
    "after": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? AND position > ? "
    "ORDER BY position",
    "last_after": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? AND position > ? "
    "ORDER BY position DESC LIMIT ?",
    # The lookups by id and tool call id sort their few matches by ``+position``. With a bare
    # ``ORDER BY position`` SQLite's planner walks the primary key, already in that order, through
    # the whole conversation (time grows with its length) instead of searching the id or tool call
    # index; the unary plus (the same value, in PostgreSQL too) lets no index provide the order, so
    # both databases search the index and sort what it finds: the first by position stays first.
    # tests/store/test_store_plans.py checks both databases' plans.
    "position_of": "SELECT position FROM orion_messages WHERE conversation_id = ? AND id = ? "
    "ORDER BY +position LIMIT 1",
    "by_id": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? AND id = ? "
    "ORDER BY +position",
    "by_tool_call": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? "
    "AND tool_call_id = ? ORDER BY +position",
    # Only the pending results: a server that names every turn's call ``call_0`` leaves one
    # completed result with that id per turn, which ``resolve`` need not read.
    "pending_by_tool_call": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? "
    "AND tool_call_id = ? AND pending ORDER BY +position",
    # The first of them: what ``resolve`` fills in, unless its key is shared (see ``resolve``).
    "first_pending_by_tool_call": "SELECT position, {data} FROM orion_messages WHERE conversation_id = ? "
    "AND tool_call_id = ? AND pending ORDER BY +position LIMIT 1",
    "rewrite": "UPDATE orion_messages SET data = {json_in}, pinned = ?, pending = ?, token_count = ? "
    "WHERE conversation_id = ? AND position = ?",
    "token_sum": "SELECT COALESCE(SUM(token_count), 0) FROM orion_messages WHERE conversation_id = ?",
    # Each message without a token_count, with its index in the conversation (positions have
    # gaps after a prune) so that a counter's error names the message as ``load`` numbers it.
    # Only positions are numbered (from the key); only the rows returned have their data read.
    "uncounted": "SELECT m.position, {data}, i.at FROM orion_messages AS m JOIN (SELECT position, "
    "row_number() OVER (ORDER BY position) - 1 AS at FROM orion_messages WHERE conversation_id = ?) "
    "AS i ON i.position = m.position WHERE m.conversation_id = ? AND m.token_count IS NULL "
    "ORDER BY m.position",
    "archive_range": f"INSERT INTO orion_archived_messages ({_MESSAGE_COLUMNS}, archived_ms) "
    f"SELECT {_MESSAGE_COLUMNS}, ? FROM orion_messages "
    "WHERE conversation_id = ? AND position BETWEEN ? AND ?",
    "delete_range": "DELETE FROM orion_messages WHERE conversation_id = ? AND position BETWEEN ? AND ?",
    "archived": "SELECT position, {data} FROM orion_archived_messages WHERE conversation_id = ? "
    "ORDER BY position",
    # schema
    "version": "SELECT version FROM orion_store_version",
    "set_version": "UPDATE orion_store_version SET version = ?",
    "first_version": "INSERT INTO orion_store_version (version) VALUES (?)",
}

Statements = dict[str, str]
"""Statement name to SQL text, ready for the driver; and ``nul``, the dialect's ``Dialect.nul``."""


def render(template: str, dialect: Dialect) -> str:
    """One template in ``dialect``'s SQL, with the driver's placeholders."""
    text = template.format(
        json_in=dialect.json_in,
        for_update=dialect.for_update,
        data=dialect.json_out.format(column="data"),
        metadata=dialect.json_out.format(column="metadata"),
        json=dialect.json,
        int64=dialect.int64,
        boolean=dialect.boolean,
        unusable_id=dialect.unusable_id,
        id_read=dialect.text_read.format(column="id"),
        title_read=dialect.text_read.format(column="title"),
        id_after=dialect.id_after,
        maybe_not_utf8=dialect.maybe_not_utf8,
    )
    return text.replace("?", dialect.placeholder)


def statements(dialect: Dialect) -> Statements:
    """Every statement of the store, rendered for ``dialect``."""
    rendered = {name: render(template, dialect) for name, template in _TEMPLATES.items()}
    rendered["nul"] = dialect.nul  # not SQL: the operations' lookup keys (``_store_ops.key``)
    return rendered
