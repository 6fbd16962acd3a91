"""What the command line loads: each command the modules it uses, and no others.

The store (asyncio, sqlite3), the conversions, the schemas and the event models build their
models or start their machinery as they load, tenths of a second in all; ``--help``, or
``validate`` and ``stats`` of a conversation file, need none of them. Each run is a fresh
interpreter whose ``sys.modules`` is read once the command has run: no time is measured.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import FIXTURES

ROOT = Path(__file__).resolve().parent.parent

# Written out by hand: the modules a command that needs them loads, and no other command.
STORE = [
    "asyncio",
    "orion_messages._store_cli",
    "orion_messages._store_ops",
    "orion_messages._store_schema",
    "orion_messages._store_sql",
    "orion_messages._store_sqlite",
    "orion_messages.store",
    "sqlite3",
]
CONVERSIONS = [
    "orion_messages._cli_convert",
    "orion_messages._conversion_input",
    "orion_messages.anthropic_messages",
    "orion_messages.chat_template_dicts",
    "orion_messages.conversions",
    "orion_messages.openai_chat",
    "orion_messages.orion_backend",
]
EVENTS = ["orion_messages.events"]
SCHEMAS = ["orion_messages.schema"]
WATCHED = [*STORE, "orion_messages._store_postgres", "psycopg", *CONVERSIONS, *EVENTS, *SCHEMAS]

_SCRIPT = f"""
import json, sys
from orion_messages.cli import main
status = main(sys.argv[1:]) if len(sys.argv) > 1 else None
print(json.dumps([status, sorted(name for name in {WATCHED} if name in sys.modules)]))
"""

CONVERSATION = str(FIXTURES / "own" / "conversation.json")
LOG = str(FIXTURES / "own" / "conversation.jsonl")
EVENT_STREAM = str(FIXTURES / "events" / "edge-values.jsonl")


def _loaded(*argv: str) -> tuple[int | None, list[str]]:
    """Run the command line on ``argv`` in a new interpreter (none: only import it); its exit
    status and which of ``WATCHED`` it loaded."""
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *argv],
        cwd=ROOT,  # the package of this checkout
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    status, loaded = json.loads(result.stdout.splitlines()[-1])
    return status, loaded


def test_importing_the_command_line_loads_none_of_them() -> None:
    assert _loaded() == (None, [])


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["validate", "--help"],
        ["validate", CONVERSATION],
        ["validate", LOG],
        ["stats", CONVERSATION],
        ["stats", LOG],
        ["prune", CONVERSATION, "--max-context-tokens", "100000"],
        ["convert", CONVERSATION, "-", "--to", "jsonl"],
    ],
)
def test_a_command_on_conversation_files_loads_none_of_them(argv: list[str]) -> None:
    assert _loaded(*argv) == (0, [])


@pytest.mark.parametrize(
    ("argv", "status", "loaded"),
    [
        (["validate", EVENT_STREAM], 0, EVENTS),
        (["convert", CONVERSATION, "-", "--to", "openai"], 0, CONVERSIONS),
        (["schema"], 0, [*EVENTS, *SCHEMAS]),  # the schemas describe the events too
        (["list", "sqlite:///missing.db"], 1, STORE),  # refused: nothing is created
    ],
)
def test_a_command_loads_what_it_needs(argv: list[str], status: int, loaded: list[str]) -> None:
    assert _loaded(*argv) == (status, sorted(loaded))
