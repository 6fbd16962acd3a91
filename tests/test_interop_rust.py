"""orion-messages against serde itself: orion-core's wire types, as the format reference
describes them (``interop/rust``), compiled with serde and serde_json and run on the golden
fixtures, on generated conversations and on thousands of mutated documents.

serde reads and writes; orion-messages must accept what serde accepts (with the exceptions
docs/compatibility.md lists), report malformed JSON where serde_json reports it, and write back
the bytes serde writes for the values orion-core keeps (unknown keys dropped, ``arguments``
keys sorted, integers past 64 bits as floats: the reference's facts).

The crates are Debian's (``librust-serde-json-dev``, ``librust-serde-derive-dev``), built
offline: their serde_json (1.0.87 on Debian 12) predates 1.0.146, so it writes floats the old
way (``1e16``) and is compared with ``float_style="ryu"`` (``"zmij"`` from 1.0.146 on).
Without cargo or the crates these tests skip, and fail when the ``CI`` environment variable is
set.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from pydantic import BaseModel

from orion_messages import FormatError, Message, dumps, loads, loads_message
from orion_messages.events import dump_event, duplicate_event_key_problems, parse_event
from orion_messages.wire import FloatStyle, duplicate_key_problems

from .conftest import FIXTURES, GOLDEN_CONVERSATIONS, GOLDEN_STREAMS, record_lines, skip_or_fail_in_ci
from .strategies import conversations

ROOT = Path(__file__).resolve().parent.parent
CRATES = Path("/usr/share/cargo/registry")
"""Where Debian's ``librust-*-dev`` packages put the crates' sources."""

I64_MIN, U64_MAX = -(2**63), 2**64 - 1


SERDE_ACCEPTS_REFUSED_HERE = {
    "hostile-arguments-121-deep.json": "arguments nested 121 to 124 levels",
    "hostile-role-as-map.json": "a role written as a map, which orion-core never writes",
    "hostile-struct-as-array.json": "a message written as an array, which orion-core never writes",
}
"""The fixtures in ``fixtures/invalid`` that serde reads: docs/compatibility.md lists each."""

_POSITION = re.compile(r" at line (\d+) column (\d+)$")
_TYPE_ERRORS = (
    "invalid type",
    "invalid value",
    "invalid length",
    "missing field",
    "unknown variant",
    "duplicate field",
)
"""serde's errors about types, which come after the JSON is read: reported here by path."""


@dataclass(frozen=True)
class Serde:
    """The built ``orion-serde`` program (see ``interop/rust/src/main.rs``)."""

    program: Path
    serde_json: str
    """The serde_json version the program was built with."""

    @property
    def float_style(self) -> FloatStyle:
        """How that serde_json spells floats: ryu before 1.0.146, zmij from it on."""
        version = tuple(int(part) for part in self.serde_json.split(".")[:3])
        return "zmij" if version >= (1, 0, 146) else "ryu"

    def conversation(self, data: bytes, *, pretty: bool = False) -> bytes | str:
        """What serde writes back, or its error text."""
        command = [str(self.program), "conversation", *(["--pretty"] if pretty else [])]
        completed = subprocess.run(command, input=data, capture_output=True, timeout=60, check=False)
        return completed.stdout if completed.returncode == 0 else completed.stderr.decode().strip()

    def each_line(self, mode: str, documents: list[bytes]) -> list[bytes | str]:
        """For each one-line document: what serde writes back, or its error text."""
        assert all(b"\n" not in document for document in documents)
        completed = subprocess.run(
            [str(self.program), mode],
            input=b"".join(document + b"\n" for document in documents),
            capture_output=True,
            timeout=300,
            check=True,
        )
        answers = completed.stdout.split(b"\n")[:-1]
        assert len(answers) == len(documents)
        return [str(json.loads(answer[1:])) if answer.startswith(b"!") else answer for answer in answers]


@pytest.fixture(scope="module")
def serde(tmp_path_factory: pytest.TempPathFactory) -> Serde:
    missing = None
    if shutil.which("cargo") is None:
        missing = "cargo is not installed (Debian's cargo)"
    elif not list(CRATES.glob("serde_json-1.*")) or not list(CRATES.glob("serde_derive-1.*")):
        missing = "Debian's serde crates are missing: apt-get install librust-serde-json-dev librust-serde-derive-dev"
    if missing is not None:
        skip_or_fail_in_ci(missing)
    folder = tmp_path_factory.mktemp("rust") / "orion-serde"
    shutil.copytree(ROOT / "interop" / "rust", folder)
    offline = ["--offline", "--config", 'source.crates-io.replace-with="debian"']
    offline += ["--config", f'source.debian.directory="{CRATES}"']
    completed = subprocess.run(
        ["cargo", "build", "--quiet", *offline],
        cwd=folder,
        env={**os.environ, "CARGO_TARGET_DIR": str(folder / "target")},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lock = (folder / "Cargo.lock").read_text(encoding="utf-8")
    version = re.search(r'name = "serde_json"\nversion = "([^"]+)"', lock)
    assert version is not None
    return Serde(folder / "target" / "debug" / "orion-serde", version.group(1))


def _as_serde_reads(value: Any) -> Any:
    """A free JSON value as orion-core keeps it: object keys sorted (serde_json's map without
    ``preserve_order``), integers past 64 bits as floats (the reference's facts)."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, float)):
        return value
    if isinstance(value, int):
        return value if I64_MIN <= value <= U64_MAX else float(value)
    if isinstance(value, list):
        return [_as_serde_reads(item) for item in value]
    return {key: _as_serde_reads(value[key]) for key in sorted(value)}


def _kept(value: Any) -> Any:
    """What orion-core keeps of a model it reads: its known fields (unknown keys are lost)."""
    if isinstance(value, BaseModel):
        model = type(value)
        return model.model_validate({name: _kept(getattr(value, name)) for name in model.model_fields})
    if isinstance(value, tuple):
        return tuple(_kept(item) for item in value)
    return _as_serde_reads(value)


def _written_back(serde: Serde, messages: list[Message], *, pretty: bool = False) -> bytes:
    """What orion-core writes when it saves ``messages`` again, as this library writes it."""
    kept = [_kept(message) for message in messages]
    return dumps(kept, indent=2 if pretty else None, float_style=serde.float_style)


@pytest.mark.parametrize("pretty", [False, True], ids=["compact", "pretty"])
@pytest.mark.parametrize("golden", GOLDEN_CONVERSATIONS)
def test_goldens_written_back_as_serde_writes_them(serde: Serde, golden: str, pretty: bool) -> None:
    data = (FIXTURES / golden).read_bytes()
    assert _written_back(serde, loads(data), pretty=pretty) == serde.conversation(data, pretty=pretty)


def _within_64_bits(value: Any) -> Any:
    """Integers past 64 bits folded in: serde_json reads them as floats from their first 19 or
    20 digits, not always the nearest double (the reference's facts)."""
    if isinstance(value, bool) or not isinstance(value, (int, list, dict)):
        return value
    if isinstance(value, int):
        return value % U64_MAX if not I64_MIN <= value <= U64_MAX else value
    if isinstance(value, list):
        return [_within_64_bits(item) for item in value]
    return {key: _within_64_bits(item) for key, item in value.items()}


def _arguments_within_64_bits(message: Message) -> Message:
    calls = tuple(
        call.model_copy(update={"arguments": _within_64_bits(call.arguments)}) for call in message.tool_calls
    )
    return message.model_copy(update={"tool_calls": calls})


@settings(max_examples=60, deadline=None)
@given(generated=conversations(floats=False, max_size=4))
def test_generated_conversations_written_as_serde_writes_them(serde: Serde, generated: list[Message]) -> None:
    """Any messages (unknown keys, every role and optional field, escapes, big integers), floats
    left to the goldens: serde_json reads a 17-digit float to the nearest double or one off."""
    messages = [_arguments_within_64_bits(message) for message in generated]
    (written,) = serde.each_line("conversation-lines", [dumps(messages)])
    assert written == _written_back(serde, messages)
    assert serde.conversation(dumps(messages), pretty=True) == _written_back(serde, messages, pretty=True)


def _our_verdict(data: bytes) -> FormatError | None:
    """This library's verdict as serde's: a repeated known key refused (serde's "duplicate field")."""
    try:
        loads(data)
    except FormatError as error:
        return error
    repeated = duplicate_key_problems(data)
    return FormatError(repeated) if repeated else None


@pytest.mark.filterwarnings("ignore::orion_messages.UnknownKeyWarning")
@pytest.mark.parametrize("name", sorted(path.name for path in (FIXTURES / "invalid").glob("*.json")))
def test_invalid_fixtures_refused_as_serde_refuses_them(serde: Serde, name: str) -> None:
    data = (FIXTURES / "invalid" / name).read_bytes()
    serde_refuses = isinstance(serde.conversation(data), str)
    refused_here = _our_verdict(data) is not None
    if name in SERDE_ACCEPTS_REFUSED_HERE:
        assert (serde_refuses, refused_here) == (False, True), SERDE_ACCEPTS_REFUSED_HERE[name]
    elif name == "hostile-1e400-in-unknown-key.json":  # serde skips the value unread; left out here
        assert (serde_refuses, refused_here) == (False, False)
    else:
        assert (serde_refuses, refused_here) == (True, True)


_MUTATIONS = [b"-0", b"0", b"1e400", b"null", b'"', b"\\", b"{", b"}", b"[", b"]", b",", b":", b"1.0", b"-"]
_MUTATIONS += [b"\\u", b"\\ud800", b'"x":1', b"true", b" ", b"\xff", b"\x00", b"1e3", b"18446744073709551616"]
_MUTATIONS += [b"4294967296", b"-1", b'"role":"user"', b'"pinned":true', b'"id":"a"', b"\\q", b"\x1f"]


def _mutated(rng: random.Random, document: bytes, *, extra: list[bytes] | None = None) -> bytes:
    """``document`` with one to three bytes runs deleted, inserted or replaced, on one line."""
    tokens = _MUTATIONS + (extra or [])
    data = bytearray(document)
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(len(data) + 1)
        choice = rng.random()
        if choice < 0.3 and len(data) > 1:
            del data[at : at + rng.randint(1, 4)]
        elif choice < 0.7:
            data[at:at] = rng.choice(tokens)
        else:
            data[at : at + rng.randint(1, 3)] = rng.choice(tokens)
    return bytes(data).replace(b"\n", b" ")


@pytest.mark.filterwarnings("ignore::orion_messages.UnknownKeyWarning")
def test_mutated_goldens_accepted_and_refused_as_serde_does(serde: Serde) -> None:
    goldens = [(FIXTURES / golden).read_bytes() for golden in GOLDEN_CONVERSATIONS]
    rng = random.Random(20261204)
    documents = [_mutated(rng, rng.choice(goldens)) for _ in range(3000)]
    disagreements = [
        (document, answer)
        for document, answer in zip(documents, serde.each_line("conversation-lines", documents), strict=True)
        if isinstance(answer, str) != (_our_verdict(document) is not None)
    ]
    assert disagreements == []


@pytest.mark.filterwarnings("ignore::orion_messages.UnknownKeyWarning")
def test_mutated_log_records_accepted_and_refused_as_serde_does(serde: Serde) -> None:
    """A JSON Lines record is one message: ``loads_message``'s verdicts on 3,000 mutated ones."""
    records = [
        message for golden in GOLDEN_CONVERSATIONS for message in json.loads((FIXTURES / golden).read_bytes())
    ]
    rng = random.Random(20261204)
    documents = [_mutated(rng, json.dumps(rng.choice(records)).encode()) for _ in range(3000)]
    disagreements = [
        (document, answer)
        for document, answer in zip(documents, serde.each_line("message-lines", documents), strict=True)
        if isinstance(answer, str) != (_our_record_verdict(document) is not None)
    ]
    assert disagreements == []


def _our_record_verdict(record: bytes) -> FormatError | None:
    """``loads_message``'s verdict, a repeated known key refused (``strict=True``: a record alone
    has no conversation to check)."""
    try:
        loads_message(record, strict=True)
    except FormatError as error:
        return error
    return None


def _faults(document: bytes) -> list[bytes]:
    """One malformed-JSON fault at a time: the document cut short after each of its first 400
    bytes, and a raw control character, an unknown escape or a short ``\\u`` escape put in each
    of its strings (keys, known values and unknown keys' values alike)."""
    faults = [document[:end] for end in range(min(len(document), 400))]
    for string in re.finditer(rb'"(?:[^"\\]|\\.)*"', document):
        for bad in (b"\x01", b"\\q", b"\\u12G4"):
            inside = string.start() + 1 + (string.end() - string.start() - 2) // 2
            faults.append(document[:inside] + bad + document[inside:])
    return faults


@pytest.mark.filterwarnings("ignore::orion_messages.UnknownKeyWarning")
@pytest.mark.parametrize(
    "golden", ["v0.7/tool-loop-parallel.json", "newer/unknown-keys.json", "v0.8/pending-mixed.json"]
)
def test_malformed_json_placed_where_serde_places_it(serde: Serde, golden: str) -> None:
    assert _misplaced(serde, _faults((FIXTURES / golden).read_bytes().replace(b"\n", b" "))) == []


_SKIPPED = [b'"x":' + b"1" * 5000, b'"x":"\\ud800"', b'"x":{"\\udc00":[1]}']
"""Unknown keys whose values serde skips unread and the parser cannot read (a number too long
for it, a lone surrogate escape in a string and in a key)."""


def _misplaced(serde: Serde, documents: list[bytes]) -> list[tuple[bytes, str, str]]:
    """The documents whose malformed JSON is placed here elsewhere than serde places it."""
    misplaced = []
    for document, answer in zip(documents, serde.each_line("conversation-lines", documents), strict=True):
        assert isinstance(answer, str), document
        serde_at = _POSITION.search(answer)
        if serde_at is None or answer.startswith(_TYPE_ERRORS):
            continue
        error = _our_verdict(document)
        assert error is not None
        problem = error.problems[0]
        if (problem.line, problem.column) != (int(serde_at.group(1)), int(serde_at.group(2))):
            misplaced.append((document[-200:], answer, str(problem)))
    return misplaced


@pytest.mark.filterwarnings("ignore::orion_messages.UnknownKeyWarning")
def test_malformed_json_past_a_value_serde_skips_is_placed_where_serde_places_it(serde: Serde) -> None:
    """CLI audit item 7: the parser stops at such a value, serde reads on to the real fault.
    Each fault of ``_faults``, the end cut short, a trailing comma and trailing data, with such
    a value in the first message's first key (so before nearly every fault)."""
    golden = (FIXTURES / "v0.7/tool-loop-parallel.json").read_bytes().replace(b"\n", b" ")
    documents = []
    for skipped in _SKIPPED:
        base = golden.replace(b"{", b"{" + skipped + b",", 1)
        documents += _faults(base) + [base[:end] for end in range(len(base) - 80, len(base))]
        documents += [base.rstrip()[:-1] + b",]", base + b"x", base.replace(b"}", b"},,", 1)]
    assert _misplaced(serde, documents) == []


def _ordered(value: Any) -> Any:
    """A parsed JSON value whose comparison sees the order of object keys too."""
    if isinstance(value, dict):
        return [(key, _ordered(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [_ordered(item) for item in value]
    return value


def _refused_here(line: bytes, *, repeated_keys: bool = False) -> bool:
    """Whether ``parse_event`` refuses the event; with ``repeated_keys``, a known key repeated in
    one object counts as refused too (serde's "duplicate field")."""
    try:
        event = parse_event(line)
    except FormatError:
        return True
    return repeated_keys and bool(duplicate_event_key_problems(line, event.type))


@pytest.mark.parametrize("stream", GOLDEN_STREAMS)
def test_golden_events_read_and_written_back_as_serde_does(serde: Serde, stream: str) -> None:
    """Every line refused where serde refuses it (``tool-loop-denied-error.jsonl`` holds a
    ``turn_end`` written with messages as its tool results: docs/events.md), and the others
    written back alike, compared as JSON with key order (floats are spelled as serde_json
    1.0.146 writes them here)."""
    lines = record_lines(FIXTURES / "events" / stream)
    answers = serde.each_line("event-lines", lines)
    assert [_refused_here(line) for line in lines] == [isinstance(answer, str) for answer in answers]
    for line, answer in zip(lines, answers, strict=True):
        if isinstance(answer, bytes):
            assert _ordered(json.loads(answer)) == _ordered(json.loads(dump_event(_kept(parse_event(line)))))


@pytest.mark.parametrize(
    "stream", sorted(path.name for path in (FIXTURES / "events" / "invalid").glob("*.jsonl"))
)
def test_invalid_events_refused_line_by_line_as_serde_refuses_them(serde: Serde, stream: str) -> None:
    """Alike, but for an event written as an array, its type first (``["agent_start"]``): serde
    reads it, orion-core never writes it, and it is refused here (docs/compatibility.md)."""
    lines = record_lines(FIXTURES / "events" / "invalid" / stream)
    serde_refuses = [isinstance(answer, str) for answer in serde.each_line("event-lines", lines)]
    assert [_refused_here(line) for line in lines] == [
        refused or line.startswith(b"[") for line, refused in zip(lines, serde_refuses, strict=True)
    ]


_EVENT_MUTATIONS = [b'"x":1e400', b'"x":[[[[1]]]]', b'"type":"warning"', b'"message":"m"', b'"args":1']


def test_mutated_events_accepted_and_refused_as_serde_does(serde: Serde) -> None:
    """An event is read whole (unknown keys included): the same verdicts on 3,000 mutated lines
    of the golden streams, but for the array form (``["agent_start"]``, see above)."""
    lines = record_lines(FIXTURES / "events" / "edge-values.jsonl")
    lines += record_lines(FIXTURES / "events" / "tool-loop-denied-error.tool-results.jsonl")
    rng = random.Random(20261204)
    documents = [_mutated(rng, rng.choice(lines), extra=_EVENT_MUTATIONS) for _ in range(3000)]
    disagreements = [
        (document, answer)
        for document, answer in zip(documents, serde.each_line("event-lines", documents), strict=True)
        if not document.lstrip().startswith(b"[")
        and isinstance(answer, str) != _refused_here(document, repeated_keys=True)
    ]
    assert disagreements == []
