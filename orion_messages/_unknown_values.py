"""Loading a document past the unknown values it cannot keep (private; the codec's error path).

serde skips an unknown key's value unread, so orion-core loads documents whose unknown values
this library cannot hold or write back: ``1e400``, nesting past any parser's depth, a lone
surrogate escape, a number too long for jiter. ``without_unwritable_unknown_keys`` loads such a
document without those keys, naming each in an ``UnknownKeyWarning``. Values nested too deep are
replaced by ``null`` and values jiter cannot read by a stand-in before the document is read
again; where one of them lies in a known field, the document is refused as serde refuses it.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails, from_json, to_json

from ._json_rules import (
    ANY_JSON,
    INT_DIGITS_MAX,
    SERDE_DEPTH_LIMIT,
    UNKNOWN_VALUE_ERROR,
    SyntaxFault,
    Unreadable,
    first_non_finite_literal,
    flatten_deeper_than,
    line_and_column,
    minus_zero_as_float,
    offset_of,
    open_paths,
    readable_copy,
    syntax_fault,
    unreadable_spans,
    unreadable_tokens,
    value_problem,
)
from ._problems import problem_from
from ._text import location
from .errors import FormatError, Problem, UnknownKeyWarning

__all__ = [
    "Origin",
    "PastUnreadable",
    "is_malformed",
    "is_too_deep",
    "json_invalid",
    "past_unreadable_values",
    "without_unwritable_unknown_keys",
]

T = TypeVar("T")

Path = tuple[int | str, ...]


class Origin(NamedTuple):
    """Where a document being read comes from, so that its warnings can say so."""

    source: str
    """The file's name."""
    lines: tuple[int, ...] = ()
    """The line of each JSON Lines record the document holds; none for a whole file."""
    joined: bool = False
    """True when the records were joined into one array: a path then starts with the record's
    index, which ``lines`` turns into its line."""

    def place(self, path: Path) -> tuple[Path, int | None]:
        """The path within its record and the record's line, for a path into the document."""
        if self.joined and path and isinstance(path[0], int):
            return path[1:], self.lines[path[0]]
        return path, self.lines[0] if len(self.lines) == 1 else None


# Values opening deeper than this are cut on the error path: deeper than anything orion-core
# reads in a known field (serde's limit), below jiter's own limit.
_FLATTEN_BELOW = SERDE_DEPTH_LIMIT + 8

# Errors the cut itself may cause in a known place (a free value made too deep, an array where
# the cut left a struct): with one of these, the depth is reported, not what the cut shows.
_FROM_THE_CUT = frozenset({"json_value", "json_invalid", "model_type", "model_attributes_type", "list_type"})

_STAND_IN_BASE = 10**INT_DIGITS_MAX
"""The first stand-in: one digit more than an unknown value may hold, well within what jiter
reads, and more than serde_json reads in a known free value; the n-th unreadable span is
replaced by ``_STAND_IN_BASE + n``."""


def json_invalid(error: ValidationError) -> Iterator[ErrorDetails]:
    """The parser's own errors (malformed JSON) among ``error``'s."""
    # The parser stops at the first fault and nothing is validated: its error is always alone.
    # Asking the count first spares listing a validation's millions of details, several times.
    if error.error_count() != 1:
        return iter(())
    return (detail for detail in error.errors(include_url=False) if detail["type"] == "json_invalid")


def is_malformed(error: ValidationError) -> bool:
    """Whether the parser stopped on the document itself (malformed, or nested too deeply)."""
    return any(json_invalid(error))


def is_too_deep(error: ValidationError) -> bool:
    """Whether the parser stopped at a depth it cannot read."""
    # jiter gives no structured value for this; its type is json_invalid for every syntax error.
    return any("recursion limit" in detail["msg"] for detail in json_invalid(error))


class PastUnreadable(NamedTuple):
    """What serde_json meets first in a document where the parser stopped at a value it cannot
    read: serde skips such a value unread in an unknown key and reads on."""

    problem: Problem | None
    """The first fault: malformed JSON past such values, or one of them in a field serde reads;
    None when there is neither (the values are then left out by
    ``without_unwritable_unknown_keys``)."""
    stop: tuple[int, int] | None
    """The problem's line and column: a NaN or infinity before it is what serde meets first."""


Fields = Callable[[Path], "frozenset[str] | None"]
"""The known keys of the object at a path of a document, or None where serde reads a map."""


def past_unreadable_values(
    adapter: TypeAdapter[Any], data: bytes | str, error: ValidationError, fields: Fields
) -> PastUnreadable | None:
    """Where serde_json first finds ``data`` at fault, when the parser's ``error`` may be a
    value serde skips unread in an unknown key (a number too long for the parser, a lone
    surrogate escape): the parser reads a copy with those values made readable, and the first
    of them in a field serde reads (by ``fields``) before where that stops counts first.

    None when ``data`` holds no such value, or nests deeper than the parser reads (the values
    cut for their depth are checked by ``without_unwritable_unknown_keys``).
    """
    if not is_malformed(error) or is_too_deep(error) or not (tokens := unreadable_tokens(data)):
        return None
    copy = readable_copy(data, tokens)
    try:
        adapter.validator.validate_json(copy)
    except ValidationError as again:
        if is_too_deep(again):
            return None
        malformed = next(json_invalid(again), None)
    else:
        malformed = None
    fault = None if malformed is None else problem_from(malformed)
    stop = None if fault is None else _placed_back(fault, copy, data, tokens)
    if stop is None and (literal := first_non_finite_literal(data)) is not None:
        stop = offset_of(data, literal[1], literal[2])  # serde stops at it: look no further
    read = None if stop is None else _first_read(data, tokens, stop, fields)
    if read is not None:
        start, end = read
        span = Unreadable(start, end, "", data[start : start + 1] not in (b'"', '"'), read)
        fault = _unreadable_problem(adapter, data, span)
    elif fault is not None and stop is not None:
        fault = Problem(fault.location, fault.message, *line_and_column(data, stop))
    if fault is None or fault.line is None or fault.column is None:
        return PastUnreadable(None, None)
    return PastUnreadable(fault, (fault.line, fault.column))


def _placed_back(
    problem: Problem, copy: bytes | str, data: bytes | str, tokens: list[tuple[int, int]]
) -> int:
    """The index in ``data`` of ``problem``'s place in ``copy``, ``readable_copy(data, tokens)``
    (where each number of ``tokens`` is one character long; strings keep their length)."""
    if problem.line is None or problem.column is None:
        return len(data)
    at = offset_of(copy, problem.line, problem.column)
    shift = 0
    for start, end in tokens:
        if at <= start - shift:
            break
        if data[start : start + 1] not in (b'"', '"'):
            shift += end - start - 1
    return at + shift


def _first_read(
    data: bytes | str, tokens: list[tuple[int, int]], before: int, fields: Fields
) -> tuple[int, int] | None:
    """The first of ``tokens`` that starts before ``before`` in a place serde reads (not inside
    an unknown key's value), or None."""
    starts = [start for start, _ in tokens if start < before]
    for token, opened in zip(tokens[: len(starts)], open_paths(data, starts), strict=True):
        if opened is None:  # the grammar breaks before it (the parser stopped there)
            return None
        path, at_key = opened
        path = path[:-1] if at_key else path  # an object's own key is read, known or not
        if not any(
            isinstance(step, str) and (known := fields(path[:depth])) is not None and step not in known
            for depth, step in enumerate(path)
        ):
            return token
    return None


def without_unwritable_unknown_keys(
    adapter: TypeAdapter[T],
    data: bytes | str,
    fixed: bytes | str,
    error: ValidationError,
    details: list[ErrorDetails],
    *,
    skipped_unread: bool,
    origin: Origin | None = None,
) -> T | ValidationError | None:
    """Load ``data`` (as given) without the unknown keys whose values cannot be kept, warning
    for each; ``fixed`` is ``data`` with ``-0`` read as serde reads it (``minus_zero_as_float``),
    ``error`` what reading it failed with, and ``details`` its errors, listed by the caller.

    ``skipped_unread``: serde skips this document's unknown values unread (messages). An event is
    read whole, so a value the parser cannot read is left to the parser's own error there.
    ``origin`` places the warnings in a file and its lines.
    Returns None when the document has some other problem (the caller reports ``error``); the
    errors to report, when a known field is wrong beside such values (their own errors to be
    left out).

    Raises:
        FormatError: a value the parser cannot read lies in a known field, or a value cut for
            its depth is malformed.
    """
    cut: list[tuple[int, int]] = []
    spans: list[Unreadable] = []
    prepared = fixed
    if is_malformed(error):  # the parser stopped: on a depth it cannot read, or a value
        flat, cut = flatten_deeper_than(data, _FLATTEN_BELOW)
        spans = unreadable_spans(flat) if skipped_unread else []
        if not (cut or spans) or first_non_finite_literal(flat) is not None:
            return None
        prepared = minus_zero_as_float(_with_stand_ins(flat, spans))
        try:
            value = adapter.validate_json(prepared)
        except ValidationError as again:
            error, details = again, again.errors(include_url=False)
        else:
            _refuse_malformed_deep_values(data, cut)
            return value
    kinds = {detail["type"] for detail in details}
    if kinds - {UNKNOWN_VALUE_ERROR}:
        if "json_invalid" in kinds:
            if cut:  # the cut hides where the document breaks: look for it as serde reads it
                _refuse_malformed_document(data)
            return None
        if spans and (number := _first_stand_in_at(prepared, details, len(spans))) is not None:
            raise FormatError([_unreadable_problem(adapter, data, _unflattened(spans[number], cut))])
        return error if UNKNOWN_VALUE_ERROR in kinds and not (cut and kinds & _FROM_THE_CUT) else None
    if not details:
        return None
    _refuse_malformed_deep_values(data, cut)  # what was cut is read as JSON all the same
    return _dropping(adapter, from_json(prepared, allow_inf_nan=True), details, spans, origin)


def _dropping(
    adapter: TypeAdapter[T],
    document: Any,
    details: list[ErrorDetails],
    spans: list[Unreadable],
    origin: Origin | None,
) -> T | None:
    """``document`` validated without the unknown keys of ``details``, with a warning for each.

    The warnings are given only once the document without those keys loads: a caller that then
    tries again another way (JSON Lines records one by one) would otherwise give them twice.
    """
    tagged = isinstance(document, dict) and isinstance(document.get("type"), str)
    left_out: list[UnknownKeyWarning] = []
    for detail in details:
        loc = detail["loc"][1:] if tagged and detail["loc"][:1] == (document["type"],) else detail["loc"]
        holder = document
        for step in loc[:-1]:
            holder = holder[step]
        value = holder.pop(loc[-1])
        number = _stand_in_number(value, len(spans))
        found = value_problem(value, unknown=True)
        why = spans[number].why if number is not None else found[1] if found else "it cannot be written back"
        path, line = origin.place(tuple(loc[:-1])) if origin else (tuple(loc[:-1]), None)
        left_out.append(
            UnknownKeyWarning(
                location(path), str(loc[-1]), why, source=origin.source if origin else None, line=line
            )
        )
    try:
        loaded = adapter.validate_json(to_json(document))
    except ValidationError:
        return None
    for warning in left_out:
        warnings.warn(warning, stacklevel=_outside_the_package())
    return loaded


def _outside_the_package() -> int:
    """The ``stacklevel`` of the first caller outside this package, for a warning raised by the
    caller of this function: the user's own call of ``loads``, ``load``, ``read_jsonl``, ...,
    however many of the package's functions lie between."""
    frame = sys._getframe(2)  # the caller's caller: stacklevel 2
    level = 2
    while frame.f_back is not None and frame.f_globals.get("__name__", "").startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    return level


_PACKAGE = __name__.rpartition(".")[0] + "."


def _with_stand_ins(data: bytes | str, spans: list[Unreadable]) -> bytes | str:
    """``data`` with the n-th of ``spans`` replaced by the stand-in ``_STAND_IN_BASE + n``.

    In an unknown key a stand-in fails as an unwritable value, and the key is dropped; in a
    known field it fails as that field (a string, a free value, a message), and the document is
    refused.
    """
    pieces: list[Any] = []
    copied = 0
    for number, span in enumerate(spans):
        text = f"1{number:0{INT_DIGITS_MAX}d}"  # str(_STAND_IN_BASE + number), in linear time
        pieces.extend((data[copied : span.start], text.encode("ascii") if isinstance(data, bytes) else text))
        copied = span.end
    pieces.append(data[copied:])
    return (b"" if isinstance(data, bytes) else "").join(pieces)


def _stand_in_number(value: Any, count: int) -> int | None:
    """The first of the ``count`` stand-ins that ``value`` holds, or None."""
    numbers: list[int] = []
    stack = [value] if count else []
    while stack:  # iterative: a value may nest as deep as the rules allow
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif type(item) is int and 0 <= item - _STAND_IN_BASE < count:
            numbers.append(item - _STAND_IN_BASE)
    return min(numbers, default=None)


def _first_stand_in_at(document: bytes | str, details: list[ErrorDetails], count: int) -> int | None:
    """The first stand-in on which a known field's error lies, or None."""
    parsed = from_json(document, allow_inf_nan=True)
    numbers = []
    for detail in details:
        if detail["type"] != UNKNOWN_VALUE_ERROR:
            item = parsed
            for step in detail["loc"]:
                item = _child(item, step)
            numbers.append(_stand_in_number(item, count))
    return min((number for number in numbers if number is not None), default=None)


def _child(item: Any, step: int | str) -> Any:
    """``item[step]``, or None where ``item`` holds no such child (a stand-in in its place)."""
    if isinstance(item, dict):
        return item.get(step)
    if isinstance(item, list) and isinstance(step, int) and -len(item) <= step < len(item):
        return item[step]
    return None


def _unflattened(span: Unreadable, cut: list[tuple[int, int]]) -> Unreadable:
    """``span`` of the document with ``cut`` replaced by ``null``, placed in the document as given."""
    shift = sum(end - start - len("null") for start, end in cut if start < span.start)
    token = (span.token[0] + shift, span.token[1] + shift)
    return span._replace(start=span.start + shift, end=span.end + shift, token=token)


def _unreadable_problem(adapter: TypeAdapter[Any], data: bytes | str, span: Unreadable) -> Problem:
    """The parser's own error for ``span`` of ``data``, where serde_json reports it: a number at
    its last character, a lone surrogate where the parser stops in it (as serde does)."""
    start, end = span.token
    token = data[start:end]
    try:
        adapter.validate_json(token)
    except ValidationError as error:
        stop = problem_from(next(json_invalid(error)))
    else:  # not reached: the parser refused this token in the whole document
        return Problem("", "malformed JSON", *line_and_column(data, start))
    if span.is_number or stop.line is None or stop.column is None:
        return Problem("", stop.message, *line_and_column(data, end - 1))
    at = start + offset_of(token, stop.line, stop.column)
    return Problem("", stop.message, *line_and_column(data, at))


def _refuse_malformed_document(data: bytes | str) -> None:
    """Refuse a document nested deeper than the parser goes that is malformed, at the place and
    in the words of serde_json, which reads it to that place (the parser stopped at its depth)."""
    fault = syntax_fault(data, 0, len(data))
    if fault is None:
        return
    if fault.token and fault.expected in ("value", "first"):
        problem = _bad_token_problem(data, fault.at)
    elif fault.at == len(data):
        line, column = line_and_column(data, fault.at)
        problem = Problem("", f"malformed JSON: {_cut_short(fault)}", line, column - 1)
    else:
        problem = Problem("", f"malformed JSON: {_unexpected(data, fault)}", *line_and_column(data, fault.at))
    raise FormatError([problem])


def _cut_short(fault: SyntaxFault) -> str:
    if fault.expected == "value":
        return "the document ends where a value should start"
    return (
        "the document ends inside an array" if fault.inside == "[" else "the document ends inside an object"
    )


def _unexpected(data: bytes | str, fault: SyntaxFault) -> str:
    """What serde_json says where the grammar breaks, in the words the parser's errors use here."""
    found = data[fault.at : fault.at + 1]
    if (fault.expected, fault.inside, found) in _TRAILING_COMMA:
        return "trailing comma"
    if fault.expected == "next":
        return (
            "expected `,` or `]` in an array" if fault.inside == "[" else "expected `,` or `}` in an object"
        )
    return _EXPECTED[fault.expected]


_TRAILING_COMMA = {("value", "[", "]"), ("value", "[", b"]"), ("key", "{", "}"), ("key", "{", b"}")}
_EXPECTED = {
    "value": "expected a JSON value",
    "first": "expected a JSON value",
    "key": "expected an object key (a string)",
    "firstkey": "expected an object key (a string)",
    "colon": "expected `:` after an object key",
    "end": "unexpected data after the end of the document",
}


def _bad_token_problem(data: bytes | str, at: int) -> Problem:
    """The parser's own error for the value that starts at ``at`` and is not one (a bad literal,
    number or string), placed in the document: the parser reads that value alone."""
    rest = data[at:]
    try:
        ANY_JSON.validate_json(rest)
    except ValidationError as error:
        stop = problem_from(next(json_invalid(error)))
    else:  # not reached: no value starts at ``at``
        return Problem("", "malformed JSON: expected a JSON value", *line_and_column(data, at))
    if stop.line is None or stop.column is None:
        return Problem("", stop.message, *line_and_column(data, at))
    return Problem("", stop.message, *line_and_column(data, at + offset_of(rest, stop.line, stop.column)))


def _refuse_malformed_deep_values(data: bytes | str, cut: list[tuple[int, int]]) -> None:
    """Refuse malformed JSON in the values cut out for their depth: serde skips them, but reads
    them as JSON all the same (a NaN, a missing comma, a bad escape deep down still fail)."""
    for start, end in cut:
        fault = syntax_fault(data, start, end)
        if fault is not None:
            line, column = line_and_column(data, fault.at)
            why = f"malformed JSON (in a value nested deeper than {_FLATTEN_BELOW} levels)"
            raise FormatError([Problem("", why, line, column)])
