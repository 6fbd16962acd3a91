"""``python -m orion_messages`` and the ``orion-messages`` command: the command line."""

from __future__ import annotations

from collections.abc import Callable

from ._cli_exit import EXIT_INTERRUPTED, err, ready_streams
from ._cli_lazy import interrupts_held

__all__ = ["main"]


def main() -> int:
    """Run the command line on ``sys.argv[1:]`` and return its exit status.

    The command line is imported here, not at the top: its modules build their models as they
    load (a few tenths of a second), and Ctrl-C in that time ends the command as Ctrl-C while it
    runs does, with ``interrupted`` and exit status 130, not with a traceback.
    """
    ready_streams()
    try:
        run = _import_cli()
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    return run()


def _import_cli() -> Callable[[], int]:
    """The command line's ``main``, imported with Ctrl-C held back until it is loaded (where the
    platform can hold a signal back), as every module a command loads later is (``_cli_lazy``)."""
    with interrupts_held():
        from .cli import main as run
    return run


if __name__ == "__main__":
    raise SystemExit(main())
