"""Reading another format's messages strictly, every problem with its location (private).

The ``from_*`` converters read plain dicts and lists (parsed JSON, or a provider SDK's params,
its pydantic response objects included: ``as_data``);
``_Input`` checks each value's type, collects every problem with its JSON path, and raises one
``ConversionError`` at the end, as ``loads`` does for our own format.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, TypeGuard

import orjson
from pydantic import BaseModel, ValidationError

from ._json_rules import lone_surrogates, surrogate_at, value_problems
from ._problems import describe, problems_from
from ._text import excerpt, joined_location, quoted
from .conversions import _Report, key_field
from .errors import ConversionError, Problem
from .ids import FreshIds
from .models import I64_MAX, I64_MIN, Message, ToolCall, _SerdeJsonModel, now_ms

_MISSING = object()

# Who cannot hold a lone surrogate, for the message: what is read, or what is sent.
_CORE_CANNOT = "orion-core's strings (UTF-8) cannot hold"
_SENT_CANNOT = "UTF-8 (the encoding of what is sent) cannot encode"


class _Input:
    """Collects the problems found while reading foreign messages."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def fail(self, where: str, message: str) -> None:
        """Record one problem at ``where``."""
        self.problems.append(Problem(where, message))

    def items(self, value: Any, where: str, expected: str = "an array") -> Sequence[Any]:
        """``value`` as a list (a JSON array), or ``[]`` after recording a problem that says
        what was ``expected`` there (where a string is also read, say so)."""
        if isinstance(value, (list, tuple)):
            return value
        self.fail(where, f"expected {expected}, found {describe(value)}")
        return []

    def mapping(self, value: Any, where: str) -> Mapping[str, Any] | None:
        """``value`` if it is an object (a provider SDK's model read by ``as_data``), else
        ``None`` after recording a problem."""
        value = as_data(value)
        if isinstance(value, Mapping):
            return value
        self.fail(where, f"expected an object, found {describe(value)}")
        return None

    def present(self, data: Mapping[str, Any], key: str, where: str) -> bool:
        """True when ``data`` has ``key``; else False after recording that the key is missing.

        Reading an absent key as ``null`` would report "found null" for a value never written.
        """
        if key in data:
            return True
        self.fail(f"{where}.{key}", "required key is missing")
        return False

    def string(self, data: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str | None:
        """The string at ``data[key]``; ``None`` when absent (a problem if required), not a
        string, or holding a lone surrogate (a problem)."""
        value = data.get(key, _MISSING)
        if value is _MISSING:
            if required:
                self.fail(f"{where}.{key}", "required key is missing")
            return None
        if isinstance(value, str):
            return value if self.utf8(value, f"{where}.{key}") else None
        self.fail(f"{where}.{key}", f"expected a string, found {describe(value)}")
        return None

    def utf8(self, value: str, where: str, what: str = "the string") -> bool:
        """True when ``value`` has a UTF-8 form; else False after recording its lone surrogate.

        A Python string may hold half of a surrogate pair (``"a\\ud800b"``); orion-core's strings
        are UTF-8, which cannot, and ``dumps`` would refuse the message only later, away from
        the input.
        """
        at = surrogate_at(value)
        if at is not None:
            self.fail(where, f"{what} {_lone_surrogate(value, at)}")
        return at is None

    def utf8_value(self, value: Any, where: str, cannot: str = _CORE_CANNOT) -> None:
        """Record each string of a JSON value (object keys included) that holds a lone surrogate
        (``cannot``: who cannot hold it, for the message)."""
        for found in lone_surrogates(value):
            what = f"the key {quoted(found.text)}" if found.is_key else "the string"
            self.fail(
                joined_location(where, found.path), f"{what} {_lone_surrogate(found.text, found.at, cannot)}"
            )

    def boolean(self, data: Mapping[str, Any], key: str, where: str) -> bool:
        """The optional boolean at ``data[key]`` (``False`` when absent or invalid)."""
        value = data.get(key, False)
        if value is None or isinstance(value, bool):
            return bool(value)
        self.fail(f"{where}.{key}", f"expected a boolean (true or false), found {describe(value)}")
        return False

    def call(self, where: str, call_id: str, name: str, arguments: Any) -> ToolCall | None:
        """A ``ToolCall``, or ``None`` after recording why the arguments are not a JSON value:
        each value that breaks the rules (or string holding a lone surrogate) at its path."""
        try:
            call = ToolCall(id=call_id, name=name, arguments=arguments)
        except ValidationError as error:
            broken = list(value_problems(arguments))
            for path, why in broken:
                self.fail(joined_location(where, path), why)
            if not broken:  # said by validation alone
                for problem in problems_from(error):
                    self.fail(where, problem.message)
            return None
        found = len(self.problems)
        self.utf8_value(call.arguments, where)
        return call if len(self.problems) == found else None

    def done(self) -> None:
        """Raise every problem found, if any."""
        if self.problems:
            raise ConversionError(self.problems)


def as_data(value: Any) -> Any:
    """``value``, or a provider SDK's pydantic model as the dict of its own fields.

    The SDKs' response objects (``anthropic.types.ToolUseBlock``, ``openai.types.chat.
    ChatCompletionMessage``) go back into a history as they are; each is read as
    ``model_dump(by_alias=True, exclude_unset=True)``: the keys the API's JSON held (or the
    caller set), by their JSON names, and the values as they are; what the SDK derived on the
    client (``parsed``) is left out. Python's mode, not JSON's,
    which would write NaN and infinity as ``null``: the readers' checks see each value and refuse
    one JSON cannot hold, at its place. The library's own models are not another format's
    objects: a ``Message`` where a dict belongs stays a mistake, reported as not an object.
    """
    if isinstance(value, BaseModel) and not isinstance(value, _SerdeJsonModel):
        return value.model_dump(by_alias=True, exclude_unset=True, exclude=_derived_by_sdk(type(value)))
    return value


# What a provider SDK works out on the client from what the API sent, by the SDK's class name:
# the OpenAI SDK's ``chat.completions.parse`` fills ``parsed`` from ``content`` and
# ``parsed_arguments`` from ``arguments``. No data of the message (the text and the arguments
# carry it), so neither is read as an unknown key nor reported as a loss.
_DERIVED_BY_SDK: dict[str, dict[str, Any]] = {
    "openai.ParsedChatCompletionMessage": {
        "parsed": True,
        "tool_calls": {"__all__": {"function": {"parsed_arguments"}}},
    },
    "openai.ParsedFunctionToolCall": {"function": {"parsed_arguments"}},
    "openai.ParsedFunction": {"parsed_arguments": True},
}


def _derived_by_sdk(model: type[BaseModel]) -> dict[str, Any] | None:
    """The fields of an SDK ``model`` (or of the SDK class it derives from) in ``_DERIVED_BY_SDK``."""
    for kind in model.__mro__:
        found = _DERIVED_BY_SDK.get(f"{kind.__module__.partition('.')[0]}.{kind.__qualname__}")
        if found is not None:
            return found
    return None


def _lone_surrogate(value: str, start: int, cannot: str = _CORE_CANNOT) -> str:
    """Why ``value`` is refused: the lone surrogate at ``start``, written as its escape."""
    return f"holds an unpaired surrogate (\\u{ord(value[start]):04x} at character {start}), which {cannot}"


class Sent(NamedTuple):
    """The fields of a message a target writes (pydantic ``include`` specs): for a tool_result
    message, and for any other. A field it leaves out is only a loss, never a string it sends."""

    result: dict[str, Any]
    """A tool_result message's fields sent."""
    other: dict[str, Any]
    """Any other message's fields sent."""


PROVIDER_SENT = Sent(
    {"role": True, "tool_result": {"tool_call_id": True, "content": True}},
    {"role": True, "content": True, "tool_calls": True},
)
"""What OpenAI's and Anthropic's requests carry: a result's id and text (not its tool name, nor
the message's own ``content``), any other message's text and calls; ``id``, ``timestamp``,
``token_count``, ``pinned`` and unknown keys only travel in the chat template's metadata."""


def unencodable_problems(
    messages: Iterable[Message], sources: Iterable[int | None], sent: Sent | None = PROVIDER_SENT
) -> list[Problem]:
    """A problem at each string of ``messages`` holding a lone surrogate, which no target's JSON
    (UTF-8) can carry, located at the input position in ``sources`` (an error path only: each
    message is dumped and walked; an added message, ``None``, holds only strings of another).
    ``sent``: the fields the target writes (None: all)."""
    reader = _Input()
    for message, source in zip(messages, sources, strict=True):
        if source is not None:
            fields = None if sent is None else sent.result if message.tool_result is not None else sent.other
            reader.utf8_value(message.model_dump(include=fields), f"[{source}]", _SENT_CANNOT)
    return reader.problems


def refuse_unencodable(
    value: Any,
    messages: Sequence[Message],
    sources: Sequence[int | None],
    sent: Sent | None = PROVIDER_SENT,
) -> None:
    """Raise ``ConversionError`` at each string of the input holding a lone surrogate when the
    converted ``value`` holds one: it could not be sent.

    One pass of orjson (in C) over the whole output rules it out; only when that fails (a lone
    surrogate, or an integer past 64 bits, which orjson refuses and the targets take) is the
    value walked, then the messages, to say where.
    """
    try:
        orjson.dumps(value)
    except orjson.JSONEncodeError:
        if next(lone_surrogates(value), None) is not None:
            problems = unencodable_problems(messages, sources, sent)
            if problems:
                raise ConversionError(problems) from None


def refuse_unencodable_text(text: str, where: str) -> None:
    """Raise ``ConversionError`` at ``where`` when ``text``, a caller's argument sent as it is
    (``to_orion_backend``'s ``system_prompt``), holds a lone surrogate."""
    at = surrogate_at(text)
    if at is not None:
        raise ConversionError([Problem(where, f"the string {_lone_surrogate(text, at, _SENT_CANNOT)}")])


def _kind(kind: Any, noun: str) -> str:
    """A part named by its ``type`` (``a "image" block``), or said to have none (``null`` or absent)."""
    if kind is None:
        return f"a {noun} without a type"
    if isinstance(kind, str):  # it comes from the data
        return f"a {quoted(kind)} {noun}"
    return f"a {noun} whose type is {describe(kind)}"


_NO_PLACE = "orion-core has no place for this key"


def carries_nothing(value: Any) -> bool:
    """Whether the value of a key orion-core has no place for carries nothing to lose: ``null``,
    an empty array or an empty object (OpenAI's ``"annotations": []`` on every reply)."""
    return value is None or (isinstance(value, (list, tuple, Mapping)) and not value)


def _unknown_keys(
    report: _Report,
    index: int | None,
    data: Mapping[str, Any],
    known: frozenset[str],
    prefix: str = "",
    reasons: Mapping[str, str] | None = None,
) -> None:
    """Report each key of ``data`` (at ``prefix`` inside message ``index``) not in ``known``.

    The reason is ``reasons[key]`` when given, else "orion-core has no place for this key". A key
    whose value carries nothing (``carries_nothing``) is not reported. The loss's field shows the
    key as a location does (``x_extra``; ``["a.b"]`` for one that is not a plain name).
    """
    for key in data:
        if key in known or carries_nothing(data[key]):
            continue
        reason = reasons.get(key, _NO_PLACE) if reasons is not None else _NO_PLACE
        report.lose(index, key_field(prefix, key), reason)


def text_content(
    reader: _Input, report: _Report, index: int, data: Mapping[str, Any], *, nullable: bool
) -> str:
    """A message's ``content`` as text: a string, ``null`` (when ``nullable``) or a list of typed
    parts (OpenAI's, and Hugging Face's multimodal form), whose text parts are joined (reported
    when there are several) and every other part reported as a loss."""
    where = f"[{index}].content"
    content = data.get("content")
    if isinstance(content, str):
        reader.utf8(content, where)
        return content
    if content is None:
        if not nullable and "content" not in data:
            reader.fail(where, "required key is missing")
        elif not nullable:
            reader.fail(where, "expected a string or an array of content parts, found null")
        return ""
    if not isinstance(content, (list, tuple)):
        reader.fail(where, f"expected a string or an array of content parts, found {describe(content)}")
        return ""
    texts: list[str] = []
    for number, part in enumerate(content):
        block = reader.mapping(part, f"{where}[{number}]")
        if block is None:
            continue
        kind = block.get("type")
        if kind == "text":
            text = reader.string(block, "text", f"{where}[{number}]")
            texts.append(text or "")
            _unknown_keys(report, index, block, _PART_KEYS, f"content[{number}].")
        else:
            report.lose(
                index,
                f"content[{number}]",
                f"{_kind(kind, 'content part')} has no place in orion-core's text content",
            )
    if len(texts) > 1:
        report.lose(index, "content", f"{len(texts)} text parts joined into one text")
    return "".join(texts)


_PART_KEYS = frozenset({"type", "text"})


TIMESTAMP_EXPECTED = (
    f"a signed 64-bit integer of milliseconds since the Unix epoch (from {I64_MIN} to {I64_MAX})"
)
"""What a ``from_*`` converter's ``timestamp`` (and ``convert --timestamp``) must be, for errors."""


def is_timestamp(value: object) -> TypeGuard[int]:
    """Whether ``value`` is a timestamp orion-core can hold: an int (not a bool) in 64 signed bits."""
    return isinstance(value, int) and not isinstance(value, bool) and I64_MIN <= value <= I64_MAX


def _stamp(timestamp: object) -> int:
    """The ``timestamp`` parameter of a ``from_*`` converter, or now when it is ``None`` (private).

    Raises:
        ConversionError: not a signed 64-bit integer (a bool, a float or a string is refused).
    """
    if timestamp is None:
        return now_ms()
    if is_timestamp(timestamp):
        return int(timestamp)
    raise ConversionError(
        [Problem("timestamp", f"expected {TIMESTAMP_EXPECTED} or None, found {excerpt(repr(timestamp))}")]
    )


class _Builder:
    """Numbers new messages ``msg-N`` and stamps them with one timestamp (private)."""

    def __init__(self, timestamp: int | None) -> None:
        self.messages: list[Message] = []
        self.timestamp = _stamp(timestamp)
        self.ids = FreshIds()

    def add(self, **fields: Any) -> None:
        """Append a message built from ``fields`` with a new id (timestamp filled unless given).

        Every message gets its id here (an ``id`` in ``fields`` is replaced), so no two share one.
        """
        fields["id"] = self.ids.next()
        fields.setdefault("timestamp", self.timestamp)
        self.messages.append(Message.model_validate(fields))  # faster than Message(**fields)
