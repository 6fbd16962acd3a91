"""Properties of the codec, the conversation and the JSON Lines log, over generated data."""

from __future__ import annotations

import json
import math
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from orion_messages import (
    Conversation,
    FormatError,
    Message,
    Problem,
    ToolCall,
    append_jsonl,
    dumps,
    dumps_message,
    find_problems,
    loads,
    loads_message,
    read_jsonl,
)
from orion_messages.checks import problems_by_message
from orion_messages.storage import TornLineWarning

from .reference_codec import reference_dumps, ryu_float, same, view_of_model, view_of_parsed, zmij_float
from .strategies import agent_conversations, conversations, messages

_RYU_TRAPS = st.lists(
    st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from([1e16, 1.5e300, -2.5e22, 1e-7]),
        st.text(st.sampled_from('1e+5"\\ '), max_size=12),
    ),
    max_size=6,
)


@given(conversations(), _RYU_TRAPS)
def test_float_style_ryu_equals_an_independent_writer(
    conversation: list[Message], traps: list[object]
) -> None:
    # The old spelling drops the sign of a positive exponent in numbers only: "1e+5" in a
    # string (after any run of backslashes and quotes) stays as it is.
    call = ToolCall(id="c", name="n", arguments={"traps": traps})
    conversation = [*conversation, Message.assistant("m", '"1e+5\\', [call], timestamp=1)]
    assert dumps(conversation, float_style="ryu") == reference_dumps(conversation, floats=ryu_float)
    assert dumps(conversation, indent=2, float_style="ryu") == reference_dumps(conversation, 2, ryu_float)


@given(conversations())
def test_any_valid_conversation_round_trips(conversation: list[Message]) -> None:
    raw = dumps(conversation)
    again = loads(raw)
    assert again == conversation
    # Equality treats 1 == 1.0; the bytes do not: int/float and key order survive too.
    assert dumps(again) == raw
    assert all(same(view_of_model(a), view_of_model(b)) for a, b in zip(again, conversation, strict=True))


@given(conversations())
def test_whatever_dumps_writes_loads_reads_strict_json_included(conversation: list[Message]) -> None:
    for indent in (None, 2):
        raw = dumps(conversation, indent=indent)
        # Valid JSON for the standard library as well (no NaN, no lone surrogates), UTF-8.
        parsed = json.loads(raw.decode("utf-8"), parse_constant=_refuse)
        assert [view_of_parsed(item) for item in parsed] == [view_of_model(m) for m in conversation]
        assert loads(raw) == conversation


@given(conversations(floats=False))
def test_dumps_equals_an_independent_writer_without_floats(conversation: list[Message]) -> None:
    assert dumps(conversation) == reference_dumps(conversation)
    assert dumps(conversation, indent=2) == reference_dumps(conversation, indent=2)


@given(conversations())
def test_dumps_equals_an_independent_writer_with_floats(conversation: list[Message]) -> None:
    assert dumps(conversation) == reference_dumps(conversation)


@given(st.floats(allow_nan=False, allow_infinity=False))
@example(1e20)
@example(1e16)
@example(1e15)
@example(0.00001)
@example(1e-6)
@example(5e-324)
@example(-0.0)
def test_floats_are_spelled_as_current_serde_json_and_read_back_exactly(value: float) -> None:
    message = Message.assistant("m", "", [ToolCall(id="c", name="n", arguments=value)], timestamp=1)
    raw = dumps_message(message)
    spelled = raw.split(b'"arguments":', 1)[1][: -len(b"}]}")]
    assert spelled.decode() == zmij_float(value)
    back = loads_message(raw).tool_calls[0].arguments
    assert back == value
    assert math.copysign(1.0, back) == math.copysign(1.0, value)


@given(messages())
def test_one_message_round_trips_as_a_record(message: Message) -> None:
    raw = dumps_message(message)
    assert b"\n" not in raw  # one record, one line
    assert loads_message(raw) == message
    assert dumps([message]) == b"[" + raw + b"]"


@given(agent_conversations())
def test_agent_histories_have_no_semantic_problems(history: list[Message]) -> None:
    assert find_problems(history) == []
    assert loads(dumps(history), strict=True) == history


@given(agent_conversations())
def test_next_id_never_collides(history: list[Message]) -> None:
    conversation = Conversation(history)
    ids = {m.id for m in history}
    for _ in range(3):
        new_id = conversation.next_id()
        assert new_id not in ids
        ids.add(new_id)


@given(agent_conversations(), st.data())
def test_resolving_every_pending_result_leaves_none(history: list[Message], data: st.DataObject) -> None:
    conversation = Conversation(history)
    for placeholder in conversation.pending():
        assert placeholder.tool_result is not None
        content = data.draw(st.text(max_size=5))
        resolved = conversation.resolve(placeholder.tool_result.tool_call_id, content)
        assert (resolved.id, resolved.timestamp, resolved.content) == (
            placeholder.id,
            placeholder.timestamp,
            content,
        )
    assert conversation.pending() == []
    assert [m.id for m in conversation] == [m.id for m in history]
    assert find_problems(list(conversation)) == []


@given(st.lists(messages(), min_size=1, max_size=5), st.data())
def test_a_log_cut_anywhere_reads_back_its_whole_records(
    log_messages: list[Message], data: st.DataObject
) -> None:
    records = [dumps_message(m) + b"\n" for m in log_messages]
    whole = b"".join(records)
    cut = data.draw(st.integers(0, len(whole)))
    # A record counts once its closing brace is on disk, newline or not.
    ends, position = [], 0
    for record in records:
        position += len(record)
        ends.append(position - 1)
    expected = [m for m, end in zip(log_messages, ends, strict=True) if end <= cut]
    torn = cut not in (0, *ends, *(e + 1 for e in ends))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "log.jsonl"
        path.write_bytes(whole[:cut])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert read_jsonl(path) == expected
        assert any(issubclass(w.category, TornLineWarning) for w in caught) == torn
        # Appending after the cut keeps every whole record and adds the new one on its own line.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", TornLineWarning)
            append_jsonl(path, log_messages[0], fsync=False)
            assert read_jsonl(path) == [*expected, log_messages[0]]


@given(st.binary(max_size=200))
def test_any_bytes_load_or_raise_format_error(data: bytes) -> None:
    problems = _problems_of(lambda: loads(data))
    assert all(isinstance(p.message, str) and p.message for p in problems)


@given(conversations(max_size=3), st.data())
def test_damaged_documents_load_or_raise_format_error(
    conversation: list[Message], data: st.DataObject
) -> None:
    raw = bytearray(dumps(conversation))
    for _ in range(data.draw(st.integers(1, 3))):
        index = data.draw(st.integers(0, len(raw) - 1))
        raw[index] = data.draw(st.integers(0, 255))
    for strict in (False, True):
        _problems_of(lambda: loads(bytes(raw), strict=strict))  # noqa: B023 - called at once


def _problems_of(action: Callable[[], object]) -> list[Problem]:
    """Run ``action``; any failure must be a ``FormatError`` with at least one problem."""
    try:
        action()
    except FormatError as error:
        problems = error.problems
        if not problems:
            raise AssertionError("a FormatError without problems") from error
        return problems
    return []


def _refuse(name: str) -> None:
    raise AssertionError(f"dumps wrote {name}")


@given(conversations(max_size=8))
def test_problems_by_message_are_find_problems_each_on_its_message(history: list[Message]) -> None:
    # Every location is a JSON path that starts with the message's index (errors.Problem).
    indexed = problems_by_message(history)
    assert [problem for _index, problem in indexed] == find_problems(history)
    assert all(problem.location.startswith(f"[{index}].") for index, problem in indexed)
