"""The schema of free JSON values (``_json_rules``): built once per kind, shared by every model.

Every model with an ``arguments``, ``args`` or ``parameters`` value or unknown keys holds it; it
is shared, not built again for each, so nothing pydantic does while it builds a model, a JSON
Schema or a subclass may change it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from orion_messages import _json_rules, anthropic_messages, events, openai_chat, schema, templates
from orion_messages.models import Message, ToolCall

KINDS = [_json_rules._KNOWN, _json_rules._UNKNOWN]


def _built_anew(kind: _json_rules._ValueKind) -> Any:
    return _json_rules._value_schema.__wrapped__(kind)


def test_each_kind_of_value_has_one_schema() -> None:
    for kind in KINDS:
        assert _json_rules._value_schema(kind) is _json_rules._value_schema(kind)
    assert _json_rules._value_schema(KINDS[0]) is not _json_rules._value_schema(KINDS[1])


def test_the_schema_holds_a_definition_for_each_level_below_the_top() -> None:
    for kind, prefix in zip(KINDS, ["orion-json-value", "orion-json-value-unknown"], strict=True):
        shared = _json_rules._value_schema(kind)
        assert shared["type"] == "definitions"
        assert [level["ref"] for level in shared["definitions"]] == [f"{prefix}-{n}" for n in range(120)]


class _Subclass(ToolCall, frozen=True):
    """A host's own tool call, with values of its own."""

    note: Any = None
    message: Message | None = None


def test_building_models_and_their_json_schemas_leaves_the_shared_schemas_unchanged(tmp_path: Path) -> None:
    # Every module that builds models is loaded (the imports above); then more is built here.
    schema.write_schemas(tmp_path)
    for model in (Message, ToolCall, templates.ToolSchema, events.ToolExecStartEvent, _Subclass):
        model.model_json_schema(mode="validation")
        model.model_json_schema(mode="serialization")
    TypeAdapter(list[_Subclass]).json_schema()
    TypeAdapter(openai_chat.OpenAIMessage).json_schema()
    TypeAdapter(anthropic_messages.AnthropicRequest).json_schema()
    for kind in KINDS:
        assert _json_rules._value_schema(kind) == _built_anew(kind)
