"""The wire codec: reading and writing conversations exactly as orion-core's serde does.

``loads`` and ``dumps`` work on a whole conversation (a JSON array of messages);
``loads_message`` and ``dumps_message`` on one message, as a JSON Lines record holds it.
The pydantic adapters are built once, here, at import.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from ._problems import format_error, location
from .checks import find_problems
from .errors import FormatError, Problem
from .models import Message

__all__ = ["dumps", "dumps_message", "loads", "loads_message"]

# Write NaN and infinity as the literals, as the models do (the list adapter would write null):
# they reach a dump only by skipping validation (model_construct, model_copy), and ``_dump``
# finds the literals and refuses them rather than write a file that no longer loads.
_CONVERSATION: TypeAdapter[list[Message]] = TypeAdapter(
    list[Message], config=ConfigDict(ser_json_inf_nan="constants")
)

# serde_json (ryu) writes a float's positive exponent without a sign (1e20); pydantic-core writes
# 1e+20. Outside strings, the only place "e+" follows a digit is such an exponent.
_STRING_OR_EXPONENT = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(?<=[0-9])e\+')


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a large, acyclic batch of models is built.

    Each new model counts towards a collection and collections walk every live model, which
    makes a big load several times slower; the models built hold no reference cycles.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def loads(data: bytes | bytearray | memoryview | str, *, strict: bool = False) -> list[Message]:
    """Read a conversation: a JSON array of messages, as orion-core writes it.

    Accepts what orion-core accepts and rejects what it rejects (see the README's wire table),
    and keeps unknown keys. With ``strict=True``, duplicate keys and the semantic problems that
    ``Conversation.check`` finds are errors too.

    Raises:
        FormatError: with every problem and its location; nothing is returned partially.
    """
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    if strict:
        _reject_duplicate_keys(data)
    try:
        with _collector_paused():
            messages = _CONVERSATION.validate_json(data)
    except ValidationError as error:
        raise _rejection(error, data) from None
    if strict:
        problems = find_problems(messages)
        if problems:
            raise FormatError(problems)
    return messages


def loads_message(data: bytes | bytearray | memoryview | str) -> Message:
    """Read one message (a JSON object), such as one line of a JSON Lines log."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    try:
        return Message.model_validate_json(data)
    except ValidationError as error:
        raise _rejection(error, data) from None


def _rejection(error: ValidationError, data: bytes | str) -> FormatError:
    """The ``FormatError`` for a document that failed validation.

    jiter parses ``NaN`` and ``Infinity``, which serde refuses; every place such a number can
    land fails validation (typed fields by type, JSON values by the models' validators), so the
    literal is looked for here, on the error path only, to report it as the malformed JSON it is.
    """
    try:
        _reject_non_finite_literals(data)
    except FormatError as literal:
        return literal
    return _explained(format_error(error), data)


def _explained(error: FormatError, data: bytes | str) -> FormatError:
    """Say plainly why a document that is empty or starts with a byte order mark is not JSON."""
    if len(error.problems) != 1 or error.problems[0].line != 1:
        return error
    if not data.strip():
        why = "the document is empty"
    elif data.startswith(b"\xef\xbb\xbf" if isinstance(data, bytes) else "\ufeff"):  # type: ignore[arg-type]
        why = "the document starts with a byte order mark, which JSON does not allow"
    else:
        return error
    return FormatError([Problem("", f"malformed JSON: {why}", 1, 1)], source=error.source)


def dumps(messages: Iterable[Message], *, indent: int | None = None) -> bytes:
    """Write a conversation as orion-core writes it: compact UTF-8 JSON, its key order and omissions.

    ``indent=2`` gives serde_json's pretty form. Unknown keys are written after the known ones.

    Raises:
        FormatError: a message holds something that cannot be written back losslessly.
    """
    if not isinstance(messages, list):
        messages = list(messages)
    return _dump_json(_CONVERSATION, messages, indent=indent)


def dumps_message(message: Message, *, indent: int | None = None) -> bytes:
    """Write one message as a compact JSON object, as a JSON Lines record holds it."""
    return _dump_json(_MESSAGE, message, indent=indent)


_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


def _dump_json(adapter: TypeAdapter[Any], value: Any, *, indent: int | None = None, **options: Any) -> bytes:
    """``adapter.dump_json`` with orion-core's omissions and float spelling, refusing lossy data.

    Shared by every writer in the package (conversations, messages, events); ``options`` go to
    pydantic's ``dump_json``.
    """
    try:
        data = adapter.dump_json(value, exclude_defaults=True, indent=indent, **options)
    except PydanticSerializationError as error:
        raise FormatError(
            [Problem("", f"cannot be written as JSON: {_serialization_reason(error)}")]
        ) from None
    except ValueError as error:  # Python refuses to spell an integer of more than 4300 digits
        raise FormatError([Problem("", f"cannot be written as JSON: {error}")]) from None
    if (b"NaN" in data or b"Infinity" in data) and (literal := _non_finite_written(data)):
        where = ""
        if isinstance(value, list):  # name the message (a rare, failing path: dump each again)
            where = next(
                (f"[{i}]" for i, m in enumerate(value) if _non_finite_written(_MESSAGE.dump_json(m))), ""
            )
        raise FormatError(
            [
                Problem(
                    where,
                    f"cannot be written as JSON: a number is {literal}, which JSON cannot hold "
                    "(set without validation, through model_construct or model_copy)",
                )
            ]
        )
    if b"e+" in data:
        data = _STRING_OR_EXPONENT.sub(_drop_exponent_sign, data)
    return data


_STRING_OR_NON_FINITE_BYTES = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)')


def _non_finite_written(data: bytes) -> str | None:
    """The first NaN or Infinity literal outside a string in ``data`` (pydantic's output)."""
    for match in _STRING_OR_NON_FINITE_BYTES.finditer(data):
        if match[1] is not None:
            return match[1].decode()
    return None


def _drop_exponent_sign(match: re.Match[bytes]) -> bytes:
    text = match[0]
    return text if text[:1] == b'"' else b"e"


def _serialization_reason(error: PydanticSerializationError) -> str:
    text = str(error).removeprefix("Error serializing to JSON: ")
    if "surrogates not allowed" in text:
        return "a string holds an unpaired surrogate, which UTF-8 cannot encode"
    return text


def _reject_non_finite_literals(data: bytes | str) -> None:
    # jiter accepts NaN and Infinity; serde does not. A cheap scan finds candidates, and the
    # standard parser tells a real literal from the same letters inside a string.
    if isinstance(data, str):
        suspicious = "NaN" in data or "Infinity" in data
    else:
        suspicious = b"NaN" in data or b"Infinity" in data
    if not suspicious:
        return
    try:
        json.loads(data, parse_constant=_refuse_constant)
    except _NonFiniteLiteral as literal:
        line, column = _literal_position(data)
        raise FormatError(
            [
                Problem(
                    "",
                    f"malformed JSON: expected a JSON value, found {literal} (JSON has no NaN or infinity)",
                    line,
                    column,
                )
            ]
        ) from None
    except (ValueError, RecursionError):
        pass  # malformed or nested too deeply: the main parser reports it with its position


# A string (skipped) or a NaN/Infinity literal outside strings.
_STRING_OR_NON_FINITE = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _literal_position(data: bytes | str) -> tuple[int | None, int | None]:
    """The 1-based line and column of the first NaN or Infinity literal outside a string."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    for match in _STRING_OR_NON_FINITE.finditer(text):
        if match[1] is not None:
            start = match.start(1)
            line_start = text.rfind("\n", 0, start) + 1
            return text.count("\n", 0, start) + 1, start - line_start + 1
    return None, None  # pragma: no cover - the standard parser found one


class _NonFiniteLiteral(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteLiteral(name)


def _reject_duplicate_keys(data: bytes | str) -> None:
    try:
        document = json.loads(data, object_pairs_hook=_Pairs)
    except (ValueError, RecursionError):
        return  # malformed or nested too deeply: the main parser reports it with its position
    problems = list(_duplicate_key_problems(document, ()))
    if problems:
        raise FormatError(problems)


class _Pairs(list[tuple[str, Any]]):
    """An object's key/value pairs in order, duplicates included."""


def _duplicate_key_problems(value: Any, path: tuple[int | str, ...]) -> Iterator[Problem]:
    stack: list[tuple[Any, tuple[int | str, ...]]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, _Pairs):
            seen: set[str] = set()
            for key, child in item:
                if key in seen:
                    yield Problem(location(where), f'duplicate key "{key}" in one object')
                seen.add(key)
                stack.append((child, (*where, key)))
        elif isinstance(item, list):
            stack.extend((child, (*where, index)) for index, child in enumerate(item))
