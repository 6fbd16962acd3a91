"""Turning pydantic's validation errors into plain problems (private)."""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from .errors import FormatError, Problem
from .models import I64_MAX, I64_MIN, U32_MAX

_JSON_POSITION = re.compile(
    r"^(?:Invalid JSON: )?(?P<what>.*?) at line (?P<line>\d+) column (?P<column>\d+)$"
)

# jiter's wording, said the way a user thinks of it.
_JSON_WORDING = {
    "expected value": "expected a JSON value",
    "trailing characters": "unexpected data after the end of the document",
    "EOF while parsing a value": "the document ends where a value should start",
    "EOF while parsing a list": "the document ends inside an array",
    "EOF while parsing an object": "the document ends inside an object",
    "EOF while parsing a string": "the document ends inside a string",
    "unexpected end of hex escape": "invalid \\u escape (a lone surrogate is not a character)",
    "lone leading surrogate in hex escape": "invalid \\u escape (a lone surrogate is not a character)",
    "invalid unicode code point": "invalid UTF-8 or an invalid \\u escape",
    "recursion limit exceeded": "nested too deeply",
    "key must be a string": "expected an object key (a string)",
    "expected `,` or `]`": "expected `,` or `]` in an array",
    "expected `,` or `}`": "expected `,` or `}` in an object",
    "expected `:`": "expected `:` after an object key",
}

_RANGES = {"timestamp": (I64_MIN, I64_MAX), "token_count": (0, U32_MAX)}

_ROLES = '"system", "user", "assistant", "tool_call" or "tool_result"'


def location(loc: tuple[int | str, ...]) -> str:
    """``(3, 'tool_result', 'is_error')`` -> ``[3].tool_result.is_error``."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(f".{item}" if parts else item)
    return "".join(parts)


def describe(value: Any) -> str:
    """A JSON value as a user would name it in a message."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {shown!r}".replace("'", '"') if '"' not in shown else f"the string {shown!r}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return f"a {type(value).__name__}"


def _expected(error: ErrorDetails) -> str:
    kind = error["type"]
    field = next((str(p) for p in reversed(error["loc"]) if isinstance(p, str)), "")
    if kind in ("string_type", "string_sub_type"):
        return "a string"
    if kind in ("int_type", "int_from_float", "int_parsing"):
        return "an integer"
    if kind in ("bool_type", "bool_parsing"):
        return "a boolean (true or false)"
    if kind == "enum":
        return f"a role, one of {_ROLES}"
    if kind in ("tuple_type", "list_type", "iterable_type"):
        return "a JSON array of messages" if not error["loc"] else "an array"
    if kind in ("model_type", "model_attributes_type", "dict_type", "dataclass_type"):
        return "an object"
    if kind in ("less_than_equal", "greater_than_equal", "less_than", "greater_than"):
        low, high = _RANGES.get(field, (None, None))
        if low is not None:
            return f"an integer from {low} to {high}"
    return ""


def problems_from(error: ValidationError) -> list[Problem]:
    """Every problem in a pydantic ``ValidationError``, said plainly."""
    problems: list[Problem] = []
    for detail in error.errors(include_url=False):
        kind = detail["type"]
        where = location(detail["loc"])
        if kind == "json_invalid":
            problems.append(_json_problem(detail["msg"]))
            continue
        if kind == "string_unicode" and not detail["loc"]:
            problems.append(Problem("", "the text holds an unpaired surrogate, which is not a character"))
            continue
        if kind == "missing":
            problems.append(Problem(where, "required key is missing"))
            continue
        if kind in ("non_finite_number", "json_value"):
            problems.append(Problem(where, detail["msg"]))
            continue
        expected = _expected(detail)
        found = describe(detail.get("input"))
        if expected:
            problems.append(Problem(where, f"expected {expected}, found {found}"))
        else:
            problems.append(Problem(where, f"{detail['msg']}, found {found}"))
    return problems


def _json_problem(message: str) -> Problem:
    match = _JSON_POSITION.match(message)
    if match is None:
        return Problem("", f"malformed JSON: {message.removeprefix('Invalid JSON: ')}")
    what = match["what"]
    return Problem(
        "",
        f"malformed JSON: {_JSON_WORDING.get(what, what)}",
        int(match["line"]),
        max(1, int(match["column"])),  # jiter says column 0 at the start of a line
    )


def format_error(error: ValidationError, *, source: str | None = None) -> FormatError:
    """A ``FormatError`` carrying every problem in ``error``."""
    return FormatError(problems_from(error), source=source)
