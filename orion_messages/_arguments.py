"""Tool-call arguments as a JSON string, for formats that carry them that way (private).

OpenAI sends ``arguments`` as a string of JSON; orion-core keeps a JSON value. Encoding uses the
wire module's writer, so the string holds exactly the bytes orion-core would write; decoding
uses the same parser and value rules as ``loads``.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ._json_rules import ANY_JSON, minus_zero_as_float
from ._problems import blamed_path, problem_from
from ._text import location
from .models import ToolCall
from .wire import dump_json


def encode_arguments(value: Any) -> str:
    """The arguments as compact JSON text, spelled as orion-core's serde writes them.

    Raises:
        FormatError: the value cannot be written back losslessly (NaN set without validation).
    """
    return dump_json(ANY_JSON, value).decode("utf-8")


def decode_arguments(text: str) -> tuple[Any, str | None]:
    """The JSON value a string holds, or the string itself and why it is not one.

    The rules are those of ``loads``: no NaN or infinity, at most ``VALUE_DEPTH_MAX`` levels of
    nesting, integers serde_json reads, and ``-0`` read as serde_json reads it (``-0.0``).
    """
    try:
        value = ANY_JSON.validate_json(minus_zero_as_float(text))
        ToolCall(id="", name="", arguments=value)
    except ValidationError as error:
        detail = error.errors(include_url=False)[0]
        inside = location(blamed_path(detail)[len(detail["loc"]) :])  # the bad value's path in the text
        at = f" at {inside}" if inside else ""
        return text, f"not valid JSON{at} ({problem_from(detail).message}); kept as a string"
    return value, None
