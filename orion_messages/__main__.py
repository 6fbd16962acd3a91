"""``python -m orion_messages``: the ``orion-messages`` command line."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
