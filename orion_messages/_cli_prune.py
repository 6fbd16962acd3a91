"""``orion-messages prune``: plan orion-core's turn-aware pruning, write the pruned conversation,
and report the plan."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from ._cli_base import STDIO
from ._cli_base import Fatal as _Fatal
from ._cli_base import stdin_once as _stdin_once
from ._cli_exit import EXIT_INVALID, EXIT_OK
from ._cli_input import messages as _messages
from ._cli_options import system_prompt_option as _system_prompt_option
from ._cli_options import template_options as _template_options
from ._cli_options import template_usage as _template_usage
from ._cli_output import STORE_TO as _STORE_TO
from ._cli_output import output_kind as _output_kind
from ._cli_output import store_messages as _store_messages
from ._cli_output import write as _write
from ._cli_text import json_report as _json_report
from ._cli_text import out as _out
from ._cli_text import plural as _plural
from ._cli_text import print_stdout as _print_stdout
from ._cli_text import printable as _printable
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
    _stdin_once(
        ("PATH", args.path),
        ("--template-file", args.template_file),
        _system_prompt_option(args),
        ("--tools", args.tools),
    )
    _template_usage(args)
    to_store = args.output is not None and is_store_url(args.output)
    if to_store and args.to is not None:
        args.parser.error(_STORE_TO)
    if args.output is None and args.to is not None:
        args.parser.error("--to is for the pruned messages' format: it needs -o/--output")
    name, kind, messages = _messages(args.path)
    target_kind = _output_kind(args, default=kind) if args.output and not to_store else None
    config = ContextConfig(
        max_context_tokens=args.max_context_tokens,
        max_response_tokens=args.max_response_tokens,
        reserved_tokens=args.reserved_tokens,
    )
    try:
        result = prune(messages, config, **_template_options(args))
    except ContextOverflowError as error:
        if args.format == "json":
            _print_stdout(_json_report(_refusal_json(name, error)))
            return EXIT_INVALID
        raise _Fatal(f"error: cannot prune {name}: {error}", *_no_room_hint(config)) from None
    # The conversation once pruned, not what is sent: with a template the preamble stays.
    if to_store:
        _store_messages(args.output, result.history)
    elif args.output and target_kind is not None:
        _write(args.output, result.history, target_kind, pretty=False)
    shown = masked_url(args.output) if to_store else args.output  # a password is never printed
    report = _plan_json(name, shown, len(messages), result)
    to_stdout = args.output == STDIO
    if args.format == "json":
        print(_json_report(report), file=sys.stderr if to_stdout else sys.stdout)
    else:
        emit = _err_plain if to_stdout else _out
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
    print(_printable(line), file=sys.stderr)


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
    emit(f"{report['path']}: {_plural(report['messages'], 'message')} in {_plural(report['turns'], 'turn')}")
    emit(f"  budget    {report['budget']:,} tokens for messages")
    for label, turns, count, tokens in (
        ("kept", kept, report["kept_messages"], report["kept_tokens"]),
        ("dropped", dropped, report["dropped_messages"], report["dropped_tokens"]),
    ):
        emit(f"  {label:<8}  {_plural(len(turns), 'turn')}, {_plural(count, 'message')}, {tokens:,} tokens")
    if len(preamble):
        fate = "kept" if report["preamble_kept"] else "left out, as orion-core does"
        emit(f"  preamble  {_span(preamble)} {fate}, {report['preamble_tokens']:,} tokens (before the first user message)")  # fmt: skip
    if report["fixed_tokens"]:
        emit(f"  fixed     {report['fixed_tokens']:,} tokens ({_fixed_parts(report, reserved)})")
    if verbose:
        for label, turns in (("kept", kept), ("dropped", dropped)):
            emit(f"  {label} turns: " + (", ".join(_span(turn) for turn in turns) or "none"))
    if report["output"] == STDIO:
        emit(f"wrote {_plural(report['written_messages'], 'message')} to standard output")
    elif report["output"]:
        emit(f"wrote {_plural(report['written_messages'], 'message')} to {report['output']}")
    elif verbose:
        emit("(a plan only: pass -o OUT to write the pruned conversation)")
    else:
        emit("(a plan only: pass -o OUT to write the pruned conversation, --verbose for every turn)")
