"""Persistence: atomic saves, loads that name the file, and append-only JSON Lines logs."""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import orion_messages as om
from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    Conversation,
    FormatError,
    Message,
    NotALogError,
    NotARegularFileError,
    Role,
    ToolCall,
    append_jsonl,
    dumps_message,
    iter_jsonl,
    load,
    loads,
    read_jsonl,
    save,
    save_jsonl,
    storage,
)
from orion_messages.storage import TornLineWarning

from .conftest import FIXTURES
from .reference_codec import reference_dumps


def _chat(count: int = 3, start: int = 1) -> list[Message]:
    return [
        Message.user(f"msg-{n}", f"message {n} ✓", timestamp=1781513800000 + n)
        for n in range(start, start + count)
    ]


def _record(message: Message) -> bytes:
    """One JSON Lines record as the wire table lays it out (written independently of the library)."""
    return reference_dumps([message])[1:-1] + b"\n"


# --- save and load ------------------------------------------------------------------------------


def test_save_writes_what_dumps_writes_and_load_reads_it(tmp_path: Path) -> None:
    golden = loads((FIXTURES / "v0.7/tool-loop-parallel.json").read_bytes())
    path = tmp_path / "chat.json"
    save(path, golden)
    assert path.read_bytes() == (FIXTURES / "v0.7/tool-loop-parallel.json").read_bytes()
    assert load(path) == golden
    save(str(path), golden, indent=2)
    assert path.read_bytes() == (FIXTURES / "v0.7/tool-loop-parallel.pretty.json").read_bytes()


def test_save_leaves_no_litter(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    for count in (1, 5, 2):
        save(path, _chat(count))
    assert os.listdir(tmp_path) == ["chat.json"]
    assert len(load(path)) == 2


def test_save_syncs_the_file_before_the_rename_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        mode = os.fstat(fd).st_mode
        events.append("sync folder" if stat.S_ISDIR(mode) else "sync file")
        real_fsync(fd)

    def replace(source: str, target: object) -> None:
        events.append("rename")
        real_replace(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    save(tmp_path / "chat.json", _chat())
    # (A file system that refuses to name an unnamed file costs one more synced write, once.)
    assert events in (
        ["sync file", "rename", "sync folder"],
        ["sync file", "sync file", "rename", "sync folder"],
    )
    events.clear()
    save(tmp_path / "chat.json", _chat())
    assert events == ["sync file", "rename", "sync folder"]


def test_a_failed_rename_keeps_the_previous_file_and_removes_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(2))
    before = path.read_bytes()

    def refuse(source: str, target: object) -> None:
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk on fire"):
        save(path, _chat(9))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["chat.json"]


def test_a_failed_write_keeps_the_previous_file_and_removes_the_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(2))
    before = path.read_bytes()

    def refuse(fd: int) -> None:
        raise OSError("no space left")

    monkeypatch.setattr(os, "fsync", refuse)
    with pytest.raises(OSError, match="no space left"):
        save(path, _chat(9))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["chat.json"]


def test_save_of_an_unwritable_message_touches_nothing(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(1))
    before = path.read_bytes()
    with pytest.raises(FormatError, match="surrogate"):
        save(path, [Message.user("m", "\ud800", timestamp=1)])
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["chat.json"]


_KILLED_SAVE = textwrap.dedent(
    """
    import os, sys, time
    from orion_messages import Message, save

    path, ready = sys.argv[1], sys.argv[2]

    def stall(fd):
        open(ready, "w").close()  # the new data is written, not yet synced or renamed
        time.sleep(60)

    os.fsync = stall
    save(path, [Message.user(f"msg-{n}", "new " * 1000, timestamp=n) for n in range(200)])
    """
)


def test_a_save_killed_midway_leaves_the_previous_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    previous = _chat(3)
    save(path, previous)
    ready = tmp_path / "ready"
    child = subprocess.Popen([sys.executable, "-c", _KILLED_SAVE, str(path), str(ready)])
    try:
        for _ in range(600):
            if ready.exists() or child.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), "the child never reached the write"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    ready.unlink()
    assert load(path) == previous
    leftovers = [name for name in os.listdir(tmp_path) if name != "chat.json"]
    # Where the file system gives unnamed files there is nothing left at all; elsewhere the
    # next save removes what the killed one left.
    save(path, _chat(1))
    assert os.listdir(tmp_path) == ["chat.json"], leftovers


def _slot(folder: Path, name: str, slot: int) -> Path:
    """One of the eight names a temporary file of ``folder / name`` takes (docs/reliability.md)."""
    return folder / f".{name}.{slot:016x}.tmp"


@contextmanager
def _listings(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every folder listed (``os.scandir``, ``os.listdir``) inside the block."""
    listed: list[str] = []
    real_scandir, real_listdir = os.scandir, os.listdir

    def scandir(path: str = ".") -> Any:
        listed.append(os.fspath(path))
        return real_scandir(path)

    def listdir(path: str = ".") -> list[str]:
        listed.append(os.fspath(path))
        return real_listdir(path)

    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", scandir)
        patch.setattr(os, "listdir", listdir)
        yield listed


def test_save_removes_abandoned_temporaries_and_keeps_locked_ones(tmp_path: Path) -> None:
    # A live save holds an flock on its temporary file; one whose lock is free was abandoned.
    path = tmp_path / "chat.json"
    abandoned = [_slot(tmp_path, "chat.json", n) for n in (0, 2, 7)]
    live = _slot(tmp_path, "chat.json", 1)
    strangers = [
        tmp_path / ".chat.json.notes.tmp",  # not named as ours
        _slot(tmp_path, "other.json", 0),  # another file's: its own next save removes it
        tmp_path / ".chat.json.0123456789abcdef.tmp",  # a random name: looked for by listing only
    ]
    for file in (*abandoned, live, *strangers):
        file.write_bytes(b"x")
    with open(live, "rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        save(path, _chat(1))
        assert sorted(os.listdir(tmp_path)) == sorted([live.name, *(f.name for f in strangers), "chat.json"])
    assert load(path) == _chat(1)


@pytest.mark.parametrize(
    "saver",
    [
        lambda path, messages: save(path, messages),
        lambda path, messages: save(path, messages, indent=2),
        lambda path, messages: save_jsonl(path, messages),
        lambda path, messages: om.Conversation(messages).save(path),
        lambda path, messages: om.Conversation(messages).save_jsonl(path),
    ],
    ids=["save", "save-indented", "save_jsonl", "Conversation.save", "Conversation.save_jsonl"],
)
def test_a_save_never_lists_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saver: Callable[[Path, list[Message]], None]
) -> None:
    # A host keeping one file per conversation has thousands of files in one folder: a save
    # must cost the same there as beside no other file. It looks for its leftovers by name.
    for count in (0, 3000):
        folder = tmp_path / f"with-{count}-files"
        folder.mkdir()
        for n in range(count):
            (folder / f"conversation-{n}.json").write_bytes(b"[]")
        leftover = _slot(folder, "chat.json", 0)  # what a killed save leaves
        leftover.write_bytes(b"partial")
        with _listings(monkeypatch) as listed:
            for n in (1, 2, 3):
                saver(folder / "chat.json", _chat(n))
        assert listed == [], (count, listed)
        assert not leftover.exists()
        assert len(os.listdir(folder)) == count + 1


def test_a_save_that_finds_every_name_taken_by_live_saves_lists_the_folder_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Eight saves of one file at once hold all eight names: a ninth takes a random name and, as
    # nobody looks for that name, lists the folder once done, removing abandoned random names.
    path = tmp_path / "chat.json"
    slots = [_slot(tmp_path, "chat.json", n) for n in range(8)]
    random_leftover = tmp_path / ".chat.json.0123456789abcdef.tmp"  # a killed ninth save's
    for file in (*slots, random_leftover):
        file.write_bytes(b"x")
    renamed: list[str] = []
    real_replace = os.replace

    def replace(source: str, target: Path) -> None:
        renamed.append(os.path.basename(source))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace)
    with ExitStack() as holders:
        for file in slots:
            fcntl.flock(holders.enter_context(open(file, "rb")).fileno(), fcntl.LOCK_EX)
        with _listings(monkeypatch) as listed:
            save(path, _chat(2))
        assert listed == [str(tmp_path)]
        (used,) = renamed
        assert re.fullmatch(r"\.chat\.json\.[0-9a-f]{16}\.tmp", used), used
        assert used not in {f.name for f in slots} | {random_leftover.name}
        assert sorted(os.listdir(tmp_path)) == sorted(["chat.json", *(f.name for f in slots)])
    # The eight are abandoned now: the next save frees them, by name, and takes the first.
    with _listings(monkeypatch) as listed:
        save(path, _chat(3))
    assert listed == []
    assert renamed[1] == slots[0].name
    assert os.listdir(tmp_path) == ["chat.json"]
    assert load(path) == _chat(3)


def test_a_folder_sweep_removes_only_the_names_a_save_takes(tmp_path: Path) -> None:
    # A save with a random name lists the folder and removes abandoned .NAME.<16 hex digits>.tmp
    # files; a file of the user's that only starts and ends alike is not one of them.
    path = tmp_path / "chat.json"
    slots = [_slot(tmp_path, "chat.json", n) for n in range(8)]
    kept = [".chat.json.notes.tmp", ".chat.json.0123.tmp", ".chat.json.0123456789abcdef0.tmp"]
    for name in kept:
        (tmp_path / name).write_bytes(b"mine")
    with ExitStack() as holders:
        for file in slots:
            file.write_bytes(b"x")
            fcntl.flock(holders.enter_context(open(file, "rb")).fileno(), fcntl.LOCK_EX)
        save(path, _chat(2))
        assert sorted(os.listdir(tmp_path)) == sorted(["chat.json", *kept, *(f.name for f in slots)])
    assert load(path) == _chat(2)


def test_a_save_leaves_a_special_file_that_has_a_temporary_name(tmp_path: Path) -> None:
    # Only an abandoned regular file is a save's leftover: a FIFO under a slot's name is not.
    path = tmp_path / "chat.json"
    fifo = _slot(tmp_path, "chat.json", 0)
    os.mkfifo(fifo)
    save(path, _chat(2))
    save(path, _chat(3))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert load(path) == _chat(3)


def test_a_leftover_replaced_by_a_live_temporary_while_locked_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Race: a save opens a leftover to clean it up; before it takes the leftover's lock, another
    # save removes that leftover and starts its own temporary under the same name. The lock
    # taken is the old file's, so the name, now another save's live file, must be kept.
    path = tmp_path / "chat.json"
    leftover = _slot(tmp_path, "chat.json", 0)
    leftover.write_bytes(b"abandoned")
    old_inode = os.stat(leftover).st_ino
    real_flock = fcntl.flock
    live: list[int] = []

    def flock(fd: int, operation: int) -> None:
        if not live and os.fstat(fd).st_ino == old_inode:
            os.unlink(leftover)
            live.append(os.open(leftover, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
            real_flock(live[0], fcntl.LOCK_EX)  # the other save's temporary, being written
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    try:
        save(path, _chat(2))
        assert live, "the save never looked at the leftover"
        assert leftover.exists()
    finally:
        monkeypatch.undo()
        for fd in live:
            os.close(fd)
    assert load(path) == _chat(2)


def test_save_keeps_the_permissions_of_the_file_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(1))
    os.chmod(path, 0o640)
    save(path, _chat(2))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_a_new_file_gets_the_umask_permissions_not_0600(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        save(tmp_path / "chat.json", _chat(1))
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "chat.json").st_mode) == 0o644


def test_load_names_the_file_in_its_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes((FIXTURES / "invalid/role-tool.json").read_bytes())
    with pytest.raises(FormatError) as caught:
        load(path)
    assert caught.value.source == str(path)
    assert str(caught.value).startswith(f"{path}: [0].role: ")


def test_load_strict_reports_semantic_problems_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    save(path, [Message.user("a", "x", timestamp=1), Message.user("a", "y", timestamp=2)])
    assert len(load(path)) == 2
    with pytest.raises(FormatError) as caught:
        load(path, strict=True)
    assert str(caught.value) == f'{path}: [1].id: duplicate message id "a" (first at [0])'


def test_load_of_a_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load(tmp_path / "nope.json")


# --- JSON Lines ---------------------------------------------------------------------------------


def _no_warnings(action: Callable[[], object]) -> object:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return action()


def test_append_and_read_back(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    messages = [
        *_chat(2),
        Message.assistant(
            "msg-9", "", [ToolCall(id="c", name="n", arguments={"z": 1, "a": 1.5})], timestamp=9
        ),
        Message.pending_result("msg-10", "c", "n", timestamp=10).pin(),
    ]
    for message in messages:
        append_jsonl(log, message)
    assert _no_warnings(lambda: read_jsonl(log)) == messages
    lines = log.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert len(lines) == len(messages) + 1
    assert all(loads(b"[" + line + b"]") == [message] for line, message in zip(lines, messages, strict=False))


def test_read_of_an_empty_log(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")
    assert read_jsonl(log) == []


def test_blank_lines_and_crlf_are_accepted(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"\n" + _record(first).replace(b"\n", b"\r\n") + b"  \n" + _record(second))
    assert _no_warnings(lambda: read_jsonl(log)) == [first, second]


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    first, second, third = _chat(3)
    log = tmp_path / "log.jsonl"
    whole = _record(first) + _record(second)
    log.write_bytes(whole + _record(third)[:25])
    expected = rf"log\.jsonl:3: skipping a torn last line \(25 bytes at byte offset {len(whole)}\)"
    with pytest.warns(TornLineWarning, match=expected) as caught:
        assert read_jsonl(log) == [first, second]
    warning = caught[0].message
    assert isinstance(warning, TornLineWarning)
    assert (warning.path, warning.line, warning.offset, warning.size, warning.repaired) == (
        str(log),
        3,
        len(whole),
        25,
        False,
    )
    assert log.read_bytes() == whole + _record(third)[:25]  # reading alone changes nothing


def test_repair_truncates_the_torn_tail(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + _record(second)[:-8])
    with pytest.warns(TornLineWarning, match="truncated it"):
        assert read_jsonl(log, repair=True) == [first]
    assert log.read_bytes() == _record(first)
    assert _no_warnings(lambda: read_jsonl(log)) == [first]


def test_a_whole_last_record_without_its_newline_is_kept(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + _record(second).rstrip(b"\n"))
    assert _no_warnings(lambda: read_jsonl(log)) == [first, second]


@pytest.mark.parametrize("damage", [b"{not json}", b'{"id":"m","role":"user","content":"c"}', b"[]", b"NaN"])
def test_a_corrupt_complete_line_raises_with_its_line_number(tmp_path: Path, damage: bytes) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + b"\n" + damage + b"\n" + _record(second))
    with pytest.raises(FormatError) as caught:
        read_jsonl(log)
    assert caught.value.source == str(log)
    assert caught.value.problems[0].line == 3  # the blank line 2 counts
    assert str(caught.value).startswith(f"{log}: line 3")


def test_a_corrupt_line_is_reported_even_with_repair_and_nothing_is_truncated(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"garbage\n" + _record(first) + _record(second)[:10])
    before = log.read_bytes()
    with pytest.warns(TornLineWarning) as caught, pytest.raises(FormatError) as error:
        read_jsonl(log, repair=True)
    assert error.value.problems[0].line == 1
    assert log.read_bytes() == before  # a corrupt middle line: the file is left for a person
    assert [w.message.repaired for w in caught] == [False]  # type: ignore[union-attr]


def test_two_records_on_one_line_are_corrupt(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first).rstrip(b"\n") + b"," + _record(second))
    with pytest.raises(FormatError) as caught:
        read_jsonl(log)
    assert caught.value.problems[0].line == 1


def test_append_after_a_torn_tail_starts_a_clean_line(tmp_path: Path) -> None:
    first, second, third = _chat(3)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + _record(second)[:30])
    with pytest.warns(TornLineWarning, match="truncated it") as caught:
        append_jsonl(log, third)
    warning = caught[0].message
    assert isinstance(warning, TornLineWarning)
    assert (warning.line, warning.offset, warning.size, warning.repaired) == (
        None,
        len(_record(first)),
        30,
        True,
    )
    assert log.read_bytes() == _record(first) + _record(third)
    assert _no_warnings(lambda: read_jsonl(log)) == [first, third]


def test_append_after_a_whole_record_without_newline_keeps_it(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first).rstrip(b"\n"))
    append_jsonl(log, second, fsync=False)
    assert log.read_bytes() == _record(first) + _record(second)


def test_append_of_an_unwritable_message_leaves_the_log_untouched(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append_jsonl(log, _chat(1)[0])
    before = log.read_bytes()
    with pytest.raises(FormatError):
        append_jsonl(log, Message.user("m", "\udfff", timestamp=1))
    assert log.read_bytes() == before


def test_append_does_not_read_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The cost of an append must not grow with the log: it reads the first bytes (to see that it
    # is a log) and the last line (to see that it ends in a message), not the rest.
    log = tmp_path / "log.jsonl"
    save_jsonl(log, _chat(3000))
    reads: list[int] = []
    real_pread = os.pread

    def pread(fd: int, length: int, offset: int) -> bytes:
        reads.append(length)
        return real_pread(fd, length, offset)

    monkeypatch.setattr(os, "pread", pread)
    monkeypatch.setattr(os, "read", None)  # reading the whole log is not allowed
    append_jsonl(log, _chat(1, start=3001)[0], fsync=False)
    monkeypatch.undo()
    assert os.path.getsize(log) > 200_000
    assert sum(reads) < 3 * 4096 + len(_record(_chat(1, start=3000)[0]))
    assert len(read_jsonl(log)) == 3001


def test_read_jsonl_strict_reports_semantic_problems(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append_jsonl(log, Message.user("a", "x", timestamp=1), fsync=False)
    append_jsonl(log, Message.user("a", "y", timestamp=2), fsync=False)
    assert len(read_jsonl(log)) == 2
    with pytest.raises(FormatError) as caught:
        read_jsonl(log, strict=True)
    assert caught.value.source == str(log)
    assert caught.value.problems[0].location == "[1].id"


def test_read_jsonl_strict_places_semantic_problems_on_their_lines(tmp_path: Path) -> None:
    # Blank lines between the records: message [1] is on line 4, which the index cannot tell.
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        b'{"id":"m1","role":"user","content":"a","timestamp":1}\n\n  \n'
        b'{"id":"m1","role":"user","content":"b","timestamp":2}\n'
    )
    for read in (lambda: read_jsonl(log, strict=True), lambda: Conversation.load_jsonl(log, strict=True)):
        with pytest.raises(FormatError) as caught:
            read()
        assert [(p.location, p.line) for p in caught.value.problems] == [("[1].id", 4)]
        assert str(caught.value) == f'{log}: line 4: [1].id: duplicate message id "m1" (first at [0])'


def test_save_jsonl_writes_what_appending_writes(tmp_path: Path) -> None:
    messages = [
        Message.user("msg-1", "hi", timestamp=1),
        Message.assistant("msg-2", "hello\nthere", timestamp=2).pin(),
    ]
    appended = tmp_path / "appended.jsonl"
    for message in messages:
        append_jsonl(appended, message, fsync=False)
    saved = tmp_path / "saved.jsonl"
    save_jsonl(saved, messages)
    assert saved.read_bytes() == appended.read_bytes()
    assert saved.read_bytes().count(b"\n") == 2
    assert read_jsonl(saved) == messages


def test_save_jsonl_refusal_leaves_the_old_log_whole(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    save_jsonl(log, [Message.user("msg-1", "hi", timestamp=1)])
    before = log.read_bytes()
    with pytest.raises(FormatError):
        save_jsonl(log, [Message.user("msg-2", "bad \udc80 surrogate", timestamp=2)])
    assert log.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.jsonl"]


# --- Every line is one record (issue 9) ---------------------------------------------------------


def test_two_corrupt_lines_are_never_glued_into_messages(tmp_path: Path) -> None:
    # A line holding "{…},{…" and the next holding "…}" must not read as two messages whose
    # text gained a comma: each line is one JSON object, checked as such.
    first, second = _chat(2)
    glued_record = _record(second).rstrip(b"\n")
    cut = glued_record.index(b"message 2") + len(b"mess")
    log = tmp_path / "log.jsonl"
    log.write_bytes(
        _record(first).rstrip(b"\n") + b"," + glued_record[:cut] + b"\n" + glued_record[cut:] + b"\n"
    )
    with pytest.raises(FormatError) as caught:
        read_jsonl(log)
    assert caught.value.problems[0].line == 1
    with pytest.raises(FormatError) as caught:
        list(iter_jsonl(log))
    assert caught.value.problems[0].line == 1


@pytest.mark.parametrize(
    "odd", [b"\x0b", b"\x0c", b" \x0b\x0c\t", b"\x1c", b"\x1f", b"\xc2\xa0", b"\xc2\x85"]
)
def test_a_line_of_other_whitespace_is_a_problem_with_its_line_number(tmp_path: Path, odd: bytes) -> None:
    # JSON's whitespace (space, tab, CR) makes a blank line; anything else is a corrupt record.
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + b" \t\r\n" + odd + b"\n" + _record(second))
    for reader in (read_jsonl, lambda p: list(iter_jsonl(p))):
        with pytest.raises(FormatError) as caught:
            reader(log)
        assert caught.value.problems[0].line == 3


def test_an_unterminated_last_line_is_torn_only_if_it_starts_as_a_record(tmp_path: Path) -> None:
    # A crash mid-append leaves the start of a record, "{...": anything else is corrupt data,
    # reported at its line and never cut off by append_jsonl.
    first = _chat(1)[0]
    log = tmp_path / "log.jsonl"
    for tail in (b"\x0c", b"garbage", b"[1"):
        log.write_bytes(_record(first) + tail)
        with pytest.raises(FormatError) as caught:
            read_jsonl(log)
        assert caught.value.problems[0].line == 2
        with pytest.raises(FormatError):
            list(iter_jsonl(log))
        with pytest.raises(NotALogError, match=r"neither a message nor the start of one \(line 2\)"):
            append_jsonl(log, first)
        assert log.read_bytes() == _record(first) + tail
    log.write_bytes(_record(first) + b' \t{"id":"m')
    with pytest.warns(TornLineWarning, match=r":2: skipping a torn last line \(10 bytes"):
        assert read_jsonl(log) == [first]


@pytest.mark.parametrize(
    "after", [b"", b" junk", b"x", b"]"], ids=["two-records", "junk", "letter", "bracket"]
)
def test_an_unterminated_last_line_that_starts_with_a_whole_object_is_corrupt(
    tmp_path: Path, after: bytes
) -> None:
    # reliability.md: a line holding two records is corrupt, never cut off; no crash leaves a
    # whole object followed by more. append_jsonl truncated both records of such a line.
    first, second, third = _chat(3)
    tail = dumps_message(second) + (after or dumps_message(third))
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + tail)
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)  # no warning: it is not torn
        with pytest.raises(FormatError) as caught:
            read_jsonl(log)
        assert caught.value.problems[0].line == 2
        with pytest.raises(FormatError):
            list(iter_jsonl(log))
        with pytest.raises(NotALogError, match=r"its last line holds a JSON object with more data after it"):
            append_jsonl(log, first)
    assert log.read_bytes() == _record(first) + tail  # nothing cut off


def test_a_record_torn_inside_a_character_is_still_torn(tmp_path: Path) -> None:
    # A crash may cut a multi-byte UTF-8 character in two; the line is still the start of a record.
    first = _chat(1)[0]
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + '{"id":"m2","content":"é'.encode()[:-1])
    with pytest.warns(TornLineWarning, match=r":2: skipping a torn last line"):
        assert read_jsonl(log) == [first]


def test_read_jsonl_strict_refuses_a_repeated_key_in_a_line(tmp_path: Path) -> None:
    first = _chat(1)[0]
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + b'{"id":"m2","role":"user","content":"a","content":"b","timestamp":2}\n')
    assert [m.content for m in read_jsonl(log)] == ["message 1 ✓", "b"]  # lenient: the last wins
    with pytest.raises(FormatError) as caught:
        read_jsonl(log, strict=True)
    assert caught.value.problems[0].line == 2
    assert 'duplicate key "content"' in str(caught.value)


# --- Appends that fail, and files that are not logs ---------------------------------------------


def _failing_writes(monkeypatch: pytest.MonkeyPatch, error: int, after: int) -> None:
    """Let writes put ``after`` more bytes on disk, partially, then fail with ``error``."""
    real_write = os.write
    budget = [after]

    def write(fd: int, data: bytes) -> int:
        if budget[0] <= 0:
            raise OSError(error, os.strerror(error))
        written = real_write(fd, bytes(data)[: budget[0]])
        budget[0] -= written
        return written

    monkeypatch.setattr(os, "write", write)


def test_a_short_append_raises_naming_the_file_and_leaves_the_log_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    for message in _chat(3):
        append_jsonl(log, message, fsync=False)
    before = log.read_bytes()
    _failing_writes(monkeypatch, errno.ENOSPC, after=500)
    with pytest.raises(OSError, match="No space left") as caught:
        append_jsonl(log, Message.user("big", "x" * 100_000, timestamp=1))
    monkeypatch.undo()
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(log)
    assert log.read_bytes() == before
    assert _no_warnings(lambda: read_jsonl(log)) == _chat(3)


def test_a_failed_sync_of_an_append_cuts_the_record_off_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    append_jsonl(log, _chat(1)[0], fsync=False)
    before = log.read_bytes()

    def refuse(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", refuse)
    with pytest.raises(OSError, match="Input/output error") as caught:
        append_jsonl(log, _chat(1, start=2)[0])
    monkeypatch.undo()
    assert (caught.value.errno, caught.value.filename) == (errno.EIO, str(log))
    assert log.read_bytes() == before


def test_a_failed_append_after_a_lost_newline_restores_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(_chat(1)[0]).rstrip(b"\n"))
    before = log.read_bytes()
    _failing_writes(monkeypatch, errno.ENOSPC, after=10)  # the newline, then part of the record
    with pytest.raises(OSError, match="No space"):
        append_jsonl(log, _chat(1, start=2)[0], fsync=False)
    monkeypatch.undo()
    assert log.read_bytes() == before


def test_a_failed_append_after_a_torn_tail_leaves_the_records_without_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/reliability.md: a failed append cuts the log back; its records are as before, and a
    # torn tail it had before the call is gone (it was never a record).
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(_chat(1)[0]) + b'{"id":"msg-2","ro')
    _failing_writes(monkeypatch, errno.ENOSPC, after=10)
    with pytest.warns(TornLineWarning), pytest.raises(OSError, match="No space"):
        append_jsonl(log, _chat(1, start=2)[0], fsync=False)
    monkeypatch.undo()
    assert log.read_bytes() == _record(_chat(1)[0])


def _record_truncates_and_syncs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The log's ``os.ftruncate`` and ``os.fsync`` calls from now on, in order (folders left out)."""
    events: list[str] = []
    real_truncate, real_fsync = os.ftruncate, os.fsync

    def truncate(fd: int, length: int) -> None:
        events.append(f"truncate to {length}")
        real_truncate(fd, length)

    def fsync(fd: int) -> None:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            events.append("sync")
        real_fsync(fd)

    monkeypatch.setattr(os, "ftruncate", truncate)
    monkeypatch.setattr(os, "fsync", fsync)
    return events


def test_a_failed_append_syncs_the_log_it_cut_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # With fsync=True the cut back, like the record, must reach the disk: a power loss after the
    # call must not bring the partial record back.
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(_chat(1)[0]))
    size = len(_record(_chat(1)[0]))
    events = _record_truncates_and_syncs(monkeypatch)
    _failing_writes(monkeypatch, errno.ENOSPC, after=10)
    with pytest.raises(OSError, match="No space"):
        append_jsonl(log, _chat(1, start=2)[0])
    monkeypatch.undo()
    assert events == [f"truncate to {size}", "sync"]
    assert log.read_bytes() == _record(_chat(1)[0])


def test_iter_jsonl_names_a_line_cut_inside_a_record_as_read_jsonl_does(tmp_path: Path) -> None:
    # Line 2 is `{"id":` and its newline: the record ends after its 6th byte, where a value
    # should start; the newline ends the line, it is no part of the record.
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(_chat(1)[0]) + b'{"id":\n')
    reads: tuple[Callable[[], object], ...] = (lambda: read_jsonl(log), lambda: list(iter_jsonl(log)))
    for read in reads:
        with pytest.raises(FormatError) as caught:
            read()
        (problem,) = caught.value.problems
        assert (problem.line, problem.column) == (2, 6)
        assert "line 2, column 6: malformed JSON" in str(caught.value)


def test_a_repair_syncs_the_log_it_cut(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "log.jsonl"
    record = _record(_chat(1)[0])
    log.write_bytes(record + b'{"id":"msg-2","ro')
    events = _record_truncates_and_syncs(monkeypatch)
    with pytest.warns(TornLineWarning):
        assert read_jsonl(log, repair=True) == _chat(1)
    monkeypatch.undo()
    assert events == [f"truncate to {len(record)}", "sync"]
    assert log.read_bytes() == record


@pytest.mark.parametrize("unnamed", [True, False], ids=["unnamed-first", "named-temporary"])
def test_a_failed_write_of_a_save_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(2))
    before = path.read_bytes()
    monkeypatch.setattr(storage, "_UNNAMED_FILES", unnamed)
    _failing_writes(monkeypatch, errno.ENOSPC, after=100)
    with pytest.raises(OSError, match="No space left") as caught:
        save(path, _chat(300))
    monkeypatch.undo()
    assert (caught.value.errno, caught.value.filename) == (errno.ENOSPC, str(path))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["chat.json"]


def _text_file(path: Path) -> bytes:
    data = b"# notes\nkeep this line\nand this last one"
    path.write_bytes(data)
    return data


@pytest.mark.parametrize(
    "content",
    [
        pytest.param(lambda p: save(p, _chat(2)), id="saved-conversation"),
        pytest.param(lambda p: save(p, _chat(2), indent=2), id="saved-pretty-conversation"),
        pytest.param(lambda p: p.write_bytes(b'{\n  "settings": true\n}\n'), id="pretty-json-object"),
        pytest.param(lambda p: p.write_bytes(b'{"settings": true}\n'), id="json-object-line"),
        # Blanks after the last newline: the last non-blank line is still looked at.
        pytest.param(lambda p: p.write_bytes(b'{"settings": true}\n  '), id="json-object-line-then-blanks"),
        # A torn last line is cut off only after a message: here the line before it is none.
        pytest.param(
            lambda p: p.write_bytes(b'{"settings": true}\n{"id":"msg-2","ro'), id="json-object-line-then-torn"
        ),
        # More than 4 KiB of blank lines before the first record: no message object where a log starts.
        pytest.param(lambda p: p.write_bytes(b"\n" * 5000 + b'{"id":"m"}\n'), id="whitespace-past-4-kib"),
        pytest.param(_text_file, id="text-file"),
    ],
)
def test_append_refuses_a_file_that_is_not_a_log(tmp_path: Path, content: Callable[[Path], object]) -> None:
    path = tmp_path / "chat.json"
    content(path)
    before = path.read_bytes()
    with _no_torn_warning(), pytest.raises(NotALogError) as caught:
        append_jsonl(path, _chat(1)[0])
    assert isinstance(caught.value, FormatError)
    assert caught.value.source == str(path)
    assert "not a JSON Lines log of messages" in str(caught.value)
    assert path.read_bytes() == before


# The first record starts within the first 4 KiB (4095 newlines; 4094 spaces and the newline added).
@pytest.mark.parametrize("blank", [b"\n", b"   ", b"\r", b"\r\n \n", b"\n" * 4095, b" " * 4094])
def test_append_takes_a_blank_log_as_read_jsonl_reads_it(tmp_path: Path, blank: bytes) -> None:
    # docs/reliability.md: a blank file (what `echo > log` leaves) is a log with no record yet,
    # as read_jsonl reads it; the blanks stay, the record starts a line of its own.
    log = tmp_path / "log.jsonl"
    log.write_bytes(blank)
    assert read_jsonl(log) == []
    first, second = _chat(2)
    with _no_torn_warning():
        append_jsonl(log, first)
        append_jsonl(log, second)
    assert read_jsonl(log) == [first, second]
    newline = b"" if blank.endswith(b"\n") else b"\n"
    assert log.read_bytes() == blank + newline + _record(first) + _record(second)


@pytest.mark.parametrize("blanks", [b"\n" * 5000, b" " * 4095])
def test_a_log_past_4_kib_of_blanks_is_refused_saying_so(tmp_path: Path, blanks: bytes) -> None:
    # 4095 spaces: the newline a record needs first would put it past the first 4 KiB.
    log = tmp_path / "log.jsonl"
    log.write_bytes(blanks + (_record(_chat(1)[0]) if blanks.endswith(b"\n") else b""))
    with (
        _no_torn_warning(),
        pytest.raises(NotALogError, match="it starts with only whitespace in its first 4 KiB"),
    ):
        append_jsonl(log, _chat(1)[0])


def test_an_append_that_makes_the_log_syncs_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/reliability.md: with fsync=True an append survives a power loss, the log's name in
    # its folder included when the append created it (POSIX: fsync of a file does not sync the
    # folder's entry). Later appends, and fsync=False, do not sync the folder again.
    synced: list[Path] = []
    monkeypatch.setattr(om.storage, "_sync_folder", synced.append)
    log = tmp_path / "log.jsonl"
    first, second = _chat(2)
    append_jsonl(log, first)
    append_jsonl(log, second)
    append_jsonl(tmp_path / "other.jsonl", first, fsync=False)
    assert synced == [Path(os.path.realpath(tmp_path))]


def test_append_through_a_symlink_to_a_text_file_refuses_and_keeps_it(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    before = _text_file(notes)
    link = tmp_path / "log.jsonl"
    link.symlink_to(notes)
    with _no_torn_warning(), pytest.raises(NotALogError):
        append_jsonl(link, _chat(1)[0])
    assert notes.read_bytes() == before


def test_append_accepts_a_log_with_blank_lines_and_one_torn_first_line(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"\n \n" + _record(first) + b"\r\n\n")
    append_jsonl(log, second, fsync=False)
    assert read_jsonl(log) == [first, second]
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(_record(first)[:20])  # killed during the very first append
    with pytest.warns(TornLineWarning):
        append_jsonl(torn, second, fsync=False)
    assert torn.read_bytes() == _record(second)


@contextmanager
def _no_torn_warning() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)
        yield


# --- repair takes the append lock ----------------------------------------------------------------


def test_repair_waits_for_the_append_lock(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(first) + _record(second)[:10])
    result: list[object] = []

    def repair() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornLineWarning)
            result.append(read_jsonl(log, repair=True))

    with open(log, "rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)  # as an appender holds it
        worker = threading.Thread(target=repair)
        worker.start()
        worker.join(0.5)
        assert worker.is_alive(), "repair did not wait for the lock"
        assert log.read_bytes() == _record(first) + _record(second)[:10]
        fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
        worker.join(30)
    assert result == [[first]]
    assert log.read_bytes() == _record(first)


def test_an_append_takes_its_lock_exclusively(tmp_path: Path) -> None:
    # docs/reliability.md: each append holds an exclusive flock, so it waits even for a holder
    # of a shared one (two appenders that each took a shared lock would interleave).
    log = tmp_path / "log.jsonl"
    first, second = _chat(2)
    log.write_bytes(_record(first))
    with open(log, "rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_SH)
        worker = threading.Thread(target=lambda: append_jsonl(log, second, fsync=False))
        worker.start()
        worker.join(0.5)
        assert worker.is_alive(), "the append did not wait for the shared lock"
        assert log.read_bytes() == _record(first)
        fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
        worker.join(30)
    assert log.read_bytes() == _record(first) + _record(second)


# --- Special files --------------------------------------------------------------------------------

_SPECIAL_FILES = textwrap.dedent(
    """
    import os, sys, warnings
    from orion_messages import Message, NotARegularFileError, append_jsonl, iter_jsonl, load, read_jsonl, save
    from orion_messages.storage import _require_regular_file

    fifo, zero, folder = sys.argv[1:4]
    calls = {
        "load": lambda p: load(p),
        "read_jsonl": lambda p: read_jsonl(p),
        "read_jsonl-repair": lambda p: read_jsonl(p, repair=True),
        "iter_jsonl": lambda p: list(iter_jsonl(p)),
        "append_jsonl": lambda p: append_jsonl(p, Message.user("m", "x", timestamp=1)),
        "save": lambda p: save(p, []),
        "_require_regular_file": _require_regular_file,
    }
    for path, kind in ((fifo, "a FIFO"), (zero, "a character device"), (folder, "a folder")):
        for name, call in calls.items():
            try:
                call(path)
            except NotARegularFileError as error:
                assert isinstance(error, OSError)
                assert (error.filename, error.kind) == (path, kind), (name, error.filename, error.kind)
                assert str(error) == f"{path}: {kind}, not a regular file", str(error)
            else:
                raise AssertionError(f"{name} accepted {path}")
    print("ok")
    """
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_special_files_are_refused_not_read(tmp_path: Path) -> None:
    # In a child process with a timeout: before the check, reading a FIFO waited forever and
    # /dev/zero ran out of memory.
    fifo = tmp_path / "x.jsonl"
    os.mkfifo(fifo)
    zero = tmp_path / "z.json"
    zero.symlink_to("/dev/zero")
    folder = tmp_path / "folder.json"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", _SPECIAL_FILES, str(fifo), str(zero), str(folder)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-2000:]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert zero.is_symlink()


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="Unix sockets are POSIX")
@pytest.mark.parametrize(
    "reader",
    [
        load,
        read_jsonl,
        lambda p: read_jsonl(p, repair=True),
        lambda p: list(iter_jsonl(p)),
        lambda p: append_jsonl(p, _chat(1)[0]),
    ],
    ids=["load", "read_jsonl", "read_jsonl-repair", "iter_jsonl", "append_jsonl"],
)
def test_a_socket_is_not_a_regular_file(tmp_path: Path, reader: Callable[[Path], object]) -> None:
    # reliability.md: NotARegularFileError for a socket; the readers gave a bare OSError (ENXIO).
    path = tmp_path / "s.jsonl"
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(str(path))
        with pytest.raises(NotARegularFileError) as caught:
            reader(path)
    assert (caught.value.filename, caught.value.kind) == (str(path), "a socket")


# --- The saver: permissions, symlinks, hard links, ownership, long names --------------------------


@pytest.mark.parametrize("unnamed", [True, False], ids=["unnamed-first", "named-temporary"])
def test_the_temporary_file_is_never_readable_by_others_over_a_private_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    path = tmp_path / "secret.json"
    save(path, _chat(1))
    os.chmod(path, 0o600)
    monkeypatch.setattr(storage, "_UNNAMED_FILES", unnamed)
    modes: list[int] = []
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        modes.append(stat.S_IMODE(os.fstat(fd).st_mode))  # the temporary file as data lands in it
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", write)
    old = os.umask(0o022)
    try:
        save(path, _chat(50))
    finally:
        os.umask(old)
    monkeypatch.undo()
    assert modes, "save wrote nothing through os.write"
    assert all(mode & 0o077 == 0 for mode in modes), [oct(m) for m in modes]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_save_through_a_symlink_replaces_the_file_it_points_to(tmp_path: Path) -> None:
    real = tmp_path / "data" / "chat.json"
    real.parent.mkdir()
    save(real, _chat(1))
    link = tmp_path / "chat.json"
    link.symlink_to(os.path.join("data", "chat.json"))  # relative, as users make them
    save(link, _chat(3))
    assert link.is_symlink()
    assert os.readlink(link) == os.path.join("data", "chat.json")
    assert load(real) == _chat(3)
    assert sorted(os.listdir(real.parent)) == ["chat.json"]  # the temporary file went beside it
    dangling = tmp_path / "new.json"
    dangling.symlink_to("data/new.json")
    save_jsonl(dangling, _chat(2))
    assert dangling.is_symlink()
    assert read_jsonl(real.parent / "new.json") == _chat(2)


def test_save_breaks_hard_links(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(1))
    other = tmp_path / "other.json"
    os.link(path, other)
    save(path, _chat(2))
    assert load(path) == _chat(2)
    assert load(other) == _chat(1)  # documented: the other name keeps the previous content


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give files away")
def test_save_as_root_keeps_the_owner_and_group(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(1))
    os.chown(path, 4242, 4343)
    os.chmod(path, 0o640)
    save(path, _chat(2))
    status = os.stat(path)
    assert (status.st_uid, status.st_gid, stat.S_IMODE(status.st_mode)) == (4242, 4343, 0o640)


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another owner and group needs root")
def test_save_keeps_the_group_where_only_the_group_may_be_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs: the owner and group are kept "where the process may set them": a member of the
    # file's group may give the new file that group but not the owner; the group is kept.
    path = tmp_path / "chat.json"
    save(path, _chat(1))
    os.chown(path, 4242, 4343)
    real_fchown = os.fchown

    def member_fchown(fd: int, uid: int, gid: int) -> None:
        if uid != -1:
            raise PermissionError(errno.EPERM, "Operation not permitted")
        real_fchown(fd, uid, gid)

    monkeypatch.setattr(os, "fchown", member_fchown)
    save(path, _chat(2))
    monkeypatch.undo()
    status = os.stat(path)
    assert (status.st_uid, status.st_gid) == (os.geteuid(), 4343)
    assert load(path) == _chat(2)


def test_every_writer_writes_every_byte_through_partial_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/reliability.md: the writers loop over partial writes (a pipe-like short write of 7
    # bytes at a time here); the files are byte for byte what the reference codec writes.
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data)[:7]))
    save(tmp_path / "a.json", _chat(3))
    Conversation(_chat(3)).save(tmp_path / "b.json")
    save_jsonl(tmp_path / "a.jsonl", _chat(3))
    for message in _chat(3):
        append_jsonl(tmp_path / "b.jsonl", message)
    monkeypatch.undo()
    for name in ("a.json", "b.json"):
        assert (tmp_path / name).read_bytes() == reference_dumps(_chat(3))
    for name in ("a.jsonl", "b.jsonl"):
        assert (tmp_path / name).read_bytes() == b"".join(map(_record, _chat(3)))


@pytest.mark.parametrize("unnamed", [True, False], ids=["unnamed-first", "named-temporary"])
def test_a_live_temporary_survives_another_save_finishing_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unnamed: bool
) -> None:
    # A save cleans up the abandoned temporaries of its file when done; one that is still being
    # renamed into place by another save is live (locked) and must be left alone.
    if unnamed and not storage._UNNAMED_FILES:
        pytest.skip("this file system has no unnamed files")
    monkeypatch.setattr(storage, "_UNNAMED_FILES", unnamed)
    path = tmp_path / "chat.json"
    save(path, _chat(1))
    real_replace = os.replace
    interleaved: list[str] = []

    def replace(source: str, target: object) -> None:
        if not interleaved:  # the outer save, its temporary written and named: another save runs
            interleaved.append(source)
            save(path, _chat(2))
        real_replace(source, target)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "replace", replace)
    save(path, _chat(3))
    monkeypatch.undo()
    assert load(path) == _chat(3)
    assert os.listdir(tmp_path) == ["chat.json"]


@pytest.mark.parametrize("length", [231, 240, 255])
def test_a_file_with_a_long_name_can_be_saved(tmp_path: Path, length: int) -> None:
    path = tmp_path / ("c" * (length - len(".json")) + ".json")
    save(path, _chat(1))
    save(path, _chat(2))
    assert load(path) == _chat(2)
    assert os.listdir(tmp_path) == [path.name]
    wide = tmp_path / ("é" * 125 + ".json")  # 255 bytes in UTF-8
    save_jsonl(wide, _chat(1))
    assert read_jsonl(wide) == _chat(1)


_STALLED_SAVE = textwrap.dedent(
    """
    import os, sys, time
    from orion_messages import Message, save, storage

    path, ready, go = sys.argv[1:4]
    storage._UNNAMED_FILES = False  # a named temporary file, visible to the other saver
    os.getpid = lambda: 4_000_000  # a process id from another PID namespace: not alive here
    real_fsync = os.fsync

    def stall(fd):
        open(ready, "w").close()
        while not os.path.exists(go):
            time.sleep(0.02)
        real_fsync(fd)

    os.fsync = stall
    save(path, [Message.user("from-the-other-namespace", "x", timestamp=1)])
    """
)


def test_a_save_in_another_pid_namespace_keeps_its_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    save(path, _chat(1))
    ready, go = tmp_path.parent / f"{tmp_path.name}.ready", tmp_path.parent / f"{tmp_path.name}.go"
    child = subprocess.Popen([sys.executable, "-c", _STALLED_SAVE, str(path), str(ready), str(go)])
    try:
        for _ in range(600):
            if ready.exists() or child.poll() is not None:
                break
            time.sleep(0.05)
        assert ready.exists(), "the other saver never reached its write"
        (temporary,) = [name for name in os.listdir(tmp_path) if name != "chat.json"]
        save(path, _chat(2))  # sweeps leftovers: must not take the other's live file
        assert temporary in os.listdir(tmp_path)
        go.touch()
        assert child.wait(60) == 0, "the other save failed"
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert [m.id for m in load(path)] == ["from-the-other-namespace"]
    assert os.listdir(tmp_path) == ["chat.json"]


# --- iter_jsonl: the lazy twin --------------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_iter_jsonl_closes_its_file_when_closed_early(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    save_jsonl(log, [Message.user("msg-1", "a", timestamp=1), Message.user("msg-2", "b", timestamp=2)])
    fds = Path("/proc/self/fd")

    def open_files() -> set[str]:
        return {os.readlink(fds / fd) for fd in os.listdir(fds) if (fds / fd).exists()}

    messages = iter_jsonl(log)
    assert next(messages).id == "msg-1"
    assert str(log) in open_files()
    messages.close()  # a Generator, so this type-checks
    assert str(log) not in open_files()


def test_iter_jsonl_holds_one_line_at_a_time(tmp_path: Path) -> None:
    # A 67 MB log: the peak of Python allocations while iterating stays a small fraction of it.
    log = tmp_path / "big.jsonl"
    with open(log, "wb") as handle:
        for n in range(10_000):
            handle.write(dumps_message(Message.user(f"msg-{n}", f"{n}:" + "x" * 6700, timestamp=n)) + b"\n")
    size = os.path.getsize(log)
    assert size > 67_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in iter_jsonl(log))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    log.unlink()  # 67 MB: not kept among pytest's last runs
    assert count == 10_000
    assert peak < size / 100, (peak, size)


_LINES: dict[str, Callable[[int], bytes]] = {
    "record": lambda n: _record(Message.user(f"msg-{n}", f"text {n}", timestamp=n)),
    "blank": lambda n: b" \t\r\n",
    "empty": lambda n: b"\n",
    "corrupt": lambda n: b'{"id":"x"}\n',
    "odd-space": lambda n: b"\x0c\n",
    "crlf": lambda n: _record(Message.user(f"msg-{n}", "crlf", timestamp=n)).replace(b"\n", b"\r\n"),
}


def _outcome(read: Callable[[], list[Message]]) -> tuple[object, list[tuple[object, ...]]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: object = read()
        except FormatError as error:
            result = ("error", error.problems, error.source)
    torn: list[tuple[object, ...]] = [
        (w.message.path, w.message.line, w.message.offset, w.message.size, w.message.repaired)
        for w in caught
        if isinstance(w.message, TornLineWarning)
    ]
    assert len(torn) == len(caught), [str(w.message) for w in caught]
    return result, torn


@given(
    kinds=st.lists(st.sampled_from(sorted(_LINES)), max_size=8),
    cut=st.integers(min_value=0, max_value=60),
)
def test_iter_jsonl_reads_what_read_jsonl_reads(kinds: list[str], cut: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "log.jsonl"
        data = b"".join(_LINES[kind](n) for n, kind in enumerate(kinds))
        log.write_bytes(data[: max(0, len(data) - cut)])
        lazy = _outcome(lambda: list(iter_jsonl(log)))
        whole = _outcome(lambda: read_jsonl(log))
        if isinstance(whole[0], list):
            assert lazy == whole
        else:  # a corrupt line: the lazy reader raises the same error (it stops there, no warning)
            assert lazy[0] == whole[0]


def test_records_are_joined_only_when_each_holds_one_json_object() -> None:
    from orion_messages.wire import is_one_json_object

    # Any number is taken (the validation judges it), nothing may follow the object.
    for one in ('{"a":1}', '{"a":1e400}', '{"a":' + "9" * 40 + "}", b' {"a":[1,{"b":2}]} '):
        assert is_one_json_object(one), one
    for not_one in ('{"a":1} {"b":2}', '{"a":1},{"b":2}', "[1]", '{"a":', "", '{"a":1}}'):
        assert not is_one_json_object(not_one), not_one


# --- Warnings say where: the file, the line, the caller (issue 14's unknown keys). ----------------

_RECORD = '{"id":"m%d","role":"user","content":"hi","timestamp":1%s}'


def _unknown_key_warnings(read: Callable[[], object]) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read()
    return [w for w in caught if issubclass(w.category, om.UnknownKeyWarning)]


@pytest.mark.parametrize("reader", ["read_jsonl", "iter_jsonl", "Conversation.load_jsonl"])
def test_a_log_names_its_file_and_line_in_unknown_key_warnings(tmp_path: Path, reader: str) -> None:
    path = tmp_path / "log.jsonl"
    # line 2 is blank; line 3 loads through the one-array path, line 4 (jiter cannot read it) alone
    lines = [_RECORD % (1, ""), "", _RECORD % (2, ',"x":1e400'), _RECORD % (3, ',"y":{"z":"\\ud800"}')]
    path.write_text("\n".join(lines) + "\n")
    read = {
        "read_jsonl": lambda: om.read_jsonl(path),
        "iter_jsonl": lambda: list(om.iter_jsonl(path)),
        "Conversation.load_jsonl": lambda: om.Conversation.load_jsonl(path),
    }[reader]
    caught = _unknown_key_warnings(read)
    found = [(w.message.source, w.message.line, w.message.location, w.message.key) for w in caught]  # type: ignore[union-attr]
    assert found == [(str(path), 3, "", "x"), (str(path), 4, "", "y")]
    assert str(caught[0].message).startswith(f'{path}:3: unknown key "x" left out: ')
    assert {w.filename for w in caught} == {__file__}  # the caller's line, not the library's


def test_a_conversation_file_names_itself_in_unknown_key_warnings(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("[" + _RECORD % (1, "") + "," + _RECORD % (2, ',"x":1e400') + "]")
    for read in (lambda: om.load(path), lambda: om.Conversation.load(path)):
        (caught,) = _unknown_key_warnings(read)
        warning = caught.message
        assert isinstance(warning, om.UnknownKeyWarning)
        assert (warning.source, warning.line, warning.location) == (str(path), None, "[1]")
        assert str(warning).startswith(f'{path}: [1]: unknown key "x"')
        assert caught.filename == __file__
    (caught,) = _unknown_key_warnings(lambda: om.loads(path.read_bytes()))  # no file: no source
    assert (caught.message.source, caught.message.line, str(caught.message)[:4]) == (None, None, "[1]:")  # type: ignore[union-attr]
    assert caught.filename == __file__


@pytest.mark.parametrize("writer", [save, save_jsonl])
def test_saving_into_a_missing_folder_names_the_file_not_a_temporary_one(
    tmp_path: Path, writer: Callable[..., None]
) -> None:
    target = tmp_path / "missing" / "chat.json"
    with pytest.raises(FileNotFoundError) as caught:
        writer(target, [Message.user("msg-1", "hi", timestamp=1)])
    assert caught.value.filename == str(target)
    assert not (tmp_path / "missing").exists()


def test_a_conversation_file_read_as_a_log_says_which_reader_it_needs(tmp_path: Path) -> None:
    messages = [Message.user("msg-1", "hi", timestamp=1), Message.user("msg-2", "again", timestamp=2)]
    for indent in (None, 2):  # compact: the whole array on line 1; pretty: "[" alone on line 1
        path = tmp_path / f"saved-{indent}.json"
        save(path, messages, indent=indent)
        for read in (read_jsonl, lambda p: list(iter_jsonl(p))):
            with pytest.raises(FormatError) as caught:
                read(path)
            (problem,) = caught.value.problems
            assert problem.line == 1
            assert problem.message.startswith("expected a message object, found a JSON array")
            assert "load()" in problem.message


def test_a_log_read_as_a_conversation_file_says_which_reader_it_needs(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    save_jsonl(path, [Message.user("msg-1", "hi", timestamp=1), Message.user("msg-2", "again", timestamp=2)])
    with pytest.raises(FormatError) as caught:
        load(path)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (2, 1)  # where the second record starts
    assert problem.message.endswith("read it with read_jsonl() (Conversation.load_jsonl()))")
    # a struct written as an array keeps its own explanation
    path.write_text('["msg-1","user","hi",1]\n')
    with pytest.raises(FormatError, match="struct written as an array"):
        read_jsonl(path)


def test_an_unterminated_whole_object_that_is_no_message_is_never_cut_off(tmp_path: Path) -> None:
    # No part of a record is a whole JSON object, so this line was not torn by a crash: it is
    # data (a newer writer's role), and neither an append nor a repair may delete it.
    path = tmp_path / "log.jsonl"
    first = dumps_message(Message.user("msg-1", "a", timestamp=1)) + b"\n"
    data = first + b'{"id":"msg-2","role":"developer","content":"keep me","timestamp":2}'
    path.write_bytes(data)
    with pytest.raises(NotALogError, match=r"its last line is a JSON object but not a message .*\(line 2\)"):
        append_jsonl(path, Message.user("msg-3", "c", timestamp=3))
    assert path.read_bytes() == data
    with pytest.raises(FormatError) as caught:
        read_jsonl(path, repair=True)
    assert [problem.line for problem in caught.value.problems] == [2]
    assert path.read_bytes() == data


@pytest.mark.parametrize("tail", [b"  ", b"\t", b"\r"])
def test_blanks_after_the_last_newline_do_not_stop_an_append(tmp_path: Path, tail: bytes) -> None:
    path = tmp_path / "log.jsonl"
    first = dumps_message(Message.user("msg-1", "a", timestamp=1)) + b"\n"
    path.write_bytes(first + tail)
    append_jsonl(path, Message.user("msg-2", "b", timestamp=2))
    assert (
        path.read_bytes()
        == first + tail + b"\n" + dumps_message(Message.user("msg-2", "b", timestamp=2)) + b"\n"
    )
    assert [m.id for m in read_jsonl(path)] == ["msg-1", "msg-2"]


def test_append_to_a_file_with_a_byte_order_mark_says_so(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    data = b"\xef\xbb\xbf" + dumps_message(Message.user("msg-1", "a", timestamp=1)) + b"\n"
    path.write_bytes(data)
    with pytest.raises(NotALogError, match="it starts with a byte order mark, which JSON does not allow"):
        append_jsonl(path, Message.user("msg-2", "b", timestamp=2))
    assert path.read_bytes() == data


def test_append_calls_only_a_whole_byte_order_mark_one(tmp_path: Path) -> None:
    # EF BB BF is the mark; EF BB followed by another byte is just a file starting with "\xef".
    path = tmp_path / "log.jsonl"
    data = b"\xef\xbb\xbe" + dumps_message(Message.user("msg-1", "a", timestamp=1)) + b"\n"
    path.write_bytes(data)
    with pytest.raises(NotALogError, match="it starts with 'ï', not with a message object") as caught:
        append_jsonl(path, Message.user("msg-2", "b", timestamp=2))
    assert "byte order mark" not in str(caught.value)
    assert path.read_bytes() == data


@pytest.mark.parametrize("writer", [save, save_jsonl])
def test_a_message_that_cannot_be_saved_is_named_with_the_file(
    tmp_path: Path, writer: Callable[..., None]
) -> None:
    path = tmp_path / "chat.json"
    unwritable = Message.model_construct(id="m", role=Role.USER, content="x", timestamp=float("nan"))  # type: ignore[arg-type]
    with pytest.raises(FormatError) as caught:
        writer(path, [Message.user("msg-1", "a", timestamp=1), unwritable])
    assert caught.value.source == str(path)
    assert str(caught.value).startswith(f"{path}: [1]")
    assert not path.exists()


# --- a value changed in place, past validation -------------------------------------------------


def _mutated_call() -> Message:
    """An assistant message whose arguments dict was changed in place to hold NaN (Python lets
    a caller do it; validation never saw the value)."""
    message = Message.assistant("msg-2", "", [ToolCall(id="c", name="t", arguments={"k": [1]})], timestamp=1)
    message.tool_calls[0].arguments["k"] = float("nan")
    return message


@pytest.mark.parametrize(
    "writer", ["append_jsonl", "save", "save_jsonl", "Conversation.save", "Conversation.save_jsonl"]
)
def test_a_nan_put_in_place_never_reaches_the_disk(tmp_path: Path, writer: str) -> None:
    first = Message.user("msg-1", "hi", timestamp=1)
    path = tmp_path / ("log.jsonl" if "jsonl" in writer else "chat.json")
    messages = [first, _mutated_call()]
    writes: dict[str, Callable[[], None]] = {
        "append_jsonl": lambda: append_jsonl(path, messages[1]),
        "save": lambda: save(path, messages),
        "save_jsonl": lambda: save_jsonl(path, messages),
        "Conversation.save": lambda: om.Conversation(messages).save(path),
        "Conversation.save_jsonl": lambda: om.Conversation(messages).save_jsonl(path),
    }
    if writer == "append_jsonl":
        append_jsonl(path, first)
    before = path.read_bytes() if path.exists() else None
    with pytest.raises(FormatError) as raised:
        writes[writer]()
    assert "NaN, which JSON cannot hold" in str(raised.value)
    assert str(raised.value).startswith(f"{path}: ")  # the file is named, as every writer names it
    # ... and the value, at its place (reliability.md: "named by its field").
    at = "" if writer == "append_jsonl" else "[1]."  # append_jsonl writes one message
    assert [p.location for p in raised.value.problems] == [f"{at}tool_calls[0].arguments.k"]
    assert (path.read_bytes() if path.exists() else None) == before
    if writer == "append_jsonl":
        append_jsonl(path, Message.user("msg-3", "still a log", timestamp=3))  # not stuck
        assert [m.id for m in read_jsonl(path)] == ["msg-1", "msg-3"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_append_jsonl_creates_a_log_as_an_ordinary_open_does(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        append_jsonl(tmp_path / "log.jsonl", Message.user("msg-1", "hi", timestamp=1))
        with open(tmp_path / "plain.txt", "w"):
            pass
    finally:
        os.umask(old)
    mode = stat.S_IMODE((tmp_path / "log.jsonl").stat().st_mode)
    assert mode == 0o664 == stat.S_IMODE((tmp_path / "plain.txt").stat().st_mode)


@pytest.mark.parametrize(
    ("indent", "error"),
    [
        (-1, om.ArgumentValueError),
        (True, om.ArgumentTypeError),
        ("  ", om.ArgumentTypeError),
        (2.0, om.ArgumentTypeError),
    ],
)
def test_indent_must_be_a_non_negative_int(tmp_path: Path, indent: Any, error: type[Exception]) -> None:
    messages = [Message.user("msg-1", "hi", timestamp=1)]
    with pytest.raises(error, match=r"^indent must"):
        save(tmp_path / "chat.json", messages, indent=indent)
    with pytest.raises(error, match=r"^indent must"):
        om.dumps(messages, indent=indent)
    assert not (tmp_path / "chat.json").exists()


def test_a_nan_put_in_place_in_an_unknown_key_is_refused_too(tmp_path: Path) -> None:
    message = loads(b'[{"id":"msg-1","role":"user","content":"hi","timestamp":1,"x_meta":{"a":[1]}}]')[0]
    assert message.model_extra is not None
    message.model_extra["x_meta"]["a"] = float("inf")
    with pytest.raises(FormatError, match="Infinity, which JSON cannot hold"):
        append_jsonl(tmp_path / "log.jsonl", message)
    assert not (tmp_path / "log.jsonl").exists()  # refused before the log is opened


def test_on_linux_a_save_writes_an_unnamed_file_once_and_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # os.link through /proc/self/fd failed (EXDEV) on every machine: each process's first save
    # wrote and fsynced the whole file twice, then fell back to named files for good.
    try:
        os.close(os.open(tmp_path, os.O_TMPFILE | os.O_WRONLY, 0o600))
    except (AttributeError, OSError):
        pytest.skip("no O_TMPFILE on this file system")
    monkeypatch.setattr(storage, "_UNNAMED_FILES", True)
    written: list[int] = []
    real_fill = storage._fill

    def fill(fd: int, data: bytes, previous: os.stat_result | None) -> None:
        written.append(len(data))
        real_fill(fd, data, previous)

    monkeypatch.setattr(storage, "_fill", fill)
    path = tmp_path / "chat.json"
    save(path, _chat(3))
    assert written == [path.stat().st_size]  # once, not once per path
    assert storage._UNNAMED_FILES  # the link worked: no fallback to named files
    assert load(path) == _chat(3)
    assert os.listdir(tmp_path) == ["chat.json"]


def test_a_torn_line_warning_points_at_the_caller(tmp_path: Path) -> None:
    # Conversation.load_jsonl's pointed into the library, so the default once-per-place filter
    # showed one warning for every log loaded from anywhere.
    log = tmp_path / "log.jsonl"
    log.write_bytes(_record(_chat(1)[0]) + b'{"id":"m')
    for reader in (read_jsonl, Conversation.load_jsonl):
        with pytest.warns(TornLineWarning) as caught:
            reader(log)
        assert [Path(w.filename).name for w in caught] == [Path(__file__).name], reader


@pytest.mark.parametrize(
    "writer",
    [save, save_jsonl, lambda p, m: Conversation(m).save(p)],
    ids=["save", "save_jsonl", "Conversation.save"],
)
def test_a_path_ending_in_a_slash_is_refused_not_created(
    tmp_path: Path, writer: Callable[[str, list[Message]], None]
) -> None:
    # The slash was dropped (os.path.realpath): save("b.json/") created b.json; open() refuses it.
    with pytest.raises(NotARegularFileError, match=r"b\.json/: a folder's path \(it ends in a slash\)"):
        writer(f"{tmp_path / 'b.json'}/", _chat(1))
    assert os.listdir(tmp_path) == []


_WRITE_ONLY_FOLDER_SAVE = textwrap.dedent(
    """
    import sys
    from orion_messages import Message, load, save, storage

    named = []
    real_named = storage._write_named
    storage._write_named = lambda *args: named.append(args) or real_named(*args)
    save(sys.argv[1] + "/chat.json", [Message.user("u", "hi", timestamp=0)])
    print(storage._UNNAMED_FILES, len(named))
    """
)


@pytest.mark.skipif(
    not hasattr(os, "O_TMPFILE") or shutil.which("setpriv") is None or os.geteuid() != 0,
    reason="needs Linux's O_TMPFILE, and root with setpriv to drop the permission override",
)
def test_a_save_into_a_folder_that_may_be_written_but_not_read_stays_unnamed(tmp_path: Path) -> None:
    # Opening the folder O_RDONLY for the link failed there (EACCES), which turned unnamed files
    # off for the whole process: that save wrote twice, and every later one used named files.
    folder = tmp_path / "write-only"
    folder.mkdir(mode=0o300)
    try:
        os.close(os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600))
    except OSError:
        pytest.skip("no O_TMPFILE on this file system")
    done = subprocess.run(
        [
            "setpriv",
            "--bounding-set=-dac_override,-dac_read_search",
            "--inh-caps=-all",
            "--",
            sys.executable,
            "-c",
            _WRITE_ONLY_FOLDER_SAVE,
            str(folder),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.split()) == (0, ["True", "0"]), done.stderr[-2000:]
    folder.chmod(0o700)
    assert [m.id for m in load(folder / "chat.json")] == ["u"]


def test_a_last_line_nested_past_the_parser_is_still_told_whole_or_torn(tmp_path: Path) -> None:
    # 3,000 levels: past Python's recursion limit. A whole object followed by more was taken for
    # torn (RecursionError) and cut off; the start of one still is torn.
    first = _chat(1)[0]
    log = tmp_path / "log.jsonl"
    deep = b"[" * 3000 + b"]" * 3000
    corrupt = b'{"id":"m2","x":' + deep + b"} junk"
    log.write_bytes(_record(first) + corrupt)
    with pytest.raises(NotALogError, match="its last line holds a JSON object with more data after it"):
        append_jsonl(log, first)
    assert log.read_bytes() == _record(first) + corrupt
    log.write_bytes(_record(first) + b'{"id":"m2","x":' + b"[" * 3000)
    with pytest.warns(TornLineWarning, match="truncated it"):
        append_jsonl(log, first)
    assert log.read_bytes() == _record(first) * 2


# --- Path arguments ---------------------------------------------------------------------------


def _path_calls() -> dict[str, Callable[[Any], object]]:
    """Every public reader and writer, by the name its error gives, called with ``path``."""
    chat = _chat(1)
    return {
        "load": lambda path: load(path),
        "read_jsonl": lambda path: read_jsonl(path),
        "iter_jsonl": lambda path: iter_jsonl(path),  # not iterated: the call itself refuses
        "save": lambda path: save(path, chat),
        "save_jsonl": lambda path: save_jsonl(path, chat),
        "append_jsonl": lambda path: append_jsonl(path, chat[0]),
    }


# The Conversation methods check the path themselves, so their errors name them.
_CONVERSATION_PATH_CALLS: dict[str, tuple[str, Callable[[Any], object]]] = {
    "Conversation.load": ("Conversation.load", lambda path: Conversation.load(path)),
    "Conversation.load_jsonl": ("Conversation.load_jsonl", lambda path: Conversation.load_jsonl(path)),
    "Conversation.save": ("Conversation.save", lambda path: Conversation(_chat(1)).save(path)),
    "Conversation.save indent": (
        "Conversation.save",
        lambda path: Conversation(_chat(1)).save(path, indent=2),
    ),
    "Conversation.save_jsonl": (
        "Conversation.save_jsonl",
        lambda path: Conversation(_chat(1)).save_jsonl(path),
    ),
}


def _all_path_calls() -> list[tuple[str, str, Callable[[Any], object]]]:
    plain = [(name, name, call) for name, call in _path_calls().items()]
    return plain + [(label, said, call) for label, (said, call) in _CONVERSATION_PATH_CALLS.items()]


_PATH_CALLS = _all_path_calls()


@pytest.mark.parametrize(("label", "function", "call"), _PATH_CALLS, ids=[c[0] for c in _PATH_CALLS])
@pytest.mark.parametrize(
    ("path", "found"), [(None, "a NoneType"), (5, "an int"), (True, "a bool"), (["x.json"], "a list")]
)
def test_a_path_of_the_wrong_type_is_refused_naming_the_function_and_path(
    label: str, function: str, call: Callable[[Any], object], path: object, found: str
) -> None:
    # Was a bare TypeError from os.open or os.fspath ("path should be string, bytes or ...").
    with pytest.raises(
        ArgumentTypeError, match=rf"^{function}: path must be a str or an os\.PathLike, got {found}$"
    ):
        call(path)


@pytest.mark.parametrize(("label", "function", "call"), _PATH_CALLS, ids=[c[0] for c in _PATH_CALLS])
def test_a_bytes_path_is_refused_everywhere_with_a_hint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: str, function: str, call: Callable[[Any], object]
) -> None:
    # Bytes half-worked: load(b"chat.json") read the file, save(b"chat.json", ...) failed with
    # "a bytes-like object is required", as if the messages were wrong. Now one rule for all.
    monkeypatch.chdir(tmp_path)
    save("chat.json", _chat(1))
    save_jsonl("chat.jsonl", _chat(1))
    before = sorted(os.listdir(tmp_path))
    for path in (b"chat.json", b"chat.jsonl"):
        with pytest.raises(
            ArgumentTypeError,
            match=rf"^{function}: path must be a str or an os\.PathLike, got a bytes \(decode it with os\.fsdecode\(\)\)$",
        ):
            call(path)
    assert sorted(os.listdir(tmp_path)) == before


class _BytesPath:
    """An ``os.PathLike`` that gives bytes."""

    def __fspath__(self) -> bytes:
        return b"chat.json"


def test_a_path_like_giving_bytes_is_refused_as_bytes_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    save("chat.json", _chat(1))
    for function, call in _path_calls().items():
        with pytest.raises(
            ArgumentTypeError,
            match=rf"^{function}: path must be a str or an os\.PathLike of str, got a _BytesPath whose "
            r"__fspath__\(\) gives bytes \(decode it with os\.fsdecode\(\)\)$",
        ):
            call(_BytesPath())


@pytest.mark.parametrize(("label", "function", "call"), _PATH_CALLS, ids=[c[0] for c in _PATH_CALLS])
def test_an_empty_path_is_refused_as_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, label: str, function: str, call: Callable[[Any], object]
) -> None:
    # save("") said ": a folder, not a regular file" (the empty path resolved to the current
    # folder); load("") a FileNotFoundError. Both now say what is wrong.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgumentValueError, match=rf"^{function}: path is empty$"):
        call("")
    assert os.listdir(tmp_path) == []


def test_append_jsonl_given_its_arguments_swapped_says_the_path_comes_first(tmp_path: Path) -> None:
    # Said only "expected a Message, got a str"; save and save_jsonl already gave this hint.
    log = tmp_path / "log.jsonl"
    message = _chat(1)[0]
    with pytest.raises(
        ArgumentTypeError,
        match=r"^append_jsonl\(path, message\) takes the path first; got a Message and then a str$",
    ):
        append_jsonl(message, str(log))  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match=r"takes the path first; got a Message and then a PosixPath$"):
        append_jsonl(message, log)  # type: ignore[arg-type]
    assert not log.exists()


def test_iter_jsonl_refuses_a_bad_path_at_the_call_not_at_the_first_next() -> None:
    # A generator's body runs at the first next(): the check must run before it.
    with pytest.raises(
        ArgumentTypeError, match=r"^iter_jsonl: path must be a str or an os\.PathLike, got a NoneType$"
    ):
        iter_jsonl(None)  # type: ignore[arg-type]
    with pytest.raises(ArgumentValueError, match=r"^iter_jsonl: path is empty$"):
        iter_jsonl("")


def test_append_refuses_a_file_opening_a_json_array_whose_last_line_is_a_message(tmp_path: Path) -> None:
    # Only the first byte and the last line are looked at: a file starting with "[" is no log
    # (NotALogError, the file untouched) even when its last line is a whole message.
    path = tmp_path / "odd.jsonl"
    data = b'[\n{"id":"msg-1","role":"user","content":"hi","timestamp":1}\n'
    path.write_bytes(data)
    with pytest.raises(NotALogError):
        append_jsonl(path, Message.user("msg-2", "x", timestamp=2))
    assert path.read_bytes() == data
