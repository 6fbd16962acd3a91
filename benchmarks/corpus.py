"""A realistic orion-core conversation of any size, for the benchmarks (deterministic).

The mix follows an agent at work: a system prompt, then turns of a user message, one to three
rounds of an assistant reply calling one or two tools (arguments objects, keys sorted as serde
writes them) each answered by a tool result (about 8% errors), and a final answer. Ten user
messages spread over the conversation are pinned, the last tool results may be pending, and
every message carries a ``token_count`` (characters / 4, tool calls included) as a host fills
it in.
"""

from __future__ import annotations

import random
from typing import Any

__all__ = ["make_conversation", "make_short_conversation", "token_estimate"]

_WORDS = [
    "the",
    "agent",
    "reads",
    "file",
    "config",
    "parser",
    "returns",
    "error",
    "value",
    "tool",
    "call",
    "result",
    "context",
    "window",
    "token",
    "budget",
    "turn",
    "pinned",
    "message",
    "assistant",
    "user",
    "system",
    "prompt",
    "function",
    "argument",
    "schema",
    "orion",
    "core",
    "conversation",
    "json",
    "serde",
    "rust",
    "python",
    "pydantic",
    "validate",
    "load",
    "save",
    "prune",
    "append",
    "log",
    "line",
    "record",
    "crash",
    "torn",
    "lock",
    "fsync",
    "rename",
    "folder",
    "path",
    "src",
    "main",
    "lib",
    "test",
    "fixture",
    "golden",
    "héllo",
    "naïve",
    "café",
    "日本語",
    "überprüfen",
    "résumé",
    "Ω≈ç√",
    "🙂",
    'quote"inside',
    "back\\slash",
    "tab\tnew\nline",
]

_TOOLS = ("read_file", "search", "run_tests", "write_file", "list_dir", "http_get")
_BASE_TIME = 1_781_512_345_678
_PINS = 10


def token_estimate(text: str) -> int:
    """orion-core's default estimate: ``max(1, chars / 4)``."""
    return max(1, len(text) // 4)


class _Text:
    """Slices of one long pseudo-text, so that making 100,000 messages stays fast."""

    def __init__(self, rng: random.Random) -> None:
        self._pool = " ".join(rng.choice(_WORDS) for _ in range(60_000))
        self._rng = rng

    def __call__(self, low: int, high: int) -> str:
        size = self._rng.randint(low, high)
        start = self._rng.randrange(0, len(self._pool) - size)
        return self._pool[start : start + size]


def _arguments(rng: random.Random, text: _Text, tool: str) -> dict[str, Any]:
    if tool in ("read_file", "write_file"):
        args: dict[str, Any] = {"path": f"src/{text(4, 18).strip() or 'x'}.py"}
        if tool == "read_file":
            args |= {"end_line": rng.randint(40, 400), "start_line": rng.randint(1, 39)}
        else:
            args["content"] = text(40, 300)
        return dict(sorted(args.items()))
    if tool == "search":
        return {
            "filters": {"case_sensitive": rng.random() < 0.3, "globs": ["*.py", "*.rs"][: rng.randint(1, 2)]},
            "max_results": rng.randint(5, 50),
            "query": text(8, 60),
        }
    if tool == "run_tests":
        return {"args": ["-q", "-x"], "path": "tests/", "timeout": rng.randint(10, 600) / 10}
    if tool == "list_dir":
        return {"depth": rng.randint(1, 3), "path": "."}
    return {
        "headers": {"accept": "application/json"},
        "url": f"https://example.invalid/{rng.randint(1, 9999)}",
    }


def _count(message: dict[str, Any]) -> int:
    calls = message.get("tool_calls", ())
    extra = sum(len(call["name"]) + len(repr(call["arguments"])) for call in calls)
    return max(1, (len(message["content"]) + extra) // 4)


def make_conversation(size: int, *, seed: int = 0, pending_tail: bool = True) -> list[dict[str, Any]]:
    """``size`` messages as wire dicts (keys in orion-core's order, defaults left out)."""
    rng = random.Random(seed)
    text = _Text(rng)
    out: list[dict[str, Any]] = []
    clock = _BASE_TIME

    def add(role: str, content: str, **fields: Any) -> dict[str, Any]:
        nonlocal clock
        clock += rng.randint(20, 90_000)
        message: dict[str, Any] = {
            "id": f"msg-{len(out) + 1}",
            "role": role,
            "content": content,
            "timestamp": clock,
        }
        message.update(fields)
        out.append(message)
        return message

    add("system", "You are a careful coding agent. " + text(200, 800))
    while len(out) < size:
        add("user", text(40, 400))
        for _ in range(rng.randint(1, 3)):
            if len(out) >= size:
                break
            msg_id = f"msg-{len(out) + 1}"
            calls = []
            for k in range(1, rng.randint(1, 2) + 1):
                tool = rng.choice(_TOOLS)
                calls.append(
                    {"id": f"{msg_id}-call-{k}", "name": tool, "arguments": _arguments(rng, text, tool)}
                )
            add("assistant", text(0, 160), tool_calls=calls)
            for call in calls:
                if len(out) >= size:
                    break
                body = text(60, 900)
                result = {
                    "tool_call_id": call["id"],
                    "tool_name": call["name"],
                    "content": body,
                    "is_error": rng.random() < 0.08,
                }
                add("tool_result", body, tool_result=result)
        if len(out) < size:
            add("assistant", text(100, 700))
    del out[size:]
    users = [message for message in out if message["role"] == "user"]
    for message in users[:: max(1, len(users) // _PINS)][:_PINS]:
        message["pinned"] = True  # a few facts the host pinned, spread over the conversation
    if pending_tail:
        for message in out[-2:]:
            if message["role"] == "tool_result":
                message["tool_result"]["pending"] = True
    for message in out:
        # keys in orion-core's order: token_count after tool_result, pinned last
        pinned = message.pop("pinned", None)
        message["token_count"] = _count(message)
        if pinned:
            message["pinned"] = True
    return out


def make_short_conversation(size: int, *, seed: int = 0) -> list[dict[str, Any]]:
    """``size`` short messages (about 280 bytes each as compact JSON), every one with a ``token_count``.

    The chat of a small local model: user questions, short answers, now and then one tool call
    with a small arguments object and its result. Where per-message costs show most.
    """
    rng = random.Random(seed)
    text = _Text(rng)
    out: list[dict[str, Any]] = []
    clock = _BASE_TIME

    def add(role: str, content: str, **fields: Any) -> None:
        nonlocal clock
        clock += rng.randint(20, 9_000)
        message = {"id": f"msg-{len(out) + 1}", "role": role, "content": content, "timestamp": clock}
        message.update(fields)
        message["token_count"] = _count(message)
        out.append(message)

    while len(out) < size:
        add("user", text(60, 220))
        if rng.random() < 0.3 and len(out) + 2 < size:
            call_id = f"msg-{len(out) + 1}-call-1"
            call = {
                "id": call_id,
                "name": "read_file",
                "arguments": {"path": f"src/{text(4, 16).split()[0]}.py"},
            }
            add("assistant", text(0, 40), tool_calls=[call])
            body = text(40, 160)
            add(
                "tool_result",
                body,
                tool_result={
                    "tool_call_id": call_id,
                    "tool_name": "read_file",
                    "content": body,
                    "is_error": False,
                },
            )
        add("assistant", text(60, 260))
    del out[size:]
    return out
