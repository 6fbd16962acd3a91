"""orion-messages: orion-core's conversation format for Python.

Pydantic v2 models for every role and field, a JSON codec that reads and writes exactly what
orion-core writes, a conversation with orion-core's agent operations, atomic persistence, turn-aware pruning and
orion-core's agent events. JSON Schema export lives in ``orion_messages.schema``.
"""

from .checks import check
from .conversation import Conversation
from .errors import (
    ContextOverflowError,
    FormatError,
    OrionMessagesError,
    OrionMessagesWarning,
    Problem,
    TornLineWarning,
    UnknownKeyWarning,
)
from .events import (
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
    record_events,
)
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
from .turns import Turns, split_turns
from .wire import dumps, dumps_message, loads, loads_message

__version__ = "0.1.0"

__all__ = [
    "SUMMARY_PREFIX",
    "AgentEvent",
    "ContextConfig",
    "ContextOverflowError",
    "Conversation",
    "FormatError",
    "Message",
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
    "UnknownKeyWarning",
    "AgentEndEvent",
    "AgentStartEvent",
    "ContextBudgetEvent",
    "ErrorEvent",
    "GenerationStatsEvent",
    "MessageDeltaEvent",
    "MessageEndEvent",
    "MessageStartEvent",
    "ToolDeniedEvent",
    "ToolExecEndEvent",
    "ToolExecStartEvent",
    "ToolExecUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
    "WarningEvent",
    "messages_from_events",
    "Turns",
    "__version__",
    "append_jsonl",
    "check",
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
]
