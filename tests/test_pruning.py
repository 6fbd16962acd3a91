"""Turn-aware pruning: cases worked out by hand from the reference page ("How orion-core prunes").

Every expectation below is computed by hand in the comments from the reference algorithm:
``available = max(0, max_context - max_response)``; overhead ``>= available`` fails; the latest
turn must fit; older pinned turns are kept oldest first; then newest-to-oldest each other turn
is kept while it fits and the walk stops at the first that does not.
"""

from __future__ import annotations

import copy
import gc
import pickle
import weakref
from collections.abc import Callable
from typing import Any

import pytest

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    Conversation,
    Message,
    Role,
    ToolCall,
    TurnLayout,
    split_turns,
)
from orion_messages.pruning import (
    SUMMARY_PREFIX,
    ContextConfig,
    ContextOverflowError,
    PrunePlan,
    PruneResult,
    PruneStrategy,
    TokenCounter,
    estimate_tokens,
    is_summary,
    plan_prune,
    prune,
    tokenizer_counter,
)
from orion_messages.text_counters import count_words

T0 = 1781512345678


def build(spec: str) -> list[Message]:
    """Messages from a compact spec, one word a message, with the token count in the word.

    ``S5`` system, ``U5`` user, ``A5`` assistant, ``C5:k`` assistant calling tool call ``k``,
    ``R5:k`` the result of ``k``, ``W5:k`` a pending result of ``k``; a trailing ``*`` pins.
    Ids are ``msg-1``, ``msg-2``... in order.
    """
    messages: list[Message] = []
    for number, word in enumerate(spec.split(), start=1):
        pinned = word.endswith("*")
        word = word.rstrip("*")
        kind, rest = word[0], word[1:]
        tokens_text, _, call = rest.partition(":")
        message_id = f"msg-{number}"
        if kind == "S":
            message = Message.system(message_id, "sys", timestamp=T0)
        elif kind == "U":
            message = Message.user(message_id, f"user {number}", timestamp=T0)
        elif kind == "A":
            message = Message.assistant(message_id, f"assistant {number}", timestamp=T0)
        elif kind == "C":
            message = Message.assistant(
                message_id, "", [ToolCall(id=call, name="tool", arguments={})], timestamp=T0
            )
        elif kind in "RW":
            result = Message.pending_result if kind == "W" else Message.tool_result_message
            message = result(message_id, call, "tool", "out", timestamp=T0)
        else:
            raise AssertionError(f"bad spec word {word!r}")
        message = message.with_token_count(int(tokens_text))
        messages.append(message.pin() if pinned else message)
    return messages


def config(context: int, response: int = 0, reserved: int = 0) -> ContextConfig:
    """A sliding-window config with ``available = context - response``."""
    return ContextConfig(max_context_tokens=context, max_response_tokens=response, reserved_tokens=reserved)


def ranges(*pairs: tuple[int, int]) -> list[range]:
    """Turn ranges from (start, stop) pairs."""
    return [range(start, stop) for start, stop in pairs]


# --- orion-core's semantics, by hand ---------------------------------------------------------


def test_defaults_are_orion_cores() -> None:
    default = ContextConfig()
    assert (default.max_context_tokens, default.max_response_tokens, default.reserved_tokens) == (
        4096,
        2048,
        0,
    )
    assert default.strategy is PruneStrategy.SLIDING_WINDOW
    assert default.available_tokens == 2048


def test_everything_fits() -> None:
    # turns [0:2] 10+5, [2:4] 10+5, [4:5] 10; available = 100 - 50 = 50; 10 + 15 + 15 = 40 <= 50
    messages = build("U10 A5 U10 A5 U10")
    plan = plan_prune(messages, config(100, 50))
    assert plan == PrunePlan(range(0), ranges((0, 2), (2, 4), (4, 5)), [], 0, 40, 0, 50)


def test_walk_stops_at_the_first_turn_that_does_not_fit() -> None:
    # turns: t0 [0:2] 3+2=5, t1 [2:4] 10+10=20, t2 [4:6] 3+2=5, t3 [6:8] 5+5=10 (latest)
    # available = 40 - 10 = 30; latest 10 -> 20 left; t2 5 -> 15 left; t1 20 > 15: stop.
    # t0 (5) would fit in the 15 left but is older than the gap: dropped.
    messages = build("U3 A2 U10 A10 U3 A2 U5 A5")
    plan = plan_prune(messages, config(40, 10))
    assert plan.kept == ranges((4, 6), (6, 8))
    assert plan.dropped == ranges((0, 2), (2, 4))
    assert (plan.kept_tokens, plan.dropped_tokens, plan.budget) == (15, 25, 30)


def test_a_turn_that_fits_exactly_is_kept() -> None:
    # available 20; latest [2:4] 10 -> 10 left; t0 [0:2] costs 10 <= 10: kept, 0 left
    messages = build("U5 A5 U5 A5")
    plan = plan_prune(messages, config(20))
    assert plan.kept == ranges((0, 2), (2, 4))
    assert plan.dropped == []
    assert plan.kept_tokens == 20


def test_pinned_old_turn_survives_and_kept_turns_are_not_contiguous() -> None:
    # t0 [0:2] 3+3=6 with a pinned assistant, t1 [2:4] 4+4=8, t2 [4:6] 4+5=9, t3 [6:8] 3+4=7 latest
    # available = 25; latest 7 -> 18; pinned t0 6 -> 12; walk: t2 9 -> 3; t1 8 > 3: stop
    messages = build("U3 A3* U4 A4 U4 A5 U3 A4")
    plan = plan_prune(messages, config(25))
    assert plan.kept == ranges((0, 2), (4, 6), (6, 8))
    assert plan.dropped == ranges((2, 4))
    assert plan.kept_tokens == 22


def test_pinned_turns_are_kept_even_past_the_gap() -> None:
    # t0 [0:1] 5 pinned, t1 [1:2] 9, t2 [2:3] 5 pinned, t3 [3:4] 2, t4 [4:5] 4 latest
    # available 20: latest 4 -> 16; pinned t0 5 -> 11; pinned t2 5 -> 6;
    # walk: t3 2 -> 4; t2 pinned (skipped); t1 9 > 4: stop; t0 already kept
    messages = build("U5* U9 U5* U2 U4")
    plan = plan_prune(messages, config(20))
    assert plan.kept == ranges((0, 1), (2, 3), (3, 4), (4, 5))
    assert plan.dropped == ranges((1, 2))
    assert plan.kept_tokens == 16


def test_walk_stop_drops_every_older_unpinned_turn() -> None:
    # t0..t3 cost 1 each, t4 costs 30, t5 latest costs 5; available 20
    # latest 5 -> 15; t4 30 > 15: stop at once; t0..t3 dropped although each would fit
    messages = build("U1 U1 U1 U1 U30 U5")
    plan = plan_prune(messages, config(20))
    assert plan.kept == ranges((5, 6))
    assert plan.dropped == ranges((0, 1), (1, 2), (2, 3), (3, 4), (4, 5))


def test_reserved_tokens_are_the_fixed_overhead() -> None:
    # available = 30 - 10 = 20; reserved 8 -> budget 12; latest [2:3] 6 -> 6 left; t0 [0:2] 7 > 6
    messages = build("U4 A3 U6")
    plan = plan_prune(messages, config(30, 10, reserved=8))
    assert plan.budget == 12
    assert plan.kept == ranges((2, 3))
    assert plan.dropped == ranges((0, 2))


# --- the three refusals ------------------------------------------------------------------


def test_refusal_when_the_overhead_leaves_no_room() -> None:
    # available = 30 - 20 = 10; reserved 10 >= 10: refused
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(build("U1"), config(30, 20, reserved=10))
    error = caught.value
    assert isinstance(error, ValueError)
    assert (error.reason, error.tokens, error.available, error.fixed_tokens) == ("overhead", 10, 10, 10)
    # orion-core's text, exactly (reference page, "Facts from the real serde": refusals)
    assert str(error) == "System prompt and tools (10 tokens) exceed available context budget (10 tokens)"


def test_refusal_when_nothing_is_available_even_without_overhead() -> None:
    # available = max(0, 100 - 200) = 0; overhead 0 >= 0: refused
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(build("U1"), config(100, 200))
    assert (caught.value.reason, caught.value.tokens, caught.value.available) == ("overhead", 0, 0)
    assert (
        str(caught.value) == "System prompt and tools (0 tokens) exceed available context budget (0 tokens)"
    )


def test_refusal_when_the_latest_turn_does_not_fit() -> None:
    # available 20, reserved 5 -> budget 15; latest [1:3] 8+8 = 16 > 15
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(build("U1 U8 A8"), config(20, reserved=5))
    error = caught.value
    assert (error.reason, error.tokens, error.budget, error.turn) == ("latest", 16, 15, range(1, 3))
    assert (error.available, error.fixed_tokens) == (20, 5)
    # {latest} 16, {fixed} 5, {available} 20 = context - response, not what the overhead leaves
    assert str(error) == (
        "Latest message (16 tokens) plus system prompt (5 tokens) exceeds context budget (20 tokens). "
        "Clear the conversation or increase context size."
    )


def test_refusal_when_the_pinned_turns_do_not_fit() -> None:
    # available 20; latest [2:3] 8 -> 12 left; pinned t0 7 -> 5 left; pinned t1 6 > 5: refused
    # pinned_total sums every pinned turn: 7 + 6 = 13; {available} is 20
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(build("U7* U6* U8"), config(20))
    error = caught.value
    assert (error.reason, error.tokens, error.budget, error.turn) == ("pinned", 13, 5, range(1, 2))
    assert str(error) == (
        "Pinned messages (13 tokens) exceed the available context budget (20 tokens). "
        "Unpin some messages or increase context size."
    )


def test_pinned_total_counts_every_pinned_turn_and_a_pinned_latest_turn() -> None:
    # available 20; latest [3:4] pinned 5 -> 15; pinned t0 [0:1] 9 -> 6; pinned t1 [1:2] 7 > 6: refused
    # pinned_total = 9 + 7 + 4 (t2, not yet tried) + 5 (the latest, pinned) = 25
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(build("U9* U7* U4* U5*"), config(20))
    error = caught.value
    assert (error.reason, error.tokens, error.turn) == ("pinned", 25, range(1, 2))
    assert str(error).startswith(
        "Pinned messages (25 tokens) exceed the available context budget (20 tokens)."
    )


def test_a_pinned_latest_turn_is_only_counted_once() -> None:
    # available 10; latest [1:2] pinned 9 -> 1 left; t0 2 > 1: dropped (not a refusal)
    plan = plan_prune(build("U2 U9*"), config(10))
    assert plan.kept == ranges((1, 2))
    assert plan.dropped == ranges((0, 1))


# --- better than orion-core ----------------------------------------------------------------


def test_preamble_is_kept_and_counted() -> None:
    # preamble [0:1] system 4; available 20 -> 16 left; latest [3:5] 5+3=8 -> 8 left; t0 [1:3] 6+3=9 > 8
    messages = build("S4 U6 A3 U5 A3")
    plan = plan_prune(messages, config(20))
    assert plan.preamble == range(0, 1)
    assert plan.preamble_tokens == 4
    assert plan.kept == ranges((3, 5))
    assert plan.dropped == ranges((1, 3))
    assert plan.kept_tokens == 12  # 4 + 8
    assert plan.kept_count == 3
    assert [m.id for m in plan.kept_messages(messages)] == ["msg-1", "msg-4", "msg-5"]


def test_a_preamble_that_leaves_no_room_is_refused_like_overhead() -> None:
    # reserved 5 + preamble 15 = 20 >= available 20
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(build("S10 A5 U1"), config(20, reserved=5))
    error = caught.value
    assert (error.reason, error.tokens, error.available) == ("overhead", 20, 20)
    assert str(error) == "System prompt and tools (20 tokens) exceed available context budget (20 tokens)"


def test_no_user_message_keeps_the_preamble() -> None:
    plan = plan_prune(build("S3 A2"), config(10))
    assert plan == PrunePlan(range(0, 2), [], [], 5, 5, 0, 10, fixed_tokens=5)


def test_empty_conversation() -> None:
    assert plan_prune([], config(10)) == PrunePlan(range(0), [], [], 0, 0, 0, 10)


def test_a_turn_with_a_pending_result_is_kept_like_a_pinned_one() -> None:
    # t0 [0:3] 2+2+2=6 holds a pending result; t1 [3:4] 9; t2 [4:5] 3 latest
    # available 12: latest 3 -> 9; pending t0 6 -> 3; walk: t1 9 > 3: stop
    messages = build("U2 C2:k W2:k U9 U3")
    plan = plan_prune(messages, config(12))
    assert plan.kept == ranges((0, 3), (4, 5))
    assert plan.dropped == ranges((3, 4))


def test_a_result_in_a_later_turn_than_its_call_ties_the_turns() -> None:
    # t0 [0:2] 3+3 calls k; t1 [2:4] 3+3 answers k; t2 [4:5] 3 latest; t3? no: t2 is latest
    # available 12: latest 3 -> 9; units: {t0,t1} cost 12 > 9: stop, both dropped together
    messages = build("U3 C3:k U3 R3:k U3")
    plan = plan_prune(messages, config(12))
    assert plan.kept == ranges((4, 5))
    assert plan.dropped == ranges((0, 2), (2, 4))
    # with 15 available: latest 3 -> 12; {t0,t1} 12 <= 12: both kept
    plan = plan_prune(messages, config(15))
    assert plan.kept == ranges((0, 2), (2, 4), (4, 5))


def test_a_latest_turn_answering_an_older_call_needs_that_turn_too() -> None:
    # t0 [0:2] 2+2 calls k; t1 [2:4] 2+2 answers k (latest); the latest unit is t0+t1 = 8
    messages = build("U2 C2:k U2 R2:k")
    assert plan_prune(messages, config(8)).kept == ranges((0, 2), (2, 4))
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(messages, config(7))
    assert (caught.value.reason, caught.value.tokens, caught.value.turn) == ("latest", 8, range(0, 4))


def test_a_turn_answering_a_call_in_the_preamble_is_kept() -> None:
    # preamble [0:1] calls k (2); t0 [1:3] 2+2 answers k; t1 [3:4] 9; t2 [4:5] 2 latest
    # available 20 -> 18 after the preamble; latest 2 -> 16; t0 protected 4 -> 12; t1 9 -> 3
    # with 15 available: 13 -> 11 -> 7 -> t1 9 > 7 dropped, t0 still kept
    messages = build("C2:k U2 R2:k U9 U2")
    plan = plan_prune(messages, config(15))
    assert plan.kept == ranges((1, 3), (4, 5))
    assert plan.dropped == ranges((3, 4))


# --- counting ---------------------------------------------------------------------------


def test_estimate_is_chars_over_four_at_least_one() -> None:
    assert estimate_tokens("abcdefgh") == 2  # 8 // 4
    assert estimate_tokens("abcdefghijk") == 2  # 11 // 4
    assert estimate_tokens("abc") == 1  # max(1, 0)
    assert estimate_tokens("") == 1
    assert estimate_tokens(Message.user("m", "x" * 40)) == 10


def test_estimate_counts_tool_call_names_and_arguments() -> None:
    # "abcd" 4 + "add" 3 + '{"a":2,"b":3}' 13 = 20 chars -> 5; a tokenless estimate would say 1
    message = Message.assistant("m", "abcd", [ToolCall(id="c", name="add", arguments={"a": 2, "b": 3})])
    assert estimate_tokens(message) == 5
    # arguments of any JSON type: "" 0 + "f" 1 + '"some text"' 11 + "g" 1 + "[1,2,3]" 7 = 20 -> 5
    message = Message.assistant(
        "m",
        "",
        [
            ToolCall(id="c1", name="f", arguments="some text"),
            ToolCall(id="c2", name="g", arguments=[1, 2, 3]),
        ],
    )
    assert estimate_tokens(message) == 5


def test_default_count_uses_token_count_where_filled_in() -> None:
    # 400 chars would estimate 100; the host's counts win: latest 3, t0 3; available 10 keeps both
    messages = [
        Message.user("a", "x" * 400, timestamp=T0).with_token_count(3),
        Message.user("b", "y" * 400, timestamp=T0).with_token_count(3),
    ]
    assert plan_prune(messages, config(10)).kept_tokens == 6
    # without them: 100 each; available 150: latest 100 -> 50; t0 100 > 50
    unset = [message.with_token_count(None) for message in messages]
    plan = plan_prune(unset, config(150))
    assert (plan.kept_tokens, plan.dropped) == (100, ranges((0, 1)))


def test_tokenizer_counter_counts_content_names_and_arguments() -> None:
    def words(text: str) -> int:
        return len(text.split())

    counter = tokenizer_counter(words)
    # "a b c" 3 + "lookup" 1 + '{"q":"x y"}' 2 words = 6
    message = Message.assistant("m", "a b c", [ToolCall(id="c", name="lookup", arguments={"q": "x y"})])
    assert counter(message) == 6
    assert counter(message.with_token_count(42)) == 42
    assert tokenizer_counter(words, use_token_count=False)(message.with_token_count(42)) == 6


def test_each_message_is_counted_once_across_plans() -> None:
    calls: list[str] = []

    def count(message: Message) -> int:
        calls.append(message.id)
        return 1

    counter = TokenCounter(count)
    messages = build("U1 A1 U1 A1")
    plan_prune(messages, config(100), count=counter)
    plan_prune(messages, config(50), count=counter)
    assert sorted(calls) == ["msg-1", "msg-2", "msg-3", "msg-4"]
    messages.append(Message.user("msg-5", "more", timestamp=T0))
    plan_prune(messages, config(100), count=counter)
    assert sorted(calls) == ["msg-1", "msg-2", "msg-3", "msg-4", "msg-5"]


def test_a_plain_function_counts_a_plain_list_afresh_each_plan() -> None:
    calls: list[str] = []

    def count(message: Message) -> int:
        calls.append(message.id)
        return 1

    messages = build("U1 A1")
    plan_prune(messages, config(100), count=count)
    plan_prune(messages, config(100), count=count)
    assert calls == ["msg-1", "msg-2", "msg-1", "msg-2"]  # no cache outlives the call


def test_a_conversation_remembers_a_plain_functions_counts_and_recounts_a_changed_message() -> None:
    calls: list[str] = []

    def count(message: Message) -> int:
        calls.append(message.id)
        return 1

    conversation = Conversation(build("U1 A1 U1"))
    conversation.plan_prune(config(100), count=count)
    conversation.plan_prune(config(100), count=count)
    assert calls == ["msg-1", "msg-2", "msg-3"]
    conversation.append(Message.assistant("msg-4", "ok", timestamp=T0))
    conversation.set_pinned("msg-2", True)
    plan = conversation.plan_prune(config(100), count=count)
    assert calls == ["msg-1", "msg-2", "msg-3", "msg-2", "msg-4"]
    assert plan.kept_tokens == 4


def test_a_conversation_counts_only_appended_messages() -> None:
    counter_calls: list[str] = []

    def count(message: Message) -> int:
        counter_calls.append(message.id)
        return 2

    counter = TokenCounter(count)
    conversation = Conversation(build("U1 A1 U1 A1"))
    first = conversation.plan_prune(config(100), count=counter)
    conversation.append(Message.user("msg-5", "more", timestamp=T0))
    second = conversation.plan_prune(config(100), count=counter)
    assert sorted(counter_calls) == ["msg-1", "msg-2", "msg-3", "msg-4", "msg-5"]
    assert (first.kept_tokens, second.kept_tokens) == (8, 10)


def test_count_cache_forgets_messages_that_are_gone() -> None:
    counter = TokenCounter(lambda message: 1)
    messages = build("U1 A1 U1")
    counter.counts(messages)
    assert len(counter) == 3
    del messages
    gc.collect()
    assert len(counter) == 0


def _by_length(message: Message) -> int:
    """A message counter at module level, so that a counter holding it pickles."""
    return len(message.content)


@pytest.mark.parametrize("make_copy", ["copy", "deepcopy", "pickle"])
def test_a_copied_or_pickled_token_counter_remembers_no_count(make_copy: str) -> None:
    counter = TokenCounter(_by_length, use_token_count=True)
    old = Message.user("msg-1", "x" * 100, timestamp=T0)
    assert counter.counts([old]) == [100]
    # Before: a deep copy kept the counts, keyed by the ids of the original's messages, and
    # never dropped them (its weakrefs called back the original); a pickle raised TypeError.
    copies: dict[str, Callable[[TokenCounter], TokenCounter]] = {
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
        "pickle": lambda counter: pickle.loads(pickle.dumps(counter)),
    }
    copied = copies[make_copy](counter)
    assert type(copied) is TokenCounter
    assert len(copied) == 0
    assert repr(copied) == "TokenCounter(_by_length, use_token_count=True)"
    assert copied.counts([old, Message.user("msg-2", "y", timestamp=T0).with_token_count(7)]) == [100, 7]
    assert len(copied) == 1
    assert len(counter) == 1  # the original's counts are its own


class _TaggedCounter(TokenCounter):
    """A host's subclass with an attribute of its own."""

    tag = ""


@pytest.mark.parametrize("make_copy", ["copy", "deepcopy", "pickle"])
def test_copies_keep_a_subclass_s_attributes_and_tokenizer_counters_pickle(make_copy: str) -> None:
    copies: dict[str, Callable[[Any], Any]] = {
        "copy": copy.copy,
        "deepcopy": copy.deepcopy,
        "pickle": lambda counter: pickle.loads(pickle.dumps(counter)),
    }
    tagged = _TaggedCounter(_by_length)
    tagged.tag = "gpt-4o"
    assert copies[make_copy](tagged).tag == "gpt-4o"  # an AttributeError after the cache change
    # tokenizer_counter's function was a closure, which never pickled.
    words = copies[make_copy](tokenizer_counter(count_words))
    assert repr(words) == "TokenCounter(tokenizer_counter(count_words), use_token_count=True)"
    assert words(Message.user("msg-1", "two words", timestamp=T0)) == 2


def test_a_copy_of_a_token_counter_counts_with_the_same_function() -> None:
    calls: list[str] = []

    def count(message: Message) -> int:
        calls.append(message.id)
        return 3

    counter = TokenCounter(count)
    message = Message.user("msg-1", "hi", timestamp=T0)
    for copied in (copy.copy(counter), copy.deepcopy(counter)):
        assert copied(message) == 3
    assert calls == ["msg-1", "msg-1"]  # each copy counted afresh, with the very same function


def test_a_dropped_token_counter_frees_its_counts_without_the_collector() -> None:
    messages = build("U1 A1 U1")
    counter = TokenCounter(lambda message: 1)
    counter.counts(messages)
    alive = weakref.ref(counter)
    gc.disable()
    try:
        del counter
        # Before: each count's weakref callback held the counter, in a cycle through its cache.
        assert alive() is None
    finally:
        gc.enable()
    del messages  # the messages outlive the counter: their weakrefs went with it, unfired


def test_a_message_listed_many_times_is_counted_once() -> None:
    calls: list[str] = []

    def count(message: Message) -> int:
        calls.append(message.id)
        return 2

    reminder = Message.assistant("msg-2", "remember", timestamp=T0)
    user = Message.user("msg-1", "hi", timestamp=T0)
    messages = [user, reminder, reminder, reminder]
    counter = TokenCounter(count)
    assert counter.counts(messages) == [2, 2, 2, 2]
    assert calls == ["msg-1", "msg-2"]  # before: msg-2 three times
    assert plan_prune(messages, config(100), count=TokenCounter(count)).kept_tokens == 8
    assert calls == ["msg-1", "msg-2", "msg-1", "msg-2"]


def test_a_token_counter_shows_its_function_and_flag() -> None:
    # Before: <orion_messages.counting.TokenCounter object at 0x...>, for both.
    assert repr(TokenCounter(estimate_tokens)) == "TokenCounter(estimate_tokens, use_token_count=False)"
    assert (
        repr(tokenizer_counter(count_words))
        == "TokenCounter(tokenizer_counter(count_words), use_token_count=True)"
    )


def test_a_counter_returning_a_bad_value_says_where() -> None:
    with pytest.raises(ValueError, match=r'returned -1 for message \[1\] \(id "msg-2"\)'):
        plan_prune(build("U1 A1"), config(100), count=lambda message: -1 if message.id == "msg-2" else 1)


def test_config_is_validated() -> None:
    with pytest.raises(ValueError, match="max_response_tokens must be a non-negative int"):
        ContextConfig(max_response_tokens=-1)
    with pytest.raises(TypeError, match="max_context_tokens must be an int, got a str '4096'"):
        ContextConfig(max_context_tokens="4096")  # type: ignore[arg-type]
    assert ContextConfig(strategy="summarize").strategy is PruneStrategy.SUMMARIZE
    allowed = "one of 'sliding_window', 'summarize'"
    with pytest.raises(
        ArgumentTypeError, match=f"strategy must be a PruneStrategy or {allowed}, got a NoneType None"
    ):
        ContextConfig(strategy=None)  # type: ignore[arg-type]
    with pytest.raises(
        ArgumentValueError, match=f"ContextConfig.strategy must be {allowed}, got 'Summarize'"
    ):
        ContextConfig(strategy="Summarize")  # type: ignore[arg-type]


# --- the conversation ----------------------------------------------------------------------


def test_conversation_plan_follows_changes() -> None:
    # t0 [0:2] 5+5, t1 [2:4] 5+5, latest [4:5] 5; available 15: latest 5 -> 10; t1 10 -> 0; t0 dropped
    conversation = Conversation(build("U5 A5 U5 A5 U5"))
    assert conversation.plan_prune(config(15)).dropped == ranges((0, 2))
    # pinning msg-1 protects t0: latest 5 -> 10; t0 10 -> 0; t1 10 > 0: dropped
    assert conversation.set_pinned("msg-1", True)
    assert conversation.plan_prune(config(15)).dropped == ranges((2, 4))
    # an appended assistant message joins the latest turn: [4:6] 5+1 = 6 -> 9; t0 pinned 10 > 9
    conversation.append(Message.assistant("msg-6", "ok", timestamp=T0).with_token_count(1))
    with pytest.raises(ContextOverflowError):
        conversation.plan_prune(config(15))
    assert conversation.plan_prune(config(16)).kept == ranges((0, 2), (4, 6))


def test_conversation_plan_sees_a_resolved_result() -> None:
    # t0 [0:3] pending; t1 [3:4] 5 latest; available 8: latest 5 -> 3; pending t0 3 -> 0
    conversation = Conversation(build("U1 C1:k W1:k U5"))
    assert conversation.plan_prune(config(8)).kept == ranges((0, 3), (3, 4))
    conversation.resolve("k", "done")  # resolved: no longer protected; 3 <= 3 still fits
    assert conversation.plan_prune(config(8)).dropped == []
    assert conversation.plan_prune(config(7)).dropped == ranges((0, 3))


# --- Summarize --------------------------------------------------------------------------------


def summarizing(
    text: str, seen: list[tuple[list[str], str | None]]
) -> Callable[[list[Message], str | None], str]:
    """A summarizer returning ``text`` that records the ids it folds and the prior summary it gets."""

    def summarize(messages: list[Message], prior: str | None) -> str:
        seen.append(([message.id for message in messages], prior))
        return text

    return summarize


SUMMARIZE = ContextConfig(max_context_tokens=40, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)


def test_summarize_folds_dropped_turns_into_one_pinned_user_message() -> None:
    # preamble 2; t0 [1:3] 10+10; t1 [3:5] 10+10; latest [5:6] 5; available 40 -> 38 -> 33 -> t1 20 -> 13
    # -> t0 20 > 13: dropped and folded; summary (estimate: prefix 34 chars + "short" 5 = 39 -> 9) fits
    messages = build("S2 U10 A10 U10 A10 U5")
    seen: list[tuple[list[str], str | None]] = []
    result = prune(messages, SUMMARIZE, summarize=summarizing("short", seen))
    assert seen == [(["msg-2", "msg-3"], None)]
    summary = result.summary
    assert summary is not None
    assert result.summary_error is None
    assert summary.role is Role.USER
    assert summary.pinned
    assert summary.content == "[Summary of earlier conversation]\nshort"
    assert summary.id == "msg-7"
    assert [m.id for m in result.messages] == ["msg-1", "msg-7", "msg-4", "msg-5", "msg-6"]
    assert [m.id for m in result.dropped] == ["msg-2", "msg-3"]
    assert result.tokens == 2 + 9 + 20 + 5


def test_exactly_one_summary_accumulates() -> None:
    prior = Message.user("msg-1", SUMMARY_PREFIX + "before", timestamp=T0).pin().with_token_count(3)
    # [0:1] prior summary 3 (pinned turn); t1 [1:3] 10+10; t2 [3:5] 5+5; latest [5:6] 5
    # available 40: latest 5 -> 35; pinned summary 3 -> 32; t2 10 -> 22; t1 20 -> 2: everything fits
    rest = build("U10 A10 U5 A5 U5")
    messages = [prior] + [m.model_copy(update={"id": f"msg-{i + 2}"}) for i, m in enumerate(rest)]
    assert prune(messages, SUMMARIZE, summarize=summarizing("x", [])).summary is None  # nothing dropped
    # available 30: latest 5 -> 25; summary 3 -> 22; t2 10 -> 12; t1 20 > 12: dropped
    seen: list[tuple[list[str], str | None]] = []
    cfg = ContextConfig(max_context_tokens=30, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = prune(messages, cfg, summarize=summarizing("after", seen))
    # orion-core's plan_summary renders every removed message, the prior summary included, and
    # passes the prior's text after the marker, trimmed, as the earlier summary
    assert seen == [(["msg-1", "msg-2", "msg-3"], "before")]
    assert [is_summary(m) for m in result.messages] == [True, False, False, False]
    assert result.messages[0].content == SUMMARY_PREFIX + "after"
    assert result.messages[0].id == "msg-7"
    assert [m.id for m in result.dropped] == ["msg-1", "msg-2", "msg-3"]


def test_a_summary_in_a_conversation_shows_in_a_view_taken_before() -> None:
    conversation = Conversation(build("S2 U10 A10 U10 A10 U5"))
    view = conversation.messages
    conversation.prune(SUMMARIZE, summarize=summarizing("short", []))
    # as in test_summarize_folds_dropped_turns_into_one_pinned_user_message: msg-2, msg-3 folded
    assert [m.id for m in view] == ["msg-1", "msg-7", "msg-4", "msg-5", "msg-6"]


def test_the_sliding_window_never_calls_summarize() -> None:
    seen: list[tuple[list[str], str | None]] = []
    sliding = ContextConfig(max_context_tokens=40, max_response_tokens=0)
    result = Conversation(build("S2 U10 A10 U10 A10 U5")).prune(sliding, summarize=summarizing("x", seen))
    assert seen == []
    assert (result.summary, result.summary_error) == (None, None)
    assert [m.id for m in result.messages] == ["msg-1", "msg-4", "msg-5", "msg-6"]


@pytest.mark.parametrize(
    ("summarize", "error_type"),
    [
        (lambda messages, prior: 1 / 0, ZeroDivisionError),
        (lambda messages, prior: "   ", ValueError),
        (lambda messages, prior: "x" * 400, ValueError),  # 434 chars -> 108 tokens: no room
    ],
    ids=["raises", "empty", "too-big"],
)
def test_a_failed_summary_leaves_the_sliding_window(
    summarize: Callable[[list[Message], str | None], str], error_type: type[Exception]
) -> None:
    messages = build("S2 U10 A10 U10 A10 U5")
    conversation = Conversation(messages)
    result = conversation.prune(SUMMARIZE, summarize=summarize)
    assert result.summary is None
    assert isinstance(result.summary_error, error_type)
    assert [m.id for m in result.messages] == ["msg-1", "msg-4", "msg-5", "msg-6"]
    assert list(conversation) == messages
    assert conversation.next_id() == "msg-7"  # no id was spent


def test_conversation_prune_replaces_folded_messages_with_the_summary() -> None:
    conversation = Conversation(build("S2 U10 A10 U10 A10 U5"))
    result = conversation.prune(SUMMARIZE, summarize=lambda messages, prior: "gist")
    assert result.summary is not None
    assert list(conversation) == result.messages
    assert conversation.next_id() == "msg-8"


def test_sliding_window_ignores_summarize_and_summarize_needs_it() -> None:
    messages = build("U10 A10 U10 A10 U5")
    result = prune(messages, config(30), summarize=lambda messages, prior: "never")
    assert result.summary is None
    assert result.summary_error is None
    assert [m.id for m in result.messages] == ["msg-3", "msg-4", "msg-5"]
    with pytest.raises(ValueError, match="needs a summarize"):
        prune(messages, SUMMARIZE)


def test_the_new_summary_takes_the_place_of_the_prior_one() -> None:
    # [0:2] prior summary 3 + assistant 2 = 5 (pinned turn); t1 [2:4] 10+10; t2 [4:6] 5+5; latest [6:7] 5
    # available 30: latest 5 -> 25; pinned turn 5 -> 20; t2 10 -> 10; t1 20 > 10: dropped and folded
    prior = Message.user("msg-1", SUMMARY_PREFIX + "before", timestamp=T0).pin().with_token_count(3)
    rest = build("A2 U10 A10 U5 A5 U5")
    messages = [prior] + [m.model_copy(update={"id": f"msg-{i + 2}"}) for i, m in enumerate(rest)]
    cfg = ContextConfig(max_context_tokens=30, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = prune(messages, cfg, summarize=lambda messages, prior: "after")
    # the new summary sits where the prior one was, so the assistant message stays in its turn
    assert [m.id for m in result.messages] == ["msg-8", "msg-2", "msg-5", "msg-6", "msg-7"]
    assert [m.id for m in result.dropped] == ["msg-1", "msg-3", "msg-4"]


MARKER = "[Summary of earlier conversation]"  # orion-core's SUMMARY_MARKER: SUMMARY_PREFIX without "\n"


@pytest.mark.parametrize(
    ("answer", "body"),
    [
        (" \t the gist \u3000\u2028\n", "the gist"),  # Rust's trim: Unicode White_Space
        ("\x85\xa0gist\u202f", "gist"),
        ("\x1f gist \x1c", "\x1f gist \x1c"),  # U+001C..U+001F are no White_Space: Rust keeps them
        ("\x1e", "\x1e"),  # so this is no empty summary to orion-core
        (SUMMARY_PREFIX + "gist", SUMMARY_PREFIX + "gist"),  # a repeated marker is written twice
    ],
    ids=["white-space", "nbsp", "separators", "only-a-separator", "repeated-marker"],
)
def test_the_summary_is_trimmed_as_rust_trims(answer: str, body: str) -> None:
    # t0 [0:2] 20+20; latest [2:3] 5; available 40: latest 5 -> 35; t0 40 > 35: dropped and folded
    # orion-core writes format!("{SUMMARY_MARKER}\n{summary}") with summary = gen.text.trim()
    cfg = ContextConfig(max_context_tokens=40, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = prune(build("U20 A20 U5"), cfg, summarize=lambda messages, prior: answer)
    assert result.summary_error is None
    assert result.summary is not None
    assert result.summary.content == MARKER + "\n" + body


def test_a_summary_of_nothing_but_white_space_is_empty() -> None:
    cfg = ContextConfig(max_context_tokens=40, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = prune(build("U20 A20 U5"), cfg, summarize=lambda messages, prior: "\u3000\u2029\x85\xa0 \n")
    assert result.summary is None
    assert isinstance(result.summary_error, ValueError)
    assert "empty summary" in str(result.summary_error)


def test_the_earlier_summary_is_the_first_pinned_message_starting_with_the_marker() -> None:
    # orion-core's plan_summary: position(|m| m.pinned && m.content.starts_with(SUMMARY_MARKER)),
    # any role, no newline needed; only the first is removed and its trimmed text passed on
    earlier = Message.assistant("msg-2", MARKER + " earlier  \n", timestamp=T0).pin().with_token_count(3)
    second = Message.user("msg-5", SUMMARY_PREFIX + "second", timestamp=T0).pin().with_token_count(3)
    u1, _, u3, a4, _, u6 = build("U5 A0 U20 A20 U0 U5")
    messages = [u1, earlier, u3, a4, second, u6]
    assert [is_summary(m) for m in messages] == [False, True, False, False, True, False]
    assert not is_summary(second.model_copy(update={"pinned": False}))
    # t0 [0:2] 5+3 pinned; t1 [2:4] 20+20; t2 [4:5] 3 pinned; latest [5:6] 5
    # available 30: latest 5 -> 25; t0 8 -> 17; t2 3 -> 14; t1 40 > 14: dropped
    # remove = dropped [2, 3] + prior 1; the summary goes in at index 1
    # the summary "gist": 33 + 1 + 4 = 38 chars -> 9; tokens 5 + 8 - 3 + 9 + 3 = 22 <= 30
    seen: list[tuple[list[str], str | None]] = []
    cfg = ContextConfig(max_context_tokens=30, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = prune(messages, cfg, summarize=summarizing("gist", seen))
    assert seen == [(["msg-2", "msg-3", "msg-4"], "earlier")]
    assert [m.id for m in result.messages] == ["msg-1", "msg-7", "msg-5", "msg-6"]
    assert [m.id for m in result.dropped] == ["msg-2", "msg-3", "msg-4"]
    assert result.tokens == 22
    conversation = Conversation(messages)
    conversation.prune(cfg, summarize=lambda messages, prior: "gist")
    assert [m.id for m in conversation] == ["msg-1", "msg-7", "msg-5", "msg-6"]


def test_an_empty_earlier_summary_is_removed_but_not_passed_on() -> None:
    # orion-core: the prior body, trimmed, is left out of the request when empty (`filter`)
    earlier = Message.user("msg-1", MARKER + " \n\t", timestamp=T0).pin().with_token_count(3)
    messages = [earlier, *build("U0 U20 A20 U5")[1:]]
    # [0:1] 3 pinned; t1 [1:3] 40; latest [3:4] 5; available 30: 5 -> 25; 3 -> 22; 40 > 22: dropped
    seen: list[tuple[list[str], str | None]] = []
    cfg = ContextConfig(max_context_tokens=30, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    result = prune(messages, cfg, summarize=summarizing("gist", seen))
    assert seen == [(["msg-1", "msg-2", "msg-3"], None)]
    assert [m.id for m in result.messages] == ["msg-5", "msg-4"]


def test_an_earlier_summary_in_the_latest_turn_is_folded_too() -> None:
    # t0 [0:2] 20+20; latest [2:4] user 5 + pinned assistant summary 3; available 30:
    # latest 8 -> 22; t0 40 > 22: dropped. remove = [0, 1] + prior 3; summary at index 0
    earlier = Message.assistant("msg-4", MARKER + "\nbefore", timestamp=T0).pin().with_token_count(3)
    messages = [*build("U20 A20 U5"), earlier]
    cfg = ContextConfig(max_context_tokens=30, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
    seen: list[tuple[list[str], str | None]] = []
    result = prune(messages, cfg, summarize=summarizing("gist", seen))
    assert seen == [(["msg-1", "msg-2", "msg-4"], "before")]
    assert [m.id for m in result.messages] == ["msg-5", "msg-3"]
    assert result.tokens == 9 + 5


def test_a_result_ties_only_the_call_it_answers_when_an_id_repeats() -> None:
    # call_0 in every turn (vLLM, llama.cpp): each result answers the latest call with its id
    # before it. t0 [0:2] 1+1 calls k; t1 [2:4] 1+1 answers it (tied: {t0,t1} 4);
    # t2 [4:7] 1+1+1 calls k again and answers it in its own turn; latest [7:8] 5
    messages = build("U1 C1:k U1 R1:k U1 C1:k R1:k U5")
    # available 11: latest 5 -> 6; t2 3 -> 3; {t0,t1} 4 > 3: both dropped. (Every call tied to
    # every result with its id made {t0,t1,t2} one unit of 7 and dropped all three.)
    plan = plan_prune(messages, config(11))
    assert plan.kept == ranges((4, 7), (7, 8))
    assert plan.dropped == ranges((0, 2), (2, 4))
    # available 12: latest 5 -> 7; t2 3 -> 4; {t0,t1} 4 <= 4: all kept
    assert plan_prune(messages, config(12)).dropped == []
    # each turn answering its own call plans alone, as orion-core: t0 3, t1 2, latest 5
    # available 9: latest 5 -> 4; t1 2 -> 2; t0 3 > 2: dropped
    alone = plan_prune(build("U1 C1:k R1:k U1 C1:k U5"), config(9))
    assert (alone.kept, alone.dropped) == (ranges((3, 5), (5, 6)), ranges((0, 3)))


def test_arguments_past_64_bits_are_counted() -> None:
    # '{"n":' 5 + 31 digits + '}' 1 = 37 chars (orjson refuses the int, json writes it) + "f" 1 = 38 -> 9
    message = Message.assistant("m", "", [ToolCall(id="c", name="f", arguments={"n": 10**30})])
    assert estimate_tokens(message) == 9
    # built without validation, an int past str()'s digit limit: 5 + 5001 + 1 + 1 = 5008 chars -> 1252
    unchecked = ToolCall.model_construct(id="c", name="f", arguments={"n": 10**5000})
    assert estimate_tokens(Message.assistant("m", "", [unchecked])) == 1252


def test_a_repeated_call_id_appended_later_is_tied_as_in_a_fresh_plan() -> None:
    # as above, but the later turns arrive after a first plan: the conversation ties them as a
    # fresh plan does (t0 and t1 together, t2 alone)
    messages = build("U1 C1:k U1 R1:k U1 C1:k R1:k U5")
    conversation = Conversation(messages[:4])
    assert conversation.plan_prune(config(9)).kept == ranges((0, 2), (2, 4))
    conversation.extend(messages[4:])
    plan = conversation.plan_prune(config(11))
    assert plan.kept == ranges((4, 7), (7, 8))
    assert plan.dropped == ranges((0, 2), (2, 4))


def test_messages_must_be_a_list_the_plan_can_index() -> None:
    with pytest.raises(TypeError, match=r"plan_prune takes a list of messages .*, got a list_iterator"):
        plan_prune(iter(build("U1 A1")), config(100))  # type: ignore[arg-type]
    assert plan_prune(tuple(build("U1 A1")), config(100)).kept == [range(0, 2)]


def _counted_turns(turns: int) -> list[Message]:
    """A system message, then ``turns`` turns of a user message and a reply, 10 tokens each."""
    messages = [Message.system("s", "Be brief.", timestamp=1).with_token_count(10)]
    for n in range(turns):
        messages.append(Message.user(f"u{n}", "question", timestamp=1).with_token_count(10))
        messages.append(Message.assistant(f"a{n}", "answer", timestamp=1).with_token_count(10))
    return messages


def test_the_reprs_of_a_long_prune_count_turns_and_messages_instead_of_listing_them() -> None:
    # 90 tokens of room: the system message (10) and the last 4 turns of 20 tokens are kept,
    # 16 turns (32 messages) dropped. A notebook printed every message (900 kB for 2,000).
    result = prune(_counted_turns(20), ContextConfig(max_context_tokens=100, max_response_tokens=10))
    assert repr(result) == (
        "PruneResult(messages=<list of 9>, dropped=<list of 32>, history=<list of 9>, tokens=90, "
        "plan=PrunePlan("
        "preamble=range(0, 1), kept=[range(33, 35), range(35, 37), range(37, 39), range(39, 41)], "
        "dropped=<16 turns, 32 messages>, preamble_tokens=10, kept_tokens=90, dropped_tokens=320, "
        "budget=90, fixed_tokens=10, preamble_kept=True))"
    )
    short = plan_prune(_counted_turns(2), ContextConfig(max_context_tokens=100, max_response_tokens=10))
    assert "kept=[range(1, 3), range(3, 5)], dropped=[]," in repr(short)  # a few turns are listed


def test_a_prune_result_built_by_hand_without_history_keeps_its_messages() -> None:
    # docs/pruning.md: without a template what is sent is what is kept; a result a host builds
    # itself (a test double, say) need not say history.
    messages = _counted_turns(1)
    plan = plan_prune(messages)
    built = PruneResult(messages, [], plan, plan.kept_tokens)
    assert built.history == messages
    assert built.history is not messages
    assert PruneResult(messages, [], plan, 0, history=messages[1:]).history == messages[1:]


def test_the_repr_of_a_long_turn_layout_counts_its_turns() -> None:
    assert (
        repr(split_turns(_counted_turns(20)))
        == "TurnLayout(preamble=range(0, 1), turns=<20 turns, 40 messages>)"
    )
    assert (
        repr(split_turns(_counted_turns(2)))
        == "TurnLayout(preamble=range(0, 1), turns=[range(1, 3), range(3, 5)])"
    )


_TOP = 2**64 - 1
"""The largest counter orion-core's u64 reads: ``msg-(2**64)`` and past it are no counters."""


@pytest.mark.parametrize(
    ("latest", "expected"),
    [
        ([Message.user(f"msg-{_TOP + 1}", "new question", timestamp=3)], f"msg-{_TOP + 2}"),
        (
            [
                Message.user(f"msg-{_TOP + 1}", "new question", timestamp=3),
                Message.assistant(f"msg-{_TOP + 2}", "new answer", timestamp=4),
            ],
            f"msg-{_TOP + 3}",
        ),
    ],
    ids=["one-taken", "two-taken"],
)
def test_the_default_summary_id_is_fresh_past_the_u64_counter(latest: list[Message], expected: str) -> None:
    # "The highest counter plus one" can be an id the kept turn already has; the summary must
    # take the next free one, past every taken id in a row.
    messages = [
        Message.user(f"msg-{_TOP}", "old question " * 40, timestamp=1),
        Message.assistant("msg-a", "old answer " * 40, timestamp=2),
        *latest,
    ]
    config = ContextConfig(max_context_tokens=200, max_response_tokens=100, strategy=PruneStrategy.SUMMARIZE)
    for result in (
        prune(messages, config, summarize=lambda folded, prior: "short"),
        Conversation(messages).prune(config, summarize=lambda folded, prior: "short"),
    ):
        assert result.summary is not None
        assert result.summary.id == expected


def test_fresh_ids_skip_every_taken_id_past_the_u64_counter() -> None:
    from orion_messages.ids import FreshIds

    assert FreshIds([f"msg-{_TOP}", f"msg-{_TOP + 1}", f"msg-{_TOP + 2}"]).next() == f"msg-{_TOP + 3}"


def test_a_turn_layout_of_six_turns_is_listed_and_of_seven_counted() -> None:
    # As repr(PrunePlan): six turns or fewer are listed, more are counted.
    six = TurnLayout(preamble=range(0), turns=[range(k, k + 1) for k in range(6)])
    assert repr(six) == (
        "TurnLayout(preamble=range(0, 0), turns=[range(0, 1), range(1, 2), range(2, 3), "
        "range(3, 4), range(4, 5), range(5, 6)])"
    )
    seven = TurnLayout(preamble=range(0), turns=[range(k, k + 1) for k in range(7)])
    assert repr(seven) == "TurnLayout(preamble=range(0, 0), turns=<7 turns, 7 messages>)"
