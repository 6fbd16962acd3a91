"""The wire codec: reading and writing conversations exactly as orion-core's serde does.

``loads`` and ``dumps`` work on a whole conversation (a JSON array of messages);
``loads_message`` and ``dumps_message`` on one message, as a JSON Lines record holds it.
The pydantic adapters are built once, here, at import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Literal, TypeVar, get_args

import orjson
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails, from_json

from ._collector import collector_paused
from ._json_rules import (
    SERDE_DEPTH_LIMIT,
    UNKNOWN_VALUE_ERROR,
    duplicate_key_paths,
    first_deeper_than,
    first_non_finite_literal,
    line_and_column,
    lone_surrogates,
    minus_zero_as_float,
    offset_of,
    open_path,
    unreadable_spans,
    value_problem,
    without_exponent_signs,
)
from ._problems import ProblemFrom, format_error, problem_from, problems_from
from ._text import kind_of, location, quoted
from ._unknown_values import (
    Origin,
    is_malformed,
    is_too_deep,
    json_invalid,
    past_unreadable_values,
    without_unwritable_unknown_keys,
)
from .checks import find_problems
from .errors import ArgumentTypeError, ArgumentValueError, FormatError, Problem, require_bool
from .models import Message, ToolCall, ToolResult, _WireModel, is_complete, require_ordered

__all__ = ["FloatStyle", "dumps", "dumps_message", "loads", "loads_message"]

# Write NaN and infinity as the literals, as the models do (the list adapter would write null):
# they reach a dump only by skipping validation (model_construct, model_copy), and ``_dump``
# finds the literals and refuses them rather than write a file that no longer loads.
# Cache only the keys while parsing, as the models' own config says: the adapter's setting is
# the one the parser uses, and caching every short string value (the default) makes a load
# 4-15% slower, measured on both benchmark corpora, for 2-7% less memory.
_CONVERSATION: TypeAdapter[list[Message]] = TypeAdapter(
    list[Message], config=ConfigDict(ser_json_inf_nan="constants", cache_strings="keys")
)


def json_input(data: bytes | bytearray | memoryview | str, reader: str) -> bytes | str:
    """``data`` as the parser takes it (``bytes`` or ``str``), or ``ArgumentTypeError`` naming
    ``reader`` when it is neither JSON text nor bytes (``loads(None)``)."""
    if type(data) is bytes or type(data) is str:
        return data
    # A subclass (numpy.str_, a host's own) as the plain type, with its own text whatever its
    # __str__ or __bytes__ says (str's method, the buffer): the scanners look up by type.
    if isinstance(data, str):
        return str.__str__(data)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(memoryview(data))
    raise ArgumentTypeError(f"{reader}: expected JSON as bytes or str, got {kind_of(data)}")


def loads(data: bytes | bytearray | memoryview | str, *, strict: bool = False) -> list[Message]:
    """Read a conversation: a JSON array of messages, as orion-core writes it.

    Accepts what orion-core accepts and rejects what it rejects, with the exceptions
    docs/compatibility.md lists (a repeated key is refused only with ``strict=True``; forms serde
    reads and orion-core never writes are refused). Unknown keys are kept; one whose value cannot
    be written back exactly (``1e400``, nesting deeper than ``VALUE_DEPTH_MAX`` levels, a lone
    surrogate escape, a number too long for the parser) is left out with an ``UnknownKeyWarning``.

    With ``strict=True``, a known key repeated in one object (serde's "duplicate field") and
    every problem ``find_problems`` finds are errors too (the one meaning of "strict" in this
    library). A key repeated in ``arguments`` or in an unknown key's value is no error: serde
    keeps the last value there, as this library does.

    Raises:
        FormatError: with every problem and its location; nothing is returned partially.
        ArgumentTypeError: ``data`` is not ``bytes``, ``bytearray``, ``memoryview`` or ``str``.
    """
    require_bool("strict", strict)
    return load_conversation(json_input(data, "loads"), strict=strict)


def load_conversation(
    data: bytes | str, *, strict: bool = False, origin: Origin | None = None
) -> list[Message]:
    """``loads``, for the package's readers of files: ``origin`` says where the document comes
    from, for the warnings (the file; each record's line, for JSON Lines records joined)."""
    with collector_paused():
        messages = validate_json(_CONVERSATION, data, problem_from, origin=origin)
    if strict:
        problems = [*duplicate_key_problems(data), *find_problems(messages)]
        if problems:
            raise FormatError(problems)
    return messages


def loads_message(data: bytes | bytearray | memoryview | str, *, strict: bool = False) -> Message:
    """Read one message (a JSON object), such as one line of a JSON Lines log.

    With ``strict=True``, a known key repeated in one object is an error (as for ``loads``). The
    semantic problems that ``find_problems`` finds span messages: a reader of a whole log runs
    ``find_problems`` over what it read.

    Raises:
        FormatError: with every problem and its location; a JSON array of messages (a whole
            conversation, which ``loads`` reads) is refused as such.
        ArgumentTypeError: ``data`` is not ``bytes``, ``bytearray``, ``memoryview`` or ``str``.
    """
    require_bool("strict", strict)
    return load_message(json_input(data, "loads_message"), strict=strict)


def load_message(data: bytes | str, *, strict: bool = False, origin: Origin | None = None) -> Message:
    """``loads_message``, for the package's readers of files (``origin``: see ``load_conversation``)."""
    # Pausing costs about as much as reading a short line: only a big message's build is paused.
    pause: AbstractContextManager[None] = (
        collector_paused() if len(data) >= PAUSED_MESSAGE_SIZE else nullcontext()
    )
    try:
        with pause:
            message = validate_json(_MESSAGE, data, problem_from, origin=origin)
    except FormatError:
        if is_array_of_objects(data):
            why = "expected one message (a JSON object), found a JSON array of objects: a conversation (loads reads one)"
            raise FormatError([Problem("", why)]) from None
        raise
    if strict and (problems := duplicate_key_problems(data)):
        raise FormatError(problems)
    return message


PAUSED_MESSAGE_SIZE = 16_384
"""The size (bytes or characters) from which ``loads_message`` pauses the collector while it
builds the message, as ``loads`` always does: arguments of a few hundred thousand objects take
a third to a half less time paused (more, the more a host holds), and below this size the pause
would cost more than it saves."""


def is_array_of_objects(data: bytes | str) -> bool:
    """Whether ``data`` opens an array whose first item is an object: a conversation where one
    message was expected. A struct written as an array of its fields (``["msg-1","user",...]``)
    has its own message."""
    return _ARRAY_OF_OBJECTS[type(data)].match(data) is not None


_ARRAY_OF_OBJECTS: dict[type, re.Pattern[Any]] = {
    bytes: re.compile(rb"[ \t\r\n]*\[[ \t\r\n]*\{"),
    str: re.compile(r"[ \t\r\n]*\[[ \t\r\n]*\{"),
}


StructFields = Callable[[tuple[int | str, ...]], "frozenset[str] | None"]
"""The known keys of the object at a path of a document, or None where serde reads a map or
skips the value (``arguments``, an unknown key's value): there a repeated key is no error."""

_MESSAGE_FIELDS = frozenset(Message.model_fields)
_CALL_FIELDS = frozenset(ToolCall.model_fields)
_RESULT_FIELDS = frozenset(ToolResult.model_fields)


def message_fields(path: tuple[int | str, ...]) -> frozenset[str] | None:
    """``StructFields`` of a message: its own keys, a tool call's, its tool result's."""
    if not path:
        return _MESSAGE_FIELDS
    if len(path) == 2 and path[0] == "tool_calls" and isinstance(path[1], int):
        return _CALL_FIELDS
    return _RESULT_FIELDS if path == ("tool_result",) else None


def _document_fields(path: tuple[int | str, ...]) -> frozenset[str] | None:
    """``StructFields`` of a conversation (an array of messages) or of one message."""
    return message_fields(path[1:]) if path and isinstance(path[0], int) else message_fields(path)


def is_one_json_object(data: bytes | str) -> bool:
    """Whether ``data`` holds one JSON object and nothing after it, so that records (log lines,
    stored rows) can be joined into one array and validated at once without one reaching into
    another. Any number is taken (``1e400`` too): the validation that follows judges it."""
    try:  # orjson first: half the time of jiter here; jiter for the numbers orjson refuses
        return isinstance(orjson.loads(data), dict)
    except orjson.JSONDecodeError:
        pass
    try:
        return isinstance(from_json(data, allow_inf_nan=True), dict)
    except ValueError:
        return False


def duplicate_key_problems(
    data: bytes | str, fields: StructFields | None = _document_fields
) -> list[Problem]:
    """A problem for every known key repeated in one object of ``data`` (serde's "duplicate field").

    The check ``strict=True`` adds; one pass of a C parser, only walked when a key repeats.
    ``fields`` says which keys an object knows: serde reads a map (``arguments``) with the last
    value winning and skips an unknown key's value, so a key repeated there is no error.
    ``None``: every key counts (another format's document, whose every value is read: a
    repeated key would lose one silently).
    """
    return [
        Problem(location(path), f"duplicate key {quoted(key)} in one object")
        for path, key in duplicate_key_paths(data)
        if fields is None or key in (fields(path) or ())
    ]


T = TypeVar("T")


def validate_json(
    adapter: TypeAdapter[T],
    data: bytes | str,
    problem: ProblemFrom,
    *,
    read_whole: bool = False,
    origin: Origin | None = None,
) -> T:
    """``adapter.validate_json`` with serde's reading of ``-0`` and of unknown keys.

    Shared by every reader in the package. ``problem`` says one of pydantic's error details as
    a problem to report (events name their locations differently). ``read_whole``: serde reads
    every value of the document before the type sees it (an internally tagged enum: an event),
    so an unknown key's value serde cannot read refuses the document instead of being skipped.
    ``origin``: where the document comes from, named in the warnings for unknown keys left out.

    Raises:
        FormatError: the document does not load in orion-core either.
    """
    fixed = minus_zero_as_float(data)
    try:
        # The validator itself: ``TypeAdapter.validate_json`` only forwards its default options,
        # and that Python frame is a third of the cost of reading one short JSON Lines record.
        value: T = adapter.validator.validate_json(fixed)
    except ValidationError as error:
        failure, details = error, error.errors(include_url=False)  # listed once: there may be millions
    else:
        # Validated, only an integer past serde_json's range can remain in an unknown key.
        if read_whole and _long_digit_run(data) and (refused := _unreadable_by_serde(data)):
            raise FormatError([refused])
        return value
    # The error path: NaN is malformed JSON (jiter reads it, serde does not), unless the parser
    # stopped earlier at a depth it cannot read; then values orion-core would skip unread.
    if not is_too_deep(failure):
        refuse_non_finite_literal(data, _malformed_at(failure))
    # Where the parser stopped may be a value serde skips unread: what serde meets past it.
    if not read_whole and (past := past_unreadable_values(adapter, data, failure, _document_fields)):
        refuse_non_finite_literal(data, past.stop)
        if past.problem is not None:
            raise _explained(FormatError([past.problem]), data, skips_unknown=True, numbers_read=True)
    # In a document serde reads whole, an unknown value it cannot read is not skipped; a known
    # field's own error says more, so this is asked only when all that failed is unknown keys.
    if read_whole and _only_unknown_keys(failure, details) and (refused := _unreadable_whole(data)):
        raise FormatError([refused])
    recovered = without_unwritable_unknown_keys(
        adapter, data, fixed, failure, details, skipped_unread=not read_whole, origin=origin
    )
    if isinstance(recovered, ValidationError):  # a known field is wrong beside unknown values dropped
        listed = details if recovered is failure else recovered.errors(include_url=False)
        raise format_error([d for d in listed if d["type"] != UNKNOWN_VALUE_ERROR], problem)
    if recovered is not None:
        return recovered
    if fixed is not data and is_malformed(failure):
        try:  # report malformed JSON at its place in the document as given
            adapter.validate_json(data)
        except ValidationError as original:
            details = original.errors(include_url=False)
    raise _explained(format_error(details, problem), data, skips_unknown=not read_whole)


# An integer of 309 digits or more may be past serde_json's range (``SERDE_INT_LIMIT``).
_BYTES_LONG_DIGITS: re.Pattern[Any] = re.compile(rb"[0-9]{309}")
_TEXT_LONG_DIGITS: re.Pattern[Any] = re.compile(r"[0-9]{309}")


def _only_unknown_keys(error: ValidationError, details: list[ErrorDetails]) -> bool:
    """Whether every problem of ``error`` (listed in ``details``) is in an unknown key's value
    (or past the parser's depth)."""
    return is_too_deep(error) or all(detail["type"] == UNKNOWN_VALUE_ERROR for detail in details)


def _unreadable_whole(data: bytes | str) -> Problem | None:
    return _too_deep_for_serde(data) or _unreadable_by_serde(data)


def _long_digit_run(data: bytes | str) -> bool:
    return (_BYTES_LONG_DIGITS if isinstance(data, bytes) else _TEXT_LONG_DIGITS).search(data) is not None


def _too_deep_for_serde(data: bytes | str) -> Problem | None:
    """Nesting past serde_json's limit, anywhere in a document serde reads whole."""
    start = first_deeper_than(data, SERDE_DEPTH_LIMIT - 1)
    if start is None:
        return None
    line, column = line_and_column(data, start)
    why = f"nested too deeply: serde_json reads {SERDE_DEPTH_LIMIT - 1} levels in all, and reads an event whole, unknown keys included"
    return Problem("", why, line, column)


def _unreadable_by_serde(data: bytes | str) -> Problem | None:
    """A number past a double's range anywhere in a document serde reads whole (``1e400``, an
    integer past ``SERDE_INT_LIMIT``): serde_json refuses it, "number out of range"."""
    try:
        document = from_json(data, allow_inf_nan=True)
    except ValueError:  # malformed: the parser's own error is reported
        return None
    found = value_problem(document, depth=False, serde=True)
    if found is None:
        return None
    return Problem(location(found[0]), f"{found[1]}: serde_json reads an event whole, unknown keys included")


def refuse_non_finite_literal(data: bytes | str, parser_stop: tuple[int, int] | None) -> None:
    """Refuse a NaN or infinity literal, unless the parser stopped on malformed JSON before it
    (then what looks like one may lie inside a string whose quote the damage removed)."""
    literal = first_non_finite_literal(data)
    if literal is not None and (parser_stop is None or literal[1:] <= parser_stop):
        name, line, column = literal
        why = f"malformed JSON: expected a JSON value, found {name} (JSON has no NaN or infinity)"
        raise FormatError([Problem("", why, line, column)])


def _malformed_at(error: ValidationError) -> tuple[int, int] | None:
    """The line and column where the parser stopped on malformed JSON, or None."""
    for detail in json_invalid(error):
        problem = problem_from(detail)
        if problem.line is not None and problem.column is not None:
            return problem.line, problem.column
    return None


def _explained(
    error: FormatError, data: bytes | str, *, skips_unknown: bool, numbers_read: bool = False
) -> FormatError:
    """Place malformed JSON where serde_json reports it, and say plainly why a document that is
    empty or starts with a byte order mark is not JSON. ``skips_unknown``: serde skips unknown
    keys' values unread (a message's, not an event's, which it reads whole). ``numbers_read``:
    the parser read past the numbers too long for it (``past_unreadable_values``), so a problem
    at one is not its own."""
    if len(error.problems) != 1:
        return error
    (problem,) = error.problems
    if _ONLY_WHITESPACE[type(data)].fullmatch(data):
        # serde_json's position of the end: the line it is on and the bytes before it there.
        line, column = line_and_column(data, len(data))
        return FormatError(
            [Problem("", "malformed JSON: the document is empty", line, column - 1)], source=error.source
        )
    if encoding := _byte_order_mark(data):  # before the UTF-8 check: no JSON value starts with one
        why = "malformed JSON: the document starts with a byte order mark, which JSON does not allow"
        if encoding != "UTF-8":
            why = f"malformed JSON: the document starts with a {encoding} byte order mark: it is {encoding} text, and JSON here must be UTF-8"
        return FormatError([Problem("", why, 1, 1)], source=error.source)
    if isinstance(data, bytes) and _UTF8_WORDING in problem.message:
        return _at_invalid_utf8(error, data)
    if not numbers_read and (moved := _at_number_end(problem, data)):
        return FormatError([moved], source=error.source)
    if skips_unknown and (moved := _in_skipped_string(problem, data)):
        return FormatError([moved], source=error.source)
    return error


# UTF-32's marks first: UTF-32LE's starts with UTF-16LE's.
_BYTE_ORDER_MARKS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
    (b"\xef\xbb\xbf", "UTF-8"),
)


def _byte_order_mark(data: bytes | str) -> str | None:
    """The encoding whose byte order mark ``data`` starts with, or None."""
    if isinstance(data, str):
        return "UTF-8" if data.startswith("\ufeff") else None
    return next((encoding for mark, encoding in _BYTE_ORDER_MARKS if data.startswith(mark)), None)


_UTF8_WORDING = "invalid UTF-8"
_CONTROL_WORDING = "control character (\\u0000-\\u001F) found while parsing a string"
_ONLY_WHITESPACE: dict[type, re.Pattern[Any]] = {
    bytes: re.compile(rb"[ \t\n\r]*"),
    str: re.compile(r"[ \t\n\r]*"),
}
_STRING: re.Pattern[bytes] = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _at_number_end(problem: Problem, data: bytes | str) -> Problem | None:
    """A problem the parser placed inside a number too long for it, moved to the number's last
    character, where serde_json reports it ("number out of range")."""
    if problem.line is None or problem.column is None:
        return None
    for span in unreadable_spans(data):
        if span.is_number and line_and_column(data, span.start) <= (
            problem.line,
            problem.column,
        ) <= line_and_column(data, span.end):
            return Problem(problem.location, problem.message, *line_and_column(data, span.end - 1))
    return None


def _in_skipped_string(problem: Problem, data: bytes | str) -> Problem | None:
    """A raw control character in an unknown key's value, placed where serde_json places it
    there: one column left of where it places one in a string it reads (skipping a string, it
    reports the error before stepping over the character)."""
    if problem.line is None or problem.column is None or not problem.message.endswith(_CONTROL_WORDING):
        return None
    opened = open_path(data, offset_of(data, problem.line, problem.column))
    if opened is None:
        return None
    path, at_key = opened
    path = path[:-1] if at_key else path  # an object's own key is read, known or not
    for depth, step in enumerate(path):
        known = _document_fields(path[:depth])
        if isinstance(step, str) and known is not None and step not in known:
            return Problem(problem.location, problem.message, problem.line, problem.column - 1)
    return None


def _at_invalid_utf8(error: FormatError, data: bytes) -> FormatError:
    """Place an invalid-UTF-8 problem where serde_json reports it: a bad byte in a string (or a
    key) at the string's closing quote, where serde checks the string; anywhere else at the byte.

    Python's decoder finds the byte (jiter's column for it differs between versions; the
    decoder's offset is a structured value). The column counts bytes, as serde_json's do.
    """
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        at = bad.start
        # Up to the bad byte the JSON is well-formed, so its strings are found one after another.
        for string in _STRING.finditer(data):
            if string.start() > at:
                break
            if string.end() > at:
                at = string.end() - 1
                break
        (problem,) = error.problems
        return FormatError(
            [Problem(problem.location, problem.message, *line_and_column(data, at))], source=error.source
        )
    return error


FloatStyle = Literal["zmij", "ryu"]
"""How floats are spelled: ``"zmij"`` as serde_json 1.0.146 and later (``1e+16``, the default),
``"ryu"`` as serde_json before it (``1e16``). Only the sign of a positive exponent differs."""


def dumps(
    messages: Iterable[Message], *, indent: int | None = None, float_style: FloatStyle = "zmij"
) -> bytes:
    """Write a conversation as orion-core writes it: compact UTF-8 JSON, its key order and omissions.

    ``indent=2`` gives serde_json's pretty form. Unknown keys are written after the known ones.
    Floats are spelled as current serde_json spells them (``1e+16``); ``float_style="ryu"``
    gives the spelling of orion-core builds with serde_json before 1.0.146 (``1e16``).

    Raises:
        TypeError: ``messages`` is one message, a string, a mapping or a set (which keeps no
            order) rather than a list, or an item is not a ``Message`` (the message names it: ``[3]``).
        FormatError: a message holds something that cannot be written back losslessly.
    """
    return dump_json(
        _CONVERSATION,
        listed_messages(messages, "dumps", "dumps_message writes one"),
        indent=indent,
        float_style=float_style,
    )


def listed_messages(messages: Iterable[Message], writer: str, hint: str) -> list[Message]:
    """``messages`` as a list for ``writer``; ``ArgumentTypeError`` for text, anything not
    iterable (a path where the messages go), a set (``require_ordered``), an item that is not a
    ``Message`` (named by its index) and, with ``hint`` saying what to do instead, a mapping or a
    lone message (iterables of their fields)."""
    if isinstance(messages, (Mapping, BaseModel)):
        raise ArgumentTypeError(f"{writer} takes a list of messages, got {kind_of(messages)} ({hint})")
    if isinstance(messages, (str, bytes, bytearray)) or not isinstance(messages, Iterable):
        raise ArgumentTypeError(f"{writer} takes a list of messages, got {kind_of(messages)}")
    require_ordered(messages, writer)
    listed = messages if isinstance(messages, list) else list(messages)
    # pydantic-core would write None as null and another model by the fields it shares with a
    # message. The types are gathered in C: no Python work per message.
    if not all(issubclass(kind, Message) for kind in set(map(type, listed))):
        _refuse_non_messages(listed, f"{writer}: ")
    return listed


def file_bytes(messages: list[Message], *, indent: int | None = None) -> bytes:
    """``dumps`` for bytes bound for a file: always looked through for NaN and infinity.

    Validation keeps them out, but a value changed in place inside a message (an ``arguments``
    dict, which Python cannot freeze) may hold one; a file that would not load again must never
    replace one that does. The look costs little beside writing the file.
    """
    return dump_json(_CONVERSATION, messages, indent=indent, check_numbers=True)


def record_bytes(message: Message) -> bytes:
    """``dumps_message`` for a record bound for a file or a database row, looked through for
    NaN and infinity as ``file_bytes`` is (a log with a record it cannot read is stuck).

    Only a message holding free JSON values (``arguments``, unknown keys' values: the dicts and
    lists Python lets a caller change) is looked through; every other value was validated.
    """
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"expected a Message, got {kind_of(message)}")
    return dump_json(_MESSAGE, message, check_numbers=_holds_free_values(message))


def _holds_free_values(message: Message) -> bool:
    result = message.tool_result
    return bool(
        message.tool_calls or message.__pydantic_extra__ or (result is not None and result.__pydantic_extra__)
    )


def dumps_message(message: Message, *, indent: int | None = None, float_style: FloatStyle = "zmij") -> bytes:
    """Write one message as a JSON object: compact, as a JSON Lines record holds it, or with
    ``indent=2`` in serde_json's pretty form.

    Raises:
        TypeError: ``message`` is not a ``Message``.
        FormatError: the message holds something that cannot be written back losslessly.
    """
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"expected a Message, got {kind_of(message)}")
    return dump_json(_MESSAGE, message, indent=indent, float_style=float_style)


_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


def dump_json(
    adapter: TypeAdapter[Any],
    value: Any,
    *,
    indent: int | None = None,
    float_style: FloatStyle = "zmij",
    check_numbers: bool = False,
    **options: Any,
) -> bytes:
    """``adapter.dump_json`` (the models' own omission rules), refusing what cannot be read back.

    Shared by every writer in the package (conversations, messages, events); ``options`` go to
    pydantic's ``dump_json``. pydantic-core already spells floats as current serde_json does.
    ``check_numbers``: look for NaN and infinity even if no value was set without validation.
    """
    _check_options(indent, float_style)
    try:
        # warnings="error": a value of the wrong type (a dict in a list of messages, a float set
        # through model_construct) is refused instead of written with a warning.
        data = adapter.dump_json(value, indent=indent, warnings="error", **options)
    except ValueError as error:  # also Python refusing to spell an integer of over 4300 digits
        if adapter is _CONVERSATION:  # a free JSON value may be a list of anything
            _refuse_non_messages(value)
        raise FormatError([_unwritable(value, _serialization_reason(value, error))]) from None
    # NaN and infinity reach a model only past validation (model_construct), which raises the
    # flag; the writer spells them as literals, and the scan finds any.
    if (check_numbers or _WireModel.values_unchecked) and (literal := first_non_finite_literal(data)):
        why = f"a number is {literal[0]}, which JSON cannot hold (set without validation: through model_construct, or changed in place)"
        raise FormatError([_unwritable(value, why)])
    if _WireModel.incomplete_alive and adapter in (_CONVERSATION, _MESSAGE) and not _all_complete(value):
        _require_readable(adapter, data)
    if float_style == "ryu":
        data = without_exponent_signs(data)
    return data


def _all_complete(value: Message | list[Message]) -> bool:
    return all(map(is_complete, value)) if isinstance(value, list) else is_complete(value)


def _require_readable(adapter: TypeAdapter[Any], data: bytes) -> None:
    """Refuse ``data`` that ``adapter`` does not read back: a message written without a field
    ``model_construct`` left out (``[0].timestamp``)."""
    try:
        adapter.validate_json(data)
    except ValidationError as error:
        raise FormatError(list(problems_from(error))) from None


INDENT_MAX = 1024
"""The widest indent the writers take: serde_json's pretty form is 2, and each nesting level
repeats the indent, so more is a mistake (past 2**63 the writer cannot take it at all)."""

_FLOAT_STYLES = get_args(FloatStyle)  # a tuple: an unhashable value is compared, not hashed


def _check_options(indent: object, float_style: object) -> None:
    """Refuse a writer's options that would otherwise be taken by truthiness or ignored."""
    if indent is not None and type(indent) is not int:
        raise ArgumentTypeError(f"indent must be None or an int, got {kind_of(indent)} {indent!r}")
    if indent is not None and not 0 <= indent <= INDENT_MAX:
        raise ArgumentValueError(f"indent must be between 0 and {INDENT_MAX}, got {indent}")
    if float_style not in _FLOAT_STYLES:
        raise ArgumentValueError(f'float_style must be "zmij" or "ryu", got {float_style!r}')


def _unwritable(value: Any, why: str) -> Problem:
    """The problem of a value the writer refused, placed at the first message that cannot be
    written (a rare, failing path: each message of a list is written again)."""
    problem = Problem("", f"cannot be written as JSON: {why}")
    for index, message in enumerate(value) if isinstance(value, list) else [(None, value)]:
        if not isinstance(message, Message):
            continue  # an event: its own location is not known here
        where = "" if index is None else f"[{index}]"
        try:
            written = _MESSAGE.dump_json(message, warnings="error")
        except ValueError:
            found = invalid_field(message) or unencodable_string(message, problem)
            return FormatError([found or problem]).within(where).problems[0]
        if first_non_finite_literal(written) is not None:
            return FormatError([non_finite_number(message, problem) or problem]).within(where).problems[0]
    return problem


def non_finite_number(model: BaseModel, problem: Problem) -> Problem | None:
    """``problem`` placed at the first NaN or infinity in ``model``, a message or an event
    (``tool_calls[0].arguments.a[2]``), put there past validation (``model_construct``, or a
    value changed in place)."""
    found = value_problem(model.model_dump(mode="json", warnings=False), unknown=True, depth=False)
    return None if found is None else Problem(location(found[0]), problem.message)


def unencodable_string(model: BaseModel, problem: Problem) -> Problem | None:
    """``problem`` placed at the first string of ``model`` (a message, an event) that UTF-8
    cannot encode: one holding a lone surrogate, which a model built in Python may hold."""
    found = next(lone_surrogates(model.model_dump(warnings=False)), None)
    return None if found is None else Problem(location(found.path), problem.message)


def _refuse_non_messages(value: Any, writer: str = "") -> None:
    """Raise ``TypeError`` for the first item of a list of messages that is not one, after
    ``writer`` (the function's name and a colon, when known)."""
    for index, item in enumerate(value if isinstance(value, list) else ()):
        if not isinstance(item, Message):
            raise ArgumentTypeError(f"{writer}[{index}]: expected a Message, found {kind_of(item)}") from None


def invalid_field(model: BaseModel, problem: ProblemFrom = problem_from) -> Problem | None:
    """The first field validation refuses in a model built without it (``model_construct``),
    in the model or in one it holds (``tool_result.content``, ``messages[1].timestamp``): the
    models inside are taken as they are by validating the outer one, so each is looked at.
    ``problem`` says validation's error about ``model``'s own fields (events word theirs their
    own way); the models inside are messages and their parts, worded as ``problem_from`` does."""
    # model_construct may leave the extras under their own name in __dict__ too: taken once.
    fields = {name: value for name, value in model.__dict__.items() if name != "__pydantic_extra__"}
    try:
        type(model).model_validate({**fields, **(model.__pydantic_extra__ or {})})
    except ValidationError as error:
        return problem(error.errors(include_url=False)[0])
    for name, value in fields.items():
        for index, item in enumerate(value) if isinstance(value, (tuple, list)) else [(None, value)]:
            if isinstance(item, BaseModel) and (found := invalid_field(item)) is not None:
                return FormatError([found]).within(name if index is None else f"{name}[{index}]").problems[0]
    return None


def _serialization_reason(value: Any, error: ValueError) -> str:
    """Why the writer refused ``value`` (a model, a list of models, a free JSON value): found in
    the value where the reason can be (an unpaired surrogate), else the writer's own words."""
    if next(lone_surrogates(_as_data(value)), None) is not None:
        return "a string holds an unpaired surrogate, which UTF-8 cannot encode"
    return str(error).removeprefix("Error serializing to JSON: ")


def _as_data(value: Any) -> Any:
    """``value`` with its models as plain data (no warning for a value set past validation)."""
    if isinstance(value, BaseModel):
        return value.model_dump(warnings=False)
    if isinstance(value, list):
        return [_as_data(item) for item in value]
    return value
