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

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError

from ._problems import format_error, location
from .errors import FormatError, Problem
from .models import Message

__all__ = ["dumps", "dumps_message", "loads", "loads_message"]

_CONVERSATION: TypeAdapter[list[Message]] = TypeAdapter(list[Message])

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
    _reject_non_finite_literals(data)
    if strict:
        _reject_duplicate_keys(data)
    try:
        with _collector_paused():
            messages = _CONVERSATION.validate_json(data)
    except ValidationError as error:
        raise format_error(error) from None
    if strict:
        from .conversation import check  # the conversation builds on this module

        problems = check(messages)
        if problems:
            raise FormatError(problems)
    return messages


def loads_message(data: bytes | bytearray | memoryview | str) -> Message:
    """Read one message (a JSON object), such as one line of a JSON Lines log."""
    if isinstance(data, (bytearray, memoryview)):
        data = bytes(data)
    _reject_non_finite_literals(data)
    try:
        return Message.model_validate_json(data)
    except ValidationError as error:
        raise format_error(error) from None


def dumps(messages: Iterable[Message], *, indent: int | None = None) -> bytes:
    """Write a conversation as orion-core writes it: compact UTF-8 JSON, its key order and omissions.

    ``indent=2`` gives serde_json's pretty form. Unknown keys are written after the known ones.

    Raises:
        FormatError: a message holds something that cannot be written back losslessly.
    """
    if not isinstance(messages, list):
        messages = list(messages)
    return _dump(_CONVERSATION, messages, indent)


def dumps_message(message: Message, *, indent: int | None = None) -> bytes:
    """Write one message as a compact JSON object, as a JSON Lines record holds it."""
    return _dump(_MESSAGE, message, indent)


_MESSAGE: TypeAdapter[Message] = TypeAdapter(Message)


def _dump(adapter: TypeAdapter[Any], value: Any, indent: int | None) -> bytes:
    try:
        data = adapter.dump_json(value, exclude_defaults=True, indent=indent)
    except PydanticSerializationError as error:
        raise FormatError(
            [Problem("", f"cannot be written as JSON: {_serialization_reason(error)}")]
        ) from None
    if b"e+" in data:
        data = _STRING_OR_EXPONENT.sub(_drop_exponent_sign, data)
    return data


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
        raise FormatError(
            [Problem("", f"expected a JSON value, found {literal} (JSON has no NaN or infinity)")]
        ) from None
    except ValueError:
        pass  # malformed in another way: the main parser reports it with its position


class _NonFiniteLiteral(ValueError):
    pass


def _refuse_constant(name: str) -> Any:
    raise _NonFiniteLiteral(name)


def _reject_duplicate_keys(data: bytes | str) -> None:
    try:
        document = json.loads(data, object_pairs_hook=_Pairs)
    except ValueError:
        return  # malformed: the main parser reports it with its position
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
