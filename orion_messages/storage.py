"""Persistence: atomic whole-conversation files and append-only JSON Lines logs.

``save`` never leaves a half-written file: it writes a temporary file beside the target, syncs
it, renames it over the target and syncs the folder. ``append_jsonl`` adds one record per call
at a cost that does not grow with the log, under an exclusive file lock so that two processes
appending to one log never interleave their lines.
"""

from __future__ import annotations

import os
import secrets
import stat
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Union

from .checks import check
from .errors import FormatError, TornLineWarning
from .models import Message
from .wire import dumps, dumps_message, loads, loads_message

__all__ = ["TornLineWarning", "append_jsonl", "load", "read_jsonl", "save", "save_jsonl"]

PathLike = Union[str, "os.PathLike[str]"]

try:  # POSIX; on other systems appends are not locked against other processes
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation


def save(path: PathLike, messages: Iterable[Message], *, indent: int | None = None) -> None:
    """Write a conversation file atomically, as ``dumps`` writes it.

    A process killed at any moment leaves either the previous file or the new one, whole. On
    Linux the data is written to an unnamed file (``O_TMPFILE``) that only gets a name once it
    is complete and synced, the instant before it is renamed over the target, so a killed save
    leaves no temporary file behind either. Where that is not possible, a named temporary file
    is removed on any error, and the next save removes what a killed one left. An existing
    file's permission bits are kept.

    Raises:
        FormatError: a message cannot be written back losslessly; the file is left untouched.
        OSError: the file cannot be written; the previous file is left whole.
    """
    _replace_atomically(Path(path), dumps(messages, indent=indent))  # dumps fails before the disk changes


def save_jsonl(path: PathLike, messages: Iterable[Message]) -> None:
    """Write a whole JSON Lines log atomically: one message a line, as ``append_jsonl`` writes them.

    For rewriting a log (converting, pruning, compacting); the same guarantees as ``save``.

    Raises:
        FormatError: a message cannot be written back losslessly; the file is left untouched.
        OSError: the file cannot be written; the previous file is left whole.
    """
    data = b"".join(dumps_message(message) + b"\n" for message in messages)
    _replace_atomically(Path(path), data)


def _replace_atomically(target: Path, data: bytes) -> None:
    """Put ``data`` at ``target`` so that a reader sees the old file or the new one, whole."""
    folder = target.parent
    mode = _existing_mode(target)
    temporary = _write_unnamed(target, data, mode) if _UNNAMED_FILES else None
    if temporary is None:
        temporary = _write_named(target, data, mode)
    try:
        os.replace(temporary, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    _sweep_leftovers(target)
    _sync_folder(folder)


# Linux can create a file with no name and link it in later through /proc.
_UNNAMED_FILES = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


def _existing_mode(target: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return None


def _temporary_name(target: Path) -> str:
    # The process id lets a later save recognise the leftovers of a save that was killed.
    return os.path.join(target.parent, f".{target.name}.{os.getpid()}-{secrets.token_hex(6)}.tmp")


def _sweep_leftovers(target: Path) -> None:
    """Remove temporary files that a killed save of ``target`` left behind.

    Only files named by ``_temporary_name`` for this target whose process is gone are removed;
    a save running in another live process keeps its file.
    """
    prefix = f".{target.name}."
    try:
        entries = os.scandir(target.parent)
    except OSError:  # pragma: no cover - the folder cannot be listed; nothing to do
        return
    with entries:
        for entry in entries:
            name = entry.name
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid, dash, token = name[len(prefix) : -len(".tmp")].partition("-")
            if not (dash and pid.isdigit() and len(token) == 12) or _process_alive(int(pid)):
                continue
            with suppress(OSError):
                os.unlink(entry.path)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists but is not ours (EPERM), or cannot tell: leave its file alone
    return True


def _write_and_sync(fd: int, data: bytes, mode: int | None) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    if mode is not None:
        os.chmod(fd, mode)
    os.fsync(fd)


def _write_unnamed(target: Path, data: bytes, mode: int | None) -> str | None:
    """Write ``data`` to an unnamed file in the target's folder, synced, then name it; or None.

    None when the file system has no unnamed files; then nothing was created.
    """
    try:
        fd = os.open(target.parent, os.O_TMPFILE | os.O_WRONLY, 0o666)
    except OSError:  # the file system cannot; fall back to a named temporary file
        return None  # (not remembered: another folder may be on another file system)
    global _UNNAMED_FILES
    try:
        _write_and_sync(fd, data, mode)
        for _ in range(100):
            name = _temporary_name(target)
            try:
                os.link(f"/proc/self/fd/{fd}", name)
            except FileExistsError:  # pragma: no cover - 48 random bits collided
                continue
            except OSError:  # some sandboxes refuse the link; use named files from now on
                _UNNAMED_FILES = False
                return None
            return name
        raise FileExistsError(f"no free temporary name beside {target}")  # pragma: no cover
    finally:
        os.close(fd)


def _write_named(target: Path, data: bytes, mode: int | None) -> str:
    """Write ``data`` to a new named temporary file beside ``target``, synced; remove it on error.

    A new file gets ``0o666`` less the umask, as an ordinary ``open`` gives it (``tempfile``
    would make it ``0o600``); an existing target's permission bits are kept.
    """
    for _ in range(100):
        name = _temporary_name(target)
        try:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
        except FileExistsError:  # pragma: no cover - 48 random bits collided
            continue
        try:
            try:
                _write_and_sync(fd, data, mode)
            finally:
                os.close(fd)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(name)
            raise
        return name
    raise FileExistsError(f"no free temporary name beside {target}")  # pragma: no cover


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
