"""The conversation store: many conversations in SQLite or PostgreSQL, one row per message.

``open_store(url)`` gives a ``ConversationStore``; ``await open_async_store(url)`` its async twin,
``AsyncConversationStore``, with the same calls and the same semantics. The URL picks the
backend, as SQLAlchemy spells them: ``sqlite:///chat.db`` (relative), ``sqlite:////srv/chat.db``
(absolute), ``sqlite://`` (in memory), ``postgresql://user@host/db`` (psycopg 3, the ``postgres``
extra). Each message is stored as the exact text ``dumps_message`` writes, so loading gives back
byte-identical messages. See docs/store.md.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, TypeVar
from urllib.parse import unquote

from typing_extensions import Self

from . import _store_ops as ops
from . import _store_schema, _store_sqlite
from ._store_ops import ConversationInfo, Operation, SyncBackend, _Unchanged, closed_error
from ._store_sql import Dialect
from ._store_url import SCHEMES

# The URL helpers, importable from here as before they moved to ``_store_url``.
from ._store_url import is_store_url as is_store_url
from ._store_url import is_url as is_url
from ._store_url import masked_url as masked_url
from ._store_url import url_passwords as url_passwords
from ._text import excerpt, quoted, shown_place
from .counting import MessageCounter
from .errors import ArgumentTypeError, MissingExtraError, StoreError, require_bool
from .models import Message
from .pruning import ContextConfig, PrunePlan
from .templates import ChatTemplate, ToolSchema
from .text_counters import TextCounter

__all__ = [
    "AsyncConversationStore",
    "ConversationInfo",
    "ConversationStore",
    "StoreURL",
    "open_async_store",
    "open_store",
    "parse_store_url",
]

T = TypeVar("T")


@dataclass(frozen=True)
class StoreURL:
    """A parsed store URL: which backend, which database, and the conversation it names, if any."""

    backend: Literal["sqlite", "postgresql"]
    """``"sqlite"`` or ``"postgresql"``."""
    database: str = field(repr=False)  # it may hold a password: the repr shows ``display``
    """The SQLite file (``:memory:`` for none), or the libpq URL without ``conversation``; it
    may hold a password, so the repr leaves it out (``display`` is shown)."""
    conversation: str | None
    """The ``conversation`` query parameter (used by the command line), if given."""
    display: str
    """The URL without its password, for messages: escaped and cut as messages show text from the data."""

    @property
    def in_memory(self) -> bool:
        """Whether it is SQLite in memory (``sqlite://``): a store that ends with its process."""
        return self.backend == "sqlite" and self.database == _store_sqlite.IN_MEMORY


def parse_store_url(url: str) -> StoreURL:
    """Parse a store URL; see the module docstring for the forms.

    A ``#`` is literal: part of the SQLite path or of a parameter's value, never a fragment
    (``%23`` works too). Passwords, in the authority (``user:pw@``) or in a ``password`` or
    ``sslpassword`` parameter, are masked in ``display``.

    Raises:
        ArgumentTypeError: ``url`` is not a str.
        StoreError: not a store URL, a PostgreSQL URL without ``//``, a SQLite URL of another form than the module docstring's
            (``sqlite:x.db``, ``sqlite:///`` with no path), a host in a SQLite URL, an unknown
            SQLite parameter, an empty or repeated ``conversation``, a percent-escape that is not UTF-8 (``%FF``) in the SQLite
            path or ``conversation``, or a NUL in the SQLite path.
    """
    if not isinstance(url, str):
        raise ArgumentTypeError(
            f"a store URL is a str such as 'sqlite:///chats.db', got {type(url).__name__} {excerpt(repr(url))}"
        )
    scheme, _, rest = url.partition(":")
    backend = SCHEMES.get(scheme.lower())
    head, mark, query = rest.partition("?")
    segments = query.split("&") if mark else []
    display = shown_place(masked_url(url))  # escaped: it goes into messages
    if backend is None:
        raise StoreError(f"{display}: not a store URL; expected sqlite:///PATH or postgresql://USER@HOST/DB")
    conversation, kept = _conversation_parameter(segments, display)
    if backend == "postgresql":
        if not head.startswith("//"):  # libpq would echo the whole text in its error, password too
            raise StoreError(f"{display}: expected postgresql://USER@HOST/DB (with the two slashes)")
        # The authority and path exactly as written ("//" kept even with no host), for libpq.
        database = f"postgresql:{head}" + (f"?{'&'.join(kept)}" if kept else "")
        return StoreURL("postgresql", database, conversation, display)
    if kept:
        name = unquote(kept[0].partition("=")[0])
        raise StoreError(
            f"{display}: unknown parameter {quoted(name)} (a SQLite URL takes only conversation)"
        )
    return StoreURL("sqlite", _sqlite_path(head, display), conversation, display)


def _sqlite_path(head: str, display: str) -> str:
    """The database file a SQLite URL names (what follows ``sqlite:``, before any ``?``).

    Only the documented forms are taken: ``//`` alone is a database in memory, and ``///`` is
    followed by the path. An empty path (``sqlite:///``, from ``f"sqlite:///{path}"`` with an
    empty ``path``) is refused rather than read as memory, whose data would be lost on close.
    """
    if not head.startswith("//"):
        raise StoreError(
            f"{display}: expected sqlite:///PATH, sqlite:////ABSOLUTE/PATH or sqlite:// (in memory)"
        )
    if head == "//":
        return _store_sqlite.IN_MEMORY
    if not head.startswith("///"):
        raise StoreError(
            f"{display}: a SQLite URL names no host; write sqlite:///relative.db or sqlite:////abs.db"
        )
    path = _unquoted(head[3:], "the path", display)
    if not path:
        raise StoreError(
            f"{display}: names no database file; write sqlite:///PATH, or sqlite:// for one in memory"
        )
    if "\0" in path:
        raise StoreError(f"{display}: the path holds a NUL (%00), which no file name can")
    return path


def _unquoted(text: str, what: str, display: str) -> str:
    """``text`` percent-decoded; a ``StoreError`` naming ``what`` when the bytes are not UTF-8.

    Decoding strictly: replacing a bad byte with U+FFFD would name another file or conversation.
    """
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError as error:
        bad = "".join(f"%{byte:02X}" for byte in error.object[error.start : error.end])
        raise StoreError(f"{display}: {what} is not UTF-8 once percent-decoded ({bad})") from None


def _conversation_parameter(segments: list[str], display: str) -> tuple[str | None, list[str]]:
    """The ``conversation`` parameter's value, and the other segments as written (for libpq).

    The value is percent-decoded as the SQLite path is, and as libpq decodes its URIs: ``%20``
    is a space and ``+`` a plus (form encoding's space would silently name another conversation).
    """
    conversation: str | None = None
    kept: list[str] = []
    for segment in segments:
        key, _, value = segment.partition("=")
        if unquote(key) == "conversation":
            if not value:
                raise StoreError(f"{display}: conversation= names no conversation; give an id")
            if conversation is not None:  # keeping either one would silently ignore the other
                raise StoreError(f"{display}: conversation= is given twice; give one")
            conversation = _unquoted(value, "conversation=", display)
        elif segment:
            kept.append(segment)
    return conversation, kept


def _check_id(conversation_id: str | None) -> str:
    if conversation_id is None:
        return uuid.uuid4().hex
    return ops.checked_id(conversation_id)


class _Backend(Protocol):
    where: str

    def run(self, operation: Operation[T]) -> T: ...
    def close(self) -> None: ...


def _upgrade_operation(dialect: Dialect, where: str, create: bool) -> Operation[int]:
    # The module attribute, read now: tests stand in a newer version to prove the mechanism.
    target = _store_schema.SCHEMA_VERSION
    # create=False only reads the version: a read transaction takes no write lock, so a file or a
    # role that may only read opens the store.
    return Operation(create, lambda s: _store_schema.upgrade(s, dialect, where, target, create=create))


def _planning(
    count: MessageCounter | None,
    template: ChatTemplate | str | None,
    system_prompt: str,
    tools: Sequence[ToolSchema],
    counter: TextCounter | None,
) -> dict[str, Any]:
    """``prune``'s planning arguments, as ``plan_prune`` takes them."""
    return {
        "count": count,
        "template": template,
        "system_prompt": system_prompt,
        "tools": tools,
        "counter": counter,
    }


def _check_create(create: bool) -> None:
    require_bool("create", create)


@contextmanager
def _postgres_extra(url: StoreURL) -> Iterator[None]:
    """Around the import of the PostgreSQL backend, done only when PostgreSQL is asked for:
    psycopg is the ``postgres`` extra, and ``MissingExtraError`` says how to install it."""
    try:
        yield
    except ImportError as error:
        raise MissingExtraError(f"{url.display}: a PostgreSQL store", "psycopg", "postgres") from error


def _open_sync(url: StoreURL, create: bool) -> SyncBackend:
    if url.backend == "sqlite":
        backend = _store_sqlite.connect(url.database, create=create)
    else:
        with _postgres_extra(url):
            from . import _store_postgres

        backend = _store_postgres.connect(url.database, url.display)
    try:
        backend.run(_upgrade_operation(backend.dialect, backend.where, create))
        if create:  # a reader's open leaves the database as it found it (SQLite's journal mode too)
            backend.configure()
    except BaseException:
        backend.close()
        raise
    return backend


def open_store(url: str, *, create: bool = True) -> ConversationStore:
    """Open (creating or upgrading as needed) the store at ``url``.

    With ``create=False`` only an existing store is opened and nothing is created: a missing
    SQLite file, or a database (SQLite or PostgreSQL) without the store's tables, raises
    ``StoreError``. An older store that this version reads as it is (schema version 1) is not
    upgraded either, so a role that may only read can open it, and an older orion-messages
    sharing it keeps working; with ``create=True`` it is upgraded.

    With ``create=False`` the database is only read (the version in a read transaction; a SQLite
    file's journal mode is left as it is), so a file or a role that may only read opens it.

    Raises:
        ArgumentTypeError: ``url`` is not a str (a ``Path`` included: write ``sqlite:///PATH``).
        StoreError: a bad URL; a missing folder for a new SQLite file; a version table that is
            not one row of a known version; with ``create=False``, no store at ``url``.
        StoreVersionError: the store was written by a newer orion-messages; it is left untouched.
        MissingExtraError: a PostgreSQL URL without psycopg installed (an ``ImportError``; the
            message says ``pip install "orion-messages[postgres]"``).
    """
    _check_create(create)
    return ConversationStore(_open_sync(parse_store_url(url), create))


class ConversationStore:
    """Conversations in a database, one row per message; every call is one transaction.

    Open one with ``open_store(url)``; close it with ``close()`` or a ``with`` block. One store
    holds one connection, which threads share one call at a time; open one store per worker
    process. Lookups by a missing conversation raise ``ConversationNotFound``.
    """

    def __init__(self, backend: _Backend) -> None:
        self._backend = backend

    @property
    def where(self) -> str:
        """The database: a SQLite path, or the PostgreSQL URL without its password."""
        return self._backend.where

    def __repr__(self) -> str:
        return f"<ConversationStore {self.where!r}>"

    def create(
        self, conversation_id: str | None = None, *, title: str | None = None, metadata: Any = None
    ) -> ConversationInfo:
        """Create an empty conversation (a random id when none is given); ``ConversationExists`` if taken.

        ``metadata`` is any JSON value, stored as JSON: it reads back as JSON reads it (tuples
        as lists, keys as strings).
        """
        return self._backend.run(ops.create(_check_id(conversation_id), title, metadata))

    def update(
        self,
        conversation_id: str,
        *,
        title: str | Literal[_Unchanged.UNCHANGED] | None = _Unchanged.UNCHANGED,
        metadata: Any = _Unchanged.UNCHANGED,
    ) -> ConversationInfo:
        """Change the conversation's title, its metadata or both; the info as ``info(id)`` reads it back.

        An argument left out stays as it is; ``title=None`` clears the title and
        ``metadata=None`` the metadata. ``title`` is a str or None and ``metadata`` any JSON value,
        checked and stored as ``create`` does (``metadata`` as JSON reads it back). A change sets
        ``updated`` to now; with neither argument nothing is written and ``updated`` stays.

        Raises:
            ConversationNotFound: no conversation has the id.
            ArgumentTypeError: ``title`` is not a str or None, or ``metadata`` is not JSON (a
                ``TypeError``; raised before the database is touched, so nothing changes).
            ArgumentValueError: ``metadata`` nests deeper than JSON reads back (120 levels), or
                ``title`` holds U+0000 or a lone surrogate (a ``ValueError``; nothing changes).
        """
        return self._backend.run(ops.update(conversation_id, title, metadata))

    def info(self, conversation_id: str) -> ConversationInfo:
        """The conversation's id, title, metadata, times and message count."""
        return self._backend.run(ops.info(conversation_id))

    def conversations(
        self, *, limit: int | None = None, after: ConversationInfo | str | None = None
    ) -> list[ConversationInfo]:
        """Every conversation in the store, oldest first (by ``created``, then ``id``); or a page of them.

        A page holds at most ``limit`` conversations and starts right after ``after``: the last
        ``ConversationInfo`` of the previous page, or its id (None: at the first). Pages are read
        by key, not by offset: each costs the same however deep into the store it is, and a
        conversation created or deleted between two pages neither repeats nor skips another (one
        created meanwhile shows up later if it sorts after the page's start, as one created now
        does; not one stamped earlier by a writer whose clock is behind). A page shorter than
        ``limit`` is the last one; reading on from it gives an empty page::

            page = store.conversations(limit=100)
            while page:
                ...
                page = store.conversations(limit=100, after=page[-1])

        Given as a ``ConversationInfo``, ``after`` may have been deleted since; given as an id,
        it must still exist (its ``created`` is looked up).

        Raises:
            ConversationNotFound: no conversation has the id ``after`` (a str).
            ArgumentTypeError: ``limit`` is not an int or None, or ``after`` not a
                ``ConversationInfo``, a non-empty str or None (a ``TypeError``).
            ArgumentValueError: ``limit`` is negative or above 2**63 - 1, or ``after`` holds
                U+0000 or a lone surrogate (a ``ValueError``).
        """
        return self._backend.run(ops.conversations(limit, after))

    def count_conversations(self) -> int:
        """How many conversations the store holds: ``len(conversations())`` without reading them."""
        return self._backend.run(ops.count_conversations())

    def conversation_ids(
        self, *, limit: int | None = None, after: ConversationInfo | str | None = None
    ) -> list[str]:
        """The conversations' ids alone, by id; or a page of them. Nothing else of a row is read.

        Sorted by id (as the database compares text: bytewise in SQLite, by the database's
        collation in PostgreSQL), not oldest first as ``conversations()``: a page holds at most
        ``limit`` ids and starts right after the id ``after`` (a ``ConversationInfo``: its id, so
        its place by id; None: at the first), which is compared, never looked up, so it need not
        exist any more. Pages are read by key, as
        ``conversations()``' are (here from the primary key's index); an empty page is the end::

            page = store.conversation_ids(limit=1000)
            while page:
                ...
                page = store.conversation_ids(limit=1000, after=page[-1])

        Every id listed is one the other calls take. A row another program wrote with an id
        none takes (NULL, empty, in SQLite bytes, a text holding U+0000 or a text that is not
        UTF-8) is left out, never raised, and a page goes on past it: ``unusable_conversation_ids()``
        lists those, and ``count_conversations()`` counts them too.

        Raises:
            ArgumentTypeError: ``limit`` is not an int or None, or ``after`` not a
                ``ConversationInfo``, a non-empty str or None (a ``TypeError``).
            ArgumentValueError: ``limit`` is negative or above 2**63 - 1, or ``after``'s id holds
                U+0000 or a lone surrogate (a ``ValueError``).
        """
        return self._backend.run(ops.conversation_ids(limit, after))

    def unusable_conversation_ids(self) -> list[object]:
        """The ids of the rows ``conversation_ids()`` leaves out, as the database driver reads them.

        Another program may write a conversation row with an id no call takes: NULL (read as
        None), empty text, and in SQLite, whose columns keep any type, a blob (bytes), a text
        holding U+0000, or a text that is not UTF-8 (read as its bytes: the driver cannot decode
        it). No call of this store loads or deletes such a row; this lists them, all at once, for
        a checker (``orion-messages validate`` reports each). A store only orion-messages wrote
        holds none. In SQLite, finding them reads every id (from the primary key's index), as one
        page of every id would, and decodes those holding a byte past ASCII.
        """
        return self._backend.run(ops.unusable_conversation_ids())

    def delete(self, conversation_id: str) -> None:
        """Delete a conversation, its messages and its archive."""
        self._backend.run(ops.delete(conversation_id))

    def append(self, conversation_id: str, message: Message) -> None:
        """Append one message; its cost does not grow with the conversation."""
        self._backend.run(ops.append(conversation_id, message, "ConversationStore.append"))

    def extend(self, conversation_id: str, messages: Iterable[Message]) -> None:
        """Append messages in order, all or none.

        Raises:
            ArgumentTypeError: ``messages`` is not an iterable of messages, or is a set (which
                keeps no order).
        """
        self._backend.run(ops.extend(conversation_id, messages, "ConversationStore.extend"))

    def load(
        self, conversation_id: str, *, last: int | None = None, since: str | None = None
    ) -> list[Message]:
        """The conversation's messages in order; or the last ``last``; or those after the message ``since``.

        With both, the last ``last`` of those after ``since``. Only the rows returned are read:
        ``last`` costs the same however long the conversation is.

        Raises:
            FormatError: a stored row is not a valid message (naming the conversation and position).
            MessageNotFound: no message has the id ``since``.
            ArgumentTypeError: ``last`` is not an int (a ``TypeError``).
            ArgumentValueError: ``last`` is negative or above 2**63 - 1 (a ``ValueError``).
        """
        return self._backend.run(ops.load(conversation_id, last, since))

    def load_archived(self, conversation_id: str) -> list[Message]:
        """The messages ``prune(..., archive=True)`` removed, in their original order."""
        return self._backend.run(ops.archived(conversation_id))

    def replace_messages(
        self, conversation_id: str, messages: Iterable[Message], *, create: bool = False
    ) -> None:
        """Replace every message, all or none (orion-core's ``replace_messages``).

        With ``create=True`` a missing conversation is created first, in the same transaction.

        Raises:
            ArgumentTypeError: ``messages`` is not an iterable of messages, or is a set (which
                keeps no order).
        """
        self._backend.run(
            ops.replace(conversation_id, messages, create, "ConversationStore.replace_messages")
        )

    def set_pinned(self, conversation_id: str, message_id: str, pinned: bool) -> bool:
        """Pin or unpin the first message with ``message_id``; False when there is none, as in orion-core.

        Raises:
            ArgumentTypeError: ``pinned`` is not a bool (a ``TypeError``; nothing is coerced).
        """
        return self._backend.run(ops.set_pinned(conversation_id, message_id, pinned))

    def set_token_count(self, conversation_id: str, message_id: str, token_count: int | None) -> bool:
        """Set the ``token_count`` of the first message with ``message_id`` (None clears it);
        False when there is none. ``count_tokens`` sums it from then on.

        Raises:
            ArgumentTypeError: ``token_count`` is not an int or None (the database is not touched).
            ArgumentValueError: ``token_count`` is outside 0 to 4,294,967,295 (unsigned 32-bit).
        """
        return self._backend.run(ops.set_token_count(conversation_id, message_id, token_count))

    def resolve(
        self, conversation_id: str, tool_call_id: str, content: str, *, is_error: bool = False
    ) -> Message:
        """Fill in a pending tool result in place (same id, same position); the resolved message.

        Raises:
            PendingResultNotFound: no tool-result message answers ``tool_call_id`` (a ``KeyError``).
            ResultAlreadyResolved: that result is already resolved (a ``ValueError``).
        """
        return self._backend.run(ops.resolve(conversation_id, tool_call_id, content, is_error))

    def prune(
        self,
        conversation_id: str,
        config: ContextConfig | None = None,
        *,
        count: MessageCounter | None = None,
        template: ChatTemplate | str | None = None,
        system_prompt: str = "",
        tools: Sequence[ToolSchema] = (),
        counter: TextCounter | None = None,
        archive: bool = False,
    ) -> PrunePlan:
        """Drop the turns ``plan_prune`` drops, in one transaction; the plan, its ranges into the messages before.

        ``count``, ``template``, ``system_prompt``, ``tools`` and ``counter`` are ``plan_prune``'s:
        with a template the store prunes exactly as orion-core plans. With ``archive=True`` the
        dropped messages move to the archive (``load_archived``).

        Raises:
            ContextOverflowError: orion-core's refusals; nothing changes.
            ArgumentValueError: ``config.strategy`` is ``SUMMARIZE`` (a ``ValueError``): summarizing
                needs a model call, so the store leaves it to ``prune(..., summarize=...)`` and
                ``replace_messages``; nothing changes.
        """
        planning = _planning(count, template, system_prompt, tools, counter)
        return self._backend.run(ops.prune(conversation_id, config, archive, planning))

    def count_tokens(self, conversation_id: str, *, count: Callable[[Message], int] | None = None) -> int:
        """The conversation's tokens: each message's ``token_count`` where set, else ``count`` (default ``estimate_tokens``)."""
        return self._backend.run(ops.count_tokens(conversation_id, count))

    def close(self) -> None:
        """Close the connection."""
        self._backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class _AsyncBackend(Protocol):
    where: str

    async def run(self, operation: Operation[T]) -> T: ...
    async def close(self) -> None: ...


class _ThreadBackend:
    """A sync backend run on one worker thread of its own, so awaiting it never blocks the event loop."""

    def __init__(self, backend: SyncBackend) -> None:
        self.where = backend.where
        self._backend = backend
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="orion-store")
        self._closing = False

    async def run(self, operation: Operation[T]) -> T:
        if self._closing:
            raise closed_error(self.where)
        try:
            future = asyncio.get_running_loop().run_in_executor(self._thread, self._backend.run, operation)
        except RuntimeError:  # the thread shut down between the check and here: a close won
            raise closed_error(self.where) from None
        return await future

    async def close(self) -> None:
        if self._closing:
            return
        self._closing = True  # calls from now on are refused; those queued before run first
        await asyncio.get_running_loop().run_in_executor(self._thread, self._backend.close)
        self._thread.shutdown(wait=False)


async def open_async_store(url: str, *, create: bool = True) -> AsyncConversationStore:
    """Open the store at ``url`` for ``async`` code: ``open_store``'s twin (``create`` included).

    PostgreSQL runs on psycopg's native ``AsyncConnection``. SQLite has no async driver in the
    standard library: each store runs its connection on a worker thread of its own, and the
    calls await it, so the event loop never waits on the database.
    """
    _check_create(create)
    parsed = parse_store_url(url)
    if parsed.backend == "sqlite":
        loop = asyncio.get_running_loop()
        backend = await loop.run_in_executor(None, _open_sync, parsed, create)
        return AsyncConversationStore(_ThreadBackend(backend))
    with _postgres_extra(parsed):
        from . import _store_postgres

    native = await _store_postgres.connect_async(parsed.database, parsed.display)
    try:
        await native.run(_upgrade_operation(native.dialect, native.where, create))
    except BaseException:
        await native.close()
        raise
    return AsyncConversationStore(native)


class AsyncConversationStore:
    """``ConversationStore``'s async twin: the same calls, awaited, with the same semantics.

    Open one with ``await open_async_store(url)``; close it with ``await close()`` or ``async with``.
    One event loop may use it after another; on PostgreSQL, a call from a second loop while
    calls of another are still running raises ``StoreError`` (open a store for each loop).
    """

    def __init__(self, backend: _AsyncBackend) -> None:
        self._backend = backend

    @property
    def where(self) -> str:
        """The database: a SQLite path, or the PostgreSQL URL without its password."""
        return self._backend.where

    def __repr__(self) -> str:
        return f"<AsyncConversationStore {self.where!r}>"

    async def create(
        self, conversation_id: str | None = None, *, title: str | None = None, metadata: Any = None
    ) -> ConversationInfo:
        """See ``ConversationStore.create``."""
        return await self._backend.run(ops.create(_check_id(conversation_id), title, metadata))

    async def update(
        self,
        conversation_id: str,
        *,
        title: str | Literal[_Unchanged.UNCHANGED] | None = _Unchanged.UNCHANGED,
        metadata: Any = _Unchanged.UNCHANGED,
    ) -> ConversationInfo:
        """See ``ConversationStore.update``."""
        return await self._backend.run(ops.update(conversation_id, title, metadata))

    async def info(self, conversation_id: str) -> ConversationInfo:
        """See ``ConversationStore.info``."""
        return await self._backend.run(ops.info(conversation_id))

    async def conversations(
        self, *, limit: int | None = None, after: ConversationInfo | str | None = None
    ) -> list[ConversationInfo]:
        """See ``ConversationStore.conversations``."""
        return await self._backend.run(ops.conversations(limit, after))

    async def count_conversations(self) -> int:
        """See ``ConversationStore.count_conversations``."""
        return await self._backend.run(ops.count_conversations())

    async def conversation_ids(
        self, *, limit: int | None = None, after: ConversationInfo | str | None = None
    ) -> list[str]:
        """See ``ConversationStore.conversation_ids``."""
        return await self._backend.run(ops.conversation_ids(limit, after))

    async def unusable_conversation_ids(self) -> list[object]:
        """See ``ConversationStore.unusable_conversation_ids``."""
        return await self._backend.run(ops.unusable_conversation_ids())

    async def delete(self, conversation_id: str) -> None:
        """See ``ConversationStore.delete``."""
        await self._backend.run(ops.delete(conversation_id))

    async def append(self, conversation_id: str, message: Message) -> None:
        """See ``ConversationStore.append``."""
        await self._backend.run(ops.append(conversation_id, message, "AsyncConversationStore.append"))

    async def extend(self, conversation_id: str, messages: Iterable[Message]) -> None:
        """See ``ConversationStore.extend``."""
        await self._backend.run(ops.extend(conversation_id, messages, "AsyncConversationStore.extend"))

    async def load(
        self, conversation_id: str, *, last: int | None = None, since: str | None = None
    ) -> list[Message]:
        """See ``ConversationStore.load``."""
        return await self._backend.run(ops.load(conversation_id, last, since))

    async def load_archived(self, conversation_id: str) -> list[Message]:
        """See ``ConversationStore.load_archived``."""
        return await self._backend.run(ops.archived(conversation_id))

    async def replace_messages(
        self, conversation_id: str, messages: Iterable[Message], *, create: bool = False
    ) -> None:
        """See ``ConversationStore.replace_messages``."""
        await self._backend.run(
            ops.replace(conversation_id, messages, create, "AsyncConversationStore.replace_messages")
        )

    async def set_pinned(self, conversation_id: str, message_id: str, pinned: bool) -> bool:
        """See ``ConversationStore.set_pinned``."""
        return await self._backend.run(ops.set_pinned(conversation_id, message_id, pinned))

    async def set_token_count(self, conversation_id: str, message_id: str, token_count: int | None) -> bool:
        """See ``ConversationStore.set_token_count``."""
        return await self._backend.run(ops.set_token_count(conversation_id, message_id, token_count))

    async def resolve(
        self, conversation_id: str, tool_call_id: str, content: str, *, is_error: bool = False
    ) -> Message:
        """See ``ConversationStore.resolve``."""
        return await self._backend.run(ops.resolve(conversation_id, tool_call_id, content, is_error))

    async def prune(
        self,
        conversation_id: str,
        config: ContextConfig | None = None,
        *,
        count: MessageCounter | None = None,
        template: ChatTemplate | str | None = None,
        system_prompt: str = "",
        tools: Sequence[ToolSchema] = (),
        counter: TextCounter | None = None,
        archive: bool = False,
    ) -> PrunePlan:
        """See ``ConversationStore.prune``."""
        planning = _planning(count, template, system_prompt, tools, counter)
        return await self._backend.run(ops.prune(conversation_id, config, archive, planning))

    async def count_tokens(
        self, conversation_id: str, *, count: Callable[[Message], int] | None = None
    ) -> int:
        """See ``ConversationStore.count_tokens``."""
        return await self._backend.run(ops.count_tokens(conversation_id, count))

    async def close(self) -> None:
        """Close the connection (and, for SQLite, its worker thread)."""
        await self._backend.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()
