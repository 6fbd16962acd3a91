"""Pruning: applying a plan, and orion-core's ``Summarize`` strategy.

``prune`` plans (``orion_messages.planning``) and returns what to send; with
``PruneStrategy.SUMMARIZE`` it folds the dropped turns into one pinned summary message. The plan's
names and the counting names are re-exported here, where they have always been importable from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import itemgetter

from ._layout import _read_columns
from .counting import MessageCounter, TokenCounter, estimate_tokens, tokenizer_counter
from .errors import ArgumentValueError, ContextOverflowError
from .ids import last_counter
from .models import Message, Role
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
    "TokenCounter",
    "estimate_tokens",
    "is_summary",
    "plan_prune",
    "prune",
    "tokenizer_counter",
]

SUMMARY_PREFIX = "[Summary of earlier conversation]\n"
"""How a summary message's content starts (orion-core's marker)."""

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
    """What ``messages`` cost (``plan.kept_tokens``, adjusted for the summary when one was made)."""
    summary: Message | None = None
    """The new summary message, when the ``Summarize`` strategy made one."""
    summary_error: Exception | None = None
    """Why summarizing failed (the exception raised, or a ``ValueError`` for an empty or oversized summary); the sliding window applied."""

    @property
    def summarized(self) -> bool:
        """True when the dropped turns were folded into a new summary."""
        return self.summary is not None


def is_summary(message: Message) -> bool:
    """True for a summary message: a pinned user message whose content starts with the summary prefix."""
    return message.pinned and message.role is Role.USER and message.content.startswith(SUMMARY_PREFIX)


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

    With ``PruneStrategy.SUMMARIZE``, the dropped turns and any earlier summary are folded by
    ``summarize(messages_to_fold, prior_summary_text)`` into one pinned user message starting with
    ``SUMMARY_PREFIX``, placed at the lowest removed index, with id ``new_id()`` (default: a fresh
    ``msg-N`` past every id in ``messages``). If ``summarize`` raises, returns an empty text, or the
    summary does not fit the room left, nothing is folded: the sliding window applies and
    ``summary_error`` says why.

    Raises:
        ContextOverflowError: as ``plan_prune``.
        ValueError: the strategy is ``SUMMARIZE`` and no ``summarize`` was given.
    """
    config = _context_config(config)
    counting = _counting(count, template, system_prompt, tools, counter)
    if new_id is None:
        ids = [message.id for message in messages]
        new_id = lambda: f"msg-{last_counter(ids) + 1}"  # noqa: E731
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
    if config.strategy is PruneStrategy.SUMMARIZE and summarize is None:
        raise ArgumentValueError(
            "the Summarize strategy needs a summarize(messages_to_fold, prior_summary) callable"
        )
    plan = _plan(cache, messages, config, counting)
    kept = plan.kept_messages(messages)
    dropped = plan.dropped_messages(messages)
    if summarize is None or config.strategy is not PruneStrategy.SUMMARIZE or not plan.dropped:
        return PruneResult(kept, dropped, plan, plan.kept_tokens)
    latest_start = plan.kept[-1].start
    priors = [
        index
        for index in compress(range(latest_start), map(_PINNED, map(vars, messages[:latest_start])))
        if is_summary(messages[index])
    ]
    prior_text = "\n\n".join(messages[index].content[len(SUMMARY_PREFIX) :] for index in priors) or None
    try:
        text = _summary_text(summarize(dropped, prior_text))
    except Exception as error:  # best effort, as orion-core: any failure leaves the sliding window
        return PruneResult(kept, dropped, plan, plan.kept_tokens, None, error)
    draft = Message.user("", SUMMARY_PREFIX + text).pin()  # counted before an id is spent on it
    prior_messages = [messages[index] for index in priors]
    prior_tokens = sum(counting.count(prior_messages, _read_columns(prior_messages), 0))
    summary_tokens = counting.count([draft], _read_columns([draft]), len(messages))[0]
    room = plan.budget - plan.kept_tokens + prior_tokens
    if summary_tokens > room:
        too_big = ValueError(
            f"the summary ({summary_tokens} tokens) does not fit the room left ({room} tokens)"
        )
        return PruneResult(kept, dropped, plan, plan.kept_tokens, None, too_big)
    summary = draft.model_copy(update={"id": new_id()})
    new_messages = _with_summary(messages, plan, summary, min([plan.dropped[0].start, *priors]), set(priors))
    folded = sorted([*priors, *(index for turn in plan.dropped for index in turn)])
    tokens = plan.kept_tokens - prior_tokens + summary_tokens
    return PruneResult(new_messages, [messages[i] for i in folded], plan, tokens, summary, None)


def _summary_text(text: object) -> str:
    if not isinstance(text, str):
        raise TypeError(f"summarize returned {type(text).__name__}, expected str")
    if text.startswith(SUMMARY_PREFIX):
        text = text[len(SUMMARY_PREFIX) :]
    if not text.strip():
        raise ValueError("summarize returned an empty summary")
    return text


def _with_summary(
    messages: Sequence[Message], plan: PrunePlan, summary: Message, lowest: int, removed: set[int]
) -> list[Message]:
    """The kept messages with the summary at the lowest removed index and the prior summaries gone."""
    new_messages: list[Message] = list(messages[: plan.preamble.stop]) if plan.preamble_kept else []
    placed = False
    for turn in plan.kept:
        if not placed and turn.start >= lowest:
            new_messages.append(summary)
            placed = True
        new_messages += (messages[index] for index in turn if index not in removed)
    return new_messages
