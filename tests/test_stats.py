"""``conversation_stats``: a conversation counted, against hand-counted expectations."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

import pytest
from pydantic import TypeAdapter

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
        (b"abc", "conversation_stats takes a list of messages, got a bytes"),
        ({"id": "m1"}, "conversation_stats takes a list of messages, got a dict"),
        (HISTORY[0], "conversation_stats takes a list of messages, got a Message"),
        (None, "conversation_stats takes a list of messages, got a NoneType"),
        (
            {HISTORY[0], HISTORY[1]},
            "conversation_stats: expected a list of messages (in order), got a set, which keeps no order",
        ),
        ([HISTORY[0], {"id": "x"}], "conversation_stats: [1]: expected a Message, found a dict"),
        # Counted a batch at a time, but the index is the item's in the whole.
        ([HISTORY[0]] * 1500 + [None], "conversation_stats: [1500]: expected a Message, found a NoneType"),
    ],
)
def test_what_is_no_list_of_messages_is_refused_by_name(given: object, said: str) -> None:
    with pytest.raises(ArgumentTypeError) as caught:
        conversation_stats(given)  # type: ignore[arg-type]
    assert str(caught.value) == said


def test_any_iterable_of_messages_is_read_once() -> None:
    # Read once, so a generator over a long log will do: it was refused ("takes a list of
    # messages, got a generator").
    stats = conversation_stats(message for message in HISTORY)
    assert (stats.messages, stats.turns, stats.preamble, stats.tokens) == (6, 2, 1, 24)
    assert (stats.first_timestamp, stats.last_timestamp) == (500, 5_000)


def test_a_long_conversation_is_counted_across_batches() -> None:
    # 1,500 system messages, then 500 user and 500 assistant messages in turn: the first user
    # message is at [1500], past any batch that could hold it with the first message. Each
    # system message carries a token_count of 1; "abcdefgh" is estimated as 8 // 4 = 2 tokens.
    # Timestamps fall from 3,000 to 3,000 - 2,499 = 501: the earliest is the last message's.
    system = [
        Message.system(f"s{i}", "abcdefgh", timestamp=3_000 - i).with_token_count(1) for i in range(1_500)
    ]
    rest = [
        (Message.user if i % 2 == 0 else Message.assistant)(f"m{i}", "abcdefgh", timestamp=1_500 - i)
        for i in range(1_000)
    ]
    stats = conversation_stats(iter(system + rest))
    assert stats == ConversationStats(
        messages=2_500,
        roles={"system": 1_500, "user": 500, "assistant": 500, "tool_call": 0, "tool_result": 0},
        turns=500,
        preamble=1_500,
        tool_calls=0,
        tool_errors=0,
        pinned=0,
        pending=0,
        tokens=1_500 * 1 + 1_000 * 2,
        token_counts_set=1_500,
        first_timestamp=501,
        last_timestamp=3_000,
    )


def test_a_conversation_without_a_user_message_is_all_preamble() -> None:
    stats = conversation_stats(iter([HISTORY[0]] * 1_100))
    assert (stats.turns, stats.preamble) == (0, 1_100)


def test_the_roles_of_frozen_stats_cannot_be_changed() -> None:
    # "Stats are frozen": roles was a plain dict that took stats.roles["user"] = 99 and new keys.
    given = {"system": 0, "user": 1, "assistant": 0, "tool_call": 0, "tool_result": 0}
    stats = conversation_stats([Message.user("msg-1", "hi", timestamp=1)])
    with pytest.raises(TypeError):
        stats.roles["user"] = 99  # type: ignore[index]
    with pytest.raises(TypeError):
        stats.roles["bogus"] = 1  # type: ignore[index]
    assert dict(stats.roles) == given
    # Built by hand from a dict, the stats do not follow later changes to it either.
    built = ConversationStats(
        messages=1, roles=given, turns=1, preamble=0, tool_calls=0, tool_errors=0, pinned=0, pending=0,
        tokens=1, token_counts_set=0, first_timestamp=1, last_timestamp=1,
    )  # fmt: skip
    given["user"] = 7
    assert built == stats
    assert built.roles["user"] == 1


@pytest.mark.parametrize(
    "copied",
    [lambda s: pickle.loads(pickle.dumps(s)), copy.copy, copy.deepcopy],
    ids=["pickle", "copy", "deepcopy"],
)
def test_stats_pickle_and_copy_with_their_roles_read_only(copied: Callable[[Any], Any]) -> None:
    stats = conversation_stats(HISTORY)
    again = copied(stats)
    assert again == stats
    assert hash(again) == hash(stats)
    assert again.roles == {"system": 1, "user": 2, "assistant": 1, "tool_call": 0, "tool_result": 2}
    with pytest.raises(TypeError):
        again.roles["user"] = 99


def test_stats_turn_into_dicts_and_json_with_their_roles() -> None:
    # A read-only view (MappingProxyType) broke asdict/astuple and pydantic's JSON, and showed
    # as mappingproxy({...}) in the repr.
    stats = conversation_stats([Message.user("msg-1", "hi", timestamp=1)])
    roles = {"system": 0, "user": 1, "assistant": 0, "tool_call": 0, "tool_result": 0}
    assert dataclasses.asdict(stats)["roles"] == roles
    assert dataclasses.astuple(stats)[:2] == (1, roles)
    dumped = json.loads(TypeAdapter(ConversationStats).dump_json(stats))
    assert (dumped["messages"], dumped["roles"]) == (1, roles)
    assert f"roles={roles!r}," in repr(stats)
    assert dataclasses.replace(stats, messages=2).roles == roles


def test_stats_are_hashable_and_equal_stats_hash_alike() -> None:
    # A frozen dataclass is hashable unless a field is not: roles is a mapping, left out of the
    # hash (the counts beside it tell stats apart).
    first = conversation_stats([Message.user("msg-1", "hi", timestamp=1)])
    again = conversation_stats([Message.user("msg-1", "hi", timestamp=1)])
    other = conversation_stats([Message.system("msg-1", "hi", timestamp=1)])
    assert first == again
    assert hash(first) == hash(again)
    assert first != other
    assert len({first, again, other}) == 2
