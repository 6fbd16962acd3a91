"""Semantic checks: what is well-formed JSON but not a coherent conversation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ._collector import collector_paused
from ._text import kind_of, quoted
from .errors import ArgumentTypeError, Problem
from .models import Message, Role, require_message_iterable

__all__ = ["find_problems"]

_CALLING_ROLES = frozenset({Role.ASSISTANT, Role.TOOL_CALL})


def find_problems(messages: Iterable[Message]) -> list[Problem]:
    """The semantic problems in a conversation, each with its location.

    Finds duplicate message ids, duplicate tool-call ids, ``tool_calls`` on a role other than
    assistant or tool_call, a tool_result message without a result or a result on another role,
    a result with no earlier call, a second result for one call id (a placeholder beside a
    completed result included: filling it in would answer the call twice), and top-level
    content that differs from the result's content. orion-core itself loads all of these; loading stays
    lenient unless ``strict=True`` is asked for.

    Raises:
        ArgumentTypeError: ``messages`` is not an iterable of messages (text, a mapping, a
            single ``Message``, None or a number included), is a set (which keeps no order),
            or an item is not a ``Message``.
    """
    return [problem for _index, problem in problems_by_message(messages)]


def problems_on_lines(messages: Sequence[Message], lines: Sequence[int]) -> list[Problem]:
    """``find_problems`` of a log's messages, each problem placed on the line of the message it
    is found on (``lines[i]``: message ``i``'s line; blank and torn lines make them differ)."""
    return [
        Problem(problem.location, problem.message, lines[index])
        for index, problem in problems_by_message(messages)
    ]


@collector_paused()  # the objects built hold no cycles to collect
def problems_by_message(messages: Iterable[Message], *, within: str = "") -> list[tuple[int, Problem]]:
    """``find_problems``, each problem with the index of the message it is found on: for a
    reader that places the messages on the lines of a file.

    ``within``: where the messages lie in a larger document (``messages``, an event's), put
    before every location and every earlier place a problem refers to (``first at messages[0]``).

    Raises:
        ArgumentTypeError: as ``find_problems``.
    """
    # The locations and "first at" are positions: a set is refused with the rest.
    require_message_iterable(messages, "find_problems")
    problems: list[tuple[int, Problem]] = []
    message_ids: dict[str, int] = {}
    call_ids: dict[str, str] = {}
    answered: dict[str, dict[bool, int]] = {}  # call id -> pending -> its first such result
    for index, message in enumerate(messages):
        if not isinstance(message, Message):
            raise ArgumentTypeError(f"find_problems: [{index}]: expected a Message, found {kind_of(message)}")
        first = message_ids.setdefault(message.id, index)
        if first != index:
            why = f"duplicate message id {quoted(message.id)} (first at {within}[{first}])"
            problems.append((index, Problem(f"{within}[{index}].id", why)))
        # Most messages carry neither calls nor a result: nothing more is built for them.
        if message.tool_calls:
            found = _call_problems(f"{within}[{index}]", message, call_ids)
            problems.extend((index, problem) for problem in found)
        if message.tool_result is not None or message.role is Role.TOOL_RESULT:
            found = _result_problems(index, message, call_ids, answered, within)
            problems.extend((index, problem) for problem in found)
    return problems


def _call_problems(where: str, message: Message, call_ids: dict[str, str]) -> list[Problem]:
    """Tool calls on a role that cannot carry them, and call ids seen before (recorded in ``call_ids``)."""
    problems: list[Problem] = []
    if message.tool_calls and message.role not in _CALLING_ROLES:
        problems.append(
            Problem(
                f"{where}.tool_calls",
                f"only assistant and tool_call messages carry tool calls, found them on a {message.role} message",
            )
        )
    for number, call in enumerate(message.tool_calls):
        call_where = f"{where}.tool_calls[{number}].id"
        if call.id in call_ids:
            problems.append(
                Problem(
                    call_where, f"duplicate tool-call id {quoted(call.id)} (first at {call_ids[call.id]})"
                )
            )
        else:
            call_ids[call.id] = call_where
    return problems


def _result_problems(
    index: int,
    message: Message,
    call_ids: dict[str, str],
    answered: dict[str, dict[bool, int]],
    within: str,
) -> list[Problem]:
    """A result missing, misplaced, answering no earlier call, answering one twice, or differing
    in text (``within``: as ``problems_by_message``'s)."""
    where = f"{within}[{index}]"
    result = message.tool_result
    if result is None:
        if message.role is Role.TOOL_RESULT:
            return [Problem(f"{where}.tool_result", "a tool_result message must carry a tool result")]
        return []
    problems: list[Problem] = []
    if message.role is not Role.TOOL_RESULT:
        problems.append(
            Problem(
                f"{where}.tool_result",
                f"only tool_result messages carry a tool result, found one on a {message.role} message",
            )
        )
    if result.tool_call_id not in call_ids:
        problems.append(
            Problem(
                f"{where}.tool_result.tool_call_id",
                f"no earlier tool call has the id {quoted(result.tool_call_id)}",
            )
        )
    # The call's first completed result and first placeholder: a second result of either kind
    # answers the call twice (a completed result is the one to name, where there is one).
    firsts = answered.setdefault(result.tool_call_id, {})
    earlier = firsts.get(False, firsts.get(True))
    if earlier is not None:
        state = "a completed" if False in firsts else "a pending"
        problems.append(
            Problem(
                f"{where}.tool_result.tool_call_id",
                f"tool call {quoted(result.tool_call_id)} already has {state} result at {within}[{earlier}]",
            )
        )
    firsts.setdefault(result.pending, index)
    if message.content != result.content:
        problems.append(
            Problem(f"{where}.content", "differs from tool_result.content (orion-core stores the text twice)")
        )
    return problems
