"""How the command line ends: its name, its exit statuses and its one-line messages on stderr.

Kept apart from ``cli`` so that the entry point (``__main__``) can end a run interrupted while
``cli`` is still loading the same way ``cli`` ends one interrupted later.
"""

from __future__ import annotations

import io
import os
import sys

from ._text import printable

__all__ = [
    "EXIT_CLOSED_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_USAGE",
    "PROG",
    "err",
    "ready_streams",
]

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
EXIT_CLOSED_PIPE = 141
"""Exit status: standard output was closed before everything was written (a reader such as
``head`` stopped reading): 128 + SIGPIPE, the status a shell shows for a tool that signal ended,
so that a closed pipe is never taken for an invalid input."""


def err(line: str) -> None:
    """Print ``PROG: line`` on stderr, escaped (``printable``): the text may quote the data."""
    print(printable(f"{PROG}: {line}"), file=sys.stderr)


def ready_streams() -> None:
    """Make the standard streams safe to print to, before anything is printed.

    - Started with stderr closed (``2>&-``), Python sets ``sys.stderr`` to None, and
      ``print(file=None)`` writes to stdout: messages would land in the data of ``convert -``.
      They go to the null device instead, which also takes descriptor 2, so that no file the
      command opens can get it.
    - Text that the locale's encoding cannot hold (``PYTHONIOENCODING=ascii``, ``LC_ALL=POSIX``)
      is written as backslash escapes on stdout, as Python already writes it on stderr, not
      raised as ``UnicodeEncodeError``.
    """
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives as long as the process
    if isinstance(sys.stdout, io.TextIOWrapper) and sys.stdout.errors == "strict":
        sys.stdout.reconfigure(errors="backslashreplace")
