"""orion-core's agent events: reading, writing, streams, and rebuilding the conversation.

The fixtures under ``fixtures/events/`` are written by hand from the reference page, in serde's
spelling (compact, ``type`` first, fields in the page's order, floats with a fraction).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    FormatError,
    Message,
    NotARegularFileError,
    Role,
    ToolCall,
    ToolResult,
    UnknownKeyWarning,
    dumps,
    find_problems,
    loads,
)
from orion_messages.events import (
    AgentEndEvent,
    AgentEvent,
    AgentStartEvent,
    ContextBudgetEvent,
    ErrorEvent,
    GenerationStatsEvent,
    MessageDeltaEvent,
    MessageEndEvent,
    MessageStartEvent,
    ToolDeniedEvent,
    ToolExecEndEvent,
    ToolExecStartEvent,
    ToolExecUpdateEvent,
    TurnEndEvent,
    TurnStartEvent,
    WarningEvent,
    dump_event,
    iter_events,
    messages_from_events,
    parse_event,
    record_events,
)

from .conftest import FIXTURES

EVENTS = FIXTURES / "events"
STREAM = EVENTS / "tool-loop-denied-error.tool-results.jsonl"
# Hand-written from a wrong description: its turn_end carries messages as tool_results, which
# orion-core (ToolResult objects) refuses. Kept (goldens are append-only); its tests expect that.
WRONG_TURN_END = (EVENTS / "tool-loop-denied-error.jsonl", 18)
# Written with serde_json before 1.0.146 (ryu floats); the same line as today's writer spells it
# is line 3 of edge-values.zmij.jsonl.
RYU_LINE = (EVENTS / "edge-values.jsonl", 3)
INVALID = EVENTS / "invalid" / "one-problem-per-line.jsonl"

# The 15 variants of the reference page, in its order.
TAGS = [
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_delta",
    "message_end",
    "generation_stats",
    "tool_exec_start",
    "tool_exec_update",
    "tool_exec_end",
    "tool_denied",
    "context_budget",
    "warning",
    "error",
]


def _valid_lines() -> list[tuple[str, bytes]]:
    lines = []
    for path in sorted(EVENTS.glob("*.jsonl")):
        for number, line in enumerate(path.read_bytes().splitlines(), 1):
            if (path, number) not in (WRONG_TURN_END, RYU_LINE):
                lines.append((f"{path.name}:{number}", line))
    return lines


def _line(path: Path, number: int) -> bytes:
    return path.read_bytes().splitlines()[number - 1]


VALID_LINES = _valid_lines()


# --- parse_event and dump_event ---------------------------------------------------------------


@pytest.mark.parametrize(("where", "line"), VALID_LINES, ids=[where for where, _ in VALID_LINES])
def test_every_hand_written_event_round_trips_byte_for_byte(where: str, line: bytes) -> None:
    assert dump_event(parse_event(line)) == line


def test_an_event_of_the_old_float_writer_loads_and_is_written_as_serde_writes_today() -> None:
    old = parse_event(_line(*RYU_LINE))
    new = parse_event(_line(EVENTS / "edge-values.zmij.jsonl", 3))
    assert old == new
    assert dump_event(old) == _line(EVENTS / "edge-values.zmij.jsonl", 3)
    assert b"1e+20" in dump_event(old)


def test_turn_end_tool_results_are_tool_results_not_messages() -> None:
    event = parse_event(_line(STREAM, 18))
    assert isinstance(event, TurnEndEvent)
    assert event.tool_results == (
        ToolResult(tool_call_id="msg-2-call-1", tool_name="add", content="5", is_error=False),
        ToolResult(
            tool_call_id="msg-2-call-2",
            tool_name="delete_file",
            content="Tool call denied: delete_file needs the user's approval",
            is_error=True,
        ),
    )


def test_the_old_hand_written_turn_end_with_messages_is_refused_as_orion_core_refuses_it() -> None:
    with pytest.raises(FormatError) as caught:
        parse_event(_line(*WRONG_TURN_END))
    locations = {problem.location for problem in caught.value.problems}
    assert "tool_results[0].tool_call_id" in locations
    assert "tool_results[0].is_error" in locations


def test_the_fixtures_cover_all_15_variants() -> None:
    seen = {parse_event(line).type for _, line in VALID_LINES}
    assert seen == set(TAGS)


def test_each_tag_reads_as_its_own_class() -> None:
    classes = {
        "agent_start": AgentStartEvent,
        "agent_end": AgentEndEvent,
        "turn_start": TurnStartEvent,
        "turn_end": TurnEndEvent,
        "message_start": MessageStartEvent,
        "message_delta": MessageDeltaEvent,
        "message_end": MessageEndEvent,
        "generation_stats": GenerationStatsEvent,
        "tool_exec_start": ToolExecStartEvent,
        "tool_exec_update": ToolExecUpdateEvent,
        "tool_exec_end": ToolExecEndEvent,
        "tool_denied": ToolDeniedEvent,
        "context_budget": ContextBudgetEvent,
        "warning": WarningEvent,
        "error": ErrorEvent,
    }
    for _, line in VALID_LINES:
        event = parse_event(line)
        assert type(event) is classes[event.type]


def test_fields_read_as_the_reference_types() -> None:
    stats = parse_event(
        b'{"type":"generation_stats","tokens_generated":42,"prompt_tokens":412,"tokens_per_sec":40.0,'
        b'"time_to_first_token_ms":120.5,"generation_time_ms":1050.0}'
    )
    assert isinstance(stats, GenerationStatsEvent)
    assert (stats.tokens_generated, stats.prompt_tokens) == (42, 412)
    assert (stats.tokens_per_sec, stats.time_to_first_token_ms, stats.generation_time_ms) == (
        40.0,
        120.5,
        1050.0,
    )
    end = parse_event(
        b'{"type":"tool_exec_end","tool_call_id":"c","tool_name":"add","result":'
        b'{"tool_call_id":"c","tool_name":"add","content":"5","is_error":false}}'
    )
    assert isinstance(end, ToolExecEndEvent)
    assert end.result == ToolResult(tool_call_id="c", tool_name="add", content="5", is_error=False)
    start = parse_event(
        b'{"type":"tool_exec_start","tool_call_id":"c","tool_name":"add","args":[1,{"a":null}]}'
    )
    assert isinstance(start, ToolExecStartEvent)
    assert start.args == [1, {"a": None}]


def test_an_integer_in_a_float_field_is_read_and_written_as_serde_does() -> None:
    # serde reads a JSON integer into an f64 field and writes the f64 back as 40.0.
    event = parse_event(b'{"type":"message_delta","delta":"x","tokens_generated":5,"tokens_per_sec":40}')
    assert isinstance(event, MessageDeltaEvent)
    assert event.tokens_per_sec == 40.0
    assert isinstance(event.tokens_per_sec, float)
    assert (
        dump_event(event)
        == b'{"type":"message_delta","delta":"x","tokens_generated":5,"tokens_per_sec":40.0}'
    )


def test_unknown_keys_are_kept_and_written_last() -> None:
    event = parse_event(b'{"seq":7,"type":"warning","message":"low disk","from":{"host":"a"}}')
    assert isinstance(event, WarningEvent)
    assert event.model_extra == {"seq": 7, "from": {"host": "a"}}
    assert dump_event(event) == b'{"type":"warning","message":"low disk","seq":7,"from":{"host":"a"}}'


def test_parse_event_takes_bytes_and_text_alike() -> None:
    line = '{"type":"error","message":"é"}'
    expected = ErrorEvent(message="é")
    for form in (line, line.encode(), bytearray(line.encode()), memoryview(line.encode())):
        assert parse_event(form) == expected


def test_events_built_in_python_write_their_tag_first() -> None:
    assert dump_event(AgentStartEvent()) == b'{"type":"agent_start"}'
    assert dump_event(ToolDeniedEvent(tool_call_id="c", tool_name="rm", reason="no")) == (
        b'{"type":"tool_denied","tool_call_id":"c","tool_name":"rm","reason":"no"}'
    )
    event = MessageEndEvent(message=Message.user("msg-1", "hi", timestamp=5))
    assert dump_event(event) == (
        b'{"type":"message_end","message":{"id":"msg-1","role":"user","content":"hi","timestamp":5}}'
    )


def test_events_are_immutable_and_range_checked_in_python_too() -> None:
    event = ContextBudgetEvent(used_tokens=1, max_tokens=2, messages_in_context=3, messages_pruned=0)
    with pytest.raises(ValidationError):
        event.used_tokens = 5  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ContextBudgetEvent(used_tokens=2**32, max_tokens=2, messages_in_context=3, messages_pruned=0)


# One line of the invalid fixture each: where the problem is, and words the message must hold.
# Written from the reference page's typing rules.
INVALID_EXPECTED: list[tuple[str, str]] = [
    ("type", 'found the string "Agent_start"'),
    ("type", 'found the string "agent-start"'),
    ("type", "required key is missing"),
    ("type", "found null"),
    ("", "found an array"),
    ("", 'found the string "agent_start"'),
    ("tokens_generated", "from 0 to 4294967295, found the number -1"),
    ("tokens_generated", "from 0 to 4294967295, found the number 4294967296"),
    ("tokens_per_sec", 'expected a number, found the string "40.0"'),
    ("tokens_generated", "expected an integer, found the number 5.5"),
    ("delta", "expected a string, found null"),
    ("tokens_per_sec", "required key is missing"),
    ("prompt_tokens", "expected an integer, found true"),
    ("time_to_first_token_ms", "expected a number, found null"),
    ("generation_time_ms", "finite"),
    ("messages_pruned", 'expected an integer, found the string "0"'),
    ("message", "expected an object, found null"),
    ("message.role", 'found the string "User"'),
    ("message.timestamp", "required key is missing"),
    ("message.timestamp", "found the number 9223372036854775808"),
    ("tool_results", "expected an array, found null"),
    # Line 22 was written for tool_results as messages (a wrong description): a message is not a
    # ToolResult, so three of its keys are missing (the line's first problem is checked).
    ("tool_results[0].tool_call_id", "required key is missing"),
    ("messages", "expected an array, found an object"),
    ("messages", "required key is missing"),
    ("args", "required key is missing"),
    ("partial", "expected a string, found an object"),
    ("result", 'expected an object, found the string "5"'),
    ("result.pending", "found null"),
    ("reason", "required key is missing"),
    ("message", "expected a string, found an array"),
    ("message", "expected a string, found an object"),
    ("args.a", "finite"),
    ("used_tokens", "expected an integer, found the number 1.0"),
]


def test_each_invalid_line_is_refused_with_its_location() -> None:
    lines = INVALID.read_bytes().splitlines()
    assert len(lines) == len(INVALID_EXPECTED)
    for number, (line, (where, words)) in enumerate(zip(lines, INVALID_EXPECTED, strict=True), 1):
        with pytest.raises(FormatError) as caught:
            parse_event(line)
        problems = caught.value.problems
        assert len(problems) == (3 if number == 22 else 1), (number, str(caught.value))
        assert problems[0].location == where, (number, str(caught.value))
        assert words in problems[0].message, (number, str(caught.value))


def test_a_tool_result_in_turn_end_is_typed_strictly() -> None:
    line = (EVENTS / "invalid" / "turn-end-tool-result-is-error-string.jsonl").read_bytes().strip()
    with pytest.raises(FormatError) as caught:
        parse_event(line)
    assert [(p.location, p.message) for p in caught.value.problems] == [
        ("tool_results[0].is_error", 'expected a boolean (true or false), found the string "false"')
    ]


def test_an_unknown_type_names_the_known_ones() -> None:
    with pytest.raises(FormatError) as caught:
        parse_event(b'{"type":"tool_exec"}')
    for tag in TAGS:
        assert f'"{tag}"' in str(caught.value)


def test_nan_and_malformed_lines_are_format_errors() -> None:
    for line in (
        b'{"type":"message_delta","delta":"","tokens_generated":1,"tokens_per_sec":NaN}',
        b'{"type":"agent_start"',
        b'{"type":"agent_start"} {}',
        b"",
        b"\xff",
    ):
        with pytest.raises(FormatError):
            parse_event(line)


# --- iter_events ------------------------------------------------------------------------------


def test_the_repr_of_an_agent_end_counts_its_messages() -> None:
    # A host logging every event printed the whole conversation (3.4 MB for 10,000 messages).
    messages = [Message.user(f"msg-{k}", "x" * 1000, timestamp=k) for k in range(500)]
    assert (
        repr(AgentEndEvent(messages=tuple(messages)))
        == "AgentEndEvent(type='agent_end', messages=<tuple of 500>)"
    )
    unknown = parse_event(b'{"type":"agent_end","messages":[],"x_run":7}')
    assert repr(unknown) == "AgentEndEvent(type='agent_end', messages=<tuple of 0>, x_run=7)"


def test_iter_events_reads_the_stream_in_order() -> None:
    events = list(iter_events(STREAM))
    assert len(events) == 33
    assert [event.type for event in events[:5]] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "context_budget",
    ]
    assert events[-1].type == "agent_end"


def _open_files() -> set[str]:
    """The files this process holds open, by the links in /proc/self/fd."""
    fds = Path("/proc/self/fd")
    return {os.readlink(fds / fd) for fd in os.listdir(fds) if (fds / fd).exists()}


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc (Linux)")
def test_iter_events_closes_its_file_when_closed_early() -> None:
    with closing(iter_events(STREAM)) as events:  # a Generator: closing() and .close() type-check
        assert next(events).type == "agent_start"
        assert str(STREAM.resolve()) in _open_files()
    assert str(STREAM.resolve()) not in _open_files()


def test_iter_events_skips_blank_lines_and_reads_crlf(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_bytes(b'{"type":"agent_start"}\r\n\r\n   \n{"type":"warning","message":"w"}\r\n')
    assert list(iter_events(stream)) == [AgentStartEvent(), WarningEvent(message="w")]


@pytest.mark.parametrize("other_space", [b"\x0c", b"\x0b", b"\x1c"])
def test_iter_events_takes_only_jsons_whitespace_as_a_blank_line(tmp_path: Path, other_space: bytes) -> None:
    # A log's rule (docs/reliability.md): a line of other characters Python calls whitespace
    # is a corrupt record, as `orion-messages validate` and the message-log readers say.
    stream = tmp_path / "events.jsonl"
    stream.write_bytes(b'{"type":"agent_start"}\n' + other_space + b'\n{"type":"agent_end","messages":[]}\n')
    events = iter_events(stream)
    assert next(events) == AgentStartEvent()
    with pytest.raises(FormatError) as caught:
        next(events)
    assert [problem.line for problem in caught.value.problems] == [2]


def test_a_bad_line_names_the_file_and_its_line(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_bytes(
        b'{"type":"agent_start"}\n\n{"type":"turn_start"}\n{"type":"context_budget","used_tokens":-5,'
        b'"max_tokens":1,"messages_in_context":1,"messages_pruned":0}\n{"type":"agent_end"}\n'
    )
    events = iter_events(stream)
    assert next(events) == AgentStartEvent()
    assert next(events) == TurnStartEvent()  # lazily: the good lines before the bad one arrive
    with pytest.raises(FormatError) as caught:
        next(events)
    error = caught.value
    assert error.source == str(stream)
    assert [(problem.line, problem.location) for problem in error.problems] == [(4, "used_tokens")]
    assert str(error).startswith(f"{stream}: line 4: used_tokens: ")


def test_a_torn_last_line_is_an_error_with_its_line(tmp_path: Path) -> None:
    stream = tmp_path / "events.jsonl"
    stream.write_bytes(b'{"type":"agent_start"}\n{"type":"warn')
    with pytest.raises(FormatError) as caught:
        list(iter_events(stream))
    assert caught.value.problems[0].line == 2


@pytest.mark.parametrize(
    ("path", "error", "said"),
    [
        (None, ArgumentTypeError, r"^iter_events: path must be a str or an os\.PathLike, got a NoneType$"),
        (5, ArgumentTypeError, r"^iter_events: path must be a str or an os\.PathLike, got an int$"),
        (
            os.fsencode(STREAM),
            ArgumentTypeError,
            r"^iter_events: path must be a str or an os\.PathLike, got a bytes \(decode it with os\.fsdecode\(\)\)$",
        ),
        ("", ArgumentValueError, r"^iter_events: path is empty$"),
    ],
)
def test_iter_events_refuses_a_bad_path_at_the_call(path: Any, error: type[Exception], said: str) -> None:
    # Was pathlib's bare TypeError, and only at the first next(): the generator had not started.
    with pytest.raises(error, match=said):
        iter_events(path)


def test_iter_events_refuses_a_folder_as_load_does(tmp_path: Path) -> None:
    # Was a raw IsADirectoryError.
    with pytest.raises(
        NotARegularFileError, match=rf"^{re.escape(str(tmp_path))}: a folder, not a regular file$"
    ):
        list(iter_events(tmp_path))


_READ_A_FIFO = textwrap.dedent(
    """
    import sys
    from orion_messages import NotARegularFileError
    from orion_messages.events import iter_events

    try:
        list(iter_events(sys.argv[1]))
    except NotARegularFileError as error:
        print(error.kind)
    """
)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_iter_events_refuses_a_fifo_instead_of_waiting_for_a_writer(tmp_path: Path) -> None:
    # In a child process with a timeout, as the storage tests do: before, opening the FIFO
    # waited forever for a writer.
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-c", _READ_A_FIFO, str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "a FIFO"), done.stderr[-2000:]


# --- record_events ----------------------------------------------------------------------------

# The conversation the stream describes, written by hand: every message_end's message in order,
# the assistant messages given the tokens_generated of the generation_stats before them (42 and
# 23), everything else as the stream carries it. The failed generation adds nothing.
RECORDED = (
    b'[{"id":"msg-1","role":"user","content":"What is 2 + 3? Then delete /tmp/scratch.","timestamp":1781512345678},'
    b'{"id":"msg-2","role":"assistant","content":"I\'ll add the numbers and delete the folder.","timestamp":1781512346001,'
    b'"tool_calls":[{"id":"msg-2-call-1","name":"add","arguments":{"a":2,"b":3}},'
    b'{"id":"msg-2-call-2","name":"delete_file","arguments":{"path":"/tmp/scratch","recursive":true}}],"token_count":42},'
    b'{"id":"msg-3","role":"tool_result","content":"5","timestamp":1781512346010,'
    b'"tool_result":{"tool_call_id":"msg-2-call-1","tool_name":"add","content":"5","is_error":false}},'
    b'{"id":"msg-4","role":"tool_result","content":"Tool call denied: delete_file needs the user\'s approval",'
    b'"timestamp":1781512346012,"tool_result":{"tool_call_id":"msg-2-call-2","tool_name":"delete_file",'
    b'"content":"Tool call denied: delete_file needs the user\'s approval","is_error":true}},'
    b'{"id":"msg-5","role":"assistant","content":"2 + 3 = 5. I did not delete /tmp/scratch: deleting files needs your approval.",'
    b'"timestamp":1781512346590,"token_count":23},'
    b'{"id":"msg-6","role":"user","content":"And 7 \xc3\x97 6?","timestamp":1781512400000}]'
)


def test_messages_from_events_rebuilds_the_conversation_of_a_realistic_stream() -> None:
    assert messages_from_events(iter_events(STREAM)) == loads(RECORDED)


def test_messages_from_events_agrees_with_agent_end_apart_from_the_counts_the_host_fills() -> None:
    events = list(iter_events(STREAM))
    final = [event for event in events if isinstance(event, AgentEndEvent)][-1]
    recorded = messages_from_events(events)
    assert [message.with_token_count(None) for message in recorded] == list(final.messages)


def test_messages_from_events_gives_only_the_messages_ended_in_the_stream() -> None:
    # A run on a restored conversation: msg-1 and msg-2 were restored, not ended in this stream;
    # agent_end is not read, so the host prepends the saved conversation (docs/events.md).
    saved = [Message.user("msg-1", "a", timestamp=1), Message.assistant("msg-2", "b", timestamp=2)]
    new = Message.user("msg-3", "c", timestamp=3)
    stream: list[AgentEvent] = [
        AgentStartEvent(),
        MessageEndEvent(message=new),
        AgentEndEvent(messages=(*saved, new)),
    ]
    assert [m.id for m in messages_from_events(stream)] == ["msg-3"]
    assert [m.id for m in saved + messages_from_events(stream)] == ["msg-1", "msg-2", "msg-3"]


def test_record_events_is_a_deprecated_alias_of_messages_from_events() -> None:
    events = list(iter_events(STREAM))
    said = r"^orion_messages\.events\.record_events is deprecated since 0\.2\.0 .* use orion_messages\.events\.messages_from_events$"
    with pytest.warns(DeprecationWarning, match=said):
        assert record_events(events) == messages_from_events(events)


def _user(number: int) -> Message:
    return Message.user(f"msg-{number}", "q", timestamp=number)


def _assistant(number: int, *, token_count: int | None = None, role: str = "assistant") -> Message:
    return Message(id=f"msg-{number}", role=role, content="a", timestamp=number, token_count=token_count)


def _stats(tokens: int) -> GenerationStatsEvent:
    return GenerationStatsEvent(
        tokens_generated=tokens,
        prompt_tokens=10,
        tokens_per_sec=20.0,
        time_to_first_token_ms=5.0,
        generation_time_ms=50.0,
    )


def test_stats_fill_only_the_next_assistant_message() -> None:
    events: list[AgentEvent] = [
        MessageEndEvent(message=_user(1)),
        _stats(7),
        MessageEndEvent(message=_assistant(2)),
        MessageEndEvent(message=_assistant(3)),  # no stats of its own
    ]
    assert [message.token_count for message in messages_from_events(events)] == [None, 7, None]


def test_stats_are_not_carried_past_another_message() -> None:
    events: list[AgentEvent] = [
        _stats(7),
        MessageEndEvent(message=_user(1)),  # the stats belonged to no assistant message
        MessageEndEvent(message=_assistant(2)),
    ]
    assert [message.token_count for message in messages_from_events(events)] == [None, None]


def test_a_count_already_set_is_kept() -> None:
    events: list[AgentEvent] = [_stats(7), MessageEndEvent(message=_assistant(2, token_count=99))]
    assert [message.token_count for message in messages_from_events(events)] == [99]


def test_role_tool_call_counts_as_an_assistant_message() -> None:
    events: list[AgentEvent] = [_stats(7), MessageEndEvent(message=_assistant(2, role="tool_call"))]
    assert [message.token_count for message in messages_from_events(events)] == [7]


def test_the_latest_stats_win() -> None:
    events: list[AgentEvent] = [_stats(7), _stats(8), MessageEndEvent(message=_assistant(2))]
    assert [message.token_count for message in messages_from_events(events)] == [8]


def test_message_start_and_summaries_add_nothing() -> None:
    message = _user(1)
    events: list[AgentEvent] = [
        AgentStartEvent(),
        MessageStartEvent(message=message),
        TurnEndEvent(message=_assistant(2), tool_results=[]),
        AgentEndEvent(messages=[message]),
    ]
    assert messages_from_events(events) == []


# --- properties -------------------------------------------------------------------------------

_TEXT = st.text(max_size=8)
_U32 = st.integers(min_value=0, max_value=2**32 - 1)
_FLOAT = st.floats(allow_nan=False, allow_infinity=False)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _FLOAT | _TEXT,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_TEXT, children, max_size=3),
    max_leaves=8,
)
_RESULT = st.builds(
    ToolResult,
    tool_call_id=_TEXT,
    tool_name=_TEXT,
    content=_TEXT,
    is_error=st.booleans(),
    pending=st.booleans(),
)
_MESSAGE = st.builds(
    Message,
    id=_TEXT,
    role=st.sampled_from(["system", "user", "assistant", "tool_call", "tool_result"]),
    content=_TEXT,
    timestamp=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    tool_calls=st.lists(st.builds(ToolCall, id=_TEXT, name=_TEXT, arguments=_JSON), max_size=2).map(tuple),
    tool_result=st.none() | _RESULT,
    token_count=st.none() | _U32,
    pinned=st.booleans(),
)
_EVENTS: st.SearchStrategy[Any] = st.one_of(
    st.just(AgentStartEvent()),
    st.builds(AgentEndEvent, messages=st.lists(_MESSAGE, max_size=2).map(tuple)),
    st.just(TurnStartEvent()),
    st.builds(TurnEndEvent, message=_MESSAGE, tool_results=st.lists(_RESULT, max_size=2).map(tuple)),
    st.builds(MessageStartEvent, message=_MESSAGE),
    st.builds(MessageDeltaEvent, delta=_TEXT, tokens_generated=_U32, tokens_per_sec=_FLOAT),
    st.builds(MessageEndEvent, message=_MESSAGE),
    st.builds(
        GenerationStatsEvent,
        tokens_generated=_U32,
        prompt_tokens=_U32,
        tokens_per_sec=_FLOAT,
        time_to_first_token_ms=_FLOAT,
        generation_time_ms=_FLOAT,
    ),
    st.builds(ToolExecStartEvent, tool_call_id=_TEXT, tool_name=_TEXT, args=_JSON),
    st.builds(ToolExecUpdateEvent, tool_call_id=_TEXT, tool_name=_TEXT, partial=_TEXT),
    st.builds(ToolExecEndEvent, tool_call_id=_TEXT, tool_name=_TEXT, result=_RESULT),
    st.builds(ToolDeniedEvent, tool_call_id=_TEXT, tool_name=_TEXT, reason=_TEXT),
    st.builds(
        ContextBudgetEvent, used_tokens=_U32, max_tokens=_U32, messages_in_context=_U32, messages_pruned=_U32
    ),
    st.builds(WarningEvent, message=_TEXT),
    st.builds(ErrorEvent, message=_TEXT),
)


@given(_EVENTS)
def test_any_event_round_trips(event: AgentEvent) -> None:
    line = dump_event(event)
    assert line.startswith(b'{"type":"' + event.type.encode() + b'"')
    assert b"\n" not in line
    again = parse_event(line)
    assert again == event
    assert dump_event(again) == line


@given(st.lists(_EVENTS, max_size=12))
def test_messages_from_events_keeps_every_message_end_in_order(events: list[AgentEvent]) -> None:
    ends = [event.message for event in events if isinstance(event, MessageEndEvent)]
    recorded = messages_from_events(events)
    assert [message.id for message in recorded] == [message.id for message in ends]
    for before, after in zip(ends, recorded, strict=True):
        assert after.with_token_count(before.token_count) == before
        if before.token_count is not None:
            assert after.token_count == before.token_count


def test_dump_event_refuses_a_nan_that_skipped_validation() -> None:
    event = parse_event(
        b'{"type":"generation_stats","tokens_generated":1,"prompt_tokens":2,"tokens_per_sec":40.0,'
        b'"time_to_first_token_ms":1.0,"generation_time_ms":2.0}'
    )
    smuggled = type(event).model_construct(**{**event.__dict__, "tokens_per_sec": float("nan")})
    with pytest.raises(FormatError, match="NaN"):
        dump_event(smuggled)


# serde reads an internally tagged enum (an event) whole before the variant sees it, so unlike in
# a message, an unknown key's value must be one serde_json can read. Measured with serde_json
# (orion-core's AgentEvent derive): each line below is refused, with the column shown.
_LARGEST_INT = "17976931348623156224" + "9" * 289  # the largest integer serde_json reads
_NEXT_INT = str(int(_LARGEST_INT) + 1)  # "number out of range"


@pytest.mark.parametrize(
    ("line", "where", "what"),
    [
        ('{"type":"warning","message":"w","x":1e400}', "x", "serde_json reads an event whole"),
        (
            '{"type":"message_end","message":{"id":"a","role":"user","content":"","timestamp":1,"x":1e400}}',
            "message.x",
            "serde_json reads an event whole",
        ),
        ('{"type":"agent_start","x":' + _NEXT_INT + "}", "x", "serde_json reads an event whole"),
        ('{"type":"agent_start","x":-' + _NEXT_INT + "}", "x", "serde_json reads an event whole"),
        (
            '{"type":"agent_start","x":' + "[" * 127 + "]" * 127 + "}",
            "",
            "nested too deeply",
        ),
        (
            '{"type":"agent_start","x":' + "[" * 5000 + "]" * 5000 + "}",
            "",
            "nested too deeply",
        ),
    ],
)
def test_an_unknown_value_serde_cannot_read_refuses_the_event(line: str, where: str, what: str) -> None:
    with pytest.raises(FormatError) as raised:
        parse_event(line)
    (problem,) = raised.value.problems
    assert (problem.location, what in problem.message) == (where, True)
    if not where:  # serde_json: "recursion limit exceeded at line 1 column 153"
        assert (problem.line, problem.column) == (1, 153)


def test_an_unknown_value_serde_can_read_loads_in_an_event() -> None:
    # Accepted by serde_json: 126 levels inside the event (127 in all), the largest integer,
    # a number that underflows to zero. The deep value is past this library's own 120 levels:
    # it is left out with a warning, as an unknown key that cannot be written back.
    with pytest.warns(UnknownKeyWarning):
        assert dump_event(parse_event('{"type":"agent_start","x":' + "[" * 126 + "]" * 126 + "}")) == (
            b'{"type":"agent_start"}'
        )
    line = '{"type":"agent_start","x":' + _LARGEST_INT + "}"
    assert dump_event(parse_event(line)) == line.encode()
    assert parse_event('{"type":"agent_start","x":1e-400}').model_extra == {"x": 0.0}


_ARRAY_FORM = " (an event written as an array, which serde reads, is refused: orion-core never writes one)"
_CONVERSATION = " (it looks like a conversation, a list of messages, which load and loads read)"


@pytest.mark.parametrize(
    ("line", "hint"),
    [
        # serde reads ["warning","hi"] as a warning event; orion-core never writes that form.
        ('["warning","hi"]', _ARRAY_FORM),
        ('["agent_start"]', _ARRAY_FORM),
        # serde refuses these (a map is no variant name; [] misses its type): no array-form hint.
        ('[{"id":"msg-1","role":"user","content":"hi","timestamp":1}]', _CONVERSATION),
        ('[{"id":"msg-1"},{}]', _CONVERSATION),
        ("[]", ""),
        ('["Warning","hi"]', ""),
        ("[1]", ""),
        ('[{"id":"msg-1"},1]', ""),
    ],
)
def test_an_array_given_as_an_event_is_refused_with_what_it_looks_like(line: str, hint: str) -> None:
    with pytest.raises(FormatError) as raised:
        parse_event(line)
    (problem,) = raised.value.problems
    assert (problem.location, problem.message) == (
        "",
        "expected an event (a JSON object), found an array" + hint,
    )


def test_iter_events_given_a_conversation_file_says_it_looks_like_one(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    path.write_text('[{"id":"msg-1","role":"user","content":"hi","timestamp":1}]\n', encoding="utf-8")
    with pytest.raises(FormatError) as raised:
        list(iter_events(path))
    assert str(raised.value) == (
        f"{path}: line 1: expected an event (a JSON object), found an array" + _CONVERSATION
    )


# Measured with orion-core's AgentEvent (serde_json): a key the event's type does not have is
# skipped unread, repeated or not, so strict reading refuses only a repeat of the type's own keys.
@pytest.mark.parametrize(
    ("line", "refused"),
    [
        ('{"type":"agent_start","message":"w","message":"v"}', False),
        ('{"type":"warning","message":"w","args":1,"args":2}', False),
        ('{"type":"turn_start","result":{"a":1,"a":2},"result":{}}', False),
        ('{"type":"warning","message":"w","message":"v"}', True),
        ('{"type":"tool_exec_end","tool_call_id":"c","tool_name":"t","result":{"tool_call_id":"c",'
         '"tool_name":"t","content":"","is_error":false,"content":"x"},"duration_ms":1}', True),
    ],
)  # fmt: skip
def test_strict_refuses_a_repeat_only_of_a_key_the_event_type_has(line: str, refused: bool) -> None:
    if refused:
        with pytest.raises(FormatError, match="duplicate key"):
            parse_event(line, strict=True)
    else:
        parse_event(line, strict=True)


@pytest.mark.parametrize(
    ("events", "said"),
    [
        ('{"type":"message_end"}', "messages_from_events takes events, got a str"),
        (b"{}", "messages_from_events takes events, got a bytes"),
        ({"type": "warning", "message": "w"}, "messages_from_events takes events, got a dict"),
        ([{"type": "warning", "message": "w"}], "[0]: expected an event, found a dict"),
        # Not iterable: was a bare "'NoneType' object is not iterable".
        (
            None,
            "messages_from_events takes events, got a NoneType (an iterable of event models, as iter_events gives)",
        ),
        (
            5,
            "messages_from_events takes events, got an int (an iterable of event models, as iter_events gives)",
        ),
        (object(), "messages_from_events takes events, got an object (an iterable of event models"),
        # One model: its fields were iterated ("[0]: expected an event, found a tuple").
        (
            Message.user("m", "x", timestamp=1),
            "messages_from_events takes events, got a Message (not an event)",
        ),
        (
            WarningEvent(message="w"),
            "messages_from_events takes events, got a WarningEvent (put it in a list: [event])",
        ),
    ],
)
def test_messages_from_events_refuses_what_is_not_an_event(events: Any, said: str) -> None:
    # A dict or a JSON line is not an event model: refused, not skipped as "adding nothing".
    with pytest.raises(ArgumentTypeError) as raised:
        messages_from_events(events)
    assert str(raised.value).startswith(said)


def test_iter_events_names_the_file_and_the_line_of_an_unknown_key_left_out(tmp_path: Path) -> None:
    # As read_jsonl names them (docs/compatibility.md): the warning says which record lost a key.
    deep = "[" * 121 + "]" * 121  # past the 120 levels a value is written back with
    path = tmp_path / "events.jsonl"
    path.write_text(
        '{"type":"agent_start"}\n'
        "\n"
        '{"type":"turn_start","x":' + deep + "}\n"
        '{"type":"message_end","message":{"id":"m","role":"user","content":"c","timestamp":1,"y":'
        + deep
        + "}}\n"
    )
    with pytest.warns(UnknownKeyWarning) as caught:
        read = list(iter_events(path))
    assert [event.type for event in read] == ["agent_start", "turn_start", "message_end"]
    first, second = (warning.message for warning in caught)
    assert isinstance(first, UnknownKeyWarning)
    assert isinstance(second, UnknownKeyWarning)
    assert (first.source, first.line, first.location, first.key) == (str(path), 3, "", "x")
    assert (second.source, second.line, second.location, second.key) == (str(path), 4, "message", "y")
    assert str(first) == (
        f'{path}:3: unknown key "x" left out: expected a JSON value nested at most 120 levels deep, '
        "found a deeper one"
    )
    assert str(second).startswith(f'{path}:4: message: unknown key "y" left out: ')
    assert caught[0].filename == __file__  # the caller's own line, as read_jsonl warns


def test_parse_event_alone_names_no_file_in_its_warning() -> None:
    with pytest.warns(UnknownKeyWarning) as caught:
        parse_event('{"type":"turn_start","x":' + "[" * 121 + "]" * 121 + "}")
    (warning,) = (record.message for record in caught)
    assert isinstance(warning, UnknownKeyWarning)
    assert (warning.source, warning.line) == (None, None)


_AGENT_END_PROBLEMS = (
    '{"type":"agent_end","messages":['
    '{"id":"msg-1","role":"user","content":"a","timestamp":1},'
    '{"id":"msg-1","role":"user","content":"b","timestamp":2},'
    '{"id":"msg-3","role":"assistant","content":"","timestamp":3,"tool_calls":['
    '{"id":"k","name":"t","arguments":{}},{"id":"k","name":"t","arguments":{}}]},'
    '{"id":"msg-4","role":"tool_result","content":"x","timestamp":4,"tool_result":'
    '{"tool_call_id":"k","tool_name":"t","content":"x","is_error":false}},'
    '{"id":"msg-5","role":"tool_result","content":"y","timestamp":5,"tool_result":'
    '{"tool_call_id":"k","tool_name":"t","content":"y","is_error":false}}'
    "]}"
)


def test_strict_agent_end_problems_refer_to_messages_inside_the_event(tmp_path: Path) -> None:
    # Inside an event, "[0]" names nothing: the cross-references carry the prefix the locations do.
    expected = [
        ("messages[1].id", 'duplicate message id "msg-1" (first at messages[0])'),
        (
            "messages[2].tool_calls[1].id",
            'duplicate tool-call id "k" (first at messages[2].tool_calls[0].id)',
        ),
        (
            "messages[4].tool_result.tool_call_id",
            'tool call "k" already has a completed result at messages[3]',
        ),
    ]
    with pytest.raises(FormatError) as raised:
        parse_event(_AGENT_END_PROBLEMS, strict=True)
    assert [(p.location, p.message) for p in raised.value.problems] == expected
    path = tmp_path / "events.jsonl"
    path.write_text('{"type":"agent_start"}\n' + _AGENT_END_PROBLEMS + "\n")
    with pytest.raises(FormatError) as raised:
        list(iter_events(path, strict=True))
    assert [(p.location, p.message, p.line) for p in raised.value.problems] == [(*p, 2) for p in expected]


def test_find_problems_still_refers_to_a_conversation_by_index() -> None:
    messages = parse_event(_AGENT_END_PROBLEMS)
    assert isinstance(messages, AgentEndEvent)
    assert [p.message for p in find_problems(messages.messages)] == [
        'duplicate message id "msg-1" (first at [0])',
        'duplicate tool-call id "k" (first at [2].tool_calls[0].id)',
        'tool call "k" already has a completed result at [3]',
    ]


_VALID_MESSAGE = Message.user("m", "c", timestamp=1)
_Model = TypeVar("_Model", bound=BaseModel)


def _built(model: type[_Model], **values: Any) -> _Model:
    """``model.model_construct``, given values of the wrong type on purpose (past the type checker too)."""
    return model.model_construct(**values)


@pytest.mark.parametrize(
    ("build", "where", "what"),
    [
        (lambda: _built(WarningEvent, message=5), "message", "expected a string, found the number 5"),
        (lambda: _built(WarningEvent), "message", "required key is missing"),
        (
            lambda: _built(
                MessageEndEvent, message=_built(Message, id="m", role="user", content=5, timestamp=1)
            ),
            "message.content",
            "expected a string, found the number 5",
        ),
        (
            lambda: _built(MessageEndEvent, message=_built(Message, id="m", role="user", content="c")),
            "message.timestamp",
            "required key is missing",
        ),
        (
            lambda: _built(
                AgentEndEvent,
                messages=(_VALID_MESSAGE, _built(Message, id="n", role="user", content="c", timestamp="2")),
            ),
            "messages[1].timestamp",
            'expected an integer, found the string "2"',
        ),
        (
            lambda: _built(MessageDeltaEvent, delta="", tokens_generated=1, tokens_per_sec=None),
            "tokens_per_sec",
            "expected a number, found null",
        ),
        (
            lambda: _built(
                TurnEndEvent,
                message=_VALID_MESSAGE,
                tool_results=(
                    _built(ToolResult, tool_call_id="c", tool_name="t", content=5, is_error=False),
                ),
            ),
            "tool_results[0].content",
            "expected a string, found the number 5",
        ),
        (
            lambda: _built(
                ToolExecEndEvent,
                tool_call_id="c",
                tool_name="t",
                result=_built(ToolResult, tool_call_id="c", tool_name="t", content="x"),
            ),
            "result.is_error",
            "required key is missing",
        ),
        # Validation refuses a bool in an integer field; the writer would take True for 1.
        (
            lambda: _built(MessageDeltaEvent, delta="", tokens_generated=True, tokens_per_sec=1.0),
            "tokens_generated",
            "expected an integer, found true",
        ),
        (
            lambda: _built(
                ContextBudgetEvent, used_tokens=1, max_tokens=2, messages_in_context=False, messages_pruned=0
            ),
            "messages_in_context",
            "expected an integer, found false",
        ),
        (
            lambda: _built(MessageDeltaEvent, delta="", tokens_generated=1, tokens_per_sec=True),
            "tokens_per_sec",
            "expected a number, found true",
        ),
        # Another variant's tag: the library's words, not pydantic's "Input should be 'warning'".
        (
            lambda: _built(WarningEvent, type="error", message="x"),
            "type",
            'expected "warning" (a WarningEvent), found the string "error"',
        ),
        (
            lambda: _built(ErrorEvent, type="warning", message="x"),
            "type",
            'expected "error" (an ErrorEvent), found the string "warning"',
        ),
        (
            lambda: _built(
                ContextBudgetEvent,
                type=5,
                used_tokens=1,
                max_tokens=2,
                messages_in_context=0,
                messages_pruned=0,
            ),
            "type",
            'expected "context_budget" (a ContextBudgetEvent), found the number 5',
        ),
    ],
)
def test_dump_event_names_the_field_model_construct_left_wrong(build: Any, where: str, what: str) -> None:
    # As dumps names it (docs/reliability.md): one problem at the field, not the serializer's text.
    with pytest.raises(FormatError) as raised:
        dump_event(build())
    (problem,) = raised.value.problems
    assert (problem.location, problem.message) == (where, what)


def test_dump_event_names_a_field_in_a_list_given_to_model_construct_and_warns_nothing() -> None:
    # A list is how Python spells a sequence: looked into as a tuple is, with no pydantic
    # warning on the way (under -W error one would replace the FormatError, docs/reliability.md).
    wrong = _built(Message, id="m", role=Role.USER, content=5, timestamp=1)
    event = _built(AgentEndEvent, messages=[_VALID_MESSAGE, wrong])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(FormatError) as raised:
            dump_event(event)
    (problem,) = raised.value.problems
    assert (problem.location, problem.message) == (
        "messages[1].content",
        "expected a string, found the number 5",
    )


def test_model_construct_keeps_a_list_for_a_tuple_field_as_validation_does() -> None:
    # A list is how Python spells a sequence; validation keeps it as the field's tuple, and so
    # does model_construct, so the writers write it (with no warning, none as an error).
    call = ToolCall(id="c", name="f", arguments={})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        built = _built(Message, id="a", role=Role.ASSISTANT, content="", timestamp=1, tool_calls=[call])
        assert built.tool_calls == (call,)
        assert (
            dumps([built])
            == b'[{"id":"a","role":"assistant","content":"","timestamp":1,"tool_calls":[{"id":"c","name":"f","arguments":{}}]}]'
        )
        ended = _built(AgentEndEvent, messages=[_VALID_MESSAGE])
        assert (
            dump_event(ended)
            == b'{"type":"agent_end","messages":[{"id":"m","role":"user","content":"c","timestamp":1}]}'
        )
        turn = _built(TurnEndEvent, message=_VALID_MESSAGE, tool_results=[])
        assert dump_event(turn) == (
            b'{"type":"turn_end","message":{"id":"m","role":"user","content":"c","timestamp":1},"tool_results":[]}'
        )


@pytest.mark.parametrize(("tag", "holder"), [("error", "message."), ("warning", "")])
def test_a_bad_unknown_key_named_as_an_event_type_keeps_its_name_in_the_location(
    tag: str, holder: str
) -> None:
    # docs/reliability.md: named by its path ("message.content"); an unknown key called "error"
    # or "warning" is a key like any other, not the union's tag.
    bad = {tag: {"x": object()}}  # no JSON value
    if holder:
        event: AgentEvent = _built(MessageEndEvent, message=_built(Message, **_VALID_MESSAGE.__dict__, **bad))
    else:
        event = _built(WarningEvent, message="w", **bad)
    with pytest.raises(FormatError) as raised:
        dump_event(event)
    assert [problem.location for problem in raised.value.problems] == [f"{holder}{tag}.x"]


def test_dump_event_still_writes_an_integer_field_of_a_constructed_event() -> None:
    _built(
        MessageDeltaEvent, delta="", tokens_generated=True, tokens_per_sec=1.0
    )  # fields looked at from now on
    built = _built(MessageDeltaEvent, delta="", tokens_generated=3, tokens_per_sec=1.0)
    assert (
        dump_event(built) == b'{"type":"message_delta","delta":"","tokens_generated":3,"tokens_per_sec":1.0}'
    )


def test_dump_event_names_where_a_nan_or_an_unpaired_surrogate_is_as_dumps_does() -> None:
    nan = "cannot be written as JSON: a number is NaN, which JSON cannot hold (set without validation: through model_construct, or changed in place)"
    surrogate = "cannot be written as JSON: a string holds an unpaired surrogate, which UTF-8 cannot encode"
    started = parse_event('{"type":"tool_exec_start","tool_call_id":"c","tool_name":"t","args":{"a":[1,2]}}')
    assert isinstance(started, ToolExecStartEvent)
    started.args["a"].append(float("nan"))  # a JSON value changed in place, past validation
    built: list[tuple[AgentEvent, str, str]] = [
        (
            _built(MessageDeltaEvent, delta="", tokens_generated=1, tokens_per_sec=float("nan")),
            "tokens_per_sec",
            nan,
        ),
        (started, "args.a[2]", nan),
        (WarningEvent(message="a\ud800"), "message", surrogate),
        (MessageEndEvent(message=Message.user("m", "\ud800", timestamp=1)), "message.content", surrogate),
    ]
    for event, where, what in built:
        with pytest.raises(FormatError) as raised:
            dump_event(event)
        assert [(p.location, p.message) for p in raised.value.problems] == [(where, what)]


def test_a_number_past_a_double_is_said_alike_in_a_float_field_and_a_free_value() -> None:
    # 1e400 is read as infinity: in a float field (tokens_per_sec) and in a free JSON value
    # (args, a tool call's arguments, an unknown key) the same words, each at its own place.
    words = "expected a finite number, found infinity (such as a number too large for a double)"
    refused = {
        "tokens_per_sec": '{"type":"message_delta","delta":"","tokens_generated":1,"tokens_per_sec":1e400}',
        "generation_time_ms": (
            '{"type":"generation_stats","tokens_generated":1,"prompt_tokens":2,'
            '"tokens_per_sec":1.0,"time_to_first_token_ms":1.0,"generation_time_ms":-1e400}'
        ),
        "args.a": '{"type":"tool_exec_start","tool_call_id":"c","tool_name":"n","args":{"a":1e400}}',
    }
    for where, line in refused.items():
        with pytest.raises(FormatError) as raised:
            parse_event(line)
        assert [(p.location, p.message) for p in raised.value.problems] == [(where, words)]
    with pytest.raises(FormatError) as raised:
        loads(
            '[{"id":"a","role":"assistant","content":"","timestamp":1,'
            '"tool_calls":[{"id":"c","name":"n","arguments":1e400}]}]'
        )
    assert [(p.location, p.message) for p in raised.value.problems] == [
        ("[0].tool_calls[0].arguments", words)
    ]
    with pytest.warns(UnknownKeyWarning) as caught:
        loads('[{"id":"a","role":"user","content":"","timestamp":1,"x":1e400}]')
    assert [str(w.message) for w in caught] == [f'[0]: unknown key "x" left out: {words}']
