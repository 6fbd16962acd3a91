"""Persistence: atomic whole-conversation files and append-only JSON Lines logs.

``save`` never leaves a half-written file: it writes a temporary file beside the target, syncs
it, renames it over the target and syncs the folder. ``append_jsonl`` adds one record per call
at a cost that does not grow with the log, under an exclusive file lock so that two processes
appending to one log never interleave their lines. ``docs/reliability.md`` states every promise
and its limits.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import stat
import warnings
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, NamedTuple, Union, cast

from ._json_rules import JSON_WHITESPACE, VALUE_DEPTH_MAX, flatten_deeper_than, may_repeat_keys
from ._text import kind_of
from ._unknown_values import Origin
from .checks import problems_on_lines
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    FormatError,
    NotALogError,
    NotARegularFileError,
    Problem,
    TornLineWarning,
    require_bool,
)
from .models import Message
from .wire import (
    duplicate_key_problems,
    file_bytes,
    is_one_json_object,
    listed_messages,
    load_conversation,
    load_message,
    loads_message,
    record_bytes,
)

__all__ = ["TornLineWarning", "append_jsonl", "iter_jsonl", "load", "read_jsonl", "save", "save_jsonl"]

PathLike = Union[str, "os.PathLike[str]"]

try:  # POSIX; on other systems appends are not locked against other processes
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


_SEPARATORS = tuple({os.sep, os.altsep or os.sep})
"""What ends a folder's path: ``/`` (and ``\\`` on Windows)."""

_O_BINARY = getattr(os, "O_BINARY", 0)  # Windows: no newline translation
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer

# --- Path arguments -----------------------------------------------------------------------------


def _require_path(path: object, function: str, argument: str = "path") -> None:
    """Refuse a path argument of ``function`` (named ``argument``) that is not a non-empty ``str``
    or ``os.PathLike[str]``.

    Once per call, before any work: otherwise ``None`` or an int fails deep inside ``open`` with
    a bare ``TypeError``, and bytes (which ``open`` takes but the atomic save cannot) half-work.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes included).
        ArgumentValueError: ``path`` is empty.
    """
    if isinstance(path, str):
        if not path:
            raise ArgumentValueError(f"{function}: {argument} is empty")
        return
    expected = f"{function}: {argument} must be a str or an os.PathLike"
    if isinstance(path, bytes):  # open() would take them; the atomic save cannot
        raise ArgumentTypeError(f"{expected}, got {kind_of(path)} (decode it with os.fsdecode())")
    if not isinstance(path, os.PathLike):
        raise ArgumentTypeError(f"{expected}, got {kind_of(path)}")
    try:
        text = os.fspath(path)
    except TypeError:  # its __fspath__ returns neither str nor bytes
        raise ArgumentTypeError(f"{expected}, got {kind_of(path)} whose __fspath__() gives no str") from None
    if isinstance(text, bytes):
        raise ArgumentTypeError(
            f"{expected} of str, got {kind_of(path)} whose __fspath__() gives bytes"
            " (decode it with os.fsdecode())"
        )
    if not text:
        raise ArgumentValueError(f"{function}: {argument} is empty")


# --- Regular files only -------------------------------------------------------------------------


def _require_regular_file(path: PathLike) -> None:
    """Refuse ``path`` unless it is a regular file (symlinks followed), without opening it.

    For callers that walk folders or check names before reading (the CLI): a FIFO would block
    a reader forever and a device such as ``/dev/zero`` never ends.

    Raises:
        NotARegularFileError: ``path`` is a FIFO, a device, a folder or a socket.
        OSError: ``path`` cannot be looked at (missing, no permission).
    """
    _check_regular(os.stat(path).st_mode, path)


def _check_regular(mode: int, path: PathLike) -> None:
    if (error := NotARegularFileError.of_mode(os.fspath(path), mode)) is not None:
        raise error


def _open_regular(path: PathLike, flags: int, mode: int = 0o666) -> int:
    """Open ``path`` (following symlinks) and return the descriptor, if it is a regular file.

    A file it creates gets ``mode`` less the umask, as an ordinary ``open`` gives it (a log that
    several processes of a group append to stays writable by the group).
    """
    try:
        fd = os.open(path, flags | _O_NONBLOCK | _O_CLOEXEC | _O_BINARY, mode)
    except IsADirectoryError:  # opening a folder for writing fails before it can be looked at
        raise NotARegularFileError(os.fspath(path), "a folder") from None
    except OSError as error:
        if error.errno == errno.ENXIO:  # a Unix socket cannot be opened at all: say what it is
            _check_regular(os.stat(path).st_mode, path)
        raise
    try:
        _check_regular(os.fstat(fd).st_mode, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_regular(path: PathLike) -> bytes:
    fd = _open_regular(path, os.O_RDONLY)
    try:
        return _read_all(fd)
    finally:
        os.close(fd)


def _named(error: OSError, path: PathLike) -> OSError:
    """``error`` naming ``path`` (``os.write`` and ``os.fsync`` do not know the file's name)."""
    if error.filename is not None:
        return error
    if error.errno is None:
        return OSError(f"{os.fspath(path)}: {error}")
    return OSError(error.errno, error.strerror or str(error), os.fspath(path))  # keeps the subclass


# --- Whole files --------------------------------------------------------------------------------


def _require_path_first(path: object, messages: object, writer: str, second: str = "messages") -> None:
    """``ArgumentTypeError`` for the arguments swapped: ``writer(messages, path)``; then the
    path's own check (``_require_path``). ``second`` names the argument that follows the path."""
    if isinstance(messages, (str, os.PathLike)) and not isinstance(path, (str, bytes, os.PathLike)):
        raise ArgumentTypeError(
            f"{writer}(path, {second}) takes the path first; got {kind_of(path)} and then {kind_of(messages)}"
        )
    _require_path(path, writer)


def save(path: PathLike, messages: Iterable[Message], *, indent: int | None = None) -> None:
    """Write a conversation file atomically, as ``dumps`` writes it.

    A process killed at any moment leaves either the previous file or the new one, whole. A
    symlink at ``path`` is followed, as editors do: the file it points to is replaced. The new
    data is written to a temporary file, which over an existing file only its owner can read
    (mode 0600) until it is complete; it then gets the previous file's permission bits (a new
    file is created with those an ordinary ``open`` gives) and, where the process may set them,
    its owner and group. Hard
    links to the previous file keep the previous content.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes are refused:
            decode them with ``os.fsdecode()``), or the arguments are swapped; nothing is written.
        ArgumentValueError: ``path`` is empty.
        TypeError: ``messages`` is not a list of messages; the file is left untouched.
        FormatError: a message cannot be written back losslessly; the file is left untouched.
        NotARegularFileError: ``path`` names a FIFO, a device or a folder.
        OSError: the file cannot be written; the previous file is left whole.
    """
    _require_path_first(path, messages, "save")
    try:
        data = file_bytes(
            listed_messages(messages, "save", "put it in a list: [message]"), indent=indent
        )  # fails before the disk changes
    except FormatError as error:
        raise error.with_source(os.fspath(path)) from None
    _replace_atomically(path, data)


def _record(index: int, message: Message) -> bytes:
    """One line of a log; a problem is placed at ``[index]``, as ``save`` places it."""
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"[{index}]: expected a Message, found {kind_of(message)}")
    try:
        return record_bytes(message) + b"\n"
    except FormatError as error:
        raise error.within(f"[{index}]") from None


def save_jsonl(path: PathLike, messages: Iterable[Message]) -> None:
    """Write a whole JSON Lines log atomically: one message a line, as ``append_jsonl`` writes them.

    For rewriting a log (converting, pruning, compacting); the same guarantees as ``save``. It
    does not take the log's append lock: appends other processes make while the log is read and
    rewritten go to the old file and are lost, so rewrite a log only while nobody appends to it.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes included),
            or the arguments are swapped; nothing is written.
        ArgumentValueError: ``path`` is empty.
        TypeError: ``messages`` is one message, text or a mapping rather than a list, or an item
            is not a ``Message``; the file is left untouched.
        FormatError: a message cannot be written back losslessly; the file is left untouched.
        NotARegularFileError: ``path`` names a FIFO, a device or a folder.
        OSError: the file cannot be written; the previous file is left whole.
    """
    _require_path_first(path, messages, "save_jsonl")
    listed = listed_messages(messages, "save_jsonl", "append_jsonl adds one to a log")
    try:
        data = b"".join(_record(index, message) for index, message in enumerate(listed))
    except FormatError as error:
        raise error.with_source(os.fspath(path)) from None
    _replace_atomically(path, data)


def _replace_atomically(path: PathLike, data: bytes) -> None:
    """Put ``data`` at ``path`` so that a reader sees the old file or the new one, whole.

    ``path`` is checked by the caller (``_require_path``), which names itself in the error.
    """
    if os.fspath(path).endswith(_SEPARATORS):  # realpath would drop the slash; open() refuses it
        raise NotARegularFileError(os.fspath(path), "a folder's path (it ends in a slash)")
    target = Path(os.path.realpath(path))  # a symlink is followed: its target file is replaced
    previous = _existing(target, path)
    fd, temporary = _write_temporary(target, data, previous)
    try:
        try:
            os.replace(temporary, target)
        finally:
            os.close(fd)  # releases the lock that marks the temporary file as live
    except BaseException as error:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        if isinstance(error, OSError):
            raise _named(error, target) from error
        raise
    _remove_leftovers(target, temporary)
    _sync_folder(target.parent)


def _existing(target: Path, named: PathLike) -> os.stat_result | None:
    try:
        status = os.stat(target)
    except FileNotFoundError:
        return None
    _check_regular(status.st_mode, named)  # never rename over a device or a FIFO
    return status


def _write_temporary(target: Path, data: bytes, previous: os.stat_result | None) -> tuple[int, str]:
    """Write ``data`` to a new temporary file beside ``target``, synced, and return it still open.

    The descriptor holds an exclusive ``flock`` on the file until the caller closes it: that lock,
    not a process id, is what tells another save that the file is live, not a leftover.
    """
    try:
        written = _write_unnamed(target, data, previous) if _UNNAMED_FILES else None
        return written if written is not None else _write_named(target, data, previous)
    except OSError as error:
        if error.errno is not None and error.filename is not None:
            # The temporary file's name means nothing to the caller (a missing folder, say).
            raise OSError(error.errno, error.strerror or str(error), os.fspath(target)) from error
        raise _named(error, target) from error


# Linux can create a file with no name and link it in later through /proc.
_UNNAMED_FILES = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")


def _creation_mode(previous: os.stat_result | None) -> int:
    # Over an existing file: 0600 while the data is written, its own bits once complete. A new
    # file gets 0666 less the umask from the start: its data is no more private than that later.
    return 0o600 if previous is not None else 0o666


def _fill(fd: int, data: bytes, previous: os.stat_result | None) -> None:
    """Write ``data``, give the file the previous one's owner and mode, and sync it."""
    _write_all(fd, data)
    if previous is not None:
        _take_owner(fd, previous)
        os.chmod(fd, stat.S_IMODE(previous.st_mode))  # after chown, which clears set-id bits
    os.fsync(fd)


def _take_owner(fd: int, previous: os.stat_result) -> None:
    """Keep the previous owner and group where this process may set them (root; a member's group)."""
    if not hasattr(os, "fchown"):  # pragma: no cover - Windows
        return
    current = os.fstat(fd)
    if (current.st_uid, current.st_gid) == (previous.st_uid, previous.st_gid):
        return
    try:
        os.fchown(fd, previous.st_uid, previous.st_gid)
    except PermissionError:
        with suppress(PermissionError):
            os.fchown(fd, -1, previous.st_gid)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data``, looping over partial writes; a write of nothing is a full disk."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:  # pragma: no cover - regular files raise ENOSPC instead
            raise OSError(28, "No space left on device")
        view = view[written:]


def _write_unnamed(target: Path, data: bytes, previous: os.stat_result | None) -> tuple[int, str] | None:
    """Write ``data`` to an unnamed file in the target's folder, synced, then name it; or None.

    None when the file system has no unnamed files or refuses to name one; then nothing is left.
    """
    try:
        fd = os.open(target.parent, os.O_TMPFILE | os.O_WRONLY | _O_CLOEXEC, _creation_mode(previous))
    except OSError:  # the file system cannot; fall back to a named temporary file
        return None  # (not remembered: another folder may be on another file system)
    global _UNNAMED_FILES
    try:
        _lock(fd)  # nobody else can reach the file yet; the lock holds once it has a name
        _fill(fd, data, previous)
        for name in _temporary_names(target):
            try:
                _link_unnamed(fd, name)
            except FileExistsError:  # another save's file, live or left over
                continue
            except OSError:  # some sandboxes refuse the link; use named files from now on
                _UNNAMED_FILES = False
                break
            return fd, name
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def _link_unnamed(fd: int, name: str) -> None:
    """Give the unnamed file open as ``fd`` the path ``name``.

    ``linkat`` through ``/proc/self/fd`` with ``AT_SYMLINK_FOLLOW``, which ``os.link`` uses only
    when given a directory fd: without one it calls ``link()``, which on Linux links the
    ``/proc`` entry itself and fails (``EXDEV``).
    """
    # O_PATH: a folder that may be written but not read (mode 0300) still gives a handle.
    folder = os.open(os.path.dirname(name), os.O_PATH | os.O_DIRECTORY | _O_CLOEXEC)
    try:
        os.link(f"/proc/self/fd/{fd}", os.path.basename(name), dst_dir_fd=folder, follow_symlinks=True)
    finally:
        os.close(folder)


def _write_named(target: Path, data: bytes, previous: os.stat_result | None) -> tuple[int, str]:
    """Write ``data`` to a new named temporary file beside ``target``, synced; remove it on error."""
    for name in _temporary_names(target):
        try:
            fd = os.open(
                name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY | _O_CLOEXEC,
                _creation_mode(previous),
            )
        except FileExistsError:  # another save's file, live or left over
            continue
        try:
            if not _lock_new(fd, name):  # another save took it for a leftover before our lock
                os.close(fd)
                continue
            _fill(fd, data, previous)
        except BaseException:
            os.close(fd)
            with suppress(FileNotFoundError):
                os.unlink(name)
            raise
        return fd, name
    raise FileExistsError(f"no free temporary name beside {target}")  # pragma: no cover


def _lock(fd: int) -> None:
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_EX)


def _lock_new(fd: int, name: str) -> bool:
    """Lock a just-created temporary file; False if another save's clean-up got to it first
    (and removed it)."""
    if fcntl is None:  # pragma: no cover - Windows: no sweeping either
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return _same_file(name, os.fstat(fd))


def _same_file(name: str, status: os.stat_result) -> bool:
    try:
        current = os.stat(name, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (current.st_dev, current.st_ino) == (status.st_dev, status.st_ino)


_TOKEN_LENGTH = 16  # hex digits: 64 random bits, or a slot number
_NAME_MAX = 255  # bytes in one file name on the common file systems

# A save's temporary file takes the first free of a few fixed names (slots); once done, a save
# looks at those names only, so that it never lists the folder: a host keeping thousands of
# conversations in one folder pays the same per save as one keeping a single file.
_SLOTS = 8


def _temporary_prefix(target: Path) -> str:
    """``.NAME.``, with NAME shortened so that a temporary name fits in ``_NAME_MAX`` bytes."""
    room = _NAME_MAX - len("..") - _TOKEN_LENGTH - len(".tmp")
    name = target.name
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return f".{name}."


def _slot_names(target: Path) -> list[str]:
    """``.NAME.0000000000000000.tmp`` to ``.NAME.0000000000000007.tmp`` beside ``target``."""
    prefix = os.path.join(target.parent, _temporary_prefix(target))
    return [f"{prefix}{slot:0{_TOKEN_LENGTH}x}.tmp" for slot in range(_SLOTS)]


def _temporary_names(target: Path) -> Iterator[str]:
    """The names to try, in order, for a temporary file of ``target``.

    The slots first. When every slot is taken, the abandoned ones (left by killed saves) are
    removed and the slots tried again; only when live saves of the same file (or files this
    process may not remove) hold them all come random names, and such a save lists the folder
    once it is done (``_remove_leftovers``), since nobody looks for a random name by itself.
    """
    slots = _slot_names(target)
    yield from slots
    _remove_abandoned(slots)
    yield from slots
    prefix = os.path.join(target.parent, _temporary_prefix(target))
    for _ in range(100):
        yield f"{prefix}{secrets.token_hex(_TOKEN_LENGTH // 2)}.tmp"


def _remove_leftovers(target: Path, temporary: str) -> None:
    """Remove the temporary files that killed saves of ``target`` left behind.

    A live save holds an exclusive lock on its temporary file until it is renamed, so a file
    whose lock can be taken was abandoned. No process ids are compared: savers in other PID
    namespaces (containers sharing a volume) keep their files. A save that had a slot looks at
    the slots only, a constant cost; one that had to take a random name lists the folder.
    """
    slots = _slot_names(target)
    if temporary in slots:
        _remove_abandoned(slots)
    else:
        _sweep_folder(target)


def _remove_abandoned(names: list[str]) -> None:
    if fcntl is None:  # pragma: no cover - Windows: cannot tell a live file from a leftover
        return
    for name in names:
        _remove_if_abandoned(name)


def _sweep_folder(target: Path) -> None:
    """Remove every abandoned temporary file of ``target``, slot or random name: lists the folder."""
    if fcntl is None:  # pragma: no cover - Windows: cannot tell a live file from a leftover
        return
    prefix = _temporary_prefix(target)
    try:
        entries = os.scandir(target.parent)
    except OSError:  # pragma: no cover - the folder cannot be listed; nothing to do
        return
    with entries:
        for entry in entries:
            name = entry.name
            token = name[len(prefix) : -len(".tmp")]
            if name.startswith(prefix) and name.endswith(".tmp") and _is_token(token):
                _remove_if_abandoned(entry.path)


def _is_token(text: str) -> bool:
    return len(text) == _TOKEN_LENGTH and all(c in "0123456789abcdef" for c in text)


def _remove_if_abandoned(name: str) -> None:
    try:
        fd = os.open(name, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except OSError:  # gone, a symlink, or not ours to read: leave it
        return
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a live save holds it
            return
        if _same_file(name, status):  # not renamed into place meanwhile
            with suppress(OSError):
                os.unlink(name)
    finally:
        os.close(fd)


def load(path: PathLike, *, strict: bool = False) -> list[Message]:
    """Read a conversation file written by orion-core or by ``save``.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes are refused:
            decode them with ``os.fsdecode()``).
        ArgumentValueError: ``path`` is empty.
        FormatError: naming the file and every problem in it.
        NotARegularFileError: ``path`` names a FIFO, a device or a folder.
        OSError: the file cannot be read.
    """
    _require_path(path, "load")
    require_bool("strict", strict)
    data = _read_regular(path)
    try:
        return load_conversation(data, strict=strict, origin=Origin(os.fspath(path)))
    except FormatError as error:
        if data.lstrip(_JSON_WHITESPACE).startswith(b"{"):
            error = _hinted(
                error,
                "the file starts with a message object, as a JSON Lines log does: read it with read_jsonl()"
                " (Conversation.load_jsonl())",
            )
        raise error.with_source(os.fspath(path)) from None


_JSON_WHITESPACE = JSON_WHITESPACE.encode()


def _hinted(error: FormatError, hint: str) -> FormatError:
    """``error`` with ``hint`` added to its one problem (a hint would only confuse a list of them)."""
    if len(error.problems) != 1 or error.omitted:
        return error
    (problem,) = error.problems
    return FormatError([replace(problem, message=f"{problem.message} ({hint})")], source=error.source)


# --- JSON Lines logs ----------------------------------------------------------------------------

# A blank line holds only JSON's own whitespace. Other characters that Python calls whitespace
# (\x0b, \x0c, \x1c-\x1f, ...) make a line a corrupt record, reported with its number.
_BLANK = b" \t\r"


def _is_blank(line: bytes) -> bool:
    return not line.strip(_BLANK)


class _Torn(NamedTuple):
    line: int
    offset: int
    size: int


def _warn_torn(path: PathLike, torn: _Torn, *, repaired: bool, stacklevel: int) -> None:
    warning = TornLineWarning(os.fspath(path), torn.line, torn.offset, torn.size, repaired=repaired)
    warnings.warn(warning, stacklevel=stacklevel + 1)


def append_jsonl(path: PathLike, message: Message, *, fsync: bool = True) -> None:
    """Append one message to a JSON Lines log, as one line.

    The cost does not depend on the size of the log: it reads the log's first bytes and last
    line only. An exclusive lock keeps concurrent appenders' lines whole. If the log ends in a
    torn record (a crash mid-append), the torn bytes are cut off first, with a
    ``TornLineWarning``, so the new record starts a clean line. An append that returned is in
    the log; one that raised left the log's records as they were. With ``fsync=False`` the
    record survives a killed process but not a power loss. Symlinks are followed.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes included),
            or the arguments are swapped (``append_jsonl(message, path)``).
        ArgumentValueError: ``path`` is empty.
        TypeError: ``message`` is not a ``Message``; the log is left untouched.
        FormatError: the message cannot be written back losslessly; the log is left untouched.
        NotALogError: the file holds something other than a JSON Lines log of messages (a
            conversation saved by ``save``, another text file); it is left untouched.
        NotARegularFileError: ``path`` names a FIFO, a device or a folder.
        OSError: naming the file, when the record cannot be written whole (a full disk); the
            partial record is removed again.
    """
    _require_path_first(path, message, "append_jsonl", "message")
    require_bool("fsync", fsync)
    try:
        record = record_bytes(message) + b"\n"
    except FormatError as error:
        raise error.with_source(os.fspath(path)) from None
    fd = _open_regular(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
    try:
        with _locked(fd):
            length, newline = _prepare_for_append(fd, path)
            _append_or_restore(fd, newline + record, length, fsync=fsync)
            if fsync and length == 0:  # perhaps created just now: its name must reach the disk too
                _sync_folder(Path(os.path.realpath(path)).parent)
    except OSError as error:
        raise _named(error, path) from error
    finally:
        os.close(fd)


def _append_or_restore(fd: int, record: bytes, length: int, *, fsync: bool) -> None:
    """Append ``record``; on any failure cut the log back to ``length`` and raise."""
    try:
        _write_all(fd, record)
        if fsync:
            os.fsync(fd)
    except BaseException:
        with suppress(OSError):  # the first error is the one to report
            os.ftruncate(fd, length)
            if fsync:
                os.fsync(fd)
        raise


_LOG_HEAD = 4096
"""How far into a file ``append_jsonl`` looks for the ``{`` a log starts with (docs/reliability.md)."""


def _prepare_for_append(fd: int, path: PathLike) -> tuple[int, bytes]:
    """Check that the file is a log and mend a torn tail; return the log's length to restore on
    failure, and the newline to write first if its last record lost one."""
    size = os.fstat(fd).st_size
    if size == 0:
        return 0, b""
    head = os.pread(fd, _LOG_HEAD, 0)
    first = head.lstrip(_JSON_WHITESPACE)[:1]
    # Blank lines alone (``echo > log``): no record yet. The record then starts within the
    # head, so that the log appended to still shows it there.
    newline = b"" if head.endswith(b"\n") else b"\n"
    if not first and size + len(newline) < _LOG_HEAD:
        return size, newline
    if first != b"{":
        found = "only whitespace in its first 4 KiB" if not first else f"{first.decode('latin-1')!r}"
        if head.startswith(b"\xef\xbb\xbf"):
            found = "a byte order mark, which JSON does not allow"
        hint = ", as a conversation saved by save() does" if first == b"[" else ""
        _refuse(path, f"it starts with {found}{hint}, not with a message object")
    if os.pread(fd, 1, size - 1) == b"\n":
        _require_message_line(fd, path, size)
        return size, b""
    start = _last_line_start(fd, size)
    tail = os.pread(fd, size - start, start)
    if _is_whole_record(tail):
        return size, b"\n"  # a whole record that lost only its newline
    if _is_blank(tail):  # blanks after the last newline: they stay, on a line of their own
        _require_message_line(fd, path, start)
        return size, b"\n"
    if not _may_be_torn(tail):
        _refuse(path, f"{_not_a_record(tail)} (line {_line_number(fd, start)})")
    if start > 0:
        _require_message_line(fd, path, start)
    warning = TornLineWarning(os.fspath(path), None, start, size - start, repaired=True)
    warnings.warn(warning, stacklevel=3)
    os.ftruncate(fd, start)
    return start, b""


def _not_a_record(tail: bytes) -> str:
    """Why an unterminated last line that is no torn record makes the file no log."""
    try:
        loads_message(tail)
    except FormatError as error:
        if is_one_json_object(tail):
            return f"its last line is a JSON object but not a message ({error.problems[0]})"
    if _starts_with_whole_object(tail.lstrip(_BLANK)):
        return "its last line holds a JSON object with more data after it (two records on one line?)"
    return "its last line is neither a message nor the start of one"


def _require_message_line(fd: int, path: PathLike, end: int) -> None:
    """Refuse the file unless its last non-blank line before ``end`` (just past a newline) is a message."""
    while end > 0:
        start = _last_line_start(fd, end - 1)
        line = os.pread(fd, end - 1 - start, start)
        if not _is_blank(line):
            try:
                loads_message(line)
            except FormatError as error:
                _refuse(path, f"its last complete line is not a message ({error.problems[0]})")
            return
        end = start


def _refuse(path: PathLike, why: str) -> None:
    problem = Problem("", f"not a JSON Lines log of messages: {why}; the file was not changed")
    raise NotALogError([problem], source=os.fspath(path))


def _last_line_start(fd: int, end: int) -> int:
    """Where the line holding the bytes just before ``end`` starts; reads backwards in growing steps."""
    step = 4096
    while end > 0:
        begin = max(0, end - step)
        chunk = os.pread(fd, end - begin, begin)
        newline = chunk.rfind(b"\n")
        if newline != -1:
            return begin + newline + 1
        end = begin
        step = min(step * 2, 1 << 20)
    return 0


def _may_be_torn(line: bytes) -> bool:
    """Whether an unterminated last line may be a record cut short by a crash: it starts as one
    and does not start with a whole JSON object (no part of a record is one; a whole object,
    alone or followed by more, is corrupt data, which is never cut off)."""
    text = line.lstrip(_BLANK)
    return text.startswith(b"{") and not _starts_with_whole_object(text)


_OBJECT_END = json.JSONDecoder(parse_int=len, parse_float=len, parse_constant=len)
"""Finds where a document's first value ends; its numbers are read as their lengths (only the
end matters, and an integer past Python's 4,300 digits must not stop it)."""


def _starts_with_whole_object(text: bytes) -> bool:
    """Whether ``text`` opens with a whole JSON object (whatever follows it). Invalid UTF-8 is
    kept as surrogates: a crash may cut a character in two, and only the structure matters."""
    decoded = text.decode("utf-8", "surrogateescape")
    try:
        return _opens_with_object(decoded)
    except RecursionError:  # deeper than the parser goes: flatten the deep containers first
        pass
    try:
        return _opens_with_object(cast(str, flatten_deeper_than(decoded, VALUE_DEPTH_MAX)[0]))
    except RecursionError:  # still deep once flattened: containers never closed, a prefix
        return False


def _opens_with_object(text: str) -> bool:
    """``_starts_with_whole_object`` on text; ``RecursionError`` when it nests too deep to say."""
    try:
        value, _end = _OBJECT_END.raw_decode(text)
    except ValueError:  # a prefix (or no JSON at all)
        return False
    return isinstance(value, dict)


def _line_number(fd: int, offset: int) -> int:
    """The 1-based line number of the byte at ``offset`` (a rare, failing path: counts newlines)."""
    return os.pread(fd, offset, 0).count(b"\n") + 1


def _is_whole_record(line: bytes) -> bool:
    try:
        loads_message(line)
    except FormatError:
        return False
    return True


def _is_torn(tail: bytes) -> bool:
    """Whether a log's last line, without its newline, is a record cut short by a crash (the
    torn tail a reader skips with a warning): it starts as a record and is not a whole one.
    Anything else there is a record that lost only its newline, or corrupt."""
    return _may_be_torn(tail) and not _is_whole_record(tail)


def read_jsonl(path: PathLike, *, repair: bool = False, strict: bool = False) -> list[Message]:
    """Read every message of a JSON Lines log.

    Each line is one message, checked as such. Blank lines (only spaces, tabs and a carriage
    return) are skipped; any other line must be a valid message, and a corrupt one anywhere
    raises ``FormatError`` naming its line. A torn last line (no final newline, and not a whole
    record) is skipped with a ``TornLineWarning``; ``repair=True`` also truncates it from the
    file, under the lock that ``append_jsonl`` takes, and only when every other line reads.
    ``strict=True`` also refuses duplicate keys in a line and the semantic problems ``find_problems``
    finds, each on the line of its message. Nothing is ever skipped silently.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes included).
        ArgumentValueError: ``path`` is empty.
        FormatError: naming the file and the line; a semantic problem of ``strict=True`` (which
            spans messages) names the file and the message's index among those read (``[1].id``).
        NotARegularFileError: ``path`` names a FIFO, a device or a folder.
        OSError: the file cannot be read (or, with ``repair=True``, written).
    """
    _require_path(path, "read_jsonl")
    return _read_jsonl(path, repair=repair, strict=strict)


def _read_jsonl(path: PathLike, *, repair: bool, strict: bool) -> list[Message]:
    """``read_jsonl`` one call deeper: a ``TornLineWarning`` points at the caller of the function
    that calls this one (``read_jsonl``, ``Conversation.load_jsonl``), not into the library;
    ``path`` is checked by them."""
    require_bool("repair", repair)
    require_bool("strict", strict)
    if not repair:
        return _read_log(path, _read_regular(path), strict=strict, repair_fd=None)
    fd = _open_regular(path, os.O_RDWR)
    try:
        with _locked(fd):
            return _read_log(path, _read_all(fd), strict=strict, repair_fd=fd)
    finally:
        os.close(fd)


def _read_log(path: PathLike, data: bytes, *, strict: bool, repair_fd: int | None) -> list[Message]:
    source = os.fspath(path)
    records, torn = _split_records(data)
    try:
        messages = _parse_records(records, source)
        if strict:
            _check_strictly(records, messages, source)
    except FormatError:
        if torn is not None:
            _warn_torn(path, torn, repaired=False, stacklevel=4)
        raise  # nothing truncated: a corrupt log is left as it is for a person to look at
    if torn is not None:
        if repair_fd is not None:
            os.ftruncate(repair_fd, torn.offset)
            os.fsync(repair_fd)
        _warn_torn(path, torn, repaired=repair_fd is not None, stacklevel=4)
    return messages


def _split_records(data: bytes) -> tuple[list[tuple[int, bytes]], _Torn | None]:
    """The complete, non-blank records with their line numbers, and the torn tail if any."""
    raw_lines = data.split(b"\n")
    tail = raw_lines.pop()  # after the final newline: empty for a whole log
    records = [(number, line) for number, line in enumerate(raw_lines, 1) if not _is_blank(line)]
    torn = None
    if not _is_blank(tail):
        number = len(raw_lines) + 1
        if not _is_torn(tail):
            records.append((number, tail))  # a whole record that lost only its newline, or corrupt
        else:
            torn = _Torn(number, len(data) - len(tail), len(tail))
    return records, torn


def _parse_records(records: list[tuple[int, bytes]], source: str) -> list[Message]:
    joined = _joined_records(records)
    messages = None if joined is None else _read_joined(joined, records, source)
    if messages is not None:
        return messages
    return [_parse_line(number, line, source) for number, line in records]


def _joined_records(records: Sequence[tuple[int, bytes]]) -> bytes | None:
    """The lines of a log's ``records`` (line number, bytes) as one JSON array, or None when one
    of them is not exactly one JSON object (``is_one_json_object``): only then can no line close
    or open another's value, so that the array reads as the lines do."""
    if not records or not all(is_one_json_object(line) for _, line in records):
        return None
    return b"[" + b",".join(line for _, line in records) + b"]"


def _read_joined(joined: bytes, records: Sequence[tuple[int, bytes]], source: str) -> list[Message] | None:
    """The messages of ``records``, validated at once from ``joined`` (``_joined_records``), or
    None when one of them does not read: each is then read alone, for its own line's error.
    Measured on 20,000 messages: 110 ms, against 190 ms line by line (docs/reliability.md)."""
    origin = Origin(source, tuple(number for number, _ in records), joined=True)
    try:
        messages = load_conversation(joined, origin=origin)
    except FormatError:
        return None
    return messages if len(messages) == len(records) else None


def _parse_line(number: int, line: bytes, source: str) -> Message:
    try:
        return load_message(line, origin=Origin(source, (number,)))
    except FormatError as error:
        if _SAVED_ARRAY.match(line):
            why = "expected a message object, found a JSON array: a conversation file, as save() writes one (read it with load(), or Conversation.load())"
            raise FormatError([Problem("", why, number)], source=source) from None
        raise error.at_line(number, source=source) from None


# A line opening an array of objects, or only its bracket (the first line of a pretty-printed
# file); a struct written as an array of its fields (``["msg-1","user",...]``) has its own message.
_SAVED_ARRAY = re.compile(rb"[ \t\r]*\[[ \t\r]*(?:\{|$)")


def _strict_line(line: bytes) -> None:
    """The per-line part of ``strict``: refuse a record with a repeated key.

    The codec's one definition of strict: repeated keys per record here, and the semantic
    problems of the whole log in ``_check_strictly``.
    """
    problems = duplicate_key_problems(line)
    if problems:
        raise FormatError(problems)


def _check_strictly(records: list[tuple[int, bytes]], messages: list[Message], source: str) -> None:
    # One check of the log's bytes spares each line's scan for repeated keys when none can repeat.
    if may_repeat_keys(b"[" + b",".join(line for _, line in records) + b"]"):
        for number, line in records:
            try:
                _strict_line(line)
            except FormatError as error:
                raise error.at_line(number, source=source) from None
    problems = problems_on_lines(messages, [number for number, _ in records])
    if problems:
        raise FormatError(problems, source=source)


def iter_jsonl(path: PathLike) -> Generator[Message, None, None]:
    """Yield the messages of a JSON Lines log one at a time, reading the file as it goes.

    The lazy twin of ``read_jsonl``: memory stays that of one line, whatever the log's size.
    The same rules: blank lines are skipped, a corrupt line raises ``FormatError`` naming its
    line (after the messages before it were yielded), a torn last line is skipped with a
    ``TornLineWarning``. The file is opened when iteration starts and closed when it ends;
    to stop early, ``close()`` the generator (or use ``contextlib.closing``), which closes the
    file at once. It does not repair, and it has no ``strict`` (duplicate ids need the whole
    log): use ``read_jsonl`` for those.

    Raises:
        ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes included);
            raised by the call itself, before any iteration.
        ArgumentValueError: ``path`` is empty; raised by the call itself.
        FormatError: naming the file and the line.
        NotARegularFileError: ``path`` names a FIFO, a device or a folder.
        OSError: the file cannot be read.
    """
    _require_path(path, "iter_jsonl")  # here, not in the generator: a bad argument fails at the call
    return _iter_jsonl(path)


def _iter_jsonl(path: PathLike) -> Generator[Message, None, None]:
    fd = _open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as handle:
        yield from _iter_records(handle, path)


def _iter_records(handle: BinaryIO, path: PathLike) -> Iterator[Message]:
    source = os.fspath(path)
    offset = 0
    for number, line in enumerate(handle, 1):
        start, offset = offset, offset + len(line)
        if line.endswith(b"\n"):
            if not _is_blank(line[:-1]):
                yield _parse_line(number, line[:-1], source)
        elif not _is_blank(line):  # the last line, without its newline
            if not _may_be_torn(line):
                yield _parse_line(number, line, source)  # raises: corrupt, not torn
                return
            try:
                message = load_message(line, origin=Origin(source, (number,)))
            except FormatError:
                _warn_torn(path, _Torn(number, start, len(line)), repaired=False, stacklevel=3)
                return
            yield message


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
    except OSError:  # pragma: no cover - on Windows, or a folder that may be written and not read
        return  # (docs/reliability.md, "fsync"): the save has happened; only its sync is skipped
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - some file systems refuse to sync a folder
        pass
    finally:
        os.close(fd)
