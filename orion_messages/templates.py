"""orion-core's ten chat templates: the exact prompt text it builds from a conversation.

orion-core never sends or counts a message's bare content: it renders the conversation with a
chat template (ChatML by default) and counts the rendered pieces when it plans a prune. This
module renders exactly orion-core's strings, template by template, with its four operations
(``format_system``, ``format_message``, ``assistant_prefix`` and ``format``), its names and
aliases (``template_from_name``) and its detection from a GGUF/Jinja chat template
(``detect_template``).
"""

from __future__ import annotations

import difflib
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from ._json_rules import JSON_VALUE, lone_surrogates
from ._pretty_json import pretty_json
from ._text import joined_location, kind_of, quoted
from ._whitespace import UNICODE_WHITESPACE
from .errors import ArgumentTypeError, ArgumentValueError, UnknownTemplateError
from .models import Message, Role, _SerdeJsonModel, first_non_message, require_message_list

__all__ = [
    "TEMPLATES",
    "ChatTemplate",
    "ToolSchema",
    "detect_template",
    "get_template",
    "template_from_name",
]


class ToolSchema(_SerdeJsonModel, frozen=True, strict=True, extra="ignore", use_attribute_docstrings=True):
    """A tool as orion-core advertises it to the model (``orion_core::ToolSchema``).

    Keys other than the three fields are ignored, as serde ignores them.
    """

    name: str
    """The tool's name, as the model must write it in a tool call."""
    description: str
    """What the tool does, shown to the model."""
    parameters: JSON_VALUE
    """A JSON value, usually a JSON Schema object, describing the tool's arguments."""


_ASSISTANT_SIDE = frozenset({Role.ASSISTANT, Role.TOOL_CALL})

_TOOLS_HEADER = "\n\nYou have access to the following tools:\n\n"
_TOOLS_FOOTER = (
    "To use a tool, respond with a JSON block:\n"
    "```tool_call\n"
    '{"name": "tool_name", "arguments": {...}}\n'
    "```\n"
)


def _system_text(
    template: ChatTemplate, system_prompt: str, tools: Sequence[ToolSchema], *, empty: str = ""
) -> str:
    """The system prompt (``empty`` in its place when it is ``""``) followed by the tools block.

    Every built-in ``format_system`` goes through here, so a prompt that is not a str is refused
    by name instead of failing inside ``+`` (or, for ``None``, rendering a preamble).
    """
    if not isinstance(system_prompt, str):
        raise ArgumentTypeError(
            f"{type(template).__name__}.format_system: system_prompt must be a str, got {kind_of(system_prompt)}"
        )
    return (system_prompt or empty) + _tools_block(tools)


def _tools_block(tools: Sequence[ToolSchema]) -> str:
    """The text orion-core appends to the system prompt to advertise ``tools``; empty for none."""
    if isinstance(tools, (ToolSchema, str, bytes, Mapping)) or not isinstance(tools, Sequence):
        # One ToolSchema would otherwise be iterated as pydantic iterates a model: (name, value) pairs.
        raise ArgumentTypeError(f"tools must be a list of ToolSchema, got {kind_of(tools)}")
    if not tools:
        return ""
    parts = [_TOOLS_HEADER]
    for index, tool in enumerate(tools):
        if not isinstance(tool, ToolSchema):
            raise ArgumentTypeError(
                f"tools[{index}]: expected a ToolSchema, found {kind_of(tool)}"
                " (build one with ToolSchema.model_validate(...))"
            )
        parameters = _parameters_text(tool.parameters, f"tools[{index}].parameters")
        parts.append(f"### {tool.name}\n{tool.description}\nParameters: {parameters}\n\n")
    parts.append(_TOOLS_FOOTER)
    return "".join(parts)


def _parameters_text(parameters: Any, where: str) -> str:
    """A tool's parameters as the tools block shows them (serde_json's pretty form), or an
    ``ArgumentValueError`` at ``where`` for a string holding a lone surrogate: a Python str may
    hold one, JSON text (and orion-core's strings) cannot."""
    try:
        return pretty_json(parameters)
    except TypeError:
        found = next(lone_surrogates(parameters), None)
        if found is None:
            raise
    what = f"the key {quoted(found.text)}" if found.is_key else "a string"
    raise ArgumentValueError(
        f"{joined_location(where, found.path)}: {what} holds an unpaired surrogate, which UTF-8 "
        "cannot encode (orion-core's strings cannot hold one)"
    )


def _result(content: str) -> str:
    """The wrapper every template except ChatML and Llama 3 puts around a tool result."""
    return "[Tool result]\n" + content


class ChatTemplate(ABC):
    """One of orion-core's chat templates: how a conversation becomes prompt text.

    Only a message's ``role`` and ``content`` are rendered; ids, timestamps, tool calls and tool
    results' metadata never reach the prompt. ``system``-role messages render as ``""`` and are
    left out of ``format``; only the ``system_prompt`` argument reaches the prompt.

    Subclass it for a template of your own: implement the three abstract operations, and
    ``format`` when the whole prompt is not their concatenation. Templates of the same class are
    equal.
    """

    name: str
    """The canonical name, as orion-core's ``name()`` spells it (``"chatml"``, ``"command-r"``)."""
    display_name: str
    """A human name for the template (``"ChatML"``, ``"Llama 3 / 3.1"``)."""

    @abstractmethod
    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """The system block: the system prompt (used exactly as given) and the tools block.

        Raises:
            ArgumentTypeError: (the built-in templates) ``system_prompt`` is not a str, or
                ``tools`` is not a list of ``ToolSchema``.
            ArgumentValueError: (the built-in templates) a tool's ``parameters`` hold a string
                with a lone surrogate, which JSON text cannot hold (``tools[0].parameters.a``).
        """

    @abstractmethod
    def format_message(self, message: Message) -> str:
        """The fragment of one message, as orion-core's ``plan_prune`` counts it.

        Raises:
            ArgumentTypeError: (the built-in templates) ``message`` is not a ``Message``.
        """

    @abstractmethod
    def assistant_prefix(self) -> str:
        """The text that opens the model's turn."""

    def format(
        self, system_prompt: str, messages: Sequence[Message], tools: Sequence[ToolSchema] = ()
    ) -> str:
        """The whole prompt orion-core sends: system block, non-system messages, assistant prefix.

        Raises:
            ArgumentTypeError: ``system_prompt`` is not a str, or ``messages`` is not a list of
                messages (a single ``Message`` included).
            ArgumentValueError: as ``format_system`` raises it.
        """
        _check_format(self, system_prompt, messages)
        parts = [self.format_system(system_prompt, tools)]
        parts.extend(self.format_message(message) for message in messages if message.role != Role.SYSTEM)
        parts.append(self.assistant_prefix())
        return "".join(parts)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        # A template of a host's own may leave ``name`` unset: its class names it then.
        return f"<ChatTemplate {getattr(self, 'name', type(self).__qualname__)}>"


def _check_format(template: ChatTemplate, system_prompt: object, messages: Sequence[object]) -> None:
    """Refuse what ``format`` cannot render: it would fail deep inside (``None + str``), or
    quietly render a built-in preamble for a ``None`` prompt."""
    function = f"{type(template).__name__}.format"
    if not isinstance(system_prompt, str):
        raise ArgumentTypeError(f"{function}: system_prompt must be a str, got {kind_of(system_prompt)}")
    if isinstance(messages, Message):
        raise ArgumentTypeError(
            f"{function} takes a list of messages, got a Message (put it in a list: [message])"
        )
    require_message_list(messages, function)
    wrong = first_non_message(messages, function)
    if wrong is not None:
        raise wrong


class _MarkupTemplate(ChatTemplate):
    """A template whose message fragments are fixed markup around the content, by role."""

    # (open, close) markup around each side's content; tool results use ``_tool``.
    _user: tuple[str, str]
    _assistant: tuple[str, str]
    _tool: tuple[str, str]
    _wraps_results = True
    """Whether a tool result's content is wrapped as ``"[Tool result]\n" + content``."""

    def format_message(self, message: Message) -> str:
        """The fragment of one message, as orion-core's ``plan_prune`` counts it.

        Raises:
            ArgumentTypeError: ``message`` is not a ``Message``.
        """
        # One isinstance per message (planning calls this for each): else a bare AttributeError.
        if not isinstance(message, Message):
            raise ArgumentTypeError(
                f"{type(self).__name__}.format_message: message must be a Message, got {kind_of(message)}"
            )
        role = message.role
        if role == Role.SYSTEM:
            return ""
        content = message.content
        if role in _ASSISTANT_SIDE:
            start, end = self._assistant
        elif role == Role.TOOL_RESULT:
            start, end = self._tool
            if self._wraps_results:
                content = _result(content)
        else:
            start, end = self._user
        return start + content + end


class ChatML(_MarkupTemplate):
    """ChatML, orion-core's default: ``<|im_start|>role\\n ... <|im_end|>\\n``."""

    name = "chatml"
    display_name = "ChatML"
    _user = ("<|im_start|>user\n", "<|im_end|>\n")
    _assistant = ("<|im_start|>assistant\n", "<|im_end|>\n")
    _tool = ("<|im_start|>tool\n", "<|im_end|>\n")
    _wraps_results = False

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """``<|im_start|>system\\n`` + prompt + tools + ``<|im_end|>\\n``, always present."""
        return "<|im_start|>system\n" + _system_text(self, system_prompt, tools) + "<|im_end|>\n"

    def assistant_prefix(self) -> str:
        """``<|im_start|>assistant\\n``."""
        return "<|im_start|>assistant\n"


def _llama3_header(role: str) -> str:
    return "<|start_header_id|>" + role + "<|end_header_id|>\n\n"


class Llama3(_MarkupTemplate):
    """Llama 3 and 3.1: header tokens around each role, ``<|eot_id|>`` after each message."""

    name = "llama3"
    display_name = "Llama 3 / 3.1"
    _user = (_llama3_header("user"), "<|eot_id|>")
    _assistant = (_llama3_header("assistant"), "<|eot_id|>")
    _tool = (_llama3_header("ipython"), "<|eot_id|>")
    _wraps_results = False

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """``<|begin_of_text|>`` and the system header block, always present."""
        return (
            "<|begin_of_text|>"
            + _llama3_header("system")
            + _system_text(self, system_prompt, tools)
            + "<|eot_id|>"
        )

    def assistant_prefix(self) -> str:
        """The assistant header."""
        return _llama3_header("assistant")


class _FoldingTemplate(_MarkupTemplate):
    """A template whose whole prompt folds the system text into the first user-side message.

    Its ``format_system`` and ``format_message`` give the pieces orion-core counts; ``format``
    gives the prompt orion-core sends, which is not their concatenation.
    """

    _start: str
    """What the whole prompt starts with."""
    _ends_with_prefix: bool
    """Whether the whole prompt ends with the assistant prefix."""

    @abstractmethod
    def _fold(self, system_text: str) -> str:
        """What goes before the first user-side message's body when the system text is non-empty."""

    def format(
        self, system_prompt: str, messages: Sequence[Message], tools: Sequence[ToolSchema] = ()
    ) -> str:
        """The whole prompt: the system text folded into the first user-side message."""
        _check_format(self, system_prompt, messages)
        system_text = _system_text(self, system_prompt, tools)
        folded = system_text == ""  # nothing to fold
        parts = [self._start]
        for message in messages:
            role = message.role
            if role == Role.SYSTEM:
                continue
            if role in _ASSISTANT_SIDE:
                parts.append(self._assistant[0] + message.content + self._assistant[1])
                continue
            body = _result(message.content) if role == Role.TOOL_RESULT else message.content
            if not folded:
                body = self._fold(system_text) + body
                folded = True
            parts.append(self._user[0] + body + self._user[1])
        if self._ends_with_prefix:
            parts.append(self.assistant_prefix())
        return "".join(parts)


class Mistral(_FoldingTemplate):
    """Mistral and Mixtral: ``[INST] ... [/INST]``, the system text folded into the first instruction."""

    name = "mistral"
    display_name = "Mistral / Mixtral"
    _user = ("[INST] ", " [/INST]")
    _assistant = (" ", "</s>")
    _tool = _user
    _start = "<s>"
    _ends_with_prefix = False

    def _fold(self, system_text: str) -> str:
        return system_text + "\n\n"

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """``<s>`` alone, or ``<s>[INST] `` + system text + two newlines (as counted)."""
        system_text = _system_text(self, system_prompt, tools)
        return "<s>" + (self._user[0] + self._fold(system_text) if system_text else "")

    def assistant_prefix(self) -> str:
        """One space."""
        return " "


class Llama2(_FoldingTemplate):
    """Llama 2 chat: ``<s>[INST] ... [/INST]`` per instruction, ``<<SYS>>`` folded into the first."""

    name = "llama2"
    display_name = "Llama 2 chat"
    _user = ("<s>[INST] ", " [/INST]")
    _assistant = (" ", " </s>")
    _tool = _user
    _start = ""
    _ends_with_prefix = False

    def _fold(self, system_text: str) -> str:
        return "<<SYS>>\n" + system_text + "\n<</SYS>>\n\n"

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """``<s>`` alone, or ``<s>[INST] <<SYS>>\\n`` + system text + ``\\n<</SYS>>\\n\\n`` (as counted)."""
        system_text = _system_text(self, system_prompt, tools)
        return self._user[0] + self._fold(system_text) if system_text else "<s>"

    def assistant_prefix(self) -> str:
        """One space."""
        return " "


class Gemma(_FoldingTemplate):
    """Gemma and Gemma 2: ``<start_of_turn>user``/``model`` turns, the system text in the first user turn."""

    name = "gemma"
    display_name = "Gemma / Gemma 2"
    _user = ("<start_of_turn>user\n", "<end_of_turn>\n")
    _assistant = ("<start_of_turn>model\n", "<end_of_turn>\n")
    _tool = _user
    _start = "<bos>"
    _ends_with_prefix = True

    def _fold(self, system_text: str) -> str:
        return system_text + "\n\n"

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """``<bos>`` alone, or ``<bos><start_of_turn>user\\n`` + system text + two newlines (as counted)."""
        system_text = _system_text(self, system_prompt, tools)
        return "<bos>" + (self._user[0] + self._fold(system_text) if system_text else "")

    def assistant_prefix(self) -> str:
        """``<start_of_turn>model\\n``."""
        return "<start_of_turn>model\n"


_ALPACA_PREAMBLE = "Below is an instruction that describes a task. Write a response that appropriately completes the request."
_VICUNA_PREAMBLE = (
    "A chat between a curious user and an artificial intelligence assistant. "
    "The assistant gives helpful, detailed, and polite answers to the user's questions."
)


class Alpaca(_MarkupTemplate):
    """Alpaca: ``### Instruction:`` / ``### Response:`` sections after a preamble."""

    name = "alpaca"
    display_name = "Alpaca"
    _user = ("### Instruction:\n", "\n\n")
    _assistant = ("### Response:\n", "\n\n")
    _tool = _user

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """The prompt (or Alpaca's preamble when it is empty) + tools + two newlines."""
        return _system_text(self, system_prompt, tools, empty=_ALPACA_PREAMBLE) + "\n\n"

    def assistant_prefix(self) -> str:
        """``### Response:\\n``."""
        return "### Response:\n"


class Vicuna(_MarkupTemplate):
    """Vicuna v1.1: ``USER: ... ASSISTANT: ...</s>`` after a preamble."""

    name = "vicuna"
    display_name = "Vicuna v1.1"
    _user = ("USER: ", " ")
    _assistant = ("ASSISTANT: ", "</s>")
    _tool = _user

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """The prompt (or Vicuna's preamble when it is empty) + tools + one space."""
        return _system_text(self, system_prompt, tools, empty=_VICUNA_PREAMBLE) + " "

    def assistant_prefix(self) -> str:
        """``ASSISTANT: `` (with a trailing space)."""
        return "ASSISTANT: "


class Phi3(_MarkupTemplate):
    """Phi-3: ``<|user|>`` / ``<|assistant|>`` / ``<|system|>`` blocks ended by ``<|end|>``."""

    name = "phi3"
    display_name = "Phi-3"
    _user = ("<|user|>\n", "<|end|>\n")
    _assistant = ("<|assistant|>\n", "<|end|>\n")
    _tool = _user

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """Nothing for an empty prompt and no tools, else ``<|system|>\\n`` + text + ``<|end|>\\n``."""
        system_text = _system_text(self, system_prompt, tools)
        return "<|system|>\n" + system_text + "<|end|>\n" if system_text else ""

    def assistant_prefix(self) -> str:
        """``<|assistant|>\\n``."""
        return "<|assistant|>\n"


_DEEPSEEK_BOS = "<\uff5cbegin\u2581of\u2581sentence\uff5c>"
_DEEPSEEK_EOS = "<\uff5cend\u2581of\u2581sentence\uff5c>"


class DeepSeek(_MarkupTemplate):
    """DeepSeek-LLM chat: ``User: ...`` / ``Assistant: ...`` between DeepSeek's sentence tokens."""

    name = "deepseek"
    display_name = "DeepSeek-LLM chat"
    _user = ("User: ", "\n\n")
    _assistant = ("Assistant: ", _DEEPSEEK_EOS)
    _tool = _user

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """DeepSeek's BOS, then the system text and two newlines when there is any."""
        system_text = _system_text(self, system_prompt, tools)
        return _DEEPSEEK_BOS + (system_text + "\n\n" if system_text else "")

    def assistant_prefix(self) -> str:
        """``Assistant:`` (no trailing space)."""
        return "Assistant:"


class CommandR(_MarkupTemplate):
    """Cohere Command-R and R+: turn tokens with no whitespace at all."""

    name = "command-r"
    display_name = "Command-R / R+"
    _user = ("<|START_OF_TURN_TOKEN|><|USER_TOKEN|>", "<|END_OF_TURN_TOKEN|>")
    _assistant = ("<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>", "<|END_OF_TURN_TOKEN|>")
    _tool = _user

    def format_system(self, system_prompt: str, tools: Sequence[ToolSchema] = ()) -> str:
        """``<BOS_TOKEN>``, then the system turn when there is any system text."""
        system_text = _system_text(self, system_prompt, tools)
        if not system_text:
            return "<BOS_TOKEN>"
        return "<BOS_TOKEN><|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|>" + system_text + "<|END_OF_TURN_TOKEN|>"

    def assistant_prefix(self) -> str:
        """``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``."""
        return "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"


TEMPLATES: Mapping[str, ChatTemplate] = MappingProxyType(
    {
        template.name: template
        for template in (
            ChatML(),
            Llama3(),
            Mistral(),
            Llama2(),
            Gemma(),
            Alpaca(),
            Vicuna(),
            Phi3(),
            DeepSeek(),
            CommandR(),
        )
    }
)
"""orion-core's ten templates by canonical name, in the order of its documentation."""

_ALIASES: Mapping[str, str] = MappingProxyType(
    {
        "chatml": "chatml",
        "llama3": "llama3",
        "llama-3": "llama3",
        "llama3.1": "llama3",
        "llama-3.1": "llama3",
        "llama2": "llama2",
        "llama-2": "llama2",
        "llama 2": "llama2",
        "mistral": "mistral",
        "mixtral": "mistral",
        "alpaca": "alpaca",
        "vicuna": "vicuna",
        "gemma": "gemma",
        "gemma2": "gemma",
        "phi3": "phi3",
        "phi-3": "phi3",
        "phi": "phi3",
        "deepseek": "deepseek",
        "deepseek-llm": "deepseek",
        "command-r": "command-r",
        "commandr": "command-r",
        "command_r": "command-r",
        "cohere": "command-r",
    }
)

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _normalise(name: str) -> str:
    """orion-core's normalisation: trim Unicode whitespace, lowercase ASCII letters only."""
    if not isinstance(name, str):
        raise ArgumentTypeError(f"a chat template name must be a str, got {kind_of(name)}")
    return name.strip(UNICODE_WHITESPACE).translate(_ASCII_LOWER)


def template_from_name(name: str) -> ChatTemplate | None:
    """The template orion-core's ``template_from_name`` gives for ``name``, or ``None``.

    Leading and trailing Unicode whitespace is ignored and ASCII letters are matched in any case;
    ``"llama-3.1"``, ``"Mixtral"``, ``"cohere"`` and the other aliases orion-core knows resolve.
    """
    canonical = _ALIASES.get(_normalise(name))
    return None if canonical is None else TEMPLATES[canonical]


def get_template(name: str) -> ChatTemplate:
    """The template named ``name`` (as ``template_from_name`` resolves it).

    Raises:
        UnknownTemplateError: orion-core knows no template by that name; the message lists the
            known names and suggests a close one.
    """
    template = template_from_name(name)
    if template is not None:
        return template
    normalised = _normalise(name)
    close = difflib.get_close_matches(normalised, list(_ALIASES), n=1, cutoff=0.6)
    hint = f' Did you mean "{close[0]}"?' if close else ""
    raise UnknownTemplateError(
        f"unknown chat template {quoted(name)}.{hint} Known templates: {', '.join(TEMPLATES)}"
        f" (aliases: {', '.join(alias for alias in _ALIASES if alias not in TEMPLATES)})",
        name=name,
        suggestion=close[0] if close else None,
    )


# orion-core's detection markers, checked in this order; the first match decides.
_MARKERS: tuple[tuple[str, tuple[tuple[str, ...], ...]], ...] = (
    # (template, alternatives): a template matches when every marker of one alternative is present.
    ("llama3", (("<|start_header_id|>",), ("<|begin_of_text|>",))),
    ("command-r", (("<|START_OF_TURN_TOKEN|>",), ("<|CHATBOT_TOKEN|>",))),
    ("chatml", (("<|im_start|>",),)),
    ("phi3", (("<|assistant|>", "<|user|>"), ("<|assistant|>", "<|system|>"))),
    ("gemma", (("<start_of_turn>",),)),
    ("llama2", (("<<SYS>>",),)),
    ("mistral", (("[INST]",),)),
    ("alpaca", (("### Instruction:",),)),
    ("deepseek", (("User:", "Assistant:"), ("\u2581of\u2581sentence",))),
    ("vicuna", (("ASSISTANT:", "USER:"),)),
)


def detect_template(jinja: str | None) -> ChatTemplate:
    """The template orion-core picks for a model's chat template text (from GGUF metadata).

    Case-sensitive marker checks in orion-core's order; ChatML when nothing matches or there is no
    template at all. Some real templates are misdetected exactly as orion-core misdetects them
    (Zephyr as Phi-3, for instance): see docs/templates.md.
    """
    if jinja is not None and not isinstance(jinja, str):
        raise ArgumentTypeError(
            f"detect_template takes the template's text (a str) or None, got {kind_of(jinja)}"
        )
    if jinja:
        for name, alternatives in _MARKERS:
            if any(all(marker in jinja for marker in markers) for markers in alternatives):
                return TEMPLATES[name]
    return TEMPLATES["chatml"]
