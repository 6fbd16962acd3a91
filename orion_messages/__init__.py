"""orion-messages: orion-core's conversation format for Python.

Pydantic v2 models for every role and field, a JSON codec that reads and writes exactly what
orion-core writes, a conversation with orion-core's agent operations, atomic persistence, turn-aware pruning and
orion-core's agent events. JSON Schema export lives in ``orion_messages.schema``.
"""

import importlib as _importlib
import warnings as _warnings
from typing import TYPE_CHECKING

from ._version import __version__

if TYPE_CHECKING:
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
    from .stats import ConversationStats, conversation_stats
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
    from .templates import (
        TEMPLATES,
        ChatTemplate,
        ToolSchema,
        detect_template,
        get_template,
        template_from_name,
    )
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
    "ConversationStats",
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
    "conversation_stats",
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

# Where each public name lives: the package imports a module when one of its names is first
# used (PEP 562), so ``import orion_messages`` is cheap and a program pays only for what it
# uses. Type checkers read the imports above; tests/test_public_api.py checks the two agree.
_EXPORTS: dict[str, str] = {
    "AgentEndEvent": "events",
    "AgentEvent": "events",
    "AgentStartEvent": "events",
    "AnthropicMessage": "anthropic_messages",
    "AnthropicRequest": "anthropic_messages",
    "AnthropicTextBlock": "anthropic_messages",
    "ArgumentTypeError": "errors",
    "ArgumentValueError": "errors",
    "ArgumentsMode": "chat_template_dicts",
    "AsyncConversationStore": "store",
    "ChatTemplate": "templates",
    "ContextBudgetEvent": "events",
    "ContextConfig": "pruning",
    "ContextOverflowError": "errors",
    "Conversation": "conversation",
    "ConversationExists": "errors",
    "ConversationInfo": "store",
    "ConversationNotFound": "errors",
    "ConversationStats": "stats",
    "ConversationStore": "store",
    "ConversionError": "errors",
    "ConversionResult": "conversions",
    "EVENT_TYPES": "events",
    "ErrorEvent": "events",
    "FloatStyle": "wire",
    "FormatError": "errors",
    "GenerationStatsEvent": "events",
    "Loss": "conversions",
    "METADATA_KEY": "chat_template_dicts",
    "MISSING_RESULT_TEXT": "conversions",
    "Message": "models",
    "MessageCounter": "counting",
    "MessageDeltaEvent": "events",
    "MessageEndEvent": "events",
    "MessageNotFound": "errors",
    "MessageStartEvent": "events",
    "MissingExtraError": "errors",
    "NotALogError": "errors",
    "NotARegularFileError": "errors",
    "OpenAIAssistantMessage": "openai_chat",
    "OpenAIMessage": "openai_chat",
    "OpenAISystemMessage": "openai_chat",
    "OpenAIToolMessage": "openai_chat",
    "OpenAIUserMessage": "openai_chat",
    "OrionMessagesError": "errors",
    "OrionMessagesWarning": "errors",
    "Orphan": "conversions",
    "OrphanPolicy": "conversions",
    "OverflowReason": "errors",
    "PendingResultNotFound": "errors",
    "Problem": "errors",
    "PrunePlan": "pruning",
    "PruneResult": "pruning",
    "PruneStrategy": "pruning",
    "ResultAlreadyResolved": "errors",
    "Role": "models",
    "SUMMARY_PREFIX": "pruning",
    "StoreError": "errors",
    "StoreURL": "store",
    "StoreVersionError": "errors",
    "Summarizer": "pruning",
    "TEMPLATES": "templates",
    "TOOL_RESULT_PREFIX": "orion_backend",
    "TextCounter": "text_counters",
    "TokenCounter": "pruning",
    "ToolCall": "models",
    "ToolDeniedEvent": "events",
    "ToolExecEndEvent": "events",
    "ToolExecStartEvent": "events",
    "ToolExecUpdateEvent": "events",
    "ToolResult": "models",
    "ToolSchema": "templates",
    "TornLineWarning": "errors",
    "TurnEndEvent": "events",
    "TurnLayout": "turns",
    "TurnStartEvent": "events",
    "UnknownKeyWarning": "errors",
    "UnknownTemplateError": "errors",
    "WarningEvent": "events",
    "append_jsonl": "storage",
    "callable_counter": "text_counters",
    "conversation_stats": "stats",
    "count_words": "text_counters",
    "detect_template": "templates",
    "dump_event": "events",
    "dumps": "wire",
    "dumps_message": "wire",
    "estimate_text_tokens": "text_counters",
    "estimate_tokens": "pruning",
    "find_orphans": "conversions",
    "find_problems": "checks",
    "fix_orphans": "conversions",
    "from_anthropic": "anthropic_messages",
    "from_chat_template": "chat_template_dicts",
    "from_openai": "openai_chat",
    "get_template": "templates",
    "huggingface_counter": "text_counters",
    "is_summary": "pruning",
    "iter_events": "events",
    "iter_jsonl": "storage",
    "load": "storage",
    "loads": "wire",
    "loads_message": "wire",
    "message_number": "ids",
    "messages_from_events": "events",
    "now_ms": "models",
    "open_async_store": "store",
    "open_store": "store",
    "parse_event": "events",
    "parse_store_url": "store",
    "plan_prune": "pruning",
    "prune": "pruning",
    "read_jsonl": "storage",
    "save": "storage",
    "save_jsonl": "storage",
    "sentencepiece_counter": "text_counters",
    "split_turns": "turns",
    "template_from_name": "templates",
    "tiktoken_counter": "text_counters",
    "to_anthropic": "anthropic_messages",
    "to_chat_template": "chat_template_dicts",
    "to_openai": "openai_chat",
    "to_orion_backend": "orion_backend",
    "tokenizer_counter": "pruning",
    "tool_call_id": "ids",
}

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
    return _exported(new_name)


def _exported(name: str) -> object:
    """The public ``name`` from its module (``_EXPORTS``), imported now if it was not yet; kept
    here, so ``__getattr__`` runs once per name."""
    value = getattr(_importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


if not TYPE_CHECKING:  # type checkers read the imports at the top, and report the old names

    def __getattr__(name: str) -> object:
        """A public name on first use (``_EXPORTS``); a deprecated alias of a renamed name
        (``_DEPRECATED``) with a ``DeprecationWarning``."""
        if name in _EXPORTS:
            return _exported(name)
        return _deprecated_alias(name)


def __dir__() -> list[str]:
    """Every public name, imported or not yet, beside the module's own attributes."""
    return sorted({*globals(), *__all__})
