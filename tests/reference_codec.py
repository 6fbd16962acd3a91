"""An independent reading of the wire table, for tests to check the library against.

Built on the standard library's ``json`` only, never on ``orion_messages.wire``: a writer that
applies the reference page's key order and omission rules and serde_json's spelling (compact, or
``to_string_pretty``'s two-space form; floats as current serde_json, zmij, writes them), and a reader's view of a
parsed message with the page's defaults filled in. ``same`` compares values the way a byte-exact
round trip needs them compared: types, key order and the sign of zero included.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal
from typing import Any

from orion_messages import Message, ToolCall, ToolResult

MESSAGE_KEYS = ("id", "role", "content", "timestamp", "tool_calls", "tool_result", "token_count", "pinned")
"""The message keys of the wire table, in the order serde writes them."""
CALL_KEYS = ("id", "name", "arguments")
"""The tool-call keys, in order."""
RESULT_KEYS = ("tool_call_id", "tool_name", "content", "is_error", "pending")
"""The tool-result keys, in order (``pending`` is new in this release)."""


def ryu_float(value: float) -> str:
    """A finite float spelled as serde_json (ryu) spells it: ``40.0``, ``1e20``, ``1.5e-7``, ``0.00001``."""
    if not math.isfinite(value):
        raise ValueError(f"JSON has no {value!r}")
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest digits that read back as the same double, as ryu does.
    decimal = Decimal(repr(abs(value))).as_tuple()
    digits = "".join(map(str, decimal.digits))
    exponent = int(decimal.exponent)
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    length = len(digits)
    point = length + exponent  # ryu's "kk": where the decimal point falls
    if exponent >= 0 and point <= 16:
        text = digits + "0" * exponent + ".0"
    elif 0 < point <= 16:
        text = digits[:point] + "." + digits[point:]
    elif -5 < point <= 0:
        text = "0." + "0" * -point + digits
    elif length == 1:
        text = f"{digits}e{point - 1}"
    else:
        text = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return sign + text


def zmij_float(value: float) -> str:
    """A finite float as serde_json 1.0.146 and later (zmij) spells it: ryu's digits and layout,
    with an explicit sign on a positive exponent (``1e+16``, ``1.5e+21``; ``1e-7`` unchanged)."""
    text = ryu_float(value)
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}e+{exponent}" if e and not exponent.startswith("-") else text


def write_value(
    value: Any, indent: int | None = None, level: int = 0, floats: Callable[[float], str] = zmij_float
) -> str:
    """A JSON value as serde_json writes it: compact, or pretty with ``indent`` spaces; ``floats``
    spells a float (``ryu_float`` for serde_json before 1.0.146)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return floats(value)
    if isinstance(value, Mapping):
        items = [(json.dumps(key, ensure_ascii=False), item) for key, item in value.items()]
        if indent is None:
            return "{" + ",".join(f"{key}:{write_value(item, floats=floats)}" for key, item in items) + "}"
        if not items:
            return "{}"
        inner = " " * (indent * (level + 1))
        body = ",\n".join(
            f"{inner}{key}: {write_value(item, indent, level + 1, floats)}" for key, item in items
        )
        return "{\n" + body + "\n" + " " * (indent * level) + "}"
    if isinstance(value, (list, tuple)):
        if indent is None:
            return "[" + ",".join(write_value(item, floats=floats) for item in value) + "]"
        if not value:
            return "[]"
        inner = " " * (indent * (level + 1))
        body = ",\n".join(f"{inner}{write_value(item, indent, level + 1, floats)}" for item in value)
        return "[\n" + body + "\n" + " " * (indent * level) + "]"
    raise TypeError(f"not a JSON value: {value!r}")


def call_to_wire(call: ToolCall) -> dict[str, Any]:
    """A tool call as the wire table lays it out, unknown keys last."""
    return {"id": call.id, "name": call.name, "arguments": call.arguments, **(call.model_extra or {})}


def result_to_wire(result: ToolResult) -> dict[str, Any]:
    """A tool result as the wire table lays it out: ``is_error`` always, ``pending`` only when true."""
    wire: dict[str, Any] = {
        "tool_call_id": result.tool_call_id,
        "tool_name": result.tool_name,
        "content": result.content,
        "is_error": result.is_error,
    }
    if result.pending:
        wire["pending"] = True
    wire.update(result.model_extra or {})
    return wire


def message_to_wire(message: Message) -> dict[str, Any]:
    """A message as the wire table lays it out, with its omissions, unknown keys last."""
    wire: dict[str, Any] = {
        "id": message.id,
        "role": message.role.value,
        "content": message.content,
        "timestamp": message.timestamp,
    }
    if message.tool_calls:
        wire["tool_calls"] = [call_to_wire(call) for call in message.tool_calls]
    if message.tool_result is not None:
        wire["tool_result"] = result_to_wire(message.tool_result)
    if message.token_count is not None:
        wire["token_count"] = message.token_count
    if message.pinned:
        wire["pinned"] = True
    wire.update(message.model_extra or {})
    return wire


def reference_dumps(
    messages: Iterable[Message], indent: int | None = None, floats: Callable[[float], str] = zmij_float
) -> bytes:
    """What orion-core's serde (plus unknown keys last) writes for ``messages``."""
    return write_value([message_to_wire(message) for message in messages], indent, floats=floats).encode(
        "utf-8"
    )


def view_of_parsed(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message parsed by the standard library, with the wire table's defaults filled in."""
    result = message.get("tool_result")
    return {
        "id": message["id"],
        "role": message["role"],
        "content": message["content"],
        "timestamp": message["timestamp"],
        "tool_calls": [
            {
                **{key: call[key] for key in CALL_KEYS},
                "extra": {key: value for key, value in call.items() if key not in CALL_KEYS},
            }
            for call in message.get("tool_calls", [])
        ],
        "tool_result": None
        if result is None
        else {
            "tool_call_id": result["tool_call_id"],
            "tool_name": result["tool_name"],
            "content": result["content"],
            "is_error": result["is_error"],
            "pending": result.get("pending", False),
            "extra": {key: value for key, value in result.items() if key not in RESULT_KEYS},
        },
        "token_count": message.get("token_count"),
        "pinned": message.get("pinned", False),
        "extra": {key: value for key, value in message.items() if key not in MESSAGE_KEYS},
    }


def view_of_model(message: Message) -> dict[str, Any]:
    """The same view as ``view_of_parsed``, read from a model's attributes."""
    result = message.tool_result
    return {
        "id": message.id,
        "role": message.role.value,
        "content": message.content,
        "timestamp": message.timestamp,
        "tool_calls": [
            {"id": call.id, "name": call.name, "arguments": call.arguments, "extra": call.model_extra or {}}
            for call in message.tool_calls
        ],
        "tool_result": None
        if result is None
        else {
            "tool_call_id": result.tool_call_id,
            "tool_name": result.tool_name,
            "content": result.content,
            "is_error": result.is_error,
            "pending": result.pending,
            "extra": result.model_extra or {},
        },
        "token_count": message.token_count,
        "pinned": message.pinned,
        "extra": message.model_extra or {},
    }


def same(left: Any, right: Any) -> bool:
    """Equal as JSON values that must write back identically: same types, key order, sign of zero."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(same(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float):
        return left == right and math.copysign(1.0, left) == math.copysign(1.0, right)
    return bool(left == right)
