"""``orion-messages convert --to/--from FORMAT``: conversions between formats on the command line.

``cli.py`` adds these options to its ``convert`` command (``add_arguments``) and hands over to
``run`` when a format other than orion-core's own is asked for (``wants_conversion``). The loss
report goes to stdout, every line escaped (never raw data from the files); ``--strict`` refuses
a lossy conversion and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .anthropic_messages import from_anthropic, to_anthropic
from .chat_template_dicts import from_chat_template, to_chat_template
from .conversions import ConversionResult, Loss
from .errors import ConversionError, FormatError, Problem
from .models import Message
from .openai_chat import from_openai, to_openai
from .orion_backend import to_orion_backend
from .storage import _replace_atomically, load, read_jsonl, save, save_jsonl

__all__ = ["FORMATS", "add_arguments", "run", "wants_conversion"]

ORION = "orion"
FORMATS = (ORION, "openai", "anthropic", "chat-template", "orion-backend")
"""The format names ``--to`` and ``--from`` take (``orion-backend`` is a target only)."""

_SHOWN = 20
_EXIT_OK, _EXIT_INVALID, _EXIT_USAGE = 0, 1, 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--to``, ``--from``, ``--strict`` and the conversion options to ``convert``."""
    group = parser.add_argument_group("format conversion (OpenAI, Anthropic, chat templates)")
    group.add_argument("--to", choices=FORMATS, default=ORION, help="the format to write (default: orion)")
    group.add_argument(
        "--from",
        dest="from_format",
        choices=FORMATS[:-1],
        default=ORION,
        help="the format of IN (default: orion)",
    )
    group.add_argument(
        "--strict", action="store_true", help="refuse a conversion that loses anything; write nothing"
    )
    group.add_argument(
        "--accept",
        default="",
        metavar="FIELDS",
        help="with --strict, comma-separated fields whose loss is fine (e.g. id,timestamp)",
    )
    group.add_argument(
        "--orphans",
        choices=("error", "drop", "synthesize", "keep"),
        default=None,
        help="calls without results and results without calls: refuse (default for openai and "
        "anthropic), drop them, add error results, or keep them (default for chat-template)",
    )
    group.add_argument(
        "--arguments",
        choices=("object", "string"),
        default="object",
        help="chat-template tool-call arguments as a JSON value or as JSON text",
    )
    group.add_argument(
        "--no-metadata", action="store_true", help="chat-template: leave out the 'orion' metadata key"
    )
    group.add_argument(
        "--system-prompt", default="", metavar="TEXT", help="orion-backend: the agent's system prompt"
    )
    group.add_argument(
        "--timestamp",
        type=int,
        default=None,
        metavar="MS",
        help="--from: the messages' timestamp (default: now)",
    )


def wants_conversion(args: argparse.Namespace) -> bool:
    """True when ``--to`` or ``--from`` names another format than orion-core's own."""
    return bool(args.to != ORION or args.from_format != ORION)


def run(args: argparse.Namespace) -> int:
    """Convert ``args.input`` to ``args.output`` between formats, print the report, return the exit status."""
    if args.to != ORION and args.from_format != ORION:
        return _usage("convert between two foreign formats in two steps, through orion")
    try:
        if args.from_format == ORION:
            result: ConversionResult[Any] = _export(args, _read_orion(Path(args.input)))
        else:
            result = _import(args, _read_foreign(Path(args.input)))
    except (FormatError, ConversionError) as error:
        for problem in error.problems[:_SHOWN]:
            _err(f"{args.input}: {_escaped(str(problem))}")
        if len(error.problems) > _SHOWN:
            _err(f"{args.input}: ... and {len(error.problems) - _SHOWN} more problems")
        return _EXIT_INVALID
    except _Refused as refused:
        _err(str(refused))
        return refused.code
    try:
        _write(Path(args.output), result.value, pretty=args.pretty)
    except FormatError as error:
        _err(f"error: {args.output}: {_escaped(str(error))}")
        return _EXIT_INVALID
    except OSError as error:
        _err(f"error: {args.output}: cannot write: {error.strerror or error}")
        return _EXIT_INVALID
    _print_report(args, result)
    return _EXIT_OK


class _Refused(Exception):
    def __init__(self, text: str, code: int = _EXIT_INVALID) -> None:
        super().__init__(text)
        self.code = code


def _usage(text: str) -> int:
    _err(f"error: {text}")
    return _EXIT_USAGE


def _err(line: str) -> None:
    print(f"orion-messages: {line}", file=sys.stderr)


def _options(args: argparse.Namespace) -> dict[str, Any]:
    return {"strict": args.strict, "accept": [f.strip() for f in args.accept.split(",") if f.strip()]}


def _export(args: argparse.Namespace, messages: list[Message]) -> ConversionResult[Any]:
    options = _options(args)
    if args.to == "orion-backend":
        return to_orion_backend(messages, system_prompt=args.system_prompt, **options)
    if args.to == "chat-template":
        return to_chat_template(
            messages,
            arguments=args.arguments,
            metadata=not args.no_metadata,
            orphans=args.orphans or "keep",
            **options,
        )
    convert: Callable[..., ConversionResult[Any]] = to_openai if args.to == "openai" else to_anthropic
    return convert(messages, orphans=args.orphans or "error", **options)


def _import(args: argparse.Namespace, data: Any) -> ConversionResult[list[Message]]:
    options = {**_options(args), "timestamp": args.timestamp}
    if args.from_format == "anthropic":
        if isinstance(data, dict):
            return from_anthropic(data.get("messages", []), system=data.get("system"), **options)
        return from_anthropic(_list(data), **options)
    messages = _list(data.get("messages") if isinstance(data, dict) else data)
    if args.from_format == "openai":
        return from_openai(messages, **options)
    return from_chat_template(messages, **options)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ConversionError(
            [Problem("", 'expected a JSON array of messages (or an object with "messages")')]
        )
    return value


def _read_orion(path: Path) -> list[Message]:
    if not path.is_file():
        raise _Refused(f"error: {path}: no such file")
    return read_jsonl(path) if path.suffix.lower() in (".jsonl", ".ndjson") else load(path)


def _read_foreign(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except FileNotFoundError:
        raise _Refused(f"error: {path}: no such file") from None
    except OSError as error:
        raise _Refused(f"error: {path}: cannot read it: {error.strerror or error}") from None
    except ValueError as error:
        raise _Refused(f"error: {path}: not JSON: {_escaped(str(error))}") from None


def _write(path: Path, value: Any, *, pretty: bool) -> None:
    if isinstance(value, list) and all(isinstance(item, Message) for item in value):
        if path.suffix.lower() in (".jsonl", ".ndjson"):
            save_jsonl(path, value)
        else:
            save(path, value, indent=2 if pretty else None)
        return
    text = json.dumps(value, ensure_ascii=False, indent=2 if pretty else None) + "\n"
    _replace_atomically(path, text.encode("utf-8"))


_INDEX = re.compile(r"\[\d+\]")


def _escaped(text: str) -> str:
    """``text`` with every character that is not printable written as an escape."""
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _print_report(args: argparse.Namespace, result: ConversionResult[Any]) -> None:
    target = args.to if args.from_format == ORION else ORION
    count = len(result.value["messages"]) if isinstance(result.value, dict) else len(result.value)
    print(f"wrote {count:,} message{'' if count == 1 else 's'} to {_escaped(args.output)} ({target})")
    if result.lossless:
        print("nothing lost")
        return
    print(f"lost or changed ({len(result.losses):,}):")
    print(
        "  by field: "
        + ", ".join(f"{_escaped(field)} {number:,}" for field, number in _by_field(result.losses))
    )
    for loss in result.losses[:_SHOWN]:
        print(f"  {_escaped(str(loss))}")
    if len(result.losses) > _SHOWN:
        print(f"  ... and {len(result.losses) - _SHOWN:,} more")


def _by_field(losses: Sequence[Loss]) -> list[tuple[str, int]]:
    """How many losses each field has, list indexes folded (``tool_calls[].id``)."""
    counts = Counter(_INDEX.sub("[]", loss.field) or "(whole message)" for loss in losses)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))
