"""Counting, ids and pruning refuse arguments of the wrong kind with the library's own errors,
naming the function and the argument, instead of failing deep inside (a bare TypeError,
AttributeError or KeyError) or returning a wrong answer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    ContextConfig,
    ContextOverflowError,
    Conversation,
    Message,
    PruneStrategy,
    TokenCounter,
    callable_counter,
    estimate_tokens,
    is_summary,
    message_number,
    plan_prune,
    prune,
    tokenizer_counter,
    tool_call_id,
)
from orion_messages.store import open_store
from orion_messages.text_counters import count_words, estimate_text_tokens

USER = Message.user("msg-1", "hello there")
REPLY = Message.assistant("msg-2", "general kenobi")

# Four turns of 20 tokens each (token_count set), for a window of 55 tokens: the latest two turns
# are kept (40), the oldest two dropped, and a summary (11 tokens, estimated) fits the room left.
LONG = [
    message.with_token_count(tokens)
    for number in range(1, 8, 2)
    for message, tokens in (
        (Message.user(f"msg-{number}", "x"), 20),
        (Message.assistant(f"msg-{number + 1}", "y"), 0),
    )
]
SUMMARIZE = ContextConfig(max_context_tokens=55, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)
ROOMY = ContextConfig(max_context_tokens=1000, max_response_tokens=0, strategy=PruneStrategy.SUMMARIZE)


def _summarize(messages: list[Message], prior: str | None) -> str:
    return "what was said"


# --- ids ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message_id", "found"),
    [(None, "a NoneType"), (5, "an int"), (b"msg-1", "a bytes"), (USER, "a Message")],
)
def test_message_number_refuses_a_non_str(message_id: Any, found: str) -> None:
    # Before: re's bare TypeError ("expected string or bytes-like object").
    with pytest.raises(ArgumentTypeError, match=f"^message_number: message_id must be a str, got {found}$"):
        message_number(message_id)


@pytest.mark.parametrize(
    ("message_id", "found"), [(None, "a NoneType"), (b"x", "a bytes"), (5, "an int"), (USER, "a Message")]
)
def test_tool_call_id_refuses_a_message_id_that_is_no_str(message_id: Any, found: str) -> None:
    # Before: tool_call_id(None, 1) returned "None-call-1".
    with pytest.raises(ArgumentTypeError, match=f"^tool_call_id: message_id must be a str, got {found}$"):
        tool_call_id(message_id, 1)


@pytest.mark.parametrize(
    ("k", "found"), [(None, "a NoneType"), ("x", "a str"), (1.0, "a float"), (True, "a bool")]
)
def test_tool_call_id_says_a_k_of_the_wrong_type_is_a_type_error(k: Any, found: str) -> None:
    # Before: an ArgumentValueError, which is no TypeError.
    with pytest.raises(ArgumentTypeError, match=f"^tool_call_id: k must be an int, got {found}$"):
        tool_call_id("msg-2", k)


@pytest.mark.parametrize("k", [0, -1])
def test_tool_call_id_still_says_k_counts_from_1(k: int) -> None:
    with pytest.raises(
        ArgumentValueError, match=rf"^tool_call_id: k counts a message's tool calls from 1, got {k}$"
    ):
        tool_call_id("msg-2", k)


# --- estimates and text counters -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "found"), [(None, "a NoneType"), ("x", "a str"), ({"pinned": True}, "a dict")]
)
def test_is_summary_refuses_what_is_no_message(message: Any, found: str) -> None:
    # Before: AttributeError: 'NoneType' object has no attribute 'pinned'.
    with pytest.raises(ArgumentTypeError, match=f"^is_summary: expected a Message, got {found}$"):
        is_summary(message)


@pytest.mark.parametrize(
    ("value", "found"),
    [(None, "a NoneType"), (b"abcd", "a bytes"), (5, "an int"), ({"content": "abcd"}, "a dict")],
)
def test_estimate_tokens_refuses_what_is_neither_message_nor_str(value: Any, found: str) -> None:
    # Before: AttributeError: 'bytes' object has no attribute 'content'.
    with pytest.raises(
        ArgumentTypeError, match=f"^estimate_tokens: expected a Message or a str, got {found}$"
    ):
        estimate_tokens(value)


TEXT_COUNTERS: list[tuple[str, Callable[[str], int]]] = [
    ("count_words", count_words),
    ("estimate_text_tokens", estimate_text_tokens),
]
NOT_TEXT = [
    (None, "a NoneType"),
    (5, "an int"),
    (b"a b", "a bytes"),
    (["a"], "a list"),
    ({"a": 1}, "a dict"),
    (USER, "a Message"),
]


@pytest.mark.parametrize(("name", "counter"), TEXT_COUNTERS)
@pytest.mark.parametrize(("value", "found"), NOT_TEXT)
def test_the_text_counters_refuse_what_is_no_str(
    name: str, counter: Callable[[Any], int], value: Any, found: str
) -> None:
    # Before: bare TypeErrors and AttributeErrors, and estimate_text_tokens(b"abcd") returned 1.
    with pytest.raises(ArgumentTypeError, match=f"^{name}: text must be a str, got {found}$"):
        counter(value)


# --- TokenCounter -----------------------------------------------------------------------------------


@pytest.mark.parametrize("use_token_count", [False, True])
@pytest.mark.parametrize(
    ("messages", "found"),
    [(None, "a NoneType"), ({0: USER}, "a dict"), (USER, "a Message"), ("ab", "a str")],
)
def test_token_counter_counts_refuses_what_is_no_list(
    messages: Any, found: str, use_token_count: bool
) -> None:
    # Before: "'NoneType' object is not iterable", KeyError: 0, "cannot create weak reference".
    counter = TokenCounter(estimate_tokens, use_token_count=use_token_count)
    with pytest.raises(
        ArgumentTypeError, match=f"^TokenCounter.counts takes a list of messages, got {found}$"
    ):
        counter.counts(messages)


@pytest.mark.parametrize("use_token_count", [False, True])
@pytest.mark.parametrize(
    ("count", "item", "found"),
    [
        (estimate_tokens, "text", "a str"),  # the counter fails on it
        (lambda message: 1, "text", "a str"),  # the counter takes it; the cache cannot
        (estimate_tokens, None, "a NoneType"),
        (estimate_tokens, {"token_count": 3}, "a dict"),
    ],
)
def test_token_counter_counts_names_the_item_that_is_no_message(
    count: Callable[[Message], int], item: Any, found: str, use_token_count: bool
) -> None:
    counter = TokenCounter(count, use_token_count=use_token_count)
    with pytest.raises(
        ArgumentTypeError, match=rf"^TokenCounter.counts: \[1\]: expected a Message, found {found}$"
    ):
        counter.counts([USER, item])
    with pytest.raises(
        ArgumentTypeError, match=rf"^TokenCounter.counts: \[8\]: expected a Message, found {found}$"
    ):
        counter.counts([USER, item], offset=7)  # the offset is added to the index named


def test_a_failed_count_leaves_nothing_behind_in_the_cache() -> None:
    # Before: the str's count stayed, keyed by its id, which a later message may take.
    counter = TokenCounter(lambda message: 1)
    with pytest.raises(ArgumentTypeError, match=r"\[1\]: expected a Message, found a str"):
        counter.counts([USER, "text"])  # type: ignore[list-item]
    assert len(counter) == 1


@pytest.mark.parametrize(
    ("offset", "found"), [(None, "a NoneType"), ("1", "a str"), (1.0, "a float"), (True, "a bool")]
)
def test_token_counter_counts_refuses_an_offset_that_is_no_int(offset: Any, found: str) -> None:
    with pytest.raises(ArgumentTypeError, match=f"^TokenCounter.counts: offset must be an int, got {found}$"):
        TokenCounter(estimate_tokens).counts([USER], offset=offset)


@pytest.mark.parametrize(("message", "found"), [("text", "a str"), (None, "a NoneType"), ([USER], "a list")])
def test_a_token_counter_called_on_what_is_no_message_says_so(message: Any, found: str) -> None:
    with pytest.raises(ArgumentTypeError, match=f"^TokenCounter: expected a Message, got {found}$"):
        TokenCounter(estimate_tokens)(message)


def test_token_counter_still_counts_and_remembers() -> None:
    counter = TokenCounter(estimate_tokens)
    assert counter.counts([USER, REPLY]) == [2, 3]  # 11 // 4, 14 // 4
    assert counter(USER) == 2
    assert counter.counts((USER,), 4) == [2]  # a tuple is a list of messages too
    assert len(counter) == 2


def test_a_message_counter_s_own_bug_reaches_the_caller_as_it_raised_it() -> None:
    # A counter of messages with a bug of its own: not the library's ArgumentTypeError, whose
    # hint (a text counter given a Message) would blame how the counter was passed.
    def broken(message: Message) -> int:
        return len(message.contnet)  # type: ignore[attr-defined]

    with pytest.raises(AttributeError, match="contnet"):
        TokenCounter(broken).counts([USER])
    with pytest.raises(AttributeError, match="contnet"):
        plan_prune([USER], count=broken)


def test_a_text_counter_given_as_a_message_counter_is_named_with_its_cause() -> None:
    def words(text):  # type: ignore[no-untyped-def]  # unannotated: only calling it tells
        return len(text.split())

    with pytest.raises(ArgumentTypeError, match=r"raised AttributeError on message \[0\]") as caught:
        TokenCounter(words).counts([USER])
    assert isinstance(caught.value.__cause__, AttributeError)
    # plan_prune kept the message but dropped the cause before.
    with pytest.raises(ArgumentTypeError, match=r"raised AttributeError on message \[0\]") as caught:
        plan_prune([USER], count=words)
    assert isinstance(caught.value.__cause__, AttributeError)


@pytest.mark.parametrize(
    ("returned", "shown"),
    [
        (None, r"a NoneType \(None\)"),
        ("3", r"a str \('3'\)"),
        (2.5, r"a float \(2\.5\)"),
        (True, r"a bool \(True\)"),
    ],
)
def test_a_message_counter_returning_no_int_is_a_type_error(returned: object, shown: str) -> None:
    # Before: an ArgumentValueError, while callable_counter said ArgumentTypeError for the same.
    expected = (
        rf'^the message counter test_a_message_counter_returning_no_int_is_a_type_error\.<locals>\.count returned {shown} for message \[1\] \(id "msg-2"\); '
        r"expected an int from 0 to 18446744073709551615$"
    )

    def count(message: Message) -> Any:
        return returned if message.id == "msg-2" else 1

    with pytest.raises(ArgumentTypeError, match=expected):
        plan_prune([USER, REPLY], count=count)
    with pytest.raises(ArgumentTypeError, match=expected):
        TokenCounter(count).counts([USER, REPLY])


def test_a_message_counter_returning_a_negative_count_is_still_a_value_error() -> None:
    with pytest.raises(
        ArgumentValueError,
        match=r"^the message counter test_a_message_counter_returning_a_negative_count_is_still_a_value_error"
        r"\.<locals>\.<lambda> returned -1 for message \[0\]",
    ):
        TokenCounter(lambda message: -1).counts([USER])


def test_a_text_counter_returning_no_int_mid_plan_is_a_type_error() -> None:
    answers = iter([1])  # an int for callable_counter's probe, then a float

    def counter(text: str) -> Any:
        return next(answers, 2.5)

    with pytest.raises(
        ArgumentTypeError,
        match=r"^the text counter test_a_text_counter_returning_no_int_mid_plan_is_a_type_error\.<locals>"
        r"\.counter returned a float \(2\.5\) for the system block; expected",
    ):
        plan_prune([USER], template="chatml", counter=counter)


def test_a_text_counter_s_own_bug_reaches_the_caller_as_it_raised_it() -> None:
    # It counts callable_counter's sample text, then fails on a character of its own choosing:
    # a bug of its own, which the library's error blamed on how it was passed ("goes in count=").
    def buggy(text: str) -> Any:
        return len(text) + (None if "Ω" in text else 0)  # type: ignore[operator]

    for system_prompt in ("Ω", ""):  # fails on the system block, or on message [0]
        with pytest.raises(TypeError) as caught:
            plan_prune(
                [Message.user("msg-1", "Ω")], template="chatml", counter=buggy, system_prompt=system_prompt
            )
        assert type(caught.value) is TypeError
        assert str(caught.value) == "unsupported operand type(s) for +: 'int' and 'NoneType'"


def test_a_message_counter_given_as_counter_is_still_named_where_it_fails() -> None:
    # It counts short text (the sample text too) and messages, and raises TypeError on longer
    # text: it counts messages, so the hint that it goes in count= is true.
    def either(value: Any) -> int:
        if isinstance(value, Message):
            return 1
        if len(value) < 50:
            return 1
        raise TypeError("expected a Message")

    with pytest.raises(ArgumentTypeError) as caught:
        plan_prune([Message.user("msg-1", "x" * 60)], template="chatml", counter=either)
    assert str(caught.value) == (
        "the text counter test_a_message_counter_given_as_counter_is_still_named_where_it_fails.<locals>.either "
        "raised TypeError on message [0]. counter= takes a str -> int; a Message -> int counter goes in "
        "count= (without a template)"
    )
    assert isinstance(caught.value.__cause__, TypeError)


def test_a_text_counter_returning_no_int_names_the_message() -> None:
    answers = iter([1, 1, 1])  # callable_counter's sample text, the system block, the prefix

    def counter(text: str) -> Any:
        return next(answers, None)

    # Before: "a text counter must return an int, <function ... at 0x...> returned None" at the
    # check, and the message's index without its id mid-plan.
    with pytest.raises(ArgumentTypeError) as caught:
        plan_prune([USER], template="chatml", counter=counter)
    assert str(caught.value) == (
        "the text counter test_a_text_counter_returning_no_int_names_the_message.<locals>.counter returned "
        'a NoneType (None) for message [0] (id "msg-1"); expected an int from 0 to 18446744073709551615'
    )


_U64_MAX = 18446744073709551615  # 2**64 - 1, written out: orion-core's counters return a usize
_HUGE = 10**5000  # more digits than Python writes as text (4300)


@pytest.mark.parametrize(
    ("returned", "shown"),
    [
        (_U64_MAX + 1, "18446744073709551616"),
        (_HUGE, "an int of 5001 digits"),
        (-_HUGE, "a negative int of 5001 digits"),
    ],
    ids=["2**64", "10**5000", "-10**5000"],  # pytest would write the ints out
)
def test_a_count_past_64_bits_is_refused_before_it_is_written(returned: int, shown: str) -> None:
    # Before: 2**64 was taken as a count, and 10**5000 escaped as Python's bare ValueError
    # (int-to-str limit) while its error message was written.
    expected = f"{shown} for %s; expected an int from 0 to 18446744073709551615"
    message_counter = lambda message: returned  # noqa: E731
    text_counter = lambda text: returned  # noqa: E731
    answers = iter([1])

    def later(text: str) -> int:  # an int for callable_counter's sample text, then ``returned``
        return next(answers, returned)

    name = "test_a_count_past_64_bits_is_refused_before_it_is_written.<locals>"
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: plan_prune([USER], count=message_counter), f"message counter {name}.<lambda>"),
        (lambda: TokenCounter(message_counter)(USER), f"message counter {name}.<lambda>"),
        (lambda: callable_counter(text_counter), f"text counter {name}.<lambda>"),
        (
            lambda: plan_prune([USER], template="chatml", counter=text_counter),
            f"text counter {name}.<lambda>",
        ),
        (lambda: plan_prune([USER], template="chatml", counter=later), f"text counter {name}.later"),
    ]
    places = ['message [0] (id "msg-1")'] * 2 + ["a sample text"] * 2 + ["the system block"]
    for (call, counter), place in zip(calls, places, strict=True):
        with pytest.raises(ArgumentValueError) as caught:
            call()
        assert str(caught.value) == f"the {counter} returned " + expected % place


def test_the_largest_count_is_taken_and_written_in_full() -> None:
    # Two messages of 2**64 - 1 in the latest turn: 2**65 - 2 tokens, a number orion-core could
    # not reach but which is written in full in its refusal.
    assert TokenCounter(lambda message: _U64_MAX)(USER) == _U64_MAX
    with pytest.raises(ContextOverflowError) as caught:
        plan_prune(
            [USER, REPLY],
            ContextConfig(max_context_tokens=_U64_MAX, max_response_tokens=0),
            count=lambda m: _U64_MAX,
        )
    assert str(caught.value) == (
        "Latest message (36893488147419103230 tokens) plus system prompt (0 tokens) exceeds context budget "
        "(18446744073709551615 tokens). Clear the conversation or increase context size."
    )


def test_a_context_window_too_long_to_write_is_written_by_its_digits() -> None:
    # A ContextConfig holds any int (the command line reads up to 4300 digits); before, its
    # errors and refusals failed to write 10**5000 (Python's bare ValueError).
    with pytest.raises(ArgumentValueError) as caught:
        ContextConfig(max_context_tokens=-_HUGE)
    assert str(caught.value) == (
        "ContextConfig.max_context_tokens must be a non-negative int, got a negative int of 5001 digits"
    )
    config = ContextConfig(max_context_tokens=_HUGE, max_response_tokens=0, reserved_tokens=_HUGE)
    with pytest.raises(ContextOverflowError) as refused:
        plan_prune([USER], config)
    assert str(refused.value) == (
        "System prompt and tools (an int of 5001 digits tokens) exceed available context budget "
        "(an int of 5001 digits tokens)"
    )
    assert refused.value.tokens == refused.value.available == _HUGE  # the attributes keep the numbers


def test_the_counters_bool_flags_name_their_function() -> None:
    # Before: "use_token_count must be a bool, ...", naming no function.
    with pytest.raises(ArgumentTypeError) as caught:
        TokenCounter(estimate_tokens, use_token_count=1)  # type: ignore[arg-type]
    assert str(caught.value) == "TokenCounter: use_token_count must be a bool, got int 1"
    with pytest.raises(ArgumentTypeError) as caught:
        tokenizer_counter(count_words, use_token_count="no")  # type: ignore[arg-type]
    assert str(caught.value) == "tokenizer_counter: use_token_count must be a bool, got str 'no'"


def test_a_counter_that_is_not_callable_is_named_by_its_argument() -> None:
    with pytest.raises(
        ArgumentTypeError,
        match=r"^TokenCounter: count: expected a message counter \(Message -> int\), got an int$",
    ):
        TokenCounter(5)  # type: ignore[arg-type]
    with open_store("sqlite://") as store:
        store.create("c1")
        # Before: "TokenCounter: expected a message counter ...", naming an internal class.
        with pytest.raises(
            ArgumentTypeError,
            match=r"^count_tokens: count: expected a message counter \(Message -> int\), got an int$",
        ):
            store.count_tokens("c1", count=5)  # type: ignore[arg-type]


# --- PrunePlan --------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["kept_messages", "dropped_messages"])
@pytest.mark.parametrize(
    ("messages", "found"), [(None, "a NoneType"), ({0: USER}, "a dict"), ("abc", "a str")]
)
def test_a_plan_applied_to_what_is_no_list_says_so(method: str, messages: Any, found: str) -> None:
    plan = plan_prune(LONG, SUMMARIZE)
    with pytest.raises(
        ArgumentTypeError,
        match=rf"^PrunePlan.{method} takes a list of messages \(the plan's ranges index into it\), got {found}$",
    ):
        getattr(plan, method)(messages)


@pytest.mark.parametrize("method", ["kept_messages", "dropped_messages"])
@pytest.mark.parametrize("length", [0, 5, 9])
def test_a_plan_applied_to_a_list_of_another_length_says_both_lengths(method: str, length: int) -> None:
    # Before: a wrong subset of the list, silently.
    plan = plan_prune(LONG, SUMMARIZE)
    other = [*LONG, USER][:length]
    with pytest.raises(
        ArgumentValueError,
        match=rf"^PrunePlan.{method}: the plan was made for a list of 8 messages, got {length}$",
    ):
        getattr(plan, method)(other)


def test_a_plan_takes_the_list_it_was_made_for_preamble_and_all() -> None:
    system = Message.system("msg-0", "be brief")
    messages = [system, *LONG]
    templated = plan_prune(messages, ROOMY, template="chatml")
    assert not templated.preamble_kept
    assert len(templated.kept_messages(messages)) + len(templated.dropped_messages(messages)) == 8
    conversation = Conversation(messages)
    plan = conversation.plan_prune(ContextConfig(max_context_tokens=55, max_response_tokens=0))
    assert [message.id for message in plan.kept_messages(conversation)] == [
        "msg-0",
        "msg-5",
        "msg-6",
        "msg-7",
        "msg-8",
    ]
    assert [message.id for message in plan.dropped_messages(conversation)] == [
        "msg-1",
        "msg-2",
        "msg-3",
        "msg-4",
    ]


# --- prune's summarize and new_id -----------------------------------------------------------------


@pytest.mark.parametrize("config", [SUMMARIZE, ROOMY])  # refused up front, even with nothing to fold
@pytest.mark.parametrize(("summarize", "found"), [(5, "an int"), ("x", "a str")])
def test_prune_refuses_a_summarize_that_is_not_callable(
    config: ContextConfig, summarize: Any, found: str
) -> None:
    # Before: a PruneResult whose summary_error was "'int' object is not callable".
    expected = (
        rf"^prune: summarize must be a callable \(messages_to_fold, prior_summary\) -> str, got {found}$"
    )
    with pytest.raises(ArgumentTypeError, match=expected):
        prune(LONG, config, summarize=summarize)
    with pytest.raises(ArgumentTypeError, match=expected):
        Conversation(LONG).prune(config, summarize=summarize)


@pytest.mark.parametrize("config", [SUMMARIZE, ROOMY])
def test_prune_refuses_a_new_id_that_is_not_callable(config: ContextConfig) -> None:
    # Before: "'int' object is not callable", and only once a summary was made.
    with pytest.raises(
        ArgumentTypeError, match=r"^prune: new_id must be a callable \(\) -> str, got an int$"
    ):
        prune(LONG, config, summarize=_summarize, new_id=5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("made", "found"), [(5, "an int"), (None, "a NoneType"), (b"msg-9", "a bytes")])
def test_prune_names_new_id_when_it_returns_no_str(made: object, found: str) -> None:
    # Before: pydantic's ValidationError "1 validation error for Message / id".
    def new_id() -> Any:
        return made

    with pytest.raises(ArgumentTypeError, match=rf"^prune: new_id\(\) must return a str, returned {found}$"):
        prune(LONG, SUMMARIZE, summarize=_summarize, new_id=new_id)


def test_prune_still_summarizes_with_good_arguments() -> None:
    ids: Iterator[str] = iter(["summary-1"])
    result = prune(LONG, SUMMARIZE, summarize=_summarize, new_id=lambda: next(ids))
    assert result.summary is not None
    assert result.summary.id == "summary-1"
    assert result.summary_error is None


def test_a_message_counter_that_gives_text_no_count_keeps_its_own_error() -> None:
    # "Counts the message's text" means returns an int for it: this one returns "h" for "hello".
    def first_block(message):  # type: ignore[no-untyped-def]
        return message[0]  # the bug: a Message is not subscriptable

    with pytest.raises(TypeError) as caught:
        TokenCounter(first_block).counts([USER])
    assert type(caught.value) is TypeError  # not the library's ArgumentTypeError and its hint
