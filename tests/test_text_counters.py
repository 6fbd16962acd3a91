"""Text counters: orion-core's estimate, the word counter, and the early check of a counter."""

from __future__ import annotations

from typing import Any

import pytest

from orion_messages import Message, callable_counter, count_words, estimate_text_tokens


def test_callable_counter_accepts_text_counters() -> None:
    assert callable_counter(estimate_text_tokens) is estimate_text_tokens
    assert callable_counter(count_words) is count_words
    assert callable_counter(len) is len


def test_a_message_counter_fails_early_with_a_type_error() -> None:
    def by_message(message: Message) -> int:
        return len(message.content)

    wrong: Any = by_message
    with pytest.raises(TypeError, match="takes the rendered text"):
        callable_counter(wrong)
    # Unannotated: the probe call on a str fails (str has no .content).
    unannotated: Any = lambda message: len(message.content)  # noqa: E731
    with pytest.raises(TypeError, match="not a Message"):
        callable_counter(unannotated)


def test_a_counter_must_return_a_non_negative_int() -> None:
    with pytest.raises(TypeError, match="must return an int"):
        callable_counter(lambda text: len(text) // 4 + 0.5)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match="must return an int"):
        callable_counter(lambda text: True)
    with pytest.raises(ValueError, match=">= 0"):
        callable_counter(lambda text: -1)
    with pytest.raises(TypeError, match="callable"):
        callable_counter(3)  # type: ignore[arg-type]
