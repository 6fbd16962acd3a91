"""Turning pydantic's validation errors into plain problems (private)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import annotated_types
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from ._json_rules import UNKNOWN_VALUE_ERROR, value_problem
from ._text import kind_of, location, quoted
from .errors import MAX_REPORTED_PROBLEMS, FormatError, Problem
from .models import Message, Role

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


def integer_ranges(model: type[BaseModel]) -> dict[str, tuple[int, int]]:
    """The ``ge``/``le`` bounds of each range-checked field of ``model``, read from the model."""
    ranges: dict[str, tuple[int, int]] = {}
    for name, field in model.model_fields.items():
        low = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
        high = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
        if isinstance(low, int) and isinstance(high, int):
            ranges[name] = (low, high)
    return ranges


_RANGES = integer_ranges(Message)

_ROLE_NAMES = [f'"{role.value}"' for role in Role]
_ROLES = ", ".join(_ROLE_NAMES[:-1]) + " or " + _ROLE_NAMES[-1]


def describe(value: Any) -> str:
    """A JSON value as a user would name it in a message."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {quoted(value)}"
    if isinstance(value, (int, float)):
        return f"the number {quoted(value)}"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    return kind_of(value)


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


def _serde_form(kind: str, found: Any) -> str:
    """A note for the two forms serde's derive reads and orion-core never writes."""
    if kind in ("model_type", "model_attributes_type") and isinstance(found, list):
        return " (a struct written as an array of its fields, which serde reads, is refused: orion-core never writes one)"
    if kind == "enum" and isinstance(found, dict):
        return ' (a role written as an object such as {"user":null}, which serde reads, is refused: orion-core never writes one)'
    return ""


def problems_from(error: ValidationError) -> Iterator[Problem]:
    """Every problem in a pydantic ``ValidationError``, said plainly, in order."""
    for detail in error.errors(include_url=False):
        yield problem_from(detail)


def problem_from(detail: ErrorDetails) -> Problem:
    """One pydantic error detail, said plainly."""
    kind = detail["type"]
    where = location(detail["loc"])
    if kind == "json_invalid":
        return _json_problem(detail["msg"])
    if kind == "string_unicode" and not detail["loc"]:
        return Problem("", "the text holds an unpaired surrogate, which is not a character")
    if kind == "missing":
        return Problem(where, "required key is missing")
    if kind in ("json_value", UNKNOWN_VALUE_ERROR):
        found = _value_fault(detail)
        if found is None:
            return Problem(where, detail["msg"])
        return Problem(location((*detail["loc"], *found[0])), found[1])
    expected = _expected(detail)
    found_text = describe(detail.get("input"))
    if expected:
        return Problem(
            where, f"expected {expected}{_serde_form(kind, detail.get('input'))}, found {found_text}"
        )
    return Problem(where, f"{detail['msg']}, found {found_text}")


def blamed_path(detail: ErrorDetails) -> tuple[int | str, ...]:
    """Where the value ``detail`` refuses is: its ``loc``, down to the first bad value inside
    when it refuses a free JSON value (``arguments``, an unknown key's value) as a whole, as
    ``problem_from`` places it."""
    found = _value_fault(detail)
    return (*detail["loc"], *found[0]) if found else tuple(detail["loc"])


def _value_fault(detail: ErrorDetails) -> tuple[tuple[int | str, ...], str] | None:
    """The path (inside the value) and the why of the first bad value of a free JSON value that
    ``detail`` refuses; None for any other error."""
    kind = detail["type"]
    if kind not in ("json_value", UNKNOWN_VALUE_ERROR):
        return None
    return value_problem(detail.get("input"), unknown=kind == UNKNOWN_VALUE_ERROR)


def _json_problem(message: str) -> Problem:
    match = _JSON_POSITION.match(message)
    if match is None:
        return Problem("", f"malformed JSON: {message.removeprefix('Invalid JSON: ')}")
    what = match["what"]
    return Problem(
        "",
        f"malformed JSON: {_JSON_WORDING.get(what, what)}",
        int(match["line"]),
        int(match["column"]),  # 0 for the end of a document just after a newline, as serde_json says
    )


ProblemFrom = Callable[[ErrorDetails], Problem]
"""How one pydantic error detail is said plainly (``problem_from``, or a reader's own wording)."""


def format_error(details: list[ErrorDetails], problem: ProblemFrom) -> FormatError:
    """A ``FormatError`` for every problem in pydantic's error ``details``, each said by ``problem``.

    Only the problems the error keeps (``MAX_REPORTED_PROBLEMS``) are put in words; the rest are
    counted: a hostile document can hold millions, and each costs microseconds to describe.
    """
    kept = details[:MAX_REPORTED_PROBLEMS]
    return FormatError(map(problem, kept), omitted=len(details) - len(kept))
