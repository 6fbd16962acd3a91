"""Properties of turn-aware pruning, checked with hypothesis against generated conversations.

Two kinds of conversation are generated: agent-like ones (a user message first, every result
right after its call, as orion-core's agent writes them) and wild ones (a preamble, results in
other turns than their calls or before them, results with no call, repeated call ids). For agent-like
conversations without pending results the plan must be exactly the one a straightforward
transcription of the reference page's algorithm gives (``orion_core_plan`` below).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import example, given
from hypothesis import strategies as st

from orion_messages import TEMPLATES, Conversation, Message, Role, ToolCall
from orion_messages._layout import _Layout, _read_columns
from orion_messages.planning import _counting, _plan, _PlanCache, _units
from orion_messages.pruning import (
    ContextConfig,
    ContextOverflowError,
    PrunePlan,
    PruneStrategy,
    is_summary,
    plan_prune,
    prune,
)
from orion_messages.text_counters import count_words

T0 = 1781512345678


@st.composite
def conversations(draw: st.DrawFn, *, wild: bool, pending: bool = True) -> list[Message]:
    """A conversation of up to about 40 messages; see the module docstring for the two kinds."""
    calls = 0
    body: list[Message] = []

    def one_in(n: int) -> bool:  # hypothesis favours small draws: make the rare event the largest
        return draw(st.integers(0, n - 1)) == n - 1

    def finish(message: Message) -> Message:
        if one_in(8):
            message = message.pin()
        if draw(st.booleans()):
            message = message.with_token_count(draw(st.integers(0, 15)))
        return message

    def text() -> str:
        return draw(st.text(alphabet="abc xyz", max_size=30))

    def assistant_calling() -> tuple[Message, list[Message]]:
        nonlocal calls
        tool_calls = []
        results = []
        for _ in range(draw(st.integers(1, 2))):
            calls += 1
            call_id = f"c{calls}"
            if wild and calls > 1 and one_in(8):  # a repeated call id
                call_id = f"c{draw(st.integers(1, calls - 1))}"
            arguments = {"q": text()} if draw(st.booleans()) else [calls]
            tool_calls.append(
                ToolCall(id=call_id, name=draw(st.sampled_from(["f", "lookup"])), arguments=arguments)
            )
            if not wild or not one_in(6):  # wild: some calls never get a result
                waiting = pending and one_in(5)
                result = Message.pending_result if waiting else Message.tool_result_message
                results.append(finish(result("", call_id, "f", text(), timestamp=T0)))
        return finish(Message.assistant("", text(), tool_calls, timestamp=T0)), results

    if wild:
        for _ in range(draw(st.integers(0, 2))):
            if draw(st.booleans()):
                body.append(finish(Message.system("", text(), timestamp=T0)))
            else:
                call, results = assistant_calling()
                body.extend([call, *results])
    stray: list[Message] = []
    for _ in range(draw(st.integers(1, 8))):
        body.append(finish(Message.user("", text(), timestamp=T0)))
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.booleans()):
                body.append(finish(Message.assistant("", text(), timestamp=T0)))
                continue
            call, results = assistant_calling()
            body.append(call)
            if wild and results and draw(st.booleans()):
                stray.extend(results)  # placed anywhere below, often in another turn
            else:
                body.extend(results)
    for message in stray:
        body.insert(draw(st.integers(0, len(body))), message)
    if wild and one_in(6):  # a result whose call is nowhere
        body.insert(
            draw(st.integers(0, len(body))),
            Message.tool_result_message("", "nowhere", "f", "?", timestamp=T0),
        )
    return [
        message.model_copy(update={"id": f"msg-{number}"}) for number, message in enumerate(body, start=1)
    ]


@st.composite
def cases(draw: st.DrawFn, *, wild: bool, pending: bool = True) -> tuple[list[Message], ContextConfig]:
    """A conversation and a context window from none at all to a little more than it needs."""
    messages = draw(conversations(wild=wild, pending=pending))
    turns = naive_turns(messages)
    preamble_cost = sum(map(cost, messages[: turns[0][0] if turns else len(messages)]))
    rest = sum(map(cost, messages)) - preamble_cost
    reserved = draw(st.integers(0, 10))
    response = draw(st.integers(0, 50))
    if draw(st.integers(0, 9)) == 9:  # no room at all, or just enough for the overhead
        available = draw(st.integers(0, reserved + preamble_cost + 1))
    else:  # from room for one token to a little more than everything needs
        available = (
            reserved
            + preamble_cost
            + 1
            + rest * draw(st.sampled_from([50, 70, 85, 95, 30, 100, 10, 0, 110])) // 100
        )
    config = ContextConfig(
        max_context_tokens=available + response, max_response_tokens=response, reserved_tokens=reserved
    )
    return messages, config


def cost(message: Message) -> int:
    """The default count, written out from the README: token_count, else max(1, chars // 4)."""
    if message.token_count is not None:
        return message.token_count
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(json.dumps(call.arguments, separators=(",", ":")))
    return max(1, chars // 4)


def naive_turns(messages: list[Message]) -> list[list[int]]:
    """Turns as the reference page defines them, without the library's ``split_turns``."""
    turns: list[list[int]] = []
    for index, message in enumerate(messages):
        if message.role is Role.USER:
            turns.append([index])
        elif turns:
            turns[-1].append(index)
    return turns


@dataclass
class Refusal:
    """A refusal as the reference states it: which, the tokens and the available room in its text, the text."""

    reason: str
    tokens: int
    available: int
    text: str


# orion-core's texts (reference page, "Facts from the real serde": refusals)
TEXTS = {
    "overhead": "System prompt and tools ({tokens} tokens) exceed available context budget ({available} tokens)",
    "latest": "Latest message ({tokens} tokens) plus system prompt ({fixed} tokens) exceeds context budget "
    "({available} tokens). Clear the conversation or increase context size.",
    "pinned": "Pinned messages ({tokens} tokens) exceed the available context budget ({available} tokens). "
    "Unpin some messages or increase context size.",
}


def refusal(reason: str, tokens: int, available: int, fixed: int) -> Refusal:
    """The reference's refusal with its text filled in."""
    return Refusal(
        reason, tokens, available, TEXTS[reason].format(tokens=tokens, available=available, fixed=fixed)
    )


def orion_core_plan(
    messages: list[Message], config: ContextConfig, costs_of: Callable[[Message], int] | None = None
) -> tuple[list[range], list[range]] | Refusal:
    """The reference page's ``plan_prune``, step by step, for a conversation starting with a user message."""
    costs_of = cost if costs_of is None else costs_of
    available = max(0, config.max_context_tokens - config.max_response_tokens)
    fixed = config.reserved_tokens
    if fixed >= available:
        return refusal("overhead", fixed, available, fixed)
    budget = available - fixed
    turns = naive_turns(messages)
    if not turns:
        return [], []
    costs = [sum(costs_of(messages[i]) for i in turn) for turn in turns]
    pinned = [n for n, turn in enumerate(turns) if any(messages[i].pinned for i in turn)]
    latest = len(turns) - 1
    if costs[latest] > budget:
        return refusal("latest", costs[latest], available, fixed)
    budget -= costs[latest]
    keep = {latest}
    for number in pinned:
        if number == latest:
            continue
        if costs[number] > budget:  # the text sums every pinned turn, the latest included
            return refusal("pinned", sum(costs[n] for n in pinned), available, fixed)
        budget -= costs[number]
        keep.add(number)
    for number in range(latest - 1, -1, -1):
        if number in keep:
            continue
        if costs[number] > budget:
            break
        budget -= costs[number]
        keep.add(number)
    as_ranges = [range(turn[0], turn[-1] + 1) for turn in turns]
    return (
        [r for n, r in enumerate(as_ranges) if n in keep],
        [r for n, r in enumerate(as_ranges) if n not in keep],
    )


def as_refusal(error: ContextOverflowError) -> Refusal:
    """The library's refusal in the reference's terms."""
    return Refusal(error.reason, error.tokens, error.available, str(error))


def plan_or_refusal(messages: list[Message], config: ContextConfig) -> PrunePlan | Refusal:
    """The library's plan, or its refusal in the reference's terms."""
    try:
        return plan_prune(messages, config)
    except ContextOverflowError as error:
        return as_refusal(error)


@given(cases(wild=False, pending=False))
def test_agent_conversations_plan_exactly_as_orion_core(case: tuple[list[Message], ContextConfig]) -> None:
    messages, config = case
    expected = orion_core_plan(messages, config)
    got = plan_or_refusal(messages, config)
    if isinstance(expected, Refusal):
        assert got == expected
    else:
        assert isinstance(got, PrunePlan)
        assert (got.kept, got.dropped) == expected
        assert got.preamble == range(0)


def _reused_call_id_case() -> tuple[list[Message], ContextConfig]:
    """c2 answered before and after its first call, then sent again with no result: the last
    call is kept alone (found by hypothesis once the orphan check followed the pairing rule)."""

    def call(*ids: str) -> Message:
        return Message.assistant("", "", [ToolCall(id=i, name="f", arguments={}) for i in ids], timestamp=T0)

    def result(call_id: str) -> Message:
        return Message.tool_result_message("", call_id, "f", "", timestamp=T0)

    user = Message.user("", "", timestamp=T0)
    messages = [
        call("c1"),
        result("c1"),
        user,
        result("c2"),
        call("c2"),
        result("c2"),
        user,
        user,
        call("c2", "c4"),
        user,
    ]
    return messages, ContextConfig(max_context_tokens=9, max_response_tokens=0)


@example(_reused_call_id_case())
@given(cases(wild=True))
def test_plan_properties(case: tuple[list[Message], ContextConfig]) -> None:
    messages, config = case
    available = max(0, config.max_context_tokens - config.max_response_tokens)
    turns = naive_turns(messages)
    preamble = range(turns[0][0]) if turns else range(len(messages))
    preamble_cost = sum(cost(messages[i]) for i in preamble)
    outcome = plan_or_error(messages, config)
    if isinstance(outcome, ContextOverflowError):
        check_refusal(outcome, messages, config, preamble_cost)
        return
    plan = outcome

    # every index lies in exactly one of preamble, kept and dropped
    assert plan.preamble == preamble
    indexes = [*plan.preamble, *(i for r in plan.kept for i in r), *(i for r in plan.dropped for i in r)]
    assert sorted(indexes) == list(range(len(messages)))
    # each turn range starts at a user message and holds no other; they are the reference's turns
    assert sorted([*plan.kept, *plan.dropped], key=lambda r: r.start) == [
        range(t[0], t[-1] + 1) for t in turns
    ]
    assert plan.kept == sorted(plan.kept, key=lambda r: r.start)
    assert plan.dropped == sorted(plan.dropped, key=lambda r: r.start)
    for turn in [*plan.kept, *plan.dropped]:
        assert [messages[i].role is Role.USER for i in turn] == [True] + [False] * (len(turn) - 1)
    # the latest turn is kept
    if turns:
        assert plan.kept[-1] == range(turns[-1][0], len(messages))
    # no dropped turn holds a pinned message or a pending result
    dropped = [messages[i] for r in plan.dropped for i in r]
    assert not any(m.pinned or m.is_pending for m in dropped)
    # the kept cost fits the budget
    kept_indexes = [*plan.preamble, *(i for r in plan.kept for i in r)]
    assert plan.kept_tokens == sum(cost(messages[i]) for i in kept_indexes)
    assert plan.dropped_tokens == sum(map(cost, dropped))
    assert plan.budget == available - config.reserved_tokens
    assert plan.kept_tokens <= plan.budget
    # no orphaned call or result among the kept messages
    kept = [messages[i] for i in kept_indexes]
    assert orphans(kept, messages) == []
    # planning the kept messages again drops nothing
    again = plan_prune(kept, config)
    assert again.dropped == []
    assert again.kept_tokens == plan.kept_tokens


def plan_or_error(messages: list[Message], config: ContextConfig) -> PrunePlan | ContextOverflowError:
    """The library's plan, or the error it raised."""
    try:
        return plan_prune(messages, config)
    except ContextOverflowError as error:
        return error


def check_refusal(
    error: ContextOverflowError, messages: list[Message], config: ContextConfig, preamble_cost: int
) -> None:
    """A refusal is justified by the numbers, computed here independently where possible."""
    available = max(0, config.max_context_tokens - config.max_response_tokens)
    if error.reason == "overhead":
        assert error.tokens == config.reserved_tokens + preamble_cost >= available
        return
    assert error.turn is not None
    assert error.tokens > error.budget
    if error.reason == "latest":
        assert error.turn.stop == len(messages)
        assert error.tokens == sum(cost(messages[i]) for i in error.turn)
        assert error.budget == available - config.reserved_tokens - preamble_cost
    else:
        assert error.reason == "pinned"
        assert error.budget <= available - config.reserved_tokens - preamble_cost
        assert any(
            messages[i].pinned or messages[i].is_pending or messages[i].tool_result or messages[i].tool_calls
            for i in error.turn
        )


def answered_calls(messages: list[Message]) -> dict[int, int]:
    """Each result's index -> the index of the call it answers, straight from the rule of
    docs/pruning.md: the latest call with its id before it, else the first one after it."""
    answers: dict[int, int] = {}
    for at, message in enumerate(messages):
        if message.tool_result is None:
            continue
        call_id = message.tool_result.tool_call_id
        asking = [i for i, m in enumerate(messages) if call_id in {c.id for c in m.tool_calls}]
        before, after = [i for i in asking if i < at], [i for i in asking if i > at]
        if before or after:
            answers[at] = before[-1] if before else after[0]
    return answers


def orphans(kept: list[Message], everything: list[Message]) -> list[str]:
    """Calls kept without a result that answers them, and results kept without the call they
    answer (``answered_calls``); ``kept`` holds messages of ``everything`` in order (and maybe a
    summary), each found by identity after the one before (one object may sit twice)."""
    kept_at: set[int] = set()
    start = 0
    for message in kept:
        at = next((i for i in range(start, len(everything)) if everything[i] is message), None)
        if at is not None:  # else a summary, not among them
            kept_at.add(at)
            start = at + 1
    problems = []
    for result, call in answered_calls(everything).items():
        if result in kept_at and call not in kept_at:
            problems.append(f"result [{result}] kept without its call [{call}]")
        if call in kept_at and result not in kept_at:
            problems.append(f"call [{call}] kept without its result [{result}]")
    return problems


@given(cases(wild=True), st.data())
def test_conversation_replans_after_appends_as_from_scratch(
    case: tuple[list[Message], ContextConfig], data: st.DataObject
) -> None:
    messages, config = case
    split = data.draw(st.integers(0, len(messages)))
    conversation = Conversation(messages[:split])
    with contextlib.suppress(ContextOverflowError):
        conversation.plan_prune(config)
    for message in messages[split:]:
        conversation.append(message)
        if data.draw(st.booleans()):
            with contextlib.suppress(ContextOverflowError):
                conversation.plan_prune(config)
    fresh = plan_or_refusal(messages, config)
    try:
        incremental: PrunePlan | Refusal = conversation.plan_prune(config)
    except ContextOverflowError as error:
        incremental = as_refusal(error)
    assert incremental == fresh


@given(cases(wild=True), st.data())
def test_conversation_replans_after_pins_and_resolves_as_from_scratch(
    case: tuple[list[Message], ContextConfig], data: st.DataObject
) -> None:
    messages, config = case
    conversation = Conversation(messages)
    for _ in range(data.draw(st.integers(1, 6))):
        with contextlib.suppress(ContextOverflowError):
            conversation.plan_prune(config)
        pending = [m.tool_result.tool_call_id for m in conversation.pending() if m.tool_result]
        if data.draw(st.booleans()) and pending:
            conversation.resolve(data.draw(st.sampled_from(pending)), "done")
        elif messages:
            message = data.draw(st.sampled_from(conversation.messages))
            conversation.set_pinned(message.id, data.draw(st.booleans()))
    try:
        incremental: PrunePlan | Refusal = conversation.plan_prune(config)
    except ContextOverflowError as error:
        incremental = as_refusal(error)
    assert incremental == plan_or_refusal(list(conversation.messages), config)


def test_a_cached_layout_is_laid_out_again_when_a_replacement_starts_a_turn() -> None:
    # Pinning and resolving never change what ties messages together; any other replacement
    # lays the messages out again (the cache is private: Conversation replaces only by those).
    messages = [
        Message.user("msg-1", "a" * 40, timestamp=T0),
        Message.assistant("msg-2", "b" * 40, timestamp=T0),
        Message.user("msg-3", "c" * 40, timestamp=T0),
    ]
    config = ContextConfig(max_context_tokens=25, max_response_tokens=0)
    cache = _PlanCache()
    counting = _counting(None, None, "", (), None)
    assert _plan(cache, messages, config, counting).dropped == [range(0, 2)]
    replaced = [messages[0], Message.user("msg-2", "b" * 40, timestamp=T0), messages[2]]
    cache.changed(1, messages[1], replaced[1])
    assert _plan(cache, replaced, config, counting) == plan_prune(replaced, config)
    plan = _plan(cache, replaced, config, counting)  # three turns of 10 tokens in a room of 25
    assert (plan.kept, plan.dropped) == ([range(1, 2), range(2, 3)], [range(0, 1)])


@given(cases(wild=True))
def test_one_summary_accumulates_and_fits(case: tuple[list[Message], ContextConfig]) -> None:
    messages, config = case
    config = ContextConfig(
        max_context_tokens=config.max_context_tokens,
        max_response_tokens=config.max_response_tokens,
        reserved_tokens=config.reserved_tokens,
        strategy=PruneStrategy.SUMMARIZE,
    )
    conversation = Conversation(messages)
    for _ in range(3):
        before = list(conversation)
        try:
            result = conversation.prune(config, summarize=lambda folded, prior: f"{len(folded)} more")
        except ContextOverflowError:
            return
        assert sum(map(is_summary, result.messages)) <= 1
        assert result.tokens <= result.plan.budget
        assert result.tokens == sum(map(cost, result.messages))
        assert orphans(result.messages, before) == []
        if result.summary is not None:
            assert sum(map(is_summary, result.messages)) == 1
            assert plan_prune(result.messages, config).dropped == []


# --- with a chat template: orion-core's plan exactly ---------------------------------------


@st.composite
def templated_cases(
    draw: st.DrawFn, *, wild: bool, pending: bool = True
) -> tuple[list[Message], ContextConfig, str]:
    """A conversation, a context window sized from its rendered word counts, and a template name."""
    messages = draw(conversations(wild=wild, pending=pending))
    name = draw(st.sampled_from(sorted(TEMPLATES)))
    template = TEMPLATES[name]
    fixed = count_words(template.format_system("", ())) + count_words(template.assistant_prefix())
    total = sum(count_words(template.format_message(m)) for m in messages)
    available = fixed + total * draw(st.sampled_from([0, 10, 30, 50, 70, 85, 95, 100, 110])) // 100
    available += draw(st.integers(-1, 2))
    response = draw(st.integers(0, 20))
    config = ContextConfig(max_context_tokens=max(0, available) + response, max_response_tokens=response)
    return messages, config, name


def rendered_cost(name: str) -> Callable[[Message], int]:
    """A message's cost under a template, by section 6: the words of its rendered fragment."""
    template = TEMPLATES[name]
    return lambda message: count_words(template.format_message(message))


def with_fixed(config: ContextConfig, name: str) -> ContextConfig:
    """``config`` with the template's fixed overhead (section 6, step 2) as ``reserved_tokens``."""
    template = TEMPLATES[name]
    fixed = count_words(template.format_system("", ())) + count_words(template.assistant_prefix())
    return ContextConfig(
        max_context_tokens=config.max_context_tokens,
        max_response_tokens=config.max_response_tokens,
        reserved_tokens=config.reserved_tokens + fixed,
    )


def templated_plan(messages: list[Message], config: ContextConfig, name: str) -> PrunePlan | Refusal:
    try:
        return plan_prune(messages, config, template=name, counter=count_words)
    except ContextOverflowError as error:
        return as_refusal(error)


@given(templated_cases(wild=True))
def test_a_template_plans_exactly_as_orion_core(case: tuple[list[Message], ContextConfig, str]) -> None:
    # any conversation, preamble, pending results and stray results included: orion-core ignores them
    messages, config, name = case
    expected = orion_core_plan(messages, with_fixed(config, name), rendered_cost(name))
    got = templated_plan(messages, config, name)
    if isinstance(expected, Refusal):
        assert got == expected
    else:
        assert isinstance(got, PrunePlan)
        assert (got.kept, got.dropped) == expected
        assert not got.preamble_kept


@given(templated_cases(wild=False, pending=False))
def test_a_template_plan_equals_a_plan_with_the_rendered_counts(
    case: tuple[list[Message], ContextConfig, str],
) -> None:
    # issue 11: planning with a template equals planning with each message's rendered count passed
    # in as its token count (no-template mode), the fixed overhead as reserved_tokens
    # (agent-like, no pending result: the no-template mode protects those, orion-core does not)
    messages, config, name = case
    cost_of = rendered_cost(name)
    counted = [m.with_token_count(cost_of(m)) for m in messages]
    got = templated_plan(messages, config, name)
    try:
        plain: PrunePlan | Refusal = plan_prune(counted, with_fixed(config, name))
    except ContextOverflowError as error:
        plain = as_refusal(error)
    if isinstance(plain, Refusal):
        assert got == plain
        return
    assert isinstance(got, PrunePlan)
    assert (got.kept, got.dropped, got.kept_tokens, got.dropped_tokens) == (
        plain.kept,
        plain.dropped,
        plain.kept_tokens,
        plain.dropped_tokens,
    )
    assert (got.budget, got.fixed_tokens) == (plain.budget, plain.fixed_tokens)


@given(templated_cases(wild=True), st.booleans())
def test_the_history_is_the_input_without_the_dropped_turns(
    case: tuple[list[Message], ContextConfig, str], templated: bool
) -> None:
    # docs/pruning.md: the sliding window drops whole turns and nothing else; the preamble, sent
    # or not, stays in the history (chat-templates.md 6.3: "never counted, kept or dropped").
    messages, config, name = case
    try:
        if templated:
            result = prune(messages, config, template=name, counter=count_words)
        else:
            result = prune(messages, config)
    except ContextOverflowError:
        return
    gone = {index for turn in result.plan.dropped for index in turn}
    assert result.history == [message for index, message in enumerate(messages) if index not in gone]
    unsent = 0 if result.plan.preamble_kept else len(result.plan.preamble)
    assert result.plan.preamble_kept is not templated
    assert result.messages == result.history[unsent:]


@given(templated_cases(wild=True), st.data())
def test_a_templated_replan_after_appends_equals_a_fresh_plan(
    case: tuple[list[Message], ContextConfig, str], data: st.DataObject
) -> None:
    messages, config, name = case
    split = data.draw(st.integers(0, len(messages)))
    conversation = Conversation(messages[:split])
    for message in [None, *messages[split:]]:
        if message is not None:
            conversation.append(message)
        if data.draw(st.booleans()):
            with contextlib.suppress(ContextOverflowError):
                conversation.plan_prune(config, template=name, counter=count_words)
    try:
        incremental: PrunePlan | Refusal = conversation.plan_prune(config, template=name, counter=count_words)
    except ContextOverflowError as error:
        incremental = as_refusal(error)
    assert incremental == templated_plan(messages, config, name)


# --- Repeated call ids: a result tied to the call it answers, not to every call with its id ----


@st.composite
def reused_id_conversations(draw: st.DrawFn) -> list[Message]:
    """Up to 40 messages whose calls and results draw their ids from three (``call_0`` in every
    turn, as vLLM and llama.cpp number them), in any order, with a preamble now and then."""
    ids = st.sampled_from(["call_0", "call_1", "x"])
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 40))):
        kind = draw(st.sampled_from(["user", "call", "result", "result"]))
        if kind == "user":
            messages.append(Message.user("", "u", timestamp=T0))
        elif kind == "call":
            calls = [ToolCall(id=draw(ids), name="f", arguments={}) for _ in range(draw(st.integers(1, 2)))]
            messages.append(Message.assistant("", "a", calls, timestamp=T0))
        else:
            call_id = draw(ids)
            if draw(st.booleans()):
                messages.append(Message.pending_result("", call_id, "f", "r", timestamp=T0))
            else:
                messages.append(Message.tool_result_message("", call_id, "f", "r", timestamp=T0))
        if draw(st.integers(0, 9)) == 9:
            messages[-1] = messages[-1].pin()
    return messages


def naive_units(messages: list[Message]) -> tuple[list[range], set[range]]:
    """The units of turns and the protected ones, straight from the rule: a result and the call
    it answers (the latest call with its id before it, else the first one after it) in different
    turns tie every turn from one to the other into a unit; with one of them in the preamble, the
    other's turn is protected, as a pin or a pending result protects its own."""
    turns = naive_turns(messages)
    turn_of = {index: number for number, turn in enumerate(turns) for index in turn}
    tied = []
    for at, caller in answered_calls(messages).items():
        pair = sorted((turn_of.get(caller, -1), turn_of.get(at, -1)))
        if pair[0] != pair[1]:
            tied.append(pair)
    protected_turns = {high for low, high in tied if low < 0}
    protected_turns |= {turn_of.get(i, -1) for i, m in enumerate(messages) if m.pinned or m.is_pending}
    units: list[range] = []
    for turn, indexes in enumerate(turns):
        here = range(indexes[0], indexes[-1] + 1)
        joins_previous = any(0 <= low < turn <= high for low, high in tied)
        units[-1:] = [range(units[-1].start, here.stop)] if joins_previous else [*units[-1:], here]
    protected = {unit for unit in units for turn in protected_turns if turn >= 0 and turns[turn][0] in unit}
    return units, protected


_PREAMBLE_RESULT_TWO_CALLERS = [
    Message.tool_result_message("", "x", "f", "r", timestamp=T0),  # answers the first call after it
    *[Message.user("", "u", timestamp=T0), Message.assistant("", "a", [ToolCall(id="x", name="f", arguments={})], timestamp=T0)] * 2,
    Message.user("", "u", timestamp=T0),
]  # fmt: skip


@example(_PREAMBLE_RESULT_TWO_CALLERS, 1)
@example(_PREAMBLE_RESULT_TWO_CALLERS, 8)
@given(reused_id_conversations(), st.integers(1, 8))
def test_units_with_reused_ids_tie_each_result_to_the_call_it_answers(
    messages: list[Message], chunk: int
) -> None:
    layout = _Layout()
    for start in range(0, len(messages), chunk):  # laid out as appends come, a chunk at a time
        layout.extend(_read_columns(messages[start : start + chunk], start))
    units, _starts, protected = _units(layout, layout.turns)
    expected_units, expected_protected = naive_units(messages)
    assert units == expected_units
    assert {units[index] for index in protected} == expected_protected
