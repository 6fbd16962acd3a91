"""The message models: orion-core's ``Message``, ``ToolCall`` and ``ToolResult`` as pydantic v2 models.

The models mirror ``orion_core::messages`` field for field. Validation is strict, as serde's is:
no coercion between JSON types, integers range-checked like Rust's ``i64`` and ``u32``. Keys the
models do not know are kept (``extra="allow"``) so that data from a newer writer survives a round
trip through this library; orion-core itself would drop them.
"""

from __future__ import annotations

import operator
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from enum import Enum
from functools import cache, partial
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Protocol, TypeVar, cast, get_origin, overload

from pydantic import BaseModel, Field, GetCoreSchemaHandler, ValidationError
from pydantic.config import ExtraValues
from pydantic_core import core_schema
from typing_extensions import Self, deprecated

from ._json_rules import JSON_VALUE, UNKNOWN_VALUE, minus_zero_as_float, value_problem
from ._text import kind_of, location
from .errors import ArgumentTypeError, ArgumentValueError

__all__ = ["Message", "Role", "ToolCall", "ToolResult", "now_ms"]

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def now_ms() -> int:
    """Return the current time as orion-core stamps messages: milliseconds since the Unix epoch."""
    return time.time_ns() // 1_000_000


def utc_datetime(milliseconds: int) -> datetime:
    """Milliseconds since the Unix epoch as an aware UTC datetime, exact (integer arithmetic:
    a float of the seconds is 1 ms off for some stamps before 1697 or after 2242).

    Raises:
        OverflowError: outside the years 1 to 9999 that ``datetime`` covers.
    """
    return _EPOCH + timedelta(milliseconds=milliseconds)


class Role(str, Enum):
    """Who a message is from, spelled on the wire exactly as orion-core spells it."""

    SYSTEM = "system"
    """The system prompt."""
    USER = "user"
    """A message from the user; every user message starts a new turn."""
    ASSISTANT = "assistant"
    """A reply from the model; it may carry ``tool_calls``."""
    TOOL_CALL = "tool_call"
    """A valid role that orion-core's agent never writes; treated like ``assistant``."""
    TOOL_RESULT = "tool_result"
    """The result of a tool call; carries a ``tool_result``."""

    def __str__(self) -> str:
        return self.value

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        # Written as the string it is (a ``str`` enum), with no Python call per message.
        schema = handler(source)
        return cast(core_schema.CoreSchema, {**schema, "serialization": core_schema.simple_ser_schema("str")})


class _SerdeJsonModel(BaseModel, frozen=True):
    """A model whose ``model_validate_json`` reads numbers as serde_json does.

    serde_json reads ``-0`` as the float ``-0.0`` (jiter, under pydantic, reads the integer 0),
    so an integer field refuses it and a free JSON value keeps ``-0.0``. Every model of the
    formats derives from this one, so pydantic's own entry point agrees with ``loads``.
    """

    @classmethod
    def model_validate_json(
        cls,
        json_data: str | bytes | bytearray,
        *,
        strict: bool | None = None,
        extra: ExtraValues | None = None,
        context: Any | None = None,
        by_alias: bool | None = None,
        by_name: bool | None = None,
    ) -> Self:
        """pydantic's ``model_validate_json``, with serde_json's reading of ``-0``.

        An unknown key whose value cannot be written back (``1e400``, a lone surrogate escape) is
        refused here with pydantic's ``ValidationError``; ``loads_message`` and the other readers
        load such a document as orion-core does, leaving the key out with an ``UnknownKeyWarning``.
        """
        validate = partial(
            super().model_validate_json,
            strict=strict,
            extra=extra,
            context=context,
            by_alias=by_alias,
            by_name=by_name,
        )
        given = bytes(json_data) if isinstance(json_data, bytearray) else json_data
        fixed = minus_zero_as_float(given)
        try:
            return validate(fixed)
        except ValidationError as error:
            if fixed is given or not any(detail["type"] == "json_invalid" for detail in error.errors()):
                raise
        return validate(given)  # raises at the place in the document as given


# The configuration is given as class keywords, not ``model_config``: type checkers read
# ``frozen`` only there (pyright only on the class itself, so each model repeats it), and flag
# ``msg.content = ...``; the pydantic mypy plugin refuses the two forms together.
class _WireModel(
    _SerdeJsonModel,
    frozen=True,
    strict=True,
    extra="allow",
    use_attribute_docstrings=True,
    validate_default=False,
    ser_json_inf_nan="constants",  # never silently null; the writer refuses the literals
    cache_strings="keys",
):
    """What every wire model shares: strict, immutable, unknown keys kept as JSON values.

    The unknown keys' values are checked by the JSON value rules inside pydantic-core (the
    annotation of ``__pydantic_extra__``), so an instance without them costs no Python work.
    Each field states when it is left out (``exclude_if``), so every serialization pydantic
    offers (``model_dump_json``, ``model_dump``, the writers) gives the wire form.
    """

    __pydantic_extra__: dict[str, UNKNOWN_VALUE] = Field(init=False)

    values_unchecked: ClassVar[bool] = False
    """Set once ``model_construct`` put in a value that JSON cannot hold (NaN, infinity): from
    then on the writer looks for such numbers in what it writes.

    Validated models cannot hold one, so until then writing costs no scan of the output. The
    flag is process-wide and never cleared (the object may live on); it is not a cache.
    """

    incomplete_alive: ClassVar[int] = 0
    """How many instances without a field that has no default (a message without its
    ``timestamp``: built by ``model_construct``, or a copy or unpickling of one) are alive;
    pydantic's serializer writes them without the field. While there are any, the message
    writers look at the keys of each message they write (``is_complete``) and read back what
    they wrote when one lacks a field."""

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:  # type: ignore[override]
        """pydantic's construction without validation; see ``values_unchecked`` and
        ``incomplete_alive``. A list given for a tuple field (``tool_calls``, an event's
        ``messages``) is kept as a tuple, as validation keeps it (the writers take tuples)."""
        tuples = _tuple_fields(cls)
        values = {
            name: tuple(value) if name in tuples and isinstance(value, list) else value
            for name, value in values.items()
        }
        _note_unchecked(values.values())
        return _counted_if_incomplete(cast(Self, super().model_construct(_fields_set, **values)))

    def __copy__(self) -> Self:
        return _counted_if_incomplete(super().__copy__())

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        return _counted_if_incomplete(super().__deepcopy__(memo))

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        _counted_if_incomplete(self)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy, with the values in ``update`` validated as the constructor validates them.

        Unlike pydantic's own ``model_copy``, a value the wire cannot hold is refused here (with
        pydantic's ``ValidationError``), so a changed copy writes what orion-core reads.
        ``model_fields_set`` is the original's plus the keys of ``update``, as in pydantic.
        """
        copied = super().model_copy(deep=deep)
        if not update:
            return copied
        values = {**copied.__dict__, **(copied.__pydantic_extra__ or {})}
        given = copied.model_fields_set
        # In the order the message holds them (not the set's, which varies with the hash seed),
        # so unknown keys are written back in the order they came in.
        kept = {name: value for name, value in values.items() if name in given}
        return self.model_validate({**kept, **update})


# When orion-core leaves a field out (serde's ``skip_serializing_if``), as ``exclude_if``
# predicates. C builtins, not lambdas: pydantic-core calls them for every message written.
_IF_EMPTY: Callable[[Any], bool] = operator.not_
_IF_FALSE: Callable[[Any], bool] = operator.not_
_IF_NONE: Callable[[Any], bool] = partial(operator.is_, None)


_Model = TypeVar("_Model", bound=BaseModel)


def _counted_if_incomplete(model: _Model) -> _Model:
    """``model``, counted in ``incomplete_alive`` while it lives if it lacks a required field."""
    if not model.__dict__.keys() >= _required_fields(type(model)):
        with _INCOMPLETE_COUNT:
            _WireModel.incomplete_alive += 1
        weakref.finalize(model, _one_incomplete_gone)
    return model


def _one_incomplete_gone() -> None:
    with _INCOMPLETE_COUNT:
        _WireModel.incomplete_alive -= 1


# ``+=`` on the count is no atomic step between threads (3.10, free-threaded builds); reentrant,
# as a collection in the middle of a change may run a finalizer on the same thread.
_INCOMPLETE_COUNT = threading.RLock()


@cache  # per class: read on every model_construct
def _tuple_fields(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(
        name for name, field in model.model_fields.items() if get_origin(field.annotation) is tuple
    )


@cache  # per class: read on every model_construct
def _required_fields(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(name for name, field in model.model_fields.items() if field.is_required())


def _note_unchecked(values: Iterable[Any]) -> None:
    for value in values:
        if type(value) in (str, bool, int, type(None)) or isinstance(value, _WireModel):
            continue
        if isinstance(value, (tuple, list)) and all(isinstance(item, _WireModel) for item in value):
            continue
        if value_problem(value) is not None:
            _WireModel.values_unchecked = True


class OrderedFromPython:
    """A tuple field's check that refuses a set given from Python (``require_ordered``), which
    validation would take in its hashes' order; it raises ``ArgumentTypeError`` through
    pydantic, which passes a ``TypeError`` on. JSON holds arrays: JSON input is validated by the
    field's own schema alone, with no Python call per value."""

    def __init__(self, where: str, items: str) -> None:
        self.where = where
        """The field, named first in the error (``Message: tool_calls``)."""
        self.items = items
        """What the field holds, in words (``ToolCall``, ``messages``)."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """The field's schema, checked first for a set when the input is a Python value."""
        schema = handler(source)
        checked = core_schema.no_info_before_validator_function(self._in_order, schema)
        return core_schema.json_or_python_schema(json_schema=schema, python_schema=checked)

    def _in_order(self, value: Any) -> Any:
        require_ordered(value, self.where, self.items)
        return value


class ToolCall(_WireModel, frozen=True):
    """A tool call an assistant message asks for, as orion-core writes it.

    In Python, unknown keys are kept as extra fields and written back after the known ones.
    """

    id: str
    """The call's id; orion-core's agent makes it ``{assistant message id}-call-{k}``. Always written."""
    name: str
    """The name of the tool to call. Always written."""
    arguments: JSON_VALUE
    """The arguments, any JSON value (usually an object). Always written; orion-core writes
    object keys sorted (serde_json's map).

    In Python, the keys keep the order they were read or given in, and int/float is kept.
    """


class ToolResult(_WireModel, frozen=True):
    """The result of a tool call, carried by a ``tool_result`` message.

    In Python, unknown keys are kept as extra fields and written back after the known ones.
    """

    tool_call_id: str
    """The id of the tool call this result answers. Always written."""
    tool_name: str
    """The name of the tool that ran. Always written."""
    content: str
    """The tool's output text. Always written."""
    is_error: bool
    """Whether the tool failed. Always written, ``false`` included."""
    pending: bool = Field(default=False, exclude_if=_IF_FALSE)
    """A placeholder for a result still to come; written only when true, read as false when missing."""


class _ConstructorOrField:
    """A name that is a constructor on the class and a field on an instance.

    orion-core has both ``Message::tool_result(...)`` and a ``tool_result`` field. Python keeps
    one namespace, so the class attribute is this non-data descriptor: pydantic stores field
    values in the instance ``__dict__``, which wins over a non-data descriptor on instances.

    Only on ``owner`` itself: pydantic takes an inherited field's default from the subclass
    with ``getattr``, so on a subclass the name is missing (the field and its default are
    inherited) rather than the constructor, which would become every message's ``tool_result``.
    """

    def __init__(self, constructor: Callable[..., Message], owner: type) -> None:
        self._constructor = constructor
        self._owner = owner

    def __get__(self, obj: object, owner: type | None = None) -> Callable[..., Message]:
        if owner is not None and owner is not self._owner:
            raise AttributeError("tool_result")  # as for any missing name (pydantic's metaclass says so)
        return self._constructor


if TYPE_CHECKING:

    class _ToolResultName:
        """How type checkers see ``Message.tool_result``: constructor on the class, field on instances."""

        @overload
        def __get__(self, obj: None, owner: type) -> _ToolResultConstructor: ...
        @overload
        def __get__(self, obj: Message, owner: type) -> ToolResult | None: ...
        def __get__(self, obj: Message | None, owner: type) -> Any: ...
        def __set__(self, obj: Message, value: ToolResult | None) -> None: ...

    class _ToolResultConstructor(Protocol):
        @deprecated("Message.tool_result(...) is deprecated: use Message.tool_result_message(...)")
        def __call__(
            self,
            id: str,
            tool_call_id: str,
            tool_name: str,
            content: str,
            is_error: bool = False,
            *,
            pending: bool = False,
            timestamp: int | None = None,
        ) -> Message: ...


class Message(_WireModel, frozen=True):
    """One message of a conversation, exactly as orion-core serializes it.

    In Python, messages are immutable: ``pin``, ``unpin`` and ``model_copy(update=...)`` give
    changed copies. Unknown keys are kept as extra fields and written back after the known ones.
    """

    id: str
    """The message id; orion-core's agent makes it ``msg-N`` from a counter."""
    role: Role = Field(strict=False)  # lax accepts "user" from Python; JSON still takes only the exact values
    """Who the message is from."""
    content: str
    """The text; on a tool-result message, the same text as ``tool_result.content``."""
    timestamp: int = Field(ge=I64_MIN, le=I64_MAX)
    """Milliseconds since the Unix epoch (signed 64-bit); required.

    In Python, the constructors (``Message.user`` and the others) stamp the current time.
    """
    tool_calls: Annotated[tuple[ToolCall, ...], OrderedFromPython("Message: tool_calls", "ToolCall")] = Field(
        default=(), strict=False, exclude_if=_IF_EMPTY
    )  # lists, dicts; not sets
    """The tool calls an assistant message asks for; written only when non-empty."""
    if TYPE_CHECKING:
        # For type checkers: a constructor on the class, the field on an instance.
        tool_result: _ToolResultName = None  # type: ignore[assignment]
        """On a tool-result message, the result it carries (a ``ToolResult``); written only when present."""
    else:
        tool_result: ToolResult | None = Field(default=None, strict=False, exclude_if=_IF_NONE)
        """On a tool-result message, the result it carries; written only when present."""
    token_count: int | None = Field(default=None, ge=0, le=U32_MAX, exclude_if=_IF_NONE)
    """The message's token count, left unset by the agent for the host to fill in (unsigned 32-bit)."""
    pinned: bool = Field(default=False, exclude_if=_IF_FALSE)
    """A pinned message always survives pruning, with its whole turn; written only when true."""

    if not TYPE_CHECKING:  # type checkers see pydantic's own __init__, timestamp required

        def __init__(self, **data: Any) -> None:
            # Deprecated for one release: ``Message(...)`` without ``timestamp`` stamps now, with
            # a warning. Then this override goes and ``timestamp`` is required here as everywhere.
            if "timestamp" not in data:
                warnings.warn(
                    "Message(...) without timestamp= is deprecated: pass timestamp=now_ms(), or "
                    "build the message with Message.user(...) and the other constructors, which "
                    "stamp now",
                    DeprecationWarning,
                    stacklevel=2,
                )
                data["timestamp"] = now_ms()
            super().__init__(**data)

        # Tell pydantic this __init__ needs no call during validation (validated input always
        # has a timestamp); otherwise pydantic-core calls it for every loaded message.
        __init__.__pydantic_base_init__ = True

    @property
    def created_at(self) -> datetime:
        """The timestamp as an aware UTC datetime, exact to the millisecond.

        Raises:
            OverflowError: the timestamp lies outside the years 1 to 9999 that ``datetime`` covers.
        """
        return utc_datetime(self.timestamp)

    @property
    def is_pending(self) -> bool:
        """True for a tool-result placeholder whose result is still to come."""
        return self.tool_result is not None and self.tool_result.pending

    @classmethod
    def system(cls, id: str, content: str, *, timestamp: int | None = None) -> Self:
        """A system message (orion-core's ``Message::system``).

        Raises:
            ArgumentTypeError: an argument of the wrong type, named (``Message.system: id: ...``).
            ArgumentValueError: ``timestamp`` outside the signed 64-bit range.
        """
        return cls._make("Message.system", id, Role.SYSTEM, content, timestamp)

    @classmethod
    def user(cls, id: str, content: str, *, timestamp: int | None = None) -> Self:
        """A user message (orion-core's ``Message::user``); it starts a new turn.

        Raises:
            ArgumentTypeError: an argument of the wrong type, named (``Message.user: id: ...``).
            ArgumentValueError: ``timestamp`` outside the signed 64-bit range.
        """
        return cls._make("Message.user", id, Role.USER, content, timestamp)

    @classmethod
    def assistant(
        cls,
        id: str,
        content: str,
        tool_calls: Iterable[ToolCall] = (),
        *,
        timestamp: int | None = None,
    ) -> Self:
        """An assistant message (orion-core's ``Message::assistant``), optionally calling tools.

        Raises:
            ArgumentTypeError: an argument of the wrong type, named (``Message.assistant: id: ...``);
                ``tool_calls`` that is one ``ToolCall`` or a mapping rather than a list, or that
                holds anything but ``ToolCall`` objects (a dict included: build it with
                ``ToolCall(...)``), or a set (which keeps no order).
            ArgumentValueError: ``timestamp`` outside the signed 64-bit range.
        """
        require_ordered(tool_calls, "Message.assistant: tool_calls", "ToolCall")
        if not isinstance(tool_calls, (list, tuple, str, Mapping, ToolCall)) and isinstance(
            tool_calls, Iterable
        ):
            tool_calls = tuple(tool_calls)  # a generator, a deque: read here, so that its items are checked
        _require_tool_calls(tool_calls)
        return cls._make("Message.assistant", id, Role.ASSISTANT, content, timestamp, tool_calls=tool_calls)

    @classmethod
    def tool_result_message(
        cls,
        id: str,
        tool_call_id: str,
        tool_name: str,
        content: str,
        is_error: bool = False,
        *,
        timestamp: int | None = None,
    ) -> Self:
        """A tool-result message (orion-core's ``Message::tool_result``).

        The text is stored twice, at the top and in the result, as orion-core does. A
        placeholder for a result still to come is ``pending_result``.

        Raises:
            ArgumentTypeError: an argument of the wrong type, named
                (``Message.tool_result_message: tool_name: ...``).
            ArgumentValueError: ``timestamp`` outside the signed 64-bit range.
        """
        result = _built(
            "Message.tool_result_message",
            ToolResult,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            content=content,
            is_error=is_error,
        )
        return cls._make(
            "Message.tool_result_message", id, Role.TOOL_RESULT, content, timestamp, tool_result=result
        )

    @classmethod
    def _deprecated_tool_result(
        cls,
        id: str,
        tool_call_id: str,
        tool_name: str,
        content: str,
        is_error: bool = False,
        *,
        pending: bool = False,
        timestamp: int | None = None,
    ) -> Message:
        warnings.warn(
            "Message.tool_result(...) is deprecated: use Message.tool_result_message(...), "
            "or Message.pending_result(...) for a placeholder",
            DeprecationWarning,
            stacklevel=2,
        )
        if pending:
            return cls.pending_result(id, tool_call_id, tool_name, content, timestamp=timestamp)
        return cls.tool_result_message(id, tool_call_id, tool_name, content, is_error, timestamp=timestamp)

    @classmethod
    def pending_result(
        cls,
        id: str,
        tool_call_id: str,
        tool_name: str,
        content: str = "",
        *,
        timestamp: int | None = None,
    ) -> Self:
        """A placeholder for a tool result still to come (``pending: true``).

        Fill it in later with ``Conversation.resolve(tool_call_id, content)``.

        Raises:
            ArgumentTypeError: an argument of the wrong type, named
                (``Message.pending_result: id: ...``).
            ArgumentValueError: ``timestamp`` outside the signed 64-bit range.
        """
        result = _built(
            "Message.pending_result",
            ToolResult,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            content=content,
            is_error=False,
            pending=True,
        )
        return cls._make(
            "Message.pending_result", id, Role.TOOL_RESULT, content, timestamp, tool_result=result
        )

    @classmethod
    def _make(
        cls,
        constructor: str,
        id: str,
        role: Role,
        content: str,
        timestamp: int | None,
        **fields: Any,
    ) -> Self:
        # ``constructor`` names the caller in errors: a role has two (tool_result_message, pending_result).
        return _built(
            constructor,
            cls,
            id=id,
            role=role,
            content=content,
            timestamp=now_ms() if timestamp is None else timestamp,
            **fields,
        )

    def pin(self) -> Self:
        """A copy of this message with ``pinned`` set (orion-core's ``.pinned()`` builder)."""
        return self if self.pinned else self.model_copy(update={"pinned": True})

    def unpin(self) -> Self:
        """A copy of this message with ``pinned`` cleared."""
        return self.model_copy(update={"pinned": False}) if self.pinned else self

    def with_token_count(self, token_count: int | None) -> Self:
        """A copy of this message with ``token_count`` set (validated as an unsigned 32-bit integer)."""
        require_token_count(token_count)
        return self.model_copy(update={"token_count": token_count})


def require_token_count(token_count: object, function: str = "") -> None:
    """Refuse what cannot be a message's ``token_count``: anything but an int from 0 to
    ``U32_MAX`` or None (a bool included, which Python counts as an int). ``function``, when
    given, is named first.

    Raises:
        ArgumentTypeError: not an int or None.
        ArgumentValueError: an int out of range.
    """
    where = f"{function}: " if function else ""
    if token_count is not None and (type(token_count) is bool or not isinstance(token_count, int)):
        raise ArgumentTypeError(f"{where}token_count must be an int or None, got {kind_of(token_count)}")
    if token_count is not None and not 0 <= token_count <= U32_MAX:
        raise ArgumentValueError(
            f"{where}token_count must be an integer from 0 to {U32_MAX}, got {token_count!r}"
        )


def _require_tool_calls(tool_calls: object) -> None:
    """Refuse ``Message.assistant``'s ``tool_calls`` when it is one call or a mapping (pydantic
    would iterate its fields or keys), or a list holding anything but ``ToolCall``: every other
    argument of the named constructors is strictly typed, and a dict would be coerced."""
    if isinstance(tool_calls, ToolCall):
        raise ArgumentTypeError(
            f"Message.assistant: tool_calls takes a list of ToolCall, got {kind_of(tool_calls)} "
            "(put it in a list: [call])"
        )
    if isinstance(tool_calls, Mapping):
        raise ArgumentTypeError(
            f"Message.assistant: tool_calls takes a list of ToolCall, got {kind_of(tool_calls)} "
            "(build each call with ToolCall(id=..., name=..., arguments=...))"
        )
    if isinstance(tool_calls, (list, tuple)):  # anything else is pydantic's to refuse
        for number, call in enumerate(tool_calls):
            if not isinstance(call, ToolCall):
                hint = (
                    " (build it with ToolCall(id=..., name=..., arguments=...))"
                    if isinstance(call, Mapping)
                    else ""
                )
                raise ArgumentTypeError(
                    f"Message.assistant: tool_calls[{number}]: expected a ToolCall, got {kind_of(call)}{hint}"
                )


def not_a_collection(value: object) -> bool:
    """Whether ``value`` cannot stand for a collection of items: it is not iterable, or iterates
    into nonsense (text's characters, a mapping's keys, a model's ``(name, value)`` pairs)."""
    return isinstance(value, (str, bytes, bytearray, Mapping, BaseModel)) or not isinstance(value, Iterable)


def require_ordered(value: object, where: str, items: str = "messages") -> None:
    """Refuse a ``set`` or ``frozenset`` (or a subclass) where ``where`` takes ``items`` in order
    (the messages of a conversation, the results of a turn): it would be read in its hashes'
    order, and written or counted so. Other collections are taken in the order they give: a
    dict's keys or values keep its order, and so does an insertion-ordered set type.

    Raises:
        ArgumentTypeError: naming ``where`` and the type found.
    """
    if isinstance(value, (set, frozenset)):
        raise ArgumentTypeError(
            f"{where}: expected a list of {items} (in order), got {kind_of(value)}, which keeps no order"
        )


def require_message_iterable(messages: object, function: str) -> None:
    """Refuse what cannot stand for the messages of a conversation where ``function`` reads them
    once, so any iterable will do: text, a mapping, a model (a single ``Message``) or what is not
    iterable (``not_a_collection``), and a set (``require_ordered``).

    Raises:
        ArgumentTypeError: naming ``function`` and the type found.
    """
    if not_a_collection(messages):
        raise ArgumentTypeError(f"{function} takes a list of messages, got {kind_of(messages)}")
    require_ordered(messages, function)


def require_message_list(messages: object, function: str, because: str = "") -> None:
    """Refuse what is not a list of messages where ``function`` needs one (it reads it twice, or
    indexes into it): an iterator would be read once and give a wrong answer, text would be
    read as characters. ``because`` is said after "a list of messages", in parentheses.

    Raises:
        ArgumentTypeError: ``messages`` is not a sequence, or is text, bytes or a set (said so:
            ``require_ordered``).
    """
    require_ordered(messages, function)
    if isinstance(messages, (str, bytes, bytearray, Mapping)) or not (
        hasattr(messages, "__len__") and hasattr(messages, "__getitem__")
    ):
        raise ArgumentTypeError(f"{function} takes a list of messages{because}, got {kind_of(messages)}")


def first_non_message(messages: Iterable[object], function: str, start: int = 0) -> ArgumentTypeError | None:
    """The error naming the first item of ``messages`` that is not a ``Message``, or None: for
    the failing path of a function that reads the messages' fields without looking first.
    ``start``: the index of the first item (``messages`` is a batch of a longer iterable)."""
    for index, item in enumerate(messages, start):
        if not isinstance(item, Message):
            return ArgumentTypeError(f"{function}: [{index}]: expected a Message, found {kind_of(item)}")
    return None


def message_list(messages: object, function: str) -> list[Message]:
    """``messages`` (any iterable of messages, read once) as a new list, for ``function``.

    A mapping or a model is iterable, but as its keys or fields, and a set in its hashes' order:
    refused whole, not per item.

    Raises:
        ArgumentTypeError: naming ``function``: ``messages`` is one message, a string, a mapping,
            a set or not iterable, or an item is not a ``Message`` (named by its index).
    """
    if not_a_collection(messages):
        hint = " (put it in a list: [message])" if isinstance(messages, Message) else ""
        raise ArgumentTypeError(f"{function}: expected an iterable of Message, got {kind_of(messages)}{hint}")
    require_ordered(messages, function)
    listed = list(cast("Iterable[object]", messages))
    if (wrong := first_non_message(listed, function)) is not None:
        raise wrong
    return cast("list[Message]", listed)


def _built(constructor: str, model: type[_Model], **values: Any) -> _Model:
    """``model(**values)``, for a named constructor: its bad arguments raise the library's own
    errors, not pydantic's (a plain ``try``: a context manager costs more than the validation).

    ``ArgumentTypeError`` when any argument has the wrong type, else ``ArgumentValueError``;
    each problem is named by its argument (``tool_calls[0].name``). pydantic's
    ``ValidationError`` stays the ``__cause__``.
    """
    try:
        return model(**values)
    except ValidationError as error:
        details = error.errors(include_url=False)
        wrong_type = any(detail["type"].endswith("_type") for detail in details)
        said = "; ".join(f"{location(detail['loc'])}: {_argument_problem(detail)}" for detail in details)
        raised = ArgumentTypeError if wrong_type else ArgumentValueError
        raise raised(f"{constructor}: {said}") from error


def _argument_problem(detail: Any) -> str:
    """pydantic's wording of one problem, with the value when a number, else only its type
    (text from the caller may be long or hold control codes)."""
    given = detail["input"]
    shown = repr(given) if given is None or type(given) in (bool, int) else kind_of(given)
    return f"{detail['msg'][:1].lower()}{detail['msg'][1:]}, got {shown}"


def is_complete(message: Message) -> bool:
    """Whether ``message`` and the models it holds have every field without a default (only
    ``model_construct`` can leave one out): a look at each instance's keys, no validation."""
    fields = message.__dict__
    if not fields.keys() >= _MESSAGE_REQUIRED:
        return False
    result = fields.get("tool_result")
    if result is not None and not result.__dict__.keys() >= _RESULT_REQUIRED:
        return False
    calls = fields.get("tool_calls")
    return not calls or all(call.__dict__.keys() >= _CALL_REQUIRED for call in calls)


_MESSAGE_REQUIRED = _required_fields(Message)
_RESULT_REQUIRED = _required_fields(ToolResult)
_CALL_REQUIRED = _required_fields(ToolCall)


# Deprecated for one release: ``Message.tool_result(...)`` on the class builds a message (with a
# DeprecationWarning); ``msg.tool_result`` on an instance is the field. Set after class creation so pydantic keeps ``tool_result`` as a field.
Message.tool_result = _ConstructorOrField(Message._deprecated_tool_result, Message)  # type: ignore[assignment]
