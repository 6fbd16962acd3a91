"""Chat templates: orion-core's strings, written out by hand from the fact sheet
(shared/reference/chat-templates.md), and properties the sheet states."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from orion_messages import (
    TEMPLATES,
    ArgumentTypeError,
    ArgumentValueError,
    ChatTemplate,
    ContextConfig,
    Message,
    OrionMessagesError,
    ToolCall,
    ToolSchema,
    UnknownTemplateError,
    count_words,
    detect_template,
    estimate_text_tokens,
    get_template,
    plan_prune,
    template_from_name,
)
from orion_messages._pretty_json import pretty_json
from orion_messages.wire import loads_message

from .conftest import FIXTURES

T0 = 1781512345678

CONCATENATING = ("chatml", "llama3", "alpaca", "vicuna", "phi3", "deepseek", "command-r")
FOLDING = ("mistral", "llama2", "gemma")


def user(content: str, id: str = "u") -> Message:
    return Message.user(id, content, timestamp=T0)


def assistant(content: str, id: str = "a") -> Message:
    return Message.assistant(id, content, timestamp=T0)


def result(content: str, id: str = "r", *, is_error: bool = False) -> Message:
    return Message.tool_result_message(id, f"{id}-call", "add", content, is_error, timestamp=T0)


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


# --- Golden fixtures (fixtures/templates/): every template, every role, written by hand ---

GOLDENS = FIXTURES / "templates"
INPUTS = json.loads((GOLDENS / "inputs.json").read_text(encoding="utf-8"))
MESSAGES = {name: loads_message(json.dumps(value)) for name, value in INPUTS["messages"].items()}


def golden(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((GOLDENS / f"{name}.json").read_text(encoding="utf-8"))
    assert data["template"] == name
    return data


def tools_named(name: str) -> list[ToolSchema]:
    return [ToolSchema.model_validate(tool) for tool in INPUTS["tools"][name]]


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_system_block_goldens(name: str) -> None:
    expected = golden(name)["system"]
    cases = INPUTS["system_cases"]
    assert set(expected) == {f"{case['system_prompt']}+{case['tools']}" for case in cases}
    for key, text in expected.items():
        prompt, tools = key.split("+")
        rendered = TEMPLATES[name].format_system(INPUTS["system_prompts"][prompt], tools_named(tools))
        assert rendered == text, key


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_message_goldens(name: str) -> None:
    expected = golden(name)["messages"]
    assert set(expected) == set(MESSAGES)
    for key, text in expected.items():
        assert TEMPLATES[name].format_message(MESSAGES[key]) == text, key


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_assistant_prefix_goldens(name: str) -> None:
    assert TEMPLATES[name].assistant_prefix() == golden(name)["assistant_prefix"]


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_whole_prompt_goldens(name: str) -> None:
    expected = golden(name)["prompts"]
    cases = INPUTS["prompt_cases"]
    assert set(expected) == {f"{c['system_prompt']}+{c['tools']}+{c['conversation']}" for c in cases}
    for key, text in expected.items():
        prompt, tools, conversation = key.split("+")
        messages = [MESSAGES[message] for message in INPUTS["conversations"][conversation]]
        rendered = TEMPLATES[name].format(INPUTS["system_prompts"][prompt], messages, tools_named(tools))
        assert rendered == text, key


def _load(name: str) -> Any:
    return json.loads((GOLDENS / name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("case", _load("tools-block.json")["cases"], ids=lambda case: case["label"][:40])
def test_tools_block_goldens(case: dict[str, Any]) -> None:
    tools = [ToolSchema.model_validate(tool) for tool in case["tools"]]
    block = case["expected"]
    assert TEMPLATES["chatml"].format_system("", tools) == "<|im_start|>system\n" + block + "<|im_end|>\n"
    # Every template puts the block directly after the system prompt.
    for template in TEMPLATES.values():
        assert "Be brief." + block in template.format_system("Be brief.", tools), template.name
    assert TEMPLATES["alpaca"].format_system("S", tools) == "S" + block + "\n\n"


@pytest.mark.parametrize(("name", "expected"), _load("names.json")["cases"])
def test_name_goldens(name: str, expected: str | None) -> None:
    template = template_from_name(name)
    assert (template.name if template else None) == expected
    if expected is None:
        with pytest.raises(UnknownTemplateError):
            get_template(name)
    else:
        assert get_template(name) is template


@pytest.mark.parametrize("case", _load("detection.json")["cases"], ids=lambda case: case["label"][:50])
def test_detection_goldens(case: dict[str, Any]) -> None:
    assert detect_template(case["template"]).name == case["expected"]


def test_word_count_goldens() -> None:
    counts = _load("word-counts.json")
    assert set(counts["empty_system_block"]) == set(TEMPLATES) == set(counts["assistant_prefix"])
    for name, template in TEMPLATES.items():
        assert count_words(template.format_system("")) == counts["empty_system_block"][name], name
        assert count_words(template.assistant_prefix()) == counts["assistant_prefix"][name], name
    for text, expected in counts["count_words"]:
        assert count_words(text) == expected, repr(text)
    for text, expected in counts["estimate_text_tokens"]:
        assert estimate_text_tokens(text) == expected, repr(text)


# --- Properties the fact sheet states ---

JSON_WITHOUT_FLOATS = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=16,
)


@given(JSON_WITHOUT_FLOATS)
def test_pretty_printing_is_pythons_indent_2_sorted_layout_without_floats(value: Any) -> None:
    expected = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True)
    assert pretty_json(value) == expected


PLAIN = re.compile(r"-?[0-9]+\.[0-9]+")
SCIENTIFIC = re.compile(r"-?[0-9](\.[0-9]+)?e[+-][0-9]+")


def _significant_digits(text: str) -> str:
    mantissa = text.lstrip("-").split("e")[0].replace(".", "")
    return mantissa.lstrip("0").rstrip("0")


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_floats_use_repr_digits_in_serde_jsons_layout(value: float) -> None:
    text = pretty_json(value)
    assert float(text) == value
    assert text.startswith("-") == repr(value).startswith("-")
    if value == 0.0:
        assert text in ("0.0", "-0.0")
    elif 1e-5 <= abs(value) < 1e16:
        assert PLAIN.fullmatch(text), text
    else:
        assert SCIENTIFIC.fullmatch(text), text
    if value != 0.0:
        assert _significant_digits(text) == _significant_digits(repr(value))


WORDY = st.text(
    alphabet=st.sampled_from(["a", "b", "<", "/", " ", "\n", "\u3000", "\x1f", "\u00a0"]), max_size=12
)


@pytest.mark.parametrize("name", list(TEMPLATES))
@given(
    system_prompt=WORDY,
    first=WORDY,
    rest=st.lists(
        st.tuples(st.sampled_from(["user", "assistant", "tool_call", "tool_result", "system"]), WORDY),
        max_size=6,
    ),
    with_tools=st.booleans(),
)
def test_the_counted_pieces_never_count_fewer_words_than_the_prompt(
    name: str, system_prompt: str, first: str, rest: list[tuple[str, str]], with_tools: bool
) -> None:
    # Section 6: kept turns begin with a user message; the prompt built from them is the counted
    # text with some characters removed. For chatml, phi3 and alpaca the two counts are equal.
    template = TEMPLATES[name]
    tools = [ToolSchema(name="now", description="Time.", parameters={"type": "object"})] if with_tools else []
    messages = [user(first)] + [
        Message(id=f"m{index}", role=role, content=content, timestamp=T0)
        for index, (role, content) in enumerate(rest)
    ]
    counted = count_words(template.format_system(system_prompt, tools)) + count_words(
        template.assistant_prefix()
    )
    counted += sum(count_words(template.format_message(message)) for message in messages)
    in_prompt = count_words(template.format(system_prompt, messages, tools))
    if name in ("chatml", "phi3", "alpaca"):
        assert in_prompt == counted
    else:
        assert in_prompt <= counted


def test_tool_schema_ignores_unknown_keys_and_takes_any_json_value() -> None:
    tool = ToolSchema.model_validate({"name": "a", "description": "b", "parameters": [1, "x"], "label": "A"})
    assert tool.parameters == [1, "x"]
    assert not hasattr(tool, "label")
    assert ToolSchema(name="a", description="b", parameters=None).parameters is None
    with pytest.raises(ValidationError):
        ToolSchema.model_validate({"name": "a", "description": "b"})


DOCS = FIXTURES.parent / "docs" / "templates.md"


@pytest.mark.parametrize("index", range(7))
def test_the_docs_examples_run(index: int) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) == 7, "update the count above when adding or removing an example"
    exec(compile(blocks[index], f"docs/templates.md (example {index + 1})", "exec"), {})


def test_templates_of_one_class_are_equal_and_a_custom_template_needs_three_operations() -> None:
    chatml = TEMPLATES["chatml"]
    assert type(chatml)() == chatml
    assert hash(type(chatml)()) == hash(chatml)
    assert chatml != TEMPLATES["phi3"]
    assert len(set(TEMPLATES.values())) == 10

    class Plain(ChatTemplate):
        name = "plain"
        display_name = "Plain"

        def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
            return system_prompt + "\n"

        def format_message(self, message: Message) -> str:
            return "" if message.role == "system" else f"{message.role}: {message.content}\n"

        def assistant_prefix(self) -> str:
            return "assistant:"

    assert Plain().format("S", [user("hi")]) == "S\nuser: hi\nassistant:"
    assert repr(Plain()) == "<ChatTemplate plain>"

    class Unnamed(ChatTemplate):  # only the three operations, as the docstring asks
        format_system = Plain.format_system
        format_message = Plain.format_message
        assistant_prefix = Plain.assistant_prefix

    assert repr(Unnamed()) == f"<ChatTemplate {Unnamed.__qualname__}>"


def test_a_role_set_without_validation_still_renders() -> None:
    # model_construct skips validation and leaves the role a plain str.
    raw = Message.model_construct(**{**assistant("x").__dict__, "role": "system"})
    assert all(template.format_message(raw) == "" for template in TEMPLATES.values())
    assert TEMPLATES["chatml"].format("", [raw]) == "<|im_start|>system\n<|im_end|>\n<|im_start|>assistant\n"


def test_tools_must_be_tool_schemas() -> None:
    with pytest.raises(TypeError, match=r"tools\[0\]: expected a ToolSchema, found a dict"):
        TEMPLATES["chatml"].format_system("", [{"name": "a", "description": "", "parameters": {}}])  # type: ignore[list-item]


LONE_SURROGATE_PARAMETERS = [
    ({"a": "\ud800"}, "tools[1].parameters.a: a string"),
    ("x\udc00", "tools[1].parameters: a string"),
    ([1, {"b": ["ok", "\udfff"]}], "tools[1].parameters[1].b[1]: a string"),
    ({"ok": 1, "\ud800": 2}, 'tools[1].parameters: the key "\\ud800"'),
]


@pytest.mark.parametrize(("parameters", "place"), LONE_SURROGATE_PARAMETERS)
def test_parameters_json_cannot_hold_are_refused_at_their_place(parameters: Any, place: str) -> None:
    # A Python str may hold a lone surrogate, JSON text cannot: orjson's bare TypeError escaped
    # every template and plan_prune.
    tools = [
        ToolSchema(name="a", description="", parameters={}),
        ToolSchema(name="b", description="", parameters=parameters),
    ]
    said = f"^{re.escape(place)} holds an unpaired surrogate, which UTF-8 cannot encode"
    for name in sorted(TEMPLATES):
        with pytest.raises(ArgumentValueError, match=said):
            TEMPLATES[name].format("", [Message.user("u", "hi", timestamp=0)], tools)
    with pytest.raises(ArgumentValueError, match=said):
        plan_prune([Message.user("u", "hi", timestamp=0)], ContextConfig(), template="chatml", tools=tools)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_format_names_arguments_it_cannot_render(name: str) -> None:
    # Alpaca and Vicuna rendered their built-in preamble for a None prompt; the others raised a
    # TypeError (None + str), and one message in place of the list an AttributeError.
    template = TEMPLATES[name]
    cls = type(template).__name__
    message = Message.user("u", "hi", timestamp=0)
    with pytest.raises(
        ArgumentTypeError, match=rf"^{cls}\.format: system_prompt must be a str, got a NoneType$"
    ):
        template.format(None, [message])  # type: ignore[arg-type]
    with pytest.raises(
        ArgumentTypeError, match=rf"^{cls}\.format takes a list of messages, got a Message \("
    ):
        template.format("", message)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match=rf"^{cls}\.format: \[1\]: expected a Message, found a str$"):
        template.format("", [message, "hello"])  # type: ignore[list-item]


@pytest.mark.parametrize("name", sorted(TEMPLATES))
@pytest.mark.parametrize("prompt", [None, b"be brief", 5])
def test_format_system_names_a_prompt_that_is_not_a_str(name: str, prompt: object) -> None:
    # Most templates raised a bare TypeError from inside ``+``; Alpaca and Vicuna rendered their
    # preamble for None, as if the prompt were empty.
    template = TEMPLATES[name]
    cls = type(template).__name__
    with pytest.raises(ArgumentTypeError, match=rf"^{cls}\.format_system: system_prompt must be a str, got "):
        template.format_system(prompt)  # type: ignore[arg-type]


def test_template_names_fold_ascii_letters_only() -> None:
    # chat-templates.md: names lowercase ASCII letters only; non-ASCII letters are never folded.
    # U+212A KELVIN SIGN lowercases to an ASCII "k" under str.lower(), so it must stay unknown.
    assert template_from_name("DEEPSEEK") is TEMPLATES["deepseek"]
    assert template_from_name("DEEPSEE\u212a") is None
    assert template_from_name("deepsee\u212a") is None
