"""``python -m orion_messages`` and the ``orion-messages`` command: the command line."""

from __future__ import annotations

from ._cli_exit import EXIT_INTERRUPTED, err

__all__ = ["main"]


def main() -> int:
    """Run the command line on ``sys.argv[1:]`` and return its exit status.

    The command line is imported here, not at the top: its modules build their models as they
    load (a few tenths of a second), and Ctrl-C in that time ends the command as Ctrl-C while it
    runs does, with ``interrupted`` and exit status 130, not with a traceback.
    """
    try:
        from . import cli
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    return cli.main()


if __name__ == "__main__":
    raise SystemExit(main())
