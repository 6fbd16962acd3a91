"""The schemas used for real from another language: ajv validates every fixture with the same
verdicts as the library, and json-schema-to-typescript's types compile under ``tsc --strict``
in a program that reads golden fixtures through them.

Needs Node 20 and ``npm ci --prefix interop``. Without ``interop/node_modules`` these tests skip,
and fail when the ``CI`` environment variable is set.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from orion_messages import FormatError, loads
from orion_messages.events import iter_events, messages_from_events
from orion_messages.schema import SCHEMA_FILES

from ._schema_agreement import (
    SCHEMA_FILE,
    SCHEMAS,
    discover,
    explanations,
    has_integer_beyond_double,
    has_non_finite,
    library_verdict,
    load_schema,
    parse_strictly,
)
from .conftest import FIXTURES, GOLDEN_CONVERSATIONS, skip_or_fail_in_ci

INTEROP = Path(__file__).resolve().parent.parent / "interop"

DOUBLE_PRECISION = (
    "an integer beyond 2^53 (such as a timestamp near the i64 bounds): JavaScript numbers are "
    "doubles, so ajv compares a rounded value with the rounded bounds and can accept 2^63"
)
"""The one limit ajv adds to the ones JSON Schema has (see ``CANNOT_EXPRESS``)."""

# Golden conversations the TypeScript program reads (all exist: fixtures are append-only), and
# the hand-written event stream.
TS_GOLDENS = [
    "v0.7/tool-loop-parallel.json",
    "v0.7/pinned-summary.json",
    "v0.7/role-tool-call.json",
    "v0.8/pending-mixed.json",
    "newer/unknown-keys.json",
]
TS_STREAM = "events/tool-loop-denied-error.tool-results.jsonl"


@pytest.fixture(scope="module")
def node() -> str:
    """The node executable, with the interop packages installed; skip (or fail in CI) without them."""
    executable = shutil.which("node")
    missing = None
    if executable is None:
        missing = "node is not installed"
    elif not (INTEROP / "node_modules" / "ajv").is_dir():
        missing = "interop/node_modules is missing: run `npm ci --prefix interop`"
    if missing is not None:
        skip_or_fail_in_ci(missing)
    assert executable is not None
    return executable


def _run(command: list[str], *, stdin: str | None = None) -> str:
    completed = subprocess.run(
        command, cwd=INTEROP, input=stdin, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode == 0, f"{' '.join(command)} failed:\n{completed.stdout}\n{completed.stderr}"
    return completed.stdout


@pytest.fixture(scope="module")
def ajv_verdicts(node: str) -> dict[tuple[str, int | None], dict[str, Any]]:
    """ajv's verdict on every fixture case, by file and line."""
    cases, _too_big = discover()
    ids = {kind: load_schema(kind)["$id"] for kind in SCHEMA_FILE}
    paths = sorted({(case.path, case.kind) for case in cases})
    request = {
        "schemas": [str(SCHEMAS / name) for name in SCHEMA_FILES],
        "items": [
            {"path": str(path), "schema": ids[kind], "lines": path.suffix == ".jsonl"} for path, kind in paths
        ],
    }
    results = json.loads(_run([node, "validate.mjs"], stdin=json.dumps(request)))
    return {(result["path"], result["line"]): result for result in results}


def test_ajv_agrees_with_the_library_on_every_fixture(
    ajv_verdicts: dict[tuple[str, int | None], dict[str, Any]],
) -> None:
    verdicts = ajv_verdicts
    cases, _too_big = discover()
    assert cases, "no fixtures found under fixtures/"
    compared = 0
    unexplained = []
    for case in cases:
        result = verdicts.get((str(case.path), case.line))
        assert result is not None, f"validate.mjs gave no verdict for {case.name}"
        parsed = parse_strictly(case.data)
        if parsed is None:
            continue  # not well-formed JSON; see NOT_WELL_FORMED
        assert result["verdict"] in ("valid", "invalid"), (case.name, result)
        compared += 1
        ajv_ok = result["verdict"] == "valid"
        library_ok, library_error = library_verdict(case)
        if ajv_ok == library_ok:
            continue
        if explanations(parsed, load_schema(case.kind), library_ok, library_error):
            continue
        if ajv_ok and has_integer_beyond_double(parsed.document):
            continue  # DOUBLE_PRECISION
        unexplained.append(
            f"{case.name}: ajv {'accepts' if ajv_ok else 'rejects'} {result['errors'][:3]}, library "
            f"{'accepts' if library_ok else 'rejects'} ({library_error[:200]})"
        )
    assert not unexplained, "ajv and the library disagree:\n" + "\n".join(unexplained)
    assert compared > 0


def test_ajv_and_python_jsonschema_agree_but_for_doubles(
    ajv_verdicts: dict[tuple[str, int | None], dict[str, Any]],
) -> None:
    # Two implementations of one schema: they differ only where numbers do. ajv holds numbers as
    # doubles, and its "number" type refuses Infinity (1e400 parsed) where Python's accepts it.
    import jsonschema

    verdicts = ajv_verdicts
    cases, _too_big = discover()
    validators = {kind: jsonschema.Draft202012Validator(load_schema(kind)) for kind in SCHEMA_FILE}
    differ = []
    for case in cases:
        parsed = parse_strictly(case.data)
        if parsed is None:
            continue
        ajv_ok = verdicts[(str(case.path), case.line)]["verdict"] == "valid"
        python_ok = validators[case.kind].is_valid(parsed.document)
        if ajv_ok == python_ok or has_non_finite(parsed.document):
            continue
        if not (ajv_ok and has_integer_beyond_double(parsed.document)):
            differ.append(case.name)
    assert not differ, differ


def test_ajv_accepts_2_pow_63_as_documented(
    ajv_verdicts: dict[tuple[str, int | None], dict[str, Any]],
) -> None:
    # The documented imprecision is real: the library refuses a timestamp of 2^63, ajv cannot.
    case = FIXTURES / "invalid" / "timestamp-2-pow-63.json"
    result = ajv_verdicts[(str(case), None)]
    assert result["verdict"] == "valid"


@pytest.fixture(scope="module")
def reader(node: str) -> list[str]:
    """Generate the TypeScript types, compile the reader with tsc --strict; the command to run it."""
    _run([node, "gen-types.mjs", str(SCHEMAS), "generated"])
    for name in ("conversation.d.ts", "agent-event.d.ts"):
        assert (INTEROP / "generated" / name).is_file()
    tsc = str(INTEROP / "node_modules" / "typescript" / "bin" / "tsc")
    _run([node, tsc, "-p", ".", "--strict"])
    return [node, str(INTEROP / "build" / "reader.js"), str(SCHEMAS)]


def test_the_generated_types_are_as_strict_as_the_schema(reader: list[str]) -> None:
    declarations = (INTEROP / "generated" / "conversation.d.ts").read_text(encoding="utf-8")
    assert 'export type Role = "system" | "user" | "assistant" | "tool_call" | "tool_result";' in declarations
    assert "export type Conversation = Message[];" in declarations
    # One TypeScript name per schema type: a described "$ref" no longer makes a numbered copy.
    events = (INTEROP / "generated" / "agent-event.d.ts").read_text(encoding="utf-8")
    names = re.findall(r"^export (?:interface|type) (\w+)", declarations + events, re.MULTILINE)
    assert [name for name in names if name[-1].isdigit()] == []
    assert "export interface TurnEndEvent {" in events
    assert re.search(
        r"type: \"turn_end\";\n  message: Message;\n(?:  /\*\*\n(?:   \*.*\n)+)?  tool_results: ToolResult\[\];",
        events,
    )
    # reader.ts holds lines that must not compile (@ts-expect-error); tsc passing means they did not.
    source = (INTEROP / "reader.ts").read_text(encoding="utf-8")
    assert source.count("// @ts-expect-error") == 6


def _python_summary(path: Path) -> list[dict[str, Any]]:
    summary = []
    for message in loads(path.read_bytes()):
        result = message.tool_result
        summary.append(
            {
                "id": message.id,
                "role": message.role.value,
                "turnStart": message.role.value == "user",
                "calls": [call.name for call in message.tool_calls],
                "result": None
                if result is None
                else {
                    "tool_call_id": result.tool_call_id,
                    "is_error": result.is_error,
                    "pending": result.pending,
                },
                "token_count": message.token_count,
                "pinned": message.pinned,
            }
        )
    return summary


def test_typescript_reads_the_goldens_as_the_library_does(reader: list[str]) -> None:
    files = [str(FIXTURES / name) for name in (*TS_GOLDENS, TS_STREAM)]
    output = json.loads(_run([*reader, *files]))
    for name in TS_GOLDENS:
        assert output[str(FIXTURES / name)] == _python_summary(FIXTURES / name), name
    recorded = messages_from_events(iter_events(FIXTURES / TS_STREAM))
    assert output[str(FIXTURES / TS_STREAM)] == [
        {"id": message.id, "token_count": message.token_count} for message in recorded
    ]


@pytest.mark.parametrize(
    ("name", "data", "said"),
    [
        (
            "bad-utf8.json",
            b'[{"id":"m\xff","role":"user","content":"","timestamp":0}]',
            "bad-utf8.json: not UTF-8",
        ),
        ("nbsp-line.jsonl", b'{"type":"agent_start"}\n\xc2\xa0\n', "SyntaxError"),  # JSON.parse's
    ],
    ids=["invalid-utf8", "nbsp-line"],
)
def test_the_typescript_reader_refuses_what_orion_core_refuses(
    reader: list[str], tmp_path: Path, name: str, data: bytes, said: str
) -> None:
    # orion-core refuses both: invalid UTF-8 (the reference: "[is] rejected"), and a line of
    # U+00A0, which is not JSON whitespace. The reader must not take them quietly.
    path = tmp_path / name
    path.write_bytes(data)
    completed = subprocess.run(
        [*reader, str(path)], cwd=INTEROP, capture_output=True, text=True, timeout=300, check=False
    )
    assert completed.returncode != 0, completed.stdout
    assert said in completed.stderr


def _js_value(value: Any) -> Any:
    """A parsed JSON value as ``JSON.stringify`` writes it back: every number a double with the
    sign of zero dropped (``-0.0`` is written ``0``), compared by its spelling so that the sign
    counts, and an object's integer-like keys first, in ascending order (ECMAScript's property
    order)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return repr(float(value) + 0.0)  # -0.0 + 0.0 is 0.0; every other double is unchanged
    if isinstance(value, list):
        return [_js_value(item) for item in value]
    index_like = sorted(
        (key for key in value if re.fullmatch(r"0|[1-9][0-9]{0,9}", key) and int(key) < 2**32 - 1), key=int
    )
    order = index_like + [key for key in value if key not in index_like]
    return [(key, _js_value(value[key])) for key in order]


INDEX_LIKE_KEYS = b'[{"id":"m","role":"assistant","content":"","timestamp":1,"tool_calls":[{"id":"c","name":"n","arguments":{"b":1,"10":2,"2":3,"-1":4,"01":5}}]}]'
"""Argument keys that JavaScript reorders: ``"2"`` and ``"10"`` are array-index-like."""


def test_json_stringify_writes_back_what_the_page_says(node: str, tmp_path: Path) -> None:
    """Unknown keys and key order are kept (integer-like keys first), numbers pass through
    doubles: a conversation whose integers all fit in 2^53 loads again with the same values as
    doubles, and one with a timestamp near the i64 bounds comes back out of range."""
    reordered = tmp_path / "index-like-keys.json"
    reordered.write_bytes(INDEX_LIKE_KEYS)
    goldens = [FIXTURES / golden for golden in GOLDEN_CONVERSATIONS] + [reordered]
    written = _run([node, "rewrite.mjs", *map(str, goldens)]).encode().split(b"\n")[:-1]
    assert len(written) == len(goldens)
    refused = []
    for golden, again in zip(goldens, written, strict=True):
        original = json.loads(golden.read_bytes())
        assert _js_value(json.loads(again)) == _js_value(original), golden.name
        try:
            loads(again)
        except FormatError:
            refused.append(golden.relative_to(FIXTURES).as_posix())
    assert b'"arguments":{"2":3,"10":2,"b":1,"-1":4,"01":5}' in written[-1]
    edge_values = goldens.index(FIXTURES / "v0.7/edge-values.json")
    assert b'"negzero":0,' in written[edge_values]  # the sign of zero, dropped
    assert refused == [
        golden
        for golden in GOLDEN_CONVERSATIONS
        if any(abs(m["timestamp"]) > 2**53 for m in json.loads((FIXTURES / golden).read_bytes()))
    ]
    assert refused  # the goldens hold such timestamps, so the check above sees both outcomes
