"""JSON Schema (Draft 2020-12) for orion-core's wire format, generated from the models.

The schemas describe exactly what ``loads(strict=False)``, ``loads_message`` and
``parse_event`` accept: required keys, strict JSON types, the role enum, the signed 64-bit range
of ``timestamp``, the unsigned 32-bit range of ``token_count`` and of the events' integers,
``pending`` as an optional boolean, unknown keys allowed. Titles and descriptions come from the
models' docstrings, so the schemas cannot drift from the code. Each file stands alone: it holds
every definition it uses under ``$defs``, with the models' class names as stable names.

The checked-in copies under ``schemas/`` are regenerated with::

    python -m orion_messages.schema --out schemas/
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from ._json_rules import JSON_TYPES
from ._text import kind_of, printable
from .errors import ArgumentTypeError, ArgumentValueError, OrionMessagesError
from .events import _FIELDS_HEADING, EVENT_TYPES, AgentEvent
from .models import Message, ToolCall, ToolResult
from .storage import _read_regular, _replace_atomically, _require_path

__all__ = [
    "SCHEMA_BASE_URI",
    "SCHEMA_FILES",
    "agent_event_schema",
    "conversation_schema",
    "main",
    "message_schema",
    "tool_call_schema",
    "tool_result_schema",
    "write_schemas",
]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect every schema declares in ``$schema``."""

SCHEMA_BASE_URI = "urn:orion-messages:schema:"
"""The prefix of each schema's ``$id``; the file name follows (``...:conversation.schema.json``)."""

_CONVERSATION_DESCRIPTION = (
    "A conversation as orion-core saves it: a JSON array of messages, oldest first "
    "(serde_json's serialization of a `Vec<Message>`)."
)
_AGENT_EVENT_DESCRIPTION = (
    "One of orion-core's agent events: a JSON object whose `type` key names the variant "
    "(serde's internally tagged `AgentEvent`), one event a line in a JSON Lines stream."
)


class _WireSchema(GenerateJsonSchema):
    """Pydantic's schema generator, adjusted to describe the wire format for other languages.

    Property titles are left out (generators such as json-schema-to-typescript would turn each
    into a named type); the models' titles stay. OpenAPI's ``discriminator`` keyword is left out
    (it is not JSON Schema; each event's ``type`` is a required ``const`` instead). A field that
    holds any JSON value lists the six JSON types instead of being an empty schema, which some
    generators read as an object.
    """

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    def any_schema(self, schema: core_schema.AnySchema) -> JsonSchemaValue:
        return {"type": list(JSON_TYPES)}

    def tagged_union_schema(self, schema: core_schema.TaggedUnionSchema) -> JsonSchemaValue:
        generated = super().tagged_union_schema(schema)
        generated.pop("discriminator", None)
        return generated


def _generate(target: Any) -> dict[str, Any]:
    generated: dict[str, Any] = TypeAdapter(target).json_schema(
        mode="validation", schema_generator=_WireSchema
    )
    cleaned: dict[str, Any] = _for_other_languages(generated)
    return cleaned


def _for_other_languages(schema: Any) -> Any:
    """The wire schema without what only this library needs.

    An unknown key's value is anything (orion-core skips it unread), where the models' schema
    says any JSON value; descriptions are written for any language
    (``_described_for_other_languages``).
    """
    if isinstance(schema, list):
        return [_for_other_languages(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "additionalProperties" and isinstance(value, dict):
            value = True
        elif key == "description" and isinstance(value, str):
            value = _described_for_other_languages(value)
        result[key] = _for_other_languages(value)
    return result


_FOR_PYTHON = "In Python"
"""How a docstring paragraph for Python readers begins; schemas leave such paragraphs out."""


def _described_for_other_languages(docstring: str) -> str:
    """A docstring as a schema description: without the paragraphs for Python readers (those
    beginning ``_FOR_PYTHON`` and the field list of an event), each paragraph on one line (the
    docstring's line breaks are the source's), code marked as Markdown marks it (`msg-N`, where
    reStructuredText's docstrings write two backquotes)."""
    paragraphs = docstring.split(f"\n\n{_FIELDS_HEADING}")[0].split("\n\n")
    kept = [
        " ".join(paragraph.split("\n")) for paragraph in paragraphs if not paragraph.startswith(_FOR_PYTHON)
    ]
    return "\n\n".join(kept).replace("``", "`")


def _finish(
    name: str, body: dict[str, Any], *, title: str | None = None, description: str | None = None
) -> dict[str, Any]:
    """Put ``$schema``, ``$id``, the title and the description first, then the body, ``$defs`` last."""
    defs = body.pop("$defs", None)
    own_title = body.pop("title", None)
    own_description = body.pop("description", None)
    result: dict[str, Any] = {"$schema": DIALECT, "$id": f"{SCHEMA_BASE_URI}{name}"}
    result["title"] = title if title is not None else own_title
    result["description"] = description if description is not None else own_description
    result.update(body)
    if defs is not None:
        result["$defs"] = defs
    return result


def _require_event_tags(defs: dict[str, Any]) -> None:
    """Make each event's ``type`` a required ``const`` with no default, listed first."""
    for definition in defs.values():
        tag = definition.get("properties", {}).get("type", {})
        if tag.get("const") in EVENT_TYPES:
            tag.pop("default", None)
            required = [key for key in definition.get("required", []) if key != "type"]
            definition["required"] = ["type", *required]


def conversation_schema() -> dict[str, Any]:
    """The schema of a conversation file: a JSON array of messages."""
    return _finish(
        "conversation.schema.json",
        _generate(list[Message]),
        title="Conversation",
        description=_CONVERSATION_DESCRIPTION,
    )


def message_schema() -> dict[str, Any]:
    """The schema of one message, such as one line of a JSON Lines log."""
    return _finish("message.schema.json", _generate(Message))


def tool_call_schema() -> dict[str, Any]:
    """The schema of one tool call (an element of a message's ``tool_calls``)."""
    return _finish("tool-call.schema.json", _generate(ToolCall))


def tool_result_schema() -> dict[str, Any]:
    """The schema of one tool result (a message's ``tool_result``)."""
    return _finish("tool-result.schema.json", _generate(ToolResult))


def agent_event_schema() -> dict[str, Any]:
    """The schema of one agent event, such as one line of an event stream."""
    body = _generate(AgentEvent)
    _require_event_tags(body.get("$defs", {}))
    return _finish("agent-event.schema.json", body, title="AgentEvent", description=_AGENT_EVENT_DESCRIPTION)


SCHEMA_FILES: dict[str, Callable[[], dict[str, Any]]] = {
    "conversation.schema.json": conversation_schema,
    "message.schema.json": message_schema,
    "tool-call.schema.json": tool_call_schema,
    "tool-result.schema.json": tool_result_schema,
    "agent-event.schema.json": agent_event_schema,
}
"""Every schema file, by name, with the function that generates it."""


def render(schema: dict[str, Any]) -> bytes:
    """A schema as its checked-in file holds it: two-space indented UTF-8 JSON and a final newline.

    Raises:
        ArgumentTypeError: ``schema`` is not a dict, or holds a value JSON has no type for (a
            set, bytes, an object).
        ArgumentValueError: ``schema`` holds NaN or an infinity (which would be written as
            invalid JSON), or contains itself.
    """
    if not isinstance(schema, dict):
        raise ArgumentTypeError(f"render: schema must be a dict, got {kind_of(schema)}")
    try:  # allow_nan=False: json would otherwise write NaN, which no JSON reader accepts
        text = json.dumps(schema, indent=2, ensure_ascii=False, allow_nan=False)
    except TypeError as error:
        raise ArgumentTypeError(f"render: schema holds a value that is not JSON ({error})") from None
    except ValueError as error:
        raise ArgumentValueError(f"render: schema holds a value that is not JSON ({error})") from None
    return (text + "\n").encode()


def write_schemas(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Write every schema file into ``out_dir`` (created if missing); return the paths written.

    A file whose content is already right is left untouched; another is replaced atomically,
    as ``save`` replaces a conversation file.

    Raises:
        ArgumentTypeError: ``out_dir`` is not a str or an ``os.PathLike`` of str (bytes are
            refused: decode them with ``os.fsdecode()``).
        ArgumentValueError: ``out_dir`` is empty.
        NotADirectoryError: ``out_dir`` (or a folder above it) exists and is not a folder; an
            ``OSError`` naming the path.
        NotARegularFileError: a schema file's name in ``out_dir`` names a folder, a FIFO or a
            device.
        OSError: the folder or a file cannot be created or written.
    """
    _require_path(out_dir, "write_schemas", "out_dir")
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file (or a FIFO...) where the folder goes: say so, naming it
        raise NotADirectoryError(errno.ENOTDIR, "exists and is not a folder", os.fspath(out_dir)) from None
    written: list[Path] = []
    for name, generate in SCHEMA_FILES.items():
        path = folder / name
        data = render(generate())
        if _current(path) != data:
            _replace_atomically(path, data)
        written.append(path)
    return written


def _current(path: Path) -> bytes | None:
    """What the file at ``path`` holds, or None if there is none; a FIFO is refused, never read."""
    try:
        return _read_regular(path)
    except FileNotFoundError:
        return None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m orion_messages.schema --out DIR``: write the schema files into DIR (as
    ``orion-messages schema --out DIR`` does)."""
    parser = argparse.ArgumentParser(
        prog="python -m orion_messages.schema",
        description="Write the JSON Schema files of orion-core's wire format.",
    )
    # Required: without it, ``orion-messages schema`` prints, and this form would write into a
    # ``schemas`` folder wherever it runs.
    parser.add_argument("--out", required=True, help="the folder to write into")
    arguments = parser.parse_args(argv)
    if not arguments.out:  # the working folder: five files written where nobody asked
        parser.error("--out names no folder")
    try:
        written = write_schemas(arguments.out)
    except (OrionMessagesError, OSError) as error:  # one line, as the command line says it
        print(f"{parser.prog}: error: {printable(str(error))}", file=sys.stderr)
        return 1
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
