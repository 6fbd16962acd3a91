"""Planning with a chat template: what orion-core's ``plan_prune`` counts, worked out by hand.

Every number below is counted by hand from chat-templates.md (sections 3 and 6) with the word
counter orion-core's own tests plan with (``split_whitespace().count()``, our ``count_words``), or
with the chars/4 estimate where the issue text gives the figure. Nothing is taken from our output.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    ArgumentTypeError,
    ContextConfig,
    ContextOverflowError,
    Conversation,
    Message,
    PruneStrategy,
    TokenCounter,
    ToolCall,
    ToolSchema,
    detect_template,
    dumps,
    estimate_tokens,
    get_template,
    plan_prune,
    prune,
)
from orion_messages.templates import ChatML
from orion_messages.text_counters import count_words, estimate_text_tokens

T0 = 1781512345678

# name: (user "hi there", assistant "ok" (its tool call is not rendered), tool result "42",
#        system block with S = "" and no tools, assistant prefix), in words
WORDS = {
    # "<|im_start|>user\nhi there<|im_end|>\n"; "<|im_start|>assistant\nok<|im_end|>\n";
    # "<|im_start|>tool\n42<|im_end|>\n"; "<|im_start|>system\n<|im_end|>\n"; "<|im_start|>assistant\n"
    "chatml": (3, 2, 2, 2, 1),
    # "<|start_header_id|>user<|end_header_id|>\n\nhi there<|eot_id|>"; H("ipython", "42") is 2
    "llama3": (3, 2, 2, 2, 1),
    # "[INST] hi there [/INST]"; " ok</s>"; "[INST] [Tool result]\n42 [/INST]"; "<s>"; " "
    "mistral": (4, 1, 5, 1, 0),
    # "<s>[INST] hi there [/INST]"; " ok </s>"; "<s>[INST] [Tool result]\n42 [/INST]"; "<s>"; " "
    "llama2": (4, 2, 5, 1, 0),
    # "<start_of_turn>user\nhi there<end_of_turn>\n"; "<start_of_turn>model\nok<end_of_turn>\n";
    # "<start_of_turn>user\n[Tool result]\n42<end_of_turn>\n"; "<bos>"; "<start_of_turn>model\n"
    "gemma": (3, 2, 4, 1, 1),
    # "### Instruction:\nhi there\n\n"; "### Response:\nok\n\n"; "### Instruction:\n[Tool result]\n42\n\n";
    # the Alpaca preamble + "\n\n" (16 words); "### Response:\n"
    "alpaca": (4, 3, 5, 16, 2),
    # "USER: hi there "; "ASSISTANT: ok</s>"; "USER: [Tool result]\n42 "; the Vicuna preamble + " " (23);
    # "ASSISTANT: "
    "vicuna": (3, 2, 4, 23, 1),
    # "<|user|>\nhi there<|end|>\n"; "<|assistant|>\nok<|end|>\n"; "<|user|>\n[Tool result]\n42<|end|>\n";
    # no system block at all; "<|assistant|>\n"
    "phi3": (3, 2, 4, 0, 1),
    # "User: hi there\n\n"; "Assistant: ok" + EOS; "User: [Tool result]\n42\n\n"; BOS; "Assistant:"
    "deepseek": (3, 2, 4, 1, 1),
    # "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>hi there<|END_OF_TURN_TOKEN|>"; "...CHATBOT_TOKEN|>ok<|END...";
    # "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>[Tool result]\n42<|END_OF_TURN_TOKEN|>"; "<BOS_TOKEN>"; the prefix
    "command-r": (2, 1, 3, 1, 1),
}


def agent_turns() -> list[Message]:
    """A system message (before the first user message), a tool round, and a new user message."""
    call = ToolCall(id="msg-3-call-1", name="add", arguments={"a": 2, "b": 40})
    return [
        Message.system("msg-1", "You are terse.", timestamp=T0),
        Message.user("msg-2", "hi there", timestamp=T0),
        Message.assistant("msg-3", "ok", [call], timestamp=T0),
        Message.tool_result_message("msg-4", "msg-3-call-1", "add", "42", timestamp=T0),
        Message.user("msg-5", "hi there", timestamp=T0),
    ]


def window(available: int) -> ContextConfig:
    return ContextConfig(max_context_tokens=available + 100, max_response_tokens=100)


@pytest.mark.parametrize("name", list(WORDS))
def test_each_template_counts_what_orion_core_counts(name: str) -> None:
    user, assistant, result, system, prefix = WORDS[name]
    fixed = system + prefix
    first = user + assistant + result  # turn [1:4]; the system message [0] is before any turn
    messages = agent_turns()
    plan = plan_prune(messages, window(1000), template=name, counter=count_words)
    assert (plan.kept, plan.dropped) == ([range(1, 4), range(4, 5)], [])
    assert (plan.fixed_tokens, plan.kept_tokens, plan.budget) == (fixed, first + user, 1000 - fixed)
    assert (plan.preamble, plan.preamble_tokens, plan.preamble_kept) == (range(0, 1), 0, False)
    assert [m.id for m in plan.kept_messages(messages)] == ["msg-2", "msg-3", "msg-4", "msg-5"]
    assert plan.kept_count == 4

    # one token short of everything: the older turn is dropped
    plan = plan_prune(messages, window(fixed + first + user - 1), template=name, counter=count_words)
    assert (plan.kept, plan.dropped, plan.dropped_tokens) == ([range(4, 5)], [range(1, 4)], first)


@pytest.mark.parametrize("name", list(WORDS))
def test_each_templates_refusals_carry_orion_cores_text(name: str) -> None:
    user, assistant, result, system, prefix = WORDS[name]
    fixed = system + prefix
    messages = agent_turns()
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(messages, window(fixed), template=name, counter=count_words)
    assert str(caught.value) == (
        f"System prompt and tools ({fixed} tokens) exceed available context budget ({fixed} tokens)"
    )
    available = fixed + user - 1
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(messages, window(available), template=name, counter=count_words)
    assert str(caught.value) == (
        f"Latest message ({user} tokens) plus system prompt ({fixed} tokens) exceeds context budget "
        f"({available} tokens). Clear the conversation or increase context size."
    )
    assert caught.value.turn == range(4, 5)
    pinned = [*messages[:4], messages[4].pin()]
    pinned[1] = pinned[1].pin()
    available = fixed + user + 1  # the latest (pinned) fits; the pinned older turn does not
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(pinned, window(available), template=name, counter=count_words)
    total = user + assistant + result + user  # every pinned turn, the pinned latest one included
    assert str(caught.value) == (
        f"Pinned messages ({total} tokens) exceed the available context budget ({available} tokens). "
        "Unpin some messages or increase context size."
    )
    assert (caught.value.turn, caught.value.budget) == (range(1, 4), 1)


def test_the_default_counter_is_chars_over_four_of_the_rendered_text() -> None:
    # issue 11: a ChatML user message "hi" costs 7 (30 characters // 4), under Llama 3 13 (54 // 4)
    messages = [Message.user("msg-1", "hi", timestamp=T0)]
    # ChatML: system "<|im_start|>system\n<|im_end|>\n" 29 // 4 = 7, prefix "<|im_start|>assistant\n" 22 // 4 = 5
    plan = plan_prune(messages, window(100), template="chatml")
    assert (plan.kept_tokens, plan.fixed_tokens) == (7, 12)
    assert plan_prune(messages, window(100), template=get_template("llama3")).kept_tokens == 13
    assert estimate_text_tokens("") == 1  # what an empty fragment (a system message) costs


def test_token_count_is_ignored_with_a_template() -> None:
    # orion-core never reads token_count: the rendered text is counted
    messages = [Message.user("msg-1", "hi", timestamp=T0).with_token_count(999)]
    assert plan_prune(messages, window(100), template="chatml").kept_tokens == 7


def test_system_prompt_and_tools_are_the_fixed_overhead() -> None:
    # ChatML, S = "Be brief.": "<|im_start|>system\nBe brief.<|im_end|>\n" -> 3 words; prefix 1
    messages = [Message.user("msg-1", "hi", timestamp=T0)]
    plan = plan_prune(
        messages, window(100), template="chatml", system_prompt="Be brief.", counter=count_words
    )
    assert plan.fixed_tokens == 4
    # reserved_tokens, if any, is added on top (0 by default, as orion-core has no such thing)
    config = ContextConfig(max_context_tokens=200, max_response_tokens=100, reserved_tokens=6)
    assert plan_prune(messages, config, template="chatml", counter=count_words).fixed_tokens == 3 + 6


def test_counters_of_the_wrong_kind_fail_early_and_say_what_to_use() -> None:
    # mypy sees each mistake below too (the two kinds are distinct types); these are for untyped callers
    messages = agent_turns()
    message_counter: Any = lambda message: len(message.content)  # noqa: E731
    text_counter: Any = lambda text: len(text.split())  # noqa: E731
    with pytest.raises(TypeError, match="count="):
        plan_prune(messages, window(100), template="chatml", counter=TokenCounter(estimate_tokens))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not a Message"):
        plan_prune(messages, window(100), template="chatml", counter=message_counter)
    with pytest.raises(TypeError, match="counts text"):
        plan_prune(messages, window(100), count=estimate_text_tokens)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Message -> int"):
        plan_prune(messages, window(100), count=text_counter)
    with pytest.raises(TypeError, match="pass counter=, not count="):
        plan_prune(messages, window(100), template="chatml", count=estimate_tokens)
    with pytest.raises(TypeError, match="needs a template"):
        plan_prune(messages, window(100), counter=count_words)
    with pytest.raises(ValueError, match="reserved_tokens"):
        plan_prune(messages, window(100), system_prompt="Be brief.")


class CountingChatML(ChatML):
    """ChatML that records every message it renders."""

    def __init__(self) -> None:
        self.rendered: list[str] = []

    def format_message(self, message: Message) -> str:
        self.rendered.append(message.id)
        return super().format_message(message)


def test_a_replan_after_an_append_renders_only_the_new_message() -> None:
    template = CountingChatML()
    texts: list[str] = []

    def counter(text: str) -> int:
        texts.append(text)
        return count_words(text)

    conversation = Conversation(agent_turns())
    first = conversation.plan_prune(window(100), template=template, counter=counter)
    assert template.rendered == ["msg-1", "msg-2", "msg-3", "msg-4", "msg-5"]
    template.rendered.clear()
    texts.clear()
    conversation.append(Message.assistant("msg-6", "fine", timestamp=T0))
    second = conversation.plan_prune(window(100), template=template, counter=counter)
    assert template.rendered == ["msg-6"]
    # the system block and the prefix (they depend on the arguments), then the new message; the
    # counter's check (callable_counter) also calls it once on a sample string of its own
    assert [text for text in texts if text.startswith("<|im_start|>")] == [
        "<|im_start|>system\n<|im_end|>\n",
        "<|im_start|>assistant\n",
        "<|im_start|>assistant\nfine<|im_end|>\n",
    ]
    assert second.kept_tokens == first.kept_tokens + 2
    # resolving or pinning renders that message again, and only it
    template.rendered.clear()
    conversation.set_pinned("msg-2", True)
    conversation.plan_prune(window(100), template=template, counter=counter)
    assert template.rendered == ["msg-2"]


def test_prune_with_a_template_sends_what_orion_core_sends() -> None:
    messages = agent_turns()
    user, _, _, system, prefix = WORDS["chatml"]
    result_ = prune(messages, window(system + prefix + user), template="chatml", counter=count_words)
    assert [m.id for m in result_.messages] == ["msg-5"]
    assert [m.id for m in result_.dropped] == ["msg-2", "msg-3", "msg-4"]


def test_the_cli_plans_with_a_template_system_prompt_and_counter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from orion_messages.cli import main

    conversation = tmp_path / "chat.json"
    worked = [
        Message.user("msg-1", "What is 2+3?", timestamp=1),
        Message.assistant("msg-2", "It is 5.", timestamp=2),
        Message.user("msg-3", "Thanks!", timestamp=3),
    ]
    conversation.write_bytes(dumps(worked))
    (tmp_path / "system.txt").write_text("Be brief.", encoding="utf-8")
    (tmp_path / "tools.json").write_text("[]", encoding="utf-8")
    common = ["prune", str(conversation), "--max-response-tokens", "0", "--template", "chatml"]
    common += ["--system-prompt", str(tmp_path / "system.txt"), "--tools", str(tmp_path / "tools.json")]
    # ChatML worked example (docs/pruning.md): fixed 4, turns 8 and 2; 13 available drops the first
    assert main([*common, "--max-context-tokens", "13", "--counter", "words", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    spans = [{"start": 2, "stop": 3}], [{"start": 0, "stop": 2}]  # ranges as the CLI writes them
    assert (report["kept"], report["dropped"], report["fixed_tokens"]) == (*spans, 4)
    # 5 available: the latest turn (2) does not fit what the fixed 4 leaves
    assert main([*common, "--max-context-tokens", "5", "--counter", "words"]) == 1
    assert (
        "Latest message (2 tokens) plus system prompt (4 tokens) exceeds context budget (5 tokens). "
        "Clear the conversation or increase context size." in capsys.readouterr().err
    )
    assert main(["prune", str(conversation), "--max-context-tokens", "9", "--max-response-tokens", "0",
                 "--counter", "words"]) == 2  # fmt: skip
    assert capsys.readouterr().err.splitlines()[-1] == "orion-messages: error: --counter needs --template"
    for prompt in ("--system-prompt", "--system-prompt-file"):  # the option as given
        assert (
            main(["prune", str(conversation), prompt, str(tmp_path / "system.txt"), "--tools", "t.json"]) == 2
        )
        said = f"orion-messages: error: {prompt} and --tools need --template"
        assert capsys.readouterr().err.splitlines()[-1] == said
    assert main([*common, "--max-context-tokens", "9", "--counter", "bogus"]) == 2
    assert "unknown --counter" in capsys.readouterr().err


def test_a_summary_with_a_template_keeps_the_preamble_in_the_conversation() -> None:
    # chatml, words: fixed 2 + 1 = 3; turn [1:4] 3 + 2 + 2 = 7; latest [4:5] 3; available 12
    # latest 3 -> 6 left; [1:4] 7 > 6: dropped and summarized; the summary
    # "<|im_start|>user\n[Summary of earlier conversation]\nsum<|im_end|>\n" is 6 words: it fits the 6
    conversation = Conversation(agent_turns())
    config = ContextConfig(max_context_tokens=12, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = conversation.prune(
        config, template="chatml", counter=count_words, summarize=lambda folded, prior: "sum"
    )
    assert result.summary is not None
    # sent: the summary and the latest turn, without the system message (as orion-core)
    assert [m.id for m in result.messages] == [result.summary.id, "msg-5"]
    assert result.tokens == 6 + 3
    # the conversation keeps its system message in front, as orion-core's history does
    assert [m.id for m in conversation] == ["msg-1", result.summary.id, "msg-5"]


def test_an_earlier_summary_in_the_preamble_is_replaced_in_place() -> None:
    # orion-core recognises a pinned message of any role starting with the marker, so one can sit
    # before the first user message. ChatML, words, S = "Be brief.": fixed 3 + 1 = 4
    # [0] pinned assistant summary, [1] system (preamble: neither counted nor sent)
    # turn [2:4] "<|im_start|>user\na b c d e f<|im_end|>\n" 7 + assistant 7 = 14; latest [4:5] 2
    # available 14 -> budget 10: latest 2 -> 8; [2:4] 14 > 8: dropped
    # orion-core folds remove = [0, 2, 3] and inserts the summary at 0: [summary, system, latest];
    # the summary (a user message) now starts a turn that takes the system message along, so all
    # three are sent: summary 6 words ("<|im_start|>user", "[Summary", "of", "earlier",
    # "conversation]", "gist<|im_end|>") + system "" 0 + latest 2 = 8 <= 10
    messages = [
        Message.assistant("msg-1", "[Summary of earlier conversation] old", timestamp=1).pin(),
        Message.system("msg-2", "sys", timestamp=2),
        Message.user("msg-3", "a b c d e f", timestamp=3),
        Message.assistant("msg-4", "g h i j k l", timestamp=4),
        Message.user("msg-5", "now", timestamp=5),
    ]
    config = ContextConfig(max_context_tokens=14, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    seen: list[tuple[list[str], str | None]] = []

    def summarize(folded: list[Message], prior: str | None) -> str:
        seen.append(([m.id for m in folded], prior))
        return "gist"

    options: dict[str, Any] = {"template": "chatml", "system_prompt": "Be brief.", "counter": count_words}
    assert plan_prune(messages, config, **options).dropped == [range(2, 4)]
    result = prune(messages, config, summarize=summarize, **options)
    assert seen == [(["msg-1", "msg-3", "msg-4"], "old")]
    assert result.summary is not None
    assert [m.id for m in result.messages] == ["msg-6", "msg-2", "msg-5"]
    assert result.tokens == 8
    assert plan_prune(result.messages, config, **options).kept == [range(0, 2), range(2, 3)]


def test_a_conversation_folding_an_earlier_summary_from_its_preamble_holds_orion_cores_history() -> None:
    # As the test above, with a system message first: orion-core's history after the fold is the
    # old one with [1], [3], [4] removed and the summary at 1, the lowest removed index:
    # [msg-0, summary, msg-2, msg-5]. Counts: msg-0 is preamble (not sent, not counted), so the
    # numbers are those above.
    messages = [
        Message.system("msg-0", "first", timestamp=1),
        Message.assistant("msg-1", "[Summary of earlier conversation] old", timestamp=1).pin(),
        Message.system("msg-2", "sys", timestamp=2),
        Message.user("msg-3", "a b c d e f", timestamp=3),
        Message.assistant("msg-4", "g h i j k l", timestamp=4),
        Message.user("msg-5", "now", timestamp=5),
    ]
    conversation = Conversation(messages)
    config = ContextConfig(max_context_tokens=14, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = conversation.prune(
        config,
        template="chatml",
        system_prompt="Be brief.",
        counter=count_words,
        summarize=lambda f, p: "gist",
    )
    assert result.summary is not None
    assert result.summary.id == "msg-6"
    assert [m.id for m in result.messages] == ["msg-6", "msg-2", "msg-5"]
    assert [m.id for m in conversation] == ["msg-0", "msg-6", "msg-2", "msg-5"]


_ONE_TURN = [Message.user("msg-1", "hi", timestamp=0)]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        ({"template": "alpaca", "system_prompt": None}, "system_prompt must be a str, got a NoneType"),
        ({"template": "chatml", "system_prompt": b"be brief"}, "system_prompt must be a str, got a bytes"),
        ({"system_prompt": None}, "system_prompt must be a str, got a NoneType"),
        ({"template": 3}, "template must be a ChatTemplate or a template's name, got an int"),
        (
            {"template": "chatml", "tools": ToolSchema(name="add", description="Add.", parameters={})},
            "tools must be a list of ToolSchema, got a ToolSchema",
        ),
        ({"template": "chatml", "tools": "add"}, "tools must be a list of ToolSchema, got a str"),
    ],
)
def test_arguments_of_the_wrong_type_are_named(options: dict[str, Any], said: str) -> None:
    with pytest.raises(ArgumentTypeError, match=f"^{re.escape(said)}$"):
        plan_prune(_ONE_TURN, **options)


@pytest.mark.parametrize("text", [b"<|im_start|>", 0, ["<|im_start|>"]])
def test_detect_template_takes_text_or_none(text: object) -> None:
    with pytest.raises(ArgumentTypeError, match=r"^detect_template takes the template's text"):
        detect_template(text)  # type: ignore[arg-type]


def test_a_templated_plan_counts_no_preamble_among_the_dropped_tokens() -> None:
    # chat-templates.md section 6 step 3: with a template the messages before the first user
    # message are neither counted, kept nor dropped. By hand, ChatML with the word counter: the
    # system block "<|im_start|>system\n<|im_end|>\n" is 2 words and the prefix 1, so 3 fixed,
    # 5 of 8 left; the preamble (an assistant message, 3 words rendered) is not counted; turn 2
    # ("z", 2 words) is kept, turn 1 ("x" and "y", 2 + 2) does not fit in the 3 left.
    messages = [
        Message.assistant("msg-1", "hello there", timestamp=1),
        Message.user("msg-2", "x", timestamp=2),
        Message.assistant("msg-3", "y", timestamp=3),
        Message.user("msg-4", "z", timestamp=4),
    ]
    config = ContextConfig(max_context_tokens=8, max_response_tokens=0)
    plan = plan_prune(messages, config, template="chatml", counter=count_words)
    assert (plan.preamble, plan.kept, plan.dropped) == (range(0, 1), [range(3, 4)], [range(1, 3)])
    assert (plan.fixed_tokens, plan.budget, plan.kept_tokens, plan.dropped_tokens) == (3, 5, 2, 4)
