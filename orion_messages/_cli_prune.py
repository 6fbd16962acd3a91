"""``orion-messages prune``: plan orion-core's turn-aware pruning, write the pruned conversation,
and report the plan."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

# ``_cli_input.messages`` by its module: ``run`` names its list of messages ``messages``.
from . import _cli_input
from ._cli_base import STDIO, Fatal, stdin_once
from ._cli_exit import EXIT_INVALID, EXIT_OK
from ._cli_options import system_prompt_option, template_options, template_usage
from ._cli_output import STORE_TO, output_kind, store_messages, write
from ._cli_text import json_report, out, plural, print_stdout, printable
from ._store_url import is_store_url, masked_url
from .errors import ContextOverflowError
from .pruning import ContextConfig, PruneResult, prune

__all__ = ["run"]


def _no_room_hint(config: ContextConfig) -> tuple[str, ...]:
    """A second line when the reply's reserve leaves the prompt no room at all: orion-core's
    refusal then says "budget (0 tokens)", which does not say why."""
    if config.available_tokens > 0:
        return ()
    return (
        f"hint: --max-response-tokens {config.max_response_tokens} (orion-core's default is 2048) "
        f"leaves nothing of --max-context-tokens {config.max_context_tokens} for the prompt",
    )


def _span(indexes: range) -> str:
    """A range of message indexes, printed one way everywhere: ``[3:5]`` (half-open, a Python slice)."""
    return f"[{indexes.start}:{indexes.stop}]"


def _span_json(indexes: range) -> dict[str, int]:
    return {"start": indexes.start, "stop": indexes.stop}


def run(args: argparse.Namespace) -> int:
    """``prune``: plan, write the pruned conversation if asked, print the report; the exit status."""
    stdin_once(
        ("PATH", args.path),
        ("--template-file", args.template_file),
        system_prompt_option(args),
        ("--tools", args.tools),
    )
    template_usage(args)
    to_store = args.output is not None and is_store_url(args.output)
    if to_store and args.to is not None:
        args.parser.error(STORE_TO)
    if args.output is None and args.to is not None:
        args.parser.error("--to is for the pruned messages' format: it needs -o/--output")
    name, kind, messages = _cli_input.messages(args.path)
    target_kind = output_kind(args, default=kind) if args.output and not to_store else None
    config = ContextConfig(
        max_context_tokens=args.max_context_tokens,
        max_response_tokens=args.max_response_tokens,
        reserved_tokens=args.reserved_tokens,
    )
    try:
        result = prune(messages, config, **template_options(args))
    except ContextOverflowError as error:
        if args.format == "json":
            print_stdout(json_report(_refusal_json(name, error)))
            return EXIT_INVALID
        raise Fatal(f"error: cannot prune {name}: {error}", *_no_room_hint(config)) from None
    # The conversation once pruned, not what is sent: with a template the preamble stays.
    if to_store:
        store_messages(args.output, result.history)
    elif args.output and target_kind is not None:
        write(args.output, result.history, target_kind, pretty=False)
    shown = masked_url(args.output) if to_store else args.output  # a password is never printed
    report = _plan_json(name, shown, len(messages), result)
    to_stdout = args.output == STDIO
    if args.format == "json":
        print(json_report(report), file=sys.stderr if to_stdout else sys.stdout)
    else:
        emit = _err_plain if to_stdout else out
        _print_plan(report, verbose=args.verbose, reserved=args.reserved_tokens, emit=emit)
    return EXIT_OK


def _plan_json(name: str, output: str | None, messages: int, result: PruneResult) -> dict[str, Any]:
    """``prune``'s report of a plan: ``output`` is where the pruned conversation went, as shown."""
    plan = result.plan
    return {
        "path": name,
        "refused": False,
        "output": output,
        "messages": messages,
        "turns": len(plan.kept) + len(plan.dropped),
        "budget": plan.budget,
        "preamble": _span_json(plan.preamble),
        "preamble_tokens": plan.preamble_tokens,
        "preamble_kept": plan.preamble_kept,
        "fixed_tokens": plan.fixed_tokens,
        "kept": [_span_json(turn) for turn in plan.kept],
        "dropped": [_span_json(turn) for turn in plan.dropped],
        "kept_messages": plan.kept_count,
        "dropped_messages": plan.dropped_count,
        "kept_tokens": plan.kept_tokens,
        "dropped_tokens": plan.dropped_tokens,
        "written_messages": len(result.history) if output else 0,
    }


def _refusal_json(name: str, error: ContextOverflowError) -> dict[str, Any]:
    return {
        "path": name,
        "refused": True,
        "reason": error.reason,
        "tokens": error.tokens,
        "budget": error.budget,
        "turn": None if error.turn is None else _span_json(error.turn),
        "message": str(error),
    }


def _err_plain(line: str) -> None:
    print(printable(line), file=sys.stderr)


def _fixed_parts(report: dict[str, Any], reserved: int) -> str:
    """What the fixed overhead is made of: with a template the system block and the assistant
    prefix, without one the preamble; plus ``--reserved-tokens`` in both cases."""
    if report["preamble_kept"]:  # no template: reserved tokens plus the preamble, which is kept
        parts = [("the preamble", report["preamble_tokens"]), ("--reserved-tokens", reserved)]
    else:
        block = report["fixed_tokens"] - reserved
        parts = [("the system block and assistant prefix", block), ("--reserved-tokens", reserved)]
    counted = [(name, tokens) for name, tokens in parts if tokens]
    if len(counted) == 1:
        return counted[0][0]
    return " + ".join(f"{name} {tokens:,}" for name, tokens in counted)


def _print_plan(report: dict[str, Any], *, verbose: bool, reserved: int, emit: Callable[[str], None]) -> None:
    kept = [range(turn["start"], turn["stop"]) for turn in report["kept"]]
    dropped = [range(turn["start"], turn["stop"]) for turn in report["dropped"]]
    preamble = range(report["preamble"]["start"], report["preamble"]["stop"])
    emit(f"{report['path']}: {plural(report['messages'], 'message')} in {plural(report['turns'], 'turn')}")
    emit(f"  budget    {plural(report['budget'], 'token')} for messages")
    for label, turns, count, tokens in (
        ("kept", kept, report["kept_messages"], report["kept_tokens"]),
        ("dropped", dropped, report["dropped_messages"], report["dropped_tokens"]),
    ):
        emit(
            f"  {label:<8}  {plural(len(turns), 'turn')}, {plural(count, 'message')}, {plural(tokens, 'token')}"
        )
    if len(preamble):
        fate = "kept" if report["preamble_kept"] else "left out, as orion-core does"
        emit(f"  preamble  {_span(preamble)} {fate}, {plural(report['preamble_tokens'], 'token')} (before the first user message)")  # fmt: skip
    if report["fixed_tokens"]:
        emit(f"  fixed     {plural(report['fixed_tokens'], 'token')} ({_fixed_parts(report, reserved)})")
    if verbose:
        for label, turns in (("kept", kept), ("dropped", dropped)):
            emit(f"  {label} turns: " + (", ".join(_span(turn) for turn in turns) or "none"))
    if report["output"] == STDIO:
        emit(f"wrote {plural(report['written_messages'], 'message')} to standard output")
    elif report["output"]:
        emit(f"wrote {plural(report['written_messages'], 'message')} to {report['output']}")
    elif verbose:
        emit("(a plan only: pass -o OUT to write the pruned conversation)")
    else:
        emit("(a plan only: pass -o OUT to write the pruned conversation, --verbose for every turn)")
