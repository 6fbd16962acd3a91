"""The conversation store on SQLite and PostgreSQL, against a conversation file.

    python benchmarks/store_bench.py            # the full run (a few minutes)
    python benchmarks/store_bench.py --quick    # small sizes, for a smoke run

Measures, per backend: the latency of one append to a conversation that already holds 1,000 and
100,000 messages (the ratio shows an append does not grow with the conversation); loading a
10,000-message conversation, against ``load`` of the same conversation as a ``.json`` file and
``read_jsonl`` of it as a log; and appends per second from 4 processes writing to one
conversation at once. Times are wall-clock medians (the database does the work in another
process or waits on the disk, so CPU time would hide it). PostgreSQL is the server
ORION_TEST_POSTGRES_URL names, or one this script starts like the test suite does; without one
the PostgreSQL rows are skipped, and the report says so. Prints a Markdown report; ``--output``
writes it to a file as well.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import platform
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.store.support starts PostgreSQL

import orjson
from corpus import make_conversation

import orion_messages as om
from orion_messages.store import open_store

WRITERS = 4


def median_wall(action: Callable[[], Any], runs: int) -> float:
    """The median wall time of ``action`` over ``runs`` runs, in seconds."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def messages(size: int, prefix: str) -> list[om.Message]:
    """``size`` messages of the benchmark corpus, ids made unique with ``prefix``."""
    return [
        om.Message.model_validate({**wire, "id": f"{prefix}{index}"})
        for index, wire in enumerate(make_conversation(size, pending_tail=False))
    ]


def append_latency(url: str, stored: int, appends: int) -> tuple[float, float]:
    """Median wall and CPU seconds of one append to a conversation already holding ``stored`` messages.

    The CPU time is this process's: for SQLite, all the work but the waits on the disk's fsync
    (which vary widely on a shared machine); for PostgreSQL, only the client's side.
    """
    with open_store(url) as store:
        name = f"append-{stored}"
        store.create(name)
        corpus = messages(stored, "m")
        for start in range(0, stored, 5_000):
            store.extend(name, corpus[start : start + 5_000])
        walls, cpus = [], []
        for message in messages(appends, "x"):
            wall, cpu = time.perf_counter(), time.process_time()
            store.append(name, message)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
        return statistics.median(walls), statistics.median(cpus)


def load_times(url: str, corpus: list[om.Message], files: list[Path], runs: int) -> list[float]:
    """Median seconds to load ``corpus`` back from the store, then its ratio to loading each file.

    The store and the files are loaded in turn within each run and the ratios taken run by run,
    so that a busy moment of the machine weighs on both sides of a ratio alike.
    """
    json_file, log_file = files
    with open_store(url) as store:
        store.create("load")
        store.extend("load", corpus)
        rounds = []
        for _ in range(runs):
            stored = median_wall(lambda: store.load("load"), 1)
            from_json = median_wall(lambda: om.load(json_file), 1)
            from_log = median_wall(lambda: om.read_jsonl(log_file), 1)
            rounds.append((stored, stored / from_json, stored / from_log))
    return [statistics.median(column) for column in zip(*rounds, strict=True)]


def _writer(url: str, count: int, start: Any, writer: int) -> None:
    with open_store(url) as store:
        batch = messages(count, f"w{writer}-")
        start.wait()
        for message in batch:
            store.append("concurrent", message)


def concurrent_rate(url: str, per_writer: int) -> float:
    """Appends per second from ``WRITERS`` processes appending to one conversation together."""
    with open_store(url) as store:
        store.create("concurrent")
    context = multiprocessing.get_context("fork")
    start = context.Event()
    processes = [context.Process(target=_writer, args=(url, per_writer, start, w)) for w in range(WRITERS)]
    for process in processes:
        process.start()
    time.sleep(1.0)  # every writer connected and its messages made
    began = time.perf_counter()
    start.set()
    for process in processes:
        process.join()
    elapsed = time.perf_counter() - began
    if any(process.exitcode for process in processes):
        raise RuntimeError("a writer failed")
    with open_store(url) as store:
        assert store.info("concurrent").message_count == WRITERS * per_writer
    return WRITERS * per_writer / elapsed


@contextmanager
def postgres_url() -> Iterator[str | None]:
    """A fresh schema on a PostgreSQL server, or None when there is none to be had."""
    try:
        import psycopg

        from tests.store.support import ENVIRONMENT_URL, Unavailable, own_server, with_schema
    except ImportError:
        yield None
        return
    with ExitStack() as stack:
        server = os.environ.get(ENVIRONMENT_URL)
        if not server:
            try:
                server = stack.enter_context(own_server())
            except Unavailable:
                yield None
                return
        schema = f"orion_bench_{secrets.token_hex(4)}"
        with psycopg.connect(server, autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {schema}")
        try:
            yield with_schema(server, schema)
        finally:
            with psycopg.connect(server, autocommit=True) as connection:
                connection.execute(f"DROP SCHEMA {schema} CASCADE")


def run(quick: bool) -> str:
    small, large, loaded = (100, 2_000, 1_000) if quick else (1_000, 100_000, 10_000)
    appends, runs, per_writer = (20, 3, 50) if quick else (200, 7, 500)
    folder = Path(tempfile.mkdtemp(prefix="orion-store-bench-"))
    corpus = messages(loaded, "m")
    json_file, log_file = folder / "chat.json", folder / "chat.jsonl"
    om.save(json_file, corpus)
    om.save_jsonl(log_file, corpus)
    file_load = median_wall(lambda: om.load(json_file), runs)
    log_load = median_wall(lambda: om.read_jsonl(log_file), runs)
    files = [json_file, log_file]
    lines = [
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.machine()}, "
        f"Python {platform.python_version()}, SQLite {__import__('sqlite3').sqlite_version}"
        + (" (quick: small sizes)" if quick else ""),
        "",
        f"| backend | append, {small:,} stored | append, {large:,} stored | ratio | "
        f"load {loaded:,} | vs .json file | vs .jsonl log | {WRITERS} writers, appends/s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    with postgres_url() as postgres:
        backends = [("SQLite (WAL)", f"sqlite:///{folder / 'chats.db'}"), ("PostgreSQL", postgres)]
        for name, url in backends:
            if url is None:
                lines.append(f"| {name} | skipped: no server (set ORION_TEST_POSTGRES_URL) | | | | | | |")
                continue
            (few, few_cpu), (many, many_cpu) = (
                append_latency(url, small, appends),
                append_latency(url, large, appends),
            )
            load, versus_json, versus_log = load_times(url, corpus, files, runs)
            rate = concurrent_rate(url, per_writer)
            lines.append(
                f"| {name} | {few * 1e3:.2f} ms ({few_cpu * 1e3:.2f}) | {many * 1e3:.2f} ms ({many_cpu * 1e3:.2f}) | "
                f"{many / few:.2f}x ({many_cpu / few_cpu:.2f}x) | "
                f"{load * 1e3:.1f} ms | {versus_json:.2f}x | {versus_log:.2f}x | {rate:,.0f} |"
            )
    lines += [
        "",
        "Appends: wall time (CPU time of this process in brackets; for SQLite that is all the work but "
        "the fsync waits).",
        f"Loading the same {loaded:,} messages from a file: `load` (.json) {file_load * 1e3:.1f} ms, "
        f"`read_jsonl` (.jsonl) {log_load * 1e3:.1f} ms. orjson {orjson.__version__}.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke run")
    parser.add_argument("--output", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    report = run(args.quick)
    print(report)
    if args.output:
        args.output.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
