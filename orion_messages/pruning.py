"""Pruning: applying a plan, and orion-core's ``Summarize`` strategy.

``prune`` plans (``orion_messages.planning``) and returns what to send; with
``PruneStrategy.SUMMARIZE`` it folds the dropped turns into one pinned summary message. The plan's
names and the counting names are re-exported here, where they have always been importable from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import compress
from operator import itemgetter
from typing import cast

from ._layout import _read_columns
from ._text import kind_of
from ._whitespace import UNICODE_WHITESPACE
from .counting import MessageCounter, TokenCounter, estimate_tokens, tokenizer_counter
from .errors import ArgumentTypeError, ArgumentValueError, ContextOverflowError
from .ids import FreshIds
from .models import Message, first_non_message, require_message_list
from .planning import (
    ContextConfig,
    PrunePlan,
    PruneStrategy,
    _context_config,
    _Counting,
    _counting,
    _plan,
    _PlanCache,
    plan_prune,
)
from .templates import ChatTemplate, ToolSchema
from .text_counters import TextCounter

__all__ = [
    "SUMMARY_PREFIX",
    "ContextConfig",
    "ContextOverflowError",
    "PrunePlan",
    "PruneResult",
    "PruneStrategy",
    "Summarizer",
    "TokenCounter",
    "estimate_tokens",
    "is_summary",
    "plan_prune",
    "prune",
    "tokenizer_counter",
]

SUMMARY_PREFIX = "[Summary of earlier conversation]\n"
"""How a summary message's content starts: orion-core's marker and a newline."""

_SUMMARY_MARKER = SUMMARY_PREFIX[:-1]
"""orion-core's ``SUMMARY_MARKER``: an earlier summary is recognised by it alone (no newline)."""

Summarizer = Callable[[list[Message], "str | None"], str]
"""``summarize(messages_to_fold, prior_summary_text) -> summary text``."""

_PINNED = itemgetter("pinned")


@dataclass(frozen=True)
class PruneResult:
    """A pruned conversation: what to send, what was left out, and how."""

    messages: list[Message]
    """The messages to send, in order (with the summary in place when one was made)."""
    dropped: list[Message]
    """The messages left out (folded into the summary when one was made), in order."""
    plan: PrunePlan
    """The plan, with index ranges into the input messages."""
    tokens: int
    """What ``messages`` cost as the plan counts (``plan.kept_tokens``, adjusted for the summary
    when one was made)."""
    summary: Message | None = None
    """The new summary message, when the ``Summarize`` strategy made one."""
    summary_error: Exception | None = None
    """Why summarizing failed (the exception raised, or a ``ValueError`` for an empty or oversized
    summary); the sliding window applied."""
    history: list[Message] = field(default=cast("list[Message]", None), kw_only=True)
    """The conversation once pruned, to keep: the input without the dropped turns (the summary
    in place of the folded messages when one was made). With a template it also holds the
    preamble, which is not sent (orion-core leaves it out of the prompt) but stays in the
    history. ``replace_messages(result.history)`` makes the pruning last, as the store's
    ``prune`` does. Built by hand without it, a result's ``history`` is its ``messages`` (as
    without a template)."""

    def __post_init__(self) -> None:
        if self.history is None:
            object.__setattr__(self, "history", list(self.messages))  # frozen: set once, here

    @property
    def summarized(self) -> bool:
        """True when the dropped turns were folded into a new summary."""
        return self.summary is not None

    def __repr__(self) -> str:
        # A notebook shows this: the messages counted, not printed whole.
        summary = "" if self.summary is None else f", summary={self.summary.id!r}"
        error = "" if self.summary_error is None else f", summary_error={self.summary_error!r}"
        return (
            f"PruneResult(messages=<list of {len(self.messages)}>, dropped=<list of {len(self.dropped)}>, "
            f"history=<list of {len(self.history)}>, tokens={self.tokens}{summary}{error}, plan={self.plan!r})"
        )


def is_summary(message: Message) -> bool:
    """True for a message orion-core takes for an earlier summary: pinned, its content starting with
    ``[Summary of earlier conversation]`` (``SUMMARY_PREFIX`` without the newline), of any role.

    Only the first such message of a conversation is folded into the next summary.

    Raises:
        ArgumentTypeError: ``message`` is not a ``Message``.
    """
    if not isinstance(message, Message):
        raise ArgumentTypeError(f"is_summary: expected a Message, got {kind_of(message)}")
    return message.pinned and message.content.startswith(_SUMMARY_MARKER)


def prune(
    messages: Sequence[Message],
    config: ContextConfig | None = None,
    *,
    count: MessageCounter | None = None,
    summarize: Summarizer | None = None,
    new_id: Callable[[], str] | None = None,
    template: ChatTemplate | str | None = None,
    system_prompt: str = "",
    tools: Sequence[ToolSchema] = (),
    counter: TextCounter | None = None,
) -> PruneResult:
    """Prune ``messages`` to ``config``'s context window (see ``plan_prune`` for the counting options).

    With ``PruneStrategy.SUMMARIZE``, as orion-core's ``compress_if_needed``: the messages to fold
    are the dropped turns and the first earlier summary (``is_summary``, anywhere in ``messages``),
    in order; ``summarize(messages_to_fold, prior_summary_text)`` gets them and the earlier
    summary's text after the marker, trimmed (``None`` when there is none or it is empty). Its
    answer, trimmed as Rust trims (Unicode White_Space), becomes one pinned user message
    ``SUMMARY_PREFIX + text`` placed where the lowest folded message was, with id ``new_id()``
    (default: a fresh ``msg-N`` past every id in ``messages``). If ``summarize`` raises, returns
    an empty text, or the summary does not fit the room left (a check orion-core does not make),
    nothing is folded: the sliding window applies and ``summary_error`` says why.
    Under the sliding window ``summarize`` is never called (a host may always pass it).

    Raises:
        ContextOverflowError: as ``plan_prune``.
        ArgumentTypeError: as ``plan_prune`` (``messages`` not a list of messages, say);
            ``summarize`` or ``new_id`` given but not callable (checked before any planning);
            ``new_id()`` returned something other than a str.
        ValueError: the strategy is ``SUMMARIZE`` and no ``summarize`` was given.
    """
    require_message_list(messages, "prune")
    if (wrong := first_non_message(messages, "prune")) is not None:
        raise wrong
    config = _context_config(config, "prune")
    counting = _counting(count, template, system_prompt, tools, counter)
    if new_id is None:  # called once, if a summary is made: only then are the ids read
        new_id = lambda: FreshIds(message.id for message in messages).next()  # noqa: E731
    return _prune(_PlanCache(), messages, config, counting, summarize, new_id)


def _prune(
    cache: _PlanCache,
    messages: Sequence[Message],
    config: ContextConfig,
    counting: _Counting,
    summarize: Summarizer | None,
    new_id: Callable[[], str],
) -> PruneResult:
    """``prune`` with a plan cache and the counting already resolved (``Conversation.prune``)."""
    _check_summarizing(config, summarize, new_id)
    plan = _plan(cache, messages, config, counting)
    kept = plan.kept_messages(messages)
    dropped = plan.dropped_messages(messages)
    # With a template the preamble is not sent but stays in the history (it precedes every turn).
    unsent = [] if plan.preamble_kept else list(messages[: plan.preamble.stop])
    sliding = PruneResult(kept, dropped, plan, plan.kept_tokens, history=[*unsent, *kept])
    if summarize is None or config.strategy is not PruneStrategy.SUMMARIZE or not plan.dropped:
        return sliding
    prior = _prior_summary(messages)
    removed = sorted({*(index for turn in plan.dropped for index in turn), *_maybe(prior)})
    folded = [messages[index] for index in removed]
    prior_text = None if prior is None else _rust_trim(messages[prior].content[len(_SUMMARY_MARKER) :])
    try:
        text = _summary_text(summarize(folded, prior_text or None))
    except Exception as error:  # best effort, as orion-core: any failure leaves the sliding window
        return replace(sliding, summary_error=error)
    draft = Message.user("", f"{_SUMMARY_MARKER}\n{text}").pin()  # counted before an id is spent on it
    summary_tokens = counting.count([draft], _read_columns([draft]), len(messages))[0]
    sent = _sent_indices(plan, prior)
    fresh = [] if plan.preamble_kept else [i for i in sent if i in plan.preamble]  # sent, not yet counted
    tokens = plan.kept_tokens + summary_tokens + _cost(counting, messages, [i for i in fresh if i != prior])
    tokens -= _cost(counting, messages, [i for i in _maybe(prior) if i not in fresh])
    if tokens > plan.budget:
        room = plan.budget - tokens + summary_tokens
        too_big = ValueError(
            f"the summary ({summary_tokens} tokens) does not fit the room left ({room} tokens)"
        )
        return replace(sliding, summary_error=too_big)
    summary_id = new_id()
    if not isinstance(summary_id, str):  # model_copy would raise pydantic's error, naming no new_id
        raise ArgumentTypeError(f"prune: new_id() must return a str, returned {kind_of(summary_id)}")
    summary = draft.model_copy(update={"id": summary_id})
    new_messages = _with_summary(messages, sent, summary, removed)
    # The preamble not sent stays in the history, up to an earlier summary folded from it: from
    # there on, the new messages hold it.
    cut = prior if prior is not None and prior < len(unsent) else len(unsent)
    return PruneResult(
        new_messages, folded, plan, tokens, summary, None, history=[*unsent[:cut], *new_messages]
    )


def _check_summarizing(
    config: ContextConfig, summarize: Summarizer | None, new_id: Callable[[], str]
) -> None:
    """Refuse a summarizing strategy without a summarizer, and callables that are none."""
    if config.strategy is PruneStrategy.SUMMARIZE and summarize is None:
        raise ArgumentValueError(
            "the Summarize strategy needs a summarize(messages_to_fold, prior_summary) callable"
        )
    # Checked up front: called late, a non-callable would fail only once a summary is due, and
    # summarize's failure would pass for a model's, leaving the sliding window.
    if summarize is not None and not callable(summarize):
        raise ArgumentTypeError(
            f"prune: summarize must be a callable (messages_to_fold, prior_summary) -> str, "
            f"got {kind_of(summarize)}"
        )
    if not callable(new_id):
        raise ArgumentTypeError(f"prune: new_id must be a callable () -> str, got {kind_of(new_id)}")


def _maybe(index: int | None) -> list[int]:
    """``[index]``, or ``[]`` for None."""
    return [] if index is None else [index]


def _cost(counting: _Counting, messages: Sequence[Message], indices: Sequence[int]) -> int:
    """What the messages at ``indices`` cost, counted as the plan counts them."""
    chosen = [messages[index] for index in indices]
    return sum(counting.count(chosen, _read_columns(chosen), indices[0])) if chosen else 0


def _prior_summary(messages: Sequence[Message]) -> int | None:
    """The index of the first ``is_summary`` message, as orion-core's ``plan_summary`` finds it."""
    for index in compress(range(len(messages)), map(_PINNED, map(vars, messages))):
        if messages[index].content.startswith(_SUMMARY_MARKER):
            return index
    return None


def _rust_trim(text: str) -> str:
    """``text`` without leading and trailing White_Space, as Rust's ``str::trim``."""
    return text.strip(UNICODE_WHITESPACE)


def _summary_text(text: object) -> str:
    """The summary's text as orion-core writes it: trimmed as Rust trims; a repeated marker stays."""
    if not isinstance(text, str):
        raise TypeError(f"summarize returned {type(text).__name__}, expected str")
    text = _rust_trim(text)
    if not text:
        raise ValueError("summarize returned an empty summary (nothing left once trimmed)")
    return text


def _sent_indices(plan: PrunePlan, prior: int | None) -> list[int]:
    """The indices of the messages sent once the summary is made, removed ones included.

    The kept turns, and the preamble where the plan keeps it. With a template (preamble not kept) a
    prior summary in the preamble becomes the new summary, a user message: the preamble messages
    after it join its turn and are sent too, as orion-core regroups the folded history.
    """
    if plan.preamble_kept:
        head = range(plan.preamble.stop)
    elif prior is not None and prior < plan.preamble.stop:
        head = range(prior, plan.preamble.stop)
    else:
        head = range(0)
    return [*head, *(index for turn in plan.kept for index in turn)]


def _with_summary(
    messages: Sequence[Message], sent: list[int], summary: Message, removed: list[int]
) -> list[Message]:
    """The sent messages without the removed ones, and the summary where the lowest removed one was."""
    lowest, gone = removed[0], set(removed)
    new_messages = [messages[index] for index in sent if index < lowest]
    new_messages.append(summary)
    new_messages += (messages[index] for index in sent if index > lowest and index not in gone)
    return new_messages
