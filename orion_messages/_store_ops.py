"""The conversation store's operations, written once for both databases and for sync and async.

Each operation is a generator that yields ``(sql, params, fetch)`` and is sent back the result:
the cursor's ``rowcount`` for ``"none"``, a row or None for ``"one"``, the rows for ``"all"``,
None for ``"many"`` (``executemany``). It holds the logic (positions, checks, decoding); a
driver only runs one in a transaction, so the sync driver here and the async one of the
PostgreSQL backend cannot disagree about what an operation does.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Generator, Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from enum import Enum
from typing import Any, Generic, Literal, Protocol, TypeVar

from ._json_rules import VALUE_DEPTH_MAX, first_deeper_than
from ._store_sql import Dialect, Statements, statements
from ._text import excerpt, kind_of, quoted
from ._unknown_values import Origin
from .conversation import Conversation
from .counting import _require_message_counter
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ConversationExists,
    ConversationNotFound,
    FormatError,
    MessageNotFound,
    OrionMessagesError,
    PendingResultNotFound,
    ResultAlreadyResolved,
    StoreError,
    require_bool,
)
from .models import I64_MAX, Message, Role, message_list, now_ms, require_token_count
from .pruning import ContextConfig, PrunePlan, PruneStrategy, TokenCounter, estimate_tokens, plan_prune
from .wire import invalid_field, is_one_json_object, load_conversation, load_message, record_bytes

__all__ = [
    "ID_BYTES_MAX",
    "ConversationInfo",
    "Operation",
    "Statements",
    "SyncBackend",
    "checked_id",
    "closed_error",
    "name_store",
    "run_sync",
]

T = TypeVar("T")
Steps = Generator[tuple[str, Any, str], Any, T]


class _Unchanged(Enum):
    """The default of ``update``'s arguments: the argument was not given, its value stays."""

    UNCHANGED = "UNCHANGED"

    def __repr__(self) -> str:
        return "UNCHANGED"  # as help() shows the default


@dataclass(frozen=True)
class Operation(Generic[T]):
    """One store call: whether it writes, and its steps given the rendered statements."""

    write: bool
    steps: Callable[[Statements], Steps[T]]


@dataclass(frozen=True)
class ConversationInfo:
    """A conversation in a store: its id, title, free JSON metadata, times and size."""

    id: str
    """The conversation id."""
    title: str | None
    """The title given at creation or by the latest ``update``, if any."""
    metadata: Any
    """Free JSON metadata given at creation or by the latest ``update`` (None when there is none)."""
    created: int
    """When it was created, in milliseconds since the Unix epoch."""
    updated: int
    """When its messages, title or metadata last changed, in milliseconds since the Unix epoch."""
    message_count: int
    """How many messages it holds."""


def _info(row: Sequence[Any]) -> ConversationInfo:
    """A conversation's row as its info; a ``StoreError`` naming the conversation and the column
    for a value orion-messages never writes (SQLite keeps whatever another program put there)."""
    identifier, id_as_bytes, title, title_as_bytes, metadata, created, updated, count = row
    identifier = _stored_text("a stored conversation's id", identifier, id_as_bytes)
    if type(identifier) is not str:
        raise StoreError(
            f"a stored conversation's id is {kind_of(identifier)} {quoted(identifier)}, not text"
        )
    where = f"conversation {quoted(identifier)}"
    title = _stored_text(f"{where}: its title", title, title_as_bytes)
    if title is not None and type(title) is not str:
        raise StoreError(f"{where}: its title is {kind_of(title)} {quoted(title)}, not text")
    for column, value in (("created_ms", created), ("updated_ms", updated), ("message_count", count)):
        _require_stored_int(where, column, value)
    try:
        data = None if metadata is None else json.loads(metadata)
    except (TypeError, ValueError) as error:  # not text, or not JSON
        raise StoreError(f"{where}: its metadata is not JSON text ({error})") from None
    return ConversationInfo(identifier, title, data, created, updated, count)


def _stored_text(what: str, value: Any, as_bytes: Any) -> object:
    """A text column's value as ``Dialect.text_read`` reads it, decoded (``_listed_id``); a
    ``StoreError`` starting with ``what`` when it is a text that is not UTF-8."""
    found = _listed_id(value, as_bytes)
    if as_bytes and isinstance(found, bytes):
        raise StoreError(f"{what} is text whose bytes {quoted(found)} are not UTF-8")
    return found


def _require_stored_int(where: str, column: str, value: Any) -> int:
    """``value``, read from ``column`` of the conversation ``where`` names; a ``StoreError`` naming
    both when it is not an integer (SQLite keeps the text, real or blob another program wrote)."""
    if type(value) is not int:
        raise StoreError(f"{where}: its {column} is {kind_of(value)} {quoted(value)}, not an integer")
    return value


_INT64_MAX = I64_MAX

ID_BYTES_MAX = 1024
"""The longest conversation id, message id or tool call id a store keeps, in UTF-8 bytes.

PostgreSQL refuses an index row over 2,704 bytes, and the indexes on ``(conversation_id, id)``
and ``(conversation_id, tool_call_id)`` hold two ids a row: two of this length and the row's
headers fit with room to spare. Both databases refuse a longer id, so an id that works on one
works on the other.
"""


def _check_id_bytes(what: str, text: str) -> None:
    """Refuse ``text`` (an id the store indexes) when its UTF-8 is longer than ``ID_BYTES_MAX``.

    A character takes 1 to 4 bytes, so only a text whose length could pass the limit is encoded.
    """
    if len(text) * 4 <= ID_BYTES_MAX:
        return
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > ID_BYTES_MAX:
        raise ArgumentValueError(
            f"{what} {quoted(text)} is {size} bytes of UTF-8; the store keeps ids of at most "
            f"{ID_BYTES_MAX} bytes, on both databases"
        )


def checked_id(conversation_id: Any, what: str = "a conversation id") -> str:
    """``conversation_id`` when it is a non-empty str; every operation checks its id here first.

    ``what`` names the argument in the errors (``conversations``' ``after`` is an id too).

    Raises:
        ArgumentTypeError: not a str, or empty (nothing is coerced).
        ArgumentValueError: a lone surrogate, which no database can store, or U+0000, which
            PostgreSQL cannot (refused on both databases, so an id works on either).
    """
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ArgumentTypeError(f"{what} is a non-empty str, got {excerpt(repr(conversation_id))}")
    return _plain_text(what, conversation_id)


def _after_id(after: Any) -> str | None:
    """The id of a listing's ``after``: the id itself, or a ``ConversationInfo``'s; None for none.

    Raises:
        ArgumentTypeError: ``after`` is not a ``ConversationInfo``, a non-empty str or None.
        ArgumentValueError: the id holds U+0000 or a lone surrogate (``checked_id``).
    """
    if after is None:
        return None
    if isinstance(after, str):
        return checked_id(after, "after (a conversation id)")
    if not isinstance(after, ConversationInfo):
        raise ArgumentTypeError(
            f"after must be a ConversationInfo, a conversation id or None, got {kind_of(after)} {after!r}"
        )
    return checked_id(after.id, "after.id (a conversation id)")


def _page_key(after: Any) -> tuple[int, str] | None:
    """A page's start from a ``ConversationInfo``; None for an id (looked up) or no ``after``."""
    identifier = _after_id(after)  # every ``after`` checked
    if identifier is None or not isinstance(after, ConversationInfo):
        return None
    created = after.created
    if isinstance(created, bool) or not isinstance(created, int):
        raise ArgumentTypeError(f"after.created must be an int, got {kind_of(created)} {created!r}")
    if not -_INT64_MAX - 1 <= created <= _INT64_MAX:
        raise ArgumentValueError(f"after.created must fit in 64 bits, got {created!r}")
    return created, identifier


def _checked_count(what: str, value: Any) -> int | None:
    """``value`` when it is None or a row count a database takes (``load``'s ``last``, ``limit``).

    Raises:
        ArgumentTypeError: not an int or None (a bool is refused: nothing is coerced).
        ArgumentValueError: negative, or above 2**63 - 1 (no 64-bit LIMIT holds it).
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{what} must be an int or None, got {kind_of(value)} {value!r}")
    if value < 0:
        raise ArgumentValueError(f"{what} must be a non-negative integer, got {value!r}")
    if value > _INT64_MAX:
        raise ArgumentValueError(f"{what} must be at most 2**63 - 1, got {value!r}")
    return value


def _plain_text(what: str, value: Any) -> str:
    """``_text`` without U+0000, for the columns PostgreSQL keeps as text (ids, titles)."""
    text = _text(what, value)
    if "\x00" in text:
        raise ArgumentValueError(
            f"{what} cannot hold U+0000 (PostgreSQL text cannot), got {excerpt(repr(value))}"
        )
    return text


def _text(what: str, value: Any) -> str:
    """``value`` when it is a str the databases can store (UTF-8: no lone surrogate)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{what} must be a str, got {type(value).__name__} {excerpt(repr(value))}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ArgumentValueError(
            f"{what} must be valid Unicode, got {excerpt(repr(value))} (a lone surrogate at index {error.start})"
        ) from None
    return value


def _rows(messages: object, function: str) -> list[tuple[Any, ...]]:
    """The rows of an iterable of messages, every one checked before the database is touched,
    as ``function`` (the store's method) takes them: ``message_list`` names it, and a wrong item
    by its index (a set is refused: rows take their positions from the order)."""
    return [_new_row(message, index) for index, message in enumerate(message_list(messages, function))]


def _new_row(message: Message, index: int) -> tuple[Any, ...]:
    """``_message_row`` of the message at ``index`` of a batch, its ids checked to fit (a
    rewrite in place keeps the ids a store already holds); a problem placed at ``[index]``, as
    ``save`` places it."""
    try:
        row = _message_row(message)
        _check_id_bytes("message id", row[0])
        if row[5] is not None:
            _check_id_bytes(f"tool call id of message {quoted(row[0])}", row[5])
        for call in message.tool_calls:  # its result's id is indexed: the call's must fit too
            _check_id_bytes(f"tool call id of message {quoted(row[0])}", call.id)
    except FormatError as error:
        raise error.within(f"[{index}]") from None
    except (AttributeError, TypeError, ValueError):  # a value model_construct let in that no column holds
        found = invalid_field(message) if isinstance(message, Message) else None
        if found is None:
            raise
        raise FormatError([found]).within(f"[{index}]") from None
    return row


def key(s: Statements, text: str) -> str:
    """``text`` as the ``id`` and ``tool_call_id`` columns hold it.

    PostgreSQL's text columns cannot hold U+0000, so there it is stored as U+FFFD: the column is
    a lookup key, and a lookup whose key holds U+FFFD checks each candidate's exact id in ``data``.
    """
    return text.replace("\x00", s["nul"])


def _message_row(message: Message) -> tuple[Any, ...]:
    """A message's queryable columns and its exact JSON text (``dumps_message``'s bytes, looked
    through for NaN as every writer that keeps them does: ``record_bytes``)."""
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"expected a Message, got {type(message).__name__}")
    result = message.tool_result
    return (
        message.id,
        Role(message.role).value,  # model_construct may have left a str
        message.timestamp,
        message.pinned,
        message.is_pending,
        None if result is None else result.tool_call_id,
        message.token_count,
        record_bytes(message).decode(),
    )


def decode(conversation_id: str, rows: Sequence[Sequence[Any]]) -> list[Message]:
    """The messages of ``(position, data)`` rows; a row that is not a valid message raises.

    Raises:
        FormatError: naming the conversation, the row's position and every problem. A corrupt
            row is never skipped.
    """
    if not rows:
        return []
    # One validation of all rows as one array; on any failure, row by row to name the position.
    # Safe because each row is first checked to hold exactly one JSON object, so no row can
    # close or open another's (as storage's JSON Lines).
    texts = [row[1] for row in rows]  # UTF-8 bytes as the dialects read them (str also works)
    where = f"conversation {quoted(conversation_id)}"  # names it in warnings and errors
    if all(map(is_one_json_object, texts)):
        with suppress(FormatError):
            if isinstance(texts[0], bytes):
                joined: bytes | str = b"[" + b",".join(texts) + b"]"
            else:
                joined = "[" + ",".join(texts) + "]"
            messages = load_conversation(joined, origin=Origin(where))
            if len(messages) == len(rows):
                return messages
    out: list[Message] = []
    for position, data in rows:
        at = f"{where}, position {position}"
        try:
            out.append(load_message(data, origin=Origin(at)))
        except FormatError as error:
            raise error.with_source(at) from None
    return out


def _locked(s: Statements, conversation_id: str) -> Steps[int]:
    """Lock the conversation for this transaction; its next free position."""
    row = yield s["lock"], (conversation_id,), "one"
    if row is None:
        raise ConversationNotFound(conversation_id)
    return _require_stored_int(f"conversation {quoted(conversation_id)}", "next_position", row[0])


def _require(s: Statements, conversation_id: str) -> Steps[None]:
    row = yield s["info"], (conversation_id,), "one"
    if row is None:
        raise ConversationNotFound(conversation_id)


def _inserts(
    s: Statements, conversation_id: str, start: int, rows: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    return [
        (
            conversation_id,
            start + offset,
            key(s, message_id),
            role,
            timestamp,
            pinned,
            pending,
            None if call is None else key(s, call),
            *rest,
        )
        for offset, (message_id, role, timestamp, pinned, pending, call, *rest) in enumerate(rows)
    ]


def _metadata_text(metadata: Any) -> str | None:
    if metadata is None:
        return None
    try:
        text = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
        text.encode("utf-8")
    except RecursionError:
        text = None
    except (TypeError, ValueError) as error:  # UnicodeEncodeError (a lone surrogate) is a ValueError
        raise ArgumentTypeError(f"metadata must be a JSON value: {error}") from None
    # What is stored must read back: Python's reader recurses deeper than its writer.
    if text is None or first_deeper_than(text, VALUE_DEPTH_MAX) is not None:
        raise ArgumentValueError(f"metadata may nest at most {VALUE_DEPTH_MAX} levels")
    return text


# --------------------------------------------------------------------------------------------
# conversations


def create(conversation_id: str, title: str | None, metadata: Any) -> Operation[ConversationInfo]:
    """Create an empty conversation; ``ConversationExists`` if the id is taken.

    The info returned holds what is stored: ``metadata`` as JSON reads it back (tuples as lists,
    keys as strs).
    """
    checked_id(conversation_id)
    _check_id_bytes("conversation id", conversation_id)
    if title is not None:
        _plain_text("title", title)
    text = _metadata_text(metadata)
    stored = None if text is None else json.loads(text)

    def steps(s: Statements) -> Steps[ConversationInfo]:
        now = now_ms()
        created = yield s["create"], (conversation_id, title, text, now, now), "none"
        if created == 0:
            raise ConversationExists(conversation_id)
        return ConversationInfo(conversation_id, title, stored, now, now, 0)

    return Operation(True, steps)


def update(
    conversation_id: str,
    title: str | Literal[_Unchanged.UNCHANGED] | None,
    metadata: Any,
) -> Operation[ConversationInfo]:
    """Set the title, the metadata or both, with ``create``'s checks; the info as ``info`` reads it back.

    An argument that is ``_Unchanged.UNCHANGED`` stays as it is. With neither given nothing is
    written (``updated`` stays too): the info is read, and a missing conversation still raises.
    """
    checked_id(conversation_id)
    if title is not None and title is not _Unchanged.UNCHANGED:
        _plain_text("title", title)  # create's check
    changes: list[tuple[str, Any]] = []
    if title is not _Unchanged.UNCHANGED:
        changes.append(("retitle", title))
    if metadata is not _Unchanged.UNCHANGED:
        changes.append(("set_metadata", _metadata_text(metadata)))
    if not changes:
        return info(conversation_id)

    def steps(s: Statements) -> Steps[ConversationInfo]:
        now = now_ms()
        for name, value in changes:
            changed = yield s[name], (value, now, conversation_id), "none"
            if changed == 0:
                raise ConversationNotFound(conversation_id)
        row = yield s["info"], (conversation_id,), "one"
        return _info(row)

    return Operation(True, steps)


def info(conversation_id: str) -> Operation[ConversationInfo]:
    """One conversation's ``ConversationInfo``."""
    checked_id(conversation_id)

    def steps(s: Statements) -> Steps[ConversationInfo]:
        row = yield s["info"], (conversation_id,), "one"
        if row is None:
            raise ConversationNotFound(conversation_id)
        return _info(row)

    return Operation(False, steps)


def conversations(
    limit: int | None = None, after: str | ConversationInfo | None = None
) -> Operation[list[ConversationInfo]]:
    """The conversations oldest first, by ``(created, id)``: every one, or a page of them.

    A page holds at most ``limit`` conversations, starting right after ``after``: the previous
    page's last ``ConversationInfo``, or its id (None starts at the first). It is keyset paging:
    the page is found from ``after``'s ``(created, id)`` (an id's looked up in the same
    transaction), so a page costs the same however deep into the listing it is, and a
    conversation created or deleted between two pages neither shifts nor repeats the others (one
    created meanwhile shows up later only if it sorts after the page's start, as one created now does).

    Raises:
        ArgumentTypeError: ``limit`` is not an int or None; ``after`` is not a ``ConversationInfo``,
            a non-empty str or None.
        ArgumentValueError: ``limit`` is negative or above 2**63 - 1, or ``after`` holds U+0000
            or a lone surrogate, or a ``created`` outside 64 bits.
        ConversationNotFound: no conversation has the id ``after`` (a str).
    """
    limit = _checked_count("limit", limit)
    size = _INT64_MAX if limit is None else limit
    key = _page_key(after)

    def steps(s: Statements) -> Steps[list[ConversationInfo]]:
        start = key
        if isinstance(after, str):
            found = yield s["created"], (after,), "one"
            if found is None:
                raise ConversationNotFound(after)
            start = (found[0], after)
        if start is not None:
            rows = yield s["page_after"], (*start, size), "all"
        elif limit is not None:
            rows = yield s["page"], (limit,), "all"
        else:
            rows = yield s["list"], (), "all"
        return [_info(row) for row in rows]

    return Operation(False, steps)


def conversation_ids(
    limit: int | None = None, after: str | ConversationInfo | None = None
) -> Operation[list[str]]:
    """The ids every call takes, in the order the database sorts text: every one, or a page of
    at most ``limit`` starting right after the id ``after`` (a ``ConversationInfo``: its id;
    None: at the first).

    Keyset paging on the id alone: ``after`` is compared, never looked up, so it need not
    exist any more, and no other column is read. A row whose id no call takes
    (``unusable_conversation_ids``) is never among them.

    Raises:
        ArgumentTypeError: ``limit`` is not an int or None; ``after`` not a ``ConversationInfo``,
            a non-empty str or None.
        ArgumentValueError: ``limit`` is negative or above 2**63 - 1, or ``after``'s id holds
            U+0000 or a lone surrogate.
    """
    limit = _checked_count("limit", limit)
    # "" sorts before every id listed: the empty id is one no call takes.
    start = _after_id(after) or ""
    size = _INT64_MAX if limit is None else limit

    def steps(s: Statements) -> Steps[list[str]]:
        ids: list[str] = []
        key: str | bytes = start
        while True:
            wanted = size - len(ids)
            rows = yield s["id_page"], (key, wanted), "all"
            ids += [found for found in (_listed_id(*row) for row in rows) if isinstance(found, str)]
            if len(rows) < wanted or len(ids) == size:
                return ids
            key = rows[-1][0]  # an id left out (not UTF-8) shortened the page: on past it, as read

    return Operation(False, steps)


def unusable_conversation_ids() -> Operation[list[object]]:
    """The ids, as the driver reads them, of the conversation rows whose id no call takes
    (``checked_id`` refuses it): another program's NULL (None), empty text, and in SQLite a blob
    (bytes), a text holding U+0000 or a text that is not UTF-8 (its bytes); none in a store only
    orion-messages wrote."""

    def steps(s: Statements) -> Steps[list[object]]:
        rows = yield s["unusable_ids"], (), "all"
        read = ((_listed_id(value, as_bytes), unusable) for value, as_bytes, unusable in rows)
        return [found for found, unusable in read if unusable or not isinstance(found, str)]

    return Operation(False, steps)


def _listed_id(value: Any, as_bytes: Any) -> object:
    """An id (or title) as ``Dialect.text_read`` reads it: a text read ``as_bytes`` (SQLite's)
    as a str, or still bytes when they are not UTF-8, which no call takes; else as the driver
    read it."""
    if as_bytes and isinstance(value, bytes):
        with suppress(UnicodeDecodeError):
            return value.decode()
    return value


def count_conversations() -> Operation[int]:
    """How many conversations the store holds."""

    def steps(s: Statements) -> Steps[int]:
        row = yield s["count_conversations"], (), "one"
        return int(row[0])

    return Operation(False, steps)


def delete(conversation_id: str) -> Operation[None]:
    """Delete a conversation with its messages and archive."""
    checked_id(conversation_id)

    def steps(s: Statements) -> Steps[None]:
        yield from _locked(s, conversation_id)
        yield s["delete_archived"], (conversation_id,), "none"
        yield s["delete_messages"], (conversation_id,), "none"
        yield s["delete"], (conversation_id,), "none"

    return Operation(True, steps)


# --------------------------------------------------------------------------------------------
# messages


def append(conversation_id: str, message: Message, function: str) -> Operation[None]:
    """Append one message (``extend`` by it) for ``function``, which names a wrong one as its
    argument, not as the item ``[0]`` of a list."""
    checked_id(conversation_id)
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"{function}: expected a Message, got {kind_of(message)}")
    return extend(conversation_id, (message,), function)


def extend(conversation_id: str, messages: Iterable[Message], function: str) -> Operation[None]:
    """Append messages at the end, all or none; positions are taken under the conversation's lock.
    ``function`` (the store's method) is named in an error about ``messages``."""
    checked_id(conversation_id)
    rows = _rows(messages, function)  # fails before the database is touched
    if not rows:  # nothing changes, so ``updated`` stays; a missing conversation still raises
        return Operation(False, lambda s: _require(s, conversation_id))

    def steps(s: Statements) -> Steps[None]:
        start = yield from _locked(s, conversation_id)
        yield s["insert"], _inserts(s, conversation_id, start, rows), "many"
        yield s["grow"], (start + len(rows), len(rows), now_ms(), conversation_id), "none"

    return Operation(True, steps)


def replace(
    conversation_id: str, messages: Iterable[Message], create: bool, function: str
) -> Operation[None]:
    """Replace every message, all or none (creating the conversation first with ``create``).
    ``function`` (the store's method) is named in an error about ``messages``.

    Positions keep growing, so an archived message never collides with a new one.
    """
    checked_id(conversation_id)
    rows = _rows(messages, function)
    require_bool("create", create)
    if create:
        _check_id_bytes("conversation id", conversation_id)

    def steps(s: Statements) -> Steps[None]:
        if create:
            now = now_ms()
            yield s["create"], (conversation_id, None, None, now, now), "none"
        start = yield from _locked(s, conversation_id)
        yield s["delete_messages"], (conversation_id,), "none"
        if rows:
            yield s["insert"], _inserts(s, conversation_id, start, rows), "many"
        yield s["recount"], (start + len(rows), len(rows), now_ms(), conversation_id), "none"

    return Operation(True, steps)


def load(conversation_id: str, last: int | None, since: str | None) -> Operation[list[Message]]:
    """The messages in order: all, the last ``last``, or those after the message ``since``.

    With both, the last ``last`` of those after ``since``. Only the rows returned are read.
    """
    checked_id(conversation_id)
    last = _checked_count("last", last)
    if since is not None:
        _text("since (a message id)", since)

    def steps(s: Statements) -> Steps[list[Message]]:
        if since is not None:
            found = yield from _position_of(s, conversation_id, since)
            if found is None:
                yield from _require(s, conversation_id)
                raise MessageNotFound(conversation_id, since)
            if last is None:
                rows = yield s["after"], (conversation_id, found), "all"
            else:
                rows = (yield s["last_after"], (conversation_id, found, last), "all")[::-1]
        elif last is not None:
            rows = (yield s["last"], (conversation_id, last), "all")[::-1]
        else:
            rows = yield s["all"], (conversation_id,), "all"
        if not rows:
            yield from _require(s, conversation_id)
        return decode(conversation_id, rows)

    return Operation(False, steps)


def archived(conversation_id: str) -> Operation[list[Message]]:
    """The messages pruning archived, in their original order."""
    checked_id(conversation_id)

    def steps(s: Statements) -> Steps[list[Message]]:
        yield from _require(s, conversation_id)
        rows = yield s["archived"], (conversation_id,), "all"
        return decode(conversation_id, rows)

    return Operation(False, steps)


def _position_of(s: Statements, conversation_id: str, message_id: str) -> Steps[int | None]:
    """The position of the first message with ``message_id``, or None."""
    lookup = key(s, message_id)
    if "\ufffd" not in lookup:  # the column is exact: no other id has this key
        row = yield s["position_of"], (conversation_id, lookup), "one"
        return None if row is None else int(row[0])
    found = yield from _first_with_id(s, conversation_id, message_id)
    return None if found is None else found[0]


def _first_with_id(s: Statements, conversation_id: str, message_id: str) -> Steps[tuple[int, Message] | None]:
    """The first message with ``message_id`` and its position, or None; exact even where ``key`` is not."""
    rows = yield s["by_id"], (conversation_id, key(s, message_id)), "all"
    for row in rows:  # one, unless ids repeat or two ids share a key (U+0000 and U+FFFD on PostgreSQL)
        message = decode(conversation_id, [row])[0]
        if message.id == message_id:
            return int(row[0]), message
    return None


def _rewrite(s: Statements, conversation_id: str, position: int, message: Message) -> Steps[None]:
    row = _message_row(message)
    # Every query column a change can touch (resolve clears token_count), not only the data.
    columns = (row[-1], message.pinned, message.is_pending, message.token_count)
    yield s["rewrite"], (*columns, conversation_id, position), "none"
    yield s["touch"], (now_ms(), conversation_id), "none"


def set_pinned(conversation_id: str, message_id: str, pinned: bool) -> Operation[bool]:
    """Pin or unpin the first message with ``message_id``; False when there is none.

    Raises:
        ArgumentTypeError: ``pinned`` is not a bool (nothing is coerced; the database is not touched).
    """
    require_bool("pinned", pinned)
    return _change_first(conversation_id, message_id, lambda m: m.pin() if pinned else m.unpin())


def set_token_count(conversation_id: str, message_id: str, token_count: int | None) -> Operation[bool]:
    """Set the ``token_count`` of the first message with ``message_id``; False when there is none.

    Raises:
        ArgumentTypeError: ``token_count`` is not an int or None (the database is not touched).
        ArgumentValueError: ``token_count`` is outside the unsigned 32-bit range.
    """
    require_token_count(token_count)
    return _change_first(conversation_id, message_id, lambda m: m.with_token_count(token_count))


def _change_first(
    conversation_id: str, message_id: str, change: Callable[[Message], Message]
) -> Operation[bool]:
    """Rewrite the first message with ``message_id`` as ``change`` of it; False when there is none."""
    checked_id(conversation_id)
    _text("message_id", message_id)

    def steps(s: Statements) -> Steps[bool]:
        yield from _locked(s, conversation_id)
        found = yield from _first_with_id(s, conversation_id, message_id)
        if found is None:
            return False
        position, message = found
        changed = change(message)
        if changed != message:
            yield from _rewrite(s, conversation_id, position, changed)
        return True

    return Operation(True, steps)


def resolve(conversation_id: str, tool_call_id: str, content: str, is_error: bool) -> Operation[Message]:
    """Fill in a pending tool result in place, with ``Conversation.resolve``'s rules.

    Raises:
        ArgumentTypeError: ``content`` is not a str or ``is_error`` not a bool (before the database is touched).
        PendingResultNotFound: no tool-result message answers ``tool_call_id``.
        ResultAlreadyResolved: no result answering it is pending, and one is completed.
    """
    checked_id(conversation_id)
    _text("tool_call_id", tool_call_id)
    if not isinstance(content, str):
        raise ArgumentTypeError(f"content must be a str, got {type(content).__name__}")
    require_bool("is_error", is_error)

    def steps(s: Statements) -> Steps[Message]:
        yield from _locked(s, conversation_id)
        first = yield from _first_pending(s, conversation_id, tool_call_id)
        if first is None:  # none pending: say whether one is completed (read only to say so)
            found = yield s["by_tool_call"], (conversation_id, key(s, tool_call_id)), "all"
            if any(_answers(m, tool_call_id) for m in decode(conversation_id, found)):
                raise ResultAlreadyResolved(tool_call_id, conversation_id=conversation_id)
            raise PendingResultNotFound(tool_call_id, conversation_id=conversation_id)
        row, message = first
        resolved = Conversation([message]).resolve(tool_call_id, content, is_error=is_error)
        yield from _rewrite(s, conversation_id, row[0], resolved)
        return resolved

    return Operation(True, steps)


def _first_pending(
    s: Statements, conversation_id: str, tool_call_id: str
) -> Steps[tuple[Any, Message] | None]:
    """The row and message of the first pending result that answers ``tool_call_id``, or None.

    The first row with its key is read alone: a call with many pending results is resolved one
    result at a time, and reading them all made that quadratic. Only where that row is another
    id's (on PostgreSQL, U+0000 and U+FFFD share a key in the column) are the rest read, one
    decoded at a time up to the first that answers.
    """
    row = yield s["first_pending_by_tool_call"], (conversation_id, key(s, tool_call_id)), "one"
    if row is None:
        return None
    message = decode(conversation_id, [row])[0]
    if _answers(message, tool_call_id):
        return row, message
    rows = yield s["pending_by_tool_call"], (conversation_id, key(s, tool_call_id)), "all"
    return next(((r, m) for r in rows if _answers(m := decode(conversation_id, [r])[0], tool_call_id)), None)


def _answers(message: Message, tool_call_id: str) -> bool:
    result = message.tool_result
    return result is not None and result.tool_call_id == tool_call_id


def prune(
    conversation_id: str, config: ContextConfig | None, archive: bool, planning: dict[str, Any]
) -> Operation[PrunePlan]:
    """Plan with ``plan_prune`` (``planning``: its keyword arguments) and drop the dropped turns,
    in one transaction; return the plan.

    Raises:
        ArgumentValueError: ``config`` asks for the summarize strategy, which needs a model call.
    """
    checked_id(conversation_id)
    require_bool("archive", archive)
    if isinstance(config, ContextConfig) and config.strategy is PruneStrategy.SUMMARIZE:
        raise ArgumentValueError(
            "the store's prune drops turns (the sliding window); to summarize, load the messages, "
            "prune them with prune(..., summarize=...) and store the result with replace_messages"
        )

    def steps(s: Statements) -> Steps[PrunePlan]:
        yield from _locked(s, conversation_id)
        rows = yield s["all"], (conversation_id,), "all"
        plan = plan_prune(decode(conversation_id, rows), config, **planning)
        # The plan's index ranges are contiguous runs of rows, so each is one position range.
        spans = [
            (conversation_id, rows[turn.start][0], rows[turn.stop - 1][0]) for turn in plan.dropped if turn
        ]
        if spans:
            now = now_ms()
            if archive:
                yield s["archive_range"], [(now, *span) for span in spans], "many"
            yield s["delete_range"], spans, "many"
            yield s["shrink"], (plan.dropped_count, now, conversation_id), "none"
        return plan

    return Operation(True, steps)


def count_tokens(conversation_id: str, count: Callable[[Message], int] | None) -> Operation[int]:
    """The tokens stored: each message's ``token_count`` where set, else ``count`` (default ``estimate_tokens``)."""
    checked_id(conversation_id)
    # Built before the database is touched, so that a text counter is refused up front; checked
    # here first so that the error names this argument, not the TokenCounter built from it.
    if count is not None:
        _require_message_counter(count, "count_tokens: count")
    counter = None if count is None else TokenCounter(count, use_token_count=True)

    def steps(s: Statements) -> Steps[int]:
        yield from _require(s, conversation_id)
        stored = yield s["token_sum"], (conversation_id,), "one"
        # Only the rows without a count are read; each comes with its index for errors.
        rows = yield s["uncounted"], (conversation_id, conversation_id), "all"
        uncounted = decode(conversation_id, [row[:2] for row in rows])
        if counter is None:
            return int(stored[0]) + sum(map(estimate_tokens, uncounted))
        pairs = zip(uncounted, rows, strict=True)
        return int(stored[0]) + sum(counter.counts((message,), row[2])[0] for message, row in pairs)

    return Operation(False, steps)


# --------------------------------------------------------------------------------------------
# the sync driver


class Cursor(Protocol):
    """What the sync driver needs of a DB-API cursor (sqlite3's and psycopg's both qualify)."""

    rowcount: int

    def execute(self, sql: str, params: Any = ..., /) -> Any: ...
    def executemany(self, sql: str, params: Any, /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


def execute(cursor: Cursor, sql: str, params: Any, fetch: str) -> Any:
    """Run one step on ``cursor``; what the operation is sent back."""
    if fetch == "many":
        cursor.executemany(sql, params)
        return None
    cursor.execute(sql, params)
    if fetch == "one":
        return cursor.fetchone()
    if fetch == "all":
        return cursor.fetchall()
    return cursor.rowcount


NAMED_ERRORS = (StoreError, PendingResultNotFound, ResultAlreadyResolved)
"""The errors an operation raises about what a store holds, which the backend names it in."""


def name_store(error: BaseException, where: str) -> None:
    """Say which store, ``where``, an error that escaped one of its calls came from, in place.

    The operations do not know which store runs them, so the backend names it here. The text of
    an error about what the store holds (``NAMED_ERRORS``) gets the store in front; it keeps its
    class and its attributes (``conversation_id``...), and a text that already starts with the
    store (a closed store, the schema's checks) is left as it is. A driver's own error
    (``sqlite3.Error``, ``psycopg.Error``) keeps its text, which the driver owns, and gets a note
    naming the store (``add_note``, Python 3.11 and later). Interrupts pass untouched.
    """
    if isinstance(error, NAMED_ERRORS):
        text = str(error)
        if not text.startswith(f"{where}: "):
            error.args = (f"{where}: {text}", *error.args[1:])
    elif isinstance(error, Exception) and not isinstance(error, OrionMessagesError):
        note = f"in the store {where}"
        if hasattr(error, "add_note") and note not in getattr(error, "__notes__", ()):
            error.add_note(note)


def closed_error(where: str) -> StoreError:
    """The error of a call on a closed store."""
    return StoreError(f"{where}: the store is closed")


@dataclass(frozen=True)
class Finished(Generic[T]):
    """An operation's result, once it has no more steps."""

    value: T


def advance(steps: Steps[T], result: Any) -> tuple[str, Any, str] | Finished[T]:
    """Send ``result`` to the operation: its next step, or ``Finished`` with what it returns."""
    try:
        return steps.send(result)
    except StopIteration as done:
        return Finished(done.value)


def run_sync(cursor: Cursor, begin: str, steps: Steps[T]) -> T:
    """Run an operation's steps in one transaction on ``cursor``: committed whole, or rolled back.

    BEGIN and COMMIT are inside the rollback's reach: a COMMIT that fails (SQLite busy past its
    timeout) or a BEGIN interrupted after the server ran it must not leave a transaction open.
    """
    try:
        cursor.execute(begin)
        result: Any = None
        while not isinstance(step := advance(steps, result), Finished):
            result = execute(cursor, *step)
        cursor.execute("COMMIT")
    except BaseException:
        # The error that stopped the operation is the one to report; a rollback that fails too
        # (a broken connection, no transaction left to end) has nothing to add.
        with suppress(Exception):
            cursor.execute("ROLLBACK")
        raise
    return step.value


class SyncBackend:
    """A DB-API connection running operations one at a time, each in its own transaction.

    A lock serializes the threads sharing it (one connection runs one transaction at a time).
    """

    def __init__(self, connection: Any, dialect: Dialect, where: str, **cursor_options: Any) -> None:
        # connection: a sqlite3 or psycopg connection (their cursor() signatures differ)
        self.dialect = dialect
        self.where = where
        """The database, for messages (a path or a URL without its password)."""
        self.statements = statements(dialect)
        self._connection = connection
        self._cursor_options = cursor_options
        self._lock = threading.Lock()
        self.closed = False
        """Whether ``close`` was called; every later call raises ``StoreError``."""

    def run(self, operation: Operation[T]) -> T:
        """Run ``operation`` in one transaction and return its result."""
        dialect = self.dialect
        with self._lock:
            if self.closed:
                raise closed_error(self.where)
            self.ready()
            cursor = self._connection.cursor(**self._cursor_options)
            try:
                begin = dialect.begin_write if operation.write else dialect.begin_read
                return run_sync(cursor, begin, operation.steps(self.statements))
            except BaseException as error:
                name_store(error, self.where)
                self.failed()
                raise
            finally:
                cursor.close()

    def ready(self) -> None:
        """Make the connection ready for a transaction, before each call (under the lock).

        Nothing here; the SQLite backend ends a transaction an interrupt left open, and the
        PostgreSQL one also reconnects after a lost connection.
        """

    def failed(self) -> None:
        """Clean up after a call that raised, its rollback tried (under the lock).

        Nothing here; the PostgreSQL backend closes a connection the rollback could not make idle.
        """

    def configure(self) -> None:
        """Settings that wait for an accepted schema version; none here (see the SQLite backend)."""

    def close(self) -> None:
        """Close the connection; closing again does nothing."""
        with self._lock:
            self.closed = True
            self._connection.close()
