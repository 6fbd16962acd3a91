"""The rules for free JSON values, in one place (private).

A free JSON value is what orion-core keeps as a ``serde_json::Value``: a tool call's
``arguments``, ``tool_exec_start.args``, and the value of every key a model does not know.
The rules, each with a margin below the readers' own limits so that whatever is accepted and
written here is read back here and by orion-core:

- no NaN or infinity (JSON has neither; jiter turns ``1e400`` into infinity);
- integers that serde_json reads (below ``SERDE_INT_LIMIT``, about 1.8e308) in a known value;
  in an unknown key's value, which serde skips unread, of at most ``INT_DIGITS_MAX`` digits
  (jiter and Python stop at 4300);
- nesting of at most ``VALUE_DEPTH_MAX`` levels inside the value, so that a value inside the
  deepest place the format puts one (an ``agent_end`` event: event, messages, message,
  tool_calls, call) stays within serde_json's limit of 128 levels for the whole document, and
  far from jiter's (about 200);
- only ``dict`` with string keys, ``list``, ``str``, ``int``, ``float``, ``bool`` and ``None``.

The rules are checked inside pydantic-core (``JSON_VALUE``, ``UNKNOWN_VALUE``), so loading costs no Python work per
value; ``value_problem`` walks a value in Python on the error path only, to say what and where.
This module also holds the linear scanners the codec needs on rare paths: finding a literal
outside strings (``NaN``, ``-0``), duplicate keys, and the values jiter cannot read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import orjson
from pydantic import GetCoreSchemaHandler, TypeAdapter
from pydantic_core import core_schema

from ._text import kind_of

__all__ = [
    "ANY_JSON",
    "JSON_TYPES",
    "JSON_WHITESPACE",
    "INT_DIGITS_MAX",
    "JSON_VALUE",
    "PARSER_INT_DIGITS_MAX",
    "SERDE_DEPTH_LIMIT",
    "SERDE_INT_LIMIT",
    "UNKNOWN_VALUE",
    "UNKNOWN_VALUE_ERROR",
    "VALUE_DEPTH_MAX",
    "LoneSurrogate",
    "Unreadable",
    "copied",
    "duplicate_key_paths",
    "first_deeper_than",
    "flatten_deeper_than",
    "line_and_column",
    "lone_surrogates",
    "may_repeat_keys",
    "scan_repeated_keys",
    "SyntaxFault",
    "surrogate_at",
    "syntax_fault",
    "unreadable_spans",
    "unreadable_tokens",
    "readable_copy",
    "open_paths",
    "top_level_keys",
    "first_non_finite_literal",
    "minus_zero_as_float",
    "without_exponent_signs",
    "value_problem",
    "value_problems",
]

SERDE_DEPTH_LIMIT = 128
"""serde_json's recursion limit: a document nested deeper does not load in orion-core."""

VALUE_DEPTH_MAX = 120
"""How many levels a free JSON value may nest (a scalar is level 0, ``[1]`` level 1).

The deepest place the format holds such a value is 5 levels down (an ``agent_end`` event's
message's tool call), and 5 + 120 stays below ``SERDE_DEPTH_LIMIT``.
"""

INT_DIGITS_MAX = 4000
"""The most digits an integer in an unknown key's value may have (jiter reads up to 4300)."""

SERDE_INT_LIMIT = 17_976_931_348_623_156_225 * 10**289
"""The smallest integer, in magnitude, that serde_json refuses ("number out of range").

serde_json reads an integer beyond 64 bits as a double, the digits that fit a ``u64`` times a
power of ten for the rest, and refuses a result that is infinite: that first happens here, just
above ``1.7976931348623156e308``. A known free value (``arguments``, ``args``) and anything in an
event must stay below it, or orion-core cannot read the file; an unknown key's value in a message
is skipped unread by serde, so there the limit is ``INT_DIGITS_MAX``.
"""

_UNKNOWN_INT_LIMIT = 10**INT_DIGITS_MAX

_JSON_VALUE_ERROR = "json_value"
"""The error type of a known free value that breaks the rules."""
UNKNOWN_VALUE_ERROR = "unknown_json_value"
"""The error type of an unknown key's value that breaks the rules (it may be left out)."""


JSON_WHITESPACE = " \t\n\r"
"""The characters JSON takes for whitespace between tokens (RFC 8259), and no others."""

ANY_JSON: TypeAdapter[Any] = TypeAdapter(Any)
"""Any JSON value, taken as it is: for reading or writing a whole value without the rules (built
once, here, for every module that needs one)."""


def _rules(integers: str) -> str:
    return (
        f"expected a JSON value: no NaN or infinity, integers {integers}, "
        f"nested at most {VALUE_DEPTH_MAX} levels, object keys strings"
    )


# Keys are written through pydantic-core's inference, which refuses a lone surrogate (the str
# key serializer would write U+FFFD in its place, changing the key).
_KEY = core_schema.str_schema(strict=True, serialization=core_schema.simple_ser_schema("any"))


def _value_schema(kind: _ValueKind) -> core_schema.CoreSchema:
    """A JSON value nested at most ``VALUE_DEPTH_MAX`` levels deep, checked entirely in pydantic-core.

    Unrolled rather than recursive: pydantic-core has no depth limit to set, and an unrolled
    schema makes the limit part of the type. Each level is a definition that refers to the one
    below (a tree would double at every level). A failed choice costs an error object, so the
    common cases come first: objects and arrays at the top (an ``arguments`` value is nearly
    always an object), strings below. The strict choices are disjoint, so the order changes no
    result: strict types keep ``true``, ``1`` and ``1.0`` apart. A call's own ``strict=False``
    (pydantic's per-call override) makes every choice lax, where bool takes ``1`` and int takes
    ``1.0``: the numbers are one smart union, in which the exact type still wins.

    The levels below the top are built once per kind (``_levels``) and shared by every model;
    the outermost level and the schema holding them are new for each call, since pydantic
    writes a host's own annotations (``PlainSerializer``, ``WithJsonSchema``) into the schema
    a type gives it.
    """
    # The outermost level is the type itself, not a definition: its JSON Schema is any JSON
    # value, and the levels below, which nothing then refers to, are left out of a host's
    # schema (a model's ``model_json_schema``, FastAPI's OpenAPI document).
    top = _union([*_containers(kind, VALUE_DEPTH_MAX), *_scalars(kind)], kind, None)
    return core_schema.definitions_schema(top, list(_levels(kind)))


# Built once per kind: anew for each model that holds a free value (17 in the events alone), the
# 120 levels made importing the events a fifth slower. Only the outermost level is reachable by
# a host's annotations; pydantic copies a definition before changing it (tests/test_json_rules.py
# checks that building models, JSON Schemas and annotated host models leaves the levels as built).
@cache
def _levels(kind: _ValueKind) -> tuple[core_schema.CoreSchema, ...]:
    """The definitions of the levels below the top, 0 (scalars only) to ``VALUE_DEPTH_MAX - 1``."""
    scalars = _scalars(kind)
    definitions: list[core_schema.CoreSchema] = [_union(scalars, kind, 0)]
    for level in range(1, VALUE_DEPTH_MAX):
        definitions.append(_union([scalars[0], *_containers(kind, level), *scalars[1:]], kind, level))
    return tuple(definitions)


def _scalars(kind: _ValueKind) -> list[core_schema.CoreSchema]:
    """A string, a number (bool, int within ``kind``'s limit, finite float) or null."""
    numbers = core_schema.union_schema(
        [
            core_schema.bool_schema(strict=True),  # before int: the writer takes True for an int
            core_schema.int_schema(strict=True, gt=-kind.int_limit, lt=kind.int_limit),
            core_schema.float_schema(strict=True, allow_inf_nan=False),
        ],
        mode="smart",
    )
    return [core_schema.str_schema(strict=True), numbers, core_schema.none_schema()]


def _containers(kind: _ValueKind, level: int) -> list[core_schema.CoreSchema]:
    """An object and an array at ``level``, holding values of the level below."""
    inner = core_schema.definition_reference_schema(f"{kind.ref}-{level - 1}")
    return [core_schema.dict_schema(_KEY, inner, strict=True), core_schema.list_schema(inner, strict=True)]


JSON_TYPES = ("object", "array", "string", "number", "boolean", "null")
"""JSON Schema's names of the six JSON types: a free value is any of them, whatever its depth."""


def _any_json_schema(schema: Any, handler: Any) -> dict[str, Any]:
    return {"type": list(JSON_TYPES)}


def _union(choices: list[Any], kind: _ValueKind, level: int | None) -> core_schema.CoreSchema:
    """One level's choices (``level``), or the outermost level's (None: no definition of its own)."""
    return core_schema.union_schema(
        choices,
        ref=None if level is None else f"{kind.ref}-{level}",
        metadata={"pydantic_js_functions": [_any_json_schema]} if level is None else None,
        mode="left_to_right",
        custom_error_type=kind.error,
        custom_error_message=_rules(kind.integers),
        # Written by type inference: what validation let in is plain JSON data, and inference
        # is several times faster than trying each choice of the union.
        serialization=core_schema.simple_ser_schema("any"),
    )


class _ValueKind(NamedTuple):
    """The rules of one kind of free JSON value (private)."""

    int_limit: int
    """Integers must be smaller than this in magnitude."""
    integers: str
    """The integer rule, in words, after "integers"."""
    error: str
    """The pydantic-core error type of a value that breaks the rules."""
    ref: str
    """The prefix of the schema's definitions."""


_KNOWN = _ValueKind(
    SERDE_INT_LIMIT, "that serde_json reads (below about 1.8e308)", _JSON_VALUE_ERROR, "orion-json-value"
)
_UNKNOWN = _ValueKind(
    _UNKNOWN_INT_LIMIT, f"of at most {INT_DIGITS_MAX} digits", UNKNOWN_VALUE_ERROR, "orion-json-value-unknown"
)


class _JsonValue:
    """The type pydantic sees for a known free JSON value (type checkers see ``Any``)."""

    kind: ClassVar[_ValueKind] = _KNOWN

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return _value_schema(cls.kind)


class _UnknownValue(_JsonValue):
    """The type pydantic sees for the value of an unknown key (type checkers see ``Any``)."""

    kind = _UNKNOWN


if TYPE_CHECKING:
    JSON_VALUE = Any
    UNKNOWN_VALUE = Any
else:
    JSON_VALUE = _JsonValue
    UNKNOWN_VALUE = _UnknownValue
"""A known free JSON value (``arguments``, ``args``), written back losslessly and read by
orion-core: the rules above, integers below ``SERDE_INT_LIMIT``. ``UNKNOWN_VALUE`` is the value
of an unknown key, which serde skips unread: integers of up to ``INT_DIGITS_MAX`` digits."""


def value_problem(
    value: Any, *, unknown: bool = False, depth: bool = True, serde: bool = False
) -> tuple[tuple[int | str, ...], str] | None:
    """Where in ``value`` and what breaks the rules, or None; for error messages only: the first
    of ``value_problems``."""
    return next(value_problems(value, unknown=unknown, depth=depth, serde=serde), None)


def value_problems(
    value: Any, *, unknown: bool = False, depth: bool = True, serde: bool = False
) -> Iterator[tuple[tuple[int | str, ...], str]]:
    """Where in ``value`` and what breaks the rules, each one, in document order.

    ``unknown``: the rules of an unknown key's value (longer integers), not of a known value.
    ``depth=False`` leaves the depth rule out, for a whole parsed document (which holds no
    list that contains itself). Nesting too deep is said once, of the whole value (path
    ``()``), and ends the walk. ``serde``: what serde_json refuses, rather than what validation
    does: an integer of the narrow band past ``SERDE_INT_LIMIT`` too, which validation reads as
    the largest double (``_fits_a_double``).

    Iterative, and it ends on a list that contains itself (the depth limit stops it).
    """
    rules = _UNKNOWN if unknown else _KNOWN
    stack: list[tuple[Any, tuple[int | str, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        kind = type(item)
        if depth and kind in (dict, list) and len(path) >= VALUE_DEPTH_MAX:
            yield (
                (),
                f"expected a JSON value nested at most {VALUE_DEPTH_MAX} levels deep, found a deeper one",
            )
            return
        if kind is _BadKey:
            yield path, f"expected an object key (a string), found {item.key!r}"
        elif kind is dict:
            # A key that is no string is said in its place among the values, not first.
            for key, child in reversed(item.items()):
                stack.append((child, (*path, key)) if type(key) is str else (_BadKey(key), path))
        elif kind is list:
            stack.extend((child, (*path, index)) for index, child in reversed(list(enumerate(item))))
        elif problem := _scalar_problem(item, kind, rules, band=not serde):
            yield path, problem


class _BadKey(NamedTuple):
    """An object key that is no string, waiting its turn in ``value_problems``' walk."""

    key: Any


def _fits_a_double(integer: int) -> bool:
    """Whether ``integer`` rounds to a finite double: past the integer rule, the value's float
    choice takes it (the narrow band docs/compatibility.md describes, read as the largest double)."""
    try:
        float(integer)
    except OverflowError:
        return False
    return True


INFINITE_NUMBER = "expected a finite number, found infinity (such as a number too large for a double)"
"""What is said of an infinite float, in a free JSON value and in an event's float field alike:
right of a Python ``inf`` and of JSON's ``1e400``, which the parser reads as infinity."""


def _scalar_problem(item: Any, kind: type, rules: _ValueKind, *, band: bool) -> str | None:
    """What breaks the rules in a value that is not a container, or None (``band``: an integer
    that rounds to a finite double is taken, as the value's float choice takes it)."""
    if kind is float and item != item:
        return "expected a finite number, found NaN"
    if kind is float and item - item != 0.0:
        return INFINITE_NUMBER
    if kind is int and not -rules.int_limit < item < rules.int_limit and not (band and _fits_a_double(item)):
        return f"expected an integer {rules.integers}, found a larger one"
    if kind not in (str, int, float, bool, type(None)):
        return f"expected a JSON value (dict, list, str, int, float, bool or None), found {kind_of(item)}"
    return None


def copied(value: Any) -> Any:
    """A copy of a JSON value that shares no dict or list with it (strings, numbers, ``True``,
    ``None`` are immutable and shared): a converter's output is the caller's to change.

    Recursive: the values copied are a message's, nested at most ``VALUE_DEPTH_MAX`` levels.
    """
    kind = type(value)
    # A scalar is taken as it is, without a call: most arguments hold scalars mostly.
    if kind is dict:
        return {key: copied(item) if type(item) in _NESTED else item for key, item in value.items()}
    if kind is list:
        return [copied(item) if type(item) in _NESTED else item for item in value]
    return value


_NESTED = (dict, list)


# --- Linear scanners over the raw document (rare paths only). ------------------------------------

_TOKENS = {"non_finite": r"-?Infinity|NaN", "minus_zero": r"-0(?![0-9.eE])"}
# A string without escapes whole, else the token (group 1), else a quote: a string with escapes
# (or never closed), skipped by ``_string_end``. One match per string: the loop stays short.
_BYTES_STRING_OR: dict[str, re.Pattern[Any]] = {
    kind: re.compile(f'"[^"\\\\]*"|({token})|"'.encode()) for kind, token in _TOKENS.items()
}
_TEXT_STRING_OR: dict[str, re.Pattern[Any]] = {
    kind: re.compile(f'"[^"\\\\]*"|({token})|"') for kind, token in _TOKENS.items()
}

# The cheap test that runs on every load: a "-0" that is not the start of "-0.5" or "-0e1".
_BYTES_MINUS_ZERO: re.Pattern[Any] = re.compile(_TOKENS["minus_zero"].encode())
_TEXT_MINUS_ZERO: re.Pattern[Any] = re.compile(_TOKENS["minus_zero"])

_LOOKBACK = 64
"""How far before a ``-0`` the cheap test looks for what precedes it, whitespace skipped."""


def _outside_strings(data: bytes | str, kind: str) -> Iterator[int]:
    """The start of every ``kind`` token outside JSON strings, in one linear pass.

    A string without escapes is stepped over by the regular expression itself; one with
    escapes by ``_string_end`` (a quote after an odd number of backslashes is escaped). A
    pattern that stepped over escapes too would keep state for each (Python's engine before
    3.11 has no possessive repeats), and an input made of escapes is hostile.
    """
    pattern = (_BYTES_STRING_OR if isinstance(data, bytes) else _TEXT_STRING_OR)[kind]
    position = 0
    while (match := pattern.search(data, position)) is not None:
        if match.lastindex:
            yield match.start()
            position = match.end()
        elif match.end() - match.start() > 1:
            position = match.end()
        elif (position := _string_end(data, match.start())) < 0:
            return  # an unterminated string: the parser reports it


def _may_be_number(data: bytes | str, start: int) -> bool:
    """Whether the token at ``start`` can be a number outside strings, by what precedes it.

    Outside strings a number follows ``:``, ``,`` or ``[`` (whitespace between), or opens the
    document. Anything else before it (``@@ -0,0`` in a diff, ``4f-0a`` in a UUID) puts it
    inside a string, or makes the document malformed. Beyond ``_LOOKBACK`` characters of
    whitespace it answers yes: counting the quotes decides (``_outside_by_quotes``).
    """
    is_bytes = isinstance(data, bytes)
    whitespace = _WHITESPACE[type(data)]
    before = data[max(0, start - _LOOKBACK) : start].rstrip(whitespace)
    return not before or before[-1:] in ((b":", b",", b"[") if is_bytes else (":", ",", "["))


def line_and_column(data: bytes | str, offset: int) -> tuple[int, int]:
    """The 1-based line and column of ``offset``; the column counts UTF-8 bytes, as the parser's
    own positions (and serde_json's) do, for text as for bytes."""
    newline: Any = b"\n" if isinstance(data, bytes) else "\n"
    line_start = data.rfind(newline, 0, offset) + 1
    prefix = data[line_start:offset]
    width = len(prefix) if isinstance(prefix, bytes) else len(prefix.encode("utf-8", "surrogatepass"))
    return data.count(newline, 0, offset) + 1, width + 1


def offset_of(text: bytes | str, line: int, column: int) -> int:
    """The index in ``text`` of a 1-based line and a column counted in UTF-8 bytes (the inverse
    of ``line_and_column``)."""
    newline: Any = b"\n" if isinstance(text, bytes) else "\n"
    start = 0
    for _ in range(line - 1):
        start = text.index(newline, start) + 1
    if isinstance(text, bytes):
        return start + column - 1
    index, width = start, 0
    while width < column - 1 and index < len(text):
        width += len(text[index].encode("utf-8", "surrogatepass"))
        index += 1
    return index


def first_non_finite_literal(data: bytes | str) -> tuple[str, int, int] | None:
    """The first ``NaN``, ``Infinity`` or ``-Infinity`` outside strings, with the line and column
    serde_json reports it at: its first letter (after the sign, serde's "invalid number").

    Linear in time, constant extra memory. Only called when a document failed to load.
    """
    if isinstance(data, str):
        if "NaN" not in data and "Infinity" not in data:
            return None
    elif b"NaN" not in data and b"Infinity" not in data:
        return None
    for start in _outside_strings(data, "non_finite"):
        first = data[start : start + 1]  # one byte: the literal may end inside a UTF-8 sequence
        signed = first in (b"-", "-")
        name = "NaN" if first in (b"N", "N") else "-Infinity" if signed else "Infinity"
        return (name, *line_and_column(data, start + signed))
    return None


def minus_zero_as_float(data: bytes | str) -> bytes | str:
    """``data`` with every ``-0`` outside strings spelled ``-0.0``, as serde_json reads it.

    serde_json reads ``-0`` as the float ``-0.0`` (jiter reads the integer 0): so an integer
    field refuses it and a free value keeps the float. The common case costs one regex search;
    a ``-0`` inside a string is nearly always told apart by what precedes it
    (``_may_be_number``), else by the quotes before it (``_outside_by_quotes``). Only a document
    that defeats both (a run of backslashes longer than ``_BACKSLASH_RUN_MAX`` before a quote) is
    walked string by string.
    """
    pattern = _BYTES_MINUS_ZERO if isinstance(data, bytes) else _TEXT_MINUS_ZERO
    candidates = [
        start for start in map(re.Match.start, pattern.finditer(data)) if _may_be_number(data, start)
    ]
    if not candidates:
        return data
    starts = _outside_by_quotes(data, candidates)
    if starts is None:
        starts = list(_outside_strings(data, "minus_zero"))
    if not starts:
        return data
    zero: Any = b"-0.0" if isinstance(data, bytes) else "-0.0"
    pieces: list[Any] = []
    previous = 0
    for start in starts:
        pieces.extend((data[previous:start], zero))
        previous = start + 2
    pieces.append(data[previous:])
    return (b"" if isinstance(data, bytes) else "").join(pieces)


_BACKSLASH_RUN_MAX = 8
"""The longest run of backslashes before a quote that ``_outside_by_quotes`` counts in C."""


def _outside_by_quotes(data: bytes | str, candidates: list[int]) -> list[int] | None:
    """Which of ``candidates`` (increasing offsets) lie outside strings, by counting quotes in C.

    Before an offset outside strings the unescaped quotes are even in number. A quote is escaped
    when an odd run of backslashes precedes it; a quote after a run of k backslashes ends one
    occurrence of each of ``\\"``, ``\\\\"``, ... up to k of them, so the sum of their counts
    has the parity of the escaped quotes. None when a run before a quote is longer than
    ``_BACKSLASH_RUN_MAX``: then only the walk decides.
    """
    quote: Any = b'"' if isinstance(data, bytes) else '"'
    backslash: Any = b"\\" if isinstance(data, bytes) else "\\"
    outside: list[int] = []
    quotes = previous = 0
    for start in candidates:
        quotes += data.count(quote, previous, start)
        for run in range(1, _BACKSLASH_RUN_MAX + 2):
            ending = data.count(backslash * run + quote, previous, start)
            if not ending:
                break
            if run > _BACKSLASH_RUN_MAX:
                return None
            quotes += ending
        previous = start
        if quotes % 2 == 0:
            outside.append(start)
    return outside


def without_exponent_signs(data: bytes) -> bytes:
    """``data`` with the ``+`` of every positive exponent outside strings left out (``1e+16`` ->
    ``1e16``), as serde_json before 1.0.146 (ryu) wrote floats.

    Outside strings, the only place ``e+`` follows a digit is such an exponent. Only those
    candidates are looked at (quotes counted before each, in C); the strings are walked one by
    one only after a long run of backslashes before a quote.
    """
    signs = [match.end() - 1 for match in _EXPONENT_SIGN.finditer(data)]
    if not signs:
        return data
    outside = _outside_by_quotes(data, signs)
    if outside is None:
        return _STRING_OR_EXPONENT.sub(_drop_exponent_sign, data)
    pieces = [data[start + 1 : end] for start, end in zip([-1, *outside], [*outside, len(data)], strict=True)]
    return b"".join(pieces)


_EXPONENT_SIGN = re.compile(rb"(?<=[0-9])e\+")
_STRING_OR_EXPONENT = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(?<=[0-9])e\+')


def _drop_exponent_sign(match: re.Match[bytes]) -> bytes:
    text = match[0]
    return text if text[:1] == b'"' else b"e"


_BYTES_BRACKETS: re.Pattern[Any] = re.compile(rb'["\[\]{}]')
_TEXT_BRACKETS: re.Pattern[Any] = re.compile(r'["\[\]{}]')


def _container_edges(data: bytes | str, position: int = 0) -> Iterator[tuple[int, bool]]:
    """Where each array or object opens (True) or closes (False) outside strings, in order,
    from ``position`` (outside any string)."""
    is_bytes = isinstance(data, bytes)
    pattern: re.Pattern[Any] = _BYTES_BRACKETS if is_bytes else _TEXT_BRACKETS
    quote: Any = b'"' if is_bytes else '"'
    opening: Any = (b"[", b"{") if is_bytes else ("[", "{")
    while (match := pattern.search(data, position)) is not None:
        start = match.start()
        char = data[start : start + 1]
        if char == quote:
            position = _string_end(data, start)
            if position < 0:
                return
            continue
        position = start + 1
        yield start, char in opening


def flatten_deeper_than(data: bytes | str, depth: int) -> tuple[bytes | str, list[tuple[int, int]]]:
    """``data`` with every array or object that opens below ``depth`` levels replaced by ``null``.

    How a document whose unknown keys nest deeper than the parser goes (serde skips such values
    unread) is still loaded: the values replaced are dropped afterwards, with a warning. One
    linear pass outside strings; returns the new document and where each replaced value was
    (start, end), for ``syntax_error_at`` to check what the parser never saw.
    """
    is_bytes = isinstance(data, bytes)
    pieces: list[Any] = []
    level = 0
    copied = 0
    replaced: list[tuple[int, int]] = []
    cut_from: int | None = None
    for start, opens in _container_edges(data):
        if opens:
            level += 1
            if level == depth + 1 and cut_from is None:
                cut_from = start
        else:
            if level == depth + 1 and cut_from is not None:
                pieces.extend((data[copied:cut_from], b"null" if is_bytes else "null"))
                copied = start + 1
                replaced.append((cut_from, copied))
                cut_from = None
            level -= 1
    pieces.append(data[copied:])
    return (b"" if is_bytes else "").join(pieces), replaced


# One JSON token after optional whitespace: a structural character, a string (escapes checked
# as serde_json checks a value it skips: any four hex digits after \u), a number (all of it:
# ``01`` and ``1.`` are no number followed by another token), a literal.
_TOKEN_PATTERN = (
    r'[ \t\n\r]*(?:([\[\]{},:])|("(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")'
    r"|(-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?(?![0-9.eE]))|(true|false|null))"
)
_WHITESPACE: dict[type, Any] = {bytes: JSON_WHITESPACE.encode(), str: JSON_WHITESPACE}
_BYTES_TOKEN: re.Pattern[Any] = re.compile(_TOKEN_PATTERN.encode())
_TEXT_TOKEN: re.Pattern[Any] = re.compile(_TOKEN_PATTERN)


class SyntaxFault(NamedTuple):
    """Where a JSON value stops being well-formed, and what the grammar expected there."""

    at: int
    """The index of the character that breaks it (after any whitespace), or the value's end
    when it is cut short."""
    expected: str
    """What was expected: ``"value"``, ``"first"`` (a value or the close), ``"key"``,
    ``"firstkey"`` (a key or the close), ``"colon"``, ``"next"`` (a comma or the close) or
    ``"end"``."""
    inside: str
    """The innermost open bracket there (``"["`` or ``"{"``), or ``""`` at the top."""
    token: bool
    """True when no JSON token starts at ``at`` (a bad literal, number or string)."""


def syntax_fault(data: bytes | str, start: int, end: int) -> SyntaxFault | None:
    """Where the JSON value ``data[start:end]`` stops being well-formed, or None if it is one.

    Any depth, without recursion: for values deeper than the parser goes, which serde skips in
    an unknown key but still reads as JSON (brackets matched, commas and colons, valid literals
    and escapes). A rare, failing path: one Python step per token.
    """
    pattern = _BYTES_TOKEN if isinstance(data, bytes) else _TEXT_TOKEN
    closing = {"[": "]", "{": "}"}
    stack: list[str] = []
    expect = "value"  # or "first", "key", "firstkey", "colon", "next" (a comma or the close), "end"
    position = start
    while position < end:
        match = pattern.match(data, position, end)
        if match is None:
            rest: Any = data[position:end]
            at = end - len(rest.lstrip(_WHITESPACE[type(data)]))
            if at == end:  # only whitespace is left
                break
            return SyntaxFault(at, expect, stack[-1] if stack else "", True)
        kind = _kind(match)
        was = expect
        expect = _next_expectation(expect, kind, stack, closing)
        if expect == "error":
            return SyntaxFault(match.start(match.lastindex or 0), was, stack[-1] if stack else "", False)
        position = match.end()
    return (
        None if expect == "end" and not stack else SyntaxFault(end, expect, stack[-1] if stack else "", False)
    )


def open_path(data: bytes | str, end: int) -> tuple[tuple[int | str, ...], bool] | None:
    """The containers open at ``end`` in a document well-formed before it, each as the key or
    index of the value being read in it, and whether an object key is expected at ``end`` (the
    last step is then the key before it). None if the JSON breaks before ``end``.

    For placing an error: one Python step per token, on a failing path only.
    """
    return next(open_paths(data, [end]))


def open_paths(data: bytes | str, ends: Iterable[int]) -> Iterator[tuple[tuple[int | str, ...], bool] | None]:
    """``open_path`` for each of ``ends`` (increasing), in one pass over the document."""
    pattern = _BYTES_TOKEN if isinstance(data, bytes) else _TEXT_TOKEN
    closing = {"[": "]", "{": "}"}
    stack: list[str] = []
    steps: list[int | str] = []
    expect = "value"
    position = 0
    for end in ends:
        while expect != "error" and (match := pattern.match(data, position, end)) is not None:
            kind = _kind(match)
            if kind == "string" and expect in ("key", "firstkey"):
                try:
                    steps[-1] = json.loads(match[2])
                except ValueError:  # invalid UTF-8: the JSON breaks here for the parser too
                    expect = "error"
                    break
            depth = len(stack)
            expect = _next_expectation(expect, kind, stack, closing)
            if expect == "error":
                break
            if len(stack) > depth:
                steps.append(0 if kind == "[" else "")
            elif len(stack) < depth:
                steps.pop()
            elif kind == "," and stack[-1] == "[":
                steps[-1] = int(steps[-1]) + 1
            position = match.end()
        yield None if expect == "error" else (tuple(steps), expect in ("key", "firstkey"))


def top_level_keys(data: bytes, start: int = 0) -> Iterator[str]:
    """The keys of the object that opens at ``start``, its own and in order, as far as the JSON
    reads: leniently, values skipped unread (strings and brackets matched, at any depth, without
    recursion), invalid UTF-8 in a key read as U+FFFD. Nothing if no object opens there; it
    stops where the object breaks or ends, so a torn or unreadable record still gives the keys
    before the fault. Only the brackets and strings of the values cost a Python step."""
    position = start
    while data[position : position + 1] == (b"{" if position == start else b","):
        position = _after_blanks(data, position + 1)
        end = _string_end(data, position) if data[position : position + 1] == b'"' else -1
        colon = _after_blanks(data, end) if end > 0 else -1
        if colon < 0 or data[colon : colon + 1] != b":":
            return
        try:
            key = json.loads(data[position:end].decode("utf-8", "replace"))
        except ValueError:  # a bad escape in the key: the JSON breaks here
            return
        yield key
        position = _after_blanks(data, _value_end(data, _after_blanks(data, colon + 1)))


_BLANKS = re.compile(rb"[ \t\n\r]*")
_SCALAR = re.compile(rb"[^ \t\n\r,\]}\[{\"]*")


def _after_blanks(data: bytes, position: int) -> int:
    """The index after the JSON whitespace at ``position`` (-1 stays -1: nothing was there)."""
    blanks = _BLANKS.match(data, position) if position >= 0 else None
    return blanks.end() if blanks is not None else -1


def _value_end(data: bytes, start: int) -> int:
    """The index after the value that starts at ``start``, skipped unread; -1 if it never ends."""
    if data[start : start + 1] == b'"':
        return _string_end(data, start)
    if data[start : start + 1] in (b"[", b"{"):
        level = 0
        for at, opens in _container_edges(data, start):
            level += 1 if opens else -1
            if level == 0:
                return at + 1
        return -1
    scalar = _SCALAR.match(data, start) if start >= 0 else None
    return scalar.end() if scalar is not None and scalar.end() > start else -1


def _kind(token: re.Match[Any]) -> str:
    """A token of ``_TOKEN_PATTERN``: its punctuation character, ``"string"`` or ``"scalar"``."""
    if token[1] is not None:
        return _text(token[1])
    return "string" if token[2] is not None else "scalar"


def _text(token: bytes | str) -> str:
    return token.decode("ascii") if isinstance(token, bytes) else token


def _next_expectation(expect: str, kind: str, stack: list[str], closing: dict[str, str]) -> str:
    """One step of the JSON grammar: what may follow ``kind`` where ``expect`` was expected.

    ``first`` and ``firstkey`` follow an opening bracket, where it may close at once; ``value``
    and ``key`` follow a comma or a colon, where it may not (no trailing commas).
    """
    if expect in ("first", "firstkey") and kind == closing[stack[-1]]:
        stack.pop()
        return "next" if stack else "end"
    if expect in ("value", "first") and kind in ("[", "{"):
        stack.append(kind)
        return "first" if kind == "[" else "firstkey"
    if expect in ("value", "first") and kind in ("string", "scalar"):
        return "next" if stack else "end"
    if expect in ("key", "firstkey") and kind == "string":
        return "colon"
    if expect == "colon" and kind == ":":
        return "value"
    if expect == "next" and kind == ",":
        return "value" if stack[-1] == "[" else "key"
    if expect == "next" and kind == closing[stack[-1]]:
        stack.pop()
        return "next" if stack else "end"
    return "error"


def first_deeper_than(data: bytes | str, depth: int) -> int | None:
    """The index of the first array or object that opens below ``depth`` levels, or None."""
    level = 0
    for start, opens in _container_edges(data):
        level += 1 if opens else -1
        if level > depth:
            return start
    return None


def _string_end(data: bytes | str, start: int) -> int:
    """The index after the string that opens at ``start``, or -1 if it never closes."""
    quote: Any = b'"' if isinstance(data, bytes) else '"'
    backslash: Any = b"\\" if isinstance(data, bytes) else "\\"
    end = start + 1
    while True:
        end = data.find(quote, end)
        if end < 0:
            return -1
        escapes = 0
        while data[end - 1 - escapes : end - escapes] == backslash:
            escapes += 1
        end += 1
        if escapes % 2 == 0:
            return end


PARSER_INT_DIGITS_MAX = 4300
"""The most digits the integer part of a number may have for pydantic-core's parser (jiter)."""


class LoneSurrogate(NamedTuple):
    """A string of a value that holds half of a surrogate pair alone, which UTF-8 cannot encode
    (a Python ``str`` may; orion-core's strings cannot)."""

    path: tuple[int | str, ...]
    """Where the string is; for an object key, the object's path."""
    text: str
    at: int
    """The surrogate's index in ``text``."""
    is_key: bool


def surrogate_at(text: str) -> int | None:
    """The index of the first lone surrogate in ``text``, or None (only non-ASCII text is
    encoded to look: ``isascii`` is a flag check in CPython)."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def lone_surrogates(value: Any) -> Iterator[LoneSurrogate]:
    """Every string of a Python JSON value (dicts, lists, tuples, str) holding a lone
    surrogate, keys included (a key's value is not looked into). Iterative: any depth; a
    container met again (a value changed in place to hold itself) is not walked again."""
    stack: list[tuple[Any, tuple[int | str, ...]]] = [(value, ())]
    walked: set[int] = set()  # ids of the containers walked, held alive by ``value`` meanwhile
    while stack:
        item, path = stack.pop()
        if isinstance(item, (Mapping, list, tuple)):
            if id(item) in walked:
                continue
            walked.add(id(item))
        if isinstance(item, str):
            if (at := surrogate_at(item)) is not None:
                yield LoneSurrogate(path, item, at, False)
        elif isinstance(item, Mapping):
            for key, inner in reversed(list(item.items())):
                if isinstance(key, str) and (at := surrogate_at(key)) is not None:
                    yield LoneSurrogate(path, key, at, True)
                else:
                    stack.append((inner, (*path, key)))
        elif isinstance(item, (list, tuple)):
            stack.extend((inner, (*path, number)) for number, inner in reversed(list(enumerate(item))))


class Unreadable(NamedTuple):
    """A value of a document that serde_json skips in an unknown key but jiter cannot read."""

    start: int
    """Where the value starts: a string, a number, or the object whose key is unreadable."""
    end: int
    why: str
    """What it holds, for a warning: "a string with a lone surrogate escape (\\ud800), ..."."""
    is_number: bool
    token: tuple[int, int]
    """Where the unreadable string or number itself is: the key, for an object."""


# A string without escapes (skipped whole), a string with escapes (group 1: its quote), an
# opening (2) or closing (3) bracket, or a number whose integer part (5) jiter cannot read (4).
# The lookahead names every character a match can start with, which lets the regular expression
# engine skip the rest fast (without it, 30 MB of NUL bytes took over 10 s to report at 1:1).
_UNREADABLE_PATTERN = (
    r'(?=["\[\]{}\-0-9])(?:"[^"\\]*"|(")|([\[{])|([\]}])'
    rf"|((?<![0-9.eE+\-])-?([0-9]{{{PARSER_INT_DIGITS_MAX + 1},}})(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?))"
)
_BYTES_UNREADABLE: re.Pattern[Any] = re.compile(_UNREADABLE_PATTERN.encode())
_TEXT_UNREADABLE: re.Pattern[Any] = re.compile(_UNREADABLE_PATTERN)
_BYTES_ESCAPE: re.Pattern[Any] = re.compile(rb"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)
_TEXT_ESCAPE: re.Pattern[Any] = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)", re.DOTALL)


def unreadable_spans(data: bytes | str) -> list[Unreadable]:
    """What jiter refuses and serde_json skips unread in an unknown key, in document order.

    Strings with a lone surrogate escape and numbers whose integer part is longer than
    ``PARSER_INT_DIGITS_MAX`` digits are given as themselves; an object key with a lone surrogate
    as the whole object that holds it. Spans do not overlap. One linear pass outside strings, on
    the error path only; a document that ends inside a string ends the pass there.
    """
    is_bytes = isinstance(data, bytes)
    pattern = _BYTES_UNREADABLE if is_bytes else _TEXT_UNREADABLE
    opened: list[int] = []
    found: list[Unreadable] = []
    cut: tuple[int, Unreadable] | None = None  # (level, key) of an object to be given whole
    position = 0
    while (match := pattern.search(data, position)) is not None:
        start, position = match.start(), match.end()
        if match[2] is not None:
            opened.append(start)
        elif match[3] is not None and opened:
            begin = opened.pop()
            if cut is not None and len(opened) == cut[0]:
                while found and found[-1].start >= begin:  # the object holds them: the latest ones
                    found.pop()
                found.append(cut[1]._replace(start=begin, end=position))
                cut = None
        elif match[4] is not None and cut is None:
            why = f"a number with {len(match[5])} digits before its decimal point, more than pydantic-core reads"
            found.append(Unreadable(start, position, why, True, (start, position)))
        elif match[1] is not None:
            if (position := _string_end(data, start)) < 0:
                break
            escape = _lone_surrogate(data[start:position])
            if escape is None or cut is not None:
                continue
            key = _is_key(data, position) and bool(opened)
            what = "an object key" if key else "a string"
            why = f"{what} with a lone surrogate escape ({escape}), which pydantic-core does not read"
            span = Unreadable(start, position, why, False, (start, position))
            if key:
                cut = (len(opened) - 1, span)
            else:
                found.append(span)
    return found


def unreadable_tokens(data: bytes | str) -> list[tuple[int, int]]:
    """Every number and string of ``data`` that jiter cannot read (as ``unreadable_spans``
    finds them, but each token alone: an object key, and whatever the object around it holds),
    as (start, end), in document order. One linear pass outside strings."""
    pattern = _BYTES_UNREADABLE if isinstance(data, bytes) else _TEXT_UNREADABLE
    found: list[tuple[int, int]] = []
    position = 0
    while (match := pattern.search(data, position)) is not None:
        start, position = match.start(), match.end()
        if match[4] is not None:
            found.append((start, position))
        elif match[1] is not None:
            if (position := _string_end(data, start)) < 0:
                break
            if _lone_surrogate(data[start:position]) is not None:
                found.append((start, position))
    return found


def readable_copy(data: bytes | str, tokens: list[tuple[int, int]]) -> bytes | str:
    """``data`` with each of ``tokens`` (``unreadable_tokens``) made readable and nothing else
    changed: a number becomes ``0``; a string keeps its length, its surrogate escapes written
    ``\\ufffd``, so that whatever else is wrong in it (a raw control character, a bad escape)
    is still found where it is."""
    is_bytes = isinstance(data, bytes)
    escape = _BYTES_ESCAPE if is_bytes else _TEXT_ESCAPE
    pieces: list[Any] = []
    copied = 0
    for start, end in tokens:
        token: Any = data[start:end]
        if token[:1] in (b'"', '"'):
            token = escape.sub(_without_surrogate, token)
        else:
            token = b"0" if is_bytes else "0"
        pieces.extend((data[copied:start], token))
        copied = end
    pieces.append(data[copied:])
    return (b"" if is_bytes else "").join(pieces)


def _without_surrogate(escape: re.Match[Any]) -> Any:
    hex_digits = escape[1]
    if hex_digits is None or not 0xD800 <= int(hex_digits, 16) <= 0xDFFF:
        return escape[0]
    return b"\\ufffd" if isinstance(hex_digits, bytes) else "\\ufffd"


def _is_key(data: bytes | str, after: int) -> bool:
    """Whether the string that ends at ``after`` is an object key (a colon follows it)."""
    rest = data[after : after + 64].lstrip(_WHITESPACE[type(data)])
    return rest[:1] in (b":", ":")


def _lone_surrogate(string: bytes | str) -> str | None:
    """The first ``\\uXXXX`` escape in a JSON string that is half of a surrogate pair alone."""
    pattern = _BYTES_ESCAPE if isinstance(string, bytes) else _TEXT_ESCAPE
    high: tuple[str, int] | None = None  # a high half waiting for its low half, and where it ends
    for match in pattern.finditer(string):
        code = int(match[1], 16) if match[1] is not None else -1
        low = 0xDC00 <= code <= 0xDFFF
        if high is not None and not (low and match.start() == high[1]):
            return high[0]
        if low and high is None:
            return f"\\u{code:04x}"
        high = (f"\\u{code:04x}", match.end()) if 0xD800 <= code <= 0xDBFF else None
    return high[0] if high is not None else None


class _Pairs(list[tuple[str, Any]]):
    """An object's key/value pairs in order, kept only for an object where a key repeats."""


_STRUCT_DEPTH_MAX = 16
"""Deeper than any object of the formats' own (an event's message's tool call is 4 levels down)."""


def _parsed_with(data: bytes | str, object_pairs_hook: Callable[[list[tuple[str, Any]]], Any]) -> Any:
    """``data`` parsed by the standard library's C parser, objects built by the hook; None for
    a document it cannot read (malformed: the main parser reports it)."""
    # The second time, integers are read as their length: one past Python's 4300 digits can lie
    # in an unknown key, and only the keys matter here.
    parse_int: Callable[[str], Any]
    for parse_int in (int, len):
        try:
            try:
                return json.loads(data, object_pairs_hook=object_pairs_hook, parse_int=parse_int)
            except RecursionError:  # deep values are free or unknown ones, whose keys serde never checks
                flat = flatten_deeper_than(data, _STRUCT_DEPTH_MAX)[0]
                try:
                    return json.loads(flat, object_pairs_hook=object_pairs_hook, parse_int=parse_int)
                except RecursionError:  # still deep: containers never closed, malformed
                    return None
        except ValueError:
            continue
    return None


def may_repeat_keys(data: bytes | str) -> bool:
    """Whether some object of a document may repeat a key: False only when none surely does.

    Every key/value pair has one colon outside strings. orjson keeps one value of a repeated key,
    so its compact re-encoding has as many colons as the document exactly when no key repeats:
    both write the colons inside strings as they are, except an escaped one (``\\u003a`` or
    ``\\u003A``), which is re-encoded raw; a document with such an escape, or that orjson cannot
    read (an integer past 64 bits, deep nesting, a lone surrogate), may repeat one. Other
    escapes never make a colon (``\\u003c``, ``<`` as HTML-safe writers escape it, is no reason).
    """
    colon, escapes = (
        (":", ("\\u003a", "\\u003A")) if isinstance(data, str) else (b":", (b"\\u003a", b"\\u003A"))
    )
    if any(escape in data for escape in escapes):  # type: ignore[operator]
        return True
    try:
        again = orjson.dumps(orjson.loads(data))
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, RecursionError):
        return True
    return again.count(b":") != data.count(colon)  # type: ignore[arg-type]


def duplicate_key_paths(data: bytes | str) -> list[tuple[tuple[int | str, ...], str]]:
    """Every key repeated in one object, as (path of the object, key).

    First ``may_repeat_keys`` (orjson, in C); only when a key may repeat, ``scan_repeated_keys``
    (a Python hook on every object, about twice the cost of reading the document).
    """
    return scan_repeated_keys(data) if may_repeat_keys(data) else []


def scan_repeated_keys(data: bytes | str) -> list[tuple[tuple[int | str, ...], str]]:
    """``duplicate_key_paths`` without the quick check: always parses the document.

    One pass of the standard library's C parser; objects are built as plain dicts, and only
    when some object repeats a key is the document walked to say where. A document it cannot
    parse (malformed, nested too deeply) gives no result: the main parser reports it.
    """
    repeated = False

    def pairs_or_dict(pairs: list[tuple[str, Any]]) -> Any:
        nonlocal repeated
        built = dict(pairs)
        if len(built) == len(pairs):
            return built
        repeated = True
        return _Pairs(pairs)

    document = _parsed_with(data, pairs_or_dict)
    if not repeated:
        return []
    found: list[tuple[tuple[int | str, ...], str]] = []
    stack: list[tuple[Any, tuple[int | str, ...]]] = [(document, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Pairs):
            seen: set[str] = set()
            for key, _ in item:
                if key in seen:
                    found.append((path, key))
                seen.add(key)
            stack.extend((child, (*path, key)) for key, child in reversed(item))
        elif isinstance(item, dict):
            stack.extend((child, (*path, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((child, (*path, index)) for index, child in reversed(list(enumerate(item))))
    return found
