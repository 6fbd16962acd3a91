"""Tool-call arguments as a JSON string, for formats that carry them that way (private).

OpenAI sends ``arguments`` as a string of JSON; orion-core keeps a JSON value. Encoding uses the
wire module's writer, so the string holds exactly the bytes orion-core would write; decoding
uses the same parser and value rules as ``loads``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import ValidationError

from ._json_rules import ANY_JSON, duplicate_key_paths, minus_zero_as_float
from ._problems import blamed_path, problem_from
from ._text import location, quoted
from .models import ToolCall
from .wire import dump_json


def encode_arguments(value: Any) -> str:
    """The arguments as compact JSON text, spelled as orion-core's serde writes them.

    Raises:
        FormatError: the value cannot be written back losslessly (NaN set without validation).
    """
    return dump_json(ANY_JSON, value).decode("utf-8")


class Decoded(NamedTuple):
    """Arguments read from JSON text, and what the reading could not keep."""

    value: Any
    """The JSON value, or the text itself when it is not valid JSON."""
    invalid: str | None
    """Why the text is kept as a string (not valid JSON), or None."""
    repeated: str | None
    """Which keys repeat in one object (the last value kept, the others dropped), or None."""


def decode_arguments(text: str) -> Decoded:
    """The JSON value a string holds, or the string itself and why it is not one.

    The rules are those of ``loads``: no NaN or infinity, at most ``VALUE_DEPTH_MAX`` levels of
    nesting, integers serde_json reads, and ``-0`` read as serde_json reads it (``-0.0``). A key
    repeated in one object keeps its last value, as serde_json does; the others are lost, so
    ``repeated`` says which (looked for only when a quick check finds a key may repeat).
    """
    try:
        value = ANY_JSON.validate_json(minus_zero_as_float(text))
        ToolCall(id="", name="", arguments=value)
    except ValidationError as error:
        detail = error.errors(include_url=False)[0]
        inside = location(blamed_path(detail)[len(detail["loc"]) :])  # the bad value's path in the text
        at = f" at {inside}" if inside else ""
        return Decoded(text, f"not valid JSON{at} ({problem_from(detail).message}); kept as a string", None)
    return Decoded(value, None, _repeated_keys(text))


def _repeated_keys(text: str) -> str | None:
    """Why values of ``text`` are lost: each key repeated in one object, at its object's path."""
    # Two keys need two colons; else orjson's quick check, and a scan only when it finds a repeat.
    found = duplicate_key_paths(text) if text.count(":") > 1 else []
    if not found:
        return None
    places = list(
        dict.fromkeys(quoted(key) + (f" (in {location(path)})" if path else "") for path, key in found)
    )
    keys = ", ".join(places[:_REPEATS_SHOWN])
    if len(places) > _REPEATS_SHOWN:
        keys += f" and {len(places) - _REPEATS_SHOWN:,} more"
    noun = "key" if len(places) == 1 else "keys"
    return (
        f"{noun} {keys} repeated in one object: the last value kept (as serde_json keeps it), the others lost"
    )


_REPEATS_SHOWN = 5
"""How many repeated keys a loss names before it counts the rest."""
