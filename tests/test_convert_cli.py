"""``orion-messages convert --to/--from``: format conversions on the command line."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from orion_messages import Message, ToolCall, dumps, load, loads
from orion_messages.cli import main

from .conftest import FIXTURES

GOLDENS = FIXTURES / "conversions"


def test_to_openai_writes_the_golden_and_prints_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    assert main(["convert", str(GOLDENS / "tool-loop.orion.json"), str(out), "--to", "openai"]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(
        (GOLDENS / "tool-loop.openai.json").read_text(encoding="utf-8")
    )
    printed = capsys.readouterr().out
    assert "wrote 9 messages" in printed
    assert "by field: id 9, timestamp 9, pinned 1, tool_result.is_error 1, tool_result.pending 1" in printed
    assert "[4].tool_result.is_error:" in printed


def test_strict_refuses_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out.json"
    source = str(GOLDENS / "tool-loop.orion.json")
    status = main(["convert", source, str(out), "--to", "anthropic", "--strict", "--accept", "id,timestamp"])
    assert status == 1
    assert not out.exists()
    errors = capsys.readouterr().err
    assert "[5].pinned: strict conversion refused" in errors
    assert "[0].id" not in errors


def test_from_anthropic_reads_a_request_body(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "chat.json"
    source = str(GOLDENS / "anthropic-weather.anthropic.json")
    assert main(["convert", source, str(out), "--from", "anthropic", "--timestamp", "1781600000000"]) == 0
    assert out.read_bytes() == (GOLDENS / "anthropic-weather.orion.json").read_bytes().strip()
    assert "nothing lost" in capsys.readouterr().out


def test_from_openai_accepts_a_request_object(tmp_path: Path) -> None:
    request = tmp_path / "request.json"
    request.write_text(
        json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}), encoding="utf-8"
    )
    out = tmp_path / "chat.jsonl"
    assert main(["convert", str(request), str(out), "--from", "openai", "--timestamp", "7"]) == 0
    assert out.read_text(encoding="utf-8") == '{"id":"msg-1","role":"user","content":"hi","timestamp":7}\n'


def test_chat_template_round_trip_on_the_command_line(tmp_path: Path) -> None:
    dicts, back = tmp_path / "dicts.json", tmp_path / "back.json"
    source = GOLDENS / "tool-loop.orion.json"
    assert main(["convert", str(source), str(dicts), "--to", "chat-template", "--arguments", "string"]) == 0
    assert main(["convert", str(dicts), str(back), "--from", "chat-template"]) == 0
    assert dumps(load(back)) == dumps(load(source))


def test_orphans_are_refused_unless_a_fix_is_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "chat.json"
    source.write_bytes(
        dumps([Message.assistant("m", "", [ToolCall(id="c", name="f", arguments={})], timestamp=0)])
    )
    out = tmp_path / "out.json"
    assert main(["convert", str(source), str(out), "--to", "openai"]) == 1
    assert '[0].tool_calls[0]: tool call "c" has no result' in capsys.readouterr().err
    assert main(["convert", str(source), str(out), "--to", "openai", "--orphans", "synthesize"]) == 0
    assert [m["role"] for m in json.loads(out.read_text(encoding="utf-8"))] == ["assistant", "tool"]


def test_invalid_foreign_input_names_the_location(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps([{"role": "user", "content": 5}]), encoding="utf-8")
    assert main(["convert", str(source), str(tmp_path / "out.json"), "--from", "openai"]) == 1
    assert "[0].content: expected a string or an array of content parts" in capsys.readouterr().err


def test_the_report_escapes_what_it_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "chat.json"
    source.write_bytes(
        b'[{"id":"\\u001b[31mred","role":"user","content":"x","timestamp":0,"x_\\u001b[2J":1}]'
    )
    assert len(loads(source.read_bytes())) == 1
    assert main(["convert", str(source), str(tmp_path / "out.json"), "--to", "openai"]) == 0
    printed = capsys.readouterr().out
    assert "\x1b" not in printed
    assert "\\x1b[2J" in printed


def test_two_foreign_formats_are_a_usage_error(tmp_path: Path) -> None:
    source = str(GOLDENS / "tool-loop.openai.json")
    assert main(["convert", source, str(tmp_path / "o.json"), "--from", "openai", "--to", "anthropic"]) == 2


def test_plain_convert_is_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "chat.jsonl"
    assert main(["convert", str(GOLDENS / "tool-loop.orion.json"), str(out)]) == 0
    assert len(out.read_text(encoding="utf-8").splitlines()) == 9


def test_conversions_pipe_through_standard_input_and_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = GOLDENS / "tool-loop.openai.json"
    through_files = tmp_path / "out.jsonl"
    args = ["--from", "openai", "--timestamp", "1"]
    assert main(["convert", str(golden), str(through_files), *args]) == 0
    capsys.readouterr()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(golden.read_bytes())))
    assert main(["convert", "-", "-", *args, "--to", "jsonl"]) == 0
    captured = capsys.readouterr()
    assert captured.out.encode() == through_files.read_bytes()  # the same bytes as through files
    assert "wrote" in captured.err  # the report keeps out of the converted output


def test_conversions_read_and_write_store_urls(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chats.db'}?conversation=c1"
    assert main(["convert", str(GOLDENS / "tool-loop.openai.json"), url, "--from", "openai"]) == 0
    out = tmp_path / "back.json"
    assert main(["convert", url, str(out), "--to", "openai"]) == 0
    assert json.loads(out.read_text(encoding="utf-8")) == json.loads(
        (GOLDENS / "tool-loop.openai.json").read_text(encoding="utf-8")
    )
