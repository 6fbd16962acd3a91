"""What every command of the command line shares: ``-`` for standard input or output, what a
file holds by its name, a fatal error, and standard input read only once."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from ._cli_exit import EXIT_INVALID, EXIT_USAGE

__all__ = ["STDIO", "Fatal", "Kind", "kind_by_name", "stdin_once"]

STDIO = "-"
"""The name that means standard input (for an input) or standard output (for an output)."""

Kind = Literal["json", "jsonl", "events"]
"""What a file holds: a conversation (JSON array), a JSON Lines log of messages, or agent events."""

# The one table from file name to format; everything else is refused (or, when walking a
# folder, skipped).
_SUFFIXES: dict[str, Literal["json", "jsonl"]] = {".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl"}


class Fatal(Exception):
    """A failure reported as one line (or a few) on stderr, with an exit status."""

    def __init__(self, *lines: str, code: int = EXIT_INVALID) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = lines
        self.code = code


def kind_by_name(name: str) -> Literal["json", "jsonl"] | None:
    """The format a file's name says (its extension, in any case), or None."""
    return _SUFFIXES.get(Path(name).suffix.lower())


def stdin_once(*inputs: tuple[str, str | None]) -> None:
    """Standard input can be read only once: two inputs naming ``-`` are a usage error, before
    anything is read. Each input is its option (or argument) and the value given, if any."""
    named = [option for option, value in inputs if value == STDIO]
    if len(named) > 1:
        both = "both" if len(named) == 2 else "all"
        names = ", ".join(named[:-1]) + f" and {named[-1]}"
        raise Fatal(
            f"error: {names} {both} name - (standard input), which can be read only once",
            code=EXIT_USAGE,
        )
