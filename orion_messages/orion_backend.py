"""What orion-core 0.7's OpenAI-compatible ``ChatBackend`` sends: ``to_orion_backend``.

orion-core's chat backend hands an OpenAI-compatible server plain ``{"role", "content"}``
messages: the system prompt first (left out when empty), user as ``user``, assistant and
tool_call as ``assistant`` with their text only, and a tool result as a **user** message
``"[Tool result]\\n" + content`` (the API's ``tool`` role needs a ``tool_call_id`` that this path
does not send). No ``tool`` role, no ``tool_calls``. A host reproduces exactly what orion-core
sends; everything else (ids, timestamps, the calls themselves, result metadata) is reported.

The 0.7 source shows no system-role message inside the history; such a message is sent in place
as a ``system`` message here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._collector import collector_paused
from ._conversion_input import Sent, refuse_unencodable, refuse_unencodable_text
from ._text import excerpt, quoted
from .conversions import ConversionResult, _metadata_losses, _Report
from .errors import ArgumentTypeError
from .models import Message, Role, message_list

__all__ = ["TOOL_RESULT_PREFIX", "to_orion_backend"]

TOOL_RESULT_PREFIX = "[Tool result]\n"
"""What orion-core puts before a tool result's text when it sends it as a user message."""

_TARGET = "orion-core's chat backend"
_SENT = Sent({"role": True, "content": True}, {"role": True, "content": True})
"""All it sends of any message: its role and its text."""
_ROLES = {
    Role.SYSTEM: "system",
    Role.USER: "user",
    Role.ASSISTANT: "assistant",
    Role.TOOL_CALL: "assistant",
    Role.TOOL_RESULT: "user",
}


@collector_paused()  # the objects built hold no cycles to collect
def to_orion_backend(
    messages: Iterable[Message],
    *,
    system_prompt: str = "",
    strict: bool = False,
    accept: Iterable[str] = (),
) -> ConversionResult[list[dict[str, str]]]:
    """The ``messages`` orion-core 0.7's OpenAI-compatible chat backend sends for a conversation.

    ``system_prompt`` is the agent's configured prompt, sent first unless empty. Tool results
    send the message's top-level ``content`` (a pending placeholder's usually empty text
    included), as orion-core does. ``strict`` and ``accept`` work as in ``to_openai``.

    Raises:
        ConversionError: a refused loss in strict mode, or a string sent that holds a lone
            surrogate, which UTF-8 cannot encode, at its place (``[0].content``, ``system_prompt``).
        ArgumentTypeError: ``messages`` or an item of it (as ``to_openai``), ``system_prompt``
            is not a str, ``strict`` not a bool, or ``accept`` a string or holding a non-string
            (as ``to_openai``).
    """
    report = _Report(strict=strict, accept=accept)
    if not isinstance(system_prompt, str):
        raise ArgumentTypeError(
            f"system_prompt must be a str, got {type(system_prompt).__name__} {excerpt(repr(system_prompt))}"
        )
    refuse_unencodable_text(system_prompt, "system_prompt")
    out: list[dict[str, str]] = [{"role": "system", "content": system_prompt}] if system_prompt else []
    given = message_list(messages, "to_orion_backend")
    for index, message in enumerate(given):
        _metadata_losses(report, index, message, kept=("role",), why=_TARGET)
        _structure_losses(report, index, message)
        content = message.content
        if message.role is Role.TOOL_RESULT:
            content = TOOL_RESULT_PREFIX + content
        out.append({"role": _ROLES[message.role], "content": content})
    refuse_unencodable(out, given, range(len(given)), _SENT)
    return report.finish(out)


def _structure_losses(report: _Report, index: int, message: Message) -> None:
    """Report the calls and result fields that orion-core's chat backend does not send."""
    if message.role is Role.TOOL_CALL:
        report.lose(index, "role", "role tool_call is sent as assistant")
    if message.role in (Role.ASSISTANT, Role.TOOL_CALL):
        for number, call in enumerate(message.tool_calls):
            report.lose(
                index,
                f"tool_calls[{number}]",
                f"tool call {quoted(call.id)} is not sent (assistant text only)",
            )
    if message.role is Role.TOOL_RESULT:
        report.lose(index, "role", "a tool result is sent as a user message")
    result = message.tool_result
    if result is None or message.role is not Role.TOOL_RESULT:
        return
    fields: dict[str, Any] = {"tool_call_id": result.tool_call_id, "tool_name": result.tool_name}
    for field, value in fields.items():
        report.lose(index, f"tool_result.{field}", f"{quoted(value)} is not sent")
    if result.is_error:
        report.lose(index, "tool_result.is_error", "not sent: an error looks like any result")
    if result.pending:
        report.lose(index, "tool_result.pending", "a pending placeholder is sent as a result with its text")
    if result.content != message.content:
        report.lose(
            index, "tool_result.content", "differs from content; orion-core sends the top-level content"
        )
