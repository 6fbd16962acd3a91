"""orion-messages: orion-core's conversation format for Python.

Pydantic v2 models for every role and field, a JSON codec that reads and writes exactly what
orion-core writes, a conversation with orion-core's agent operations, and atomic persistence.
"""

from .conversation import Conversation, Turns, check, split_turns
from .errors import FormatError, Problem
from .models import Message, Role, ToolCall, ToolResult
from .storage import append_jsonl, load, read_jsonl, save
from .wire import dumps, dumps_message, loads, loads_message

__version__ = "0.1.0"

__all__ = [
    "Conversation",
    "FormatError",
    "Message",
    "Problem",
    "Role",
    "ToolCall",
    "ToolResult",
    "Turns",
    "__version__",
    "append_jsonl",
    "check",
    "dumps",
    "dumps_message",
    "load",
    "loads",
    "loads_message",
    "read_jsonl",
    "save",
    "split_turns",
]
