"""Persistence: atomic saves, loads that name the file, and append-only JSON Lines logs."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from orion_messages import (
    FormatError,
    Message,
    ToolCall,
    append_jsonl,
    load,
    loads,
    read_jsonl,
    save,
    save_jsonl,
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


def test_save_keeps_a_live_saves_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    live = tmp_path / f".chat.json.{os.getppid()}-0123456789ab.tmp"  # a running process's
    stranger = tmp_path / ".chat.json.notes.tmp"  # not ours
    live.write_bytes(b"")
    stranger.write_bytes(b"")
    save(path, _chat(1))
    assert sorted(os.listdir(tmp_path)) == sorted([".chat.json.notes.tmp", live.name, "chat.json"])


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
    with pytest.warns(TornLineWarning, match=r"log\.jsonl:3: skipping a torn last line \(25 bytes\)"):
        assert read_jsonl(log) == [first, second]
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


def test_a_corrupt_line_is_reported_even_with_repair(tmp_path: Path) -> None:
    first, second = _chat(2)
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"garbage\n" + _record(first) + _record(second)[:10])
    with pytest.warns(TornLineWarning), pytest.raises(FormatError) as caught:
        read_jsonl(log, repair=True)
    assert caught.value.problems[0].line == 1


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
    with pytest.warns(TornLineWarning, match="cutting off a torn last record"):
        append_jsonl(log, third)
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
    # The cost of an append must not grow with the log: it reads at most the last byte.
    log = tmp_path / "log.jsonl"
    for message in _chat(50):
        append_jsonl(log, message, fsync=False)
    reads: list[int] = []
    real_pread = os.pread

    def pread(fd: int, length: int, offset: int) -> bytes:
        reads.append(length)
        return real_pread(fd, length, offset)

    monkeypatch.setattr(os, "pread", pread)
    monkeypatch.setattr(Path, "read_bytes", None)  # reading the whole log is not allowed
    append_jsonl(log, _chat(1, start=51)[0], fsync=False)
    monkeypatch.undo()
    assert reads == [1]
    assert len(read_jsonl(log)) == 51


def test_read_jsonl_strict_reports_semantic_problems(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    append_jsonl(log, Message.user("a", "x", timestamp=1), fsync=False)
    append_jsonl(log, Message.user("a", "y", timestamp=2), fsync=False)
    assert len(read_jsonl(log)) == 2
    with pytest.raises(FormatError) as caught:
        read_jsonl(log, strict=True)
    assert caught.value.source == str(log)
    assert caught.value.problems[0].location == "[1].id"


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
