"""Counting a message's tokens without a chat template: message counters.

A *message counter* takes a ``Message`` and returns its token count (``MessageCounter``); a *text
counter* takes a string (``TextCounter``, what the chat-template plan counts rendered text with).
The two are distinct: each planning entry point checks early that it got the kind it takes and
says which one to use instead.

Without a template, a message counts ``token_count`` where the host filled it in and otherwise
orion-core's estimate, ``max(1, chars // 4)``, over its content and each tool call's name and
arguments (compact JSON).
"""

from __future__ import annotations

import inspect
import json
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from typing import Any

import orjson

from ._text import kind_of
from .errors import ArgumentTypeError, require_bool
from .models import Message, require_message_list
from .text_counters import (
    callable_counter,
    checked_count,
    counter_name,
    estimate_from_length,
    estimate_text_tokens,
    returns_count,
)

__all__ = ["MessageCounter", "TokenCounter", "estimate_tokens", "tokenizer_counter"]

MessageCounter = Callable[[Message], int]
"""A message counter: ``Message -> int`` (the ``count=`` of the planning functions)."""

_TOKEN_COUNT = itemgetter("token_count")


def _arguments_text(arguments: object) -> str:
    try:
        return orjson.dumps(arguments).decode()
    except TypeError:  # an int past 64 bits, deep nesting or a cycle, built from Python
        pass
    try:
        return json.dumps(arguments, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # a cycle, an int too long for str(), not JSON
        return _rough_json(arguments)


@dataclass(frozen=True)
class _Literal:
    """Text to write as is, on ``_rough_json``'s stack."""

    text: str


def _rough_json(value: object) -> str:
    """Text as long as the compact JSON of ``value``, for values ``json`` cannot write.

    Iterative; a container met again is written as ``null``; an int too long for ``str()``
    becomes as many ``9`` as it has digits; anything else not JSON is written as its ``str``.
    """
    out: list[str] = []
    seen: set[int] = set()  # ids of the containers on the way, for this call only
    stack: list[object] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Literal):
            out.append(item.text)
        elif isinstance(item, (dict, list, tuple)):
            if id(item) in seen:
                out.append("null")
                continue
            seen.add(id(item))
            stack.extend(reversed(_rough_members(item)))
            out.append("{" if isinstance(item, dict) else "[")
        elif type(item) is int:
            out.append("-" * (item < 0) + "9" * (int(item.bit_length() * 0.30103) + 1))
        else:
            out.append(json.dumps(item, ensure_ascii=False, default=str))
    return "".join(out)


def _rough_members(item: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> list[object]:
    """A container's members with the punctuation between them, and its closing bracket."""
    pieces: list[object] = []
    if isinstance(item, dict):
        for number, (key, member) in enumerate(item.items()):
            comma = "," if number else ""
            pieces += [_Literal(comma + json.dumps(str(key), ensure_ascii=False) + ":"), member]
        return [*pieces, _Literal("}")]
    for number, member in enumerate(item):
        if number:
            pieces.append(_Literal(","))
        pieces.append(member)
    return [*pieces, _Literal("]")]


def _text_parts(message: Message) -> list[str]:
    parts = [message.content]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(_arguments_text(call.arguments))
    return parts


def estimate_tokens(message: Message | str) -> int:
    """orion-core's estimate, ``max(1, chars // 4)``.

    For a message, the characters are those of its content plus each tool call's name and
    arguments (as compact JSON text); for a string, its own characters.

    Raises:
        ArgumentTypeError: ``message`` is neither a ``Message`` nor a str.
    """
    if isinstance(message, str):
        return estimate_text_tokens(message)
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"estimate_tokens: expected a Message or a str, got {kind_of(message)}")
    return estimate_from_length(sum(map(len, _text_parts(message))))


def _gaps(values: list[int | None]) -> Iterator[int]:
    """The indexes of the ``None`` entries, found at C speed; entries may be filled in meanwhile."""
    index = -1
    while True:
        try:
            index = values.index(None, index + 1)
        except ValueError:
            return
        yield index


class TokenCounter:
    """A message counter that counts each message once and remembers it while the message lives.

    Messages are immutable; a changed copy is a new object and is counted afresh. With
    ``use_token_count``, a message's ``token_count`` is used where the host filled it in and
    ``count`` is asked only for the others. Pass the same counter to every plan of a plain list
    to benefit from the cache (``Conversation`` remembers its counts itself).

    A copy (``copy.copy``, ``copy.deepcopy``) or a pickle holds the same ``count`` and
    ``use_token_count`` and nothing remembered: the counts are kept by the identity of this
    process's messages, which a copy does not share.
    """

    __slots__ = ("__weakref__", "_count", "_counts", "_refs", "_use_token_count")

    def __init__(self, count: MessageCounter, *, use_token_count: bool = False) -> None:
        self._count = _require_message_counter(count, "TokenCounter: count")
        require_bool("TokenCounter: use_token_count", use_token_count)
        self._use_token_count = use_token_count
        self._start_cache()

    def _start_cache(self) -> None:
        # Keyed by id(message), each entry dropped by a weakref callback when its message goes.
        self._counts: dict[int, int] = {}
        self._refs: dict[int, weakref.ref[Message]] = {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({counter_name(self._count)}, use_token_count={self._use_token_count})"

    def __getstate__(self) -> tuple[MessageCounter, bool, dict[str, Any] | None]:
        """``count`` and ``use_token_count`` (and a subclass's own attributes), without the
        counts remembered (see the class)."""
        return self._count, self._use_token_count, getattr(self, "__dict__", None)

    def __setstate__(self, state: tuple[MessageCounter, bool, dict[str, Any] | None]) -> None:
        self._count, self._use_token_count, attributes = state
        if attributes:
            self.__dict__.update(attributes)
        self._start_cache()

    def __copy__(self) -> TokenCounter:
        copied = type(self).__new__(type(self))
        copied.__setstate__(self.__getstate__())
        return copied

    def __deepcopy__(self, memo: dict[int, Any]) -> TokenCounter:
        return self.__copy__()  # the count function itself, uncopied: a tokenizer may be large

    def __call__(self, message: Message) -> int:
        """The message's token count, counted on first sight and remembered.

        Raises:
            ArgumentTypeError: ``message`` is not a ``Message``, the counter raised
                ``TypeError`` or ``AttributeError`` on it and counts its text instead (a text
                counter given a ``Message``), or it returned something other than an int.
            ArgumentValueError: the counter returned a negative count or one above ``COUNT_MAX``
                (``orion_messages.text_counters``, 2**64 - 1).

        The counter's other errors reach the caller as it raised them.
        """
        if not isinstance(message, Message):
            raise ArgumentTypeError(f"TokenCounter: expected a Message, got {kind_of(message)}")
        return self._counted([message], 0)[0]

    def __len__(self) -> int:
        """How many message counts are remembered."""
        return len(self._counts)

    def counts(self, messages: Sequence[Message], offset: int = 0) -> list[int]:
        """The token count of each message, in order; only messages never seen before are counted.

        ``offset`` is added to the indexes an error names.

        Raises:
            ArgumentTypeError: ``messages`` is not a list of messages (a str, a dict, one
                ``Message``, an iterator), an item is not a ``Message``, ``offset`` is not an
                int, or the counter raised ``TypeError`` or ``AttributeError`` on a message and
                counts its text instead (a text counter), or returned something other than an int.
            ArgumentValueError: the counter returned a negative count or one above ``COUNT_MAX``.

        The counter's other errors reach the caller as it raised them.
        """
        require_message_list(messages, "TokenCounter.counts")
        if type(offset) is not int:
            raise ArgumentTypeError(f"TokenCounter.counts: offset must be an int, got {kind_of(offset)}")
        try:
            return self._counted(messages, offset)
        except (TypeError, KeyError, AttributeError):  # what a non-message raises, read or counted
            # Looked for only now: the usual call, on messages alone, pays no loop for it.
            for index, item in enumerate(messages, start=offset):
                if not isinstance(item, Message):
                    raise ArgumentTypeError(
                        f"TokenCounter.counts: [{index}]: expected a Message, found {kind_of(item)}"
                    ) from None
            raise

    def _counted(self, messages: Sequence[Message], offset: int) -> list[int]:
        """``counts`` once its arguments are checked."""
        values: list[int | None]
        if self._use_token_count:
            values = list(map(_TOKEN_COUNT, map(vars, messages)))
            gaps = list(_gaps(values))
            values_at = list(map(self._counts.get, [id(messages[index]) for index in gaps]))
            for index, cached in zip(gaps, values_at, strict=True):
                values[index] = cached
        else:
            values = list(map(self._counts.get, map(id, messages)))
        counts = self._counts
        for index in _gaps(values):
            message = messages[index]
            # Looked up again: a message listed twice was counted at its first place.
            known = counts.get(id(message))
            values[index] = self._count_new(message, index + offset) if known is None else known
        return values  # type: ignore[return-value]  # every None was filled in

    def _count_new(self, message: Message, index: int) -> int:
        value = checked_count(
            _call_counter(self._count, message, index), self._count, "message", index, message
        )
        key = id(message)
        # The reference first: what cannot have one (a str) must leave no count behind, which
        # its id, reused by a later message, would find. Its callback holds the counter weakly:
        # a strong hold would make a cycle, which only the cyclic collector frees.
        ref = weakref.ref(message, partial(_forget, weakref.ref(self), key))
        self._counts[key] = value
        self._refs[key] = ref
        return value


def _forget(counter: weakref.ref[TokenCounter], key: int, _ref: object) -> None:
    """Drop the count of the message that was at ``key``, from its counter if it still lives."""
    alive = counter()
    if alive is not None:
        alive._counts.pop(key, None)
        alive._refs.pop(key, None)


def tokenizer_counter(tokenize: Callable[[str], int], *, use_token_count: bool = True) -> TokenCounter:
    """A message counter from a text counter (``str -> int``, such as ``lambda s: len(enc.encode(s))``).

    A message counts ``tokenize`` of its content plus, for each tool call, of its name and of its
    arguments as compact JSON text. With ``use_token_count`` (the default), a ``token_count``
    the host filled in is used instead.
    """
    require_bool("tokenizer_counter: use_token_count", use_token_count)
    callable_counter(tokenize)  # a Message -> int given here fails now, with a clear TypeError
    return TokenCounter(_TextPartsCounter(tokenize), use_token_count=use_token_count)


class _TextPartsCounter:
    """``tokenizer_counter``'s message counter: ``tokenize`` summed over a message's texts. A
    class, not a closure, so that it pickles whenever ``tokenize`` does."""

    __slots__ = ("tokenize",)

    def __init__(self, tokenize: Callable[[str], int]) -> None:
        self.tokenize = tokenize

    def __call__(self, message: Message) -> int:
        return sum(map(self.tokenize, _text_parts(message)))

    def __repr__(self) -> str:  # its name in TokenCounter's repr and in errors
        return f"tokenizer_counter({counter_name(self.tokenize)})"


def default_counts(messages: Sequence[Message], token_counts: Sequence[int | None]) -> list[int]:
    """The default count of each message: ``token_count`` where set, else ``estimate_tokens``."""
    values = list(token_counts)
    for index in _gaps(values):
        values[index] = estimate_tokens(messages[index])
    return values  # type: ignore[return-value]  # every None was filled in


def message_counts(messages: Sequence[Message], count: MessageCounter, offset: int = 0) -> list[int]:
    """``count`` of each message, checked (``offset`` is added to the indexes an error names)."""
    if isinstance(count, TokenCounter):
        return count.counts(messages, offset)
    return [
        checked_count(_call_counter(count, m, i + offset), count, "message", i + offset, m)
        for i, m in enumerate(messages)
    ]


def _call_counter(count: MessageCounter, message: Message, index: int) -> object:
    try:
        return count(message)
    except (AttributeError, TypeError) as error:
        # What a text counter given a Message raises: said so where it happens, cause attached,
        # once the counter shows that it counts text. A bug of the counter's own stays itself.
        if not returns_count(count, message.content):
            raise
        raise ArgumentTypeError(
            f"the message counter {counter_name(count)} raised {type(error).__name__} on message [{index}]. "
            "count= takes a Message -> int; a str -> int counter goes in counter= (with a template) "
            "or in tokenizer_counter(...)"
        ) from error


def _first_parameter(function: object) -> object:
    """The annotation of a callable's first parameter (a string under postponed annotations)."""
    try:
        parameters = list(inspect.signature(function).parameters.values())  # type: ignore[arg-type]
    except (TypeError, ValueError):  # a builtin without a signature
        return None
    return parameters[0].annotation if parameters else None


def _require_message_counter(count: object, where: str) -> MessageCounter:
    """``count`` if it is a message counter; a ``TypeError`` if it is plainly a text counter.

    ``where`` names the function and its argument in the errors (``"count_tokens: count"``).
    """
    if not callable(count):
        raise ArgumentTypeError(f"{where}: expected a message counter (Message -> int), got {kind_of(count)}")
    if _first_parameter(count) in (str, "str"):
        raise ArgumentTypeError(
            f"{where}: {counter_name(count)} counts text (str -> int), not messages; pass it as counter= "
            "with a template, or wrap it with tokenizer_counter(...) to count messages"
        )
    return count  # callable, and not declared to take a str
