"""The options of ``orion-messages convert --to/--from FORMAT``, and which apply where.

Apart from ``_cli_convert``, which runs a conversion: the command line builds its parser, and
checks the options, with these alone, and loads the converters (their models) only for a
conversion (``wants_conversion``).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ._cli_text import whole_number

__all__ = ["FOREIGN", "FORMATS", "ORION", "add_arguments", "inapplicable_option", "wants_conversion"]

ORION = "orion"
FOREIGN = ("openai", "anthropic", "chat-template", "orion-backend")
"""The other formats ``--to`` and ``--from`` take (``orion-backend`` is a target only)."""
FORMATS = ("json", "jsonl", *FOREIGN)
"""What ``--to`` takes: orion-core's own formats (a JSON array, JSON Lines) and the others."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--to``, ``--from``, ``--strict`` and the conversion options to ``convert``."""
    group = parser.add_argument_group("format conversion (OpenAI, Anthropic, chat templates)")
    group.add_argument(
        "--to",
        choices=FORMATS,
        default=None,
        help="the format of OUT: json or jsonl (orion-core's; default: by OUT's extension, "
        "required for -) or another format",
    )
    group.add_argument(
        "--from",
        dest="from_format",
        choices=(ORION, *FOREIGN[:-1]),
        default=ORION,
        help="the format of IN (default: orion)",
    )
    group.add_argument(
        "--strict", action="store_true", help="refuse a conversion that loses anything; write nothing"
    )
    group.add_argument(
        "--accept",
        action="append",
        metavar="FIELDS",
        help="with --strict, comma-separated fields whose loss is fine (e.g. id,timestamp; "
        "message: a message lost whole; a key as the report prints it, commas and all: '[\"a,b\"]'); "
        "may be given more than once",
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
        default=None,
        help="chat-template tool-call arguments as a JSON value (default) or as JSON text",
    )
    group.add_argument(
        "--no-metadata", action="store_true", help="chat-template: leave out the 'orion' metadata key"
    )
    _add_system_prompt(group)
    group.add_argument(
        "--timestamp",
        type=_milliseconds,
        default=None,
        metavar="MS",
        help="--from: the messages' timestamp (default: now)",
    )


def _milliseconds(text: str) -> int:
    try:
        return whole_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of milliseconds, found {text!r}") from None


def _add_system_prompt(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--system-prompt-file",
        default=None,
        metavar="FILE",
        help="orion-backend: the agent's system prompt, read from FILE (or - for stdin) as is",
    )
    group.add_argument(
        "--system-prompt",
        default=None,
        metavar="TEXT",
        help="deprecated, goes in the next release: the system prompt itself; use --system-prompt-file",
    )


def wants_conversion(args: argparse.Namespace) -> bool:
    """True when ``--to`` or ``--from`` names another format than orion-core's own."""
    return bool(args.to in FOREIGN or args.from_format != ORION)


_FOREIGN_TARGETS = "--to openai, anthropic or chat-template"

# Each conversion option: its attribute, whether it applies to the command, and where it does.
_APPLIES: tuple[tuple[str, str, Callable[[argparse.Namespace], bool], str], ...] = (
    ("--system-prompt-file", "system_prompt_file", lambda a: a.to == "orion-backend", "--to orion-backend"),
    ("--system-prompt", "system_prompt", lambda a: a.to == "orion-backend", "--to orion-backend"),
    ("--arguments", "arguments", lambda a: a.to == "chat-template", "--to chat-template"),
    ("--no-metadata", "no_metadata", lambda a: a.to == "chat-template", "--to chat-template"),
    ("--orphans", "orphans", lambda a: a.to in FOREIGN[:-1], _FOREIGN_TARGETS),
    (
        "--timestamp",
        "timestamp",
        lambda a: a.from_format != ORION,
        "--from openai, anthropic or chat-template",
    ),
    ("--strict", "strict", wants_conversion, "a conversion to or from another format"),
    ("--accept", "accept", lambda a: a.strict, "--strict"),
)


def inapplicable_option(args: argparse.Namespace) -> str | None:
    """The usage error for a conversion option given where it has no effect, or None.

    An option that would be ignored is refused, as ``prune`` refuses ``--tools`` without
    ``--template``: a user who gave it expects it to do something.
    """
    for option, name, applies, where in _APPLIES:
        if getattr(args, name) not in (None, False, "") and not applies(args):
            return f"{option} applies only to {where}"
    return None
