"""What the command line needs of the store: a store URL read, written or validated like a file.

``convert``, ``stats`` and ``validate`` call these where they would read or write a path; each
returns None (or False) for a text that is not a store URL, so the caller goes on with files.
A store URL names its conversation with ``?conversation=ID``; ``validate`` without one checks
every conversation in the store, one at a time (``stored_conversations``, then ``check_stored``);
``list`` shows them (``listed_conversations``).
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Generator, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple
from urllib.parse import quote, unquote

from ._store_ops import checked_id
from ._store_url import masked_forms, masked_url, password_forms
from ._text import kind_of, quoted, shown_place
from .checks import find_problems
from .errors import FormatError, OrionMessagesError, Problem, StoreError
from .models import Message
from .store import (
    ConversationInfo,
    ConversationStore,
    StoreURL,
    is_store_url,
    open_store,
    parse_store_url,
    url_passwords,
)

__all__ = [
    "Listing",
    "Report",
    "Stored",
    "check_stored",
    "listed_conversations",
    "read_source",
    "stored_conversations",
    "write_target",
]


class Report(NamedTuple):
    """What ``validate`` found in one stored conversation."""

    label: str
    """The conversation, named as the command names it (the store's URL and its id)."""
    messages: list[Message] | None
    """Its messages; None if it cannot be read."""
    errors: list[Problem]
    """Its errors: the first of those its ``FormatError`` kept, or semantic problems with ``strict``."""
    warnings: list[Problem]
    """Its semantic problems, without ``strict``."""
    omitted: int = 0
    """The errors its ``FormatError`` counted and did not keep."""


class Stored(NamedTuple):
    """A conversation ``validate`` checks in a store: its id and the URL that names it."""

    id: str | None
    """None for a row whose id no operation takes (another program wrote it: not text, empty,
    holding U+0000): it cannot be loaded."""
    label: str
    """The URL naming it, as ``validate`` shows it (the store's own URL for a row without an id)."""
    problem: str = ""
    """Why such a row cannot be checked."""


class Listing(NamedTuple):
    """What ``list`` shows of a store."""

    display: str
    """The store's URL for the terminal: password masked, escaped and cut as messages show it."""
    url: str
    """The store's URL with its password masked, not escaped: for JSON, which escapes on its own."""
    conversations: list[tuple[ConversationInfo, str]]
    """Each conversation, with the URL naming it (built from ``url``: it reads back)."""


PAGE_SIZE = 1000
"""How many conversations ``validate`` and ``list`` read from a store at a time."""


@contextmanager
def _opened(url: StoreURL, raw: str, *, create: bool) -> Iterator[ConversationStore]:
    """The store at ``raw``, every failure a ``StoreError`` or ``FormatError`` naming it (or,
    without psycopg, the ``MissingExtraError`` of ``open_store``, naming it too).

    Reading opens with ``create=False``: a mistyped URL is an error, never a new empty store.
    An in-memory store (``sqlite://``) is refused: it would be gone when the command ends.
    """
    if url.in_memory:
        raise StoreError(
            f"{url.display}: an in-memory store lives only as long as one process; "
            "give the command a file (sqlite:///chats.db) or a PostgreSQL URL"
        )
    try:
        with open_store(raw, create=create) as store:
            yield store
    except StoreError as error:
        cause = error.__cause__
        if isinstance(cause, OSError):  # a missing folder: the URL as given, and why
            raise StoreError(f"{url.display}: {_reason(cause, url, raw)}") from cause
        raise
    except OrionMessagesError:  # MissingExtraError (no psycopg) included: it names the URL
        raise
    except Exception as error:  # the driver's own errors (sqlite3.Error, psycopg.Error) and OSError
        raise StoreError(f"{url.display}: {_reason(error, url, raw)}") from error


def _reason(error: Exception, url: StoreURL, raw: str) -> str:
    """Why opening the store at ``raw`` failed, on one line, its passwords masked: an
    ``OSError`` without its ``[Errno 2]`` and quotes, the file named only when it is not the
    store's own (``url.display`` names that one); a driver's message of several lines (libpq's
    ``...refused\n\tIs the server running...``) with its lines joined by ``; ``.

    Masked before it is escaped and joined, as libpq quotes a password (a host, a port):
    escaped, one holding a tab or a newline would no longer be found.
    """
    if not isinstance(error, OSError) or not error.strerror:
        text = _redacted(str(error), raw)
        return shown_place("; ".join(line.strip() for line in text.splitlines() if line.strip()))
    reason = _redacted(error.strerror, raw)
    if error.filename is None or os.fsdecode(error.filename) == url.database:
        return reason
    return f"{reason}: {shown_place(_redacted(os.fsdecode(error.filename), raw))}"


def _redacted(text: str, raw: str) -> str:
    """``text`` with any password of the URL ``raw`` (as written, or decoded) replaced by ``***``.

    libpq ends a URL's password at a raw ``@`` or ``/`` and reads the rest as hosts, ports, the
    path and the query, whose parts its errors quote decoded (a port, a host name): for a
    password written so, each part between two delimiters and each rest after one are masked
    too, as written and decoded; ``masked_forms`` also masks each as ``repr`` escapes it, as
    psycopg quotes a host (``'se\\tcret'``).
    """
    secrets = url_passwords(raw)
    forms = password_forms(raw)
    for secret in secrets:
        if _PASSWORD_END.search(secret):
            bounds = [-1, *(found.start() for found in _URL_DELIMITER.finditer(secret)), len(secret)]
            parts = [secret[start + 1 : end] for start, end in itertools.pairwise(bounds)]
            parts += [secret[cut + 1 :] for cut in bounds[1:-1]]
            forms.update(form for part in parts for form in (part, unquote(part)))
    return masked_forms(text, forms)


_PASSWORD_END = re.compile(r"[/@]")
"""What ends a URL's password for libpq, written raw in one (a raw ``?``, ``#`` or ``:`` does not)."""
_URL_DELIMITER = re.compile(r"[/?#@:,]")
"""What splits the rest of the URL libpq reads after such an end: hosts (``,``), ports (``:``),
the path, the query."""


def _placed(problem: Problem, source: str | None) -> Problem:
    """A stored row's problem, placed source first as a file's is: ``position 2: [where]: what``."""
    parts = [source or "", f"line {problem.line}" if problem.line is not None else ""]
    if problem.line is not None and problem.column is not None:
        parts[1] += f", column {problem.column}"
    where = ": ".join(part for part in (*parts, problem.location) if part)
    return Problem(where, problem.message)


def _named(raw: str) -> tuple[StoreURL, str]:
    url = parse_store_url(raw)
    if url.conversation is None:
        raise StoreError(
            f"{url.display}: name the conversation: add ?conversation=ID to the URL "
            "(orion-messages list URL shows them)"
        )
    return url, url.conversation


def read_source(raw: str) -> list[Message] | None:
    """The messages of the conversation a store URL names; None when ``raw`` is not a store URL.

    Raises:
        StoreError: the store cannot be opened or does not exist (nothing is created), or the URL
            names no conversation, or the store lacks it.
        FormatError: a stored row is not a valid message.
    """
    if not is_store_url(raw):
        return None
    url, conversation = _named(raw)
    label = _label(url.display, conversation)  # as validate names it
    with _opened(url, raw, create=False) as store:
        try:
            return store.load(conversation)
        except StoreError as error:
            raise StoreError(f"{url.display}: {_unnamed(error, store)}") from None
        except FormatError as error:  # a corrupt row: the URL first, as validate places it
            raise error.with_source(f"{label}: {error.source}" if error.source else label) from None


def _unnamed(error: StoreError, store: ConversationStore) -> str:
    """The error's text without the store's ``where`` in front, for a line that names the URL."""
    return str(error).removeprefix(f"{store.where}: ")


def write_target(raw: str, messages: Sequence[Message]) -> bool:
    """Store ``messages`` as the conversation a store URL names (created, or replaced whole).

    False when ``raw`` is not a store URL (nothing is written).
    """
    if not is_store_url(raw):
        return False
    url, conversation = _named(raw)
    with _opened(url, raw, create=True) as store:
        store.replace_messages(conversation, messages, create=True)
    return True


def _label(store: str, conversation: str) -> str:
    """The URL that names ``conversation`` in the store the URL ``store`` names: its other
    parameters kept (``options`` may pick the schema), the id percent-encoded so the label reads back."""
    base, _, query = store.partition("?")
    kept = [part for part in query.split("&") if part and not part.startswith("conversation=")]
    return f"{base}?{'&'.join([*kept, 'conversation=' + quote(conversation, safe='')])}"


def stored_conversations(raw: str) -> list[Stored] | None:
    """What ``validate`` checks for a store URL: the conversation it names, or every conversation
    in the store (``_conversation_ids``). None when ``raw`` is not a store URL. The store is
    opened (and closed): one that cannot be opened fails here, before any conversation is checked.

    Raises:
        StoreError: the store cannot be opened or does not exist (nothing is created).
    """
    if not is_store_url(raw):
        return None
    url = parse_store_url(raw)
    with _opened(url, raw, create=False) as store:
        names = [url.conversation] if url.conversation is not None else _conversation_ids(store)
    # Labels from the URL as given, password masked, not escaped: a label reads back (the
    # terminal's lines escape it when printed, JSON on its own), as list's urls do.
    masked = masked_url(raw)
    return [_stored(name, masked) for name in names]


def _stored(name: object, masked: str) -> Stored:
    """The conversation ``name`` of the store ``masked`` names, or the entry of a row whose id
    no operation takes (another program's: NULL or another type than text, text that is not UTF-8
    (bytes), empty, holding U+0000)."""
    if not isinstance(name, str):
        return Stored(None, masked, f"a stored conversation's id is {kind_of(name)} {quoted(name)}, not text")
    if not name:
        return Stored(None, masked, "a stored conversation's id is empty text")
    try:
        checked_id(name, "a stored conversation's id")
    except OrionMessagesError as error:
        return Stored(None, masked, str(error))
    return Stored(name, _label(masked, name))


def _conversation_ids(store: ConversationStore) -> list[object]:
    """Every conversation's id: first those no call takes (another program's rows, each one
    invalid entry of ``validate``), then the others ``PAGE_SIZE`` at a time, by id.

    Ids alone: ``conversations()`` would turn every row into a ``ConversationInfo`` and refuse
    a whole page for one title, metadata or ``created_ms`` another program wrote oddly, none of
    which ``validate`` needs. A page starts after the previous page's last id, which need not
    exist any more: a conversation deleted meanwhile stops nothing.
    """
    ids: list[object] = list(store.unusable_conversation_ids())
    page = store.conversation_ids(limit=PAGE_SIZE)
    while page:
        ids.extend(page)
        page = store.conversation_ids(limit=PAGE_SIZE, after=page[-1]) if len(page) == PAGE_SIZE else []
    return ids


def _pages(store: ConversationStore) -> Iterator[ConversationInfo]:
    """Every conversation, oldest first, read ``PAGE_SIZE`` at a time.

    Each page starts after the previous page's last ``ConversationInfo``, which need not exist
    any more: a conversation deleted meanwhile stops nothing, and none still there is skipped.
    """
    page = store.conversations(limit=PAGE_SIZE)  # a row another program wrote: its error names the store
    while page:
        yield from page
        page = store.conversations(limit=PAGE_SIZE, after=page[-1]) if len(page) == PAGE_SIZE else []


def listed_conversations(raw: str) -> Listing:
    """``list``: the store at the URL ``raw`` and its conversations, each with the URL that names
    it (as ``validate`` labels it: the id percent-encoded), the password masked.

    The store is opened read-only (a mistyped URL is an error, nothing is created).

    Raises:
        StoreError: the store cannot be opened, or holds a row orion-messages did not write.
    """
    url = parse_store_url(raw)
    masked = masked_url(raw)
    with _opened(url, raw, create=False) as store:
        return Listing(url.display, masked, [(info, _label(masked, info.id)) for info in _pages(store)])


def check_stored(raw: str, conversations: Sequence[Stored], *, strict: bool) -> Generator[Report, None, None]:
    """Check each of ``conversations`` in the store at the URL ``raw``, in turn.

    One ``Report`` per conversation; semantic problems
    are warnings, or errors with ``strict``. A generator: each conversation is loaded when its
    report is asked for, so that one conversation is in memory at a time (close the generator
    to close the store early).

    Raises:
        StoreError: the store cannot be opened or does not exist (nothing is created).
    """
    url = parse_store_url(raw)
    with _opened(url, raw, create=False) as store:
        for stored in conversations:
            if stored.id is None:
                yield Report(stored.label, None, [Problem("", stored.problem)], [])
            else:
                yield _checked(store, stored.label, stored.id, strict=strict)


def _checked(store: ConversationStore, label: str, name: str, *, strict: bool) -> Report:
    try:
        messages = store.load(name)
    except FormatError as error:
        return Report(label, None, [_placed(p, error.source) for p in error.problems], [], error.omitted)
    except StoreError as error:  # the label names the store already
        return Report(label, None, [Problem("", _unnamed(error, store))], [])
    semantic = find_problems(messages)
    return Report(label, messages, semantic if strict else [], [] if strict else semantic)
