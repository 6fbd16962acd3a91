"""Several processes appending to one conversation, and a writer killed mid-transaction, on both backends.

Nothing committed may be lost, duplicated or reordered; a batch is all there or not at all.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import select
import signal
import time
from typing import Any

from orion_messages import Message, _store_ops
from orion_messages._store_ops import Operation, Statements, Steps
from orion_messages.store import open_store

WRITERS = 4
APPENDS = 25  # per writer: half appends of one message, half batches of two


def _write(url: str, writer: int, start: Any) -> None:
    with open_store(url) as store:
        start.wait()  # a barrier: every writer connected, they start appending together
        for step in range(APPENDS):
            time.sleep(
                0.002
            )  # a host does something between turns; without it one writer can hog SQLite's lock
            if step % 2:
                store.extend(
                    "c",
                    [
                        Message.user(f"w{writer}-{step}a", "batch", timestamp=step),
                        Message.user(f"w{writer}-{step}b", "batch", timestamp=step),
                    ],
                )
            else:
                store.append("c", Message.user(f"w{writer}-{step}", "one", timestamp=step))


def _expected(writer: int) -> list[str]:
    ids: list[str] = []
    for step in range(APPENDS):
        ids.extend([f"w{writer}-{step}a", f"w{writer}-{step}b"] if step % 2 else [f"w{writer}-{step}"])
    return ids


def test_concurrent_writers_lose_duplicate_and_reorder_nothing(store_url: str) -> None:
    with open_store(store_url) as store:
        store.create("c")
    context = multiprocessing.get_context("fork")
    start = context.Barrier(WRITERS)
    processes = [context.Process(target=_write, args=(store_url, writer, start)) for writer in range(WRITERS)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [process.exitcode for process in processes] == [0] * WRITERS
    with open_store(store_url) as store:
        ids = [message.id for message in store.load("c")]
        assert store.info("c").message_count == len(ids)
    assert len(ids) == len(set(ids)) == sum(len(_expected(writer)) for writer in range(WRITERS))
    for writer in range(WRITERS):
        assert [i for i in ids if i.startswith(f"w{writer}-")] == _expected(writer)
    assert (
        sum(a[:2] != b[:2] for a, b in itertools.pairwise(ids)) >= WRITERS
    )  # they interleaved (in turn: WRITERS - 1)
    for index, identifier in enumerate(ids):  # a batch is one transaction: its two rows are adjacent
        if identifier.endswith("a"):
            assert ids[index + 1] == identifier[:-1] + "b"


BATCH = 300
COMMITTED = 3


def _commit_then_hang_mid_transaction(url: str, report: int) -> None:
    with open_store(url) as store:
        for number in range(COMMITTED):
            store.extend("c", [Message.user(f"b{number}-{i}", "x" * 200, timestamp=i) for i in range(BATCH)])
            os.write(report, b"committed\n")
        uncommitted = [Message.user(f"lost-{i}", "x", timestamp=i) for i in range(BATCH)]

        def insert_then_hang(s: Statements) -> Steps[None]:
            yield from _store_ops.extend("c", uncommitted, "extend").steps(s)  # rows inserted, not committed
            os.write(report, b"inside\n")
            time.sleep(60)  # killed here, holding the lock

        store._backend.run(Operation(True, insert_then_hang))


def test_a_writer_killed_mid_transaction_loses_nothing_committed(store_url: str) -> None:
    with open_store(store_url) as store:
        store.create("c")
    read_end, write_end = os.pipe()
    process = multiprocessing.get_context("fork").Process(
        target=_commit_then_hang_mid_transaction, args=(store_url, write_end)
    )
    process.start()
    os.close(write_end)
    reported = b""
    deadline = time.monotonic() + 60
    while b"inside" not in reported and time.monotonic() < deadline:
        ready, _, _ = select.select([read_end], [], [], 1.0)
        if ready:
            reported += os.read(read_end, 4096)
    os.kill(process.pid or 0, signal.SIGKILL)
    process.join(timeout=30)
    os.close(read_end)
    assert process.exitcode == -signal.SIGKILL
    assert reported.split() == [b"committed"] * COMMITTED + [b"inside"]
    with open_store(store_url) as store:
        ids = [message.id for message in store.load("c")]
        assert ids == [f"b{number}-{i}" for number in range(COMMITTED) for i in range(BATCH)]
        assert store.info("c").message_count == COMMITTED * BATCH
        store.append("c", Message.user("after", "the lock was released"))  # the dead writer's lock is gone
        assert store.load("c", last=1)[0].id == "after"


def test_threads_sharing_one_store_take_turns(store_url: str) -> None:
    import threading

    with open_store(store_url) as store:
        store.create("c")

        def write(writer: int) -> None:
            for step in range(APPENDS):
                store.append("c", Message.user(f"t{writer}-{step}", "x", timestamp=step))

        threads = [threading.Thread(target=write, args=(writer,)) for writer in range(WRITERS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        ids = [message.id for message in store.load("c")]
    for writer in range(WRITERS):
        assert [i for i in ids if i.startswith(f"t{writer}-")] == [
            f"t{writer}-{step}" for step in range(APPENDS)
        ]
    assert len(ids) == WRITERS * APPENDS


def test_a_read_sees_one_moment_though_a_write_commits_between_its_statements(store_url: str) -> None:
    # docs/store.md: every call is one transaction. load(since=...) finds the message, then reads
    # the rows after it; another connection's replace_messages committed in between must not
    # show: by hand, the messages after m1 when the call began, m2 and m3.
    from .test_store import chat

    with open_store(store_url) as store, open_store(store_url) as other:
        store.create("c")
        store.extend("c", chat(2))  # m0 to m3

        def write_between(s: Statements) -> Steps[list[Message]]:
            inner = _store_ops.load("c", None, "m1").steps(s)
            result = yield next(inner)  # the lookup of m1
            other.replace_messages("c", chat(2, "n"))  # committed while this read is open
            while True:
                try:
                    step = inner.send(result)
                except StopIteration as done:
                    loaded: list[Message] = done.value
                    return loaded
                result = yield step

        assert [m.id for m in store._backend.run(Operation(False, write_between))] == ["m2", "m3"]
        assert [m.id for m in store.load("c")] == ["n0", "n1", "n2", "n3"]  # the write did commit
