"""Crash safety with real processes: writers killed with SIGKILL, and concurrent appenders.

Each writer is a forked child of the test process (so that the library is imported once, which
keeps fifty kills fast); it is killed with SIGKILL at a random moment, reaped, and the file it
was writing is checked. The random delays come from a fixed seed, so a failure replays.
POSIX only (fork, SIGKILL, flock).
"""

from __future__ import annotations

import fcntl
import os
import random
import select
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from orion_messages import Message, ToolCall, dumps, load, read_jsonl, save, storage
from orion_messages.storage import TornLineWarning, append_jsonl

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="fork, SIGKILL and flock are POSIX")

KILLS = 60


def _conversation(tag: str, count: int, size: int) -> list[Message]:
    """A conversation whose every message says which version it belongs to."""
    messages: list[Message] = []
    for i in range(count):
        if i % 3 == 1:
            call = ToolCall(
                id=f"msg-{i}-call-1", name="echo", arguments={"tag": tag, "i": i, "pad": "p" * 50}
            )
            messages.append(Message.assistant(f"msg-{i}", f"{tag}:{i}:" + "a" * size, [call], timestamp=i))
        else:
            messages.append(Message.user(f"msg-{i}", f"{tag}:{i}:" + "u" * size, timestamp=i))
    return messages


@contextmanager
def _forked(body: Callable[[], None]) -> Iterator[int]:
    """Run ``body`` in a forked child; yield its pid. The child never returns into pytest."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        status = 0
        try:
            body()
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    try:
        yield pid
    finally:  # a child the test has not reaped yet is killed and reaped
        with suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)


def _kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status), "the writer ended on its own"
    assert os.WTERMSIG(status) == signal.SIGKILL


def _leftovers(folder: Path, target: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p != target)


_COUNTED = 1_000_000_000 * 10**9  # an mtime (2001) the test gives a leftover it has counted


@pytest.mark.parametrize("forced_named", [False, True], ids=["as-this-system-saves", "named-temporary"])
def test_a_save_killed_at_random_moments_leaves_one_whole_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forced_named: bool
) -> None:
    if forced_named:
        monkeypatch.setattr(storage, "_UNNAMED_FILES", False)  # the fallback every OS has
    # About 2 MB each, so that a save (dump, write, fsync, rename) takes a while.
    versions = [_conversation(tag, 300, 6000) for tag in ("A", "B", "C")]
    images = [dumps(v) for v in versions]
    assert len(set(images)) == 3
    target = tmp_path / "conversation.json"
    started = time.perf_counter()
    save(target, versions[0])
    # Kill within about three saves' time: a kill lands during a save or between two.
    window = 3 * (time.perf_counter() - started)

    rng = random.Random(20261202 + forced_named)
    seen: set[int] = set()
    litter: set[str] = set()
    caught_mid_save = 0
    for _ in range(KILLS // 2):
        read_end, write_end = os.pipe()

        def writer(write_end: int = write_end, k: int = rng.randrange(3)) -> None:
            while True:
                k += 1
                save(target, versions[k % 3])
                os.write(write_end, b"s")  # reported only after save returned

        with _forked(writer) as pid:
            os.close(write_end)
            # Kill only after a first save has returned, so that a loaded machine cannot starve
            # the child into saving nothing; a later save or the gap after it is cut at random.
            head = os.read(read_end, 64)
            time.sleep(rng.uniform(0.0, window))
            _kill(pid)
        completed = len(head + _read_all(read_end))
        os.close(read_end)
        data = target.read_bytes()
        assert data in images, "the file is not one whole version"
        index = images.index(data)
        seen.add(index)
        assert load(target) == versions[index]
        # A killed save leaves at most its own temporary file, .conversation.json.<hex>.tmp; any
        # save that completes removes those of writers that are gone (their locks are free).
        # Names come back (a save takes the first free of eight), so the files of earlier rounds
        # are told apart by the modification time the test stamps on them, not by their names.
        now = set(_leftovers(tmp_path, target))
        earlier = {name for name in now if (tmp_path / name).stat().st_mtime_ns == _COUNTED}
        mine = now - earlier
        assert len(mine) <= 1, mine
        assert all(name.startswith(".conversation.json.") and name.endswith(".tmp") for name in now)
        assert earlier <= (set() if completed else litter), (now, litter, completed)
        caught_mid_save += len(mine)
        for name in mine:
            os.utime(tmp_path / name, ns=(_COUNTED, _COUNTED))
        litter = now
    if forced_named:  # a kill between creating and renaming the named file leaves it behind
        # Random kills may all miss that window (on a fast disk it is short beside the dump), so
        # one more kill is aimed at it: the moment the file appears.
        caught_mid_save += _kill_inside_a_save(tmp_path, target, versions, images)
        assert caught_mid_save > 0, "no kill landed in the middle of a save"
    # The next save sweeps what killed saves left behind.
    save(target, versions[0])
    assert _leftovers(tmp_path, target) == []
    assert len(seen) >= 2, "the writer never got a save through: kills came too early"


def _kill_inside_a_save(
    folder: Path, target: Path, versions: list[list[Message]], images: list[bytes]
) -> int:
    """Kill a saver the moment its temporary file appears beside ``target``; the number of
    temporary files that kill left (1, or 0 when the save renamed it before the kill landed:
    then it is tried again, up to ten times)."""
    for attempt in range(10):
        known = set(_leftovers(folder, target))

        def writer(k: int = attempt) -> None:
            while True:
                k += 1
                save(target, versions[k % 3])

        with _forked(writer) as pid:
            deadline = time.monotonic() + 60
            while not set(_leftovers(folder, target)) - known:
                assert time.monotonic() < deadline, "no save's temporary file appeared in 60 s"
            _kill(pid)
        assert target.read_bytes() in images, "the file is not one whole version"
        left = set(_leftovers(folder, target)) - known
        assert len(left) <= 1, left
        if left:
            return 1
    return 0


def test_the_next_save_removes_what_killed_saves_left_without_listing_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/reliability.md: a save killed mid-write leaves one .NAME.<slot>.tmp beside the target;
    # the next save of that target removes it, looking for it by name: in a folder of thousands
    # of files (one per conversation), a save does not list the folder.
    target = tmp_path / "conversation.json"
    for n in range(2000):
        (tmp_path / f"conversation-{n}.json").write_bytes(b"[]")
    versions = {tag: _conversation(tag, 30, 100) for tag in "ABCD"}
    save(target, versions["A"])
    for tag in "BC":  # two kills in a row: two leftovers
        read_end, write_end = os.pipe()

        def writer(tag: str = tag, write_end: int = write_end) -> None:
            storage._UNNAMED_FILES = False  # named from the start, as on the machines tested

            def stall(fd: int) -> None:  # the data is written; the kill lands before the rename
                os.write(write_end, b"w")
                time.sleep(60)

            setattr(os, "fsync", stall)  # noqa: B010 - in the child only
            save(target, versions[tag])

        with _forked(writer) as pid:
            os.close(write_end)
            assert os.read(read_end, 1) == b"w", "the writer never reached its write"
            _kill(pid)
        os.close(read_end)
    hidden = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("."))
    assert hidden == [f".conversation.json.{slot:016x}.tmp" for slot in (0, 1)]
    assert load(target) == versions["A"]

    listed: list[str] = []
    real_scandir, real_listdir = os.scandir, os.listdir

    def scandir(path: str = ".") -> Any:
        listed.append(path)
        return real_scandir(path)

    def listdir(path: str = ".") -> list[str]:
        listed.append(path)
        return real_listdir(path)

    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", scandir)
        patch.setattr(os, "listdir", listdir)
        save(target, versions["D"])
    assert listed == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert len(list(tmp_path.iterdir())) == 2001
    assert load(target) == versions["D"]


def test_concurrent_saves_killed_together_leave_one_whole_version_and_the_next_save_cleans_up(
    tmp_path: Path,
) -> None:
    # Three processes save one file at once (their temporary files take three of the eight
    # names, and each save's clean-up opens the names the others are creating) and are killed
    # together: the file is one whole version, and the next save removes every leftover.
    target = tmp_path / "conversation.json"
    versions = [_conversation(tag, 60, 500) for tag in "ABC"]
    images = [dumps(v) for v in versions]
    save(target, versions[0])
    rng = random.Random(20261203)

    def writer(k: int, write_end: int) -> Callable[[], None]:
        def run() -> None:
            storage._UNNAMED_FILES = False  # named files: the ones that can be left over
            while True:
                save(target, versions[k])
                os.write(write_end, b"s")

        return run

    for _ in range(10):
        with ExitStack() as writers:
            started: list[tuple[int, int]] = []
            for k in range(len(versions)):
                read_end, write_end = os.pipe()  # made after the previous fork: only its writer has it
                writers.callback(os.close, read_end)
                started.append((writers.enter_context(_forked(writer(k, write_end))), read_end))
                os.close(write_end)
            for _, read_end in started:  # a writer that failed closes its pipe: b""
                assert os.read(read_end, 1) == b"s", "a writer never finished a save"
            time.sleep(rng.uniform(0.0, 0.05))
            for pid, _ in started:
                _kill(pid)
        assert target.read_bytes() in images, "the file is not one whole version"
        assert len(_leftovers(tmp_path, target)) <= 3
        save(target, versions[0])
        assert _leftovers(tmp_path, target) == []
        assert load(target) == versions[0]


@pytest.mark.filterwarnings(
    "ignore::orion_messages.storage.TornLineWarning"
)  # a kill mid-append tears the tail
def test_appends_killed_at_random_moments_keep_every_finished_record(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    appended = 0  # records the children reported as appended, in order, over every round
    tail_mended = 0
    rng = random.Random(6)

    for _ in range(KILLS // 2):
        read_end, write_end = os.pipe()
        start = appended

        def appender(start: int = start, write_end: int = write_end) -> None:
            i = start
            while True:
                # Records of very different sizes, some large, so that kills land mid-write too.
                size = rng.choice((10, 1000, 200_000))
                message = Message.user(f"msg-{i}", f"{i}:" + "x" * size, timestamp=i)
                append_jsonl(log, message, fsync=i % 4 == 0)
                os.write(write_end, b"%d\n" % i)  # reported only after append_jsonl returned
                i += 1

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with _forked(appender) as pid:
                os.close(write_end)
                # Kill only after a first append has returned, so that a loaded machine cannot
                # starve the child into appending nothing; later appends are cut at random.
                head = os.read(read_end, 64)
                time.sleep(rng.uniform(0.0, 0.05))
                _kill(pid)
        tail_mended += sum(issubclass(w.category, TornLineWarning) for w in caught)
        reported = (head + _read_all(read_end)).split()
        os.close(read_end)
        finished = [int(n) for n in reported]
        assert finished == list(range(start, start + len(finished)))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornLineWarning)  # a torn tail is the documented result
            messages = read_jsonl(log)
        ids = [m.id for m in messages]
        # Every record reported as appended reads back, in order; at most one more (written but
        # killed before it could report) follows it.
        assert ids[: start + len(finished)] == [f"msg-{i}" for i in range(start + len(finished))]
        assert len(ids) - (start + len(finished)) in (0, 1)
        appended = len(ids)
        for message in messages[-len(finished) :] if finished else []:
            number, _, rest = message.content.partition(":")
            assert message.id == f"msg-{number}"
            assert set(rest) == {"x"}

    # The last appender's next record mends whatever torn tail the last kill left.
    append_jsonl(log, Message.user(f"msg-{appended}", "last", timestamp=0))
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)  # no torn line is left now
        ids = [m.id for m in read_jsonl(log)]
    assert ids == [f"msg-{i}" for i in range(appended + 1)]
    assert appended > KILLS // 2, "the children hardly got to append before being killed"
    del tail_mended  # how often a torn tail was mended depends on timing; not asserted


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_two_processes_appending_at_once_never_tear_each_others_lines(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    count = 150

    def appender(tag: str) -> Callable[[], None]:
        def run() -> None:
            rng = random.Random(tag)
            for i in range(count):
                content = f"{tag}{i}:" + tag * rng.choice((1, 500, 70_000))
                append_jsonl(log, Message.user(f"{tag}-{i}", content, timestamp=i), fsync=False)

        return run

    with _forked(appender("a")) as first, _forked(appender("b")) as second:
        for pid in (first, second):
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status)
            assert os.WEXITSTATUS(status) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", TornLineWarning)
        messages = read_jsonl(log)
    for tag in "ab":
        mine = [m for m in messages if m.id.startswith(f"{tag}-")]
        assert [m.id for m in mine] == [f"{tag}-{i}" for i in range(count)]
        for m in mine:
            head, _, body = m.content.partition(":")
            assert head == m.id.replace("-", "")
            assert set(body) == {tag}
    assert len(messages) == 2 * count


def test_an_append_waits_for_another_holder_of_the_log_lock(tmp_path: Path) -> None:
    # The interleaving guarantee rests on flock: an append must wait while anyone holds it.
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")
    read_end, write_end = os.pipe()

    def appender() -> None:
        os.write(write_end, b"start\n")
        append_jsonl(log, Message.user("msg-1", "hello", timestamp=1), fsync=False)
        os.write(write_end, b"done\n")

    with open(log, "rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        with _forked(appender) as pid:
            os.close(write_end)
            assert os.read(read_end, 6) == b"start\n"
            ready, _, _ = select.select([read_end], [], [], 0.5)
            assert not ready, "append_jsonl wrote while another process held the lock"
            assert log.read_bytes() == b""
            fcntl.flock(holder.fileno(), fcntl.LOCK_UN)
            assert _read_all(read_end) == b"done\n"
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status)
            assert os.WEXITSTATUS(status) == 0
    os.close(read_end)
    assert [m.id for m in read_jsonl(log)] == ["msg-1"]


def test_repair_and_appends_at_once_lose_no_append_that_returned(tmp_path: Path) -> None:
    # A repairing reader truncates a torn tail; it must do so under the append lock, or an
    # append that returned between its read and its truncate is cut off with the torn bytes.
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")
    started, done = tmp_path / "started", tmp_path / "done"
    read_end, write_end = os.pipe()

    def appender() -> None:
        deadline = time.monotonic() + 30
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.001)
        count = 0
        while not done.exists() and count < 20_000:
            append_jsonl(log, Message.user(f"msg-{count}", "x" * 2000, timestamp=count), fsync=False)
            count += 1
        os.write(write_end, str(count).encode())

    def repairer() -> None:
        warnings.simplefilter("ignore", TornLineWarning)
        started.touch()
        for _ in range(40):
            with open(log, "ab") as handle:  # a crash mid-append, as another appender leaves it
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
                handle.write(b'{"id":"torn","role":"us')
                handle.flush()
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            read_jsonl(log, repair=True)
        done.touch()

    with _forked(appender) as first, _forked(repairer) as second:
        for pid in (first, second):
            _, status = os.waitpid(pid, 0)
            assert os.WIFEXITED(status)
            assert os.WEXITSTATUS(status) == 0
    os.close(write_end)
    count = int(_read_all(read_end))
    os.close(read_end)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        ids = [m.id for m in read_jsonl(log)]
    assert ids == [f"msg-{i}" for i in range(count)]


_FULL_DISK = textwrap.dedent(
    """
    import errno, os, resource, signal, sys, warnings
    from orion_messages import Message, append_jsonl, read_jsonl

    folder, method = sys.argv[1:3]
    log = os.path.join(folder, "log.jsonl")
    for n in range(3):
        append_jsonl(log, Message.user(f"msg-{n}", "small", timestamp=n))
    before = open(log, "rb").read()
    room = 40_000  # the 100 KB record below fits partly
    if method == "rlimit":
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # then a write past the limit fails with EFBIG
        hard = resource.getrlimit(resource.RLIMIT_FSIZE)[1]
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + room, hard))
    else:  # a small tmpfs: fill it, then free some room
        filler = os.path.join(folder, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, b"f" * 65536)
        except OSError as error:
            assert error.errno == errno.ENOSPC, error
        os.ftruncate(fd, os.fstat(fd).st_size - room)
        os.close(fd)
    try:
        append_jsonl(log, Message.user("big", "x" * 100_000, timestamp=9))
    except OSError as error:
        assert error.errno in (errno.ENOSPC, errno.EFBIG), error
        assert error.filename == log, error.filename
    else:
        raise AssertionError("an append that did not fit returned")
    assert open(log, "rb").read() == before, "the log changed"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [m.id for m in read_jsonl(log)] == ["msg-0", "msg-1", "msg-2"]
    if method == "rlimit":
        resource.setrlimit(resource.RLIMIT_FSIZE, (hard, hard))
    else:
        os.unlink(filler)
    append_jsonl(log, Message.user("msg-3", "x" * 100_000, timestamp=9))
    assert [m.id for m in read_jsonl(log)] == ["msg-0", "msg-1", "msg-2", "msg-3"]
    print("ok")
    """
)


@contextmanager
def _small_disk(folder: Path, wanted: str) -> Iterator[str]:
    """A 1 MB tmpfs at ``folder`` (the most real full disk) where wanted and the process may mount
    one; else the folder as it is, filled up to an ``RLIMIT_FSIZE`` limit instead. Never skips."""
    folder.mkdir()
    mounted = (
        wanted == "tmpfs"
        and sys.platform.startswith("linux")
        and os.geteuid() == 0
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True, check=False
        ).returncode
        == 0
    )
    try:
        yield "tmpfs" if mounted else "rlimit"
    finally:
        if mounted:
            subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.parametrize("wanted", ["tmpfs", "rlimit"])
def test_an_append_on_a_full_disk_raises_and_leaves_the_log_as_it_was(tmp_path: Path, wanted: str) -> None:
    with _small_disk(tmp_path / "disk", wanted) as method:
        done = subprocess.run(
            [sys.executable, "-c", _FULL_DISK, str(tmp_path / "disk"), method],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), (method, done.stderr[-3000:])
