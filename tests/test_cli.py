"""The ``orion-messages`` command line, run in-process (``main([...])``) and as a real process.

Expectations come from hand-written conversations whose counts, tokens and problems are worked
out by hand below, from the golden fixtures (``fixtures/invalid`` holds only invalid files, the
version folders only valid ones, ``*.pretty.json`` is the pretty form of its compact twin), and
from the JSON Schema standard.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import platform
import re
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Iterable, Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from orion_messages import (
    ConversationStats,
    FormatError,
    Message,
    cli,
    conversation_stats,
    iter_events,
    loads,
    read_jsonl,
    save,
)
from orion_messages.cli import main

from .conftest import FIXTURES

CaptureFixture = pytest.CaptureFixture[str]

# A conversation worked out by hand. token_count is set on every message, so the token figures
# below are sums of these numbers; the texts are irrelevant to them.
#   [0] system (preamble)                      5 tokens
#   [1] user  "turn 1", pinned=false           10
#   [2] assistant calls c1 (read) and c2 (ls)  10
#   [3] tool_result c1, is_error               10
#   [4] tool_result c2                         10
#   [5] user  "turn 2", pinned                  4
#   [6] assistant                               6
#   [7] user  "turn 3"                          7
#   [8] assistant calls c3                      3
#   [9] tool_result c3, pending                 2
HAND = [
    {"id": "msg-1", "role": "system", "content": "Be brief.", "timestamp": 1781512345678, "token_count": 5},
    {
        "id": "msg-2",
        "role": "user",
        "content": "Read two files.",
        "timestamp": 1781512346000,
        "token_count": 10,
    },
    {
        "id": "msg-3",
        "role": "assistant",
        "content": "",
        "timestamp": 1781512347000,
        "tool_calls": [
            {"id": "msg-3-call-1", "name": "read", "arguments": {"path": "a"}},
            {"id": "msg-3-call-2", "name": "ls", "arguments": {}},
        ],
        "token_count": 10,
    },
    {
        "id": "msg-4",
        "role": "tool_result",
        "content": "no such file",
        "timestamp": 1781512348000,
        "tool_result": {
            "tool_call_id": "msg-3-call-1",
            "tool_name": "read",
            "content": "no such file",
            "is_error": True,
        },
        "token_count": 10,
    },
    {
        "id": "msg-5",
        "role": "tool_result",
        "content": "a b",
        "timestamp": 1781512349000,
        "tool_result": {
            "tool_call_id": "msg-3-call-2",
            "tool_name": "ls",
            "content": "a b",
            "is_error": False,
        },
        "token_count": 10,
    },
    {
        "id": "msg-6",
        "role": "user",
        "content": "Remember X.",
        "timestamp": 1781512350000,
        "token_count": 4,
        "pinned": True,
    },
    {"id": "msg-7", "role": "assistant", "content": "Noted.", "timestamp": 1781512351000, "token_count": 6},
    {"id": "msg-8", "role": "user", "content": "Run it.", "timestamp": 1781512352000, "token_count": 7},
    {
        "id": "msg-9",
        "role": "assistant",
        "content": "",
        "timestamp": 1781512353000,
        "tool_calls": [{"id": "msg-9-call-1", "name": "run", "arguments": None}],
        "token_count": 3,
    },
    {
        "id": "msg-10",
        "role": "tool_result",
        "content": "",
        "timestamp": 1781512354321,
        "tool_result": {
            "tool_call_id": "msg-9-call-1",
            "tool_name": "run",
            "content": "",
            "is_error": False,
            "pending": True,
        },
        "token_count": 2,
    },
]


def _write(path: Path, document: Any) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line]


@pytest.fixture
def hand(tmp_path: Path) -> Path:
    """The hand-worked conversation as a ``.json`` file."""
    return _write(tmp_path / "hand.json", HAND)


# --- validate ----------------------------------------------------------------------------------


def test_validate_valid_file(hand: Path, capsys: CaptureFixture) -> None:
    assert main(["validate", str(hand)]) == 0
    out = capsys.readouterr().out
    assert _lines(out) == ["checked 1 file (10 messages in the valid ones): all valid"]


def test_validate_reports_each_problem_on_its_own_line(tmp_path: Path, capsys: CaptureFixture) -> None:
    bad = [dict(HAND[0]), dict(HAND[1])]
    bad[1]["role"] = "User"
    bad[0]["timestamp"] = "1"
    path = _write(tmp_path / "bad.json", bad)
    assert main(["validate", str(path)]) == 1
    lines = _lines(capsys.readouterr().out)
    assert lines[0].startswith(f"{path}: [0].timestamp: expected an integer")
    assert lines[1].startswith(f"{path}: [1].role: expected a role")
    assert lines[2].endswith("1 invalid (2 errors)")


def test_validate_malformed_json_names_line_and_column(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "cut.json"
    path.write_text('[\n  {"id": "msg-1",\n  "role" "user"}\n]', encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    first = _lines(capsys.readouterr().out)[0]
    assert first.startswith(f"{path}:3:")  # the missing colon is on line 3
    assert "malformed JSON" in first


def test_validate_jsonl_names_the_bad_line(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "log.jsonl"
    records = [json.dumps(HAND[0]), json.dumps(HAND[1]), json.dumps({**HAND[2], "timestamp": 1.5})]
    path.write_text("\n".join(records) + "\n", encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    first = _lines(capsys.readouterr().out)[0]
    assert first.startswith(f"{path}:3: timestamp: expected an integer")


def test_validate_semantic_problems_warn_unless_strict(tmp_path: Path, capsys: CaptureFixture) -> None:
    twice = [HAND[0], {**HAND[1], "id": "msg-1"}]  # the same id twice: orion-core loads it
    path = _write(tmp_path / "dup.json", twice)
    assert main(["validate", str(path)]) == 0
    lines = _lines(capsys.readouterr().out)
    assert lines[0].startswith(f"{path}: [1].id: warning: duplicate message id")
    assert lines[1].endswith("all valid, 1 warning")

    assert main(["validate", "--strict", str(path)]) == 1
    lines = _lines(capsys.readouterr().out)
    assert lines[0].startswith(f"{path}: [1].id: duplicate message id")
    assert "warning" not in lines[0]


def test_validate_duplicate_keys_are_errors_as_in_serde(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "keys.json"
    path.write_text(
        '[{"id":"msg-1","role":"user","content":"a","content":"b","timestamp":1}]', encoding="utf-8"
    )
    assert main(["validate", str(path)]) == 1
    assert 'duplicate key "content"' in capsys.readouterr().out


def test_validate_torn_last_line_warns_and_strict_refuses(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_text(json.dumps(HAND[0]) + "\n" + '{"id":"msg-2","ro', encoding="utf-8")
    assert main(["validate", str(path)]) == 0
    assert _lines(capsys.readouterr().out)[0].startswith(f"{path}:2: warning: skipping a torn last line")
    assert main(["validate", "--strict", str(path)]) == 1
    assert _lines(capsys.readouterr().out)[0] == (
        f"{path}:2: a torn last line (17 bytes), as a crash mid-append leaves it"  # not skipped
    )


@pytest.mark.parametrize("stdin", [False, True])
@pytest.mark.parametrize("strict", [False, True])
def test_a_torn_log_still_has_its_other_problems_checked(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch, strict: bool, stdin: bool
) -> None:
    # A crash leaves a torn line; --strict listed it alone, hiding the repeated id of line 2
    # until the line was repaired. Both are listed, in line order, the torn line last.
    data = json.dumps(HAND[1]) + "\n" + json.dumps(HAND[1]) + "\n" + '{"id":"t'
    path = tmp_path / "torn.jsonl"
    path.write_text(data, encoding="utf-8")
    if stdin:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    name = "<stdin>" if stdin else str(path)
    flags = ["--strict"] if strict else []
    assert main(["validate", *flags, "-" if stdin else str(path)]) == (1 if strict else 0)
    warning = "" if strict else "warning: "
    skipping = "" if strict else "skipping "
    assert _lines(capsys.readouterr().out)[:2] == [
        f'{name}:2: [1].id: {warning}duplicate message id "msg-2" (first at [0])',
        f"{name}:3: {warning}{skipping}a torn last line (8 bytes), as a crash mid-append leaves it",
    ]


def test_validate_searches_folders_for_json_and_jsonl(tmp_path: Path, capsys: CaptureFixture) -> None:
    _write(tmp_path / "b.json", HAND)
    (tmp_path / "deep" / "er").mkdir(parents=True)
    (tmp_path / "deep" / "er" / "a.jsonl").write_text(json.dumps(HAND[1]) + "\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("not a conversation", encoding="utf-8")
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "x.json").write_text("{", encoding="utf-8")
    assert main(["validate", "--format", "json", str(tmp_path)]) == 0
    report = json.loads(capsys.readouterr().out)
    paths = [Path(item["path"]).relative_to(tmp_path).as_posix() for item in report["files"]]
    assert paths == ["b.json", "deep/er/a.jsonl"]
    assert [item["messages"] for item in report["files"]] == [10, 1]
    assert report["valid"] is True
    assert report["counts"] == {"files": 2, "valid": 2, "invalid": 0, "errors": 0, "warnings": 0}


def test_validate_json_counts_messages_and_events_as_the_summary_does(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # Before: an event stream's "messages" held its number of events, and there was no "events".
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(message) + "\n" for message in HAND[:3]), encoding="utf-8")
    stream = tmp_path / "events.jsonl"
    stream.write_text(
        '{"type":"agent_start"}\n{"type":"message_end","message":'
        + json.dumps(HAND[1])
        + '}\n{"type":"turn_start"}\n',
        encoding="utf-8",
    )
    bad = _write(tmp_path / "bad.json", [{**HAND[1], "pinned": "true"}])
    conversation = _write(tmp_path / "chat.json", HAND)
    assert main(["validate", "--format", "json", str(log), str(stream), str(bad), str(conversation)]) == 1
    files = json.loads(capsys.readouterr().out)["files"]
    assert [(item["format"], item["messages"], item["events"]) for item in files] == [
        ("jsonl", 3, 0),
        ("events", 0, 3),
        ("json", None, None),
        ("json", 10, 0),
    ]
    assert main(["validate", str(stream)]) == 0
    assert (
        capsys.readouterr().out.strip()
        == "checked 1 file (0 messages and 3 events in the valid ones): all valid"
    )


def test_validate_json_format_lists_problems(tmp_path: Path, capsys: CaptureFixture) -> None:
    good = _write(tmp_path / "good.json", HAND)
    bad = _write(tmp_path / "bad.json", [{**HAND[1], "pinned": "true"}])
    assert main(["validate", "--format", "json", str(good), str(bad)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["valid"] is False
    assert [item["valid"] for item in report["files"]] == [True, False]
    assert report["files"][1]["errors"] == [
        {
            "location": "[0].pinned",
            "message": 'expected a boolean (true or false), found the string "true"',
            "line": None,
            "column": None,
        }
    ]


# Issue 14: orion-core loads an unknown key holding 1e400 (serde skips it unread), so this file
# now loads, with an UnknownKeyWarning; the old hand-written event stream with messages as
# turn_end.tool_results is now refused. Both stay where they are (fixtures are append-only).
LOADS_SINCE_ISSUE_14 = FIXTURES / "invalid" / "hostile-1e400-in-unknown-key.json"
REFUSED_SINCE_ISSUE_14 = FIXTURES / "events" / "tool-loop-denied-error.jsonl"


def _invalid_fixtures() -> list[Path]:
    return sorted(p for p in (FIXTURES / "invalid").glob("*.json") if p != LOADS_SINCE_ISSUE_14)


@pytest.mark.parametrize("path", _invalid_fixtures(), ids=lambda path: path.name)
def test_every_invalid_fixture_is_reported_invalid(path: Path, capsys: CaptureFixture) -> None:
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"{path}")  # a problem line naming the file comes first
    assert "Traceback" not in out


def test_the_fixture_folders_are_valid_and_invalid_as_named(capsys: CaptureFixture) -> None:
    valid = [str(FIXTURES / name) for name in ("v0.7", "v0.8", "own") if (FIXTURES / name).is_dir()]
    assert valid, "the golden fixture folders are missing"
    assert main(["validate", *valid]) == 0
    capsys.readouterr()
    assert main(["validate", "--format", "json", str(FIXTURES)]) == 1
    report = json.loads(capsys.readouterr().out)
    # fixtures/templates/ holds chat-template goldens, not conversations
    files = [item for item in report["files"] if Path(item["path"]).parent != FIXTURES / "templates"]
    invalid = {Path(item["path"]) for item in files if not item["valid"]}
    invalid -= set((FIXTURES / "conversions").glob("*.json"))  # other formats' goldens, not orion's
    # every file in an ``invalid`` folder (conversations and event streams), and nothing else
    named = {path for path in FIXTURES.rglob("*.json*") if "invalid" in path.parts}
    assert invalid == (named - {LOADS_SINCE_ISSUE_14}) | {REFUSED_SINCE_ISSUE_14}
    assert {item["format"] for item in report["files"]} == {"json", "jsonl", "events"}


def test_the_readme_main_job_commands(capsys: CaptureFixture) -> None:
    # README: orion-messages validate fixtures/v0.7 fixtures/v0.8 fixtures/own
    #         && orion-messages stats fixtures/own/conversation.json
    assert main(["validate", *(str(FIXTURES / name) for name in ("v0.7", "v0.8", "own"))]) == 0
    assert main(["stats", str(FIXTURES / "own" / "conversation.json")]) == 0
    assert "Traceback" not in capsys.readouterr().err


def test_validate_event_streams_line_by_line(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "events.jsonl"
    lines = [
        '{"type":"agent_start"}',
        "",
        '{"type":"turn_start"}',
        '{"type":"Agent_start"}',
        '{"type":"warning"}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    out = _lines(capsys.readouterr().out)
    assert out[0].startswith(f"{path}:4: type: expected an event type")
    assert out[1] == f"{path}:5: message: required key is missing"
    assert out[2].endswith("1 invalid (2 errors)")
    assert main(["stats", str(path)]) == 1
    assert "an agent event stream, not a conversation" in capsys.readouterr().err


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("files", "tty", "drawn"), [(25, True, True), (20, True, False), (25, False, False)])
def test_progress_bar_only_on_a_terminal_for_many_files(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: CaptureFixture,
    files: int,
    tty: bool,
    drawn: bool,
) -> None:
    for number in range(files):
        _write(tmp_path / f"c{number:02}.json", HAND[:2])
    stderr = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["validate", str(tmp_path)]) == 0
    shown = stderr.getvalue()
    assert ("\r[" in shown) is drawn
    if drawn:
        assert f"/{files} " in shown
        assert shown.endswith("\r")
        assert shown.rsplit("\r", 2)[-2].strip() == ""  # erased at the end
    assert capsys.readouterr().out.startswith(f"checked {files} files")


# --- clear failures ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "no/such/file.json"],
        ["prune", "missing.json", "--max-context-tokens", "10", "--max-response-tokens", "1"],
        ["convert", "missing.json", "out.jsonl"],
    ],
)
def test_missing_file_is_one_line_exit_1(argv: list[str], tmp_path: Path, capsys: CaptureFixture) -> None:
    argv = [str(tmp_path / arg) if arg.endswith((".json", ".jsonl")) else arg for arg in argv]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(_lines(captured.err)) == 1
    assert "no such file" in captured.err


def test_folder_without_conversations_is_one_invalid_entry(tmp_path: Path, capsys: CaptureFixture) -> None:
    (tmp_path / "readme.txt").write_text("hi", encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    assert _lines(captured.out) == [
        f"{tmp_path}: no .json, .jsonl or .ndjson files in this folder",
        "checked 1 folder (0 messages in the valid ones): 1 invalid (1 error)",
    ]


@pytest.mark.parametrize("command", ["stats", "convert"])
def test_not_json_is_one_line(command: str, tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "notes.json"
    path.write_text("hello, world\n", encoding="utf-8")
    argv = [command, str(path)] + ([str(tmp_path / "out.jsonl")] if command == "convert" else [])
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert _lines(captured.err) == [
        f"orion-messages: error: {path}:1:1: malformed JSON: expected a JSON value"
    ]
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["frobnicate"],
        ["validate"],
        ["validate", "--format", "xml", "x.json"],
        ["prune", "x.json", "--max-response-tokens", "-1"],
        ["prune", "x.json", "--max-context-tokens", "-5", "--max-response-tokens", "1"],
        ["prune", "x.json", "--max-context-tokens", "lots", "--max-response-tokens", "1"],
        ["convert", "in.json", "out.txt"],
        ["convert", "in.json", "out.jsonl", "--pretty"],
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: CaptureFixture) -> None:
    assert main(argv) == 2
    assert "usage: orion-messages" in capsys.readouterr().err


@pytest.mark.parametrize("command", [[], ["validate"], ["stats"], ["prune"], ["schema"], ["convert"]])
def test_help_everywhere(command: list[str], capsys: CaptureFixture) -> None:
    assert main([*command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: orion-messages {' '.join(command)}".rstrip())


def test_help_names_every_exit_status_the_docs_name(capsys: CaptureFixture) -> None:
    # docs/cli.md, "Exit status": 0, 1, 2, 130 (Ctrl-C) and 141 (standard output closed).
    assert main(["--help"]) == 0
    epilog = " ".join(capsys.readouterr().out.split("Exit status:")[1].split())
    assert epilog == (
        "0 valid or done, 1 invalid input or refused, 2 usage error, 130 interrupted, "
        "141 standard output closed before everything was written."
    )


def test_version(capsys: CaptureFixture) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"orion-messages {version('orion-messages')}"


# --- stats -------------------------------------------------------------------------------------


def test_stats_counts_by_hand(hand: Path, capsys: CaptureFixture) -> None:
    assert main(["stats", "--format", "json", str(hand)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats == {
        "path": str(hand),
        "messages": 10,
        "roles": {"system": 1, "user": 3, "assistant": 3, "tool_call": 0, "tool_result": 3},
        "turns": 3,
        "preamble": 1,
        "tool_calls": 3,
        "tool_errors": 1,
        "pinned": 1,
        "pending": 1,
        "tokens": 5 + 10 + 10 + 10 + 10 + 4 + 6 + 7 + 3 + 2,
        "token_counts_set": 10,
        "first_timestamp": 1781512345678,
        "last_timestamp": 1781512354321,
        "first": "2026-06-15T08:32:25.678Z",  # date -u -d @1781512345 -> 08:32:25
        "last": "2026-06-15T08:32:34.321Z",
    }


def test_stats_estimates_tokens_where_none_are_set(tmp_path: Path, capsys: CaptureFixture) -> None:
    # max(1, chars // 4): 40 chars -> 10; 3 chars -> 1; "read" + '{"path":"a"}' (4 + 12) -> 4
    document = [
        {"id": "m1", "role": "user", "content": "x" * 40, "timestamp": 0},
        {"id": "m2", "role": "assistant", "content": "abc", "timestamp": 1},
        {
            "id": "m3",
            "role": "assistant",
            "content": "",
            "timestamp": 2,
            "tool_calls": [{"id": "c", "name": "read", "arguments": {"path": "a"}}],
        },
    ]
    path = _write(tmp_path / "plain.jsonl", document[0])
    path.write_text("".join(json.dumps(m) + "\n" for m in document), encoding="utf-8")
    assert main(["stats", "--format", "json", str(path)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["tokens"], stats["token_counts_set"]) == (10 + 1 + 4, 0)
    assert (stats["first"], stats["last"]) == ("1970-01-01T00:00:00.000Z", "1970-01-01T00:00:00.002Z")


def test_stats_takes_a_token_count_where_set(tmp_path: Path, capsys: CaptureFixture) -> None:
    # m1 carries 7 (its 40 chars would estimate 10); m2 is estimated, max(1, 3 // 4) = 1.
    document = [
        {"id": "m1", "role": "user", "content": "x" * 40, "timestamp": 0, "token_count": 7},
        {"id": "m2", "role": "assistant", "content": "abc", "timestamp": 1},
    ]
    path = _write(tmp_path / "counted.json", document)
    assert main(["stats", "--format", "json", str(path)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["tokens"], stats["token_counts_set"]) == (7 + 1, 1)


def test_stats_text(hand: Path, capsys: CaptureFixture) -> None:
    assert main(["stats", str(hand)]) == 0
    rows = {line.split()[0]: line.split()[1] for line in _lines(capsys.readouterr().out)[1:]}
    assert rows["messages"] == "10"
    assert rows["user"] == "3"
    assert rows["turns"] == "3"
    assert rows["pending"] == "1"
    assert rows["tokens"] == "67"  # every message carries a token_count: exact, no "~"
    assert rows["earliest"] == "2026-06-15T08:32:25.678Z"
    assert rows["latest"] == "2026-06-15T08:32:34.321Z"


@pytest.mark.parametrize(
    ("second", "tokens"),
    [
        # m1 carries 7; m2's "abc" is estimated as max(1, 3 // 4) = 1 unless it carries 2.
        ({}, "~8  (1 of 2 messages carry a token_count)"),
        ({"token_count": 2}, "9  (2 of 2 messages carry a token_count)"),
    ],
)
def test_stats_marks_tokens_as_an_estimate_only_when_one_is_estimated(
    tmp_path: Path, capsys: CaptureFixture, second: dict[str, int], tokens: str
) -> None:
    document = [
        {"id": "m1", "role": "user", "content": "x" * 40, "timestamp": 0, "token_count": 7},
        {"id": "m2", "role": "assistant", "content": "abc", "timestamp": 1, **second},
    ]
    assert main(["stats", str(_write(tmp_path / "counted.json", document))]) == 0
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.split()[0] == "tokens"]
    assert row == f"  tokens         {tokens}"


def test_stats_shows_the_earliest_and_latest_timestamps(tmp_path: Path, capsys: CaptureFixture) -> None:
    # The second message carries the earlier timestamp (a clock stepped back): shown as the
    # earliest, under a label that says so (it was "first", which reads as the first message's).
    document = [
        {"id": "m1", "role": "user", "content": "a", "timestamp": 5_000},
        {"id": "m2", "role": "assistant", "content": "b", "timestamp": 1_000},
    ]
    path = _write(tmp_path / "clock.json", document)
    assert main(["stats", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "  earliest       1970-01-01T00:00:01.000Z",
        "  latest         1970-01-01T00:00:05.000Z",
    ]
    assert main(["stats", "--format", "json", str(path)]) == 0  # the report's keys stay
    stats = json.loads(capsys.readouterr().out)
    assert (stats["first_timestamp"], stats["last_timestamp"]) == (1_000, 5_000)
    assert (stats["first"], stats["last"]) == ("1970-01-01T00:00:01.000Z", "1970-01-01T00:00:05.000Z")


def test_stats_of_a_log_holds_a_run_of_messages_not_the_log(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cli.md: a log is read line by line and stats keeps no message: it counts each run as it
    # is read. The reader's runs are at most 2,048 lines and conversation_stats counts 1,024
    # messages at a time, so of 10,000 messages fewer than 3,100 are ever alive at once (all
    # 10,000 were, held in one list).
    log = tmp_path / "long.jsonl"
    lines = (
        json.dumps({"id": f"msg-{i}", "role": "user", "content": "hi", "timestamp": i}) for i in range(10_000)
    )
    log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    alive: list[weakref.ref[Message]] = []
    most = 0

    def watched(messages: Iterable[Message]) -> ConversationStats:
        def each() -> Iterator[Message]:
            nonlocal most
            for message in messages:
                alive.append(weakref.ref(message))
                if len(alive) % 500 == 0:
                    most = max(most, sum(ref() is not None for ref in alive))
                yield message

        return conversation_stats(each())

    monkeypatch.setattr(cli, "conversation_stats", watched)
    assert main(["stats", "--format", "json", str(log)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["messages"], stats["turns"], stats["last_timestamp"]) == (10_000, 10_000, 9_999)
    assert len(alive) == 10_000
    assert 0 < most < 3_100


def test_stats_of_an_empty_conversation(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = _write(tmp_path / "empty.json", [])
    assert main(["stats", "--format", "json", str(path)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["messages"], stats["turns"], stats["tokens"], stats["first"]) == (0, 0, 0, None)


# --- prune -------------------------------------------------------------------------------------


def test_prune_plan_and_output_by_hand(hand: Path, tmp_path: Path, capsys: CaptureFixture) -> None:
    # available = 60 - 20 = 40; preamble 5 -> 35 left; latest turn [7..9] costs 12 -> 23 left;
    # the pinned turn [5..6] costs 10 -> 13 left; turn [1..4] costs 40 and does not fit.
    out = tmp_path / "pruned.json"
    argv = ["prune", str(hand), "--max-context-tokens", "60", "--max-response-tokens", "20", "-o", str(out)]
    assert main([*argv, "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["kept"] == [{"start": 5, "stop": 7}, {"start": 7, "stop": 10}]
    assert plan["dropped"] == [{"start": 1, "stop": 5}]
    assert (plan["kept_tokens"], plan["dropped_tokens"], plan["budget"]) == (27, 40, 40)
    assert (plan["kept_messages"], plan["dropped_messages"]) == (6, 4)
    written = json.loads(out.read_text(encoding="utf-8"))
    assert [message["id"] for message in written] == ["msg-1", "msg-6", "msg-7", "msg-8", "msg-9", "msg-10"]
    assert written == [HAND[i] for i in (0, 5, 6, 7, 8, 9)]  # messages unchanged, key order kept

    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "kept      2 turns, 6 messages, 27 tokens" in text
    assert "dropped   1 turn, 4 messages, 40 tokens" in text
    assert f"wrote 6 messages to {out}" in text


def test_prune_reserved_tokens_and_jsonl_output(hand: Path, tmp_path: Path, capsys: CaptureFixture) -> None:
    # reserved 11: 40 - 11 - 5 = 24; latest 12 -> 12; pinned turn 10 -> 2 left.
    out = tmp_path / "pruned.jsonl"
    argv = ["prune", str(hand), "--max-context-tokens", "60", "--max-response-tokens", "20"]
    assert main([*argv, "--reserved-tokens", "11", "-o", str(out), "--format", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["budget"] == 29
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert records == [HAND[i] for i in (0, 5, 6, 7, 8, 9)]


def test_prune_without_output_writes_nothing(hand: Path, tmp_path: Path, capsys: CaptureFixture) -> None:
    before = sorted(tmp_path.iterdir())
    assert main(["prune", str(hand), "--max-context-tokens", "1000", "--max-response-tokens", "0"]) == 0
    assert "a plan only" in capsys.readouterr().out
    assert sorted(tmp_path.iterdir()) == before


def test_prune_refusal_exits_1_with_the_reason(hand: Path, tmp_path: Path, capsys: CaptureFixture) -> None:
    # available 30 - 20 = 10, preamble 5 -> 5 left; the latest turn needs 12.
    out = tmp_path / "never.json"
    argv = ["prune", str(hand), "--max-context-tokens", "30", "--max-response-tokens", "20", "-o", str(out)]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(_lines(captured.err)) == 1
    # orion-core's text: {fixed} is the preamble (5), {available} is 30 - 20
    assert (
        "Latest message (12 tokens) plus system prompt (5 tokens) exceeds context budget (10 tokens). "
        "Clear the conversation or increase context size." in captured.err
    )
    assert not out.exists()


def test_prune_says_why_a_window_leaves_no_room(hand: Path, capsys: CaptureFixture) -> None:
    # A 1,024-token window with orion-core's default 2,048 reserved for the reply: available is
    # max(0, 1024 - 2048) = 0, which orion-core's own text states without the reason.
    assert main(["prune", str(hand), "--max-context-tokens", "1024"]) == 1
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: cannot prune {hand}: System prompt and tools (5 tokens) exceed "
        "available context budget (0 tokens)",
        "orion-messages: hint: --max-response-tokens 2048 (orion-core's default is 2048) leaves "
        "nothing of --max-context-tokens 1024 for the prompt",
    ]


# --- convert -----------------------------------------------------------------------------------


def test_convert_json_to_jsonl_and_back(hand: Path, tmp_path: Path, capsys: CaptureFixture) -> None:
    log = tmp_path / "hand.jsonl"
    back = tmp_path / "back.json"
    assert main(["convert", str(hand), str(log)]) == 0
    assert [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] == HAND
    assert main(["convert", str(log), str(back)]) == 0
    assert json.loads(back.read_text(encoding="utf-8")) == HAND
    assert _lines(capsys.readouterr().out) == [f"wrote 10 messages to {log}", f"wrote 10 messages to {back}"]


_TEXT = st.text(st.characters(codec="utf-8"), max_size=30)
_JSON_LEAF = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)
_ARGUMENTS = st.recursive(
    _JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)


@st.composite
def _wire_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Conversations as orion-core writes them: keys in its order, defaults left out."""
    out: list[dict[str, Any]] = []
    for number in range(draw(st.integers(0, 6))):
        role = draw(st.sampled_from(["system", "user", "assistant", "tool_call", "tool_result"]))
        content = draw(_TEXT)
        message: dict[str, Any] = {
            "id": f"msg-{number + 1}",
            "role": role,
            "content": content,
            "timestamp": draw(st.integers(-(2**63), 2**63 - 1)),
        }
        if role in ("assistant", "tool_call") and draw(st.booleans()):
            message["tool_calls"] = [
                {"id": f"msg-{number + 1}-call-{k}", "name": draw(_TEXT), "arguments": draw(_ARGUMENTS)}
                for k in range(1, draw(st.integers(1, 2)) + 1)
            ]
        if role == "tool_result":
            result = {
                "tool_call_id": "c",
                "tool_name": "t",
                "content": content,
                "is_error": draw(st.booleans()),
            }
            if draw(st.booleans()):
                result["pending"] = True
            message["tool_result"] = result
        if draw(st.booleans()):
            message["token_count"] = draw(st.integers(0, 2**32 - 1))
        if draw(st.booleans()):
            message["pinned"] = True
        out.append(message)
    return out


@given(_wire_messages())
def test_convert_round_trip_keeps_every_message(
    tmp_path_factory: pytest.TempPathFactory, messages: list[Any]
) -> None:
    folder = tmp_path_factory.mktemp("convert")
    source = _write(folder / "in.json", messages)
    log, back = folder / "log.jsonl", folder / "back.json"
    assert main(["convert", str(source), str(log)]) == 0
    records = [json.loads(line) for line in log.read_bytes().split(b"\n")[:-1]]  # not splitlines: U+0085
    assert records == messages
    assert [list(record) for record in records] == [list(message) for message in messages]  # key order
    assert main(["convert", str(log), str(back)]) == 0
    assert json.loads(back.read_text(encoding="utf-8")) == messages


def _pretty_goldens() -> list[Path]:
    pairs = FIXTURES.glob("v0.*/*.pretty.json")
    return sorted(path for path in pairs if path.with_name(path.name.replace(".pretty", "")).exists())


@pytest.mark.parametrize("pretty", _pretty_goldens(), ids=lambda path: path.name)
def test_convert_pretty_matches_the_golden(pretty: Path, tmp_path: Path) -> None:
    compact = pretty.with_name(pretty.name.replace(".pretty", ""))
    log = tmp_path / "log.jsonl"
    again = tmp_path / "again.json"
    pretty_again = tmp_path / "pretty.json"
    assert main(["convert", str(compact), str(log)]) == 0
    assert main(["convert", str(log), str(again)]) == 0
    assert main(["convert", "--pretty", str(log), str(pretty_again)]) == 0
    assert again.read_bytes() == compact.read_bytes()
    assert pretty_again.read_bytes() == pretty.read_bytes()


# --- schema ------------------------------------------------------------------------------------


def test_schema_prints_the_conversation_schema(capsys: CaptureFixture) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["type"] == "array"


def test_schema_out_writes_files(tmp_path: Path, capsys: CaptureFixture) -> None:
    out = tmp_path / "schemas"
    assert main(["schema", "--out", str(out)]) == 0
    listed = [Path(line) for line in _lines(capsys.readouterr().out)]
    assert listed
    assert sorted(listed) == sorted(out.iterdir())
    for path in listed:
        assert "$schema" in json.loads(path.read_text(encoding="utf-8"))


# --- as a real process -------------------------------------------------------------------------


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orion_messages", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_module_entry_point_validates_the_goldens() -> None:
    result = _run("validate", str(FIXTURES / "v0.7"), str(FIXTURES / "invalid" / "nan.json"))
    assert result.returncode == 1
    assert f"{FIXTURES / 'invalid' / 'nan.json'}:1:" in result.stdout
    assert result.stdout.strip().endswith("1 invalid (1 error)")


def test_module_entry_point_missing_file_has_no_traceback(tmp_path: Path) -> None:
    result = _run("stats", str(tmp_path / "gone.json"))
    assert result.returncode == 1
    assert result.stdout == ""
    assert _lines(result.stderr) == [f"orion-messages: error: {tmp_path / 'gone.json'}: no such file"]


_INTERRUPT_WHILE_LOADING = """
import importlib.abc, sys
class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "orion_messages.cli":
            raise KeyboardInterrupt  # what Ctrl-C raises while the command line's modules load
sys.meta_path.insert(0, Interrupt())
from orion_messages.__main__ import main
sys.exit(main())
"""


def _run_script(script: str, *args: str, stdin: str = "") -> tuple[int, str, str]:
    """Run ``script`` in a new interpreter with ``args``: its exit status, stdout and stderr."""
    result = subprocess.run(
        [sys.executable, "-c", script, *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


INTERRUPTED = (130, "", "orion-messages: interrupted\n")
"""Ctrl-C's end of a run: status 130, one line on stderr, no traceback."""


def test_ctrl_c_while_the_command_line_loads_is_one_line_and_130() -> None:
    # Loading takes a few tenths of a second (the models are built); Ctrl-C then printed a traceback.
    assert _run_script(_INTERRUPT_WHILE_LOADING) == INTERRUPTED


_REAL_CTRL_C_WHILE_LOADING = """
import importlib.abc, os, signal, sys, time
class Interrupt(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == MODULE:
            # A real Ctrl-C, arriving where pydantic-core builds a model and wraps the
            # KeyboardInterrupt in its SchemaError: the run ended with that traceback, status 1.
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)
            except KeyboardInterrupt as interrupt:
                raise RuntimeError("Error building validator") from interrupt
sys.meta_path.insert(0, Interrupt())
from orion_messages.__main__ import main
sys.exit(main())
"""


@pytest.mark.skipif(sys.platform == "win32", reason="signals are held back on POSIX only")
@pytest.mark.parametrize(
    ("module", "stdin"),
    [
        ("orion_messages.models", ""),  # loaded with the command line
        ("orion_messages.events", '{"type": "agent_start"}\n'),  # loaded by the first event read
    ],
)
def test_a_real_ctrl_c_while_loading_waits_for_the_import_and_is_one_line(module: str, stdin: str) -> None:
    script = _REAL_CTRL_C_WHILE_LOADING.replace("MODULE", repr(module))
    assert _run_script(script, "validate", "-", stdin=stdin) == INTERRUPTED


_REAL_CTRL_C_WHILE_THE_TOOLS_READER_IS_BUILT = """
import os, signal, sys, time
import orion_messages._cli_options as options
from orion_messages.cli import main
build = options.TypeAdapter
def building(*args, **kwargs):  # the same Ctrl-C, where prune --tools builds its tools reader
    try:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
    except KeyboardInterrupt as interrupt:
        raise RuntimeError("Error building validator") from interrupt
    return build(*args, **kwargs)
options.TypeAdapter = building
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(sys.platform == "win32", reason="signals are held back on POSIX only")
def test_a_real_ctrl_c_while_the_tools_reader_is_built_is_one_line(tmp_path: Path) -> None:
    conversation, tools = tmp_path / "hi.json", tmp_path / "tools.json"
    conversation.write_text('[{"id": "msg-1", "role": "user", "content": "hi", "timestamp": 1}]')
    tools.write_text('[{"name": "a", "description": "b", "parameters": {}}]')
    args = ["prune", str(conversation), "--max-context-tokens", "100", "--max-response-tokens", "0"]
    args += ["--template", "chatml", "--tools", str(tools)]
    assert _run_script(_REAL_CTRL_C_WHILE_THE_TOOLS_READER_IS_BUILT, *args) == INTERRUPTED


@pytest.mark.skipif(sys.platform == "win32", reason="closing a child's descriptor 2 is POSIX")
def test_with_stderr_closed_nothing_but_the_data_reaches_stdout(tmp_path: Path) -> None:
    # print(file=None) writes to stdout: the error went into the data stream of `convert -`.
    source = tmp_path / "bad.json"
    source.write_text('[{"id": "m", "role": "nobody", "content": "", "timestamp": 1}]')
    result = subprocess.run(
        [sys.executable, "-m", "orion_messages", "convert", str(source), "-", "--to", "jsonl"],
        stdout=subprocess.PIPE,
        preexec_fn=lambda: os.close(2),  # started with stderr closed, as `2>&-` starts it
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stdout) == (1, b"")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_text_the_locale_cannot_encode_is_escaped_not_a_traceback(tmp_path: Path, encoding: str) -> None:
    source = tmp_path / "bad.json"
    source.write_text('[{"id": "m", "role": "Us\u00e9r\U0001f600", "content": "", "timestamp": 1}]')
    result = subprocess.run(
        [sys.executable, "-m", "orion_messages", "validate", str(source)],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": encoding},
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert b"Traceback" not in result.stderr
    expected = "Us\\xe9r\\U0001f600" if encoding == "ascii" else "Us\xe9r\\U0001f600"
    assert expected.encode(encoding) in result.stdout


_READ_SYSCALL = {"x86_64": 0, "aarch64": 63}  # read(2)'s number, where it is known here


def _wait_until_reading_stdin(pid: int) -> None:
    """Wait until the process blocks reading descriptor 0 (Linux: ``/proc/PID/syscall`` names
    read(2) on fd 0), for at most a minute; elsewhere, a while. A fixed sleep raced a slow start
    on a busy machine: a SIGINT before the command line's handler is Python's own traceback."""
    syscall = Path(f"/proc/{pid}/syscall")
    number = _READ_SYSCALL.get(platform.machine())
    if number is None or not syscall.exists():
        time.sleep(1.5)
        return
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if syscall.read_text().startswith(f"{number} 0x0 "):
                return
        time.sleep(0.02)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child is POSIX")
def test_ctrl_c_while_reading_stdin_is_one_line_and_130() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "orion_messages", "validate", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _wait_until_reading_stdin(process.pid)
    process.send_signal(signal.SIGINT)
    out, error = process.communicate(timeout=120)
    assert (process.returncode, out, error) == INTERRUPTED


def _pipe(*args: str, stdin: bytes, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "orion_messages", *args],
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
        cwd=cwd,
    )


# --- '-' is standard input and standard output ---------------------------------------------------


def test_stats_reads_a_pipe(hand: Path) -> None:
    result = _pipe("stats", "-", "--format", "json", stdin=hand.read_bytes())
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout)
    assert (stats["messages"], stats["turns"], stats["path"]) == (10, 3, "<stdin>")


def test_a_log_on_standard_input_is_told_by_its_content(hand: Path) -> None:
    log = b"".join(json.dumps(message).encode() + b"\n" for message in HAND)
    result = _pipe("stats", "-", "--format", "json", stdin=log)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["messages"] == 10
    result = _pipe("validate", "-", stdin=b'{"type":"agent_start"}\n{"type":"turn_start"}\n')
    assert (
        result.stdout.decode().strip()
        == "checked 1 file (0 messages and 2 events in the valid ones): all valid"
    )


def test_prune_dash_output_writes_standard_output_not_a_file(hand: Path, tmp_path: Path) -> None:
    argv = ["prune", str(hand), "--max-context-tokens", "60", "--max-response-tokens", "20", "-o", "-"]
    result = subprocess.run(
        [sys.executable, "-m", "orion_messages", *argv],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "-").exists()
    assert json.loads(result.stdout) == [HAND[i] for i in (0, 5, 6, 7, 8, 9)]  # the input's format
    assert b"wrote 6 messages to standard output" in result.stderr  # the summary moves to stderr


@pytest.mark.parametrize(
    ("golden", "options"),
    [("pending-mixed.json", ()), ("pending-placeholders.pretty.json", ("--pretty",))],
)
def test_a_conversation_piped_out_is_orion_cores_bytes(golden: str, options: tuple[str, ...]) -> None:
    # The goldens are files orion-core wrote: serde_json ends them with no newline, and the
    # bytes on a pipe are those of the file (docs/cli.md), with nothing added.
    written = (FIXTURES / "v0.8" / golden).read_bytes()
    converted = _pipe("convert", "-", "-", "--to", "json", *options, stdin=written)
    assert converted.returncode == 0, converted.stderr
    assert converted.stdout == written
    if not options:  # prune writes compact JSON
        budget = ("--max-context-tokens", "100000", "--max-response-tokens", "10")
        pruned = _pipe("prune", "-", *budget, "-o", "-", stdin=written)
        assert pruned.returncode == 0, pruned.stderr
        assert pruned.stdout == written


def test_convert_from_and_to_standard_streams(hand: Path, tmp_path: Path) -> None:
    result = _pipe("convert", "-", "-", "--to", "jsonl", stdin=hand.read_bytes(), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [json.loads(line) for line in result.stdout.splitlines()] == HAND
    back = _pipe("convert", "-", "-", "--to", "json", "--pretty", stdin=result.stdout, cwd=tmp_path)
    assert json.loads(back.stdout) == HAND
    assert back.stdout.startswith(b"[\n  {\n")
    assert sorted(tmp_path.iterdir()) == [hand]


def test_convert_to_standard_output_needs_a_format(hand: Path, capsys: CaptureFixture) -> None:
    assert main(["convert", str(hand), "-"]) == 2
    assert "--to json or --to jsonl" in capsys.readouterr().err


# --- reading once, special files ----------------------------------------------------------------


def test_validate_parses_a_file_once(hand: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Once, leniently, valid or not: the command sorts the repeated keys and the semantic
    # problems itself (a file with problems was parsed a second time before).
    from orion_messages import _cli_input, storage

    calls: list[bool] = []
    real = _cli_input.loads  # type: ignore[attr-defined]

    def counting(data: Any, *, strict: bool = False) -> Any:
        calls.append(strict)
        return real(data, strict=strict)

    read_file = storage.load_conversation  # type: ignore[attr-defined]

    def counting_file(data: Any, *, strict: bool = False, origin: Any = None) -> Any:
        calls.append(strict)
        return read_file(data, strict=strict, origin=origin)

    monkeypatch.setattr(_cli_input, "loads", counting)
    # a CLI that reads through load() counts too
    monkeypatch.setattr(storage, "load_conversation", counting_file)
    assert main(["validate", str(hand)]) == 0
    assert calls == [False]
    odd = tmp_path / "odd.json"  # a repeated known key, and a duplicate id (a warning)
    odd.write_text(
        '[{"id":"a","role":"user","content":"x","timestamp":1,"id":"a"},'
        + json.dumps(dict(HAND[1], id="a"))
        + "]"
    )
    for options in ([], ["--strict"]):
        calls.clear()
        assert main(["validate", *options, str(odd)]) == 1
        assert calls == [False]


def test_validate_skips_fifos_and_devices_in_a_folder(tmp_path: Path) -> None:
    _write(tmp_path / "good.json", HAND)
    os.mkfifo(tmp_path / "x.json")
    (tmp_path / "z.json").symlink_to("/dev/zero")
    result = _run("validate", str(tmp_path))  # before: hung on the FIFO, or read /dev/zero forever
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "checked 1 file (10 messages in the valid ones): all valid"


@pytest.mark.parametrize("command", ["validate", "stats"])
def test_a_special_file_named_is_refused_in_one_line(command: str, tmp_path: Path) -> None:
    fifo = tmp_path / "x.json"
    os.mkfifo(fifo)
    for special, what in ((fifo, "a named pipe"), (Path("/dev/zero"), "a character device")):
        result = _run(command, str(special))
        assert result.returncode == 1
        shown = result.stdout + result.stderr
        assert f"{special}: not a regular file ({what}); use - for standard input" in shown
        assert "Traceback" not in shown


def test_a_folder_named_for_stats_is_one_line(tmp_path: Path, capsys: CaptureFixture) -> None:
    assert main(["stats", str(tmp_path)]) == 1
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: {tmp_path}: is a folder; expected a .json conversation or a .jsonl log"
    ]


# --- events told by shape; one strict ------------------------------------------------------------

_BIG = "1" + "0" * 310


@pytest.mark.parametrize("number", [_BIG, "1e400"])
def test_an_event_stream_is_told_by_its_first_records_shape(
    number: str, tmp_path: Path, capsys: CaptureFixture
) -> None:
    path = tmp_path / "events.jsonl"
    first = '{"type":"tool_exec_start","tool_call_id":"c1","tool_name":"t","args":{"n":' + number + "}}"
    path.write_text(first + '\n{"type":"turn_start"}\n', encoding="utf-8")
    main(["validate", str(path), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert report["files"][0]["format"] == "events"  # before: read as a message log
    assert all("role" not in problem["message"] for problem in report["files"][0]["errors"])


_DEEP = "[" * 3000 + "]" * 3000  # past serde_json's 128 levels and Python's recursion limit
_LATER_EVENTS = b'{"type":"agent_start"}\n{"type":"turn_start"}\n'


def _file_and_stdin_reports(
    data: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> list[dict[str, Any]]:
    """``validate --format json``'s entry for ``data`` as a .jsonl file, then on standard input."""
    path = tmp_path / "stream.jsonl"
    path.write_bytes(data)
    main(["validate", "--format", "json", str(path)])
    reports = [json.loads(capsys.readouterr().out)["files"][0]]
    with path.open("rb") as raw:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw))
        main(["validate", "--format", "json", "-"])
    reports.append(json.loads(capsys.readouterr().out)["files"][0])
    return reports


@pytest.mark.parametrize(
    ("first", "said"),
    [
        (b'{"type":"warning","message":"caf\xe9"}', "malformed JSON: invalid UTF-8"),
        (
            b'{"type":"warning","message":"x","deep":' + _DEEP.encode() + b"}",
            "nested too deeply: serde_json reads 127 levels",
        ),
        (b'{"type":"warning","mes', "malformed JSON"),
        (b"\x0c", "malformed JSON: expected a JSON value"),  # a form feed: no blank line to the readers
        (b'\xef\xbb\xbf{"type":"agent_start"}', "malformed JSON"),  # a byte order mark
    ],
    ids=["invalid-utf8", "deep", "torn", "form-feed", "bom"],
)
def test_an_event_stream_whose_first_record_does_not_read_is_still_an_event_stream(
    first: bytes,
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: CaptureFixture,
) -> None:
    # Before: the first record's json.loads failed, so every event after it got four "required
    # key is missing" errors as a message (and the form feed was blank to the file's check only).
    for report in _file_and_stdin_reports(first + b"\n" + _LATER_EVENTS, tmp_path, monkeypatch, capsys):
        assert report["format"] == "events"
        assert [(error["line"], error["message"].startswith(said)) for error in report["errors"]] == [
            (1, True)
        ]


def test_the_deep_first_event_is_reported_as_iter_events_reports_it(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"warning","message":"x","deep":' + _DEEP + '}\n{"type":"agent_start"}\n')
    with pytest.raises(FormatError) as raised:
        list(iter_events(path))
    (problem,) = raised.value.problems
    assert main(["validate", str(path)]) == 1
    assert _lines(capsys.readouterr().out)[0] == f"{path}:1:{problem.column}: {problem.message}"


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b'{"typ\\u0065":"agent_start"}\n', "events"),  # an escaped key is still "type"
        (b'\n  \r\n{"type":"agent_start","message":"x"}\n', "events"),  # blank lines first
        # A record with both keys is a message, as read_jsonl reads it (an exporter's "type"),
        # whichever comes first, and whether it parses or not.
        (b'{"type":"message","id":"msg-1","role":"user","content":"x","timestamp":1}\n', "jsonl"),
        (b'{"type":"message","id":"msg-1","role":"user","content":"caf\xe9","timestamp":1}\n', "jsonl"),
        (b'{"id":"msg-1","role":"user","content":"caf\xe9","timestamp":1,"type":1}\n', "jsonl"),
        (b'{"type":"warning","message":"caf\xe9"}\n', "events"),  # no role: an event, read leniently
        (b'{"id":"msg-1","role":"user","content":"x","deep":' + _DEEP.encode() + b"}\n", "jsonl"),
        (b"garbage\n" + json.dumps(HAND[1]).encode() + b"\n", "jsonl"),
        (b'{"id":"msg-1","content":"x"}\n{"type":"agent_start"}\n', "jsonl"),  # neither key: a log
    ],
)
def test_a_first_record_s_own_keys_tell_an_event_stream_from_a_log(
    data: bytes,
    kind: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: CaptureFixture,
) -> None:
    reports = _file_and_stdin_reports(data, tmp_path, monkeypatch, capsys)
    assert [report["format"] for report in reports] == [kind, kind]


def test_a_311_digit_integer_in_event_args_is_invalid_as_serde_json_refuses_it(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # serde_json reads it as a double, which is infinite: "number out of range".
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"type":"tool_exec_start","tool_call_id":"c1","tool_name":"t","args":{"n":' + _BIG + "}}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(path)]) == 1
    assert f"{path}:1: args.n: expected an integer that serde_json reads" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("log.jsonl", '{"id":"msg-1","role":"user","content":"a","content":"b","timestamp":1}\n'),
        ("events.jsonl", '{"type":"agent_start"}\n{"type":"turn_start","type":"turn_start"}\n'),
    ],
)
def test_duplicate_keys_are_errors_in_logs_and_event_streams(
    name: str, text: str, tmp_path: Path, capsys: CaptureFixture
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    line = text.count("\n")
    for strict in ([], ["--strict"]):
        assert main(["validate", str(path), *strict]) == 1
        out = _lines(capsys.readouterr().out)
        assert out[0].startswith(f"{path}:{line}:")
        assert "duplicate key" in out[0]


def test_an_agent_end_s_messages_get_the_semantic_check_as_parse_event_strict_makes_it(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # Two messages with one id, and a result whose call is nowhere: orion-core loads both, so
    # they are warnings, and --strict (the library's strict=True, as iter_events reads the
    # stream) makes them errors; each at the record's line, located inside the event.
    result = {"tool_call_id": "nope", "tool_name": "t", "content": "r", "is_error": False}
    messages = [
        {"id": "msg-1", "role": "user", "content": "a", "timestamp": 1},
        {"id": "msg-1", "role": "user", "content": "b", "timestamp": 2},
        {"id": "msg-3", "role": "tool_result", "content": "r", "timestamp": 3, "tool_result": result},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"type":"agent_start"}\n\n' + json.dumps({"type": "agent_end", "messages": messages}) + "\n",
        encoding="utf-8",
    )
    found = [
        ("messages[1].id", 'duplicate message id "msg-1" (first at messages[0])'),
        ("messages[2].tool_result.tool_call_id", 'no earlier tool call has the id "nope"'),
    ]
    assert main(["validate", str(path)]) == 0
    assert _lines(capsys.readouterr().out) == [
        *(f"{path}:3: {where}: warning: {what}" for where, what in found),
        "checked 1 file (0 messages and 2 events in the valid ones): all valid, 2 warnings",
    ]
    assert main(["validate", "--strict", str(path)]) == 1
    assert _lines(capsys.readouterr().out) == [
        *(f"{path}:3: {where}: {what}" for where, what in found),
        "checked 1 file (0 messages in the valid ones): 1 invalid (2 errors)",
    ]
    assert main(["validate", "--strict", "--format", "json", str(path)]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert [(e["location"], e["message"], e["line"]) for e in entry["errors"]] == [
        (where, what, 3) for where, what in found
    ]
    assert entry["warnings"] == []


# --- escaping what comes from the data ----------------------------------------------------------

_HOSTILE = "a\x1b[2J\x07\rchecked 9 files: all valid\n\u202e"


def test_validate_escapes_ids_and_file_names(tmp_path: Path, capsys: CaptureFixture) -> None:
    folder = tmp_path / "x\x1b]0;t\x07"
    folder.mkdir()
    _write(folder / "bad\r\x1b[1A.json", [dict(HAND[1], id=_HOSTILE), dict(HAND[5], id=_HOSTILE)])
    key = json.dumps(_HOSTILE)
    record = f'{{"id":"m","id":"m","role":"user","content":"a","timestamp":1,{key}:1e400}}\n'  # key named
    (folder / "keys.jsonl").write_text(record, encoding="utf-8")
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert not any(char in out for char in "\x1b\x07\r\u202e"), out
    assert out.count("\n") == len(out.splitlines())  # every line break is ours
    assert "\\x1b[2J\\x07\\rchecked 9 files" in out  # the id
    assert (
        'unknown key "a\\x1b[2J\\x07\\rchecked 9 files: all valid\\n\\u202e" left out' in out
    )  # as the library quotes it


def test_stats_and_prune_escape_the_file_name(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = _write(tmp_path / "c\x1b[2J.json", HAND)
    assert main(["stats", str(path)]) == 0
    assert main(["prune", str(path), "--max-context-tokens", "100", "--max-response-tokens", "1"]) == 0
    assert main(["stats", str(tmp_path / "gone\x07.json")]) == 1
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out
    assert "\x07" not in captured.err
    assert "c\\x1b[2J.json" in captured.out


# --- prune: summary, --verbose, refusals as JSON, one way to print ranges ----------------------


def test_prune_prints_a_summary_and_the_turns_with_verbose(hand: Path, capsys: CaptureFixture) -> None:
    argv = ["prune", str(hand), "--max-context-tokens", "60", "--max-response-tokens", "20"]
    assert main(argv) == 0
    summary = capsys.readouterr().out
    assert "turns:" not in summary
    assert "preamble  [0:1] kept, 5 tokens" in summary
    assert main([*argv, "--verbose"]) == 0
    verbose = capsys.readouterr().out
    assert "  kept turns: [5:7], [7:10]" in verbose
    assert "  dropped turns: [1:5]" in verbose


def test_prune_says_one_token_in_the_singular(tmp_path: Path, capsys: CaptureFixture) -> None:
    # Two one-token turns; a context of 2 less a reserve of 1 leaves 1 token: the latest turn
    # is kept, the first dropped ("1 tokens" was printed, beside "1 turn, 1 message").
    messages = [
        Message.user("msg-1", "hi", timestamp=1).with_token_count(1),
        Message.user("msg-2", "x", timestamp=2).with_token_count(1),
    ]
    save(tmp_path / "one.json", messages)
    argv = ["prune", str(tmp_path / "one.json"), "--max-context-tokens", "2", "--max-response-tokens", "0"]
    assert main([*argv, "--reserved-tokens", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:5] == [
        "  budget    1 token for messages",
        "  kept      1 turn, 1 message, 1 token",
        "  dropped   1 turn, 1 message, 1 token",
        "  fixed     1 token (--reserved-tokens)",
    ]


def test_a_refused_plan_still_prints_json(hand: Path, capsys: CaptureFixture) -> None:
    argv = [
        "prune",
        str(hand),
        "--max-context-tokens",
        "30",
        "--max-response-tokens",
        "20",
        "--format",
        "json",
    ]
    assert main(argv) == 1
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    # available 10 - preamble 5 = 5 for the latest turn [7:10], which costs 12 (worked out above)
    assert (report["refused"], report["reason"], report["tokens"], report["budget"]) == (
        True,
        "latest",
        12,
        5,
    )
    assert report["turn"] == {"start": 7, "stop": 10}
    assert captured.err == ""


# --- progress for one large file -----------------------------------------------------------------


@pytest.mark.parametrize("tty", [True, False])
def test_reading_a_large_file_shows_byte_progress_on_a_terminal_only(
    hand: Path, tty: bool, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    from orion_messages import _cli_input

    monkeypatch.setattr(_cli_input, "_PROGRESS_MIN_BYTES", 1)
    monkeypatch.setattr(_cli_input, "_READ_CHUNK", 256)
    stderr = _Terminal() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["stats", str(hand)]) == 0
    shown = stderr.getvalue()
    assert ("reading" in shown) is tty
    if tty:
        size = hand.stat().st_size
        assert shown.count("\r[") >= size // 256
        assert shown.rsplit("\r", 2)[-2].strip() == ""  # erased at the end
    assert capsys.readouterr().out.startswith(str(hand))


def test_checking_a_large_log_shows_progress_by_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    from orion_messages import _cli_input

    log = tmp_path / "big.jsonl"
    log.write_text("".join(json.dumps(dict(HAND[1], id=f"m{i}")) + "\n" for i in range(50)), encoding="utf-8")
    monkeypatch.setattr(_cli_input, "_PROGRESS_MIN_BYTES", 1)
    monkeypatch.setattr(_cli_input, "_RUN_RECORDS", 10)
    stderr = _Terminal()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert main(["validate", str(log)]) == 0
    # Once a run of 10 records: before records 1, 11, 21, 31, 41 (the label is cut to the width).
    assert stderr.getvalue().count("checking") == 5
    assert capsys.readouterr().out.strip() == "checked 1 file (50 messages in the valid ones): all valid"


# --- the library's warnings are reported as the CLI reports warnings ----------------------------

# The unknown key's value 1e400 cannot be written back (orion-core's reference: serde skips an
# unknown key unread); the key is made hostile with an escape character, so its report must be
# escaped. The reason text is the library's, so only its presence is checked.
_HOSTILE_KEY = "score\x1b[31m"


def _unknown_key_log(path: Path, count: int) -> Path:
    records = [json.dumps(dict(HAND[1], id=f"m{i}", **{_HOSTILE_KEY: 0})) for i in range(count)]
    path.write_text("".join(line.replace(": 0}", ": 1e400}") + "\n" for line in records), encoding="utf-8")
    return path


def test_validate_reports_an_unknown_key_left_out_as_a_warning(capsys: CaptureFixture) -> None:
    path = LOADS_SINCE_ISSUE_14
    assert main(["validate", str(path)]) == 0
    captured = capsys.readouterr()
    assert _lines(captured.out)[0].startswith(f'{path}: [0]: warning: unknown key "score" left out: ')
    assert _lines(captured.out)[-1].endswith("all valid, 1 warning")
    assert captured.err == ""
    assert main(["validate", "--format", "json", str(path)]) == 0
    (warning,) = json.loads(capsys.readouterr().out)["files"][0]["warnings"]
    assert (warning["location"], warning["line"]) == ("[0]", None)
    assert warning["message"].startswith('unknown key "score" left out: ')


def test_validate_a_log_reports_each_left_out_key_on_its_line(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = _unknown_key_log(tmp_path / "log.jsonl", 3)
    assert main(["validate", str(path)]) == 0
    out = _lines(capsys.readouterr().out)
    assert [line.split(": warning: ")[0] for line in out[:3]] == [f"{path}:{n}" for n in (1, 2, 3)]
    assert all('unknown key "score\\x1b[31m" left out' in line for line in out[:3])
    assert "\x1b" not in "".join(out)


@pytest.mark.parametrize("command", [["stats"], ["convert", "OUT"], ["prune", "--max-context-tokens", "999", "--max-response-tokens", "1"]])  # fmt: skip
def test_other_commands_print_left_out_keys_as_escaped_capped_warnings(
    command: list[str], tmp_path: Path, capsys: CaptureFixture
) -> None:
    path = _unknown_key_log(tmp_path / "log.jsonl", 25)
    argv = [str(tmp_path / "out.jsonl") if arg == "OUT" else arg for arg in command]
    assert main([argv[0], str(path), *argv[1:]]) == 0
    err = _lines(capsys.readouterr().err)
    assert err[:20] == [
        f'orion-messages: warning: {path}:{n}: unknown key "score\\x1b[31m" left out: '
        + err[n - 1].split(" left out: ", 1)[1]
        for n in range(1, 21)
    ]
    assert err[20:] == [f"orion-messages: warning: {path}: ... and 5 more warnings"]


def test_no_library_warning_reaches_stderr_raw(tmp_path: Path) -> None:
    log = _unknown_key_log(tmp_path / "log.jsonl", 1)
    for args in (
        ["validate", str(LOADS_SINCE_ISSUE_14)],
        ["stats", str(log)],
        ["convert", str(log), "-", "--to", "json"],
    ):
        result = _run(*args)
        assert result.returncode == 0, result.stderr
        assert "Warning" not in result.stderr, args
        assert "cli.py" not in result.stderr, args


# --- a log file is read line by line (issue 10) --------------------------------------------------

_LINE = json.dumps(HAND[1]).encode()
_OTHER = json.dumps(dict(HAND[1], id="msg-9")).encode()


@pytest.mark.parametrize(
    "data",
    [
        _LINE + b"\n" + _OTHER + b"\n",
        b"\n  \t\r\n" + _LINE + b"\r\n\n" + _OTHER + b"\n  ",  # blank lines, CRLF, a blank tail
        _LINE + b"\n" + _OTHER,  # a whole last record that lost its newline
        _LINE + b"\n" + _OTHER[:20],  # a torn last line
        _LINE + b"\n" + _OTHER[:20] + b"\n" + _OTHER,  # a corrupt line is not torn
        _LINE + b"\n" + _LINE + b"\n",  # a semantic problem of the whole log
        b'{"type":"agent_start"}\n{"type":"turn_sta',  # an event stream has no torn-tail rule
        _LINE + b"\ngarbage",  # a last line that is no record's start is corrupt, not torn
    ],
    ids=["whole", "blank", "no-newline", "torn", "corrupt", "duplicate-ids", "events", "not-a-start"],
)
@pytest.mark.parametrize("strict", [False, True])
def test_a_log_file_read_line_by_line_reports_what_the_whole_bytes_do(
    data: bytes, strict: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    # Standard input is read whole and split by storage's _split_records; a .jsonl file is read
    # line by line by the same rules: both must report the same, line for line.
    path = tmp_path / "log.jsonl"
    path.write_bytes(data)
    flags = ["--strict"] if strict else []
    by_lines = main(["validate", "--format", "json", *flags, str(path)])
    file_report = json.loads(capsys.readouterr().out)["files"][0]
    with path.open("rb") as raw:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw))
        whole = main(["validate", "--format", "json", *flags, "-"])
    stdin_report = json.loads(capsys.readouterr().out)["files"][0]
    assert by_lines == whole
    assert {**file_report, "path": "-"} == {**stdin_report, "path": "-"}


def test_stats_on_a_torn_log_file_warns_once_with_its_line(tmp_path: Path, capsys: CaptureFixture) -> None:
    path = tmp_path / "torn.jsonl"
    path.write_bytes(_LINE + b"\n\n" + _OTHER[:20])
    assert main(["stats", "--format", "json", str(path)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["messages"] == 1
    assert _lines(captured.err) == [
        f"orion-messages: warning: {path}:3: skipping a torn last line (20 bytes), as a crash mid-append leaves it"
    ]


def test_validating_a_big_log_file_holds_no_buffer_of_its_size(tmp_path: Path) -> None:
    import tracemalloc

    from orion_messages.storage import iter_jsonl

    # ~20 MB: 8,000 messages of ~2.5 KB. The messages validate keeps (for the semantic check
    # of the whole log) are measured alone, the same way; what validate allocates beyond them
    # must stay far below the file's size. Reading the file whole (and splitting its lines)
    # costs at least one more file's worth: an excess of 1.0x or more, against < 0.5x allowed.
    path = tmp_path / "big.jsonl"
    text = "x" * 2500
    with path.open("w", encoding="utf-8") as log:
        for i in range(8000):
            log.write(json.dumps(dict(HAND[1], id=f"m{i}", content=f"{i} {text}")) + "\n")
    size = path.stat().st_size
    assert size > 19_000_000

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        messages = list(iter_jsonl(path))
        kept = tracemalloc.get_traced_memory()[0] - before
        del messages
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        assert main(["validate", "-q", str(path)]) == 0
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert kept > size // 2  # the messages themselves are measured: the comparison means something
    assert peak - kept < size // 2, (peak, kept, size)


def test_a_store_url_reports_left_out_keys_as_warnings(tmp_path: Path, capsys: CaptureFixture) -> None:
    import sqlite3

    url = f"sqlite:///{tmp_path / 'chats.db'}?conversation=c1"
    assert main(["convert", str(_write(tmp_path / "one.json", HAND[1:2])), url]) == 0
    with sqlite3.connect(tmp_path / "chats.db") as connection:  # a row another writer left
        connection.execute("UPDATE orion_messages SET data = ?", (_LINE[:-1].decode() + ',"score":1e400}',))
    capsys.readouterr()
    assert main(["validate", url]) == 0
    out = _lines(capsys.readouterr().out)
    assert out[0].startswith(f'{url}: [0]: warning: unknown key "score" left out: ')
    assert out[-1].endswith("all valid, 1 warning")
    assert main(["stats", url]) == 0
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1
    assert err[0].startswith(f'orion-messages: warning: {url}: [0]: unknown key "score" left out: ')


def test_validate_counts_the_problems_the_library_did_not_keep(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # 300 messages with a string timestamp: 300 problems; FormatError keeps the first 100.
    bad = [{"id": f"msg-{i}", "role": "user", "content": "hi", "timestamp": "0"} for i in range(300)]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["validate", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.count(".timestamp: expected an integer") == 100
    assert "... and 200 more problems" in out


def test_prune_uses_orion_cores_default_window(capsys: CaptureFixture) -> None:
    # orion-core's ContextConfig defaults: 4096 tokens of context, 2048 kept for the reply.
    path = str(FIXTURES / "own" / "conversation.json")
    assert main(["prune", path, "--format", "json"]) == 0
    defaulted = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "prune",
                path,
                "--max-context-tokens",
                "4096",
                "--max-response-tokens",
                "2048",
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert defaulted == json.loads(capsys.readouterr().out)
    assert defaulted["budget"] <= 4096 - 2048


# --- prune: what the fixed overhead is made of; files given to --template's options -----------


def test_prune_without_a_template_names_the_preamble_and_reserved_tokens_as_fixed(
    hand: Path, capsys: CaptureFixture
) -> None:
    # Without a template the fixed overhead is --reserved-tokens plus the preamble (5, above);
    # there is no system block and no assistant prefix.
    argv = ["prune", str(hand), "--max-context-tokens", "60", "--max-response-tokens", "20"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "  fixed     5 tokens (the preamble)\n" in text
    assert "system block" not in text
    assert main([*argv, "--reserved-tokens", "11"]) == 0
    assert "  fixed     16 tokens (the preamble 5 + --reserved-tokens 11)\n" in capsys.readouterr().out


# One user message "hi". ChatML (chat-templates.md §3) renders it "<|im_start|>user\nhi<|im_end|>\n",
# 30 characters: 30 // 4 = 7 tokens under the default chars/4 counter. The assistant prefix
# "<|im_start|>assistant\n" is 22 characters: 5 tokens.
HI = [{"id": "msg-1", "role": "user", "content": "hi", "timestamp": 1}]


def _templated(conversation: Path, *options: str) -> list[str]:
    return ["prune", str(conversation), "--max-context-tokens", "100", "--max-response-tokens", "0",
            "--template", "chatml", *options]  # fmt: skip


# A greeting before the first user message (the preamble), then two turns. Under ChatML and the
# chars/4 counter the first turn costs 7 + 8 = 15 tokens, the second 7 (as HI above).
GREETED = [
    {"id": "msg-1", "role": "assistant", "content": "Hello!", "timestamp": 1},
    {"id": "msg-2", "role": "user", "content": "hi", "timestamp": 2},
    {"id": "msg-3", "role": "assistant", "content": "ok", "timestamp": 3},
    {"id": "msg-4", "role": "user", "content": "hi", "timestamp": 4},
]


@pytest.mark.parametrize(
    ("window", "written"), [("100", ["msg-1", "msg-2", "msg-3", "msg-4"]), ("20", ["msg-1", "msg-4"])]
)
def test_prune_output_with_a_template_keeps_the_preamble_it_does_not_send(
    tmp_path: Path, capsys: CaptureFixture, window: str, written: list[str]
) -> None:
    # chat-templates.md 6.3: messages before the first user message are "never counted, kept or
    # dropped": orion-core leaves them out of the prompt, not out of the history. -o writes the
    # conversation once pruned (the dropped turns gone), as the store's prune keeps it. With 20
    # tokens only the latest turn fits (7; the first needs 15 more).
    conversation = tmp_path / "greeted.json"
    conversation.write_bytes(json.dumps(GREETED).encode())
    out = tmp_path / "out.json"
    argv = [*_templated(conversation, "-o", str(out))]
    argv[argv.index("100")] = window
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert [message["id"] for message in json.loads(out.read_bytes())] == written
    assert f"wrote {len(written)} messages to {out}\n" in text
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["written_messages"] == len(written)


def test_prune_counts_what_it_writes_to_standard_output_and_nothing_without_output(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # docs/cli.md: written_messages is how many -o wrote, 0 without it; with -o - the report
    # goes to stderr and the conversation once pruned to stdout (the preamble kept, as above).
    conversation = tmp_path / "greeted.json"
    conversation.write_bytes(json.dumps(GREETED).encode())
    argv = _templated(conversation)
    argv[argv.index("100")] = "20"
    assert main([*argv, "-o", "-"]) == 0
    captured = capsys.readouterr()
    assert [message["id"] for message in json.loads(captured.out)] == ["msg-1", "msg-4"]
    assert "wrote 2 messages to standard output\n" in captured.err
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["written_messages"] == 0


def test_tools_parameters_minus_zero_is_the_float_minus_zero_as_in_serde(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # serde_json reads -0 as a float, printed "-0.0" (chat-templates.md §2). The system block
    # "<|im_start|>system\n" (19) + T + "<|im_end|>\n" (11), with T for one tool named "a"
    # described "b": header 43 + "### a\nb\nParameters: " (20) + "-0.0" (4) + "\n\n" (2) + footer
    # 101 = 170, so 19 + 170 + 11 = 200 characters, 50 tokens. Read as the integer 0 ("0", 3
    # characters fewer), it would be 197 characters, 49 tokens.
    conversation = _write(tmp_path / "hi.json", HI)
    tools = tmp_path / "tools.json"
    tools.write_text('[{"name": "a", "description": "b", "parameters": -0}]', encoding="utf-8")
    assert main([*_templated(conversation, "--tools", str(tools)), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["fixed_tokens"], report["budget"], report["kept_tokens"]) == (50 + 5, 100 - 55, 7)
    assert main(_templated(conversation, "--tools", str(tools), "--reserved-tokens", "3")) == 0
    assert "  fixed     58 tokens (the system block and assistant prefix 55 + --reserved-tokens 3)\n" in (
        capsys.readouterr().out
    )


@pytest.mark.parametrize(
    ("document", "where"),
    [
        ('[{"name": 5, "description": "b", "parameters": {}}]', ": [0].name: expected a string, found the number 5"),
        ('[{"name": "a", "description": "b"}]', ": [0].parameters: required key is missing"),
        ('{"name": "a", "description": "b", "parameters": {}}', ": expected a JSON array of tools, found an object"),
        ('[{"name": "a", "description": "b", "parameters": NaN}]', ":1:50: malformed JSON: expected a JSON value, found NaN"),
        ('[{"name": "a",}]', ":1:15: malformed JSON: trailing comma"),
        # serde's "duplicate field" (the format reference); in parameters, a free JSON value, no error
        ('[{"name": "a", "description": "b", "parameters": {"x": 1, "x": 2}, "name": "c"}]',
         ': [0]: duplicate key "name" in one object'),
    ],
)  # fmt: skip
def test_a_bad_tools_file_is_one_line_naming_the_option_the_file_and_the_place(
    document: str, where: str, tmp_path: Path, capsys: CaptureFixture
) -> None:
    conversation = _write(tmp_path / "hi.json", HI)
    tools = tmp_path / "tools.json"
    tools.write_text(document, encoding="utf-8")
    assert main(_templated(conversation, "--tools", str(tools))) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = _lines(captured.err)  # one line, no traceback
    assert line.startswith(f"orion-messages: error: --tools {tools}{where}")


def test_an_unreadable_option_file_is_one_line_naming_the_option(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    conversation = _write(tmp_path / "hi.json", HI)
    missing = tmp_path / "missing.json"
    for option in ("--tools", "--system-prompt"):
        assert main(_templated(conversation, option, str(missing))) == 2
        assert _lines(capsys.readouterr().err) == [f"orion-messages: error: {option} {missing}: no such file"]
    assert main(_templated(conversation, "--tools", str(tmp_path))) == 2
    assert _lines(capsys.readouterr().err) == [f"orion-messages: error: --tools {tmp_path}: is a folder"]
    (tmp_path / "latin1.txt").write_bytes(b"caf\xe9")
    assert main(_templated(conversation, "--system-prompt", str(tmp_path / "latin1.txt"))) == 2
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: --system-prompt {tmp_path / 'latin1.txt'}: invalid UTF-8 at byte 3"
    ]


def test_the_system_prompt_file_is_used_as_is(tmp_path: Path, capsys: CaptureFixture) -> None:
    # The system prompt "\r\n" (2 characters, never trimmed: chat-templates.md §0) gives the system
    # block "<|im_start|>system\n\r\n<|im_end|>\n", 32 characters, 8 tokens; with the newline
    # translated to "\n" it would be 31 characters, 7 tokens. Plus the prefix's 5.
    conversation = _write(tmp_path / "hi.json", HI)
    (tmp_path / "system.txt").write_bytes(b"\r\n")
    assert (
        main([*_templated(conversation, "--system-prompt", str(tmp_path / "system.txt")), "--format", "json"])
        == 0
    )
    assert json.loads(capsys.readouterr().out)["fixed_tokens"] == 8 + 5
    # --system-prompt-file is the same option under the name convert shares.
    assert (
        main(
            [
                *_templated(conversation, "--system-prompt-file", str(tmp_path / "system.txt")),
                "--format",
                "json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["fixed_tokens"] == 8 + 5


def test_the_system_prompt_file_is_given_once_under_either_name(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    conversation = _write(tmp_path / "hi.json", HI)
    (tmp_path / "system.txt").write_bytes(b"Be brief.")
    name = str(tmp_path / "system.txt")
    assert main(_templated(conversation, "--system-prompt-file", name, "--system-prompt", name)) == 2
    assert (
        "argument --system-prompt: not allowed with argument --system-prompt-file" in capsys.readouterr().err
    )
    assert main(_templated(conversation, "--system-prompt-file", str(tmp_path / "missing.txt"))) == 2
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: --system-prompt-file {tmp_path / 'missing.txt'}: no such file"
    ]
    # The prompt's text where a file belongs (as convert's deprecated --system-prompt took it).
    hint = "it names a file holding the system prompt, or - for standard input"
    assert main(_templated(conversation, "--system-prompt", "Be brief.")) == 2
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: --system-prompt Be brief.: no such file; {hint}"
    ]


# --- standard input: a byte order mark, a lone line that is no record (audit) ---------------------


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))


def test_a_byte_order_mark_on_standard_input_is_refused_at_line_1_column_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    # docs/reliability.md: a UTF-8 byte order mark is refused at line 1, column 1; a conversation
    # saved without its final newline (as save() writes it) must not pass for a torn log line.
    conversation = b"\xef\xbb\xbf" + json.dumps(HAND).encode()
    out = tmp_path / "out.json"
    _stdin(monkeypatch, conversation)
    assert main(["convert", "-", str(out)]) == 1
    (line,) = _lines(capsys.readouterr().err)
    assert line.startswith("orion-messages: error: <stdin>:1:1: malformed JSON: ")
    assert "byte order mark" in line
    assert not out.exists()
    _stdin(monkeypatch, conversation)
    assert main(["validate", "-"]) == 1
    printed = _lines(capsys.readouterr().out)
    assert printed[0].startswith("<stdin>:1:1: malformed JSON: ")
    assert printed[-1] == "checked 1 file (0 messages in the valid ones): 1 invalid (1 error)"
    (tmp_path / "bom.json").write_bytes(conversation)  # the same bytes in a file: the same report
    assert main(["validate", str(tmp_path / "bom.json")]) == 1
    assert _lines(capsys.readouterr().out)[0].startswith(f"{tmp_path / 'bom.json'}:1:1: malformed JSON: ")


@pytest.mark.parametrize("source", ["stdin", "file"])
def test_a_lone_line_that_is_no_record_is_not_all_valid(
    source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    # docs/cli.md: a last line without its newline that does not start with "{" is a corrupt
    # record, an error at its line (garbage alone on standard input is never "all valid").
    path = tmp_path / "garbage.jsonl"
    path.write_bytes(b"garbage")
    name = "<stdin>" if source == "stdin" else str(path)
    argument = "-" if source == "stdin" else str(path)
    if source == "stdin":
        _stdin(monkeypatch, b"garbage")
    assert main(["validate", argument]) == 1
    printed = _lines(capsys.readouterr().out)
    assert printed[0].startswith(f"{name}:1:1: malformed JSON: ")
    assert printed[-1] == "checked 1 file (0 messages in the valid ones): 1 invalid (1 error)"
    if source == "stdin":
        _stdin(monkeypatch, b"garbage")
    assert main(["convert", argument, str(tmp_path / "out.json")]) == 1
    assert _lines(capsys.readouterr().err)[0].startswith(
        f"orion-messages: error: {name}:1:1: malformed JSON: "
    )
    assert not (tmp_path / "out.json").exists()


def test_a_torn_record_alone_on_standard_input_still_warns(
    monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    _stdin(monkeypatch, b'{"id":"msg-1","ro')  # the start of a record: what a crash leaves
    assert main(["validate", "-"]) == 0
    assert _lines(capsys.readouterr().out) == [
        "<stdin>:1: warning: skipping a torn last line (17 bytes), as a crash mid-append leaves it",
        "checked 1 file (0 messages in the valid ones): all valid, 1 warning",
    ]


# --- convert a folder; prune's closing hint; --counter failures (audit) ---------------------------


def test_convert_a_folder_says_it_is_a_folder_as_stats_does(tmp_path: Path, capsys: CaptureFixture) -> None:
    folder = tmp_path / "d"
    folder.mkdir()
    assert main(["convert", str(folder), str(tmp_path / "x.json")]) == 1
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: {folder}: is a folder; expected a .json conversation or a .jsonl log"
    ]


def test_prune_verbose_without_output_drops_the_verbose_hint(hand: Path, capsys: CaptureFixture) -> None:
    argv = ["prune", str(hand), "--max-context-tokens", "60", "--max-response-tokens", "20"]
    assert main(argv) == 0
    assert _lines(capsys.readouterr().out)[-1] == (
        "(a plan only: pass -o OUT to write the pruned conversation, --verbose for every turn)"
    )
    assert main([*argv, "--verbose"]) == 0
    assert (
        _lines(capsys.readouterr().out)[-1] == "(a plan only: pass -o OUT to write the pruned conversation)"
    )


def test_a_counter_file_that_cannot_be_read_is_one_usage_line(tmp_path: Path, capsys: CaptureFixture) -> None:
    conversation = _write(tmp_path / "hi.json", HI)
    missing = tmp_path / "nope.json"
    fifo = tmp_path / "tok.json"
    os.mkfifo(fifo)  # read, it would hang: refused before anything reads it
    for kind, reason in (
        (f"hf:{missing}", "no such file"),
        (f"sentencepiece:{missing}", "no such file"),
        (f"hf:{fifo}", "not a regular file (a named pipe)"),
        (f"hf:{tmp_path}", "is a folder"),
        # "-" is standard input for every other option: not taken as a file named "-" here.
        ("hf:-", "a tokenizer is not read from standard input: give its path (./- for a file named -)"),
        (
            "sentencepiece:-",
            "a tokenizer is not read from standard input: give its path (./- for a file named -)",
        ),
    ):
        assert main(_templated(conversation, "--counter", kind)) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert _lines(captured.err) == [f"orion-messages: error: --counter {kind}: {reason}"]


class _Offline(OSError):
    """Named as requests' ConnectionError is, which tiktoken raises when it cannot download."""


_Offline.__name__ = "ConnectionError"


@pytest.mark.parametrize(
    ("adapter", "failure", "reason"),
    [
        ("huggingface_counter", Exception("No such file or directory (os error 2)"), "cannot load it: No such file or directory (os error 2)"),
        ("huggingface_counter", Exception("first line\n  second line"), "cannot load it: first line"),
        ("tiktoken_counter", ValueError("Unknown encoding x.\\nPlugins found: [...]"), "cannot load it: Unknown encoding x."),
        ("tiktoken_counter", _Offline("HTTPSConnectionPool(host='h', port=443): Max retries exceeded " + "x" * 400), "cannot load it: it is not in the local cache and could not be downloaded"),
    ],
)  # fmt: skip
def test_a_counter_that_fails_to_load_is_one_usage_line(
    adapter: str,
    failure: Exception,
    reason: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: CaptureFixture,
) -> None:
    from orion_messages import _cli_options

    def fail(argument: str) -> Any:
        raise failure

    monkeypatch.setattr(_cli_options, adapter, fail)
    conversation = _write(tmp_path / "hi.json", HI)
    (tmp_path / "tok.json").write_text("{}", encoding="utf-8")
    kind = f"hf:{tmp_path / 'tok.json'}" if adapter == "huggingface_counter" else "tiktoken:x"
    assert main(_templated(conversation, "--counter", kind)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == [f"orion-messages: error: --counter {kind}: {reason}"]  # no traceback


def test_a_long_counter_failure_is_cut_to_one_short_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    from orion_messages import _cli_options

    def fail(argument: str) -> Any:
        raise RuntimeError("y" * 1000)

    monkeypatch.setattr(_cli_options, "tiktoken_counter", fail)
    assert main(_templated(_write(tmp_path / "hi.json", HI), "--counter", "tiktoken:x")) == 2
    (line,) = _lines(capsys.readouterr().err)
    assert line.startswith("orion-messages: error: --counter tiktoken:x: cannot load it: yyy")
    assert line.endswith("...")
    assert len(line) < 300


# --- '-' is standard input for prune's option files too (cli.md, Conventions) -------------------


def test_tools_and_system_prompt_read_standard_input_for_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    # The figures worked out above for files: one tool with parameters -0 gives 50 + 5 fixed
    # tokens; the system prompt "\r\n", byte for byte, 8 + 5.
    conversation = _write(tmp_path / "hi.json", HI)
    _stdin(monkeypatch, b'[{"name": "a", "description": "b", "parameters": -0}]')
    assert main([*_templated(conversation, "--tools", "-"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["fixed_tokens"] == 50 + 5
    _stdin(monkeypatch, b"\r\n")
    assert main([*_templated(conversation, "--system-prompt", "-"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["fixed_tokens"] == 8 + 5


def test_template_file_reads_standard_input_for_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    # A Jinja text with "<|start_header_id|>" is detected as llama3 (templates.md). Its system
    # block without a prompt, "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n
    # <|eot_id|>", is 17 + 19 + 6 + 17 + 2 + 10 = 71 characters, 17 tokens; its prefix
    # "<|start_header_id|>assistant<|end_header_id|>\n\n" 19 + 9 + 17 + 2 = 47, 11 tokens. ChatML
    # (what auto gives without the text) would be 7 + 5.
    conversation = _write(tmp_path / "hi.json", HI)
    argv = ["prune", str(conversation), "--template", "auto", "--template-file", "-", "--format", "json"]
    _stdin(monkeypatch, b'{{ "<|start_header_id|>" }}')
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["fixed_tokens"] == 17 + 11


def test_a_pipe_feeds_the_system_prompt(tmp_path: Path) -> None:
    conversation = _write(tmp_path / "hi.json", HI)
    result = _pipe(*_templated(conversation, "--system-prompt", "-"), "--format", "json", stdin=b"\r\n")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["fixed_tokens"] == 8 + 5


def test_bad_option_input_on_standard_input_names_the_option_and_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    conversation = _write(tmp_path / "hi.json", HI)
    _stdin(monkeypatch, b'[{"name": 5, "description": "b", "parameters": {}}]')
    assert main(_templated(conversation, "--tools", "-")) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == [
        "orion-messages: error: --tools <stdin>: [0].name: expected a string, found the number 5"
    ]
    _stdin(monkeypatch, b"caf\xe9")
    assert main(_templated(conversation, "--system-prompt", "-")) == 2
    assert _lines(capsys.readouterr().err) == [
        "orion-messages: error: --system-prompt <stdin>: invalid UTF-8 at byte 3"
    ]


def test_empty_or_closed_standard_input_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    conversation = FIXTURES / "v0.7" / "plain-chat.json"
    result = subprocess.run(
        [sys.executable, "-m", "orion_messages", *_templated(conversation, "--tools", "-")],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 2  # an empty document is no tools array
    assert _lines(result.stderr) == [
        "orion-messages: error: --tools <stdin>:1:0: malformed JSON: the document is empty"
    ]
    monkeypatch.setattr(sys, "stdin", None)  # what Python sets when file descriptor 0 is closed
    assert main(_templated(conversation, "--tools", "-")) == 2
    assert _lines(capsys.readouterr().err) == [
        "orion-messages: error: --tools <stdin>: cannot read it: standard input is closed"
    ]
    assert main(["stats", "-"]) == 1
    assert _lines(capsys.readouterr().err) == ["orion-messages: error: <stdin>: standard input is closed"]


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (["-", "--tools", "-"], "PATH and --tools both"),
        (["-", "--system-prompt", "-"], "PATH and --system-prompt both"),
        (["-", "--template-file", "-"], "PATH and --template-file both"),
        (["hi.json", "--system-prompt", "-", "--tools", "-"], "--system-prompt and --tools both"),
        (["-", "--template-file", "-", "--system-prompt", "-", "--tools", "-"],
         "PATH, --template-file, --system-prompt and --tools all"),
    ],
)  # fmt: skip
def test_two_inputs_naming_dash_are_one_usage_line(
    options: list[str],
    named: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: CaptureFixture,
) -> None:
    _write(tmp_path / "hi.json", HI)
    monkeypatch.chdir(tmp_path)
    _stdin(monkeypatch, json.dumps(HI).encode())
    assert main(["prune", *options, "--template", "auto"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == [
        f"orion-messages: error: {named} name - (standard input), which can be read only once"
    ]
    assert sys.stdin.read() == json.dumps(HI)  # refused before anything was read


# --- Several paths: each one that cannot be read is an invalid entry; the others are checked ---


def test_validate_checks_the_rest_after_a_missing_path_or_an_empty_folder(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    ok = _write(tmp_path / "ok.json", HI)
    missing = tmp_path / "missing.json"
    empty = tmp_path / "empty"
    empty.mkdir()
    cut = tmp_path / "cut.json"
    cut.write_text('[{"id": "msg-1"', encoding="utf-8")  # cut short: malformed, on line 1
    argv = [str(ok), str(missing), str(empty), str(cut)]
    assert main(["validate", *argv]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    out = _lines(captured.out)
    assert out[:2] == [
        f"{missing}: no such file or folder",
        f"{empty}: no .json, .jsonl or .ndjson files in this folder",
    ]
    assert out[2].startswith(f"{cut}:1:")
    assert out[3:] == ["checked 3 files and 1 folder (1 message in the valid ones): 3 invalid (3 errors)"]

    assert main(["validate", "--format", "json", *argv]) == 1
    report = json.loads(capsys.readouterr().out)  # stdout is one JSON report, as for any invalid file
    assert [(item["path"], item["format"], item["valid"]) for item in report["files"]] == [
        (str(ok), "json", True),
        (str(missing), "json", False),  # the format its extension names
        (str(empty), None, False),  # a folder names none
        (str(cut), "json", False),
    ]
    assert report["files"][1]["errors"] == [
        {"location": "", "message": "no such file or folder", "line": None, "column": None}
    ]
    assert report["counts"] == {"files": 4, "valid": 1, "invalid": 3, "errors": 3, "warnings": 0}


def test_validate_reports_a_file_it_cannot_open_and_a_folder_it_cannot_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    # Tests may run as root, where permissions do not stop reading: the refusals are simulated.
    ok = _write(tmp_path / "ok.json", HI)
    locked = _write(tmp_path / "locked.json", HI)
    closed = tmp_path / "closed"
    closed.mkdir()
    real_open, real_walk = os.open, os.walk

    def refusing_open(path: Any, flags: int, *args: Any) -> int:
        if os.fspath(path) == str(locked):
            raise PermissionError(errno.EACCES, "Permission denied", str(locked))
        return real_open(path, flags, *args)

    def refusing_walk(top: Any, onerror: Any = None) -> Any:
        if os.fspath(top) == str(closed):
            onerror(PermissionError(errno.EACCES, "Permission denied", str(closed)))
            return
        yield from real_walk(top, onerror=onerror)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr(os, "walk", refusing_walk)
    assert main(["validate", str(locked), str(closed), str(ok)]) == 1
    assert _lines(capsys.readouterr().out) == [
        f"{locked}: cannot read it: Permission denied",
        f"{closed}: cannot list this folder: Permission denied",
        "checked 2 files and 1 folder (1 message in the valid ones): 2 invalid (2 errors)",
    ]


def test_validate_usage_errors_stay_exit_2(hand: Path, capsys: CaptureFixture) -> None:
    assert main(["validate", "--frobnicate", str(hand), "missing.json"]) == 2
    assert capsys.readouterr().out == ""


# --- Empty standard input is an empty document, refused as an empty .json file is ---


@pytest.mark.parametrize("command", ["validate", "stats"])
def test_empty_standard_input_is_refused(
    command: str, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    _stdin(monkeypatch, b"")  # as `cat missing 2>/dev/null | orion-messages validate -` gives it
    assert main([command, "-"]) == 1
    captured = capsys.readouterr()
    if command == "validate":
        assert _lines(captured.out)[0] == "<stdin>:1:0: malformed JSON: the document is empty"
    else:
        assert captured.out == ""
        assert _lines(captured.err) == [
            "orion-messages: error: <stdin>:1:0: malformed JSON: the document is empty"
        ]


def test_blank_standard_input_is_refused_as_a_blank_json_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    blank = tmp_path / "blank.json"
    blank.write_bytes(b" \n\n")
    assert main(["validate", "-q", str(blank)]) == 1
    from_file = capsys.readouterr().out
    _stdin(monkeypatch, b" \n\n")
    assert main(["validate", "-q", "-"]) == 1
    assert capsys.readouterr().out == from_file.replace(str(blank), "<stdin>")
    # serde_json places an empty document at its end: line 3, no byte before it there.
    assert from_file.startswith(f"{blank}:3:0: malformed JSON: the document is empty")


def test_an_empty_log_file_is_still_a_valid_empty_log(tmp_path: Path, capsys: CaptureFixture) -> None:
    (tmp_path / "empty.jsonl").write_bytes(b"")  # append_jsonl's log before its first message
    assert main(["validate", str(tmp_path / "empty.jsonl")]) == 0
    assert _lines(capsys.readouterr().out) == ["checked 1 file (0 messages in the valid ones): all valid"]


# --- --template-file is read only by --template auto ---


@pytest.mark.parametrize("template_file", ["llama.jinja", "missing.jinja"])
def test_template_file_without_template_auto_is_one_usage_line(
    template_file: str, tmp_path: Path, capsys: CaptureFixture
) -> None:
    conversation = _write(tmp_path / "hi.json", HI)
    (tmp_path / "llama.jinja").write_text("<|start_header_id|>{{ m }}<|eot_id|>", encoding="utf-8")
    assert main(_templated(conversation, "--template-file", str(tmp_path / template_file))) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == [
        "orion-messages: error: --template-file is read only by --template auto, which detects the "
        "template from it; --template chatml names the template itself"
    ]


def test_template_auto_without_a_file_says_it_falls_back_to_chatml(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    conversation = _write(tmp_path / "hand.json", HAND)
    argv = ["prune", str(conversation), "--max-context-tokens", "60", "--max-response-tokens", "0"]
    assert main([*argv, "--template", "chatml", "--format", "json"]) == 0
    chatml = capsys.readouterr()
    assert main([*argv, "--template", "auto", "--format", "json"]) == 0
    auto = capsys.readouterr()
    assert auto.out == chatml.out  # the same plan
    # auto is spelled as template names may be (docs/templates.md: trimmed, ASCII letters in any case)
    for spelling in ("Auto", " AUTO\t"):
        assert main([*argv, "--template", spelling, "--format", "json"]) == 0
        assert capsys.readouterr() == auto
    assert chatml.err == ""
    assert _lines(auto.err) == [
        "orion-messages: note: --template auto without --template-file: no chat template to detect "
        "from, so chatml, as orion-core uses for a model without one"
    ]


# --- Repeated keys in a log: every one still found, the scanner run only where one may be ---


def test_repeated_keys_in_a_log_are_found_past_colons_and_escapes(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    log = tmp_path / "dup.jsonl"
    log.write_text(
        '{"id":"m1","role":"user","role":"user","content":"a: b \\u003a c","timestamp":1}\n'
        '{"id":"m2","role":"user","content":"x:y","timestamp":2}\n'
        '{"id":"m3","role":"user","content":"x:y:z","content":"w","timestamp":3}\n'
        '{"id":"m4","role":"assistant","content":"","timestamp":4,'
        '"tool_calls":[{"id":"c1","name":"a","name":"b","arguments":{"k":1,"k":2}}]}\n'
        '{"id":"m5","role":"assistant","content":"","timestamp":5,'
        '"tool_calls":[{"id":"c2","name":"a","arguments":{"k:":1,"k:":2}}]}\n'
        '{"id":"m6","role":"user","content":"big","timestamp":6,"x":123456789012345678901234567890,"id":"m7"}\n',
        encoding="utf-8",
    )
    assert main(["validate", "-q", str(log)]) == 1
    assert _lines(capsys.readouterr().out) == [
        f'{log}:1: duplicate key "role" in one object',  # beside an escaped colon
        f'{log}:3: duplicate key "content" in one object',  # the value left out holds colons
        f'{log}:4: tool_calls[0]: duplicate key "name" in one object',  # not arguments' "k"
        f'{log}:6: duplicate key "id" in one object',  # beside an integer orjson cannot read
    ]


def _json_text(value: Any, *, escapes: dict[str, str]) -> str:
    """``value`` as JSON, objects given as lists of pairs so that keys may repeat; in strings,
    each character of ``escapes`` written as its escape (``\\u003a`` for a colon)."""
    if isinstance(value, tuple):
        return "{" + ",".join(f"{_json_text(k, escapes=escapes)}:{_json_text(v, escapes=escapes)}" for k, v in value) + "}"  # fmt: skip
    if isinstance(value, list):
        return "[" + ",".join(_json_text(item, escapes=escapes) for item in value) + "]"
    text = json.dumps(value, ensure_ascii=False)
    if isinstance(value, str):
        for character, escape in escapes.items():
            text = text.replace(character, escape)
    return text


_KEYS = st.sampled_from(["id", "role", "content", "a", ":", "a:b", "", "é"])
_VALUES = st.recursive(
    st.none() | st.integers() | st.text(alphabet=':<"\\ab{}é\u2028', max_size=6),
    lambda children: (
        st.lists(children, max_size=3).map(list) | st.lists(st.tuples(_KEYS, children), max_size=4).map(tuple)
    ),
    max_leaves=12,
)


# A colon escaped in either case; "<" as HTML-safe writers escape it (which makes no colon).
_ESCAPES = st.sampled_from(
    [{}, {":": "\\u003a"}, {":": "\\u003A"}, {"<": "\\u003c"}, {":": "\\u003a", "<": "\\u003C"}]
)


@given(pairs=st.lists(st.tuples(_KEYS, _VALUES), max_size=6), escapes=_ESCAPES, array=st.booleans())
def test_the_repeated_key_filter_never_skips_a_record_the_scanner_would_flag(
    pairs: list[tuple[str, Any]], escapes: dict[str, str], array: bool
) -> None:
    from orion_messages._json_rules import may_repeat_keys, scan_repeated_keys

    record = _json_text(tuple(pairs), escapes=escapes).encode()
    if array:  # a conversation's document: an array of objects
        record = b"[" + record + b"," + _json_text(tuple(reversed(pairs)), escapes=escapes).encode() + b"]"
    if scan_repeated_keys(record):  # the scanner itself, without the check under test
        assert may_repeat_keys(record)
    elif b"\\u003a" not in record.lower():  # and it lets every other record through without the scanner
        assert not may_repeat_keys(record)


# --- JSON reports escape what a terminal would act on; converted data stays orion-core's bytes ---


def test_json_reports_escape_del_c1_and_line_separators(tmp_path: Path, capsys: CaptureFixture) -> None:
    odd = "x\x7f\x85\u2028\u202e"
    bad = tmp_path / f"{odd}.json"
    bad.write_text("[", encoding="utf-8")
    good = _write(tmp_path / f"{odd}-ok.json", HI)
    for argv, path in (
        (["validate", "--format", "json", str(bad)], ["files", 0, "path"]),
        (["stats", "--format", "json", str(good)], ["path"]),
        (["prune", "--format", "json", str(good)], ["path"]),
    ):
        main(argv)
        out = capsys.readouterr().out
        assert not set(out) & set(odd[1:]), argv
        assert "x\\u007f\\u0085\\u2028\\u202e" in out
        value: Any = json.loads(out)  # the same data
        for step in path:
            value = value[step]
        assert value == str(bad if argv[0] == "validate" else good)


def test_json_report_escapes_as_text_output_does() -> None:
    from orion_messages._cli_text import json_report

    text = json_report({"k": "café 😀 \U000e0001 \x9b \n"})
    assert text == '{\n  "k": "café 😀 \\udb40\\udc01 \\u009b \\n"\n}'


@pytest.mark.skipif(sys.platform == "win32", reason="file names of arbitrary bytes are POSIX")
def test_a_json_report_on_a_file_name_that_is_not_utf8_is_json_strict_readers_take(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # The byte 0xFF came out as the lone surrogate escape \udcff, which serde_json and orjson refuse.
    name = os.fsdecode(bytes(tmp_path) + b"/bad\xff.json")
    Path(name).write_bytes((FIXTURES / "own" / "conversation.json").read_bytes())
    assert main(["validate", "--format", "json", name]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["files"][0]["path"] == f"{tmp_path}/bad\\udcff.json"


def test_converted_data_keeps_orion_cores_bytes(tmp_path: Path, capsys: CaptureFixture) -> None:
    source = tmp_path / "odd.json"
    source.write_bytes('[{"id":"a\x7f\x85\u2028","role":"user","content":"hi","timestamp":1}]'.encode())
    assert main(["convert", str(source), "-", "--to", "jsonl"]) == 0
    assert capsys.readouterr().out == '{"id":"a\x7f\x85\u2028","role":"user","content":"hi","timestamp":1}\n'


# --- Stores: conversations counted as such, prune writes to one, no "[Errno 2]" ---


def test_validate_counts_stored_conversations(tmp_path: Path, capsys: CaptureFixture) -> None:
    hi = _write(tmp_path / "hi.json", HI)
    store = f"sqlite:///{tmp_path / 'chats.db'}"
    for name in ("a", "b"):
        assert main(["convert", str(hi), f"{store}?conversation={name}"]) == 0
    capsys.readouterr()
    assert main(["validate", store]) == 0
    assert _lines(capsys.readouterr().out) == [
        "checked 2 stored conversations (2 messages in the valid ones): all valid"
    ]
    assert main(["validate", store, str(hi)]) == 0
    assert _lines(capsys.readouterr().out) == [
        "checked 2 stored conversations and 1 file (3 messages in the valid ones): all valid"
    ]


def test_prune_writes_to_a_store_url(hand: Path, tmp_path: Path, capsys: CaptureFixture) -> None:
    target = f"sqlite:///{tmp_path / 'chats.db'}?conversation=p"
    argv = ["prune", str(hand), "--max-context-tokens", "60", "--max-response-tokens", "0"]
    assert main([*argv, "-o", target, "--to", "json"]) == 2  # no file format for a store
    assert "--to is for a file or -" in capsys.readouterr().err
    assert main([*argv, "-o", str(tmp_path / "pruned.json")]) == 0
    assert main([*argv, "-o", target]) == 0
    assert _lines(capsys.readouterr().out)[-1] == f"wrote 6 messages to {target}"
    assert main(["convert", target, str(tmp_path / "back.json")]) == 0
    assert (tmp_path / "back.json").read_bytes() == (tmp_path / "pruned.json").read_bytes()


def test_a_missing_folder_for_a_new_store_is_said_without_errno(
    hand: Path, tmp_path: Path, capsys: CaptureFixture
) -> None:
    target = f"sqlite:///{tmp_path / 'nodir' / 'x.db'}?conversation=c"
    assert main(["convert", str(hand), target]) == 1
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: {target}: no such folder for the store's database"
    ]


def test_validate_lists_a_repeated_key_beside_another_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The load stops at the wrong role; the repeated key in [1] is a problem all the same.
    path = tmp_path / "both.json"
    path.write_text(
        '[{"id":"a","role":"Us","content":"x","timestamp":1},'
        '{"id":"b","role":"user","content":"y","timestamp":2,"token_count":1,"token_count":2}]'
    )
    for options in ([], ["--strict"]):
        assert main(["validate", *options, str(path)]) == 1
        out = capsys.readouterr().out
        assert f"{path}: [0].role: expected a role" in out
        assert f'{path}: [1]: duplicate key "token_count" in one object' in out
        assert "(2 errors)" in out


# --- validate holds one input's messages at a time; a .json file's repeated keys, found cheaply ---


@pytest.mark.parametrize("output", ["text", "json"])
@pytest.mark.parametrize("where", ["folder", "store"])
def test_validate_holds_one_inputs_messages_at_a_time(where: str, output: str, tmp_path: Path) -> None:
    import tracemalloc

    from orion_messages import loads

    # The summary needs each input's counts, not its messages: validating six conversations may
    # cost more than validating one by much less than one conversation's messages. Keeping every
    # input's messages until the end (as validate did, and for a store, loading every
    # conversation before checking the first) costs five conversations' worth more.
    conversation = [dict(HAND[1], id=f"m{i}", content=f"{i} " + "x" * 300) for i in range(400)]
    data = json.dumps(conversation).encode()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        messages = loads(data)
        kept = tracemalloc.get_traced_memory()[0] - before
        del messages
    finally:
        tracemalloc.stop()

    def peak(count: int) -> int:
        folder = tmp_path / f"{count}"
        folder.mkdir()
        for index in range(count):
            (folder / f"c{index}.json").write_bytes(data)
        target = str(folder)
        if where == "store":
            target = f"sqlite:///{folder / 'chats.db'}"
            for index in range(count):
                argv = ["convert", str(folder / f"c{index}.json"), f"{target}?conversation=c{index}"]
                with contextlib.redirect_stdout(io.StringIO()):
                    assert main(argv) == 0
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            with contextlib.redirect_stdout(io.StringIO()) as out:
                assert main(["validate", "--format", output, target]) == 0
            used = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        assert f"{count * 400:,} messages" in out.getvalue() or '"messages": 400' in out.getvalue()
        return used

    one, six = peak(1), peak(6)
    assert kept > len(data)  # the messages themselves are measured: the comparison means something
    assert six - one < kept, (one, six, kept)


def test_validate_of_a_store_opens_every_store_before_checking_any(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # Conversations are loaded one at a time, but a store URL that cannot be opened still stops
    # the run before anything is checked (nothing on stdout), as docs/cli.md says.
    store = f"sqlite:///{tmp_path / 'chats.db'}"
    bad = _write(tmp_path / "bad.json", [dict(HI[0], role="User")])
    assert main(["convert", str(_write(tmp_path / "hi.json", HI)), f"{store}?conversation=a"]) == 0
    capsys.readouterr()
    missing = f"sqlite:///{tmp_path / 'missing.db'}"
    assert main(["validate", str(bad), store, missing]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert _lines(captured.err) == [
        f"orion-messages: error: {missing[len('sqlite:///') :]}: no such store database; nothing was created"
    ]


_REPEATED_CASES = {
    # hand-written from docs/cli.md (errors: a known key repeated in a message's, tool call's or
    # tool result's own keys; none inside arguments or an unknown key's value)
    "message": (
        '[{"id":"a","role":"user","content":"x","timestamp":1,"id":"b"}]',
        ['[0]: duplicate key "id" in one object'],
    ),
    "escaped-spelling": (
        '[{"id":"a","role":"user","content":"x","timestamp":1,"\\u0069d":"b"}]',
        ['[0]: duplicate key "id" in one object'],
    ),
    "tool-call": (
        '[{"id":"a","role":"assistant","content":"","timestamp":1,'
        '"tool_calls":[{"id":"c","name":"n","name":"m","arguments":{}}]}]',
        ['[0].tool_calls[0]: duplicate key "name" in one object'],
    ),
    "tool-result": (
        '[{"id":"a","role":"tool_result","content":"","timestamp":1,"tool_result":'
        '{"tool_call_id":"c","tool_name":"n","content":"","is_error":false,"is_error":true}}]',
        ['[0].tool_result: duplicate key "is_error" in one object'],
    ),
    "two-messages": (
        '[{"id":"a","role":"user","content":"x","timestamp":1,"pinned":true,"pinned":false},'
        '{"id":"b","role":"user","content":"y","timestamp":2,"timestamp":3}]',
        ['[0]: duplicate key "pinned" in one object', '[1]: duplicate key "timestamp" in one object'],
    ),
    "beside-a-load-error": (  # the load stops at the role; the repeated key is listed all the same
        '[{"id":"a","role":"Us","content":"x","timestamp":1},'
        '{"id":"b","role":"user","content":"y","timestamp":2,"token_count":1,"token_count":2}]',
        [
            '[0].role: expected a role, one of "system", "user", "assistant", "tool_call" or '
            '"tool_result", found the string "Us"',
            '[1]: duplicate key "token_count" in one object',
        ],
    ),
    "in-arguments": (
        '[{"id":"a","role":"assistant","content":"","timestamp":1,'
        '"tool_calls":[{"id":"c","name":"n","arguments":{"k":1,"k":2}}]}]',
        [],
    ),
    "in-an-unknown-value": (
        '[{"id":"a","role":"user","content":"x","timestamp":1,"extra":{"q":1,"q":2}}]',
        [],
    ),
}


@pytest.mark.parametrize("case", list(_REPEATED_CASES))
@pytest.mark.parametrize("command", ["stats", "prune", "convert"])
def test_stats_prune_and_convert_refuse_a_repeated_known_key(
    case: str, command: str, tmp_path: Path, capsys: CaptureFixture
) -> None:
    # orion-core refuses such a file ("duplicate field"), so these commands do too, as before:
    # exit 1, one line per problem, nothing written. They never show semantic problems.
    text, problems = _REPEATED_CASES[case]
    path = tmp_path / "in.json"
    path.write_text(text, encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = {
        "stats": ["stats", str(path)],
        "prune": ["prune", str(path)],
        "convert": ["convert", str(path), str(out)],
    }
    code = main(argv[command])
    captured = capsys.readouterr()
    if not problems:
        assert code == 0, captured.err
        assert captured.err == ""
        assert out.exists() == (command == "convert")
        return
    assert code == 1
    assert captured.out == ""
    first, *rest = problems
    assert _lines(captured.err) == [
        f"orion-messages: error: {path}: {first}",
        *(f"orion-messages: {path}: {problem}" for problem in rest),
    ]
    assert not out.exists()


@pytest.mark.parametrize("command", ["validate", "stats", "prune", "convert"])
def test_the_repeated_key_scanner_runs_only_where_a_key_may_repeat(
    command: str, hand: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: CaptureFixture
) -> None:
    # The scanner (json.loads with a Python hook on every object) costs more than the load: it
    # is skipped for a .json file where no key repeats, and where one may, it runs before the
    # messages are built, so that its objects and the messages are never in memory together.
    from orion_messages import _cli_input, _json_rules

    calls: list[str] = []
    scan, load = _json_rules.scan_repeated_keys, _cli_input.loads  # type: ignore[attr-defined]

    def scanning(data: Any) -> Any:
        calls.append("scan")
        return scan(data)

    def loading(data: Any, *, strict: bool = False) -> Any:
        calls.append("load")
        return load(data, strict=strict)

    monkeypatch.setattr(_json_rules, "scan_repeated_keys", scanning)
    monkeypatch.setattr(_cli_input, "loads", loading)
    escaped = tmp_path / "escaped.json"  # "<" as HTML-safe writers escape it: no colon
    escaped.write_text(json.dumps(HAND).replace("Read two", "Read \\u003c two"), encoding="utf-8")
    repeated = tmp_path / "repeated.json"
    repeated.write_text(_REPEATED_CASES["message"][0], encoding="utf-8")
    out = tmp_path / "out.jsonl"
    for path, expected, code in (
        (hand, ["load"], 0),
        (escaped, ["load"], 0),
        (repeated, ["scan", "load"], 1),
    ):
        calls.clear()
        argv = [command, str(path), *([str(out)] if command == "convert" else [])]
        assert main(argv) == code
        assert calls == expected, path
    capsys.readouterr()


def test_validate_counts_every_repeated_key_past_the_librarys_first_hundred(
    tmp_path: Path, capsys: CaptureFixture
) -> None:
    # 150 messages, each with its timestamp twice: 150 errors. FormatError keeps 100 problems;
    # validate listed only those without --strict and counted the rest twice with it.
    path = tmp_path / "many.json"
    path.write_text(
        "["
        + ",".join(
            f'{{"id":"m{i}","role":"user","content":"x","timestamp":1,"timestamp":2}}' for i in range(150)
        )
        + "]",
        encoding="utf-8",
    )
    for options in ([], ["--strict"]):
        assert main(["validate", "--format", "json", *options, str(path)]) == 1
        report = json.loads(capsys.readouterr().out)
        assert report["counts"]["errors"] == 150
        # The first 100 listed (MAX_REPORTED_PROBLEMS, for .json and .jsonl alike), 50 counted.
        assert [e["location"] for e in report["files"][0]["errors"]] == [f"[{i}]" for i in range(100)]
        assert report["files"][0]["omitted"] == 50
    # The same with one id for all: 149 duplicate ids, warnings (errors with --strict).
    twins = tmp_path / "twins.json"
    twins.write_text(re.sub(r'"id":"m[0-9]+"', '"id":"twin"', path.read_text()), encoding="utf-8")
    assert main(["validate", "--format", "json", str(twins)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["counts"]["errors"], report["counts"]["warnings"]) == (150, 149)
    assert main(["validate", "--format", "json", "--strict", str(twins)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert (report["counts"]["errors"], report["counts"]["warnings"]) == (299, 0)
    assert main(["stats", str(path)]) == 1
    assert _lines(capsys.readouterr().err)[-1] == f"orion-messages: {path}: ... and 130 more problems"


# --- argparse's own errors are escaped as every other line (audit) ---


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "a.json", "b.json", "\x1b]0;pwn\x07"],  # unrecognized arguments
        ["validate", "a.json", "--\x1b[2J"],  # an unknown option, named as typed
        ["stats", "a.json", "--format", "\x1b[2J"],  # an invalid choice
        ["\x1b[2J"],  # an unknown command
    ],
)
def test_usage_errors_escape_the_arguments_they_quote(argv: list[str], capsys: CaptureFixture) -> None:
    # docs/cli.md: what comes from the user's input is printed with repr-style escapes, as file
    # names are; a usage error is still exit 2 with the usage.
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "\x07" not in err
    assert "\\x1b" in err
    assert err.splitlines()[-1].startswith("orion-messages")
    assert ": error: " in err.splitlines()[-1]


# --- a blank document is an empty document, where the library places it (audit) ---


@pytest.mark.parametrize(
    "argv",
    [
        ["stats", "-"],
        ["convert", "-", "out.json"],
        ["convert", "-", "out.json", "--from", "openai"],
        ["convert", "-", "out.json", "--from", "anthropic"],
    ],
)
@pytest.mark.parametrize("blank", [b"  \n", b"  ", b"\n\n", b"\t\r\n "])
def test_blank_standard_input_is_told_as_the_library_tells_an_empty_document(
    argv: list[str],
    blank: bytes,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: CaptureFixture,
) -> None:
    # docs/cli.md: empty standard input, or only spaces, tabs and newlines, is an empty document,
    # "malformed JSON: the document is empty"; its place is the one the library reports.
    with pytest.raises(FormatError) as refused:
        loads(blank)
    (problem,) = refused.value.problems
    monkeypatch.chdir(tmp_path)
    _stdin(monkeypatch, blank)
    assert main(argv) == 1
    assert _lines(capsys.readouterr().err) == [
        f"orion-messages: error: <stdin>:{problem.line}:{problem.column}: malformed JSON: the document is empty"
    ]
    assert not (tmp_path / "out.json").exists()


# --- from an audit of the commands besides convert -------------------------------------------


def _users(count: int, *, same_id: bool) -> list[dict[str, Any]]:
    return [
        {"id": "msg-1" if same_id else f"msg-{i}", "role": "user", "content": "x", "timestamp": 1}
        for i in range(1, count + 1)
    ]


def test_validate_counts_every_warning_past_the_listed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 150 messages with one id: 149 duplicate-id warnings, the first 100 listed.
    path = tmp_path / "dups.json"
    path.write_text(json.dumps(_users(150, same_id=True)))
    assert main(["validate", "--format", "json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    (entry,) = report["files"]
    assert (len(entry["warnings"]), entry["omitted"], report["counts"]["warnings"]) == (100, 49, 149)


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_validate_lists_the_same_number_of_errors_for_both_formats(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    # 150 messages with a timestamp of the wrong type: 150 errors, the first 100 listed.
    bad = [{**message, "timestamp": "1"} for message in _users(150, same_id=False)]
    path = tmp_path / f"bad{suffix}"
    path.write_text(json.dumps(bad) if suffix == ".json" else "".join(json.dumps(m) + "\n" for m in bad))
    assert main(["validate", "--format", "json", str(path)]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert (len(entry["errors"]), entry["omitted"]) == (100, 50)


@pytest.mark.parametrize("stdin", [False, True])
def test_validate_places_each_problem_of_a_long_log_on_its_line_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdin: bool
) -> None:
    # 5,000 records, more than are read at once: an unknown value left out in a run that reads
    # at once (nested 125 levels: orjson reads it, so the run is read joined), another beside a
    # wrong timestamp (its run is then read record by record; 1e400, which orjson refuses), and
    # a repeated key far on. Lines are 1-based; each problem once, where the hand put it.
    lines = [json.dumps(message) for message in _users(5000, same_id=False)]
    lines[10] = '{"id":"u1","role":"user","content":"x","timestamp":1,"x":' + "[" * 125 + "]" * 125 + "}"
    lines[2999] = '{"id":"u2","role":"user","content":"x","timestamp":1,"y":1e400}'
    lines[3000] = '{"id":"w","role":"user","content":"x","timestamp":"late"}'
    lines[4500] = '{"id":"d","role":"user","role":"user","content":"x","timestamp":1}'
    data = "".join(line + "\n" for line in lines)
    path = tmp_path / "long.jsonl"
    path.write_text(data)
    if stdin:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    assert main(["validate", "--format", "json", "-" if stdin else str(path)]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert [(e["line"], e["location"]) for e in entry["errors"]] == [(3001, "timestamp"), (4501, "")]
    assert [(w["line"], w["message"][:16]) for w in entry["warnings"]] == [
        (11, 'unknown key "x" '),
        (3000, 'unknown key "y" '),
    ]


@pytest.mark.parametrize("stdin", [False, True])
def test_validate_reports_a_torn_last_line_after_the_lines_before_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdin: bool
) -> None:
    # 150 lines whose content is a number, then a torn line (line 151): with --strict, all 151
    # are errors, listed in line order, so the first 100 are lines 1 to 100 and 51 are counted.
    bad = [json.dumps({**message, "content": 5}) for message in _users(150, same_id=False)]
    data = "".join(line + "\n" for line in bad) + '{"id":"t"'
    path = tmp_path / "torn.jsonl"
    path.write_text(data)
    if stdin:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data.encode())))
    assert main(["validate", "--strict", "--format", "json", "-" if stdin else str(path)]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert [e["line"] for e in entry["errors"]] == list(range(1, 101))
    assert entry["omitted"] == 51


def test_validate_finds_a_repeated_key_deep_in_a_long_event_stream(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Runs of records are checked for repeated keys at once; the one line that repeats a key
    # (message_start's "message", which serde refuses) is still found and placed.
    lines = ['{"type":"agent_start"}'] + ['{"type":"turn_start"}'] * 4999
    message = '{"id":"m","role":"user","content":"x","timestamp":1}'
    lines[3210] = f'{{"type":"message_start","message":{message},"message":{message}}}'
    path = tmp_path / "events.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    assert main(["validate", "--format", "json", str(path)]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert [(e["line"], e["message"]) for e in entry["errors"]] == [
        (3211, 'duplicate key "message" in one object')
    ]


def test_validate_reads_standard_input_once(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "-", "-"]) == 2
    assert "PATH 1 and PATH 2 both name - (standard input)" in capsys.readouterr().err


def test_validate_checks_a_store_named_twice_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from orion_messages.store import open_store

    url = f"sqlite:///{tmp_path / 's.db'}"
    with open_store(url) as store:
        for name in ("a", "b", "c"):
            store.create(name)
    assert main(["validate", "--format", "json", url, url]) == 0
    assert len(json.loads(capsys.readouterr().out)["files"]) == 3


def test_prune_refuses_to_without_an_output(hand: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["prune", str(hand), "--to", "json"]) == 2
    assert "--to is for the pruned messages' format: it needs -o/--output" in capsys.readouterr().err


def test_a_closed_standard_output_is_one_error_line(hand: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "orion_messages", "stats", str(hand)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=lambda: os.close(1),  # the child starts with fd 1 closed
    )
    assert (result.returncode, _lines(result.stderr)) == (
        1,
        ["orion-messages: error: standard output is closed"],
    )


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "command",
    [
        ["stats", "HAND"],
        ["validate", "HAND"],
        ["validate", "--format", "json", "HAND"],
        # argparse ignores a failed write: these exited 0, having printed nothing anywhere.
        ["--help"],
        ["stats", "--help"],
        ["--version"],
        ["schema"],
        ["schema", "--out", "-"],
    ],
)
def test_a_full_standard_output_is_named(hand: Path, command: list[str]) -> None:
    # Without an empty name; and, since the audit, with the stream's: "error: No space left on device".
    argv = [str(hand) if arg == "HAND" else arg for arg in command]
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [sys.executable, "-m", "orion_messages", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    assert (result.returncode, _lines(result.stderr)) == (
        1,
        [f"orion-messages: error: <stdout>: cannot write: {os.strerror(errno.ENOSPC)}"],
    )


@pytest.mark.parametrize("command", [["validate", "LOG"], ["schema"]])
def test_a_closed_pipe_is_its_own_exit_status(tmp_path: Path, command: list[str]) -> None:
    # The reader is gone before the first write (as after `| head -c1`): not exit 1, which
    # says an input is invalid; 141 as a shell shows a tool SIGPIPE ended; and nothing printed.
    log = tmp_path / "log.jsonl"
    log.write_text("".join(f'{{"id":"m","role":"user","content":"","timestamp":{k}}}\n' for k in range(3000)))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "orion_messages", *[str(log) if arg == "LOG" else arg for arg in command]],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (result.returncode, result.stderr) == (141, "")


@pytest.mark.parametrize("target", ["json", "openai"])
def test_a_pipe_closed_in_the_middle_of_the_data_is_exit_141_too(tmp_path: Path, target: str) -> None:
    # docs/cli.md: a reader gone while the data is written (`| head -c 10`) is exit 141, not 0
    # with the data cut short, nor 1: the reader takes a little, then closes its end. Unbuffered
    # (as this machine runs Python), a write the closed pipe cuts short returns no error.
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            f'{{"id":"m{k}","role":"user","content":"{"x" * 200}","timestamp":{k}}}\n' for k in range(40_000)
        )
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "orion_messages", "convert", str(log), "-", "--to", target],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    assert process.stderr is not None
    assert process.stdout.read(3) == b'[{"'
    process.stdout.close()
    assert (process.wait(timeout=120), process.stderr.read()) == (141, b"")


@pytest.mark.parametrize("unbuffered", [True, False])
def test_a_non_blocking_standard_output_gets_all_the_data(tmp_path: Path, unbuffered: bool) -> None:
    # An output inherited non-blocking (a parent set O_NONBLOCK on the pipe) takes part of a
    # large write, or nothing, while its reader is still there: all of it arrives, exit 0.
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(
            f'{{"id":"m{k}","role":"user","content":"{"x" * 200}","timestamp":{k}}}\n' for k in range(20_000)
        )
    )
    expected = tmp_path / "expected.json"
    assert main(["convert", str(log), str(expected)]) == 0
    env = {key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"}
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    process = subprocess.Popen(
        [sys.executable, "-m", "orion_messages", "convert", str(log), "-", "--to", "json"],
        stdout=write_end,
        stderr=subprocess.PIPE,
        env={**env, "PYTHONUNBUFFERED": "1"} if unbuffered else env,
    )
    os.close(write_end)
    time.sleep(0.5)  # the pipe fills meanwhile
    with os.fdopen(read_end, "rb") as reader:
        got = reader.read()
    assert process.stderr is not None
    assert (process.wait(timeout=120), process.stderr.read()) == (0, b"")
    assert got == expected.read_bytes()


def test_a_file_name_read_as_an_option_gets_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-dash.json").write_text("[]", encoding="utf-8")
    result = _run("stats", "-dash.json")
    assert result.returncode == 2
    assert _lines(result.stderr)[-1] == (
        "orion-messages: hint: -dash.json is read as an option; for the file of that name, write ./-dash.json"
    )
    assert _run("stats", "./-dash.json").returncode == 0  # as the hint says
    assert "hint" not in _run("stats", "-x.json").stderr  # no such file: no hint


@pytest.mark.parametrize("depth", [1_000, 100_000])
@pytest.mark.parametrize(
    "command",
    [
        ["validate", "{}"],
        ["stats", "{}"],
        ["convert", "{}", "out.jsonl"],
        ["prune", "{}", "--max-context-tokens", "9"],
    ],
    ids=["validate", "stats", "convert", "prune"],
)
def test_a_deep_document_never_closed_is_one_line_not_a_traceback(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
    depth: int,
) -> None:
    # It was a RecursionError from the repeated-key scan: flattening the deep part left the
    # containers that are never closed, and the standard library's parser recursed on them.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.json").write_text("[" * depth)
    assert main([part.format("deep.json") for part in command]) == 1
    captured = capsys.readouterr()
    said = captured.out + captured.err  # validate reports on stdout, the others on stderr
    assert "Traceback" not in said
    assert re.search(r"deep\.json:1:\d+: malformed JSON: nested too deeply\n", said), (
        said
    )  # as closed ones are
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("first", "last", "shown"),
    [
        # Worked out by hand: 253402300799999 ms is the last millisecond of 9999-12-31, which a
        # float of the seconds rounded to .998; -1 ms is the last millisecond before the epoch.
        (253402300799999, 253402300799999, ("9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z")),
        (-62135596800000, -1, ("0001-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z")),
        (-62135596800001, 253402300800000, (None, None)),  # outside what an ISO date can say
    ],
)
def test_stats_shows_every_millisecond_exactly(
    tmp_path: Path, capsys: CaptureFixture, first: int, last: int, shown: tuple[str | None, str | None]
) -> None:
    document = [
        {"id": "a", "role": "user", "content": "x", "timestamp": first},
        {"id": "b", "role": "user", "content": "y", "timestamp": last},
    ]
    path = tmp_path / "stamps.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert main(["stats", "--format", "json", str(path)]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert (stats["first"], stats["last"]) == shown


def test_a_log_s_semantic_problems_are_placed_on_their_lines(tmp_path: Path, capsys: CaptureFixture) -> None:
    # cli.md: FILE:LINE: where a line is known, as for a JSON Lines record. A blank first line
    # puts message [1] on line 3; it was reported by its index alone.
    log = tmp_path / "log.jsonl"
    log.write_text(
        '\n{"id":"a","role":"user","content":"x","timestamp":1}\n{"id":"a","role":"user","content":"y","timestamp":2}\n'
    )
    assert main(["validate", str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f'{log}:3: [1].id: warning: duplicate message id "a" (first at [0])'
    )
    assert main(["validate", "--format", "json", str(log)]) == 0
    (warning,) = json.loads(capsys.readouterr().out)["files"][0]["warnings"]
    assert (warning["location"], warning["line"]) == ("[1].id", 3)


def test_a_folder_named_like_a_file_has_no_format(tmp_path: Path, capsys: CaptureFixture) -> None:
    # cli.md: a folder's format is null; a folder named d.json said "json".
    (tmp_path / "d.json").mkdir()
    assert main(["validate", "--format", "json", str(tmp_path / "d.json")]) == 1
    (entry,) = json.loads(capsys.readouterr().out)["files"]
    assert (entry["format"], entry["valid"]) == (None, False)


# --------------------------------------------------------------------------------------------
# passwords in arguments the command cannot use


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # argparse quoted the extra argument as typed.
        (
            ["stats", "a.json", "postgresql://bob:hunter2@h/db?conversation=c"],
            "orion-messages: error: unrecognized arguments: postgresql://bob:***@h/db?conversation=c",
        ),
        (
            ["list", "sqlite:///s.db", "postgresql://bob:p%40ss@h/db?password=hunter2"],
            "orion-messages: error: unrecognized arguments: postgresql://bob:***@h/db?password=***",
        ),
        # A scheme no command reads was taken for a file name: "no such file", password and all.
        (
            ["stats", "mysql://bob:hunter2@h/db?conversation=c"],
            "orion-messages stats: error: mysql://bob:***@h/db?conversation=c: not a store URL; expected "
            "sqlite:///PATH or postgresql://USER@HOST/DB (for a file of that name, write ./NAME)",
        ),
        (
            ["convert", "a.json", "postgresql+psycopg://bob:hunter2@h/db?conversation=c"],
            "orion-messages convert: error: postgresql+psycopg://bob:***@h/db?conversation=c: not a store URL;",
        ),
        (
            ["list", "HTTP://bob:hunter2@x/"],
            "orion-messages list: error: HTTP://bob:***@x/: not a store URL;",
        ),
        # Written --name=URL, the value alone is quoted.
        (
            ["list", "sqlite:///s.db", "--format=postgresql://bob:hunter2@h/db"],
            "orion-messages list: error: argument --format: invalid choice: 'postgresql://bob:***@h/db'",
        ),
        (
            ["stats", "a.json", "--bogus=postgresql://bob:hunter2@h/db"],
            "orion-messages: error: unrecognized arguments: --bogus=postgresql://bob:***@h/db",
        ),
        # Glued to a short option, the value alone is quoted (3.11, 3.12: "ignored explicit
        # argument '...'"; 3.13's argparse reads the rest as more short options and quotes none).
        (["validate", "-qpostgresql://bob:hunter2@h/db"], "orion-messages validate: error: "),
        # argparse quotes an invalid choice with repr(), a backslash doubled.
        (
            ["list", "sqlite:///s.db", "--format", "postgresql://bob:hunter2\\x@h/db"],
            "orion-messages list: error: argument --format: invalid choice: 'postgresql://bob:***@h/db'",
        ),
        (
            ["list", "sqlite:///s.db", "--format", "postgresql://bob:p\\@h/db"],
            "orion-messages list: error: argument --format: invalid choice: 'postgresql://bob:***@h/db'",
        ),
    ],
)
def test_a_usage_error_never_shows_a_password(argv: list[str], expected: str, capsys: CaptureFixture) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "hunter2" not in captured.err
    assert "p%40ss" not in captured.err
    assert _lines(captured.err)[-1].startswith(expected)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # "%65" is "e": masked in the URL, whatever its length, and nowhere else.
        (
            ["validate", "--bogus", "postgresql://u:%65@h/db"],
            "orion-messages: error: unrecognized arguments: --bogus",
        ),
        (
            ["list", "sqlite:///s.db", "postgresql://u:%65@h/db"],
            "orion-messages: error: unrecognized arguments: postgresql://u:***@h/db",
        ),
        (
            ["list", "sqlite:///s.db", "--format", "postgresql://me:ab@h/db?password=e"],
            "orion-messages list: error: argument --format: invalid choice: 'postgresql://me:***@h/db?password=***' "
            "(choose from ",
        ),
    ],
)
def test_a_short_password_is_masked_in_its_url_only(
    argv: list[str], expected: str, capsys: CaptureFixture
) -> None:
    assert main(argv) == 2
    assert _lines(capsys.readouterr().err)[-1].startswith(expected)


def test_a_postgresql_url_without_its_slashes_is_refused_without_its_password(capsys: CaptureFixture) -> None:
    # libpq echoed the whole text in its error ("missing "=" after ..."), password included.
    assert main(["stats", "postgresql:/bob:hunter2@127.0.0.1:1/db?conversation=c"]) == 1
    assert _lines(capsys.readouterr().err) == [
        "orion-messages: error: postgresql:/bob:***@127.0.0.1:1/db?conversation=c: "
        "expected postgresql://USER@HOST/DB (with the two slashes)"
    ]


def test_a_file_whose_name_looks_like_a_url_is_read_as_written_with_dot_slash(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "mysql:" / "x"
    folder.mkdir(parents=True)
    (folder / "c.json").write_bytes((FIXTURES / "own" / "conversation.json").read_bytes())
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "-q", "./mysql://x/c.json"]) == 0
    capsys.readouterr()


def test_validate_says_why_a_path_cannot_be_looked_up(tmp_path: Path, capsys: CaptureFixture) -> None:
    # os.path.lexists is False on ENAMETOOLONG and ENOTDIR: both were "no such file or folder".
    too_long = str(tmp_path / ("a" * 300 + ".json"))
    not_a_folder = tmp_path / "file.json"
    not_a_folder.write_text("[]")
    assert main(["validate", "-q", too_long, f"{not_a_folder}/x.json", str(tmp_path / "gone.json")]) == 1
    assert _lines(capsys.readouterr().out) == [
        f"{too_long}: cannot read it: {os.strerror(errno.ENAMETOOLONG)}",
        f"{not_a_folder}/x.json: cannot read it: {os.strerror(errno.ENOTDIR)}",
        f"{tmp_path / 'gone.json'}: no such file or folder",
    ]


@pytest.mark.skipif(sys.platform == "win32", reason="a write-only descriptor 0 is POSIX")
def test_a_standard_input_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    # "error: Bad file descriptor" said nothing of where.
    with open(tmp_path / "write-only", "w") as write_only:
        result = subprocess.run(
            [sys.executable, "-m", "orion_messages", "stats", "-"],
            stdin=write_only,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert (result.returncode, _lines(result.stderr)) == (
        1,
        [f"orion-messages: error: <stdin>: cannot read it: {os.strerror(errno.EBADF)}"],
    )


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
@pytest.mark.parametrize("to", ["json", "jsonl", "openai"])
def test_converted_data_on_a_terminal_escapes_what_a_terminal_acts_on(tmp_path: Path, to: str) -> None:
    # DEL, NEL (U+0085), the C1 CSI (U+009B) and a bidi override reached the terminal raw.
    import pty

    source = tmp_path / "odd.json"
    odd = "a\x7f\x85\x9b\u202e\u2028 café"
    source.write_text(json.dumps([{"id": odd, "role": "user", "content": odd, "timestamp": 1}]))
    leader, follower = pty.openpty()
    with os.fdopen(leader, "rb") as terminal:
        process = subprocess.Popen(
            [sys.executable, "-m", "orion_messages", "convert", str(source), "-", "--to", to],
            stdout=follower,
            stderr=subprocess.DEVNULL,
        )
        os.close(follower)
        assert process.wait(timeout=120) == 0
        shown = b""
        with contextlib.suppress(OSError):  # Linux: EIO once the terminal's other end is closed
            while chunk := terminal.read1(1 << 16):
                shown += chunk
    escaped = "a\\u007f\\u0085\\u009b\\u202e\\u2028 café".encode()
    assert escaped in shown
    assert not any(raw.encode() in shown for raw in "\x7f\x85\x9b\u202e\u2028")
    assert shown.endswith(b"\n")  # the prompt starts on a line of its own (a pipe gets no newline)
    line = shown.decode().replace("\r\n", "\n").strip()  # the terminal turns \n into \r\n
    value = json.loads(line)
    assert odd in json.dumps(value, ensure_ascii=False)


def test_schema_out_empty_is_a_usage_error(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Path("") is ".": the five schema files landed in the working folder.
    monkeypatch.chdir(tmp_path)
    assert main(["schema", "--out", ""]) == 2
    assert _lines(capsys.readouterr().err)[-1] == (
        "orion-messages schema: error: --out names no folder; give one, or - for standard output"
    )
    assert list(tmp_path.iterdir()) == []


def _peak_memory_of_validating(path: Path, lines: int) -> int:
    import tracemalloc

    path.write_text("x\n" * lines)
    tracemalloc.start()
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["validate", "-q", str(path)]) == 1
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_log_of_bad_lines_is_checked_in_memory_that_does_not_grow_with_it(tmp_path: Path) -> None:
    # Each bad line left its exception's reference cycles for the paused collector: 2 kB a line,
    # 540 MB for a million. Four times the lines may not take near four times the memory.
    small = _peak_memory_of_validating(tmp_path / "small.jsonl", 2_000)
    large = _peak_memory_of_validating(tmp_path / "large.jsonl", 8_000)
    assert large < 2 * small


@pytest.mark.parametrize(
    "argv",
    [
        ["convert", "{conversation}", "", "--to", "openai"],
        ["convert", "{conversation}", "", "--to", "json"],
        ["prune", "{conversation}", "-o", ""],
        ["stats", ""],
    ],
)
def test_an_empty_path_argument_is_a_usage_error(argv: list[str], capsys: CaptureFixture) -> None:
    # `convert a.json "" --to openai` ended in a traceback (the writer's ArgumentValueError).
    conversation = str(FIXTURES / "own" / "conversation.json")
    assert main([item.format(conversation=conversation) for item in argv]) == 2
    assert _lines(capsys.readouterr().err)[-1].endswith(
        "error: an empty argument names no file: give a path, a store URL or -"
    )


def test_the_prune_report_counts_every_turn_kept_or_dropped(tmp_path: Path, capsys: CaptureFixture) -> None:
    # By hand, chars/4 and no template, 10 tokens of room: turn 2 ("hi", 1 token) is kept, 9
    # left; turn 1 (40 characters, 10 tokens) does not fit. Two turns, one kept, one dropped.
    path = tmp_path / "chat.json"
    messages = [
        {"id": "msg-1", "role": "user", "content": "a" * 40, "timestamp": 1},
        {"id": "msg-2", "role": "user", "content": "hi", "timestamp": 2},
    ]
    path.write_text(json.dumps(messages))
    argv = [
        "prune",
        str(path),
        "--max-context-tokens",
        "10",
        "--max-response-tokens",
        "0",
        "--format",
        "json",
    ]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["turns"], len(report["kept"]), len(report["dropped"])) == (2, 1, 1)
    assert (report["kept_tokens"], report["dropped_tokens"]) == (1, 10)


@pytest.mark.parametrize("stdin", [False, True])
def test_a_whole_record_with_junk_after_it_is_corrupt_not_torn(
    tmp_path: Path, capsys: CaptureFixture, monkeypatch: pytest.MonkeyPatch, stdin: bool
) -> None:
    # No part of a record is a whole JSON object: a last line holding one and more after it is
    # corrupt data (read_jsonl refuses it), from a file as from standard input.
    data = json.dumps(HAND[0]) + "\n" + json.dumps(HAND[1]) + " trailing"
    path = tmp_path / "log.jsonl"
    path.write_text(data, encoding="utf-8")
    with pytest.raises(FormatError, match="unexpected data after the end of the document"):
        read_jsonl(path)
    if stdin:
        _stdin(monkeypatch, data.encode())
    name = "<stdin>" if stdin else str(path)
    assert main(["validate", "-" if stdin else str(path)]) == 1
    first = _lines(capsys.readouterr().out)[0]
    assert first.startswith(f"{name}:2:")
    assert "unexpected data after the end of the document" in first


@pytest.mark.parametrize("typed", ["١٢٣", "3_000", " 7 ", "1e3", "abc", ""])
@pytest.mark.parametrize(
    ("command", "option", "what"),
    [
        (["prune", "HAND", "--max-response-tokens", "1"], "--max-context-tokens", "tokens"),
        (["convert", "OPENAI", "-", "--from", "openai"], "--timestamp", "milliseconds"),
    ],
)
def test_a_number_option_takes_ascii_digits_only(
    hand: Path, tmp_path: Path, capsys: CaptureFixture, command: list[str], option: str, what: str, typed: str
) -> None:
    # int() reads Arabic-Indic digits, underscores and spaces around: a typo became a number.
    openai = tmp_path / "oa.json"
    openai.write_text('[{"role":"user","content":"hi"}]', encoding="utf-8")
    argv = [{"HAND": str(hand), "OPENAI": str(openai)}.get(arg, arg) for arg in command]
    assert main([*argv, f"{option}={typed}"]) == 2
    assert _lines(capsys.readouterr().err)[-1].endswith(
        f"error: argument {option}: expected a whole number of {what}, found {typed!r}"
    )


def test_a_long_unknown_key_is_cut_in_the_warning(tmp_path: Path, capsys: CaptureFixture) -> None:
    # Printed whole before: a 1 MB key made a 1 MB line on the terminal.
    key = "k" * 1000
    path = tmp_path / "log.jsonl"
    path.write_text(
        f'{{"id":"m","role":"user","content":"a","timestamp":1,"{key}":1e400}}\n', encoding="utf-8"
    )
    assert main(["validate", str(path)]) == 0
    (warning, _summary) = _lines(capsys.readouterr().out)
    assert f'unknown key "{"k" * 37}..." left out' in warning
    assert len(warning) < 400


@pytest.mark.parametrize(("typed", "stamp"), [("-5", -5), ("+5", 5)])
def test_a_signed_timestamp_is_taken(tmp_path: Path, typed: str, stamp: int) -> None:
    openai = tmp_path / "oa.json"
    openai.write_text('[{"role":"user","content":"hi"}]', encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["convert", str(openai), str(out), "--from", "openai", f"--timestamp={typed}"]) == 0
    assert [message.timestamp for message in read_jsonl(out)] == [stamp]
