"""orion-messages: orion-core's conversation format for Python.

Pydantic v2 models for every role and field, a JSON codec that reads and writes exactly what
orion-core writes, a conversation with orion-core's agent operations, atomic persistence, turn-aware pruning and
orion-core's agent events. JSON Schema export lives in ``orion_messages.schema``.
"""

import warnings
from typing import Any

from .checks import find_problems
from .conversation import Conversation
from .counting import MessageCounter
from .errors import (
    ContextOverflowError,
    FormatError,
    MissingExtraError,
    OrionMessagesError,
    OrionMessagesWarning,
    Problem,
    TornLineWarning,
    UnknownTemplateError,
)
from .events import AgentEvent, dump_event, iter_events, parse_event, record_events
from .ids import tool_call_id
from .models import Message, Role, ToolCall, ToolResult
from .pruning import (
    SUMMARY_PREFIX,
    ContextConfig,
    PrunePlan,
    PruneResult,
    PruneStrategy,
    TokenCounter,
    estimate_tokens,
    is_summary,
    plan_prune,
    prune,
    tokenizer_counter,
)
from .storage import append_jsonl, load, read_jsonl, save, save_jsonl
from .templates import TEMPLATES, ChatTemplate, ToolSchema, detect_template, get_template, template_from_name
from .text_counters import (
    TextCounter,
    callable_counter,
    count_words,
    estimate_text_tokens,
    huggingface_counter,
    sentencepiece_counter,
    tiktoken_counter,
)
from .turns import TurnLayout, split_turns
from .wire import dumps, dumps_message, loads, loads_message

__version__ = "0.1.0"

__all__ = [
    "TEMPLATES",
    "ChatTemplate",
    "MissingExtraError",
    "TextCounter",
    "ToolSchema",
    "UnknownTemplateError",
    "callable_counter",
    "count_words",
    "detect_template",
    "estimate_text_tokens",
    "get_template",
    "huggingface_counter",
    "sentencepiece_counter",
    "template_from_name",
    "tiktoken_counter",
    "SUMMARY_PREFIX",
    "AgentEvent",
    "ContextConfig",
    "ContextOverflowError",
    "Conversation",
    "FormatError",
    "Message",
    "MessageCounter",
    "OrionMessagesError",
    "OrionMessagesWarning",
    "Problem",
    "PrunePlan",
    "PruneResult",
    "PruneStrategy",
    "Role",
    "ToolCall",
    "TokenCounter",
    "ToolResult",
    "TornLineWarning",
    "TurnLayout",
    "__version__",
    "append_jsonl",
    "find_problems",
    "dumps",
    "dump_event",
    "dumps_message",
    "estimate_tokens",
    "is_summary",
    "iter_events",
    "load",
    "loads",
    "loads_message",
    "parse_event",
    "plan_prune",
    "prune",
    "read_jsonl",
    "record_events",
    "save",
    "save_jsonl",
    "split_turns",
    "tokenizer_counter",
    "tool_call_id",
]

_DEPRECATED = {"check": ("find_problems", find_problems), "Turns": ("TurnLayout", TurnLayout)}


def __getattr__(name: str) -> Any:
    """The names renamed in 0.2, kept for one release with a ``DeprecationWarning``."""
    if name in _DEPRECATED:
        new_name, value = _DEPRECATED[name]
        warnings.warn(
            f"orion_messages.{name} is deprecated; use orion_messages.{new_name}",
            DeprecationWarning,
            stacklevel=2,
        )
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
