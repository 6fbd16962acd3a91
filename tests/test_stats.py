"""``conversation_stats``: a conversation counted, against hand-counted expectations."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from orion_messages import ArgumentTypeError, ConversationStats, Message, Role, ToolCall, conversation_stats

CALLS = [ToolCall(id="c1", name="read", arguments={"p": "a"}), ToolCall(id="c2", name="read", arguments={})]

HISTORY = [
    Message.system("m1", "Be brief.", timestamp=1_000).with_token_count(5),
    Message.user("m2", "Read two files.", timestamp=2_000).pin().with_token_count(4),
    Message.assistant("m3", "", CALLS, timestamp=3_000).with_token_count(9),
    Message.tool_result_message("m4", "c1", "read", "no such file", True, timestamp=4_000).with_token_count(
        3
    ),
    Message.pending_result("m5", "c2", "read", timestamp=5_000).with_token_count(1),
    Message.user("m6", "abcdefgh", timestamp=500),  # no count: 8 characters, estimated as 2 tokens
]


def test_a_conversation_is_counted_as_the_stats_command_counts_it() -> None:
    stats = conversation_stats(HISTORY)
    assert stats == ConversationStats(
        messages=6,
        roles={"system": 1, "user": 2, "assistant": 1, "tool_call": 0, "tool_result": 2},
        turns=2,  # each starts at a user message
        preamble=1,  # the system message before the first one
        tool_calls=2,
        tool_errors=1,
        pinned=1,
        pending=1,
        tokens=5 + 4 + 9 + 3 + 1 + 2,
        token_counts_set=5,
        first_timestamp=500,  # the earliest, not the first message's
        last_timestamp=5_000,
    )
    assert stats.roles[Role.USER] == 2  # the enum finds its count too
    assert list(stats.roles) == ["system", "user", "assistant", "tool_call", "tool_result"]
    assert stats.first_at == datetime(1970, 1, 1, 0, 0, 0, 500_000, tzinfo=timezone.utc)
    assert stats.last_at == datetime(1970, 1, 1, 0, 0, 5, tzinfo=timezone.utc)


def test_no_messages_have_no_timestamps() -> None:
    stats = conversation_stats([])
    assert (stats.messages, stats.turns, stats.tokens, stats.first_timestamp, stats.first_at) == (
        0,
        0,
        0,
        None,
        None,
    )
    assert set(stats.roles.values()) == {0}
    assert len(stats.roles) == len(Role)


def test_a_timestamp_past_datetimes_range_has_no_datetime() -> None:
    stats = conversation_stats([Message.user("m", "hi", timestamp=2**63 - 1)])
    assert (stats.last_timestamp, stats.last_at) == (2**63 - 1, None)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("abc", "conversation_stats takes a list of messages, got a str"),
        ([HISTORY[0], {"id": "x"}], "conversation_stats: [1]: expected a Message, found a dict"),
    ],
)
def test_what_is_no_list_of_messages_is_refused_by_name(given: object, said: str) -> None:
    with pytest.raises(ArgumentTypeError) as caught:
        conversation_stats(given)  # type: ignore[arg-type]
    assert str(caught.value) == said


def test_stats_are_hashable_and_equal_stats_hash_alike() -> None:
    # A frozen dataclass is hashable unless a field is not: roles is a dict.
    first = conversation_stats([Message.user("msg-1", "hi", timestamp=1)])
    again = conversation_stats([Message.user("msg-1", "hi", timestamp=1)])
    other = conversation_stats([Message.system("msg-1", "hi", timestamp=1)])
    assert first == again
    assert hash(first) == hash(again)
    assert first != other
    assert len({first, again, other}) == 2
