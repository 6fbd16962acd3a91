"""Planning a prune and saving a conversation again, against their floors, in one run.

    python benchmarks/pruning_bench.py            # 20,000 and 100,000 messages
    python benchmarks/pruning_bench.py --quick    # 2,000 messages, fewer repeats

Rows, on the project corpus (``corpus.py``), a corpus of short messages (~280 bytes, every one
with a ``token_count``) and the project corpus with its call ids reused every turn (``call_0``):

- ``plan_prune`` on a plain list, cold (laid out and counted from scratch), without a template and
  with the ChatML template (the default chars/4 text counter), as a multiple of ``orjson.loads`` of
  the same conversation's bytes; ``Conversation.plan_prune`` after one appended message, both ways,
  and after pinning or unpinning one message.
- ``Conversation.save`` after appending one message, and after setting the token count of every
  100th message, as a multiple of writing the same bytes to a new file, fsyncing it and renaming
  it over the old one (the floor of any atomic save); a full ``dumps`` beside it for scale.

Each corpus and size is measured in a fresh process (``run.in_fresh_process``). CPU time for
planning, raced against ``orjson.loads`` (``run.race``: interleaved after an untimed round, GC
paused, the fastest of several runs); wall time for saving, which waits on the disk, one save and
one raw write in turns, the ratio of their medians. Prints a Markdown table; nothing is asserted.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson
from corpus import make_conversation
from run import answer_child, in_fresh_process, median_time, race

import orion_messages as om
from orion_messages import storage

CONFIG = om.ContextConfig(max_context_tokens=131_072, max_response_tokens=4_096)
# The whole conversation fits with a template too: the plan's work is measured, not a refusal.
WIDE = om.ContextConfig(max_context_tokens=1 << 40, max_response_tokens=4_096)


def best_time(action: Callable[[], Any], runs: int, clock: Callable[[], float] = time.process_time) -> float:
    """The fastest of ``runs`` runs of ``action``, GC paused (``run.median_time`` with ``pick=min``)."""
    return median_time(action, runs, clock, pick=min)


def short_corpus(size: int) -> list[dict[str, Any]]:
    """``size`` short messages (~280 bytes), every one with a ``token_count``."""
    out: list[dict[str, Any]] = []
    for number in range(1, size + 1):
        role = ("user", "assistant")[number % 2]
        content = f"message {number}: " + "short words for a short message " * 7
        out.append(
            {
                "id": f"msg-{number}",
                "role": role,
                "content": content,
                "timestamp": 1781512345678 + number,
                "token_count": len(content) // 4,
            }
        )
    return out


def raw_atomic_write(path: Path, data: bytes) -> None:
    """The floor: write a new file, fsync it, rename it over ``path``."""
    temporary = path.with_name(path.name + ".raw-tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def bench_plan(messages: list[om.Message], data: bytes, runs: int) -> dict[str, float]:
    """Planning rows as multiples of ``orjson.loads``, raced against it (``run.race``)."""
    extra = om.Message.user("msg-extra", "one more question about the parser", timestamp=1)
    actions: dict[str, Callable[[], Any]] = {
        "orjson.loads": lambda: orjson.loads(data),
        "plan_prune, plain list, cold, no template": lambda: om.plan_prune(messages, CONFIG),
        "plan_prune, plain list, cold, chatml template": lambda: om.plan_prune(
            messages, WIDE, template="chatml"
        ),
    }
    choices: tuple[tuple[str, dict[str, Any]], ...] = (
        ("no template", {}),
        ("chatml template", {"template": "chatml"}),
    )
    for label, options in choices:
        conversation = om.Conversation(messages)
        conversation.plan_prune(WIDE, **options)

        def append_and_plan(conversation: om.Conversation = conversation, options: Any = options) -> None:
            conversation.append(extra.model_copy(update={"id": conversation.next_id()}))
            conversation.plan_prune(WIDE, **options)

        actions[f"Conversation: append one message, then plan, {label}"] = append_and_plan
    actions["Conversation: pin or unpin a message, then plan, no template"] = _pin_and_plan(messages)
    times = race(actions, runs)
    floor = times.pop("orjson.loads")
    return {name: value / floor for name, value in times.items()}


def _pin_and_plan(messages: list[om.Message]) -> Callable[[], None]:
    """Pin the middle message of a planned ``Conversation`` (unpin it, every other run), then plan."""
    conversation = om.Conversation(messages)
    conversation.plan_prune(WIDE)
    middle = messages[len(messages) // 2].id
    flips = itertools.cycle((True, False))

    def pin_and_plan() -> None:
        conversation.set_pinned(middle, next(flips))
        conversation.plan_prune(WIDE)

    return pin_and_plan


def bench_save(messages: list[om.Message], runs: int) -> dict[str, float]:
    """Saving rows as multiples of a raw write + fsync + rename of the same bytes.

    The two are measured in turns, one run of each at a time, so that both meet the same state
    of the disk and its cache; the ratio is of the medians.
    """
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "chat.json"
        conversation = om.Conversation(messages)
        conversation.save(path)
        extra = om.Message.assistant("msg-extra", "done: the parser accepts the file", timestamp=1)

        def append_and_save() -> None:
            conversation.append(extra.model_copy(update={"id": conversation.next_id()}))
            conversation.save(path)

        every_hundredth = [message.id for message in messages[::100]]

        def count_and_save() -> None:  # the host fills in token counts here and there, then saves
            for number, id in enumerate(every_hundredth):
                conversation.set_token_count(id, number + len(conversation))
            conversation.save(path)

        saves: list[float] = []
        counted: list[float] = []
        floors: list[float] = []
        atomics: list[float] = []
        for _ in range(runs):
            saves.append(best_time(append_and_save, 1, time.perf_counter))
            counted.append(best_time(count_and_save, 1, time.perf_counter))
            data = path.read_bytes()
            floors.append(best_time(partial(raw_atomic_write, path, data), 1, time.perf_counter))
            atomics.append(best_time(partial(storage._replace_atomically, path, data), 1, time.perf_counter))
        floor = statistics.median(floors)
        dumps = best_time(lambda: om.dumps(list(conversation)), max(3, runs // 3))
        assert path.read_bytes() == om.dumps(list(conversation))  # the same bytes as a full dumps
    return {
        "Conversation.save after one append": statistics.median(saves) / floor,
        "Conversation.save after a token count set on every 100th message": statistics.median(counted)
        / floor,
        "storage's atomic replace of the same bytes (no encoding), for scale": statistics.median(atomics)
        / floor,
        "full dumps (CPU), for scale": dumps / floor,
    }


def measure_corpus(corpus: str, size: int, runs: int) -> dict[str, float]:
    """Every row on one corpus at one size (run in a fresh process by ``main``)."""
    data = orjson.dumps(CORPORA[corpus](size))
    messages = om.loads(data)
    return {**bench_plan(messages, data, runs), **bench_save(messages, runs)}


def reused_ids_corpus(size: int) -> list[dict[str, Any]]:
    """The project corpus with each message's calls named ``call_0``, ``call_1``... (as vLLM and
    llama.cpp name them, every turn the same ids) and each result answering its call's new id."""
    raw = make_conversation(size)
    renamed: dict[str, str] = {}
    for message in raw:
        for number, call in enumerate(message.get("tool_calls", ())):
            renamed[call["id"]] = call["id"] = f"call_{number}"
        result = message.get("tool_result")
        if result:
            result["tool_call_id"] = renamed.get(result["tool_call_id"], result["tool_call_id"])
    return raw


CORPORA = {
    "project corpus": make_conversation,
    "short messages": short_corpus,
    "project corpus, call ids reused every turn": reused_ids_corpus,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the rows, each corpus and size in a fresh process, and print one Markdown table per corpus."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 messages, 3 runs")
    parser.add_argument("--sizes", type=int, nargs="+", help="conversation sizes")
    parser.add_argument("--runs", type=int, help="runs per measurement")
    parser.add_argument("--child", help=argparse.SUPPRESS)  # one corpus and size (in_fresh_process)
    args = parser.parse_args(argv)
    if args.child:
        return answer_child(args.child, {"corpus": measure_corpus})
    sizes = args.sizes or ([2_000] if args.quick else [20_000, 100_000])
    runs = args.runs or (3 if args.quick else 7)
    for corpus_name in CORPORA:
        table: dict[str, dict[int, float]] = {}
        for size in sizes:
            rows = in_fresh_process(__file__, "corpus", corpus=corpus_name, size=size, runs=runs)
            for name, ratio in rows.items():
                table.setdefault(name, {})[size] = ratio
        print(f"\n### {corpus_name}\n")
        print("| operation | " + " | ".join(f"{size:,} messages" for size in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for name, by_size in table.items():
            floor = "orjson.loads" if "plan" in name else "write+fsync+rename"
            cells = " | ".join(f"{by_size[size]:.2f}x" for size in sizes)
            print(f"| {name} (x {floor}) | {cells} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
