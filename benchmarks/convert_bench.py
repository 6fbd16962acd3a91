"""Conversion speed: orion-messages' converters against LangChain's on the same conversations.

    python -m pip install -e ".[bench]" && python benchmarks/convert_bench.py

On the benchmark corpus (``corpus.py``) at 1,000 and 10,000 messages:

- to OpenAI: ``to_openai(messages)`` (loss report included) against LangChain's
  ``convert_to_openai_messages`` on the same conversation as LangChain messages (``peers.py``);
- from OpenAI: ``from_openai(dicts)`` against LangChain's ``convert_to_messages`` on the same
  OpenAI dicts;
- our other targets (Anthropic, chat-template dicts, orion-core's chat backend) alone, for scale.

Every time is the median of several runs, CPU time, the collector paused for every contender
(``run.median_time``). Prints a Markdown table; ``--sizes`` and ``--runs`` adjust it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import peers
from corpus import make_conversation
from run import median_time

import orion_messages as om


def _rows(size: int, runs: int) -> list[tuple[str, float, float | None]]:
    """(operation, our seconds, LangChain's seconds or None) at ``size`` messages."""
    wire = make_conversation(size)
    messages = om.loads(om.dumps(om.Message.model_validate(m) for m in wire))
    openai = om.to_openai(messages, orphans="keep").value
    lc_messages: Any = None
    to_lc: Callable[[Any], Any] | None = None
    from_lc: Callable[[Any], Any] | None = None
    if peers.available()["langchain-core"] is None:  # None: installed
        from langchain_core.messages import convert_to_messages, convert_to_openai_messages

        lc_messages = peers.langchain(wire).messages
        to_lc, from_lc = convert_to_openai_messages, convert_to_messages

    def timed(action: Callable[[], Any]) -> float:
        return median_time(action, runs)

    rows: list[tuple[str, float, float | None]] = [
        (
            "to OpenAI",
            timed(lambda: om.to_openai(messages, orphans="keep")),
            None if to_lc is None else timed(lambda: to_lc(lc_messages)),
        ),
        (
            "from OpenAI",
            timed(lambda: om.from_openai(openai, timestamp=0)),
            None if from_lc is None else timed(lambda: from_lc(openai)),
        ),
        ("to Anthropic", timed(lambda: om.to_anthropic(messages, orphans="keep")), None),
        ("to chat-template dicts (metadata)", timed(lambda: om.to_chat_template(messages)), None),
        ("to orion-core's chat backend", timed(lambda: om.to_orion_backend(messages)), None),
    ]
    return rows


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:,.2f} ms"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated message counts")
    parser.add_argument("--runs", type=int, default=7, help="runs per measurement (the median is kept)")
    args = parser.parse_args(argv)
    skipped = peers.available()["langchain-core"]
    print(f"orion-messages {om.__version__}, langchain-core {skipped or version('langchain-core')}")
    print()
    print("| operation | messages | orion-messages | LangChain | LangChain / ours |")
    print("|---|---:|---:|---:|---:|")
    for size in (int(part) for part in args.sizes.split(",")):
        for name, ours, theirs in _rows(size, args.runs):
            ratio = "-" if theirs is None else f"{theirs / ours:.1f}x"
            print(f"| {name} | {size:,} | {_ms(ours)} | {_ms(theirs)} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
