"""The same conversation in the peers' formats: msgspec Structs, pydantic-ai and LangChain messages;
and pydantic-core on plain TypedDicts, the floor for any pydantic model of the format.

Each peer is optional (``pip install -e ".[bench]"`` installs them all); ``available()`` says
which are installed and why not for the others.
"""

# No ``from __future__ import annotations`` here: LangChain's ``trim_messages`` tells a
# per-message counter from a list counter by the real annotation ``BaseMessage``.

import importlib.util
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import ConfigDict, TypeAdapter
from typing_extensions import NotRequired, TypedDict

__all__ = ["available", "langchain", "msgspec_codec", "pydantic_ai", "pydantic_floor"]

_PEERS = {"msgspec": "msgspec", "pydantic-ai": "pydantic_ai", "langchain-core": "langchain_core"}


def available() -> dict[str, str | None]:
    """Each peer's name, mapped to None when installed or to the reason it is skipped."""
    return {
        name: None
        if importlib.util.find_spec(module)
        else f"{name} is not installed (pip install -e '.[bench]')"
        for name, module in _PEERS.items()
    }


def _when(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def msgspec_codec() -> tuple[Callable[[bytes], Any], Callable[[Any], bytes]]:
    """A typed msgspec decoder and encoder whose Structs mirror orion-core's message, field for field."""
    import msgspec

    class ToolCall(msgspec.Struct):
        id: str
        name: str
        arguments: Any

    class ToolResult(msgspec.Struct, omit_defaults=True):
        tool_call_id: str
        tool_name: str
        content: str
        is_error: bool
        pending: bool = False

    class Message(msgspec.Struct, omit_defaults=True):
        id: str
        role: Literal["system", "user", "assistant", "tool_call", "tool_result"]
        content: str
        timestamp: int
        tool_calls: list[ToolCall] = []
        tool_result: ToolResult | None = None
        token_count: int | None = None
        pinned: bool = False

    decoder = msgspec.json.Decoder(list[Message])
    encoder = msgspec.json.Encoder()
    return decoder.decode, encoder.encode


_Role = Literal["system", "user", "assistant", "tool_call", "tool_result"]


class _ToolCallDict(TypedDict):
    id: str
    name: str
    arguments: Any


class _ToolResultDict(TypedDict):
    tool_call_id: str
    tool_name: str
    content: str
    is_error: bool
    pending: NotRequired[bool]


class _MessageDict(TypedDict):
    id: str
    role: _Role
    content: str
    timestamp: int
    tool_calls: NotRequired[list[_ToolCallDict]]
    tool_result: NotRequired[_ToolResultDict | None]
    token_count: NotRequired[int | None]
    pinned: NotRequired[bool]


def pydantic_floor() -> TypeAdapter[Any]:
    """pydantic-core validating and writing orion-core's messages as plain TypedDicts (strict).

    No model instances, no JSON value rules, no omission rules: what pydantic-core itself costs
    on this format, the floor under any pydantic model of it (the issue's load target names it).
    Its parser caches keys only, as ``loads``' does: caching every short string (pydantic's
    default) is slower on these corpora, and the floor is the fastest pydantic-core can do.
    """
    return TypeAdapter(list[_MessageDict], config=ConfigDict(strict=True, cache_strings="keys"))


class PydanticAI:
    """The conversation as pydantic-ai ``ModelMessage`` objects (tool results grouped per request)."""

    def __init__(self, wire: list[dict[str, Any]]) -> None:
        from pydantic_ai.messages import (
            ModelMessagesTypeAdapter,
            ModelRequest,
            ModelResponse,
            SystemPromptPart,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
            UserPromptPart,
        )

        self.adapter = ModelMessagesTypeAdapter
        messages: list[Any] = []
        results: list[Any] = []
        for item in wire:
            when = _when(item["timestamp"])
            if item["role"] == "tool_result":
                result = item["tool_result"]
                results.append(
                    ToolReturnPart(
                        tool_name=result["tool_name"],
                        content=result["content"],
                        tool_call_id=result["tool_call_id"],
                        timestamp=when,
                        outcome="failed" if result["is_error"] else "success",
                    )
                )
                continue
            if results:
                messages.append(ModelRequest(parts=results))
                results = []
            if item["role"] == "system":
                messages.append(
                    ModelRequest(parts=[SystemPromptPart(content=item["content"], timestamp=when)])
                )
            elif item["role"] == "user":
                messages.append(ModelRequest(parts=[UserPromptPart(content=item["content"], timestamp=when)]))
            else:
                parts: list[Any] = [TextPart(content=item["content"])] if item["content"] else []
                parts += [
                    ToolCallPart(tool_name=call["name"], args=call["arguments"], tool_call_id=call["id"])
                    for call in item.get("tool_calls", ())
                ]
                messages.append(ModelResponse(parts=parts, timestamp=when))
        if results:
            messages.append(ModelRequest(parts=results))
        self.messages = messages
        self.data: bytes = self.adapter.dump_json(messages)

    def load(self, data: bytes) -> Any:
        """``ModelMessagesTypeAdapter.validate_json``, as pydantic-ai documents loading a history."""
        return self.adapter.validate_json(data)

    def dump(self, messages: Any) -> bytes:
        """``ModelMessagesTypeAdapter.dump_json``."""
        return self.adapter.dump_json(messages)


def pydantic_ai(wire: list[dict[str, Any]]) -> PydanticAI:
    """The conversation in pydantic-ai's format."""
    return PydanticAI(wire)


class LangChain:
    """The conversation as LangChain core messages, stored as ``messages_to_dict`` JSON."""

    def __init__(self, wire: list[dict[str, Any]]) -> None:
        import orjson
        from langchain_core.messages import (
            AIMessage,
            BaseMessage,
            HumanMessage,
            SystemMessage,
            ToolMessage,
            messages_from_dict,
            messages_to_dict,
            trim_messages,
        )

        self._from_dict = messages_from_dict
        self._to_dict = messages_to_dict
        self._trim = trim_messages
        self._orjson = orjson
        messages: list[BaseMessage] = []
        for item in wire:
            role, content, ident = item["role"], item["content"], item["id"]
            if role == "system":
                messages.append(SystemMessage(content=content, id=ident))
            elif role == "user":
                messages.append(HumanMessage(content=content, id=ident))
            elif role == "tool_result":
                result = item["tool_result"]
                messages.append(
                    ToolMessage(
                        content=content,
                        tool_call_id=result["tool_call_id"],
                        name=result["tool_name"],
                        status="error" if result["is_error"] else "success",
                        id=ident,
                    )
                )
            else:
                calls = [
                    {"name": call["name"], "args": call["arguments"], "id": call["id"], "type": "tool_call"}
                    for call in item.get("tool_calls", ())
                ]
                messages.append(AIMessage(content=content, tool_calls=calls, id=ident))
        self.messages = messages
        self.data: bytes = orjson.dumps(messages_to_dict(messages))

    def load(self, data: bytes) -> Any:
        """``messages_from_dict(json.loads(data))``: LangChain has no loader from JSON text."""
        return self._from_dict(self._orjson.loads(data))

    def dump(self, messages: Any) -> bytes:
        """``json.dumps(messages_to_dict(messages))`` with orjson."""
        return self._orjson.dumps(self._to_dict(messages))

    def trim(self, messages: Any, max_tokens: int) -> Any:
        """``trim_messages`` keeping the last messages, whole turns from a human message, the system kept."""
        return self._trim(
            messages,
            max_tokens=max_tokens,
            token_counter=_langchain_count,
            strategy="last",
            start_on="human",
            include_system=True,
        )


def _langchain_count(message: Any) -> int:  # annotated BaseMessage by langchain(), below
    return max(1, len(message.content) // 4)


def langchain(wire: list[dict[str, Any]]) -> LangChain:
    """The conversation in LangChain's format."""
    from langchain_core.messages import BaseMessage

    # trim_messages checks ``annotation is BaseMessage`` to use a per-message counter.
    _langchain_count.__annotations__["message"] = BaseMessage
    return LangChain(wire)
