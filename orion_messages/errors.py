"""Everything the library raises or warns on purpose, in one place.

Every exception the library raises on purpose derives from ``OrionMessagesError``; every warning it
issues about the data derives from ``OrionMessagesWarning`` (the deprecation notices are Python's
own ``DeprecationWarning``). Catch the base class to handle them all. Operating
system failures (a full disk, a missing file) stay ``OSError``, named with the file, as Python's
own I/O raises them.

Their texts never hold the data raw: ids, keys, values, file names and URLs are escaped and cut
(``_text.quoted``, ``_text.shown_place``), so printing one cannot act on a terminal or raise; the
attributes keep the values whole.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

from ._text import excerpt, kind_of, printable, quoted, shown_int, shown_location, shown_place

__all__ = [
    "ArgumentTypeError",
    "ArgumentValueError",
    "ContextOverflowError",
    "ConversationExists",
    "ConversationNotFound",
    "ConversionError",
    "FormatError",
    "MessageNotFound",
    "MissingExtraError",
    "NotALogError",
    "NotARegularFileError",
    "OrionMessagesError",
    "OrionMessagesWarning",
    "OverflowReason",
    "PendingResultNotFound",
    "Problem",
    "ResultAlreadyResolved",
    "StoreError",
    "StoreVersionError",
    "TornLineWarning",
    "UnknownKeyWarning",
    "UnknownTemplateError",
]

MAX_REPORTED_PROBLEMS = 100
"""How many problems a ``FormatError`` holds; the rest are only counted (``omitted``)."""


def _rebuilt(cls: type[BaseException], args: tuple[Any, ...]) -> BaseException:
    """An instance of ``cls`` holding ``args``, made without calling its ``__init__`` (for pickle)."""
    return cls.__new__(cls, *args)


def _reduced(error: BaseException, native: str | tuple[Any, ...]) -> tuple[Any, ...]:
    """What pickles ``error``: its class, its text and its attributes (``native``: Python's own
    ``__reduce__`` of it, whose state holds the attributes).

    Python's own would call ``__init__`` again with the text alone, which the subclasses here do
    not take, so an error could not cross a process pool (``multiprocessing``,
    ``concurrent.futures``) or be deep-copied.
    """
    _, args, *state = cast("tuple[Any, ...]", native)
    return (_rebuilt, (type(error), args), *state)


class OrionMessagesError(Exception):
    """The base class of every exception orion-messages raises on purpose.

    Every one of them can be pickled and copied, attributes included.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduced(self, super().__reduce__())


class OrionMessagesWarning(UserWarning):
    """The base class of every warning orion-messages issues (each can be pickled, as errors can)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return _reduced(self, super().__reduce__())


@dataclass(frozen=True)
class Problem:
    """One problem found in a conversation, with where it is and what is wrong.

    ``location`` is a JSON path such as ``[3].tool_result.is_error`` (empty for the document as a
    whole); ``line`` and ``column`` are set for malformed JSON and for JSON Lines records.
    """

    location: str
    """A JSON path into the document, such as ``[3].tool_calls[0].id``; empty for the whole document."""
    message: str
    """What was expected and what was found, in plain words."""
    line: int | None = None
    """The 1-based line in the file, where known."""
    column: int | None = None
    """The 1-based column on that line, in UTF-8 bytes, where known; 0 where a document ends
    right after a newline (serde_json's column for it)."""

    def __str__(self) -> str:
        where = shown_location(self.location)
        if self.line is not None:
            position = f"line {self.line}" + (f", column {self.column}" if self.column is not None else "")
            where = f"{position}: {where}" if where else position
        return f"{where}: {self.message}" if where else self.message


class FormatError(OrionMessagesError, ValueError):
    """Input that is not a valid orion-core conversation, message or event.

    ``problems`` lists every problem found, each with its location. ``source`` names the file
    when the input came from one. Nothing is ever returned partially when this is raised.
    """

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None, omitted: int = 0) -> None:
        kept: list[Problem] = []
        for problem in problems:  # a hostile file can hold millions: keep the first, count the rest
            if len(kept) < MAX_REPORTED_PROBLEMS:
                kept.append(problem)
            else:
                omitted += 1
        self.problems: list[Problem] = kept
        """The first ``MAX_REPORTED_PROBLEMS`` problems, in document order."""
        self.omitted = omitted
        """How many more problems were found and not kept."""
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{shown_place(self.source)}: " if self.source else ""
        count = len(self.problems) + self.omitted
        if count == 1:
            return f"{head}{self.problems[0]}"
        lines = [f"{head}{count} problems:"]
        lines.extend(f"  {problem}" for problem in self.problems)
        if self.omitted:
            lines.append(f"  ... and {self.omitted} more")
        return "\n".join(lines)

    def with_source(self, source: str) -> FormatError:
        """The same problems, reported against the file ``source``.

        Raises:
            ArgumentTypeError: ``source`` is not a str.
        """
        _require_str("FormatError.with_source", "source", source)
        return FormatError(self.problems, source=source, omitted=self.omitted)

    def within(self, location: str) -> FormatError:
        """The same problems, inside the value at ``location`` (such as ``[3]``, a message's index).

        Raises:
            ArgumentTypeError: ``location`` is not a str.
        """
        _require_str("FormatError.within", "location", location)

        def inside(inner: str) -> str:
            if not (location and inner):
                return location or inner
            return location + inner if inner.startswith("[") else f"{location}.{inner}"

        return FormatError(
            (Problem(inside(p.location), p.message, p.line, p.column) for p in self.problems),
            source=self.source,
            omitted=self.omitted,
        )

    def at_line(self, line: int, *, source: str | None = None) -> FormatError:
        """The same problems, placed on ``line`` of a JSON Lines file.

        Raises:
            ArgumentTypeError: ``line`` is not an int (a bool included), or ``source`` is neither
                a str nor None.
        """
        if type(line) is bool or not isinstance(line, int):
            raise ArgumentTypeError(f"FormatError.at_line: line must be an int, got {kind_of(line)}")
        if source is not None:
            _require_str("FormatError.at_line", "source", source)
        return FormatError(
            (
                Problem(p.location, p.message, line, p.column if p.line in (None, 1) else None)
                for p in self.problems
            ),
            source=source if source is not None else self.source,
            omitted=self.omitted,
        )


def _require_str(function: str, name: str, value: object) -> None:
    """Refuse a text argument that is not a str (it would fail inside ``+``, or be printed as
    whatever its ``str()`` is)."""
    if not isinstance(value, str):
        raise ArgumentTypeError(f"{function}: {name} must be a str, got {kind_of(value)}")


OverflowReason = Literal["overhead", "latest", "pinned"]
"""Which of orion-core's refusals a ``ContextOverflowError`` is."""


class ContextOverflowError(OrionMessagesError, ValueError):
    """orion-core's three refusals: no room at all, the latest turn does not fit, the pinned turns do not fit.

    The text is orion-core's own, numbers included (what it shows after ``Context error: ``); what
    we know beyond it is in the attributes.
    """

    def __init__(
        self,
        reason: OverflowReason,
        tokens: int,
        available: int,
        *,
        fixed_tokens: int = 0,
        budget: int | None = None,
        turn: range | None = None,
    ) -> None:
        self.reason: OverflowReason = reason
        """Which refusal: ``"overhead"``, ``"latest"`` or ``"pinned"``."""
        self.tokens: int = tokens
        """The tokens in the text: the fixed overhead, the latest turn, or every pinned turn together."""
        self.available: int = available
        """``max(0, max_context_tokens - max_response_tokens)``, as in the text."""
        self.fixed_tokens: int = fixed_tokens
        """The fixed overhead: with a template, the system block, the assistant prefix and
        ``reserved_tokens``; without one, ``reserved_tokens`` and the preamble."""
        self.budget: int = available - fixed_tokens if budget is None else budget
        """The room the refused part had: what was left when it was tried."""
        self.turn: range | None = turn
        """The message range of the turn at fault (the latest turn, or the pinned turn that did not fit)."""
        # As orion-core writes the numbers; one too long for str() (a ContextConfig of 10**5000
        # tokens) by its number of digits instead.
        tokens_text, fixed_text, available_text = map(shown_int, (tokens, fixed_tokens, available))
        if reason == "overhead":
            text = (
                f"System prompt and tools ({tokens_text} tokens) exceed available context budget "
                f"({available_text} tokens)"
            )
        elif reason == "latest":
            text = (
                f"Latest message ({tokens_text} tokens) plus system prompt ({fixed_text} tokens) exceeds "
                f"context budget ({available_text} tokens). Clear the conversation or increase context size."
            )
        else:
            text = (
                f"Pinned messages ({tokens_text} tokens) exceed the available context budget "
                f"({available_text} tokens). Unpin some messages or increase context size."
            )
        super().__init__(text)


class TornLineWarning(OrionMessagesWarning):
    """A JSON Lines log ends in an incomplete record, as a crash mid-append leaves it (or, to a
    reader, which takes no lock, an append still under way in another process).

    The fields say where; the message text is built from them (``PATH:LINE: skipping a torn
    last line (N bytes at byte offset O), ...``).
    """

    def __init__(self, path: str, line: int | None, offset: int, size: int, *, repaired: bool) -> None:
        self.path = path
        """The log's path, as the caller named it."""
        self.line = line
        """The torn line's 1-based number; None where it was not counted (``append_jsonl`` does not read the log)."""
        self.offset = offset
        """The byte offset where the torn line starts: the log's length once it is cut off."""
        self.size = size
        """The torn line's length in bytes."""
        self.repaired = repaired
        """True when the torn bytes were truncated from the file, False when they were only skipped."""
        where = shown_place(path) if line is None else f"{shown_place(path)}:{line}"
        super().__init__(
            f"{where}: skipping a torn last line ({size} bytes at byte offset {offset}), "
            "as a crash mid-append leaves it" + ("; truncated it" if repaired else "")
        )


class UnknownKeyWarning(OrionMessagesWarning):
    """An unknown key was loaded without its value, which cannot be written back exactly.

    orion-core skips unknown keys unread, so it loads a value such as ``1e400`` or one nested
    deeper than any parser goes; this library loads the document too, leaves that key out and
    says so with this warning. ``location`` is the JSON path of the object that held the key
    (``[3]``, ``[3].tool_calls[0]``), ``key`` the key and ``reason`` what is wrong with its value;
    read from a file, ``source`` names it and, in a JSON Lines log, ``line`` the record's line:
    ``log.jsonl:3: unknown key "x" left out: ...``.
    """

    def __init__(
        self, location: str, key: str, reason: str, *, source: str | None = None, line: int | None = None
    ) -> None:
        self.location = location
        """The JSON path of the object that held the key, such as ``[3]``; in a JSON Lines
        record, the path within that record (``""`` for the record itself)."""
        self.key = key
        """The unknown key that was left out."""
        self.reason = reason
        """Why its value cannot be written back."""
        self.source = source
        """The file the document was read from, when it was read from one (``load``, ``read_jsonl``)."""
        self.line = line
        """The line of a JSON Lines log that held the record, or None."""
        where = ":".join(str(part) for part in (source and shown_place(source), line) if part is not None)
        place = ": ".join(part for part in (where, printable(location)) if part)
        super().__init__(
            f"{place}: unknown key {quoted(key)} left out: {reason}"
            if place
            else f"unknown key {quoted(key)} left out: {reason}"
        )


class NotALogError(FormatError):
    """``append_jsonl`` refused a file that is not a JSON Lines log of messages; the file is untouched.

    A file is a log when it is empty, or when its first byte other than JSON whitespace is ``{``
    and its last non-blank line is a valid message (with or without its newline) or a torn record
    after one. A conversation saved by ``save`` (a JSON array) or any other text file is not; see
    ``docs/reliability.md``.
    """


class NotARegularFileError(OrionMessagesError, OSError):
    """A path names a FIFO, a device, a folder or a socket where a regular file was expected.

    Raised before anything is read or written, so that a FIFO cannot block the reader and a device
    such as ``/dev/zero`` cannot exhaust its memory. It is also an ``OSError``; ``filename`` is the
    path and ``kind`` says what the path is instead (``"a FIFO"``, ``"a character device"``, ...).
    """

    def __init__(self, path: str, kind: str) -> None:
        super().__init__(f"{shown_place(path)}: {kind}, not a regular file")
        self.filename = path
        self.kind = kind
        """What the path names instead of a regular file, such as ``"a FIFO"``."""

    @classmethod
    def of_mode(cls, path: str, mode: int) -> NotARegularFileError | None:
        """The error for ``path`` whose ``st_mode`` is ``mode``, None for a regular file."""
        if stat.S_ISREG(mode):
            return None
        return cls(path, next((name for test, name in _FILE_KINDS if test(mode)), "not a file"))

    def __str__(self) -> str:  # OSError's own would print "[Errno None]"
        return f"{shown_place(self.filename)}: {self.kind}, not a regular file"

    def __reduce__(self) -> tuple[Any, ...]:
        # OSError keeps ``filename`` outside the attributes the base class pickles.
        return (type(self), (self.filename, self.kind))


_FILE_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class UnknownTemplateError(OrionMessagesError, ValueError):
    """A chat template name orion-core does not know.

    ``name`` is the name as given; ``suggestion`` is a known name close to it, if any.
    """

    def __init__(self, message: str, *, name: str, suggestion: str | None = None) -> None:
        self.name = name
        """The name as given."""
        self.suggestion = suggestion
        """A known name or alias close to ``name``, or ``None``."""
        super().__init__(message)


class MissingExtraError(OrionMessagesError, ImportError):
    """An optional feature whose package is not installed; the message says which extra to install."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.extra = extra
        """The orion-messages extra that installs what is missing, such as ``"huggingface"``."""
        super().__init__(
            f'{feature} needs the "{package}" package: pip install "orion-messages[{extra}]"',
            name=package,
        )


class StoreError(OrionMessagesError):
    """A conversation store refused an operation (see ``orion_messages.store``).

    Database failures themselves stay the driver's exceptions (``sqlite3.Error``,
    ``psycopg.Error``); a row that is not a valid message raises ``FormatError``.
    """


class ConversationNotFound(StoreError, LookupError):
    """The store holds no conversation with this id."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        """The id that was looked for."""
        super().__init__(f"no conversation {quoted(conversation_id)} in the store")


class ConversationExists(StoreError):
    """A conversation with this id is already in the store."""

    def __init__(self, conversation_id: str) -> None:
        self.conversation_id = conversation_id
        """The id that is taken."""
        super().__init__(f"a conversation {quoted(conversation_id)} is already in the store")


class MessageNotFound(StoreError, LookupError):
    """The conversation holds no message with this id."""

    def __init__(self, conversation_id: str, message_id: str) -> None:
        self.conversation_id = conversation_id
        """The conversation searched."""
        self.message_id = message_id
        """The message id that was looked for."""
        super().__init__(f"conversation {quoted(conversation_id)} holds no message {quoted(message_id)}")


class StoreVersionError(StoreError):
    """The store was written by a newer orion-messages, with a schema this version cannot read."""

    def __init__(self, where: str, found: int, supported: int) -> None:
        self.found = found
        """The store's schema version."""
        self.supported = supported
        """The newest schema version this orion-messages reads."""
        super().__init__(
            f"{where}: the store has schema version {found}, newer than {supported}, the newest this "
            "orion-messages reads; upgrade orion-messages (the store was left untouched)"
        )


class ConversionError(OrionMessagesError, ValueError):
    """A conversion that cannot be done: invalid input, an orphan with ``orphans="error"``, or a
    loss refused by ``strict=True``.

    ``problems`` lists every problem with its location in the input (``[3].tool_calls[0].function.arguments``);
    the text shows the first ``MAX_REPORTED_PROBLEMS`` (a strict conversion of a long history can
    find hundreds of thousands).
    """

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: list[Problem] = list(problems)
        """Every problem, in input order."""
        count = len(self.problems)
        lines = [f"{count} problems:", *map(str, self.problems[:MAX_REPORTED_PROBLEMS])]
        if count > MAX_REPORTED_PROBLEMS:
            lines.append(f"... and {count - MAX_REPORTED_PROBLEMS} more (all in .problems)")
        super().__init__(str(self.problems[0]) if count == 1 else "\n  ".join(lines))


class PendingResultNotFound(OrionMessagesError, KeyError):
    """``resolve`` found no tool-result message answering the tool call id.

    Also a ``KeyError``, as ``resolve`` raised before; unlike ``KeyError`` its text prints
    without quotes. ``conversation_id`` is set when a store's conversation was searched.
    """

    def __init__(self, tool_call_id: str, *, conversation_id: str | None = None) -> None:
        self.tool_call_id = tool_call_id
        """The tool call id that was looked for."""
        self.conversation_id = conversation_id
        """The stored conversation searched, or None for an in-memory one."""
        where = "" if conversation_id is None else f"conversation {quoted(conversation_id)}: "
        super().__init__(f"{where}no pending result for tool call {quoted(tool_call_id)}")

    def __str__(self) -> str:  # KeyError's own would print the text in quotes, as a key
        return str(self.args[0])


class ResultAlreadyResolved(OrionMessagesError, ValueError):
    """``resolve`` found the result for the tool call id, already resolved; nothing changed.

    Also a ``ValueError``, as ``resolve`` raised before. ``index`` is the result's index in the
    messages when known; ``conversation_id`` is set when a store's conversation was searched.
    """

    def __init__(
        self, tool_call_id: str, *, conversation_id: str | None = None, index: int | None = None
    ) -> None:
        self.tool_call_id = tool_call_id
        """The tool call id whose result is already resolved."""
        self.conversation_id = conversation_id
        """The stored conversation searched, or None for an in-memory one."""
        self.index = index
        """The resolved result's index in the messages, where known."""
        where = "" if conversation_id is None else f"conversation {quoted(conversation_id)}: "
        at = "" if index is None else f" (at [{index}])"
        super().__init__(f"{where}the result for tool call {quoted(tool_call_id)} is already resolved{at}")


class ArgumentTypeError(OrionMessagesError, TypeError):
    """An argument of the wrong type, such as a str where a bool is required; nothing is coerced.

    Also a ``TypeError``, as Python's own type errors are. The text names the argument.
    """


def require_bool(name: str, value: object) -> None:
    """Refuse a flag that is not a ``bool`` (``strict="no"`` would be taken as true).

    Raises:
        ArgumentTypeError: naming the argument and what it got.
    """
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be a bool, got {type(value).__name__} {excerpt(repr(value))}")


class ArgumentValueError(OrionMessagesError, ValueError):
    """An argument whose value is not allowed, such as a negative count.

    Also a ``ValueError``, as Python's own value errors are. The text names the argument.
    """
