"""What a type checker tells a user of the package: mypy --strict over user code (slow: one run).

The expectations are the lines a user should be warned about, written by hand beside them.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

# Each line that must be reported ends with "# expect: CODE"; every other line must pass.
_USER_CODE = textwrap.dedent(
    """\
    from collections.abc import Sequence
    from contextlib import closing

    from orion_messages import (
        ContextConfig,
        Conversation,
        Message,
        PruneStrategy,
        ToolCall,
        WarningEvent,
        find_problems,
        iter_events,
        iter_jsonl,
        plan_prune,
    )
    from orion_messages.events import record_events  # expect: deprecated
    from orion_messages.turns import Turns  # expect: attr-defined
    from orion_messages.turns import split_turnz  # expect: attr-defined

    conversation = Conversation()
    conversation.turns()  # expect: deprecated
    conversation.check()  # expect: deprecated
    Message.tool_result("msg-2", "call-1", "add", "5")  # expect: deprecated
    message = Message.user("msg-1", "hi")
    result = message.tool_result
    messages = iter_jsonl("log.jsonl")
    messages.close()
    with closing(iter_events("events.jsonl")) as events:
        first = next(events)
    latest: list[Message] = conversation[-2:]
    plan = plan_prune(conversation, ContextConfig())
    problems = find_problems(conversation)
    # Found by the typing audit: what runs must type-check, what fails must be flagged.
    problems = find_problems(iter_jsonl("log.jsonl"))  # any iterable, read once
    summarizing = ContextConfig(max_context_tokens=8192, strategy="summarize")  # by its value
    ContextConfig(strategy="sumarize")  # expect: arg-type
    strategy: PruneStrategy = summarizing.strategy  # read back, always the enum


    def reply(message_id: str, calls: Sequence[ToolCall]) -> Message:
        return Message.assistant(message_id, "", calls)


    Message.assistant("msg-3", "", (call for call in [ToolCall(id="c", name="n", arguments={})]))
    Message.assistant("msg-3", "", ToolCall(id="c", name="n", arguments={}))  # expect: arg-type
    message.content = "edited"  # expect: misc
    message.tool_calls[0].arguments = {}  # expect: misc
    WarningEvent(message="x").message = "y"  # expect: misc


    class MyConversation(Conversation):
        pass


    mine: MyConversation = MyConversation.load("chat.json")  # Self, as the named constructors
    Message.model_validate_json(b"{}", strct=True)  # expect: call-arg
    """
)


def _expected(code: str) -> set[tuple[int, str]]:
    found = (re.search(r"# expect: ([\w-]+)$", line) for line in code.splitlines())
    return {(number, match[1]) for number, match in enumerate(found, 1) if match}


def test_mypy_warns_of_deprecated_and_missing_names_and_nothing_else(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(_USER_CODE)
    out, _, _ = mypy_api.run(
        ["--strict", "--enable-error-code", "deprecated", "--cache-dir", str(tmp_path / "cache"), str(user)]
    )
    reported = {
        (int(m[1]), m[2]) for m in re.finditer(r"^.*?user\.py:(\d+): error: .*\[([\w-]+)\]$", out, re.M)
    }
    assert reported == _expected(_USER_CODE), out
