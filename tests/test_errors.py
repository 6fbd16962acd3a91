"""The library's exceptions and warnings cross process boundaries: they pickle and copy whole."""

from __future__ import annotations

import copy
import pickle
from concurrent.futures import ProcessPoolExecutor

import pytest

from orion_messages import ContextConfig, Message, errors, plan_prune
from orion_messages.errors import ContextOverflowError, Problem

# One instance of every exception and warning class the library defines, built as it builds them.
SAMPLES: list[BaseException] = [
    errors.OrionMessagesError("plain"),
    errors.OrionMessagesWarning("plain"),
    errors.FormatError([Problem("[0].id", "bad", 1, 2)], source="f.json", omitted=3),
    errors.NotALogError([Problem("", "not a log")], source="a.json"),
    errors.ContextOverflowError("pinned", 10, 5, fixed_tokens=2, budget=1, turn=range(2, 4)),
    errors.UnknownTemplateError("no such template", name="chatm", suggestion="chatml"),
    errors.MissingExtraError("counting with a tokenizer", "tokenizers", "huggingface"),
    errors.NotARegularFileError("/dev/zero", "a character device"),
    errors.StoreError("closed"),
    errors.ConversationNotFound("c1"),
    errors.ConversationExists("c1"),
    errors.MessageNotFound("c1", "msg-3"),
    errors.StoreVersionError("store.db", 9, 2),
    errors.ConversionError([Problem("[3].content", "bad part")]),
    errors.PendingResultNotFound("call-1", conversation_id="c1"),
    errors.ResultAlreadyResolved("call-1", index=4),
    errors.ArgumentTypeError("id must be a str"),
    errors.ArgumentValueError("token_count must not be negative"),
    errors.TornLineWarning("log.jsonl", 3, 120, 17, repaired=True),
    errors.UnknownKeyWarning("[0]", "x", "a number too large", source="a.json", line=2),
]


def test_every_error_and_warning_class_has_a_sample() -> None:
    defined = {
        value
        for value in vars(errors).values()
        if isinstance(value, type)
        and issubclass(value, BaseException)
        and value.__module__ == errors.__name__
    }
    assert defined == {type(sample) for sample in SAMPLES}


def _same(copied: BaseException, original: BaseException) -> None:
    assert type(copied) is type(original)
    assert str(copied) == str(original)
    assert copied.args == original.args
    assert vars(copied) == vars(original)
    if isinstance(original, OSError):
        assert isinstance(copied, OSError)
        assert copied.filename == original.filename
    if isinstance(original, ImportError):
        assert isinstance(copied, ImportError)
        assert copied.name == original.name


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda sample: type(sample).__name__)
def test_pickle_keeps_the_text_and_every_attribute(sample: BaseException) -> None:
    _same(pickle.loads(pickle.dumps(sample)), sample)


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda sample: type(sample).__name__)
def test_copies_keep_the_text_and_every_attribute(sample: BaseException) -> None:
    _same(copy.copy(sample), sample)
    _same(copy.deepcopy(sample), sample)


def _plan_that_overflows() -> None:
    messages = [Message.user("msg-1", "one two three four five six seven eight", timestamp=0)]
    plan_prune(messages, ContextConfig(max_context_tokens=4, max_response_tokens=0))


def test_a_refusal_raised_in_a_worker_process_reaches_the_caller_whole() -> None:
    with ProcessPoolExecutor(max_workers=1) as pool:
        future = pool.submit(_plan_that_overflows)
        with pytest.raises(ContextOverflowError) as raised:
            future.result(timeout=120)
    assert raised.value.reason == "latest"
    assert raised.value.turn == range(0, 1)
    assert str(raised.value).startswith("Latest message (")


def test_a_conversion_error_shows_the_first_hundred_problems_and_keeps_them_all() -> None:
    # A strict conversion of a 100,000-message history raised with a 26 MB text.
    found = [Problem(f"[{index}].pinned", "not carried") for index in range(250)]
    error = errors.ConversionError(found)
    assert error.problems == found
    lines = str(error).split("\n  ")
    assert lines[0] == "250 problems:"
    assert lines[1:101] == [f"[{index}].pinned: not carried" for index in range(100)]
    assert lines[101:] == ["... and 150 more (all in .problems)"]
    assert errors.MAX_REPORTED_PROBLEMS == 100
