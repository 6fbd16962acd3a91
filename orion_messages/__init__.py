"""orion-messages: orion-core's conversation format for Python.

Pydantic v2 models for every role and field, a JSON codec that reads and writes exactly what
orion-core writes, a conversation with orion-core's agent operations, atomic persistence, turn-aware pruning and
orion-core's agent events. JSON Schema export lives in ``orion_messages.schema``.
"""

from .anthropic_messages import from_anthropic, to_anthropic
from .chat_template_dicts import from_chat_template, to_chat_template
from .checks import check
from .conversation import Conversation
from .conversions import ConversionResult, Loss, Orphan, OrphanPolicy, find_orphans, fix_orphans
from .errors import (
    ContextOverflowError,
    ConversionError,
    FormatError,
    OrionMessagesError,
    OrionMessagesWarning,
    Problem,
    TornLineWarning,
)
from .events import AgentEvent, dump_event, iter_events, parse_event, record_events
from .models import Message, Role, ToolCall, ToolResult
from .openai_chat import from_openai, to_openai
from .orion_backend import to_orion_backend
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
    "ConversionError",
    "ConversionResult",
    "Loss",
    "Orphan",
    "OrphanPolicy",
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
    "Turns",
    "__version__",
    "append_jsonl",
    "check",
    "dumps",
    "dump_event",
    "dumps_message",
    "estimate_tokens",
    "find_orphans",
    "fix_orphans",
    "from_anthropic",
    "from_chat_template",
    "from_openai",
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
    "to_anthropic",
    "to_chat_template",
    "to_openai",
    "to_orion_backend",
    "tokenizer_counter",
]
