"""Persistence: atomic whole-conversation files and append-only JSON Lines logs.

``save`` never leaves a half-written file: it writes a temporary file beside the target, syncs
it, renames it over the target and syncs the folder. ``append_jsonl`` adds one record per call
at a cost that does not grow with the log, under an exclusive file lock so that two processes
appending to one log never interleave their lines.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Union

from .errors import FormatError
from .models import Message
from .wire import dumps, dumps_message, loads, loads_message

__all__ = ["TornLineWarning", "append_jsonl", "load", "read_jsonl", "save"]

PathLike = Union[str, "os.PathLike[str]"]

try:  # POSIX; on other systems appends are not locked against other processes
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class TornLineWarning(UserWarning):
    """A JSON Lines log ends in an incomplete record, as a crash mid-append leaves it."""


def save(path: PathLike, messages: Iterable[Message], *, indent: int | None = None) -> None:
    """Write a conversation file atomically, as ``dumps`` writes it.

    A process killed at any moment leaves either the previous file or the new one, whole, and
    no temporary file behind (the temporary file is removed on any error).

    Raises:
        FormatError: a message cannot be written back losslessly; the file is left untouched.
    """
    target = Path(path)
    data = dumps(messages, indent=indent)  # fails before anything on disk changes
    folder = target.parent
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed below, renamed, not deleted
        "wb", dir=folder, prefix=f".{target.name}.", suffix=".tmp", delete=False
    )
    try:
        with handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(handle.name, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(handle.name)
        raise
    _sync_folder(folder)


def load(path: PathLike, *, strict: bool = False) -> list[Message]:
    """Read a conversation file written by orion-core or by ``save``.

    Raises:
        FormatError: naming the file and every problem in it.
        OSError: the file cannot be read.
    """
    data = Path(path).read_bytes()
    try:
        return loads(data, strict=strict)
    except FormatError as error:
        raise error.with_source(str(path)) from None


def append_jsonl(path: PathLike, message: Message, *, fsync: bool = True) -> None:
    """Append one message to a JSON Lines log, as one line.

    The cost does not depend on the size of the log. An exclusive lock keeps concurrent
    appenders' lines whole. If the log ends in a torn record (a crash mid-append), the torn
    bytes are cut off first, with a ``TornLineWarning``, so the new record starts a clean line.
    With ``fsync=False`` the record survives a killed process but not a power loss.

    Raises:
        FormatError: the message cannot be written back losslessly; the log is left untouched.
    """
    record = dumps_message(message) + b"\n"
    fd = os.open(os.fspath(path), os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        with _locked(fd):
            _mend_torn_tail(fd, path)
            os.write(fd, record)
            if fsync:
                os.fsync(fd)
    finally:
        os.close(fd)


def read_jsonl(path: PathLike, *, repair: bool = False, strict: bool = False) -> list[Message]:
    """Read every message of a JSON Lines log.

    Blank lines are skipped. A torn last line (no final newline, and not a whole record) is
    skipped with a ``TornLineWarning``; ``repair=True`` also truncates it from the file. Every
    complete line must be a valid message: a corrupt one anywhere raises ``FormatError`` naming
    its line. Nothing is ever skipped silently.
    """
    data = Path(path).read_bytes()
    lines, torn = _split_records(data)
    if torn is not None:
        line_number, offset = torn
        warnings.warn(
            f"{path}:{line_number}: skipping a torn last line ({len(data) - offset} bytes), "
            "as a crash mid-append leaves it" + ("; truncated it" if repair else ""),
            TornLineWarning,
            stacklevel=2,
        )
        if repair:
            with open(path, "r+b") as handle:
                handle.truncate(offset)
                handle.flush()
                os.fsync(handle.fileno())
    messages = _parse_records(lines, str(path))
    if strict:
        from .conversation import check

        problems = check(messages)
        if problems:
            raise FormatError(problems, source=str(path))
    return messages


def _split_records(data: bytes) -> tuple[list[tuple[int, bytes]], tuple[int, int] | None]:
    """The complete, non-blank records with their line numbers, and where a torn tail starts."""
    raw_lines = data.split(b"\n")
    tail = raw_lines.pop()  # after the final newline: empty for a whole log
    records = [(number, line.rstrip(b"\r")) for number, line in enumerate(raw_lines, 1) if line.strip()]
    torn = None
    if tail.strip():
        number = len(raw_lines) + 1
        try:
            loads_message(tail)
        except FormatError:
            torn = (number, len(data) - len(tail))
        else:
            records.append((number, tail))  # a whole record that lost only its newline
    return records, torn


def _parse_records(records: list[tuple[int, bytes]], source: str) -> list[Message]:
    if not records:
        return []
    # Fast path: one validation over all records as one array. Any failure, or a line that
    # held more than one value, falls back to line by line for exact line numbers.
    try:
        messages = loads(b"[" + b",".join(line for _, line in records) + b"]")
    except FormatError:
        messages = []
    if len(messages) == len(records):
        return messages
    parsed: list[Message] = []
    for number, line in records:
        try:
            parsed.append(loads_message(line))
        except FormatError as error:
            raise error.at_line(number, source=source) from None
    return parsed


def _mend_torn_tail(fd: int, path: PathLike) -> None:
    size = os.fstat(fd).st_size
    if size == 0:
        return
    if os.pread(fd, 1, size - 1) == b"\n":
        return
    # Find the start of the last line; it is short compared with the log, so read backwards.
    start = _last_line_start(fd, size)
    tail = os.pread(fd, size - start, start)
    try:
        loads_message(tail)
    except FormatError:
        warnings.warn(
            f"{path}: cutting off a torn last record ({size - start} bytes) before appending",
            TornLineWarning,
            stacklevel=3,
        )
        os.ftruncate(fd, start)
    else:
        os.write(fd, b"\n")  # a whole record that lost only its newline


def _last_line_start(fd: int, size: int) -> int:
    end = size
    while end > 0:
        begin = max(0, end - 65536)
        chunk = os.pread(fd, end - begin, begin)
        newline = chunk.rfind(b"\n")
        if newline != -1:
            return begin + newline + 1
        end = begin
    return 0


@contextmanager
def _locked(fd: int) -> Iterator[None]:
    if fcntl is None:  # pragma: no cover - Windows
        yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _sync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - folders cannot be opened on Windows
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse to sync a folder
        pass
    finally:
        os.close(fd)
