"""The converters' outputs type-check where a typed user sends them: the providers' SDK request types.

``to_openai(...).value`` goes to ``client.chat.completions.create(messages=...)`` and
``**to_anthropic(...).value`` to ``client.messages.create(...)`` and back to ``from_anthropic``.
Run-time tests cannot see this (the values are plain dicts), so mypy --strict, with the project's
configuration, checks a small user module against the SDKs installed (the ``test-convert`` extra,
part of ``dev``). Lines marked ``# wrong`` must be reported, each with the error code it names, so
the check can fail; every other line must pass.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api

pytest.importorskip("openai")
pytest.importorskip("anthropic")

ROOT = Path(__file__).resolve().parent.parent

USER_MODULE = """\
from collections.abc import Iterable

import anthropic
import openai
from anthropic.types import MessageParam, TextBlockParam
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolMessageParam

from orion_messages import Message, from_anthropic, from_openai, to_anthropic, to_openai


def send_openai(messages: Iterable[ChatCompletionMessageParam]) -> None: ...


def send_anthropic(messages: Iterable[MessageParam], system: str | Iterable[TextBlockParam]) -> None: ...


def use(history: list[Message], client: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    messages = to_openai(history).value
    send_openai(messages)
    client.chat.completions.create(model="qwen3", messages=messages)
    extended: list[ChatCompletionMessageParam] = [*messages, {"role": "user", "content": "And now?"}]
    messages.append({"role": "user", "content": "And now?"})
    for message in messages:
        if message["role"] == "tool":
            message["tool_call_id"].upper()
    from_openai(messages)

    request = to_anthropic(history).value
    send_anthropic(request["messages"], request.get("system", ""))
    turns: list[MessageParam] = request["messages"]
    reveal_type(claude.messages.create(model="m", max_tokens=1024, **request))
    from_anthropic(**request)
    print(extended, turns)

    tools_only: Iterable[ChatCompletionToolMessageParam] = messages  # wrong: assignment
    send_openai([{"role": "user"}])  # wrong: typeddict-item
    send_anthropic(request["messages"], request["messages"])  # wrong: arg-type
    messages.append({"role": "robot", "content": "beep"})  # wrong: arg-type
"""


@pytest.fixture(scope="module")
def mypy_report(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """mypy --strict's lines for the user module (one run for the tests below: it takes seconds)."""
    folder = tmp_path_factory.mktemp("typing")
    module = folder / "user_module.py"
    module.write_text(USER_MODULE, encoding="utf-8")
    stdout, stderr, _status = api.run(
        [
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--strict",
            "--cache-dir",
            str(folder / "mypy_cache"),
            "--show-error-codes",
            "--no-pretty",
            str(module),
        ]
    )
    assert not stderr, stderr
    return [line.removeprefix(f"{module}:") for line in stdout.splitlines() if line.startswith(f"{module}:")]


def _marked() -> dict[int, str]:
    """The lines marked ``# wrong: CODE``, by line number."""
    marked: dict[int, str] = {}
    for number, line in enumerate(USER_MODULE.splitlines(), start=1):
        found = re.search(r"# wrong: ([a-z-]+)", line)
        if found:
            marked[number] = found.group(1)
    return marked


def _errors(report: list[str]) -> dict[int, list[str]]:
    errors: dict[int, list[str]] = {}
    for line in report:
        found = re.match(r"(\d+): error: .*\[([a-z-]+)\]$", line)
        if found:
            errors.setdefault(int(found.group(1)), []).append(found.group(2))
    return errors


def test_the_outputs_are_accepted_where_the_sdks_take_messages(mypy_report: list[str]) -> None:
    unexpected = {number: codes for number, codes in _errors(mypy_report).items() if number not in _marked()}
    assert not unexpected, "\n".join(mypy_report)


def test_a_wrong_use_is_reported(mypy_report: list[str]) -> None:
    # The checks above can fail: each wrong line is reported, with its own error.
    errors = _errors(mypy_report)
    marked = _marked()
    assert len(marked) == 4
    report = "\n".join(mypy_report)
    for number, code in marked.items():
        assert code in errors.get(number, []), f"line {number} not reported as {code}:\n{report}"


def test_the_splatted_request_keeps_the_sdks_return_type(mypy_report: list[str]) -> None:
    # **request picks create()'s non-streaming overload: its result is the SDK's Message, not Any.
    notes = [line for line in mypy_report if "Revealed type is" in line]
    assert len(notes) == 1, "\n".join(mypy_report)
    assert re.search(r'Revealed type is "anthropic\.types\.[a-z_.]*Message"$', notes[0]), notes[0]
