"""Hypothesis strategies for valid messages and conversations, shared by the test suite.

``messages()`` and ``conversations()`` cover everything the wire format accepts (any role with
any optional field, unknown keys, every JSON value as arguments, the integer ranges' ends);
``agent_conversations()`` builds what orion-core's agent itself produces (``msg-N`` ids,
``{id}-call-{k}`` calls answered in order, no semantic problems), for properties that need a
coherent history such as pruning.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from orion_messages import Message, Role, ToolCall, ToolResult

I64_MIN = -(2**63)
I64_MAX = 2**63 - 1
U32_MAX = 2**32 - 1

# Text as the wire carries it: any Unicode scalar value (hypothesis leaves out surrogates),
# with control characters, quotes, backslashes and look-alikes of numbers made likely.
_SPECIAL = '\x00\x1f\x7f"\\/\n\t\u2028é😀𝄞'
texts = st.one_of(
    st.text(max_size=10),
    st.text(st.sampled_from(_SPECIAL), max_size=6),
    st.sampled_from(["", "NaN", "1e+20", "-Infinity", "msg-1"]),
)
"""Any string, weighted towards what needs escaping."""

timestamps = st.one_of(st.sampled_from([I64_MIN, I64_MAX, 0, -1]), st.integers(I64_MIN, I64_MAX))
"""Signed 64-bit milliseconds, ends included."""

token_counts = st.one_of(st.none(), st.sampled_from([0, U32_MAX]), st.integers(0, U32_MAX))
"""An unsigned 32-bit count, or unset."""

_BIG_INTEGERS = st.one_of(
    st.integers(-(2**53), 2**53),
    st.sampled_from([I64_MIN, I64_MAX, 2**64 - 1, 2**64, -(2**63) - 1, 10**30, -(10**40)]),
    st.integers(-(2**200), 2**200),
)
_FLOATS = st.floats(allow_nan=False, allow_infinity=False)


def json_values(*, floats: bool = True, max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any JSON value as the standard library parses it: objects with string keys, big integers."""
    scalars: list[st.SearchStrategy[Any]] = [st.none(), st.booleans(), _BIG_INTEGERS, texts]
    if floats:
        scalars.append(_FLOATS)
    return st.recursive(
        st.one_of(scalars),
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def _extras(known: tuple[str, ...], *, floats: bool) -> st.SearchStrategy[dict[str, Any]]:
    keys = texts.map(lambda key: "x_" + key).filter(lambda key: key not in known)
    return st.one_of(st.just({}), st.dictionaries(keys, json_values(floats=floats, max_leaves=3), max_size=2))


def tool_calls(*, floats: bool = True) -> st.SearchStrategy[ToolCall]:
    """A tool call with any id, name and JSON arguments, sometimes with unknown keys."""
    return st.builds(
        lambda id, name, arguments, extra: ToolCall(id=id, name=name, arguments=arguments, **extra),
        texts,
        texts,
        json_values(floats=floats),
        _extras(("id", "name", "arguments"), floats=floats),
    )


def tool_results(*, floats: bool = True) -> st.SearchStrategy[ToolResult]:
    """A tool result, pending or not, sometimes with unknown keys."""
    return st.builds(
        lambda call_id, name, content, is_error, pending, extra: ToolResult(
            tool_call_id=call_id, tool_name=name, content=content, is_error=is_error, pending=pending, **extra
        ),
        texts,
        texts,
        texts,
        st.booleans(),
        st.booleans(),
        _extras(("tool_call_id", "tool_name", "content", "is_error", "pending"), floats=floats),
    )


def messages(*, floats: bool = True) -> st.SearchStrategy[Message]:
    """Any message the wire format accepts: every role with any combination of optional fields."""
    return st.builds(
        lambda id, role, content, timestamp, calls, result, count, pinned, extra: Message(
            id=id,
            role=role,
            content=content,
            timestamp=timestamp,
            tool_calls=calls,
            tool_result=result,
            token_count=count,
            pinned=pinned,
            **extra,
        ),
        texts,
        st.sampled_from(list(Role)),
        texts,
        timestamps,
        st.one_of(st.just([]), st.lists(tool_calls(floats=floats), max_size=3)),
        st.one_of(st.none(), tool_results(floats=floats)),
        token_counts,
        st.booleans(),
        _extras(
            ("id", "role", "content", "timestamp", "tool_calls", "tool_result", "token_count", "pinned"),
            floats=floats,
        ),
    )


def conversations(*, floats: bool = True, max_size: int = 5) -> st.SearchStrategy[list[Message]]:
    """A list of any valid messages (not necessarily a coherent history)."""
    return st.lists(messages(floats=floats), max_size=max_size)


@st.composite
def agent_conversations(draw: st.DrawFn, *, max_turns: int = 4) -> list[Message]:
    """A history as orion-core's agent writes it: no semantic problems, ``msg-N`` ids in order.

    An optional system message, then turns: a user message, and assistant replies that may call
    tools, each call answered by a tool-result message (some pending, some errors); messages
    may be pinned and carry token counts; timestamps increase.
    """
    history: list[Message] = []
    clock = draw(st.integers(0, 2**41))

    def stamp() -> int:
        nonlocal clock
        clock += draw(st.integers(0, 5000))
        return clock

    def finish(message: Message) -> Message:
        if draw(st.booleans()):
            message = message.with_token_count(draw(st.integers(0, 500)))
        if draw(st.integers(0, 4)) == 0:
            message = message.pin()
        history.append(message)
        return message

    def next_id() -> str:
        return f"msg-{len(history) + 1}"

    if draw(st.booleans()):
        finish(Message.system(next_id(), draw(texts), timestamp=stamp()))
    for _ in range(draw(st.integers(0, max_turns))):
        finish(Message.user(next_id(), draw(texts), timestamp=stamp()))
        for _ in range(draw(st.integers(0, 2))):
            reply_id = next_id()
            count = draw(st.integers(0, 3))
            calls = [
                ToolCall(
                    id=f"{reply_id}-call-{k}",
                    name=draw(st.sampled_from(["read_file", "list_dir", "search"])),
                    arguments=draw(json_values(max_leaves=3)),
                )
                for k in range(1, count + 1)
            ]
            role = draw(st.sampled_from([Role.ASSISTANT, Role.ASSISTANT, Role.TOOL_CALL]))
            finish(Message(id=reply_id, role=role, content=draw(texts), timestamp=stamp(), tool_calls=calls))
            for call in calls:
                if draw(st.integers(0, 3)) == 0:
                    finish(Message.pending_result(next_id(), call.id, call.name, timestamp=stamp()))
                else:
                    finish(
                        Message.tool_result_message(
                            next_id(), call.id, call.name, draw(texts), draw(st.booleans()), timestamp=stamp()
                        )
                    )
    return history
