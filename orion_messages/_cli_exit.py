"""How the command line ends: its name, its exit statuses and its one-line messages on stderr.

Kept apart from ``cli`` so that the entry point (``__main__``) can end a run interrupted while
``cli`` is still loading the same way ``cli`` ends one interrupted later.
"""

from __future__ import annotations

import sys

from ._text import printable

__all__ = ["EXIT_INTERRUPTED", "EXIT_INVALID", "EXIT_OK", "EXIT_USAGE", "PROG", "err"]

PROG = "orion-messages"
"""The command's name, as installed by the console script."""

EXIT_OK = 0
"""Exit status: everything checked is valid, or the command did what was asked."""
EXIT_INVALID = 1
"""Exit status: an input is invalid, missing or unreadable, or an operation was refused."""
EXIT_USAGE = 2
"""Exit status: the command line itself is wrong."""
EXIT_INTERRUPTED = 130
"""Exit status: interrupted with Ctrl-C."""


def err(line: str) -> None:
    """Print ``PROG: line`` on stderr, escaped (``printable``): the text may quote the data."""
    print(printable(f"{PROG}: {line}"), file=sys.stderr)
