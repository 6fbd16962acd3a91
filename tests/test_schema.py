"""The JSON Schema export: checked-in files match the code, say what the reference page says,
and agree with the library on every fixture."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    FormatError,
    Message,
    NotARegularFileError,
    loads_message,
)
from orion_messages.events import parse_event
from orion_messages.schema import (
    SCHEMA_FILES,
    agent_event_schema,
    conversation_schema,
    main,
    message_schema,
    render,
    tool_call_schema,
    tool_result_schema,
    write_schemas,
)

from ._schema_agreement import (
    CANNOT_EXPRESS,
    SCHEMAS,
    discover,
    explanations,
    library_verdict,
    load_schema,
    parse_strictly,
)

REGENERATE = "orion-messages schema --out schemas/"

# Written from the reference page, not from the code.
FILES = {
    "conversation.schema.json",
    "message.schema.json",
    "tool-call.schema.json",
    "tool-result.schema.json",
    "agent-event.schema.json",
}
ROLES = ["system", "user", "assistant", "tool_call", "tool_result"]
EVENT_FIELDS = {
    "agent_start": [],
    "agent_end": ["messages"],
    "turn_start": [],
    "turn_end": ["message", "tool_results"],
    "message_start": ["message"],
    "message_delta": ["delta", "tokens_generated", "tokens_per_sec"],
    "message_end": ["message"],
    "generation_stats": [
        "tokens_generated",
        "prompt_tokens",
        "tokens_per_sec",
        "time_to_first_token_ms",
        "generation_time_ms",
    ],
    "tool_exec_start": ["tool_call_id", "tool_name", "args"],
    "tool_exec_update": ["tool_call_id", "tool_name", "partial"],
    "tool_exec_end": ["tool_call_id", "tool_name", "result"],
    "tool_denied": ["tool_call_id", "tool_name", "reason"],
    "context_budget": ["used_tokens", "max_tokens", "messages_in_context", "messages_pruned"],
    "warning": ["message"],
    "error": ["message"],
}
U32_RANGE = {"type": "integer", "minimum": 0, "maximum": 4294967295}
FLOAT_FIELDS = {"tokens_per_sec", "time_to_first_token_ms", "generation_time_ms"}
ANY_JSON = {"object", "array", "string", "number", "boolean", "null"}


def _checked_in(name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return schema


# --- the checked-in files ---------------------------------------------------------------------


def test_checked_in_schemas_are_what_the_code_generates(tmp_path: Path) -> None:
    written = write_schemas(tmp_path)
    assert {path.name for path in written} == FILES
    for path in written:
        checked_in = SCHEMAS / path.name
        assert checked_in.exists(), f"schemas/{path.name} is missing; regenerate with `{REGENERATE}`"
        assert checked_in.read_bytes() == path.read_bytes(), (
            f"schemas/{path.name} differs from what the models generate; regenerate with `{REGENERATE}`"
        )
    stray = {path.name for path in SCHEMAS.glob("*.json")} - FILES
    assert not stray, f"schemas/ holds files the code does not generate: {sorted(stray)}"


def test_the_regeneration_command_writes_every_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--out", str(tmp_path / "out")]) == 0
    assert {path.name for path in (tmp_path / "out").iterdir()} == FILES
    assert len(capsys.readouterr().out.splitlines()) == len(FILES)


def test_the_regeneration_command_says_what_is_wrong_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A traceback before: ArgumentValueError for an empty --out, NotARegularFileError for a FIFO.
    with pytest.raises(SystemExit) as stop:
        main(["--out", ""])
    assert stop.value.code == 2
    assert (
        capsys.readouterr().err.splitlines()[-1]
        == "python -m orion_messages.schema: error: --out names no folder"
    )
    # Without --out it wrote into ./schemas wherever it ran; orion-messages schema prints.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main([])
    assert stop.value.code == 2
    assert "--out" in capsys.readouterr().err.splitlines()[-1]
    assert list(tmp_path.iterdir()) == []
    os.mkfifo(tmp_path / "message.schema.json")
    assert main(["--out", str(tmp_path)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"python -m orion_messages.schema: error: {tmp_path / 'message.schema.json'}: a FIFO, not a regular file"
    ]


def test_write_schemas_leaves_right_files_untouched(tmp_path: Path) -> None:
    first = write_schemas(tmp_path)
    stamps = {path: path.stat().st_mtime_ns for path in first}
    (tmp_path / "message.schema.json").write_text("{}", encoding="utf-8")
    write_schemas(tmp_path)
    for path in first:
        if path.name != "message.schema.json":
            assert path.stat().st_mtime_ns == stamps[path]
    assert json.loads((tmp_path / "message.schema.json").read_text(encoding="utf-8"))["title"] == "Message"


@pytest.mark.parametrize(
    ("out_dir", "error", "said"),
    [
        (
            None,
            ArgumentTypeError,
            r"^write_schemas: out_dir must be a str or an os\.PathLike, got a NoneType$",
        ),
        (5, ArgumentTypeError, r"^write_schemas: out_dir must be a str or an os\.PathLike, got an int$"),
        (
            b"out",
            ArgumentTypeError,
            r"^write_schemas: out_dir must be a str or an os\.PathLike, got a bytes \(decode it with os\.fsdecode\(\)\)$",
        ),
        ("", ArgumentValueError, r"^write_schemas: out_dir is empty$"),
    ],
)
def test_write_schemas_refuses_a_bad_out_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out_dir: Any, error: type[Exception], said: str
) -> None:
    # Was pathlib's bare TypeError; "" wrote the files into the current folder.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(error, match=said):
        write_schemas(out_dir)
    assert list(tmp_path.iterdir()) == []


def test_write_schemas_into_a_file_says_it_is_not_a_folder(tmp_path: Path) -> None:
    # Was a raw FileExistsError ("File exists").
    existing = tmp_path / "existing_file"
    existing.write_bytes(b"keep")
    with pytest.raises(NotADirectoryError, match=r"exists and is not a folder: '.*existing_file'$") as raised:
        write_schemas(existing)
    assert raised.value.filename == str(existing)
    assert existing.read_bytes() == b"keep"


def test_write_schemas_refuses_a_folder_where_a_schema_file_goes(tmp_path: Path) -> None:
    # Was a raw IsADirectoryError from reading it; a FIFO there would have blocked the read.
    (tmp_path / "message.schema.json").mkdir()
    with pytest.raises(NotARegularFileError, match=r"message\.schema\.json: a folder, not a regular file$"):
        write_schemas(tmp_path)


@pytest.mark.parametrize(
    ("schema", "error", "said"),
    [
        (b"x", ArgumentTypeError, r"^render: schema must be a dict, got a bytes$"),
        ({1, 2}, ArgumentTypeError, r"^render: schema must be a dict, got a set$"),
        (
            {"x": {1, 2}},
            ArgumentTypeError,
            r"^render: schema holds a value that is not JSON \(Object of type set is not JSON serializable\)$",
        ),
        # Was written silently as NaN, which no JSON reader accepts.
        (
            {"x": float("nan")},
            ArgumentValueError,
            r"^render: schema holds a value that is not JSON \(Out of range float values are not JSON compliant",
        ),
        ({"x": float("inf")}, ArgumentValueError, r"^render: schema holds a value that is not JSON "),
    ],
)
def test_render_refuses_what_is_not_a_json_object(schema: Any, error: type[Exception], said: str) -> None:
    with pytest.raises(error, match=said):
        render(schema)


@pytest.mark.parametrize("name", sorted(FILES))
def test_each_file_is_a_valid_draft_2020_12_schema_with_an_id(name: str) -> None:
    schema = _checked_in(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"].endswith(name)
    assert schema["title"]
    assert schema["description"]


def test_ids_are_distinct() -> None:
    ids = [_checked_in(name)["$id"] for name in FILES]
    assert len(set(ids)) == len(FILES)


def test_the_functions_give_the_files() -> None:
    functions = {
        "conversation.schema.json": conversation_schema,
        "message.schema.json": message_schema,
        "tool-call.schema.json": tool_call_schema,
        "tool-result.schema.json": tool_result_schema,
        "agent-event.schema.json": agent_event_schema,
    }
    assert set(SCHEMA_FILES) == FILES
    for name, function in functions.items():
        assert function() == _checked_in(name)


# --- what they say, against the reference page ------------------------------------------------


def _objects(schema: Any) -> list[dict[str, Any]]:
    found = []
    stack = [schema]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if item.get("type") == "object":
                found.append(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_message_schema_says_what_the_wire_table_says() -> None:
    schema = _checked_in("message.schema.json")
    assert schema["type"] == "object"
    assert schema["required"] == ["id", "role", "content", "timestamp"]
    properties = schema["properties"]
    assert list(properties) == [
        "id",
        "role",
        "content",
        "timestamp",
        "tool_calls",
        "tool_result",
        "token_count",
        "pinned",
    ]
    assert properties["id"]["type"] == "string"
    assert properties["content"]["type"] == "string"
    assert schema["$defs"]["Role"]["enum"] == ROLES
    assert properties["role"]["$ref"] == "#/$defs/Role"
    timestamp = properties["timestamp"]
    assert (timestamp["type"], timestamp["minimum"], timestamp["maximum"]) == (
        "integer",
        -9223372036854775808,
        9223372036854775807,
    )
    assert properties["tool_calls"]["type"] == "array"
    assert properties["tool_calls"]["items"] == {"$ref": "#/$defs/ToolCall"}
    assert {"$ref": "#/$defs/ToolResult"} in properties["tool_result"]["anyOf"]
    assert {"type": "null"} in properties["tool_result"]["anyOf"]
    count = properties["token_count"]["anyOf"]
    assert {"type": "null"} in count
    assert count[0] == U32_RANGE
    assert properties["pinned"]["type"] == "boolean"


def test_tool_call_and_result_schemas_say_what_the_reference_says() -> None:
    call = _checked_in("tool-call.schema.json")
    assert call["required"] == ["id", "name", "arguments"]
    assert set(call["properties"]["arguments"]["type"]) == ANY_JSON
    result = _checked_in("tool-result.schema.json")
    assert result["required"] == ["tool_call_id", "tool_name", "content", "is_error"]
    assert result["properties"]["is_error"]["type"] == "boolean"
    assert result["properties"]["pending"]["type"] == "boolean"
    assert "pending" not in result["required"]


def test_conversation_is_an_array_of_messages_with_stable_def_names() -> None:
    schema = _checked_in("conversation.schema.json")
    assert schema["type"] == "array"
    assert schema["items"] == {"$ref": "#/$defs/Message"}
    assert set(schema["$defs"]) == {"Message", "ToolCall", "ToolResult", "Role"}


def test_every_object_allows_unknown_keys_and_every_field_is_described() -> None:
    for name in FILES:
        for definition in _objects(_checked_in(name)):
            assert definition.get("additionalProperties") is True, (name, definition.get("title"))
            assert definition.get("description"), (name, definition.get("title"))
            for field, subschema in definition.get("properties", {}).items():
                assert subschema.get("description"), (name, definition.get("title"), field)
                assert "title" not in subschema, "property titles would become named types in generators"


def _descriptions(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if isinstance(node.get("description"), str):
            yield node["description"]
        for value in node.values():
            yield from _descriptions(value)
    elif isinstance(node, list):
        for value in node:
            yield from _descriptions(value)


def test_descriptions_are_written_for_any_language() -> None:
    # The schemas feed TypeScript and Go generators: no reStructuredText double backquotes, no
    # notes for Python readers (immutability, constructors), no source line breaks in a paragraph.
    for name in FILES:
        for text in _descriptions(_checked_in(name)):
            assert "``" not in text, (name, text)
            assert "In Python" not in text, (name, text)
            assert all("\n" not in paragraph for paragraph in text.split("\n\n")), (name, text)
    message = _checked_in("message.schema.json")
    assert message["description"] == "One message of a conversation, exactly as orion-core serializes it."
    assert (
        message["properties"]["id"]["description"]
        == "The message id; orion-core's agent makes it `msg-N` from a counter."
    )
    assert (
        message["properties"]["timestamp"]["description"]
        == "Milliseconds since the Unix epoch (signed 64-bit); required."
    )
    arguments = message["$defs"]["ToolCall"]["properties"]["arguments"]["description"]
    assert arguments == (
        "The arguments, any JSON value (usually an object). Always written; orion-core writes "
        "object keys sorted (serde_json's map)."
    )


def test_agent_event_schema_has_the_15_variants_of_the_reference() -> None:
    schema = _checked_in("agent-event.schema.json")
    assert "discriminator" not in json.dumps(schema), "OpenAPI's discriminator is not JSON Schema"
    variants = [schema["$defs"][ref["$ref"].removeprefix("#/$defs/")] for ref in schema["oneOf"]]
    tags = [variant["properties"]["type"]["const"] for variant in variants]
    assert tags == list(EVENT_FIELDS)
    for tag, variant in zip(tags, variants, strict=True):
        assert variant["required"] == ["type", *EVENT_FIELDS[tag]], tag
        assert list(variant["properties"]) == ["type", *EVENT_FIELDS[tag]], tag
        assert "default" not in variant["properties"]["type"]
        for field in EVENT_FIELDS[tag]:
            subschema = variant["properties"][field]
            if field in FLOAT_FIELDS:
                assert subschema["type"] == "number"
            elif subschema.get("type") == "integer":
                assert {key: subschema[key] for key in U32_RANGE} == U32_RANGE
    by_tag = dict(zip(tags, variants, strict=True))
    assert by_tag["message_end"]["properties"]["message"] == {
        "$ref": "#/$defs/Message",
        "description": by_tag["message_end"]["properties"]["message"]["description"],
    }
    assert by_tag["turn_end"]["properties"]["tool_results"]["items"] == {"$ref": "#/$defs/ToolResult"}
    assert by_tag["agent_end"]["properties"]["messages"]["items"] == {"$ref": "#/$defs/Message"}
    assert by_tag["warning"]["properties"]["message"]["type"] == "string"
    assert set(by_tag["tool_exec_start"]["properties"]["args"]["type"]) == ANY_JSON
    assert by_tag["tool_exec_update"]["properties"]["partial"]["type"] == "string"
    assert by_tag["tool_exec_end"]["properties"]["result"]["$ref"] == "#/$defs/ToolResult"
    assert {"Message", "ToolCall", "ToolResult", "Role"} <= set(schema["$defs"])


# --- agreement with the library on every fixture ----------------------------------------------


def _validators() -> dict[str, jsonschema.Draft202012Validator]:
    return {
        kind: jsonschema.Draft202012Validator(load_schema(kind))
        for kind in ("conversation", "message", "event")
    }


def test_schemas_agree_with_the_library_on_every_fixture() -> None:
    cases, _too_big = discover()
    assert cases, "no fixtures found under fixtures/"
    validators = _validators()
    compared = explained = 0
    unexplained = []
    for case in cases:
        parsed = parse_strictly(case.data)
        if parsed is None:
            continue  # not well-formed JSON; see NOT_WELL_FORMED
        library_ok, library_error = library_verdict(case)
        validator = validators[case.kind]
        schema_ok = validator.is_valid(parsed.document)
        compared += 1
        if schema_ok == library_ok:
            continue
        reasons = explanations(parsed, validator.schema, library_ok, library_error)
        if reasons:
            explained += 1
            continue
        detail = library_error or "; ".join(error.message for error in validator.iter_errors(parsed.document))
        unexplained.append(
            f"{case.name}: schema {'accepts' if schema_ok else 'rejects'}, library "
            f"{'accepts' if library_ok else 'rejects'} ({detail[:200]})"
        )
    assert not unexplained, "schema and library disagree:\n" + "\n".join(unexplained)
    assert compared > explained, "nearly every fixture should be compared, not explained away"


def test_the_known_limits_are_each_seen_in_the_fixtures() -> None:
    # Each listed limit is real: some fixture shows it (or the list holds a reason never needed).
    cases, _too_big = discover()
    validators = _validators()
    seen: set[str] = set()
    for case in cases:
        parsed = parse_strictly(case.data)
        if parsed is None:
            continue
        library_ok, library_error = library_verdict(case)
        if validators[case.kind].is_valid(parsed.document) != library_ok:
            seen.update(explanations(parsed, validators[case.kind].schema, library_ok, library_error))
    # Duplicate keys: the library reads them as the schema does (last value wins) unless strict.
    assert seen == set(CANNOT_EXPRESS) - {"duplicate-keys"}, seen


# --- agreement on generated documents ---------------------------------------------------------

_JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.sampled_from([0, 1, -1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1]),
    st.floats(allow_nan=False, allow_infinity=False).filter(lambda number: not number.is_integer()),
    st.text(max_size=5),
    st.sampled_from([*ROLES, "User", "tool", ""]),
)
_ANY = st.recursive(
    _JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=6,
)


def _object(keys: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects whose keys are each present or missing, each value right-typed or anything at all."""
    return st.fixed_dictionaries({}, optional={key: value | _ANY for key, value in keys.items()})


_TOOL_CALL = _object({"id": st.text(max_size=5), "name": st.text(max_size=5), "arguments": _ANY})
_TOOL_RESULT = _object(
    {
        "tool_call_id": st.text(max_size=5),
        "tool_name": st.text(max_size=5),
        "content": st.text(max_size=5),
        "is_error": st.booleans(),
        "pending": st.booleans(),
    }
)
_MESSAGE = _object(
    {
        "id": st.text(max_size=5),
        "role": st.sampled_from(ROLES),
        "content": st.text(max_size=5),
        "timestamp": st.integers(min_value=-(2**63), max_value=2**63 - 1),
        "tool_calls": st.lists(_TOOL_CALL, max_size=2),
        "tool_result": _TOOL_RESULT | st.none(),
        "token_count": st.integers(min_value=0, max_value=2**32 - 1) | st.none(),
        "pinned": st.booleans(),
        "future_key": _ANY,
    }
)
_U32 = st.integers(min_value=0, max_value=2**32 - 1)
_FINITE = st.floats(allow_nan=False, allow_infinity=False).filter(lambda number: not number.is_integer())
_EVENT_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "messages": st.lists(_MESSAGE, max_size=2),
    "message": _MESSAGE | st.text(max_size=5),
    "tool_results": st.lists(_TOOL_RESULT | _MESSAGE, max_size=2),
    "delta": st.text(max_size=5),
    "tokens_generated": _U32,
    "prompt_tokens": _U32,
    "tokens_per_sec": _FINITE,
    "time_to_first_token_ms": _FINITE,
    "generation_time_ms": _FINITE,
    "tool_call_id": st.text(max_size=5),
    "tool_name": st.text(max_size=5),
    "args": _ANY,
    "partial": st.text(max_size=5),
    "result": _TOOL_RESULT,
    "reason": st.text(max_size=5),
    "used_tokens": _U32,
    "max_tokens": _U32,
    "messages_in_context": _U32,
    "messages_pruned": _U32,
}
_EVENT = st.sampled_from([*EVENT_FIELDS, "Warning", "tool_exec"]).flatmap(
    lambda tag: st.fixed_dictionaries(
        {"type": st.just(tag) | _ANY},
        optional={field: _EVENT_VALUES[field] | _ANY for field in EVENT_FIELDS.get(tag, [])},
    )
)


def _library_accepts(read: Any, document: Any) -> bool:
    try:
        read(json.dumps(document))
    except FormatError:
        return False
    return True


@given(_MESSAGE)
def test_message_schema_agrees_with_loads_message_on_generated_messages(document: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(_checked_in("message.schema.json"))
    assert validator.is_valid(document) == _library_accepts(loads_message, document)


@given(_EVENT)
def test_event_schema_agrees_with_parse_event_on_generated_events(document: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(_checked_in("agent-event.schema.json"))
    assert validator.is_valid(document) == _library_accepts(parse_event, document)


def test_a_host_models_schema_shows_free_values_as_any_json_value() -> None:
    # What FastAPI publishes for a response holding messages: no definitions named after the
    # library's depth levels ("orion-json-value-120"), a free value any of the six JSON types.
    from pydantic import BaseModel

    class Chat(BaseModel):
        messages: list[Message]

    generated = Chat.model_json_schema()
    any_json = ["object", "array", "string", "number", "boolean", "null"]
    assert sorted(generated["$defs"]) == ["Message", "Role", "ToolCall", "ToolResult"]
    assert generated["$defs"]["ToolCall"]["properties"]["arguments"]["type"] == any_json
    assert generated["$defs"]["Message"]["additionalProperties"] == {"type": any_json}


def test_the_regeneration_command_says_a_file_in_the_way_of_out_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    in_the_way = tmp_path / "afile"
    in_the_way.write_text("")
    assert main(["--out", str(in_the_way)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("python -m orion_messages.schema: error: ")
    assert err.count("\n") == 1
    assert "afile" in err
