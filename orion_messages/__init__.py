"""orion-messages: orion-core's conversation format for Python.

Pydantic v2 models for every role and field, a JSON codec that reads and writes exactly what
orion-core writes, a conversation with orion-core's agent operations, atomic persistence, turn-aware pruning and
orion-core's agent events. JSON Schema export lives in ``orion_messages.schema``.
"""

import warnings as _warnings
from typing import TYPE_CHECKING

from ._version import __version__
from .anthropic_messages import (
    AnthropicMessage,
    AnthropicRequest,
    AnthropicTextBlock,
    from_anthropic,
    to_anthropic,
)
from .chat_template_dicts import (
    METADATA_KEY,
    ArgumentsMode,
    from_chat_template,
    to_chat_template,
)
from .checks import find_problems
from .conversation import Conversation
from .conversions import (
    MISSING_RESULT_TEXT,
    ConversionResult,
    Loss,
    Orphan,
    OrphanPolicy,
    find_orphans,
    fix_orphans,
)
from .counting import MessageCounter
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    ContextOverflowError,
    ConversationExists,
    ConversationNotFound,
    ConversionError,
    FormatError,
    MessageNotFound,
    MissingExtraError,
    NotALogError,
    NotARegularFileError,
    OrionMessagesError,
    OrionMessagesWarning,
    OverflowReason,
    PendingResultNotFound,
    Problem,
    ResultAlreadyResolved,
    StoreError,
    StoreVersionError,
    TornLineWarning,
    UnknownKeyWarning,
    UnknownTemplateError,
)
from .events import (
    EVENT_TYPES,
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    ContextBudgetEvent,
    ErrorEvent,
    GenerationStatsEvent,
    MessageDeltaEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolDeniedEvent,
    ToolExecEndEvent,
    ToolExecStartEvent,
    ToolExecUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
    dump_event,
    iter_events,
    messages_from_events,
    parse_event,
)
from .ids import message_number, tool_call_id
from .models import Message, Role, ToolCall, ToolResult, now_ms
from .openai_chat import (
    OpenAIAssistantMessage,
    OpenAIMessage,
    OpenAISystemMessage,
    OpenAIToolMessage,
    OpenAIUserMessage,
    from_openai,
    to_openai,
)
from .orion_backend import (
    TOOL_RESULT_PREFIX,
    to_orion_backend,
)
from .pruning import (
    SUMMARY_PREFIX,
    ContextConfig,
    PrunePlan,
    PruneResult,
    PruneStrategy,
    Summarizer,
    TokenCounter,
    estimate_tokens,
    is_summary,
    plan_prune,
    prune,
    tokenizer_counter,
)
from .storage import append_jsonl, iter_jsonl, load, read_jsonl, save, save_jsonl
from .store import (
    AsyncConversationStore,
    ConversationInfo,
    ConversationStore,
    StoreURL,
    open_async_store,
    open_store,
    parse_store_url,
)
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
from .wire import FloatStyle, dumps, dumps_message, loads, loads_message

__all__ = [
    "AgentEndEvent",
    "AgentEvent",
    "AgentStartEvent",
    "AnthropicMessage",
    "AnthropicRequest",
    "AnthropicTextBlock",
    "ArgumentTypeError",
    "ArgumentValueError",
    "ArgumentsMode",
    "AsyncConversationStore",
    "ChatTemplate",
    "ContextBudgetEvent",
    "ContextConfig",
    "ContextOverflowError",
    "Conversation",
    "ConversationExists",
    "ConversationInfo",
    "ConversationNotFound",
    "ConversationStore",
    "ConversionError",
    "ConversionResult",
    "EVENT_TYPES",
    "ErrorEvent",
    "FloatStyle",
    "FormatError",
    "GenerationStatsEvent",
    "Loss",
    "METADATA_KEY",
    "MISSING_RESULT_TEXT",
    "Message",
    "MessageCounter",
    "MessageDeltaEvent",
    "MessageEndEvent",
    "MessageNotFound",
    "MessageStartEvent",
    "MissingExtraError",
    "NotALogError",
    "NotARegularFileError",
    "OpenAIAssistantMessage",
    "OpenAIMessage",
    "OpenAISystemMessage",
    "OpenAIToolMessage",
    "OpenAIUserMessage",
    "OrionMessagesError",
    "OrionMessagesWarning",
    "Orphan",
    "OrphanPolicy",
    "OverflowReason",
    "PendingResultNotFound",
    "Problem",
    "PrunePlan",
    "PruneResult",
    "PruneStrategy",
    "ResultAlreadyResolved",
    "Role",
    "SUMMARY_PREFIX",
    "StoreError",
    "StoreURL",
    "StoreVersionError",
    "Summarizer",
    "TEMPLATES",
    "TOOL_RESULT_PREFIX",
    "TextCounter",
    "TokenCounter",
    "ToolCall",
    "ToolDeniedEvent",
    "ToolExecEndEvent",
    "ToolExecStartEvent",
    "ToolExecUpdateEvent",
    "ToolResult",
    "ToolSchema",
    "TornLineWarning",
    "TurnEndEvent",
    "TurnLayout",
    "TurnStartEvent",
    "UnknownKeyWarning",
    "UnknownTemplateError",
    "WarningEvent",
    "__version__",
    "append_jsonl",
    "callable_counter",
    "count_words",
    "detect_template",
    "dump_event",
    "dumps",
    "dumps_message",
    "estimate_text_tokens",
    "estimate_tokens",
    "find_orphans",
    "find_problems",
    "fix_orphans",
    "from_anthropic",
    "from_chat_template",
    "from_openai",
    "get_template",
    "huggingface_counter",
    "is_summary",
    "iter_events",
    "iter_jsonl",
    "load",
    "loads",
    "loads_message",
    "message_number",
    "messages_from_events",
    "now_ms",
    "open_async_store",
    "open_store",
    "parse_event",
    "parse_store_url",
    "plan_prune",
    "prune",
    "read_jsonl",
    "save",
    "save_jsonl",
    "sentencepiece_counter",
    "split_turns",
    "template_from_name",
    "tiktoken_counter",
    "to_anthropic",
    "to_chat_template",
    "to_openai",
    "to_orion_backend",
    "tokenizer_counter",
    "tool_call_id",
]

# Renamed public names, kept as deprecated aliases for one release. Add one line per rename:
#     "old_name": ("new_name", "0.2.0"),
# ``new_name`` must be in ``__all__``; the second item is the release that renames it (the old
# name is deprecated from then on and removed in the release after),
# and the CHANGELOG's Deprecated section lists the alias. Type checkers do not see the aliases
# (see ``__getattr__`` below), so a typed code base finds every old name at once.
_DEPRECATED: dict[str, tuple[str, str]] = {
    "record_events": ("messages_from_events", "0.2.0"),
    "Turns": ("TurnLayout", "0.2.0"),
    "check": ("find_problems", "0.2.0"),
}


def _deprecated_alias(name: str) -> object:
    """The object a deprecated ``name`` now goes by, with a ``DeprecationWarning`` saying so."""
    try:
        new_name, since = _DEPRECATED[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    _warnings.warn(
        f"orion_messages.{name} is deprecated since {since} and will be removed in the next "
        f"release; use orion_messages.{new_name}",
        DeprecationWarning,
        stacklevel=3,
    )
    return globals()[new_name]


if not TYPE_CHECKING:  # only at run time: type checkers report the old names as missing

    def __getattr__(name: str) -> object:
        """Deprecated aliases of renamed names (``_DEPRECATED``), with a ``DeprecationWarning``."""
        return _deprecated_alias(name)
