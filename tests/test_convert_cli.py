"""``orion-messages convert --to/--from``: format conversions on the command line."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orion_messages import Message, ToolCall, dumps, load, loads, save
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
    errors = capsys.readouterr().err.splitlines()
    # docs/cli.md: one line per problem, the first "orion-messages: error: FILE: ...", the others
    # "orion-messages: FILE: ...". Left after --accept id,timestamp: [5].pinned and [8]'s pending.
    assert len(errors) == 2
    assert errors[0].startswith(f"orion-messages: error: {source}: [5].pinned: strict conversion refused")
    assert errors[1].startswith(f"orion-messages: {source}: [8].tool_result.pending: ")
    assert not any("[0].id" in line for line in errors)


def test_strict_refusals_are_capped_at_20_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # 15 messages, each with an id and a timestamp that Anthropic has no place for: 30 losses,
    # 20 lines of them and one line counting the other 10.
    source = tmp_path / "chat.json"
    messages = [
        Message.user(f"m{i}", "hi", timestamp=i)
        if i % 2 == 0
        else Message.assistant(f"m{i}", "ok", timestamp=i)
        for i in range(15)
    ]
    source.write_bytes(dumps(messages))
    assert main(["convert", str(source), str(tmp_path / "out.json"), "--to", "anthropic", "--strict"]) == 1
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 21
    assert errors[0].startswith(f"orion-messages: error: {source}: [0].id: strict conversion refused")
    assert all(line.startswith(f"orion-messages: {source}: [") for line in errors[1:20])
    assert errors[20] == f"orion-messages: {source}: ... and 10 more problems"
    assert not (tmp_path / "out.json").exists()


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


def test_a_bad_chat_template_metadata_value_is_reported_where_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CLI audit: the timestamp is under "orion" in the input, and the error must say so.
    source, out = tmp_path / "ct1.json", tmp_path / "out.json"
    source.write_text('[{"role":"user","content":"x","orion":{"id":"a","timestamp":"1"}}]', encoding="utf-8")
    assert main(["convert", "--from", "chat-template", str(source), str(out)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f'orion-messages: error: {source}: [0].orion.timestamp: expected an integer, found the string "1"'
    ]
    assert not out.exists()


def test_orphans_are_refused_unless_a_fix_is_chosen(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "chat.json"
    source.write_bytes(
        dumps([Message.assistant("m", "", [ToolCall(id="c", name="f", arguments={})], timestamp=0)])
    )
    out = tmp_path / "out.json"
    assert main(["convert", str(source), str(out), "--to", "openai"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f'orion-messages: error: {source}: [0].tool_calls[0]: tool call "c" has no result'
    ]
    assert main(["convert", str(source), str(out), "--to", "openai", "--orphans", "synthesize"]) == 0
    assert [m["role"] for m in json.loads(out.read_text(encoding="utf-8"))] == ["assistant", "tool"]


def test_invalid_foreign_input_names_the_location(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.json"
    source.write_text(json.dumps([{"role": "user", "content": 5}]), encoding="utf-8")
    assert main(["convert", str(source), str(tmp_path / "out.json"), "--from", "openai"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"orion-messages: error: {source}: [0].content: expected a string or an array of content parts"
    )


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


# --- what --from reads, and how its errors are told (audit) --------------------------------------


def _convert_process(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    # A real process with a timeout: reading a FIFO or /dev/zero would hang, not fail.
    return subprocess.run(
        [sys.executable, "-m", "orion_messages", "convert", *args],
        input=stdin.decode("latin-1"),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_from_refuses_special_files_in_one_line(tmp_path: Path) -> None:
    # docs/cli.md: only regular files are read; a special file named is refused in one line.
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for special, what in ((fifo, "a named pipe"), (Path("/dev/zero"), "a character device")):
        result = _convert_process(str(special), str(tmp_path / "x.json"), "--from", "openai")
        assert result.returncode == 1
        assert result.stderr.splitlines() == [
            f"orion-messages: error: {special}: not a regular file ({what}); use - for standard input"
        ]
        assert not (tmp_path / "x.json").exists()


def test_from_a_folder_says_it_is_a_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["convert", str(tmp_path), str(tmp_path / "x.json"), "--from", "openai"]) == 1
    assert capsys.readouterr().err.splitlines() == [f"orion-messages: error: {tmp_path}: is a folder"]


@pytest.mark.parametrize(
    ("document", "where"),
    [
        (b'[{"role": "user", "content": "hi"}]\n[]\n', ":2:1: malformed JSON: "),  # data after the document
        (b'\xef\xbb\xbf[{"role": "user", "content": "hi"}]', ":1:1: malformed JSON: "),  # a byte order mark
        (b'[{"role": "user",}]', ":1:18: malformed JSON: "),  # a trailing comma, told at the "}" after it
    ],
)
def test_from_reports_malformed_json_at_its_line_and_column(
    document: bytes, where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "request.json"
    source.write_bytes(document)
    assert main(["convert", str(source), str(tmp_path / "x.json"), "--from", "openai"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"orion-messages: error: {source}{where}")
    assert "char " not in line  # not Python's json text ("Extra data: line 2 column 1 (char 71)")
    assert not (tmp_path / "x.json").exists()


def test_from_standard_input_names_it_stdin_with_the_error_prefix(tmp_path: Path) -> None:
    result = _convert_process("-", str(tmp_path / "x.json"), "--from", "openai", stdin=b'{"model": "m"}')
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("orion-messages: error: <stdin>: ")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("source_format", ["anthropic", "openai", "chat-template"])
def test_from_a_request_object_without_messages_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source_format: str
) -> None:
    # A typo ("message") used to write the system prompt alone and say "nothing lost".
    source = tmp_path / "request.json"
    source.write_text(
        json.dumps({"system": "be nice", "message": [{"role": "user", "content": "hi"}]}), encoding="utf-8"
    )
    out = tmp_path / "chat.json"
    assert main(["convert", str(source), str(out), "--from", source_format, "--timestamp", "0"]) == 1
    assert not out.exists()
    assert capsys.readouterr().err.splitlines() == [
        f'orion-messages: error: {source}: expected a JSON array of messages (or an object with "messages")'
    ]


def _request_with_parameters(tmp_path: Path) -> Path:
    source = tmp_path / "request.json"
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "tools": [{"name": "f", "input_schema": {"type": "object"}}],
        "metadata": None,  # null carries nothing: not reported
        "system": "be nice",
        "messages": [{"role": "user", "content": "hi"}],
    }
    source.write_text(json.dumps(request), encoding="utf-8")
    return source


def test_from_reports_the_request_parameters_it_does_not_convert(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = _request_with_parameters(tmp_path), tmp_path / "chat.json"
    assert main(["convert", str(source), str(out), "--from", "anthropic", "--timestamp", "0"]) == 0
    assert [m.content for m in load(out)] == ["be nice", "hi"]
    printed = capsys.readouterr().out.splitlines()
    reason = "a request parameter, not converted: an orion-core conversation holds only the messages"
    assert printed[1:] == [
        "lost or changed (3):",
        "  by field: max_tokens 1, model 1, tools 1",
        f"  model: {reason}",
        f"  max_tokens: {reason}",
        f"  tools: {reason}",
    ]


def test_from_strict_refuses_request_parameters_unless_accepted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = _request_with_parameters(tmp_path), tmp_path / "chat.json"
    assert main(["convert", str(source), str(out), "--from", "openai", "--strict"]) == 1
    assert not out.exists()
    errors = capsys.readouterr().err.splitlines()
    # OpenAI's request has no "system": it is one more parameter not converted.
    refused = "strict conversion refused: a request parameter, not converted"
    assert [line.split(": an orion-core")[0] for line in errors] == [
        f"orion-messages: error: {source}: model: {refused}",
        f"orion-messages: {source}: max_tokens: {refused}",
        f"orion-messages: {source}: tools: {refused}",
        f"orion-messages: {source}: system: {refused}",
    ]
    accepted = "model,max_tokens,tools,system"
    assert main(["convert", str(source), str(out), "--from", "openai", "--strict", "--accept", accepted]) == 0
    # Given more than once, each --accept adds its fields (the last alone refused the others).
    out.unlink()
    repeated = ["--accept", "model,max_tokens", "--accept", "tools", "--accept", "system"]
    assert main(["convert", str(source), str(out), "--from", "openai", "--strict", *repeated]) == 0
    assert out.exists()


# Options that would be ignored are usage errors (exit 2), as prune's --tools without --template.
IGNORED_OPTIONS = [
    (["--to", "jsonl", "--system-prompt", "Be brief."], "--system-prompt applies only to --to orion-backend"),
    (
        ["--to", "openai", "--system-prompt-file", "p.txt"],
        "--system-prompt-file applies only to --to orion-backend",
    ),
    (["--to", "openai", "--arguments", "string"], "--arguments applies only to --to chat-template"),
    (["--to", "anthropic", "--no-metadata"], "--no-metadata applies only to --to chat-template"),
    (["--to", "orion-backend", "--orphans", "drop"], "--orphans applies only to --to openai, anthropic or"),
    (["--to", "openai", "--timestamp", "5"], "--timestamp applies only to --from openai, anthropic or"),
    (["--to", "jsonl", "--strict"], "--strict applies only to a conversion to or from another format"),
    (["--to", "openai", "--accept", "id"], "--accept applies only to --strict"),
]


@pytest.mark.parametrize(("options", "said"), IGNORED_OPTIONS)
def test_an_option_that_would_be_ignored_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], said: str
) -> None:
    out = tmp_path / "out.json"
    assert main(["convert", str(GOLDENS / "tool-loop.orion.json"), str(out), *options]) == 2
    # One line, as docs/cli.md promises for an option that would be ignored (not the usage).
    err = capsys.readouterr().err
    assert err.startswith("orion-messages: error: ")
    assert said in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_to_contradicting_the_extension_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A log named .json would not load as a conversation file, nor an array named .jsonl as a log.
    source = str(GOLDENS / "tool-loop.orion.json")
    for name, to in (("out.json", "jsonl"), ("out.jsonl", "json")):
        assert main(["convert", source, str(tmp_path / name), "--to", to]) == 2
        assert f"--to {to} contradicts the extension of" in capsys.readouterr().err
        assert not (tmp_path / name).exists()
    assert (
        main(["convert", source, str(tmp_path / "out.txt"), "--to", "jsonl"]) == 0
    )  # no claim to contradict
    assert main(["convert", source, str(tmp_path / "agrees.jsonl"), "--to", "jsonl"]) == 0


DEPRECATED_PROMPT = (
    "orion-messages: warning: convert --system-prompt TEXT is deprecated and goes in the next "
    "release: put the prompt in a file and pass --system-prompt-file FILE (or - for standard "
    "input), as prune does"
)


def test_a_system_prompt_that_names_a_file_is_sent_as_text_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # convert's deprecated --system-prompt is the text (prune's names a file): the name is what
    # is sent, and the command says so, since the user likely meant the file.
    monkeypatch.chdir(tmp_path)
    Path("prompt.txt").write_text("Be brief.", encoding="utf-8")
    source = str(GOLDENS / "tool-loop.orion.json")
    assert (
        main(["convert", source, "out.json", "--to", "orion-backend", "--system-prompt", "prompt.txt"]) == 0
    )
    sent = json.loads(Path("out.json").read_text(encoding="utf-8"))
    assert sent[0] == {"role": "system", "content": "prompt.txt"}
    assert capsys.readouterr().err.splitlines() == [
        DEPRECATED_PROMPT,
        'orion-messages: note: --system-prompt is the prompt itself here, and "prompt.txt" is sent as it '
        "is (--system-prompt-file reads a file)",
    ]
    assert main(["convert", source, "out3.json", "--to", "orion-backend", "--system-prompt", "-"]) == 0
    assert capsys.readouterr().err.splitlines()[1] == (
        'orion-messages: note: --system-prompt is the prompt itself here, and "-" is sent as it is '
        "(--system-prompt-file reads standard input)"
    )
    assert json.loads(Path("out3.json").read_text(encoding="utf-8"))[0]["content"] == "-"
    assert (
        main(["convert", source, "out2.json", "--to", "orion-backend", "--system-prompt", "Be brief."]) == 0
    )
    assert capsys.readouterr().err.splitlines() == [DEPRECATED_PROMPT]  # and no note
    assert json.loads(Path("out2.json").read_text(encoding="utf-8"))[0]["content"] == "Be brief."


def test_the_system_prompt_file_is_sent_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As prune reads its --system-prompt FILE: UTF-8, nothing trimmed, no newline translated.
    monkeypatch.chdir(tmp_path)
    Path("prompt.txt").write_bytes("Be brief.\r\n\u00e9\n".encode())
    source = str(GOLDENS / "tool-loop.orion.json")
    command = ["convert", source, "out.json", "--to", "orion-backend", "--system-prompt-file", "prompt.txt"]
    assert main(command) == 0
    sent = json.loads(Path("out.json").read_bytes())
    assert sent[0] == {"role": "system", "content": "Be brief.\r\n\u00e9\n"}
    assert "warning" not in capsys.readouterr().err


def test_the_system_prompt_file_can_be_standard_input_unless_the_input_is() -> None:
    source = str(GOLDENS / "tool-loop.orion.json")
    fed = _convert_process(
        source, "-", "--to", "orion-backend", "--system-prompt-file", "-", stdin=b"Be brief."
    )
    assert fed.returncode == 0, fed.stderr
    assert json.loads(fed.stdout)[0] == {"role": "system", "content": "Be brief."}
    both = _convert_process("-", "-", "--to", "orion-backend", "--system-prompt-file", "-", stdin=b"[]")
    assert (both.returncode, both.stdout) == (2, "")
    assert both.stderr.splitlines() == [
        "orion-messages: error: IN and --system-prompt-file both name - (standard input), "
        "which can be read only once"
    ]


def test_the_system_prompt_file_problems_are_usage_errors_and_nothing_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("latin1.txt").write_bytes(b"caf\xe9")
    source = str(GOLDENS / "tool-loop.orion.json")
    base = ["convert", source, "out.json", "--to", "orion-backend"]
    cases = [
        (["--system-prompt-file", "missing.txt"], "error: --system-prompt-file missing.txt: no such file"),
        (["--system-prompt-file", "latin1.txt"], "error: --system-prompt-file latin1.txt: invalid UTF-8 at byte 3"),
        (["--system-prompt-file", "latin1.txt", "--system-prompt", "x"],
         "error: give --system-prompt-file FILE or the deprecated --system-prompt TEXT, not both"),
    ]  # fmt: skip
    for options, said in cases:
        assert main([*base, *options]) == 2
        assert capsys.readouterr().err.splitlines() == [f"orion-messages: {said}"]
        assert not Path("out.json").exists()


# --- --from writes OUT through the checks of a plain convert (audit) ------------------------------

# docs/cli.md: "--to json|jsonl that contradicts OUT's extension is a usage error, exit 2"; "--to
# (required when OUT is -)"; an OUT without .json/.jsonl cannot tell its format; --pretty is serde's
# pretty form "for JSON" (a plain convert refuses it for .jsonl).
OUTPUT_MISTAKES = [
    (["back.json", "--to", "jsonl"], "--to jsonl contradicts the extension of"),
    (["back.jsonl", "--to", "json"], "--to json contradicts the extension of"),
    (["back.txt"], "cannot tell the format of"),
    (["back.jsonl", "--pretty"], "--pretty is for .json output"),
    (["-"], "say which format with --to json or --to jsonl"),
]


@pytest.mark.parametrize(("output", "said"), OUTPUT_MISTAKES)
def test_from_refuses_the_outputs_that_plain_convert_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: list[str], said: str
) -> None:
    name, *options = output
    out = name if name == "-" else str(tmp_path / name)
    plain = ["convert", str(GOLDENS / "tool-loop.orion.json"), out, *options]
    imported = ["convert", str(GOLDENS / "tool-loop.openai.json"), out, *options, "--from", "openai"]
    assert main(plain) == 2
    plain_error = capsys.readouterr()
    assert main(imported) == 2
    imported_error = capsys.readouterr()
    assert said in imported_error.err
    # One shared check: the same usage error, word for word, and nothing written.
    assert imported_error.err.splitlines()[-1] == plain_error.err.splitlines()[-1]
    assert imported_error.out == ""
    assert os.listdir(tmp_path) == []


def test_from_writes_the_format_to_and_the_extension_agree_on(tmp_path: Path) -> None:
    source = str(GOLDENS / "tool-loop.openai.json")
    log = tmp_path / "back.jsonl"
    assert main(["convert", source, str(log), "--from", "openai", "--to", "jsonl"]) == 0
    assert len(log.read_text(encoding="utf-8").splitlines()) == 9  # JSON Lines: one message a line
    pretty = tmp_path / "back.json"
    assert main(["convert", source, str(pretty), "--from", "openai", "--pretty", "--timestamp", "0"]) == 0
    assert len(load(pretty)) == 9
    assert pretty.read_text(encoding="utf-8").startswith("[\n  {")


# --- a store URL as OUT holds orion conversations only (audit) ------------------------------------


@pytest.mark.parametrize("target", ["openai", "anthropic", "chat-template", "orion-backend"])
def test_a_foreign_format_into_a_store_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    url = f"sqlite:///{tmp_path / 'chats.db'}?conversation=c1"
    assert main(["convert", str(GOLDENS / "tool-loop.orion.json"), url, "--to", target]) == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert "a store holds orion conversations only" in line
    assert "No such file" not in line  # not an attempt at a file named like the URL
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("options", [["--to", "jsonl"], ["--to", "json"], ["--pretty"]])
@pytest.mark.parametrize("source", ["tool-loop.orion.json", "tool-loop.openai.json"])
def test_a_file_format_option_with_a_store_output_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], source: str
) -> None:
    # Plain convert and --from alike: a stored row has no file format and is never indented.
    url = f"sqlite:///{tmp_path / 'chats.db'}?conversation=c1"
    imported = ["--from", "openai"] if source.endswith(".openai.json") else []
    assert main(["convert", str(GOLDENS / source), url, *options, *imported]) == 2
    assert "error: " in capsys.readouterr().err
    assert os.listdir(tmp_path) == []


# --- NaN, Infinity and lone surrogates in a --from input are malformed JSON (audit) ---------------


def _convert_from(tmp_path: Path, source_format: str, document: bytes) -> tuple[Path, Path]:
    """Convert ``document`` (IN) to OUT ``--from source_format``, which must fail (exit 1)."""
    source, out = tmp_path / "in.json", tmp_path / "out.json"
    source.write_bytes(document)
    assert main(["convert", str(source), str(out), "--from", source_format]) == 1
    return source, out


@pytest.mark.parametrize(
    ("source_format", "document", "literal"),
    [
        ("openai", b'{"messages":[{"role":"user","content":"hi"}],"temperature":NaN}', b"NaN"),
        ("openai", b"[NaN]", b"NaN"),
        ("openai", b"[\n  -Infinity\n]", b"Infinity"),
        (
            "anthropic",
            b'{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f",'
            b'"input":{"a":NaN,"b":Infinity}}]}]}',
            b"NaN",
        ),
    ],
)
def test_from_reports_nan_as_malformed_json_at_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source_format: str, document: bytes, literal: bytes
) -> None:
    # docs/cli.md: the --from input is parsed as the library parses JSON, where NaN is malformed.
    source, out = _convert_from(tmp_path, source_format, document)
    at = document.index(literal)
    line = document.count(b"\n", 0, at) + 1
    column = at - (document.rfind(b"\n", 0, at) + 1) + 1
    assert capsys.readouterr().err.splitlines() == [
        f"orion-messages: error: {source}:{line}:{column}: malformed JSON: expected a JSON value, "
        f"found {'-Infinity' if b'-Infinity' in document else literal.decode()} (JSON has no NaN or infinity)"
    ]
    assert not out.exists()


LONE_SURROGATES = [
    ("openai", b'[{"role":"user","content":"a\\ud800b"}]', b"\\ud800"),
    (
        "anthropic",
        b'{"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f",'
        b'"input":{"path":"a\\udc00b"}}]}]}',
        b"\\udc00",
    ),
    ("openai", b'{"messages":[{"role":"user","content":"ab"}],"x":"\\udc00"}', b"\\udc00"),  # not converted
    ("chat-template", b'[{"role":"user","content":"hi","name":"\\ud800"}]', b"\\ud800"),
]


@pytest.mark.parametrize(("source_format", "document", "escape"), LONE_SURROGATES)
def test_from_reports_a_lone_surrogate_as_malformed_json_at_its_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source_format: str, document: bytes, escape: bytes
) -> None:
    source, out = _convert_from(tmp_path, source_format, document)
    (line,) = capsys.readouterr().err.splitlines()
    head, _, message = line.partition(": malformed JSON: ")
    assert message.startswith("invalid \\u escape (a lone surrogate")
    prefix = f"orion-messages: error: {source}:1:"
    assert head.startswith(prefix)
    start = document.index(escape) + 1  # the escape's first column, then its last and the next
    assert start <= int(head[len(prefix) :]) <= start + len(escape)
    assert not out.exists()


def test_a_lone_surrogate_is_told_as_the_orion_format_tells_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The bug report: the same file read as an orion conversation was already reported right.
    source = tmp_path / "s.json"
    source.write_bytes(b'[{"role":"user","content":"a\\ud800b"}]')
    assert main(["convert", str(source), str(tmp_path / "o.json")]) == 1
    as_orion = capsys.readouterr().err
    assert main(["convert", str(source), str(tmp_path / "o.json"), "--from", "openai"]) == 1
    assert capsys.readouterr().err == as_orion


def test_from_keeps_a_surrogate_pair(tmp_path: Path) -> None:
    source, out = tmp_path / "in.json", tmp_path / "out.json"
    source.write_bytes(b'[{"role":"user","content":"\\ud83d\\ude00 -0","x":-0}]')
    assert main(["convert", str(source), str(out), "--from", "openai", "--timestamp", "0"]) == 0
    assert [m.content for m in load(out)] == ["\U0001f600 -0"]


# --- --timestamp out of range is a usage error naming the option (audit) --------------------------


@pytest.mark.parametrize("value", ["18446744073709551616", "9223372036854775808", "-9223372036854775809"])
def test_a_timestamp_out_of_range_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    out = tmp_path / "out.json"
    source = str(GOLDENS / "tool-loop.openai.json")
    assert main(["convert", source, str(out), "--from", "openai", f"--timestamp={value}"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"orion-messages: error: --timestamp {value}: expected a signed 64-bit integer of milliseconds "
        f"since the Unix epoch (from -9223372036854775808 to 9223372036854775807), found {value}"
    )  # no "or None": that is the library parameter's, meaningless on the command line
    assert not out.exists()
    assert main(["convert", source, str(out), "--from", "openai", "--timestamp", "9223372036854775807"]) == 0


# --- --strict --accept message: a message lost whole (audit) ------------------------------------


def test_strict_accepts_a_message_lost_whole_by_the_name_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    late_system = [
        Message.user("msg-1", "hi", timestamp=1),
        Message.assistant("msg-2", "hello", timestamp=2),
        Message.system("msg-3", "Be brief.", timestamp=3),
        Message.user("msg-4", "again", timestamp=4),
    ]
    source = tmp_path / "late.json"
    save(source, late_system)
    out = tmp_path / "out.json"
    base = ["convert", str(source), str(out), "--to", "anthropic", "--strict"]
    assert main([*base, "--accept", "id,timestamp"]) == 1
    assert "[2]: strict conversion refused: a system message after the conversation started" in (
        capsys.readouterr().err
    )
    assert not out.exists()
    assert main([*base, "--accept", "id,timestamp,message"]) == 0
    assert json.loads(out.read_text())["system"] == "Be brief."


# --- --accept names a key holding a comma as the report prints it -------------------------------


def test_accept_takes_a_quoted_key_with_a_comma_as_printed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The report prints the unknown key a,b as ["a,b"]; --accept takes it so, its comma not
    # splitting it, and a,b outside quotes stays two fields.
    source, out = tmp_path / "in.json", tmp_path / "out.json"
    source.write_text('[{"id":"msg-1","role":"user","content":"hi","timestamp":1,"a,b":1,"c":2}]')
    base = ["convert", str(source), str(out), "--to", "openai", "--strict"]
    assert main([*base, "--accept", "id,timestamp,a,b,c"]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f'orion-messages: error: {source}: [0]["a,b"]: strict conversion refused: unknown key: '
        "OpenAI Chat has no place for it"
    ]
    assert not out.exists()
    assert main([*base, "--accept", 'id,timestamp,["a,b"],c']) == 0
    assert out.exists()
    out.unlink()
    assert main([*base, "--accept", "id,timestamp", "--accept", '["a,b"]', "--accept", "c"]) == 0
    assert out.exists()


def test_accept_splits_on_commas_outside_quoted_keys_only() -> None:
    from orion_messages._cli_convert import accepted_fields

    assert accepted_fields(" id, timestamp ,,") == ["id", "timestamp"]
    assert accepted_fields('id,["a,b"],tool_calls[]["x,y"].z') == ["id", '["a,b"]', 'tool_calls[]["x,y"].z']
    # Inside the quotes, \" and \\ are escapes (the report's): neither ends the key.
    assert accepted_fields(r'["say \"a,b\""],["c\\",d') == [r'["say \"a,b\""]', r'["c\\"', "d"]
