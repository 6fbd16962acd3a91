"""The conversation: a validated list of messages, the host's twin of orion-core's agent history.

``Conversation`` sits above planning and pruning and owns what it learns about itself: the layout
and per-message costs its plans reuse (a ``_PlanCache``), and the bytes each message was encoded to
by the last save, so saving again after an append encodes only the new message.
"""

from __future__ import annotations

import copyreg
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from types import MethodType
from typing import Any, ClassVar, cast, overload

from typing_extensions import Self, deprecated

from . import storage
from ._encoded import _EncodedFile
from ._message_index import MessageIndex
from ._text import excerpt, kind_of
from .checks import find_problems
from .counting import MessageCounter
from .errors import (
    ArgumentTypeError,
    FormatError,
    PendingResultNotFound,
    Problem,
    ResultAlreadyResolved,
    require_bool,
)
from .ids import COUNTER_MAX, message_number, next_free_counter
from .models import Message, ToolResult, message_list, require_token_count
from .planning import ContextConfig, PrunePlan, _context_config, _Counting, _counting, _plan, _PlanCache
from .pruning import PruneResult, Summarizer, _prune
from .templates import ChatTemplate, ToolSchema
from .text_counters import TextCounter
from .turns import TurnLayout, split_turns

__all__ = ["Conversation"]


def _counted(count: int) -> str:
    return f"{count} message" if count == 1 else f"{count} messages"


def _require_message(message: object) -> None:
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"Conversation.append: expected a Message, got {kind_of(message)}")


def _comparable(other: object) -> list[object] | None:
    """What a conversation or its view compares its messages with: ``other``'s items when it is
    a conversation, a view, a list or a tuple (equal messages in the same order are equal), else
    None (not comparable). A list is compared as it is, and a conversation's or a view's own
    list is, uncopied."""
    if isinstance(other, list):
        return other
    if isinstance(other, Conversation):
        return cast("list[object]", other._messages)
    if isinstance(other, _MessagesView):
        return cast("list[object]", other._items)
    return list(other) if isinstance(other, tuple) else None


class _MessagesView(Sequence[Message]):
    """A read-only view of the conversation's list, without copying it."""

    __slots__ = ("_items",)

    def __init__(self, items: list[Message]) -> None:
        self._items = items

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._items)

    def __repr__(self) -> str:
        return f"<{_counted(len(self._items))}>"

    def __eq__(self, other: object) -> bool:
        """Equal to a conversation, view, list or tuple holding equal messages in the same order."""
        others = _comparable(other)
        return NotImplemented if others is None else self._items == others

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # compares by value, like the list it shows

    def __contains__(self, message: object) -> bool:
        return message in self._items

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        """The index of the first message equal to ``value`` (``list.index``)."""
        return self._items.index(value, start, len(self._items) if stop is None else stop)

    def count(self, value: Any) -> int:
        """How many messages equal ``value``."""
        return self._items.count(value)


class _SameObjects:
    """A plan-cache key equal only to a key made of the very same objects, not merely equal ones.

    Templates of one class compare equal (``ChatTemplate.__eq__``) though an instance of a custom
    class may render differently, so counts are reused only for the template and counter objects
    they were counted with. The key holds its objects, so their ids stay theirs while it lives. A
    bound method, made anew at each attribute access, is known by its object and its function.
    """

    __slots__ = ("_hash", "_objects")

    def __init__(self, key: object) -> None:
        parts = key if isinstance(key, tuple) else (key,)
        objects: list[object] = []
        for part in parts:
            objects += (part.__self__, part.__func__) if isinstance(part, MethodType) else (part,)
        self._objects = tuple(objects)
        self._hash = hash(tuple(map(id, self._objects)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _SameObjects):
            return NotImplemented
        return len(self._objects) == len(other._objects) and all(
            mine is theirs for mine, theirs in zip(self._objects, other._objects, strict=True)
        )

    def __hash__(self) -> int:
        return self._hash


def _by_identity(counting: _Counting) -> _Counting:
    """``counting`` with a cache key that matches only the same template and counter objects."""
    return replace(counting, key=_SameObjects(counting.key))


class Conversation(Sequence[Message]):
    """A validated list of messages with orion-core's agent operations.

    A read-only ``Sequence`` of its messages (``len``, indexing, slices as lists, ``in``), so
    it goes wherever a sequence of messages does (``plan_prune``, ``find_problems``, ``dumps``).
    ``messages`` is a read-only view that follows every change; change the conversation through
    ``append``, ``extend``, ``set_pinned``, ``set_token_count``, ``resolve``,
    ``replace_messages``, and ``prune`` when it makes a summary. Messages themselves are
    immutable. A conversation compares equal to a list or tuple of equal messages.

    Not thread-safe, like a ``list`` being changed: a conversation changed by one thread while
    another reads or plans it can keep a wrong cached plan. Share one between threads under a
    lock of your own.

    Raises:
        ArgumentTypeError: (the constructor) ``messages`` is not an iterable of messages (a single
            ``Message``, a string or a mapping included), is a set (which keeps no order), or an
            item is not a ``Message`` (named by its index).
    """

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        self._messages: list[Message] = []
        self._last_counter = 0
        self._start_caches()
        for message in message_list(messages, "Conversation"):  # checked here to name the constructor
            self.append(message)

    def _start_caches(self) -> None:
        """Empty caches: what ``_CACHES`` names, rebuilt on use from the messages."""
        self._plans = _PlanCache()
        self._encoded = _EncodedFile()  # the bytes of the last save, extended by the next one
        self._index: MessageIndex | None = None  # built on the first lookup by id or tool call

    _CACHES: ClassVar[frozenset[str]] = frozenset({"_plans", "_encoded", "_index"})
    """The attributes a pickle or a deep copy leaves out: the last plans (with the counters and
    templates they used, which may not pickle), the last save's bytes and the index."""

    def __getstate__(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The messages, the id counter and a subclass's own attributes (``__slots__`` too),
        without the caches: as ``copyreg`` pickles an object, a dict and the slots' values."""
        kept = {name: value for name, value in vars(self).items() if name not in self._CACHES}
        # copyreg's own list of slot names, as pickle's default state uses it (private names
        # mangled, __dict__ and __weakref__ left out).
        slots = copyreg._slotnames(type(self))  # type: ignore[attr-defined]
        return kept, {name: getattr(self, name) for name in slots if hasattr(self, name)}

    def __setstate__(self, state: tuple[dict[str, Any], dict[str, Any]] | dict[str, Any]) -> None:
        # A dict: a pickle of a release that pickled the whole __dict__, caches included.
        kept, slots = (state, {}) if isinstance(state, dict) else state
        self.__dict__.update((name, value) for name, value in kept.items() if name not in self._CACHES)
        for name, value in slots.items():
            setattr(self, name, value)
        self._start_caches()

    def __copy__(self) -> Conversation:
        """A conversation of the same messages (they are immutable) that changes independently;
        its ``next_id`` goes on from this one's."""
        copied = type(self).__new__(type(self))  # a subclass copies as itself, its attributes too
        kept, slots = self.__getstate__()
        copied.__setstate__(({**kept, "_messages": list(self._messages)}, slots))
        return copied

    @property
    def messages(self) -> Sequence[Message]:
        """The messages, in order (a read-only view, not a copy; equal to a list of the same messages)."""
        return _MessagesView(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Iterator[Message]:
        return iter(self._messages)

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> list[Message]: ...
    def __getitem__(self, index: int | slice) -> Message | list[Message]:
        return self._messages[index]

    def __repr__(self) -> str:
        return f"Conversation({_counted(len(self._messages))})"

    def __eq__(self, other: object) -> bool:
        """Equal to a conversation, a ``messages`` view, a list or a tuple holding equal messages
        in the same order (as ``messages`` compares); the id counter is not compared."""
        others = _comparable(other)
        return NotImplemented if others is None else self._messages == others

    __hash__: ClassVar[None] = None  # type: ignore[assignment]  # compares by value, and changes

    # --- files --------------------------------------------------------------------------------

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, strict: bool = False) -> Self:
        """A conversation from a conversation file (``orion_messages.load``); raises as it does."""
        storage._require_path(path, "Conversation.load")
        return cls(storage.load(path, strict=strict))

    @classmethod
    def load_jsonl(cls, path: str | os.PathLike[str], *, repair: bool = False, strict: bool = False) -> Self:
        """A conversation from a JSON Lines log (``orion_messages.read_jsonl``); raises as it does."""
        storage._require_path(path, "Conversation.load_jsonl")
        return cls(storage._read_jsonl(path, repair=repair, strict=strict))  # warnings point at our caller

    def save(self, path: str | os.PathLike[str], *, indent: int | None = None) -> None:
        """Write the conversation file atomically, exactly as ``orion_messages.save`` writes it.

        The compact form reuses the bytes of every message encoded by an earlier save (messages
        are immutable), so saving again after an append encodes the new message only. The JSON
        values inside a message (``arguments``, unknown keys' values) are plain dicts and lists
        that Python lets you change in place: such a change is not seen here. Replace the
        message instead (``model_copy(update=...)`` and ``replace_messages``, or a new message).

        Raises:
            ArgumentTypeError: ``path`` is not a str or an ``os.PathLike`` of str (bytes refused).
            ArgumentValueError: ``path`` is empty.
            FormatError: a message cannot be written back (placed at ``[index]``, as ``save``
                places it); the file is left untouched.
            NotARegularFileError, OSError: as ``orion_messages.save``.
        """
        storage._require_path(path, "Conversation.save")
        if indent is not None:
            storage.save(path, self._messages, indent=indent)
            return
        self._encode_for(path)
        # storage writes any bytes-like buffer; this one is reused, not copied. The path goes as
        # given: Path() would drop a trailing slash that must be refused.
        self._encoded.write_compact(lambda data: storage._replace_atomically(path, data))  # type: ignore[arg-type]

    def save_jsonl(self, path: str | os.PathLike[str]) -> None:
        """Write the whole conversation as a JSON Lines log atomically (``orion_messages.save_jsonl``).

        Raises:
            ArgumentTypeError, ArgumentValueError, FormatError, NotARegularFileError, OSError: as
                ``save``; the file is left untouched.
        """
        storage._require_path(path, "Conversation.save_jsonl")
        self._encode_for(path)
        storage._replace_atomically(path, self._encoded.jsonl())  # type: ignore[arg-type]  # any bytes-like buffer

    def _encode_for(self, path: str | os.PathLike[str]) -> None:
        """Bring the saved bytes up to date; a problem names the file, as ``storage.save``'s do."""
        try:
            self._encoded.update(self._messages)
        except FormatError as error:
            raise error.with_source(os.fspath(path)) from None

    # --- changes ------------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        """Add one message at the end.

        Raises:
            ArgumentTypeError: ``message`` is not a ``Message``.
        """
        _require_message(message)
        if self._index is not None:
            self._index.added(len(self._messages), message)
        self._messages.append(message)
        self._count(message)

    def extend(self, messages: Iterable[Message]) -> None:
        """Add messages at the end, in order; nothing is added if an item is not a ``Message``.

        Raises:
            ArgumentTypeError: ``messages`` is not an iterable of messages (a single ``Message``,
                a string or a mapping included), is a set (which keeps no order), or an item is
                not a ``Message`` (named by its index).
        """
        for message in message_list(messages, "Conversation.extend"):
            self.append(message)

    def replace_messages(self, messages: Iterable[Message]) -> None:
        """Replace every message (orion-core's ``agent.replace_messages``).

        ``next_id`` continues past every ``msg-N`` in the new messages and never goes back, so an
        id handed out before the replacement is not handed out again. Nothing changes if an
        item is not a ``Message``.

        Raises:
            ArgumentTypeError: as ``extend``.
        """
        new = message_list(messages, "Conversation.replace_messages")
        self._messages.clear()  # the same list: a ``messages`` view taken before follows
        self._start_caches()
        self.extend(new)

    def _lookup(self) -> MessageIndex:
        """The index of positions, built now if this is the first lookup (loading builds none)."""
        if self._index is None:
            self._index = MessageIndex(self._messages)
        return self._index

    def _replace_at(self, index: int, message: Message) -> None:
        old, self._messages[index] = self._messages[index], message
        self._lookup().replaced(index, old, message)
        self._plans.changed(index, old, message)
        self._encoded.replaced(index)

    def set_pinned(self, id: str, pinned: bool) -> bool:
        """Pin or unpin the first message with ``id``; False when there is none, as in orion-core.

        Raises:
            ArgumentTypeError: ``id`` is not a str or ``pinned`` not a bool (nothing is coerced).
        """
        require_bool("Conversation.set_pinned: pinned", pinned)
        change = Message.pin if pinned else Message.unpin
        return self._change_first(id, change, "Conversation.set_pinned")

    def set_token_count(self, id: str, token_count: int | None) -> bool:
        """Set the ``token_count`` of the first message with ``id`` (None clears it); False when
        there is none. The agent leaves counts unset for a host that counts tokens to fill in.

        Raises:
            ArgumentTypeError: ``id`` is not a str, or ``token_count`` not an int or None.
            ArgumentValueError: ``token_count`` is outside 0 to 4,294,967,295 (unsigned 32-bit).
        """
        require_token_count(token_count, "Conversation.set_token_count")
        change: Callable[[Message], Message] = lambda message: message.with_token_count(token_count)  # noqa: E731
        return self._change_first(id, change, "Conversation.set_token_count")

    def _change_first(self, id: str, change: Callable[[Message], Message], function: str) -> bool:
        """Replace the first message with ``id`` by ``change`` of it; False when there is none.
        A wrong ``id`` is refused naming ``function``."""
        if not isinstance(id, str):
            raise ArgumentTypeError(f"{function}: id must be a str, got {kind_of(id)} {excerpt(repr(id))}")
        index = self._lookup().first_with_id(id)
        if index is None:
            return False
        self._replace_at(index, change(self._messages[index]))
        return True

    def next_id(self) -> str:
        """A fresh ``msg-N`` id, past every ``msg-N`` in the conversation and every id given before.

        Tool calls of a message take ids ``tool_call_id(message_id, k)``: ``msg-2-call-1``...
        """
        # Only past orion-core's u64 counter can a msg-N be taken: the rare case asks the index
        # by id (built once, then kept as messages come), the common one asks nothing.
        past_counter = self._last_counter >= COUNTER_MAX
        taken = self._lookup() if past_counter else ()
        self._last_counter = next_free_counter(self._last_counter, taken)
        return f"msg-{self._last_counter}"

    def pending(self) -> list[Message]:
        """The tool-result placeholders whose results are still to come, in order."""
        return [self._messages[index] for index in self._lookup().pending()]

    def resolve(self, tool_call_id: str, content: str, *, is_error: bool = False) -> Message:
        """Fill in a pending tool result: same id, same position, ``pending`` false.

        Returns the resolved message. Its ``token_count`` is cleared: the count was the
        placeholder's, and the text has changed (count it again, as for a new message).

        The first placeholder for ``tool_call_id`` is filled in, also where several calls repeat
        an id (a server that names every turn's call ``call_0``). A placeholder beside a
        completed result for the same call is a conversation ``find_problems`` reports.

        Raises:
            PendingResultNotFound: no tool-result message answers ``tool_call_id`` (a ``KeyError``).
            ResultAlreadyResolved: no result for ``tool_call_id`` is pending and one is
                completed (a ``ValueError``; ``index`` is the last); nothing changes.
            ArgumentTypeError: ``tool_call_id`` or ``content`` is not a str, or ``is_error`` not a bool.
        """
        if not isinstance(tool_call_id, str):
            raise ArgumentTypeError(
                f"Conversation.resolve: tool_call_id must be a str, got {kind_of(tool_call_id)} "
                f"{excerpt(repr(tool_call_id))}"
            )
        if not isinstance(content, str):
            raise ArgumentTypeError(f"Conversation.resolve: content must be a str, got {kind_of(content)}")
        require_bool("Conversation.resolve: is_error", is_error)
        index = self._lookup().first_pending(tool_call_id)
        if index is None:
            resolved_at = self._lookup().last_result(tool_call_id)
            if resolved_at is not None:
                raise ResultAlreadyResolved(tool_call_id, index=resolved_at)
            raise PendingResultNotFound(tool_call_id)
        message = self._messages[index]
        result = cast(ToolResult, message.tool_result)  # a pending result's message holds one
        new_result = result.model_copy(update={"content": content, "is_error": is_error, "pending": False})
        update = {"content": content, "tool_result": new_result, "token_count": None}
        resolved = message.model_copy(update=update)
        self._replace_at(index, resolved)
        return resolved

    def _count(self, message: Message) -> None:
        counter = message_number(message.id)
        if counter is not None and counter > self._last_counter:
            self._last_counter = counter

    # --- deprecated twins of the free functions ----------------------------------------------

    @deprecated("Conversation.turns() is deprecated; use split_turns(conversation.messages)", category=None)
    def turns(self) -> TurnLayout:
        """Deprecated: use ``split_turns(conversation.messages)``."""
        warnings.warn(
            "Conversation.turns() is deprecated; use split_turns(conversation.messages)",
            DeprecationWarning,
            stacklevel=2,
        )
        return split_turns(self._messages)

    @deprecated("Conversation.check() is deprecated; use find_problems(conversation.messages)", category=None)
    def check(self) -> list[Problem]:
        """Deprecated: use ``find_problems(conversation.messages)``."""
        warnings.warn(
            "Conversation.check() is deprecated; use find_problems(conversation.messages)",
            DeprecationWarning,
            stacklevel=2,
        )
        return find_problems(self._messages)

    # --- pruning ------------------------------------------------------------------------------

    def plan_prune(
        self,
        config: ContextConfig | None = None,
        *,
        count: MessageCounter | None = None,
        template: ChatTemplate | str | None = None,
        system_prompt: str = "",
        tools: Sequence[ToolSchema] = (),
        counter: TextCounter | None = None,
    ) -> PrunePlan:
        """Which turns fit ``config``'s context window (see ``orion_messages.plan_prune``).

        The layout and each message's count are kept from one plan to the next: after an append,
        only the new messages are laid out, rendered and counted. Counts are reused only for the
        very same ``template``, ``count`` and ``counter`` objects (another template of the same
        class is counted afresh); a template changed in place after a plan is not noticed.
        """
        counting = _by_identity(_counting(count, template, system_prompt, tools, counter))
        return _plan(
            self._plans, self._messages, _context_config(config, "Conversation.plan_prune"), counting
        )

    def prune(
        self,
        config: ContextConfig | None = None,
        *,
        count: MessageCounter | None = None,
        summarize: Summarizer | None = None,
        template: ChatTemplate | str | None = None,
        system_prompt: str = "",
        tools: Sequence[ToolSchema] = (),
        counter: TextCounter | None = None,
    ) -> PruneResult:
        """Prune to ``config``'s context window (see ``orion_messages.prune``).

        The sliding window leaves the conversation as it is: ``result.messages`` is what to
        send, and ``replace_messages(result.history)`` drops the dropped turns for good. A
        summary that succeeds replaces the folded messages here too (the conversation becomes
        ``result.history``), as orion-core does, with a fresh id from ``next_id``.
        """
        counting = _by_identity(_counting(count, template, system_prompt, tools, counter))
        config = _context_config(config, "Conversation.prune")
        result = _prune(self._plans, self._messages, config, counting, summarize, self.next_id)
        if result.summary is not None:
            self.replace_messages(result.history)
        return result
