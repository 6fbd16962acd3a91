"""Golden fixtures: conversations as orion-core writes them, written by hand from the reference page.

Every golden loads; compact ones dump back byte for byte, pretty ones (``*.pretty.json``) with
``indent=2``; ``*.input.json`` dumps to its ``*.expected.json``. What each loaded is checked
against the standard library's parse of the same bytes with the wire table's defaults applied,
and recorded in a syrupy snapshot. ``MANIFEST.sha256`` pins every fixture's bytes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from orion_messages import Message, Role, dumps, loads
from orion_messages.storage import read_jsonl

from .conftest import FIXTURES
from .reference_codec import reference_dumps, same, view_of_model, view_of_parsed

GOLDEN_FOLDERS = ("v0.7", "v0.8", "newer", "own", "zmij")
# Goldens spelled as serde_json before 1.0.146 (ryu) wrote floats (1e20), each with its twin as
# current serde_json (zmij) writes it (1e+20). See docs/compatibility.md.
RYU_TWINS = {
    "v0.7/edge-values.json": "zmij/edge-values.json",
    "v0.7/edge-empties.pretty.json": "zmij/edge-empties.pretty.json",
    "newer/unknown-keys.json": "zmij/unknown-keys.json",
}
MANIFEST = FIXTURES / "MANIFEST.sha256"
HOW_TO_ADD = (
    "Goldens are append-only. To add a new one, record its hash: "
    "(cd fixtures && sha256sum {path} >> MANIFEST.sha256)"
)


def _goldens() -> list[Path]:
    return sorted(path for folder in GOLDEN_FOLDERS for path in (FIXTURES / folder).glob("*.json"))


def _name(path: Path) -> str:
    return path.relative_to(FIXTURES).as_posix()


GOLDENS = _goldens()
ROUND_TRIP = [
    p for p in GOLDENS if not p.name.endswith((".pretty.json", ".input.json")) and _name(p) not in RYU_TWINS
]
PRETTY = [p for p in GOLDENS if p.name.endswith(".pretty.json") and _name(p) not in RYU_TWINS]
INPUTS = [p for p in GOLDENS if p.name.endswith(".input.json")]
PRETTY_TWINS = [
    (p, p.with_name(p.name.replace(".pretty.json", ".json")))
    for p in PRETTY
    if p.with_name(p.name.replace(".pretty.json", ".json")).exists()
]


def test_the_golden_set_covers_the_brief() -> None:
    names = {_name(path) for path in GOLDENS}
    for required in (
        "v0.7/plain-chat.json",
        "v0.7/tool-loop-parallel.json",
        "v0.7/pinned-summary.json",
        "v0.7/token-counts.json",
        "v0.7/role-tool-call.json",
        "v0.7/edge-unicode-escapes.json",
        "v0.7/edge-values.json",
        "v0.7/plain-chat.pretty.json",
        "v0.8/pending-placeholders.json",
        "newer/unknown-keys.json",
        "own/conversation.json",
    ):
        assert required in names


@pytest.mark.parametrize("path", GOLDENS, ids=_name)
def test_golden_loads_what_the_standard_library_reads(path: Path) -> None:
    raw = path.read_bytes()
    messages = loads(raw)
    parsed = json.loads(raw)
    assert len(messages) == len(parsed)
    for message, expected in zip(messages, parsed, strict=True):
        assert isinstance(message.role, Role)
        actual = view_of_model(message)
        assert same(actual, view_of_parsed(expected)), (actual, expected)


@pytest.mark.parametrize(("old", "new"), sorted(RYU_TWINS.items()))
def test_a_golden_of_the_old_float_writer_loads_and_is_written_in_todays_spelling(old: str, new: str) -> None:
    old_raw = (FIXTURES / old).read_bytes()
    new_raw = (FIXTURES / new).read_bytes()
    indent = 2 if old.endswith(".pretty.json") else None
    assert b"e+" not in old_raw
    assert b"e+" in new_raw
    assert loads(old_raw) == loads(new_raw)  # the same values
    assert dumps(loads(old_raw), indent=indent) == new_raw
    assert dumps(loads(new_raw), indent=indent, float_style="ryu") == old_raw


@pytest.mark.parametrize("path", ROUND_TRIP, ids=_name)
def test_compact_golden_dumps_back_byte_for_byte(path: Path) -> None:
    raw = path.read_bytes()
    assert dumps(loads(raw)) == raw


@pytest.mark.parametrize("path", ROUND_TRIP, ids=_name)
def test_compact_golden_is_what_the_reference_writer_writes(path: Path) -> None:
    # The goldens were written by hand; this checks them (and the loader) against the wire table.
    raw = path.read_bytes()
    assert reference_dumps(loads(raw)) == raw


@pytest.mark.parametrize("path", PRETTY, ids=_name)
def test_pretty_golden_dumps_back_with_indent_2(path: Path) -> None:
    raw = path.read_bytes()
    messages = loads(raw)
    assert dumps(messages, indent=2) == raw
    assert reference_dumps(messages, indent=2) == raw


@pytest.mark.parametrize(("pretty", "compact"), PRETTY_TWINS, ids=[_name(p) for p, _ in PRETTY_TWINS])
def test_pretty_golden_holds_the_same_conversation_as_its_compact_twin(pretty: Path, compact: Path) -> None:
    assert len(PRETTY_TWINS) >= 3
    assert dumps(loads(pretty.read_bytes())) == compact.read_bytes()


@pytest.mark.parametrize("path", INPUTS, ids=_name)
def test_unknown_keys_among_known_ones_are_written_after_them(path: Path) -> None:
    expected = path.with_name(path.name.replace(".input.json", ".expected.json"))
    assert dumps(loads(path.read_bytes())) == expected.read_bytes()


@pytest.mark.parametrize("path", GOLDENS, ids=_name)
def test_golden_snapshot(path: Path, snapshot: SnapshotAssertion) -> None:
    assert [message.model_dump() for message in loads(path.read_bytes())] == snapshot


def test_unknown_keys_survive_at_every_level() -> None:
    messages = loads((FIXTURES / "newer/unknown-keys.json").read_bytes())
    assert messages[0].model_extra == {
        "x_origin": "web",
        "x_meta": {"b": 2, "a": [1, 2.5, None, True, "s", {}]},
    }
    assert messages[1].tool_calls[0].model_extra == {"x_timeout_ms": 30000, "x_retry": None}
    result = messages[2].tool_result
    assert result is not None
    assert result.model_extra == {"x_progress": 0.5, "x_big": 123456789012345678901234567890}
    assert result.pending is True


def test_old_files_read_pending_as_false() -> None:
    for path in (FIXTURES / "v0.7").glob("*.json"):
        for message in loads(path.read_bytes()):
            if message.tool_result is not None:
                assert message.tool_result.pending is False
                assert not message.is_pending


def test_edge_values_keep_int_float_and_big_integers() -> None:
    messages = loads((FIXTURES / "v0.7/edge-values.json").read_bytes())
    assert messages[0].timestamp == -(2**63)
    assert messages[1].timestamp == 2**63 - 1
    assert messages[1].token_count == 2**32 - 1
    calls = {call.name: call.arguments for call in messages[5].tool_calls}
    integers = calls["integers"]
    assert integers["beyond"] == 2**64
    assert integers["huge"] == 123456789012345678901234567890
    assert type(calls["float"]) is float
    assert type(calls["number"]) is int
    assert calls["floats"]["big"] == 1e20
    order = loads((FIXTURES / "v0.7/host-arguments-order.json").read_bytes())[1].tool_calls[0].arguments
    assert list(order) == ["z", "y", "x", "b", "a", "m", "l", "k"]
    assert type(order["z"]) is int
    assert type(order["y"]) is float


def test_float_exponent_spelled_otherwise_keeps_its_value() -> None:
    # Another writer may spell 1e20 as 1e20 or 1E20; the value survives, serde's spelling is written.
    for spelling in (b"1e20", b"1e+20", b"1E20", b"1.0e20", b"100000000000000000000.0"):
        raw = (
            b'[{"id":"m","role":"assistant","content":"","timestamp":1,"tool_calls":'
            b'[{"id":"c","name":"n","arguments":' + spelling + b"}]}]"
        )
        (message,) = loads(raw)
        assert message.tool_calls[0].arguments == 1e20
        assert dumps([message]).endswith(b'"arguments":1e+20}]}]')


def _own_conversation() -> list[Message]:
    from orion_messages import ToolCall

    start = 1781600000000
    return [
        Message.system("msg-1", "You are Orion's helper.", timestamp=start),
        Message.user("msg-2", "List the files, please.", timestamp=start + 1000).pin(),
        Message.assistant(
            "msg-3",
            "",
            [ToolCall(id="msg-3-call-1", name="list_dir", arguments={"path": ".", "depth": 2})],
            timestamp=start + 2000,
        ),
        Message.tool_result_message(
            "msg-4", "msg-3-call-1", "list_dir", "README.md\nsrc/", timestamp=start + 2100
        ),
        Message.assistant(
            "msg-5",
            "Reading two files and starting a scan.",
            [
                ToolCall(id="msg-5-call-1", name="read_file", arguments={"path": "README.md"}),
                ToolCall(id="msg-5-call-2", name="read_file", arguments={"path": "missing.txt"}),
                ToolCall(id="msg-5-call-3", name="scan", arguments=None),
            ],
            timestamp=start + 3000,
        ),
        Message.tool_result_message(
            "msg-6", "msg-5-call-1", "read_file", "# Orion\n", timestamp=start + 3100
        ),
        Message.tool_result_message(
            "msg-7", "msg-5-call-2", "read_file", "not found: missing.txt", True, timestamp=start + 3200
        ),
        Message.pending_result("msg-8", "msg-5-call-3", "scan", timestamp=start + 3300),
        Message.assistant(
            "msg-9",
            "Found README.md (café ✓ 😀); missing.txt does not exist; the scan is still running.",
            timestamp=start + 4000,
        )
        .with_token_count(27)
        .pin(),
    ]


def test_own_output_is_the_committed_golden() -> None:
    assert dumps(_own_conversation()) == (FIXTURES / "own/conversation.json").read_bytes()


def test_own_output_loads_back_equal() -> None:
    assert loads((FIXTURES / "own/conversation.json").read_bytes()) == _own_conversation()


def test_own_jsonl_golden_reads_back_equal() -> None:
    assert read_jsonl(FIXTURES / "own/conversation.jsonl") == _own_conversation()


def test_own_jsonl_golden_is_what_append_jsonl_writes(tmp_path: Path) -> None:
    from orion_messages import append_jsonl

    log = tmp_path / "log.jsonl"
    for message in _own_conversation():
        append_jsonl(log, message, fsync=False)
    assert log.read_bytes() == (FIXTURES / "own/conversation.jsonl").read_bytes()


def _manifest() -> dict[str, str]:
    entries: dict[str, str] = {}
    for number, line in enumerate(MANIFEST.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        digest, sep, name = line.partition("  ")
        assert sep, f"MANIFEST.sha256 line {number} is not 'sha256  path': {line!r}"
        assert len(digest) == 64, f"MANIFEST.sha256 line {number} is not 'sha256  path': {line!r}"
        assert name not in entries, f"MANIFEST.sha256 lists {name} twice"
        entries[name] = digest
    return entries


def _pinned_files() -> list[str]:
    names = []
    for path in FIXTURES.rglob("*"):
        if not path.is_file() or path == MANIFEST:
            continue
        if path.parent.name == "invalid" and path.name.startswith("hostile-"):
            continue  # the reliability suite's own files
        names.append(_name(path))
    return sorted(names)


def test_manifest_pins_every_golden() -> None:
    entries = _manifest()
    for name, digest in entries.items():
        path = FIXTURES / name
        assert path.exists(), f"the golden {name} was removed; goldens are append-only"
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        assert actual == digest, (
            f"the golden {name} was edited; goldens are append-only (add a new one instead)"
        )


def test_every_fixture_is_in_the_manifest() -> None:
    missing = [name for name in _pinned_files() if name not in _manifest()]
    assert not missing, (
        "not in fixtures/MANIFEST.sha256: "
        + ", ".join(missing)
        + ". "
        + HOW_TO_ADD.format(path=" ".join(missing))
    )
