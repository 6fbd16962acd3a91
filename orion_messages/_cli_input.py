"""The command line's inputs: files, logs, standard input and folders, read and parsed.

Each file is read once, as bytes, but a log file line by line; ``-`` is standard input. Parsing
is one pass over the bytes. ``validate`` reports what an input holds (``parse``); ``prune`` and
``convert`` read one conversation (``messages``), and ``stats`` counts one as it is read
(``message_stream``), any problem a fatal error.
"""

from __future__ import annotations

import errno
import gc
import io
import os
import re
import shutil
import stat
import sys
import warnings
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, TextIO

import orjson

from ._cli_base import STDIO, Fatal, Kind, kind_by_name
from ._cli_exit import err
from ._cli_lazy import LazyModule
from ._cli_text import MAX_PROBLEMS_ON_STDERR, printable, problem_line, problem_lines
from ._collector import collector_paused
from ._json_rules import JSON_WHITESPACE, may_repeat_keys, top_level_keys
from ._store_url import is_store_url, masked_url
from ._text import quoted
from .checks import find_problems, problems_on_lines
from .errors import (
    MAX_REPORTED_PROBLEMS,
    FormatError,
    OrionMessagesError,
    OrionMessagesWarning,
    Problem,
    TornLineWarning,
    UnknownKeyWarning,
)
from .models import Message
from .storage import _BLANK, _is_blank, _is_torn, _joined_records, _read_joined, _split_records
from .wire import duplicate_key_problems, loads, loads_message

if TYPE_CHECKING:
    from . import _store_cli, events
else:  # each loaded when a command first needs it: the rest start without their models (_cli_lazy)
    _store_cli = LazyModule("_store_cli")  # store URLs: asyncio, sqlite3 (psycopg)
    events = LazyModule("events")  # agent event streams

__all__ = [
    "FOLDER",
    "Parsed",
    "Progress",
    "STDIN_LABEL",
    "Unreadable",
    "collect",
    "library_warnings",
    "message_stream",
    "messages",
    "not_read",
    "open_file",
    "parse",
    "print_notices",
    "read_document",
    "read_input",
    "read_stdin",
    "warning_problems",
]

_PROGRESS_MIN_BYTES = 8 << 20
_READ_CHUNK = 1 << 20
_MAX_PROBLEMS_PER_FILE = MAX_REPORTED_PROBLEMS  # what a FormatError keeps: one cap for .json and .jsonl


# --------------------------------------------------------------------------------------------
# Progress on a terminal


class Progress:
    """A one-line progress bar on stderr, drawn with ``\\r``; only when stderr is a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._shown = 0
        self.enabled = _isatty(stream)

    def show(self, done: int, total: int | None, label: str, unit: str = "") -> None:
        """Redraw the bar: ``done`` of ``total`` (files, or bytes with ``unit="B"``), and a label."""
        if not self.enabled:
            return
        columns = shutil.get_terminal_size((80, 24)).columns
        count = f"{_size(done)}" if unit == "B" else f"{done:,}"
        if total:
            width = 24
            filled = width * min(done, total) // total
            total_text = _size(total) if unit == "B" else f"{total:,}"
            line = f"[{'#' * filled}{'.' * (width - filled)}] {count}/{total_text} {label}"
        else:
            line = f"{count} {label}"
        line = printable(line)[: max(10, columns - 1)]
        self._stream.write("\r" + line.ljust(self._shown))
        self._stream.flush()
        self._shown = len(line)

    def clear(self) -> None:
        """Erase the bar (before printing a line, and at the end)."""
        if self.enabled and self._shown:
            self._stream.write("\r" + " " * self._shown + "\r")
            self._stream.flush()
            self._shown = 0


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _size(count: int) -> str:
    return f"{count / (1 << 20):.1f} MB" if count >= 1 << 20 else f"{count / 1024:.0f} KB"


# --------------------------------------------------------------------------------------------
# Reading inputs: each file read once, as bytes, but a log file line by line; '-' is standard input


@dataclass
class _Input:
    """One input: its name as the user gave it, its bytes (or, for a log file, the open file) and its format."""

    name: str
    data: bytes
    kind: Kind
    handle: BinaryIO | None = None
    """A ``.jsonl`` file, open at its start and read line by line (issue 10); ``data`` is then empty."""
    size: int = 0
    """The input's size in bytes (for progress)."""


def _kind(name: str, data: bytes) -> Kind:
    """The format: by the file's extension, or by the content for standard input.

    Standard input that is empty (or only whitespace) is read as a conversation, and so refused
    as an empty ``.json`` file is: a pipe whose writer failed (``cat missing | ... -``) never
    passes as an empty log. A JSON Lines input is an agent event stream when its first record
    says so (``_first_record_is_event``), by the rule a ``.jsonl`` file is told by.
    """
    kind = kind_by_name(name) if name != STDIO else None
    if kind is None:  # empty standard input is an empty document, refused as an empty .json file
        kind = "json" if _ARRAY_START.match(data) or not data.strip(JSON_WHITESPACE.encode()) else "jsonl"
    if kind == "jsonl" and _first_record_is_event(io.BytesIO(data)):
        return "events"
    return kind


# A byte order mark before the array still makes a conversation, refused at line 1, column 1 as
# it is in a .json file (not a log whose only line is torn).
_ARRAY_START = re.compile(rb"(?:\xef\xbb\xbf)?[ \t\r\n]*\[")
# A record's start: blanks as storage's _is_blank has them; a byte order mark, which the reader
# refuses at its line, still lets the record's keys tell what the stream is.
_OBJECT_START = re.compile(rb"(?:\xef\xbb\xbf)?[" + re.escape(_BLANK) + rb"]*\{")


def _first_record_is_event(lines: Iterable[bytes]) -> bool:
    """Whether a log's lines are an agent event stream: the first line that opens a JSON object
    has a ``type`` key and no ``role`` key among its own keys (orion-core's messages have no
    ``type``, its events no ``role``; a record with both is read as a message, as ``read_jsonl``
    reads it).

    The line is parsed; one that does not parse (a number no parser holds, ``1e400``, invalid
    UTF-8, nesting past any parser's depth, a torn line) has its keys read leniently
    (``top_level_keys``), so what the readers refuse does not hide what the record is. A line
    that opens no object (blank, a form feed, garbage) is passed over, the same in a file and
    on standard input.
    """
    for line in lines:
        if (opens := _OBJECT_START.match(line)) is not None:
            start = opens.end() - 1
            try:  # one pass in C; the lenient reader takes a Python step per string of the values
                keys: Iterable[str] = orjson.loads(memoryview(line)[start:]).keys()
            except orjson.JSONDecodeError:
                keys = set(top_level_keys(line, start))
            return "type" in keys and "role" not in keys
    return False


class Unreadable(Exception):
    """An input that cannot be read: missing, a folder, a special file, no permission."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"{name}: {reason}")
        self.name = name
        self.reason = reason


def read_input(name: str, progress: Progress) -> _Input:
    """Read one input whole (a regular file, or standard input for ``-``) and tell its format."""
    if name == STDIO:
        data = read_stdin(progress)
        return _Input(STDIN_LABEL, data, _kind(name, data), size=len(data))
    fd = open_file(name)
    if kind_by_name(name) == "jsonl":  # a log can be big: it is read as it is parsed
        return _open_log(name, fd)
    data = _read_open_file(name, fd, progress)
    return _Input(name, data, _kind(name, data), size=len(data))


def read_stdin(progress: Progress) -> bytes:
    """Standard input, whole; a stream without a file descriptor (replaced in-process) is read as is."""
    if sys.stdin is None:  # started with file descriptor 0 closed: an error, not a traceback
        raise OSError(errno.EBADF, "standard input is closed", STDIN_LABEL)
    try:
        fd = sys.stdin.buffer.fileno()
    except (OSError, ValueError, AttributeError):
        return bytes(sys.stdin.buffer.read())
    try:
        return _read_stream(fd, None, STDIN_LABEL, progress)
    except OSError as error:  # opened write-only (``0>file``), say: named, as a file's error is
        raise OSError(error.errno, f"cannot read it: {error.strerror or error}", STDIN_LABEL) from None


def _read_open_file(name: str, fd: int, progress: Progress) -> bytes:
    """The whole of a regular file that ``open_file`` opened; the file is closed."""
    try:
        return _read_stream(fd, os.fstat(fd).st_size, name, progress)
    except OSError as error:
        raise Unreadable(name, f"cannot read it: {error.strerror or error}") from None
    finally:
        os.close(fd)


def read_document(name: str) -> tuple[str, bytes]:
    """The name to show and the bytes of one JSON document in any format (``convert --from``):
    standard input for ``-``, else a regular file, as every input; any problem is a fatal error."""
    progress = Progress(sys.stderr)
    if name == STDIO:
        return STDIN_LABEL, read_stdin(progress)
    try:
        return name, _read_open_file(name, open_file(name), progress)
    except Unreadable as unreadable:  # not the hint for conversations: any JSON document is read
        reason = _FOLDER_ONLY if unreadable.reason == FOLDER else unreadable.reason
        raise Fatal(f"error: {name}: {reason}") from None


def _open_log(name: str, fd: int) -> _Input:
    """A ``.jsonl`` file left open at its start; its first record tells a log from an event stream."""
    handle = os.fdopen(fd, "rb")
    try:
        kind: Kind = "events" if _first_record_is_event(handle) else "jsonl"
        handle.seek(0)
        size = os.fstat(fd).st_size
    except OSError as error:
        handle.close()
        raise Unreadable(name, f"cannot read it: {error.strerror or error}") from None
    return _Input(name, b"", kind, handle, size)


def open_file(name: str) -> int:
    """A regular file, open for reading; folders, FIFOs and devices are refused without being read."""
    try:  # O_NONBLOCK: opening a FIFO must not wait for a writer
        fd = os.open(name, os.O_RDONLY | _O_NONBLOCK | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise Unreadable(name, "no such file") from None
    except IsADirectoryError:  # pragma: no cover - Linux opens folders read-only; fstat reports it
        raise Unreadable(name, FOLDER) from None
    except OSError as error:
        raise Unreadable(name, f"cannot read it: {error.strerror or error}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise Unreadable(name, FOLDER)
        if not stat.S_ISREG(mode):
            raise Unreadable(name, f"not a regular file ({_file_type(mode)}); use - for standard input")
        if _O_NONBLOCK:
            os.set_blocking(fd, True)
    except OSError as error:
        os.close(fd)
        raise Unreadable(name, f"cannot read it: {error.strerror or error}") from None
    except Unreadable:
        os.close(fd)
        raise
    return fd


_FOLDER_ONLY = "is a folder"
FOLDER = f"{_FOLDER_ONLY}; expected a .json conversation or a .jsonl log"
"""Why a folder named as a conversation is refused."""
STDIN_LABEL = "<stdin>"
"""Standard input's name in messages."""
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # not on Windows, which has no FIFOs in folders


def _read_stream(fd: int, size: int | None, label: str, progress: Progress) -> bytes:
    chunks: list[bytes] = []
    done = 0
    show = size is None or size >= _PROGRESS_MIN_BYTES
    while chunk := os.read(fd, _READ_CHUNK):
        chunks.append(chunk)
        done += len(chunk)
        if show:
            progress.show(done, size, f"reading {label}", unit="B")
    if show:
        progress.clear()
    return b"".join(chunks)


def _file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a named pipe"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "a special file"


# --------------------------------------------------------------------------------------------
# Parsing: one pass over the bytes; strict = duplicate keys and semantic problems are errors


@dataclass
class Parsed:
    """What one input holds: its messages (or event count), errors and warnings."""

    name: str
    kind: Kind | None
    """None for a path that was not read as either (missing, a folder): its extension says none."""
    messages: list[Message] = field(default_factory=list)
    events: int = 0
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    what: str = "file"
    """What the input is, for ``validate``'s summary: a file, a folder, a stored conversation."""
    omitted: int = 0
    """Errors past the first ``_MAX_PROBLEMS_PER_FILE``, counted but not kept."""
    omitted_warnings: int = 0
    notices: list[Problem] = field(default_factory=list)
    """The library's warnings (a left-out unknown key, a torn last line), also among ``warnings``."""
    omitted_notices: int = 0
    lines: list[int] = field(default_factory=list)
    """For a JSON Lines log, the line of each message: semantic problems are placed on it."""
    torn: _TornLine | None = None
    """A log's torn last line, found as it is read and reported after every other problem."""

    @property
    def valid(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors and not self.omitted

    def add(self, problems: Sequence[Problem], *, error: bool = True, omitted: int = 0) -> None:
        """Keep the first problems; count the rest (a hostile file cannot fill the memory).

        ``omitted`` counts problems the library found and did not keep (``FormatError.omitted``).
        """
        target = self.errors if error else self.warnings
        room = max(0, _MAX_PROBLEMS_PER_FILE - len(target))
        target.extend(problems[:room])
        dropped = max(0, len(problems) - room) + omitted
        if error:
            self.omitted += dropped
        else:
            self.omitted_warnings += dropped

    def notice(self, problems: Sequence[Problem], *, error: bool = False) -> None:
        """Report the library's warnings: as warnings (or errors), and kept apart for stderr."""
        self.add(problems, error=error)
        room = max(0, _MAX_PROBLEMS_PER_FILE - len(self.notices))
        self.notices.extend(problems[:room])
        self.omitted_notices += max(0, len(problems) - room)


@contextmanager
def library_warnings(into: list[OrionMessagesWarning]) -> Iterator[None]:
    """Collect the library's warnings into ``into`` instead of letting Python print them raw;
    any other warning goes on as it would have."""
    with warnings.catch_warnings():
        warnings.simplefilter("always", OrionMessagesWarning)  # each one counts, not just the first
        show = warnings.showwarning

        def route(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
            if isinstance(message, OrionMessagesWarning):
                into.append(message)
            else:
                show(message, category, *args, **kwargs)

        warnings.showwarning = route
        yield


def warning_problems(caught: list[OrionMessagesWarning], line: int | None = None) -> list[Problem]:
    """The library's warnings as problems, built from their fields (never their text), each once."""
    problems = dict.fromkeys(_warning_problem(warning, line) for warning in caught)
    caught.clear()
    return list(problems)


def _warning_problem(warning: OrionMessagesWarning, line: int | None) -> Problem:
    if isinstance(warning, UnknownKeyWarning):
        at = warning.line if warning.line is not None else line
        return Problem(warning.location, f"unknown key {quoted(warning.key)} left out: {warning.reason}", at)
    if isinstance(warning, TornLineWarning):
        return _TornLine(warning.line, warning.size).problem(skipped=True)
    doc = (type(warning).__doc__ or "").strip().splitlines()
    return Problem("", f"{type(warning).__name__}: {doc[0] if doc else 'a library warning'}", line)


class _TornLine(NamedTuple):
    """A log's torn last line: where (None when a warning did not say), and how many bytes."""

    line: int | None
    size: int

    def problem(self, *, skipped: bool) -> Problem:
        """The line as a problem: a warning that it is skipped, or (``--strict``) an error."""
        torn = f"a torn last line ({self.size} bytes), as a crash mid-append leaves it"
        return Problem("", f"skipping {torn}" if skipped else torn, self.line)


def parse(read: _Input, *, strict: bool, progress: Progress | None = None, semantic: bool = True) -> Parsed:
    """Parse an input once. Keys repeated in one object are always errors (serde refuses them);
    ``strict`` makes semantic problems (and a torn last line) errors too, as the library's
    ``strict=True`` does; otherwise they are warnings. ``semantic=False``: semantic problems are
    not looked for (``stats``, ``prune`` and ``convert`` do not show them)."""
    parsed = Parsed(read.name, read.kind)
    for _ in _parsed_runs(read, parsed, strict=strict, progress=progress, semantic=semantic, keep=True):
        pass  # nothing is yielded: every message is kept in parsed
    return parsed


def _parsed_runs(
    read: _Input, parsed: Parsed, *, strict: bool, progress: Progress | None, semantic: bool, keep: bool
) -> Iterator[list[Message]]:
    """``parse`` into ``parsed``. ``keep=False``: the messages are yielded as they are read, a
    log's a run at a time (a conversation's all at once), and not kept, so memory holds one run
    of a log; with no semantic check, which needs them all. The problems are all in ``parsed``
    once the last run is yielded."""
    large = progress is not None and read.size >= _PROGRESS_MIN_BYTES
    try:
        if read.kind == "json":
            if large and progress is not None:  # one call: a status line, not a bar
                progress.show(read.size, None, f"parsing {read.name}", unit="B")
            _parse_conversation(read.data, parsed, strict=strict, semantic=semantic)
            if not keep:
                yield parsed.messages
                parsed.messages = []
        else:
            if read.handle is None:
                records = _byte_records(read.data, parsed)
            else:
                records = _file_records(read.name, read.handle, parsed)
            shown = progress if large else None
            yield from _parse_records(
                records, read.size, parsed, strict=strict, progress=shown, semantic=semantic, keep=keep
            )
    finally:
        if read.handle is not None:
            read.handle.close()
        if progress is not None:
            progress.clear()


def _parse_conversation(data: bytes, parsed: Parsed, *, strict: bool, semantic: bool) -> None:
    caught: list[OrionMessagesWarning] = []
    with library_warnings(caught):
        _load_conversation(data, parsed, strict=strict, semantic=semantic)
    parsed.notice(warning_problems(caught))


def _load_conversation(data: bytes, parsed: Parsed, *, strict: bool, semantic: bool) -> None:
    """Parse a conversation once, leniently, and sort its problems as ``parse`` says.

    Keys repeated in one object are looked for first (``_repeated_keys``), so the scanner's
    objects and the messages are never in memory together; every command needs them, as
    orion-core refuses such a file. Every problem is listed: a failed load stops before the
    repeated keys, and they are added to its problems.
    """
    repeated = _repeated_keys(data)
    try:
        parsed.messages = loads(data)
    except FormatError as error:
        found = set(error.problems)  # a set: a hostile file repeats a key in every message
        problems = [*error.problems, *(problem for problem in repeated if problem not in found)]
        parsed.add(problems, omitted=error.omitted)
        return
    parsed.add(repeated)
    if semantic:
        parsed.add(find_problems(parsed.messages), error=strict)


def _repeated_keys(data: bytes) -> list[Problem]:
    """The known keys repeated in one object of a conversation, each a problem (the codec's
    scanner), walked only when a key may repeat (``may_repeat_keys``): the scanner builds the
    whole document as Python objects, with a Python hook on each, and costs more than the load
    itself. A document that is not valid JSON has none to find (the load reports it)."""
    with collector_paused():  # the check's objects hold no cycles to collect
        return duplicate_key_problems(data)


_Record = tuple[int, bytes, int]
"""A non-blank record of a log: its line number, its bytes, and the input's bytes read up to its end."""


def _byte_records(data: bytes, parsed: Parsed) -> Iterator[_Record]:
    """The records of a log or event stream read whole (standard input)."""
    # The log's rules are storage's: which lines are blank, and what a torn last line is.
    with warnings.catch_warnings():  # a whole last line is parsed again, warnings and all
        warnings.simplefilter("ignore", OrionMessagesWarning)
        records, torn = _split_records(data)
    if torn is not None and parsed.kind == "jsonl":
        parsed.torn = _TornLine(torn.line, torn.size)
    elif torn is not None:  # no torn-tail rule for events, nor for a line that starts no record
        records.append((torn.line, data[torn.offset :]))
    done = 0
    for number, record in records:
        done += len(record) + 1
        yield number, record, done


def _file_records(name: str, handle: BinaryIO, parsed: Parsed) -> Iterator[_Record]:
    """The records of a log file, read line by line: memory holds a run of lines, not the file.

    The rules of ``_split_records``, by storage's own helpers: blank lines are skipped, and a
    last line without its newline is torn (a log's, not an event stream's) by storage's rule
    (``_is_torn``); otherwise it is a record, whole or corrupt.
    """
    done = 0
    try:
        for number, line in enumerate(handle, 1):
            done += len(line)
            if line.endswith(b"\n"):
                line = line[:-1]
            elif parsed.kind == "jsonl" and _is_torn_quietly(line):
                parsed.torn = _TornLine(number, len(line))
                return
            if not _is_blank(line):
                yield number, line, done
    except OSError as error:
        raise Unreadable(name, f"cannot read it: {error.strerror or error}") from None


def _is_torn_quietly(line: bytes) -> bool:
    with warnings.catch_warnings():  # a whole last line is parsed again, warnings and all
        warnings.simplefilter("ignore", OrionMessagesWarning)
        return _is_torn(line)


def _parse_records(
    records: Iterator[_Record],
    size: int,
    parsed: Parsed,
    *,
    strict: bool,
    progress: Progress | None,
    semantic: bool,
    keep: bool,
) -> Iterator[list[Message]]:
    """Every record of a log or event stream; a bad line is reported with its number.
    ``keep=False``: each run's messages are yielded, then dropped from ``parsed``.

    The collector is paused meanwhile, as the library's readers pause it: a log of 200,000
    messages otherwise spends most of its time in collections that find nothing. ``semantic``:
    run ``find_problems`` over the whole log (``validate``); ``stats``, ``prune`` and ``convert``
    never show those problems, so they skip it.
    """
    caught: list[OrionMessagesWarning] = []
    failed = 0
    with library_warnings(caught), collector_paused():
        for run in _runs(records):
            if progress is not None:
                progress.show(run[-1][2], size, f"checking {parsed.name}", unit="B")
            failed += _parse_run(run, parsed, caught, semantic=semantic, strict=strict)
            if failed >= _COLLECT_EVERY_FAILED:
                gc.collect(0)
                failed = 0
            if not keep:
                yield parsed.messages
                parsed.messages, parsed.lines = [], []
    if semantic and parsed.kind == "jsonl" and parsed.valid:
        parsed.add(problems_on_lines(parsed.messages, parsed.lines), error=strict)
    if parsed.torn is not None:  # the last line: after the problems of every line before it
        parsed.notice([parsed.torn.problem(skipped=not strict)], error=strict)


def _parse_run(
    run: list[_Record], parsed: Parsed, caught: list[OrionMessagesWarning], *, semantic: bool, strict: bool
) -> int:
    """Read a run of records into ``parsed``, at once where no key may repeat and every record
    reads, else one by one; how many records did not read."""
    lines = [(number, record) for number, record, _ in run]
    joined = _joined_records(lines)
    # One check of the run's bytes spares each record's scan for repeated keys.
    repeats = joined is None or may_repeat_keys(joined)
    if joined is not None and not repeats and parsed.kind == "jsonl":
        if _parse_joined(joined, lines, parsed):
            parsed.notice(warning_problems(caught))  # each placed on its line by the reader
            return 0
        gc.collect(0)  # the failed read's frames hold the whole run, in reference cycles
    return _parse_each(run, parsed, caught, repeats=repeats, semantic=semantic, strict=strict)


def _runs(records: Iterator[_Record]) -> Iterator[list[_Record]]:
    """The records in runs of up to ``_RUN_RECORDS`` records or ``_RUN_BYTES`` bytes: memory holds
    one run, not the log."""
    run: list[_Record] = []
    size = 0
    for record in records:
        run.append(record)
        size += len(record[1])
        if len(run) >= _RUN_RECORDS or size >= _RUN_BYTES:
            yield run
            run, size = [], 0
    if run:
        yield run


_RUN_RECORDS = 2048  # the progress line moves once a run
_RUN_BYTES = 1 << 18  # its reading peaks at about 15 times its bytes


def _parse_joined(joined: bytes, records: list[tuple[int, bytes]], parsed: Parsed) -> bool:
    """Read a log's records, where no key repeats, at once from ``joined``, as ``read_jsonl`` does
    (three times faster than one by one). False, with nothing kept, when a record does not read:
    each is then read alone, for its own line's problems (the reader warns only once a document
    loads, so no warning is given twice)."""
    loaded = _read_joined(joined, records, parsed.name)
    if loaded is None:
        return False
    parsed.messages.extend(loaded)
    parsed.lines.extend(number for number, _ in records)
    return True


def _parse_each(
    run: list[_Record],
    parsed: Parsed,
    caught: list[OrionMessagesWarning],
    *,
    repeats: bool,
    semantic: bool,
    strict: bool,
) -> int:
    """Read a run's records one by one, each problem on its line; how many did not read.
    ``repeats``: a key may repeat in the run (``may_repeat_keys``), so each record is scanned;
    ``semantic`` and ``strict`` as ``_parse_records`` (for an event's messages)."""
    failed = 0
    for number, record, _ in run:
        if not _parse_record(record, number, parsed, repeats=repeats, semantic=semantic, strict=strict):
            failed += 1
        if caught:
            parsed.notice(warning_problems(caught, number))
    return failed


_COLLECT_EVERY_FAILED = 1000
"""How many bad records between two young collections while the collector is paused: each
failure leaves reference cycles (an exception, its traceback's frames), 2 kB a record, which a
log of a million bad lines would otherwise hold until the end (gigabytes)."""


def _parse_record(
    record: bytes, number: int, parsed: Parsed, *, repeats: bool, semantic: bool, strict: bool
) -> bool:
    """Read one record into ``parsed``; whether it was read (its problems are in ``parsed``).
    ``repeats``: a key may repeat in it, so it is scanned for repeated known keys. An
    ``agent_end`` event's messages then get the semantic check (``semantic``), as
    ``parse_event(strict=True)`` makes it: warnings, or errors with ``strict``."""
    event: events.AgentEvent | None = None  # an event's type says which keys it knows
    try:
        if parsed.kind == "events":
            event = events.parse_event(record)
            parsed.events += 1
        else:
            parsed.messages.append(loads_message(record))
            parsed.lines.append(number)
    except FormatError as error:
        parsed.add(error.at_line(number).problems)
        return False
    if repeats:
        parsed.add(_duplicate_keys(record, number, None if event is None else event.type))
    if semantic and event is not None:
        parsed.add(_agent_end_problems(event, number), error=strict)
    return True


def _agent_end_problems(event: events.AgentEvent, line: int) -> list[Problem]:
    """``events.event_problems`` (an ``agent_end``'s messages, located inside the event as
    ``parse_event(strict=True)`` locates them), placed on the event's line."""
    problems = events.event_problems(event)
    return FormatError(problems).at_line(line).problems if problems else []


def _duplicate_keys(record: bytes, line: int, event_type: str | None) -> list[Problem]:
    """Known keys repeated in one object of one record (a message, or an event of ``event_type``),
    placed on its line (the codec's scanner)."""
    if event_type is None:
        problems = duplicate_key_problems(record)
    else:
        problems = events.duplicate_event_key_problems(record, event_type)
    return FormatError(problems).at_line(line).problems if problems else []


def messages(name: str) -> tuple[str, Kind, list[Message]]:
    """Read one input for prune or convert; any problem is a fatal, clear error."""
    source = _conversation_source(name)
    if isinstance(source, _Stored):
        return source.name, "json", source.messages
    parsed = Parsed(source.name, source.kind)
    for _ in _read_conversation(source, parsed, keep=True):
        pass  # nothing is yielded: every message is kept in parsed
    return source.name, source.kind, parsed.messages


def message_stream(name: str) -> tuple[str, Generator[Message, None, None]]:
    """Read one input for stats: its name and its messages as they are read, a log's a run of
    lines at a time (memory holds one run, not the log). Any problem is a fatal, clear error,
    raised as the stream ends: what was read of a bad input must not be shown."""
    source = _conversation_source(name)
    if isinstance(source, _Stored):
        return source.name, (message for message in source.messages)
    return source.name, _streamed(source)


def _streamed(read: _Input) -> Generator[Message, None, None]:
    for run in _read_conversation(read, Parsed(read.name, read.kind), keep=False):
        yield from run


class _Stored(NamedTuple):
    """A conversation read from a store URL: the URL as it is shown (no password), its messages."""

    name: str
    messages: list[Message]


def _conversation_source(name: str) -> _Stored | _Input:
    """The conversation a store URL names, read; else the file or standard input to parse, read
    or (a log) opened. An event stream is refused: any problem is a fatal, clear error."""
    caught: list[OrionMessagesWarning] = []
    try:  # a store URL (sqlite:///chats.db?conversation=c1) reads like a file
        with library_warnings(caught):
            stored = _store_cli.read_source(name) if is_store_url(name) else None
    except OrionMessagesError as error:
        raise Fatal(f"error: {printable(str(error))}") from None
    if stored is not None:
        shown = masked_url(name)  # a password is never printed
        report = Parsed(shown, "json", stored)
        report.notice(warning_problems(caught))
        print_notices(report)
        return _Stored(shown, stored)
    try:
        read = read_input(name, Progress(sys.stderr))
    except Unreadable as unreadable:
        raise Fatal(f"error: {unreadable}") from None
    if read.kind == "events":
        if read.handle is not None:
            read.handle.close()
        raise Fatal(f"error: {read.name}: an agent event stream, not a conversation (validate checks it)")
    return read


def _read_conversation(read: _Input, parsed: Parsed, *, keep: bool) -> Iterator[list[Message]]:
    """Parse one conversation into ``parsed`` as ``_parsed_runs`` does (``keep``), leniently and
    without the semantic check (validate shows those problems); once it is all read, any
    problem is a fatal, clear error, else the library's warnings go to stderr."""
    try:
        progress = Progress(sys.stderr)
        yield from _parsed_runs(read, parsed, strict=False, progress=progress, semantic=False, keep=keep)
    except Unreadable as unreadable:
        raise Fatal(f"error: {unreadable}") from None
    if not parsed.valid:
        raise Fatal(*problem_lines(read.name, parsed.errors, parsed.omitted))
    print_notices(parsed)  # semantic problems are for validate to show


def print_notices(parsed: Parsed) -> None:
    """The library's warnings (torn line, left-out keys), one line each on stderr, capped."""
    for problem in parsed.notices[:MAX_PROBLEMS_ON_STDERR]:
        err(f"warning: {problem_line(parsed.name, problem)}")
    more = len(parsed.notices) + parsed.omitted_notices - MAX_PROBLEMS_ON_STDERR
    if more > 0:
        err(f"warning: {parsed.name}: ... and {more:,} more warnings")


# --------------------------------------------------------------------------------------------
# Finding the inputs: the files under the folders named, each once (validate)


def collect(raws: Sequence[str]) -> list[str | Parsed]:
    """The inputs named, and the conversation files under the folders named, each once.

    A path that cannot be searched (missing, a folder holding no conversation file, a subfolder
    that cannot be listed) is a report with its error, in its place, so the others are still
    checked; a file that cannot be read is one when it is read (``_cli_validate._check_one``).
    """
    found: list[str | Parsed] = []
    for raw in raws:
        if raw != STDIO and os.path.isdir(raw):
            failures: list[OSError] = []
            inside = list(_walk(Path(raw), failures.append))
            found.extend(inside)
            found.extend(_unlisted(error, raw) for error in failures)
            if not inside and not failures:
                found.append(not_read(raw, _NO_CONVERSATIONS, what="folder"))
        else:
            found.append(_looked_up(raw))
    unique: dict[str, str | Parsed] = {}
    for item in found:
        name = item.name if isinstance(item, Parsed) else item
        unique.setdefault(name if name == STDIO else os.path.realpath(name), item)
    return list(unique.values())


_NO_CONVERSATIONS = "no .json, .jsonl or .ndjson files in this folder"


def _looked_up(raw: str) -> str | Parsed:
    """``raw`` if something is there to be read (``_cli_validate._check_one`` reads it), else the report of why
    not: "no such file or folder", or the system's reason (a name too long, a file where a folder
    should be, no permission to look), which ``os.path.lexists`` would hide behind "no such"."""
    if raw == STDIO:
        return raw
    try:
        os.lstat(raw)
    except FileNotFoundError:
        return not_read(raw, "no such file or folder")
    except OSError as error:
        return not_read(raw, f"cannot read it: {error.strerror or error}")
    return raw


def not_read(name: str, reason: str, *, what: str = "file") -> Parsed:
    """The report of an input that could not be read: one error, its format by its extension
    (none for a folder, whatever its name)."""
    kind = None if what == "folder" else kind_by_name(name)
    return Parsed(name, kind, errors=[Problem("", reason)], what=what)


def _unlisted(error: OSError, raw: str) -> Parsed:
    """The report of a folder that ``os.walk`` could not list."""
    name = os.fsdecode(error.filename) if error.filename is not None else raw
    return not_read(name, f"cannot list this folder: {error.strerror or error}", what="folder")


def _walk(folder: Path, failed: Callable[[OSError], None]) -> Iterator[str]:
    """Regular conversation files and logs under ``folder``, sorted; hidden ones and special files
    skipped; a folder that cannot be listed is passed to ``failed``."""
    for root, folders, files in os.walk(folder, onerror=failed):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            path = os.path.join(root, name)
            if not name.startswith(".") and kind_by_name(name) and _is_regular(path):
                yield path


def _is_regular(path: str) -> bool:
    """A regular file, or a symlink to one (a FIFO or a device would hang or never end)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False
