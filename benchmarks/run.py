"""orion-messages against orjson (the floor), pydantic-core on plain TypedDicts (the floor for
pydantic models) and the libraries users would pick instead.

    python -m pip install -e ".[bench]" && python benchmarks/run.py

Measures, on one realistic conversation (see ``corpus.py``) at 10,000 and 100,000 messages: load,
dump, prune planning (and planning again after one append), appending to a JSON Lines log with
1,000 and 100,000 messages already in it (``save`` beside it), and memory per loaded message.
Each conversation size, and each corpus of the codec table, is measured in a fresh process
(``in_fresh_process``). The contenders of each table take turns (round robin, ``race``) after
one untimed round, and each time is the fastest of several runs, each with the garbage collector
paused (``loads`` pauses it itself; the others get the same treatment, so the peers are not
charged for collections). All times and ratios in one report come from one run of this script.
Writes the report to ``benchmarks/results.md`` (``--output``); ``--quick`` runs fewer sizes and
repeats and writes nothing unless ``--output`` is given.
"""

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
import peers
from corpus import make_conversation, make_short_conversation

import orion_messages as om
from orion_messages.pruning import ContextConfig, TokenCounter, plan_prune

HERE = Path(__file__).resolve().parent
GOAL_LOAD = 2.0  # loads within 2x of orjson.loads
GOAL_DUMP = 2.5  # dumps within 2.5x of orjson.dumps, cold
GOAL_PEERS = 3.0  # dump at least 3x faster than pydantic-ai and LangChain
# load at least this much faster than each peer (issue 14)
GOAL_PEERS_LOAD = {"pydantic-ai validate_json": 2.5, "LangChain messages_from_dict": 1.5}
GOAL_PLAN = 0.5  # a plan under half of orjson.loads
GOAL_FLAT = 1.5  # append with 100,000 in the log at most 1.5x the time with 1,000

# pydantic-core on plain TypedDicts, raced beside ours: the floor under any pydantic model
# (the load goal's own words), shown beside the load and dump goals.
FLOOR_LOAD = "pydantic-core TypedDicts validate_json"
FLOOR_DUMP = "pydantic-core TypedDicts dump_json"

CONFIG = ContextConfig(max_context_tokens=131_072, max_response_tokens=4_096)


def _chars4(message: om.Message) -> int:
    """The counter both planners get: ``max(1, len(content) // 4)``."""
    return max(1, len(message.content) // 4)


def median_time(
    action: Callable[[], Any],
    runs: int,
    clock: Callable[[], float] = time.process_time,
    *,
    pause_gc: bool = True,
    pick: Callable[[list[float]], float] = statistics.median,
) -> float:
    """The median time of ``action`` over ``runs`` runs, GC paused, the result freed untimed.

    ``pick=min`` gives the fastest run instead (a shared machine only ever adds time).

    CPU time of this process by default (the machine may be shared: time spent waiting for a
    core is not the library's); ``time.perf_counter`` for work that waits on the disk. With
    ``pause_gc=False`` the collector runs as it does for users.
    """
    times = []
    for _ in range(runs):
        gc.collect()
        if pause_gc:
            gc.disable()
        try:
            start = clock()
            result = action()
            elapsed = clock() - start
            del result
        finally:
            gc.enable()
        times.append(elapsed)
    return pick(times)


def bytes_per_item(build: Callable[[], Any], count: int) -> float:
    """Memory held by what ``build`` returns, per message (tracemalloc, GC paused)."""
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = build()
        after = tracemalloc.get_traced_memory()[0]
        del held
    finally:
        tracemalloc.stop()
        gc.enable()
    return (after - before) / count


@dataclass
class Row:
    """One measured operation: its name, a time per size, and what its ratio is taken against."""

    name: str
    times: dict[int, float] = field(default_factory=dict)
    note: str = ""


@dataclass
class Section:
    """A table: rows of times, with ratios against a baseline row."""

    title: str
    baseline: str
    rows: list[Row] = field(default_factory=list)

    def row(self, name: str, note: str = "") -> Row:
        """The row called ``name``, created on first use."""
        for row in self.rows:
            if row.name == name:
                return row
        row = Row(name, note=note)
        self.rows.append(row)
        return row

    def time(self, name: str, size: int) -> float | None:
        """The time of ``name`` at ``size``, if measured."""
        for row in self.rows:
            if row.name == name:
                return row.times.get(size)
        return None


def _ms(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 0.001:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} us"


def _table(section: Section, sizes: Sequence[int]) -> list[str]:
    head = (
        "| "
        + section.title
        + " | "
        + " | ".join(f"{size:,} msgs | x {section.baseline}" for size in sizes)
        + " |"
    )
    rule = "|---|" + "---:|---:|" * len(sizes)
    lines = [head, rule]
    for row in section.rows:
        cells = []
        for size in sizes:
            value = row.times.get(size)
            base = section.time(section.baseline, size)
            if value is None:
                cells += ["skipped", ""]
            else:
                cells += [_ms(value), f"{value / base:.2f}" if base else ""]
        name = f"{row.name} {row.note}".strip()
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for package in (
        "orion-messages",
        "pydantic",
        "pydantic-core",
        "orjson",
        "msgspec",
        "pydantic-ai-slim",
        "langchain-core",
    ):
        try:
            out[package] = version(package)
        except PackageNotFoundError:
            out[package] = "not installed"
    return out


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _log_lines(data: bytes) -> list[bytes]:
    """One JSON Lines record per message of a conversation file."""
    return [om.dumps_message(message) for message in om.loads(data)]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks and print (and write) the report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", help="one size (10,000), fewer repeats; writes no file"
    )
    parser.add_argument("--sizes", help="comma-separated conversation sizes (default 10000,100000)")
    parser.add_argument("--log-sizes", help="messages already in the log for append (default 1000,100000)")
    parser.add_argument(
        "--runs", type=int, help="repeats per measurement (default 15 up to 20,000 messages, 5 above)"
    )
    parser.add_argument("--no-peers", action="store_true", help="skip msgspec, pydantic-ai and LangChain")
    parser.add_argument("--output", help="write the markdown report here (default benchmarks/results.md)")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one part, in a fresh process (in_fresh_process)
    args = parser.parse_args(argv)
    if args.child:
        return answer_child(args.child, {"size": _measure_size, "codec": _measure_codec})

    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else ([10_000] if args.quick else [10_000, 100_000])
    )
    if args.log_sizes:
        log_sizes = [int(s) for s in args.log_sizes.split(",")]
    else:
        log_sizes = [1_000, 100_000] if max(sizes) >= 1_000 else sorted(sizes)
    output = args.output or (None if args.quick else str(HERE / "results.md"))
    skipped: dict[str, str | None] = dict.fromkeys(peers.available(), "--no-peers") if args.no_peers else {}
    skipped.update({k: v for k, v in peers.available().items() if v and k not in skipped})

    def runs_for(size: int) -> int:
        if args.runs:
            return int(args.runs)
        # Many rounds: the machine's speed moves in phases of a fraction of a second, and each
        # contender's fastest run must fall in a fast phase.
        small = 3 if args.quick else 15
        return small if size <= 20_000 else (1 if args.quick else 5)

    load = Section("load", "orjson.loads")
    load_gc = Section("load, GC on", "orjson.loads")
    dump = Section("dump", "orjson.dumps")
    prune = Section("prune", "orjson.loads")
    corpus_notes: list[str] = []
    memory: dict[str, float] = {}
    started = time.perf_counter()

    for size in sizes:
        runs = runs_for(size)
        print(f"\n== {size:,} messages, fastest of {runs} interleaved runs ==", flush=True)
        part = in_fresh_process(
            __file__, "size", size=size, runs=runs, skipped=skipped, measure_memory=size == sizes[0]
        )
        for section in (load, dump, prune, load_gc):
            for name, (note, seconds) in part["sections"].get(section.title, {}).items():
                section.row(name, note).times[size] = seconds
        memory.update(part["memory"])
        corpus_notes.append(part["corpus_note"])

    appends, save_times = _bench_append(log_sizes, 5 if args.quick else 15)
    codec = _bench_codec(min(sizes), runs_for(min(sizes)), skipped, 100_000 if args.quick else 1_000_000)
    elapsed = time.perf_counter() - started

    report = _report(
        sizes,
        log_sizes,
        (load, dump, prune, load_gc),
        appends,
        save_times,
        memory,
        corpus_notes,
        skipped,
        elapsed,
    )
    report += codec
    print("\n" + report)
    if output:
        Path(output).write_text(report, encoding="utf-8")
        print(f"wrote {output}")
    return 0


def in_fresh_process(script: str, part: str, **arguments: Any) -> Any:
    """Run one part of a benchmark script in a fresh Python process and return what it measured.

    ``script`` runs ``answer_child`` when given ``--child``. Each part starts from the same state,
    as pyperf does with its worker processes: in one long process, what earlier parts allocated
    and freed changes later timings (allocator and page state), and not alike for every contender.
    """
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder, "result.json")
        request = json.dumps({"part": part, "arguments": arguments, "result": str(result)})
        subprocess.run([sys.executable, script, "--child", request], check=True)
        return json.loads(result.read_text(encoding="utf-8"))


def answer_child(request_text: str, parts: dict[str, Callable[..., Any]]) -> int:
    """The child side of ``in_fresh_process``: measure the part asked for, write the result as JSON."""
    request = json.loads(request_text)
    found = parts[request["part"]](**request["arguments"])
    Path(request["result"]).write_text(json.dumps(found), encoding="utf-8")
    return 0


def _measure_codec(
    name: str, corpus: str, size: int, runs: int, skipped: dict[str, str | None]
) -> tuple[str, list[str]]:
    """``_codec_row`` on a corpus made here, by kind (``project`` or ``short``) and size."""
    make = make_conversation if corpus == "project" else make_short_conversation
    return _codec_row(name, make(size), runs, skipped)


def _measure_size(
    size: int, runs: int, skipped: dict[str, str | None], measure_memory: bool
) -> dict[str, Any]:
    """``_bench_size`` as plain data: each section's rows (note and seconds), memory, corpus note."""
    sections = (
        Section("load", "orjson.loads"),
        Section("dump", "orjson.dumps"),
        Section("prune", "orjson.loads"),
        Section("load, GC on", "orjson.loads"),
    )
    memory: dict[str, float] = {}
    notes: list[str] = []
    _bench_size(size, runs, sections, memory, notes, skipped, measure_memory)
    return {
        "sections": {
            section.title: {row.name: (row.note, row.times[size]) for row in section.rows}
            for section in sections
        },
        "memory": memory,
        "corpus_note": notes[0],
    }


def race(
    actions: dict[str, Callable[[], Any]],
    runs: int,
    clock: Callable[[], float] = time.process_time,
    *,
    pause_gc: bool = True,
) -> dict[str, float]:
    """The fastest of ``runs`` runs of each action, the actions taking turns (round robin).

    Interleaved so that a busy moment of a shared machine hits every contender alike, after one
    untimed round, and the fastest run of each, the least disturbed one (a shared machine only
    ever adds time): the report is about the ratios between contenders.
    """
    for action in actions.values():  # a warm-up round, untimed: first-call costs are not the ratio
        median_time(action, 1, clock, pause_gc=pause_gc)
    best = dict.fromkeys(actions, float("inf"))
    for _ in range(runs):
        for name, action in actions.items():
            best[name] = min(best[name], median_time(action, 1, clock, pause_gc=pause_gc))
    return best


@dataclass
class _Contender:
    """One row of a section: the action timed and the note shown beside its name."""

    action: Callable[[], Any]
    note: str = ""


def _race_into(
    section: Section, size: int, contenders: dict[str, _Contender], runs: int, **options: Any
) -> None:
    """Race ``contenders`` (see ``race``) and record their times as rows of ``section``."""
    times = race({name: c.action for name, c in contenders.items()}, runs, **options)
    for name, seconds in times.items():
        section.row(name, contenders[name].note).times[size] = seconds
        print(f"  {section.title:11} {name:45} {_ms(seconds):>10}", flush=True)


def _bench_size(
    size: int,
    runs: int,
    sections: tuple[Section, Section, Section, Section],
    memory: dict[str, float],
    corpus_notes: list[str],
    skipped: dict[str, str | None],
    measure_memory: bool,
) -> None:
    """Load, dump and prune at one conversation size (and memory, if asked), each table one race."""
    load, dump, prune, load_gc = sections
    wire = make_conversation(size)
    data = om.dumps(om.loads(orjson.dumps(wire)))
    messages = om.loads(data)
    assert om.dumps(messages) == data
    corpus_notes.append(f"{size:,} messages: {len(data) / 1e6:.1f} MB compact JSON")
    loads, dumps, trims = _codec_contenders(wire, data, messages, skipped)
    _race_into(load, size, loads, runs)
    _race_into(dump, size, dumps, runs)
    _race_into(prune, size, {**_prune_contenders(data, messages, size), **trims}, runs)
    if measure_memory:
        # The same loads with the collector on, as users run them (``loads`` pauses it itself).
        _race_into(load_gc, size, loads, runs, pause_gc=False)
        for name, contender in loads.items():
            label = _MEMORY_LABELS.get(name)
            if label is not None:
                memory[label] = bytes_per_item(contender.action, size)


_MEMORY_LABELS = {
    "orjson.loads": "orjson.loads dicts",
    "orion_messages.loads": "orion_messages.loads",
    "msgspec typed decode": "msgspec Structs",
    "pydantic-ai validate_json": "pydantic-ai ModelMessages",
    "LangChain messages_from_dict": "LangChain messages",
}


def _codec_contenders(
    wire: list[dict[str, Any]], data: bytes, messages: list[om.Message], skipped: dict[str, str | None]
) -> tuple[dict[str, _Contender], dict[str, _Contender], dict[str, _Contender]]:
    """The load and the dump contenders on one corpus: orjson (the floor), ours, the peers; and
    LangChain's ``trim_messages`` for the prune table."""
    trims: dict[str, _Contender] = {}
    floor = peers.pydantic_floor()
    loads = {
        "orjson.loads": _Contender(partial(orjson.loads, data), "(dicts, no validation: the floor)"),
        "orion_messages.loads": _Contender(partial(om.loads, data)),
        FLOOR_LOAD: _Contender(
            partial(floor.validate_json, data), "(no model instances: the pydantic floor)"
        ),
    }
    dumps = {
        "orjson.dumps": _Contender(partial(orjson.dumps, wire), "(plain dicts: the floor)"),
        "orion_messages.dumps": _Contender(partial(om.dumps, messages)),
        FLOOR_DUMP: _Contender(partial(floor.dump_json, wire), "(plain dicts in: the pydantic floor)"),
    }
    if not skipped.get("msgspec"):
        decode, encode = peers.msgspec_codec()
        structs = decode(data)
        assert encode(structs) == data
        loads["msgspec typed decode"] = _Contender(partial(decode, data), "(Structs, same format)")
        dumps["msgspec encode"] = _Contender(partial(encode, structs))
    if not skipped.get("pydantic-ai"):
        pai = peers.pydantic_ai(wire)
        note = f"({len(pai.messages):,} ModelMessages)"
        loads["pydantic-ai validate_json"] = _Contender(partial(pai.load, pai.data), note)
        dumps["pydantic-ai dump_json"] = _Contender(partial(pai.dump, pai.messages))
    if not skipped.get("langchain-core"):
        lc = peers.langchain(wire)
        loads["LangChain messages_from_dict"] = _Contender(partial(lc.load, lc.data), "(after orjson.loads)")
        dumps["LangChain messages_to_dict"] = _Contender(partial(lc.dump, lc.messages), "(then orjson.dumps)")
        budget = CONFIG.available_tokens - CONFIG.reserved_tokens
        trims["LangChain trim_messages, chars/4 counter"] = _Contender(partial(lc.trim, lc.messages, budget))
    return loads, dumps, trims


def _prune_contenders(data: bytes, messages: list[om.Message], size: int) -> dict[str, _Contender]:
    """Our planner with the host's token counts (the default counter), with a chars/4 counter
    (cold and after one append), and a ``Conversation`` planning again; ``orjson.loads`` of the
    same conversation races beside them as the goal's reference."""
    warm = TokenCounter(_chars4)
    plan_prune(messages, CONFIG, count=warm)
    grown = [
        *messages,
        om.Message.user(f"msg-{size + 1}", "One more question.", timestamp=2_000_000_000_000),
    ]
    # What a host does before every generation: a Conversation keeps its layout and counts, so
    # planning again, or after one appended message, only looks at what is new.
    planned = om.Conversation(messages)
    planned.plan_prune(CONFIG)
    growing = om.Conversation(messages)
    growing.plan_prune(CONFIG)
    numbers = iter(range(size + 1, 10 * size + 10_000))

    def append_and_plan() -> None:
        number = next(numbers)
        growing.append(
            om.Message.assistant(f"msg-{number}", "One more line.", timestamp=2_000_000_000_000 + number)
        )
        growing.plan_prune(CONFIG)

    return {
        "orjson.loads": _Contender(partial(orjson.loads, data), "(reference for the goal)"),
        "plan_prune, token_count filled": _Contender(partial(plan_prune, messages, CONFIG)),
        "plan_prune, chars/4 counter, cold": _Contender(
            lambda: plan_prune(messages, CONFIG, count=TokenCounter(_chars4))
        ),
        "plan_prune again after one append (cached)": _Contender(
            partial(plan_prune, grown, CONFIG, count=warm)
        ),
        "Conversation.plan_prune, planned before": _Contender(partial(planned.plan_prune, CONFIG)),
        "Conversation: append one message, then plan": _Contender(append_and_plan),
    }


def _bench_append(
    log_sizes: Sequence[int], runs: int
) -> tuple[dict[str, dict[int, float]], dict[int, float]]:
    """``append_jsonl`` with N messages already in the log (fsync on and off), and ``save`` of N."""
    biggest = max(log_sizes)
    wire = make_conversation(min(biggest, 20_000), seed=1)
    lines = _log_lines(orjson.dumps(wire))
    base = om.loads(orjson.dumps(wire))
    extra = om.Message.user("msg-new", "Appended while the agent runs.", timestamp=2_000_000_000_000)
    appends: dict[str, dict[int, float]] = {"append_jsonl": {}, "append_jsonl, fsync=False": {}}
    save_times: dict[int, float] = {}
    print(f"\n== append, median of {runs} ==", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        logs = {count: Path(folder, f"log-{count}.jsonl") for count in log_sizes}
        for count, log in logs.items():
            repeats, rest = divmod(count, len(lines))
            with log.open("wb") as handle:
                for _ in range(repeats):
                    handle.write(b"\n".join(lines) + b"\n")
                handle.write(b"".join(line + b"\n" for line in lines[:rest]))
        os.sync()  # the timed appends must not pay for flushing the setup to disk
        # Interleaved, so that a slow moment of the disk hits every size alike.
        samples: dict[tuple[str, int], list[float]] = {}
        for _ in range(runs):
            for name, sync in (("append_jsonl", True), ("append_jsonl, fsync=False", False)):
                for count, log in logs.items():
                    start = time.perf_counter()
                    om.append_jsonl(log, extra, fsync=sync)
                    samples.setdefault((name, count), []).append(time.perf_counter() - start)
        for (name, count), times in samples.items():
            appends[name][count] = statistics.median(times)
            print(f"  {name:30} with {count:>7,} in the log {_ms(appends[name][count]):>10}", flush=True)
        for count, log in logs.items():
            os.unlink(log)
            conversation = (base * (count // len(base) + 1))[:count]
            target = Path(folder, f"conversation-{count}.json")
            save_times[count] = median_time(
                partial(om.save, target, conversation), max(1, runs // 2), time.perf_counter
            )
            print(f"  save of {count:,} messages {_ms(save_times[count]):>10}", flush=True)
    return appends, save_times


def _bench_codec(size: int, runs: int, skipped: dict[str, str | None], elements: int) -> str:
    """Load and dump on both corpora, peers in the same run, memory per message and peak memory.

    The project corpus at ``size`` messages and the short-message corpus at twice as many
    (about 280 bytes each, every one with a token_count), each ratio to orjson on the same bytes.
    """
    corpora = {
        f"project corpus, {size:,} messages": ("project", size),
        f"short messages, {2 * size:,} messages": ("short", 2 * size),
    }
    lines = ["", "## Codec on both corpora (issue 14 targets)", ""]
    lines.append(
        "| corpus | bytes/msg | loads x orjson | dumps x orjson | pydantic floor x orjson (load / dump) "
        "| x faster than pydantic-ai (load / dump) | x faster than LangChain (load / dump) "
        "| memory/msg: ours, orjson dicts |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    goals: list[str] = []
    print("\n== codec on both corpora ==", flush=True)
    for name, (corpus, count) in corpora.items():
        row, row_goals = in_fresh_process(
            __file__, "codec", name=name, corpus=corpus, size=count, runs=runs, skipped=skipped
        )
        lines.append(row)
        goals += row_goals
    lines += ["", *goals, "", *_peak_memory_table(elements)]
    return "\n".join(lines) + "\n"


def _codec_row(
    name: str, wire: list[dict[str, Any]], runs: int, skipped: dict[str, str | None]
) -> tuple[str, list[str]]:
    """One corpus: its table row and its goal lines, from one race of the loads and one of the dumps."""
    data = om.dumps(om.loads(orjson.dumps(wire)))
    messages = om.loads(data)
    count = len(messages)
    loads, dumps, _ = _codec_contenders(wire, data, messages, {**skipped, "msgspec": "not in this table"})
    load_times = race({key: c.action for key, c in loads.items()}, runs)
    dump_times = race({key: c.action for key, c in dumps.items()}, runs)
    ours_load, ours_dump = load_times["orion_messages.loads"], dump_times["orion_messages.dumps"]
    load = ours_load / load_times["orjson.loads"]
    dump = ours_dump / dump_times["orjson.dumps"]
    floor_load = load_times[FLOOR_LOAD] / load_times["orjson.loads"]
    floor_dump = dump_times[FLOOR_DUMP] / dump_times["orjson.dumps"]
    goals = [
        f"- {name}: loads within {GOAL_LOAD:g}x of orjson.loads: {load:.2f}x {_goal(load <= GOAL_LOAD)}"
        + _pydantic_floor(floor_load),
        f"- {name}: dumps within {GOAL_DUMP:g}x of orjson.dumps: {dump:.2f}x {_goal(dump <= GOAL_DUMP)}"
        + _pydantic_floor(floor_dump),
    ]
    cells = [f"{floor_load:.2f} / {floor_dump:.2f}"]
    for load_name, dump_name in (
        ("pydantic-ai validate_json", "pydantic-ai dump_json"),
        ("LangChain messages_from_dict", "LangChain messages_to_dict"),
    ):
        if load_name not in load_times:
            cells.append("skipped")
            continue
        their_load = load_times[load_name] / ours_load
        their_dump = dump_times[dump_name] / ours_dump
        cells.append(f"{their_load:.2f} / {their_dump:.2f}")
        goal_load = GOAL_PEERS_LOAD[load_name]
        goals.append(
            f"- {name}: load at least {goal_load:g}x faster than {load_name}: {their_load:.2f}x "
            f"{_goal(their_load >= goal_load)}; dump at least {GOAL_PEERS:g}x faster than {dump_name}: "
            f"{their_dump:.2f}x {_goal(their_dump >= GOAL_PEERS)}"
        )
    ours_mem = bytes_per_item(partial(om.loads, data), count)
    dict_mem = bytes_per_item(partial(orjson.loads, data), count)
    print(f"  {name}: loads {load:.2f}x, dumps {dump:.2f}x", flush=True)
    row = (
        f"| {name} | {len(data) / count:.0f} | {load:.2f} | {dump:.2f} | {' | '.join(cells)} "
        f"| {ours_mem:,.0f}, {dict_mem:,.0f} |"
    )
    return row, goals


# A document of one message whose arguments hold a big array or object, and the peak memory
# (max RSS growth of a fresh process) of reading it, against orjson.loads of the same bytes.
_PEAK_SCRIPT = """
import sys, orjson, orion_messages

def peak():  # VmHWM: the resident high-water mark, in KiB
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

data = open(sys.argv[1], "rb").read()
read = orion_messages.loads if sys.argv[2] == "ours" else orjson.loads
read(b"[]")  # the package imports its modules on first use: not part of the peak
before = peak()
held = read(data)
print(peak() - before)
"""


def _message_with_calls(calls: bytes) -> bytes:
    return b'[{"id":"m","role":"assistant","content":"","timestamp":1,"tool_calls":[' + calls + b"]}]"


def _one_call_message(arguments: bytes) -> bytes:
    return _message_with_calls(b'{"id":"c","name":"n","arguments":' + arguments + b"}")


def _peak_memory_table(elements: int) -> list[str]:
    keys = elements // 10
    arguments = {
        f"arguments: array of {elements:,} integers": b"["
        + b",".join(b"%d" % i for i in range(elements))
        + b"]",
        f"arguments: object of {keys:,} keys": b"{" + b",".join(b'"k%d":"v"' % i for i in range(keys)) + b"}",
    }
    documents = {name: _one_call_message(value) for name, value in arguments.items()}
    calls = b",".join(b'{"id":"c%d","name":"n","arguments":{"i":%d}}' % (i, i) for i in range(keys))
    documents[f"one message with {keys:,} tool calls"] = _message_with_calls(calls)
    lines = [
        "| peak memory while loading (max RSS growth, fresh process) | input | orion_messages.loads "
        "| orjson.loads | x orjson |",
        "|---|---:|---:|---:|---:|",
    ]
    with tempfile.TemporaryDirectory() as folder:
        for name, doc in documents.items():
            path = Path(folder, "doc.json")
            path.write_bytes(doc)
            peaks = {}
            for who in ("ours", "orjson"):
                out = subprocess.run(
                    [sys.executable, "-c", _PEAK_SCRIPT, str(path), who],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                peaks[who] = int(out.stdout) * 1024  # ru_maxrss is in KiB on Linux
            ratio = peaks["ours"] / peaks["orjson"] if peaks["orjson"] else float("nan")
            lines.append(
                f"| {name} | {len(doc) / 1e6:.1f} MB | {peaks['ours'] / 1e6:.1f} MB | {peaks['orjson'] / 1e6:.1f} MB "
                f"| {ratio:.2f} |"
            )
            print(
                f"  peak {name}: ours {peaks['ours'] / 1e6:.1f} MB, orjson {peaks['orjson'] / 1e6:.1f} MB",
                flush=True,
            )
    return lines


def _goal(met: bool) -> str:
    return "**MET**" if met else "**MISSED**"


def _ratio(time_taken: float | None, reference: float) -> float | None:
    return None if time_taken is None or not reference else time_taken / reference


def _pydantic_floor(ratio: float | None) -> str:
    """The pydantic floor's ratio to orjson in the same race, said after a load or dump goal."""
    if ratio is None:
        return ""
    return f" (pydantic-core on plain TypedDicts, no model instances, in the same race: {ratio:.2f}x)"


def _report(
    sizes: Sequence[int],
    log_sizes: Sequence[int],
    sections: tuple[Section, Section, Section, Section],
    appends: dict[str, dict[int, float]],
    save_times: dict[int, float],
    memory: dict[str, float],
    corpus_notes: list[str],
    skipped: dict[str, str | None],
    elapsed: float,
) -> str:
    load, dump, prune, load_gc = sections
    versions = _versions()
    uname = " ".join(platform.uname()).strip()
    lines = [
        "# Benchmark results",
        "",
        f"- Date: {datetime.now(timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; whole run {elapsed:.0f} s",
        f"- Machine: `{uname}`; CPU: {_cpu()}, {os.cpu_count()} cores",
        "- Versions: " + ", ".join(f"{name} {value}" for name, value in versions.items()),
        "- Corpus (`benchmarks/corpus.py`): "
        + "; ".join(corpus_notes)
        + ". A system prompt, then turns of a "
        "user message, 1-3 assistant replies calling 1-2 tools (arguments objects) each answered by a tool "
        "result (~8% errors), and a final answer; ten user messages pinned; token counts filled in.",
        "- Each size and each corpus is measured in a fresh process; each table is one race: its contenders "
        "take turns after an untimed round, and each time is the fastest of several runs "
        "(a shared machine only ever adds time), GC paused for every contender (the `load, GC on` table "
        "leaves it on, as users run them); CPU time of the process (wall time and medians for append and "
        "save, which wait on the disk); all ratios come from this one run.",
    ]
    for name, reason in skipped.items():
        if reason:
            lines.append(f"- Skipped {name}: {reason}")
    for section in (load, dump, prune):
        lines += ["", *_table(section, sizes)]
    if load_gc.rows:
        lines += ["", *_table(load_gc, sizes[:1])]
    lines += [
        "",
        "| append (log already holding N messages) | " + " | ".join(f"N = {n:,}" for n in log_sizes) + " |",
    ]
    lines.append("|---|" + "---:|" * len(log_sizes))
    for name, times in appends.items():
        lines.append(f"| {name} | " + " | ".join(_ms(times[n]) for n in log_sizes) + " |")
    lines.append(
        "| save (whole conversation of N, atomic, fsync) | "
        + " | ".join(_ms(save_times[n]) for n in log_sizes)
        + " |"
    )
    if memory:
        floor = memory["orjson.loads dicts"]
        lines += [
            "",
            "| memory per loaded message (tracemalloc, "
            + f"{sizes[0]:,} messages) | bytes | x orjson dicts |",
            "|---|---:|---:|",
        ]
        lines += [f"| {name} | {value:,.0f} | {value / floor:.2f} |" for name, value in memory.items()]

    lines += ["", "## Goals", "", *_goal_lines(sizes, log_sizes, sections, appends)]
    return "\n".join(lines) + "\n"


def _goal_lines(
    sizes: Sequence[int],
    log_sizes: Sequence[int],
    sections: tuple[Section, Section, Section, Section],
    appends: dict[str, dict[int, float]],
) -> list[str]:
    """The goal lines of the main tables: each goal, the ratio measured, met or missed."""
    load, dump, prune, _ = sections
    lines: list[str] = []
    for size in sizes:
        floor_load = load.time("orjson.loads", size) or 0.0
        ours_load = load.time("orion_messages.loads", size) or 0.0
        floor_dump = dump.time("orjson.dumps", size) or 0.0
        ours_dump = dump.time("orion_messages.dumps", size) or 0.0
        plan = prune.time("plan_prune, token_count filled", size) or 0.0
        plan_floor = prune.time("orjson.loads", size) or 0.0
        lines.append(f"At {size:,} messages:")
        lines.append(
            f"- load within {GOAL_LOAD:g}x of orjson.loads: {ours_load / floor_load:.2f}x {_goal(ours_load <= GOAL_LOAD * floor_load)}"
            + _pydantic_floor(_ratio(load.time(FLOOR_LOAD, size), floor_load))
        )
        lines.append(
            f"- dump within {GOAL_DUMP:g}x of orjson.dumps: {ours_dump / floor_dump:.2f}x {_goal(ours_dump <= GOAL_DUMP * floor_dump)}"
            + _pydantic_floor(_ratio(dump.time(FLOOR_DUMP, size), floor_dump))
        )
        for section, ours, peer_names in (
            (load, ours_load, ("pydantic-ai validate_json", "LangChain messages_from_dict")),
            (dump, ours_dump, ("pydantic-ai dump_json", "LangChain messages_to_dict")),
        ):
            for peer in peer_names:
                theirs = section.time(peer, size)
                if theirs is None:
                    lines.append(
                        f"- {section.title} at least {GOAL_PEERS:g}x faster than {peer}: not measured (skipped)"
                    )
                else:
                    goal = GOAL_PEERS_LOAD.get(peer, GOAL_PEERS)
                    lines.append(
                        f"- {section.title} at least {goal:g}x faster than {peer}: {theirs / ours:.2f}x "
                        f"{_goal(theirs >= goal * ours)}"
                    )
        lines.append(
            f"- a plan under {GOAL_PLAN:g}x orjson.loads (bare list, laid out from scratch): "
            f"{plan / plan_floor:.3f}x {_goal(plan <= GOAL_PLAN * plan_floor)}"
        )
        for name in (
            "Conversation.plan_prune, planned before",
            "Conversation: append one message, then plan",
        ):
            planned = prune.time(name, size) or 0.0
            lines.append(
                f"- a plan under {GOAL_PLAN:g}x orjson.loads ({name}): "
                f"{planned / plan_floor:.3f}x {_goal(planned <= GOAL_PLAN * plan_floor)}"
            )
    low, high = min(log_sizes), max(log_sizes)
    for name, times in appends.items():
        ratio = times[high] / times[low]
        lines.append(
            f"- {name} flat ({high:,} vs {low:,} in the log, at most {GOAL_FLAT:g}x): {ratio:.2f}x {_goal(ratio <= GOAL_FLAT)}"
        )
    return lines


if __name__ == "__main__":
    raise SystemExit(main())
