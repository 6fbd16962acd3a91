"""Chat templates: orion-core's strings, written out by hand from the fact sheet
(shared/reference/chat-templates.md), and properties the sheet states."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from orion_messages import (
    TEMPLATES,
    ChatTemplate,
    Message,
    OrionMessagesError,
    ToolCall,
    ToolSchema,
    UnknownTemplateError,
    count_words,
    detect_template,
    estimate_text_tokens,
    get_template,
    template_from_name,
)

T0 = 1781512345678

CONCATENATING = ("chatml", "llama3", "alpaca", "vicuna", "phi3", "deepseek", "command-r")
FOLDING = ("mistral", "llama2", "gemma")


def user(content: str, id: str = "u") -> Message:
    return Message.user(id, content, timestamp=T0)


def assistant(content: str, id: str = "a") -> Message:
    return Message.assistant(id, content, timestamp=T0)


def result(content: str, id: str = "r", *, is_error: bool = False) -> Message:
    return Message.tool_result(id, f"{id}-call", "add", content, is_error, timestamp=T0)


def test_the_ten_templates_in_the_sheets_order() -> None:
    assert list(TEMPLATES) == [
        "chatml",
        "llama3",
        "mistral",
        "llama2",
        "gemma",
        "alpaca",
        "vicuna",
        "phi3",
        "deepseek",
        "command-r",
    ]
    for name, template in TEMPLATES.items():
        assert isinstance(template, ChatTemplate)
        assert template.name == name


def test_chatml_user_message_costs_seven_under_the_estimate() -> None:
    # The example: "hi" costs 7 under chars/4 in ChatML, 13 in Llama 3.
    chatml, llama3 = TEMPLATES["chatml"], TEMPLATES["llama3"]
    assert chatml.format_message(user("hi")) == "<|im_start|>user\nhi<|im_end|>\n"
    assert estimate_text_tokens(chatml.format_message(user("hi"))) == 7
    assert llama3.format_message(user("hi")) == "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>"
    assert estimate_text_tokens(llama3.format_message(user("hi"))) == 13


def test_empty_system_and_prefix_word_counts_from_section_6() -> None:
    system = {
        "chatml": 2,
        "llama3": 2,
        "mistral": 1,
        "llama2": 1,
        "gemma": 1,
        "deepseek": 1,
        "command-r": 1,
        "phi3": 0,
        "alpaca": 16,
        "vicuna": 23,
    }
    prefix = {"mistral": 0, "llama2": 0, "alpaca": 2}
    for name, template in TEMPLATES.items():
        assert count_words(template.format_system("")) == system[name], name
        assert count_words(template.assistant_prefix()) == prefix.get(name, 1), name


def test_tool_calls_and_result_metadata_are_never_rendered() -> None:
    call = ToolCall(id="a-call-1", name="add", arguments={"a": 2})
    with_call = Message.assistant("a", "Let me add.", [call], timestamp=T0)
    for template in TEMPLATES.values():
        assert template.format_message(with_call) == template.format_message(assistant("Let me add."))
        ok, error = result("boom"), result("boom", is_error=True)
        assert template.format_message(ok) == template.format_message(error)
        as_tool_call = with_call.model_copy(update={"role": "tool_call"})
        assert template.format_message(as_tool_call) == template.format_message(with_call)
        assert template.format_message(Message.system("s", "ignored", timestamp=T0)) == ""


@pytest.mark.parametrize("name", CONCATENATING)
@given(
    system_prompt=st.text(max_size=20),
    contents=st.lists(
        st.tuples(st.sampled_from(["user", "assistant", "tool_result", "system"]), st.text(max_size=20)),
        max_size=6,
    ),
)
def test_concatenating_templates_are_the_concatenation(
    name: str, system_prompt: str, contents: list[tuple[str, str]]
) -> None:
    template = TEMPLATES[name]
    messages = [
        Message(id=f"m{index}", role=role, content=content, timestamp=T0)
        for index, (role, content) in enumerate(contents)
    ]
    pieces = [template.format_system(system_prompt)]
    pieces += [template.format_message(message) for message in messages if message.role != "system"]
    assert template.format(system_prompt, messages) == "".join(pieces) + template.assistant_prefix()


def test_mistral_folds_the_system_text_into_the_first_user_side_message() -> None:
    mistral = TEMPLATES["mistral"]
    messages = [user("Hi"), assistant("Hello"), user("Bye")]
    assert mistral.format("Be brief.", messages) == (
        "<s>[INST] Be brief.\n\nHi [/INST] Hello</s>[INST] Bye [/INST]"
    )
    assert mistral.format_system("Be brief.") == "<s>[INST] Be brief.\n\n"
    assert mistral.format("Be brief.", [assistant("Hello")]) == "<s> Hello</s>"


def test_llama2_and_gemma_fold_too() -> None:
    assert TEMPLATES["llama2"].format("S", [user("Hi"), assistant("Yo")]) == (
        "<s>[INST] <<SYS>>\nS\n<</SYS>>\n\nHi [/INST] Yo </s>"
    )
    assert TEMPLATES["llama2"].format("", []) == ""
    assert TEMPLATES["gemma"].format("S", [result("5")]) == (
        "<bos><start_of_turn>user\nS\n\n[Tool result]\n5<end_of_turn>\n<start_of_turn>model\n"
    )


def test_template_from_name_aliases_and_normalisation() -> None:
    assert template_from_name(" ChatML ") is TEMPLATES["chatml"]
    assert template_from_name("\tGemma2\n") is TEMPLATES["gemma"]
    assert template_from_name("Mixtral\r\n") is TEMPLATES["mistral"]
    assert template_from_name("mistral\u00a0") is TEMPLATES["mistral"]
    assert template_from_name("\u0085phi3") is TEMPLATES["phi3"]
    assert template_from_name("llama 2") is TEMPLATES["llama2"]
    assert template_from_name("cohere") is TEMPLATES["command-r"]
    for unknown in [
        "",
        "auto",
        "llama 3",
        "\u001fmistral",
        "\uff23\uff28\uff21\uff34\uff2d\uff2c",
        "llama\u00a02",
        "command-r-plus",
    ]:
        assert template_from_name(unknown) is None, unknown


def test_get_template_names_the_known_templates_and_a_close_match() -> None:
    assert get_template("Llama-3.1") is TEMPLATES["llama3"]
    with pytest.raises(UnknownTemplateError) as caught:
        get_template("lama3")
    assert isinstance(caught.value, OrionMessagesError)
    assert isinstance(caught.value, ValueError)
    assert caught.value.suggestion == "llama3"
    assert "llama3" in str(caught.value)
    assert "command-r" in str(caught.value)


def test_detect_template_order_and_fallback() -> None:
    assert detect_template(None).name == "chatml"
    assert detect_template("").name == "chatml"
    assert detect_template("<|im_start|>{{ bos }}<|begin_of_text|>").name == "llama3"
    assert detect_template("<|user|>\n{{ content }}<|assistant|>").name == "phi3"
    assert detect_template("<|assistant|> only").name == "chatml"
    assert detect_template("<<SYS>> [INST]").name == "llama2"
    assert detect_template("### User: ### Assistant:").name == "deepseek"
    assert detect_template("<\uff5cend\u2581of\u2581sentence\uff5c>").name == "deepseek"
    assert detect_template("USER: ASSISTANT:").name == "vicuna"
    assert detect_template("<|IM_START|>").name == "chatml"


def test_estimate_text_tokens_counts_characters() -> None:
    assert estimate_text_tokens("") == 1
    assert estimate_text_tokens("abc") == 1
    assert estimate_text_tokens("abcdefgh") == 2
    assert estimate_text_tokens("é" * 8) == 2  # characters, not UTF-8 bytes (16)
    assert estimate_text_tokens("\U0001f600" * 9) == 2


def test_count_words_is_rusts_split_whitespace() -> None:
    assert count_words("") == 0
    assert count_words("a b\u3000c\u00a0d\u2028e") == 5
    assert count_words("a\x1fb\x1cc") == 1  # Python's split() would give 3
    assert count_words("a\u200bb\ufeffc") == 1


def test_tool_schema_is_strict_and_frozen() -> None:
    tool = ToolSchema(name="add", description="Add.", parameters={"type": "object"})
    with pytest.raises(ValidationError):
        tool.name = "x"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ToolSchema(name=1, description="", parameters=None)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        ToolSchema(name="a", description="", parameters={"x": float("nan")})
