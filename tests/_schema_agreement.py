"""What the schema-agreement tests share: the fixture cases, the library's verdict, and the
explicit list of what JSON Schema cannot express.

A *case* is one JSON document from ``fixtures/``: a whole ``*.json`` file (a conversation), or
one non-blank line of a ``*.jsonl`` file (an agent event under ``fixtures/events/``, a message
elsewhere). Files are discovered when the tests run, so fixtures added later are checked too.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from orion_messages import FormatError, loads, loads_message
from orion_messages.events import parse_event

from .conftest import FIXTURES

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"
"""The checked-in schema files."""

SCHEMA_FILE = {
    "conversation": "conversation.schema.json",
    "message": "message.schema.json",
    "event": "agent-event.schema.json",
}
"""Which schema file judges which kind of case."""

MAX_FILE_BYTES = 5_000_000
"""Larger fixtures (benchmark-sized) are left out: validating them in Python would be slow."""

CANNOT_EXPRESS = {
    "duplicate-keys": (
        "an object with a key twice: JSON Schema sees the parsed object, in which one value "
        "has replaced the other, so it cannot tell what serde's 'duplicate field' rule sees"
    ),
    "lone-surrogate": (
        "a \\ud800-style escape with no partner: JSON Schema's strings are any sequence of "
        "code points, and a validator's parser may accept the escape; orion-core's does not"
    ),
    "non-finite-number": (
        "a number too large for a double (1e400): it is a valid JSON number, which JSON Schema's "
        "'number' accepts; serde and the library refuse it"
    ),
    "nesting-depth": (
        "nesting deeper than the parser allows: JSON Schema has no depth limit; serde_json "
        "(128 levels) and the library's parser refuse deeper documents"
    ),
    "minus-zero": (
        "-0 where an integer is required: JSON Schema compares numbers by value, so -0 is the "
        "integer 0 to it; serde_json reads -0 as the float -0.0 and refuses it there"
    ),
    "integral-float": (
        "a whole number written with a fraction or an exponent (1.0, 1e3) where an integer is "
        "required: JSON Schema compares numbers by value, so 1.0 is an integer to it; serde "
        "refuses it for an integer field"
    ),
}
"""Every reason a well-formed document can get a different verdict from JSON Schema and from
the library, with the reason. A disagreement no reason explains fails the test."""

NOT_WELL_FORMED = (
    "not UTF-8, a byte order mark, a syntax error, trailing data, NaN or Infinity literals, or "
    "nesting too deep for Python's json module: JSON Schema only judges parsed JSON documents"
)
"""Why some fixtures are not compared at all."""


@dataclass(frozen=True)
class Case:
    """One JSON document from the fixtures."""

    path: Path
    """The fixture file."""
    line: int | None
    """The 1-based line, for a JSON Lines record; ``None`` for a whole file."""
    kind: str
    """``conversation``, ``message`` or ``event``."""
    data: bytes
    """The document's bytes."""

    @property
    def name(self) -> str:
        """The file relative to ``fixtures/``, with the line for a JSON Lines record."""
        relative = self.path.relative_to(FIXTURES).as_posix()
        return relative if self.line is None else f"{relative}:{self.line}"


@dataclass(frozen=True)
class Parsed:
    """A document parsed by the standard library, strictly (RFC 8259)."""

    document: Any
    """The parsed value (the last value wins for a duplicated key, as in most parsers)."""
    duplicate_keys: bool
    """Some object has a key twice."""


def discover() -> tuple[list[Case], list[Path]]:
    """Every case under ``fixtures/``, and the files left out for their size."""
    cases: list[Case] = []
    too_big: list[Path] = []
    for path in sorted(FIXTURES.rglob("*")):
        if path.suffix not in (".json", ".jsonl") or not path.is_file():
            continue
        if path.stat().st_size > MAX_FILE_BYTES:
            too_big.append(path)
            continue
        data = path.read_bytes()
        if path.suffix == ".json":
            cases.append(Case(path, None, "conversation", data))
            continue
        kind = "event" if "events" in path.relative_to(FIXTURES).parts else "message"
        for number, raw in enumerate(data.split(b"\n"), 1):
            line = raw.rstrip(b"\r")
            if line.strip():
                cases.append(Case(path, number, kind, line))
    return cases, too_big


def library_verdict(case: Case) -> tuple[bool, str]:
    """Whether the library accepts the case (``loads(strict=False)`` and friends), and why not."""
    read: Callable[[bytes], object] = {
        "conversation": lambda data: loads(data, strict=False),
        "message": lambda data: loads_message(data),
        "event": lambda data: parse_event(data),
    }[case.kind]
    try:
        read(case.data)
    except FormatError as error:
        return False, str(error)
    return True, ""


class _NotWellFormed(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NotWellFormed(f"{name} is not JSON")


def parse_strictly(data: bytes) -> Parsed | None:
    """The document as a JSON Schema validator sees it, or ``None`` when it is not well-formed JSON."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text.startswith("\ufeff"):
        return None
    duplicates = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal duplicates
        result = dict(items)
        duplicates = duplicates or len(result) != len(items)
        return result

    try:
        document = json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=pairs)
    except (ValueError, RecursionError):
        return None
    return Parsed(document, duplicates)


def load_schema(kind: str) -> dict[str, Any]:
    """The checked-in schema that judges ``kind``."""
    schema: dict[str, Any] = json.loads((SCHEMAS / SCHEMA_FILE[kind]).read_text(encoding="utf-8"))
    return schema


_LITERAL_INTEGERS = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
    "integer", lambda _checker, value: isinstance(value, int) and not isinstance(value, bool)
)
LiteralIntegerValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator, type_checker=_LITERAL_INTEGERS
)
"""Draft 2020-12 with one change: only a number written without fraction or exponent is an integer."""


def _walk(value: Any) -> Any:
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _has_lone_surrogate(value: Any) -> bool:
    return any(
        isinstance(item, str) and any(0xD800 <= ord(char) <= 0xDFFF for char in item) for item in _walk(value)
    )


def has_non_finite(value: Any) -> bool:
    """Some number in the document is infinite (a literal too large for a double, such as 1e400)."""
    return any(isinstance(item, float) and not math.isfinite(item) for item in _walk(value))


def has_integer_beyond_double(value: Any) -> bool:
    """Some integer in the document cannot be held exactly by a JavaScript number (beyond 2^53)."""
    return any(
        isinstance(item, int) and not isinstance(item, bool) and abs(item) > 2**53 for item in _walk(value)
    )


def explanations(parsed: Parsed, schema: dict[str, Any], library_ok: bool, library_error: str) -> list[str]:
    """The ``CANNOT_EXPRESS`` reasons that apply to a document, each checked, not assumed.

    ``integral-float`` applies only when changing the schema's notion of an integer to the
    literal one makes its verdict equal the library's; ``nesting-depth`` only when the library
    said the document is nested too deeply.
    """
    reasons = []
    if parsed.duplicate_keys:
        reasons.append("duplicate-keys")
    if _has_lone_surrogate(parsed.document):
        reasons.append("lone-surrogate")
    if has_non_finite(parsed.document):
        reasons.append("non-finite-number")
    if "nested too deeply" in library_error or "levels deep" in library_error:
        reasons.append("nesting-depth")
    if "found the number -0.0" in library_error:
        reasons.append("minus-zero")
    if LiteralIntegerValidator(schema).is_valid(parsed.document) == library_ok:
        reasons.append("integral-float")
    return reasons
