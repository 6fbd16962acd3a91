"""The conversation: orion-core's agent operations, files, turns, and the semantic check."""

from __future__ import annotations

import base64
import collections.abc
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import orion_messages
from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    ContextConfig,
    Conversation,
    Message,
    PendingResultNotFound,
    Problem,
    TokenCounter,
    ToolCall,
    ToolResult,  # noqa: F401  # in scope for pydantic's mypy plugin, as a subclass of Message needs (api.md)
    TurnLayout,
    dumps,
    dumps_message,
    estimate_tokens,
    find_problems,
    loads,
    message_number,
    plan_prune,
    read_jsonl,
    save_jsonl,
    split_turns,
    tool_call_id,
)
from orion_messages.templates import ChatML
from orion_messages.text_counters import count_words

from .conftest import FIXTURES
from .strategies import conversations, messages


def _call(id: str, name: str = "tool") -> ToolCall:
    return ToolCall(id=id, name=name, arguments={})


def _tool_loop() -> list[Message]:
    return [
        Message.system("msg-1", "sys", timestamp=1),
        Message.user("msg-2", "go", timestamp=2),
        Message.assistant("msg-3", "", [_call("msg-3-call-1", "a"), _call("msg-3-call-2", "b")], timestamp=3),
        Message.pending_result("msg-4", "msg-3-call-1", "a", timestamp=4),
        Message.tool_result_message("msg-5", "msg-3-call-2", "b", "done", timestamp=5),
        Message.assistant("msg-6", "ok", timestamp=6),
    ]


# --- the list ---------------------------------------------------------------------------------


def test_messages_is_a_read_only_view_in_order() -> None:
    conversation = Conversation(_tool_loop())
    view = conversation.messages
    assert [m.id for m in view] == ["msg-1", "msg-2", "msg-3", "msg-4", "msg-5", "msg-6"]
    assert view[0].id == "msg-1"
    assert [m.id for m in view[1:3]] == ["msg-2", "msg-3"]
    assert len(view) == len(conversation) == 6
    assert not hasattr(view, "append")
    with pytest.raises(TypeError):
        view[0] = Message.user("x", "y")  # type: ignore[index]
    conversation.append(Message.user("msg-7", "more", timestamp=7))
    assert len(view) == 7  # a view, not a copy


def test_the_view_compares_like_the_sequence_it_shows() -> None:
    messages = _tool_loop()
    conversation = Conversation(messages)
    assert conversation.messages == conversation.messages  # two views: they were unequal (identity)
    assert conversation.messages == messages
    assert messages == conversation.messages  # the reflected comparison too
    assert conversation.messages == tuple(messages)  # type: ignore[comparison-overlap]  # typed Sequence
    assert conversation.messages != messages[:-1]
    assert conversation.messages != [*messages[:-1], Message.user("msg-6", "other", timestamp=6)]
    assert conversation.messages != "not a sequence of messages"  # type: ignore[comparison-overlap]
    assert messages[2] in conversation.messages
    assert conversation.messages.index(messages[2]) == 2
    with pytest.raises(TypeError):
        hash(conversation.messages)


def test_append_and_extend_add_at_the_end() -> None:
    conversation = Conversation()
    first = Message.user("msg-1", "a", timestamp=1)
    conversation.append(first)
    conversation.extend(m for m in _tool_loop()[1:3])
    assert [m.id for m in conversation] == ["msg-1", "msg-2", "msg-3"]
    assert conversation[0] is first


def test_append_refuses_what_is_not_a_message() -> None:
    conversation = Conversation()
    with pytest.raises(TypeError, match="expected a Message"):
        conversation.append({"id": "m"})  # type: ignore[arg-type]


def test_extend_adds_nothing_when_an_item_is_not_a_message() -> None:
    conversation = Conversation([Message.user("msg-1", "a", timestamp=1)])
    with pytest.raises(TypeError):
        conversation.extend([Message.user("msg-2", "b", timestamp=2), "not a message"])  # type: ignore[list-item]
    assert [m.id for m in conversation] == ["msg-1"]


def test_set_pinned_changes_the_first_match_only() -> None:
    twins = [Message.user("dup", "a", timestamp=1), Message.user("dup", "b", timestamp=2)]
    conversation = Conversation(twins)
    assert conversation.set_pinned("dup", True) is True
    assert [m.pinned for m in conversation] == [True, False]
    assert conversation.set_pinned("dup", False) is True
    assert [m.pinned for m in conversation] == [False, False]


def test_set_pinned_returns_false_for_an_unknown_id_and_changes_nothing() -> None:
    conversation = Conversation(_tool_loop())
    before = list(conversation)
    assert conversation.set_pinned("msg-99", True) is False
    assert list(conversation) == before


def test_set_pinned_keeps_position_and_everything_else() -> None:
    conversation = Conversation(_tool_loop())
    original = conversation[2]
    conversation.set_pinned("msg-3", True)
    assert conversation[2] == original.model_copy(update={"pinned": True})


def test_set_token_count_sets_the_first_match_and_plans_see_it() -> None:
    conversation = Conversation(_tool_loop())
    counter = TokenCounter(estimate_tokens, use_token_count=True)
    config = ContextConfig(max_context_tokens=10_000, max_response_tokens=0)
    before = conversation.plan_prune(config, count=counter).kept_tokens
    assert conversation.set_token_count("msg-3", 500) is True
    assert conversation[2].token_count == 500
    after = conversation.plan_prune(config, count=counter)
    assert after == plan_prune(list(conversation), config, count=counter)  # the cached plan follows
    assert after.kept_tokens == before - estimate_tokens(_tool_loop()[2]) + 500
    assert conversation.set_token_count("msg-3", None) is True
    assert conversation[2] == _tool_loop()[2]
    assert conversation.set_token_count("msg-99", 1) is False


@pytest.mark.parametrize(
    ("count", "error"),
    [
        (True, ArgumentTypeError),
        ("5", ArgumentTypeError),
        (-1, ArgumentValueError),
        (2**32, ArgumentValueError),
    ],
)
def test_set_token_count_refuses_what_a_count_cannot_be(count: object, error: type[Exception]) -> None:
    conversation = Conversation(_tool_loop())
    with pytest.raises(error, match="token_count must be"):
        conversation.set_token_count("msg-3", count)  # type: ignore[arg-type]
    assert list(conversation) == _tool_loop()


def test_replace_messages() -> None:
    conversation = Conversation(_tool_loop())
    replacement = [Message.user("msg-1", "fresh", timestamp=10)]
    conversation.replace_messages(replacement)
    assert list(conversation) == replacement


def test_equality_compares_messages() -> None:
    assert Conversation(_tool_loop()) == Conversation(_tool_loop())
    assert Conversation(_tool_loop()) != Conversation(_tool_loop()[:2])


def test_a_conversation_equals_a_list_tuple_or_view_of_the_same_messages() -> None:
    messages = _tool_loop()
    conversation = Conversation(messages)
    assert conversation == messages  # a reader's list and the conversation it was saved from
    assert messages == conversation  # reflected
    assert conversation == tuple(messages)
    assert conversation == conversation.messages
    assert conversation.messages == conversation
    assert conversation != messages[:-1]
    assert conversation != Conversation(messages[:-1]).messages
    assert conversation != "msg-1"


def test_the_view_follows_a_replacement_and_what_comes_after() -> None:
    conversation = Conversation(_tool_loop())
    view = conversation.messages
    replacement = [Message.user("msg-9", "fresh", timestamp=10)]
    conversation.replace_messages(replacement)
    assert [m.id for m in view] == ["msg-9"]
    conversation.append(Message.assistant("msg-10", "ok", timestamp=11))
    assert [m.id for m in view] == ["msg-9", "msg-10"]


def test_replacing_with_its_own_view_keeps_the_messages() -> None:
    messages = _tool_loop()
    conversation = Conversation(messages)
    conversation.replace_messages(conversation.messages)
    assert list(conversation) == messages


# --- ids ---------------------------------------------------------------------------------------


def test_next_id_starts_at_one() -> None:
    conversation = Conversation()
    assert [conversation.next_id() for _ in range(3)] == ["msg-1", "msg-2", "msg-3"]


def test_next_id_goes_past_the_largest_restored_counter() -> None:
    conversation = Conversation(loads((FIXTURES / "v0.7/pinned-summary.json").read_bytes()))
    # The file holds msg-1, msg-9, msg-4, msg-5, msg-10, msg-11 (out of order on purpose).
    assert conversation.next_id() == "msg-12"


def test_next_id_ignores_ids_that_are_not_counters() -> None:
    messages = [
        Message.user("msg-3", "a", timestamp=1),
        Message.user("msg-50-call-1", "b", timestamp=2),
        Message.user("custom-99", "c", timestamp=3),
        Message.user("msg-x", "d", timestamp=4),
    ]
    assert Conversation(messages).next_id() == "msg-4"


def test_next_id_is_monotonic() -> None:
    conversation = Conversation([Message.user("msg-7", "a", timestamp=1)])
    assert conversation.next_id() == "msg-8"
    conversation.append(Message.user("msg-20", "b", timestamp=2))
    assert conversation.next_id() == "msg-21"
    conversation.replace_messages([Message.user("msg-2", "c", timestamp=3)])
    assert conversation.next_id() == "msg-22"  # never hands out an id twice
    conversation.replace_messages([Message.user("msg-40", "d", timestamp=4)])
    assert conversation.next_id() == "msg-41"


def test_next_id_ids_are_fresh_in_a_long_session() -> None:
    conversation = Conversation(loads((FIXTURES / "v0.7/tool-loop-parallel.json").read_bytes()))
    seen = {m.id for m in conversation}
    for _ in range(50):
        new_id = conversation.next_id()
        assert new_id not in seen
        seen.add(new_id)
        conversation.append(Message.user(new_id, "x", timestamp=1))


# --- pending results --------------------------------------------------------------------------


def test_pending_lists_unresolved_placeholders_in_order() -> None:
    conversation = Conversation(loads((FIXTURES / "v0.8/pending-placeholders.json").read_bytes()))
    assert [m.id for m in conversation.pending()] == ["msg-3", "msg-4"]
    assert Conversation(_tool_loop()).pending() == [_tool_loop()[3]]


def test_resolve_fills_in_the_placeholder_in_place() -> None:
    placeholders = loads((FIXTURES / "v0.8/pending-placeholders.json").read_bytes())
    conversation = Conversation(placeholders)
    resolved = conversation.resolve("msg-2-call-1", "built in 41.2s")
    conversation.resolve("msg-2-call-2", "2 tests failed", is_error=True)
    # The hand-written golden of the same conversation, resolved.
    assert list(conversation) == loads((FIXTURES / "v0.8/pending-resolved.json").read_bytes())
    assert resolved is conversation[2]
    assert conversation.pending() == []


def test_resolve_keeps_id_position_timestamp_pin_and_unknown_keys() -> None:
    raw = (
        '[{"id":"msg-1","role":"assistant","content":"","timestamp":1,"tool_calls":[{"id":"c","name":"n","arguments":{}}]},'
        '{"id":"msg-2","role":"tool_result","content":"","timestamp":2,"tool_result":{"tool_call_id":"c",'
        '"tool_name":"n","content":"","is_error":false,"pending":true,"x_r":1},"pinned":true,"x_m":2}]'
    )
    conversation = Conversation(loads(raw))
    conversation.resolve("c", "out")
    message = conversation[1]
    assert (message.id, message.timestamp, message.pinned, message.content) == ("msg-2", 2, True, "out")
    assert message.model_extra == {"x_m": 2}
    assert message.tool_result is not None
    assert message.tool_result.model_extra == {"x_r": 1}
    assert (message.tool_result.content, message.tool_result.pending) == ("out", False)


def test_resolve_refuses_an_unknown_call() -> None:
    conversation = Conversation(_tool_loop())
    before = list(conversation)
    with pytest.raises(KeyError, match="msg-3-call-9"):
        conversation.resolve("msg-3-call-9", "x")
    assert list(conversation) == before


def test_resolve_refuses_an_already_resolved_call() -> None:
    conversation = Conversation(_tool_loop())
    before = list(conversation)
    with pytest.raises(ValueError, match=r"already resolved \(at \[4\]\)"):
        conversation.resolve("msg-3-call-2", "again")
    assert list(conversation) == before
    conversation.resolve("msg-3-call-1", "now")
    with pytest.raises(ValueError, match="already resolved"):
        conversation.resolve("msg-3-call-1", "twice")


def test_resolve_checks_its_arguments() -> None:
    conversation = Conversation(_tool_loop())
    with pytest.raises(TypeError):
        conversation.resolve("msg-3-call-1", 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        conversation.resolve("msg-3-call-1", "x", is_error="yes")  # type: ignore[arg-type]
    assert conversation.pending() == [_tool_loop()[3]]


# --- turns -------------------------------------------------------------------------------------


def test_turns_start_at_each_user_message() -> None:
    messages = loads((FIXTURES / "v0.7/pinned-summary.json").read_bytes())
    # system | user(summary) | user, assistant | user, assistant
    turns = split_turns(messages)
    assert turns == TurnLayout(range(0, 1), [range(1, 2), range(2, 4), range(4, 6)])


def test_turns_without_users_are_all_preamble() -> None:
    messages = [Message.system("s", "x", timestamp=1), Message.assistant("a", "y", timestamp=2)]
    turns = split_turns(messages)
    assert turns.preamble == range(0, 2)
    assert turns.turns == []
    empty = split_turns([])
    assert (empty.preamble, empty.turns) == (range(0, 0), [])


def test_turns_hold_tool_results_with_their_call() -> None:
    turns = split_turns(_tool_loop())
    assert turns.preamble == range(0, 1)
    assert turns.turns == [range(1, 6)]


# --- check -------------------------------------------------------------------------------------


def test_check_finds_nothing_in_the_goldens() -> None:
    for folder in ("v0.7", "v0.8", "own"):
        for path in (FIXTURES / folder).glob("*.json"):
            assert find_problems(loads(path.read_bytes())) == [], path.name


def test_check_duplicate_message_ids() -> None:
    messages = [
        Message.user("a", "x", timestamp=1),
        Message.user("b", "y", timestamp=2),
        Message.user("a", "z", timestamp=3),
    ]
    assert find_problems(messages) == [Problem("[2].id", 'duplicate message id "a" (first at [0])')]


def test_check_duplicate_tool_call_ids() -> None:
    messages = [
        Message.assistant("m1", "", [_call("c1"), _call("c1")], timestamp=1),
        Message.assistant("m2", "", [_call("c1")], timestamp=2),
    ]
    problems = find_problems(messages)
    assert [p.location for p in problems] == ["[0].tool_calls[1].id", "[1].tool_calls[0].id"]
    assert all(p.message == 'duplicate tool-call id "c1" (first at [0].tool_calls[0].id)' for p in problems)


@pytest.mark.parametrize("role", ["system", "user", "tool_result"])
def test_check_tool_calls_on_a_role_that_does_not_call(role: str) -> None:
    message = Message(id="m", role=role, content="", timestamp=1, tool_calls=[_call("c")])
    problems = [p for p in find_problems([message]) if p.location == "[0].tool_calls"]
    assert len(problems) == 1
    assert f"found them on a {role} message" in problems[0].message


def test_check_tool_calls_on_tool_call_role_are_fine() -> None:
    messages = loads((FIXTURES / "v0.7/role-tool-call.json").read_bytes())
    assert find_problems(messages) == []


def test_check_tool_result_message_without_a_result() -> None:
    message = Message(id="m", role="tool_result", content="x", timestamp=1)
    assert find_problems([message]) == [
        Problem("[0].tool_result", "a tool_result message must carry a tool result")
    ]


def test_check_result_on_another_role() -> None:
    calls = Message.assistant("m1", "", [_call("c")], timestamp=1)
    stray = Message(
        **{**Message.tool_result_message("m2", "c", "tool", "x", timestamp=2).model_dump(), "role": "user"}
    )
    problems = find_problems([calls, stray])
    assert [p.location for p in problems] == ["[1].tool_result"]
    assert "found one on a user message" in problems[0].message


def test_check_result_without_an_earlier_call() -> None:
    result_first = Message.tool_result_message("m1", "c", "tool", "x", timestamp=1)
    call_after = Message.assistant("m2", "", [_call("c")], timestamp=2)
    assert find_problems([result_first, call_after]) == [
        Problem("[0].tool_result.tool_call_id", 'no earlier tool call has the id "c"')
    ]


def test_check_two_completed_results_for_one_call() -> None:
    messages = [
        Message.assistant("m1", "", [_call("c")], timestamp=1),
        Message.pending_result("m2", "c", "tool", timestamp=2),
        Message.tool_result_message("m3", "c", "tool", "x", timestamp=3),
        Message.tool_result_message("m4", "c", "tool", "y", timestamp=4),
    ]
    assert find_problems(messages) == [
        # A completed result beside a placeholder never filled in: the call is answered twice.
        Problem("[2].tool_result.tool_call_id", 'tool call "c" already has a pending result at [1]'),
        Problem("[3].tool_result.tool_call_id", 'tool call "c" already has a completed result at [2]'),
    ]


def test_check_content_that_differs_from_the_result() -> None:
    call = Message.assistant("m1", "", [_call("c")], timestamp=1)
    result = Message.tool_result_message("m2", "c", "tool", "x", timestamp=2).model_copy(
        update={"content": "other"}
    )
    assert find_problems([call, result]) == [
        Problem("[1].content", "differs from tool_result.content (orion-core stores the text twice)")
    ]


def test_check_reports_every_problem_in_order() -> None:
    messages = [
        Message.tool_result_message("a", "nope", "t", "x", timestamp=1),
        Message.user("a", "y", timestamp=2),
    ]
    assert [p.location for p in find_problems(messages)] == ["[0].tool_result.tool_call_id", "[1].id"]


# --- renamed names, kept for one release ----------------------------------------------------


def test_old_names_still_work_with_a_deprecation_warning() -> None:
    messages = _tool_loop()
    with pytest.deprecated_call(match="use orion_messages.find_problems"):
        assert getattr(orion_messages, "check") is find_problems  # noqa: B009
    with pytest.deprecated_call(match="use orion_messages.TurnLayout"):
        assert getattr(orion_messages, "Turns") is TurnLayout  # noqa: B009
    with pytest.deprecated_call(match=r"split_turns\(conversation.messages\)"):
        assert Conversation(messages).turns() == split_turns(messages)
    with pytest.deprecated_call(match=r"find_problems\(conversation.messages\)"):
        assert Conversation(messages).check() == find_problems(messages)
    with pytest.raises(AttributeError):
        getattr(orion_messages, "no_such_name")  # noqa: B009


def test_importing_the_package_warns_nothing() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "find_problems" in orion_messages.__all__
        assert "check" not in orion_messages.__all__
        assert "Turns" not in orion_messages.__all__


# --- ids ------------------------------------------------------------------------------------


def test_tool_call_ids_follow_orion_core() -> None:
    # reference page: tool-call ids are {assistant id}-call-{k}, e.g. msg-2-call-1
    assert tool_call_id("msg-2", 1) == "msg-2-call-1"
    assert tool_call_id("msg-10", 3) == "msg-10-call-3"
    with pytest.raises(ValueError, match="from 1"):
        tool_call_id("msg-2", 0)


# --- files ----------------------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    conversation = Conversation(_tool_loop())
    conversation.save(tmp_path / "chat.json")
    assert (tmp_path / "chat.json").read_bytes() == dumps(_tool_loop())
    assert Conversation.load(tmp_path / "chat.json") == conversation
    conversation.save(tmp_path / "pretty.json", indent=2)
    assert (tmp_path / "pretty.json").read_bytes() == dumps(_tool_loop(), indent=2)
    conversation.save_jsonl(tmp_path / "chat.jsonl")
    assert read_jsonl(tmp_path / "chat.jsonl") == conversation.messages
    save_jsonl(tmp_path / "reference.jsonl", _tool_loop())
    assert (tmp_path / "chat.jsonl").read_bytes() == (tmp_path / "reference.jsonl").read_bytes()
    assert Conversation.load_jsonl(tmp_path / "chat.jsonl") == conversation


def test_saving_again_writes_every_change(tmp_path: Path) -> None:
    path = tmp_path / "chat.json"
    conversation = Conversation(_tool_loop())
    conversation.save(path)
    conversation.append(Message.user("msg-7", "more", timestamp=7))
    conversation.resolve("msg-3-call-1", "42")
    assert conversation.set_pinned("msg-2", True)
    conversation.save(path)
    assert path.read_bytes() == dumps(list(conversation))
    conversation.save_jsonl(tmp_path / "chat.jsonl")
    assert read_jsonl(tmp_path / "chat.jsonl") == list(conversation)
    conversation.replace_messages(_tool_loop()[:2])
    conversation.save(path)
    assert path.read_bytes() == dumps(_tool_loop()[:2])
    empty = Conversation()
    empty.save(path)
    empty.save_jsonl(tmp_path / "empty.jsonl")
    assert path.read_bytes() == dumps([])
    assert (tmp_path / "empty.jsonl").read_bytes() == b""


def test_load_passes_strict_and_repair_on(tmp_path: Path) -> None:
    # Conversation.load and load_jsonl read as load and read_jsonl do, with their options.
    from orion_messages import FormatError, TornLineWarning

    doubled = b'{"id":"msg-1","id":"msg-2","role":"user","content":"a","timestamp":1}'
    (tmp_path / "chat.json").write_bytes(b"[" + doubled + b"]")
    assert [m.id for m in Conversation.load(tmp_path / "chat.json")] == ["msg-2"]  # the last wins
    with pytest.raises(FormatError, match='duplicate key "id"'):
        Conversation.load(tmp_path / "chat.json", strict=True)
    log = tmp_path / "chat.jsonl"
    record = b'{"id":"msg-1","role":"user","content":"a","timestamp":1}\n'
    log.write_bytes(record + b'{"id":"msg-2","ro')
    with pytest.warns(TornLineWarning):
        assert len(Conversation.load_jsonl(log)) == 1
    assert log.read_bytes() == record + b'{"id":"msg-2","ro'  # left as it was
    with pytest.warns(TornLineWarning):
        assert len(Conversation.load_jsonl(log, repair=True)) == 1
    assert log.read_bytes() == record  # the torn line cut off


def _check_save_jsonl(conversation: Conversation, folder: Path) -> None:
    """``save_jsonl``, from the bytes kept, writes what ``save_jsonl`` of the messages writes."""
    conversation.save_jsonl(folder / "chat.jsonl")
    save_jsonl(folder / "reference.jsonl", list(conversation))
    assert (folder / "chat.jsonl").read_bytes() == (folder / "reference.jsonl").read_bytes()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=conversations(max_size=6), steps=st.data())
def test_a_save_after_any_changes_writes_what_dumps_writes(
    tmp_path: Path, start: list[Message], steps: st.DataObject
) -> None:
    # the bytes kept from earlier saves are reused only where the message is the same object
    path = tmp_path / "chat.json"
    conversation = Conversation(start)
    for _ in range(steps.draw(st.integers(0, 6))):
        action = steps.draw(st.sampled_from(["append", "pin", "save", "replace"]))
        if action == "append":
            conversation.append(steps.draw(messages()))
        elif action == "pin" and len(conversation):
            index = steps.draw(st.integers(0, len(conversation) - 1))
            conversation.set_pinned(conversation[index].id, steps.draw(st.booleans()))
        elif action == "replace":
            conversation.replace_messages(steps.draw(conversations(max_size=3)))
        else:
            conversation.save(path)
        conversation.save(path)
        assert path.read_bytes() == dumps(list(conversation))
    _check_save_jsonl(conversation, tmp_path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(start=conversations(max_size=12).filter(bool), steps=st.data())
def test_a_save_after_many_changes_at_once_writes_what_dumps_writes(
    tmp_path: Path, start: list[Message], steps: st.DataObject
) -> None:
    # several messages replaced between two saves, longer or shorter, anywhere: spliced in one pass
    path = tmp_path / "chat.json"
    conversation = Conversation(start)
    for _ in range(steps.draw(st.integers(1, 3))):
        conversation.save(path)
        for _ in range(steps.draw(st.integers(1, 8))):
            message = conversation[steps.draw(st.integers(0, len(conversation) - 1))]
            if steps.draw(st.booleans()):
                conversation.set_pinned(message.id, steps.draw(st.booleans()))
            else:
                conversation.set_token_count(message.id, steps.draw(st.none() | st.integers(0, 10**9)))
        if steps.draw(st.booleans()):
            conversation.append(steps.draw(messages()))
        conversation.save(path)
        assert path.read_bytes() == dumps(list(conversation))
    _check_save_jsonl(conversation, tmp_path)


def test_a_message_that_cannot_be_written_leaves_the_next_save_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orion_messages import _encoded

    def refuse_msg_7(message: Message) -> bytes:
        if message.id == "msg-7":
            raise orion_messages.FormatError([Problem("", "cannot be written")])
        return dumps_message(message)

    path = tmp_path / "chat.json"
    conversation = Conversation(_tool_loop())
    conversation.save(path)
    monkeypatch.setattr(_encoded, "record_bytes", refuse_msg_7)
    conversation.append(Message.user("msg-7", "unwritable", timestamp=7))
    assert conversation.set_pinned("msg-2", True)  # a replaced message waits to be encoded too
    with pytest.raises(orion_messages.FormatError):
        conversation.save(path)
    assert path.read_bytes() == dumps(_tool_loop())  # the file is left as it was
    monkeypatch.undo()
    conversation.save(path)
    assert path.read_bytes() == dumps(list(conversation))


def test_a_save_with_an_indent_of_zero_is_pretty_not_compact(tmp_path: Path) -> None:
    # Conversation.save writes exactly as save does, and the writers take indent=0 as json.dumps
    # does (test_wire): a newline before each item, no indent; only indent=None is compact.
    conversation = Conversation([Message.user("msg-1", "hi", timestamp=1)])
    conversation.save(tmp_path / "chat.json", indent=0)
    expected = b'[\n{\n"id": "msg-1",\n"role": "user",\n"content": "hi",\n"timestamp": 1\n}\n]'
    assert (tmp_path / "chat.json").read_bytes() == expected


def test_messages_replaced_back_to_front_are_spliced_in_order(tmp_path: Path) -> None:
    # The replaced indexes are kept in a set, whose order is not the indexes' order: 9 then 1
    # iterate as [9, 1] (9 and 1 share a slot of a small set's table).
    path = tmp_path / "chat.json"
    messages = [Message.user(f"msg-{n}", f"text {n}", timestamp=n) for n in range(1, 11)]
    conversation = Conversation(messages)
    conversation.save(path)
    assert conversation.set_pinned("msg-10", True)
    assert conversation.set_pinned("msg-2", True)
    conversation.save(path)
    expected = [m.pin() if m.id in ("msg-2", "msg-10") else m for m in messages]
    assert loads(path.read_bytes()) == expected
    assert path.read_bytes() == dumps(expected)
    _check_save_jsonl(conversation, tmp_path)


def _failed_save(conversation: Conversation, path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``conversation.save(path)`` whose write fails with a full disk."""
    import errno
    import os

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space left"):
        conversation.save(path)
    monkeypatch.undo()


def test_a_save_that_failed_to_write_leaves_the_next_saves_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The failed write's error holds a view of the kept bytes (BufferError on resizing them):
    # the next save, and one after an append, still write what dumps writes.
    path = tmp_path / "chat.json"
    conversation = Conversation(_tool_loop())
    conversation.save(path)
    _failed_save(conversation, path, monkeypatch)
    assert path.read_bytes() == dumps(_tool_loop())
    conversation.save(path)
    assert path.read_bytes() == dumps(_tool_loop())
    conversation.append(Message.user("msg-7", "more", timestamp=7))
    conversation.save(path)
    assert loads(path.read_bytes()) == [*_tool_loop(), Message.user("msg-7", "more", timestamp=7)]
    assert path.read_bytes() == dumps(list(conversation))


# --- the plan cache: counts are reused only for the very same template and counter ----------


class _Tagged(ChatML):
    """A custom template: ChatML with a tag before each message (equal to any other _Tagged)."""

    def __init__(self, tag: str) -> None:
        self.tag = tag

    def format_message(self, message: Message) -> str:
        return self.tag + super().format_message(message)


def test_a_second_instance_of_a_template_class_is_counted_afresh() -> None:
    # ChatML's user fragment is "<|im_start|>user\n" + c + "<|im_end|>\n" (chat-templates.md §3);
    # split on whitespace, "<|im_start|>user\nhi<|im_end|>\n" is 2 words and with the tag
    # "x y z w " in front 6: x, y, z, w, "<|im_start|>user", "hi<|im_end|>".
    conversation = Conversation([Message.user("msg-1", "hi", timestamp=1)])
    config = ContextConfig(100, 0)
    plain, tagged = _Tagged(""), _Tagged("x y z w ")
    assert plain == tagged  # what made the cache reuse the first instance's counts
    assert conversation.plan_prune(config, template=plain, counter=count_words).kept_tokens == 2
    assert conversation.plan_prune(config, template=tagged, counter=count_words).kept_tokens == 6
    assert conversation.prune(config, template=tagged, counter=count_words).plan.kept_tokens == 6
    assert conversation.plan_prune(config, template=plain, counter=count_words).kept_tokens == 2


def test_the_same_counter_object_is_not_asked_twice() -> None:
    # A bound method is a new object at each access; the cache knows it by object and function.
    class Counter:
        def __init__(self) -> None:
            self.calls = 0

        def count(self, message: Message) -> int:
            self.calls += 1
            return 3

    conversation = Conversation([Message.user("msg-1", "hi", timestamp=1)])
    counter = Counter()
    for _ in range(2):
        assert conversation.plan_prune(ContextConfig(100, 0), count=counter.count).kept_tokens == 3
    assert counter.calls == 1
    other = Counter()
    assert conversation.plan_prune(ContextConfig(100, 0), count=other.count).kept_tokens == 3
    assert other.calls == 1  # another counter object is asked


def test_resolve_and_set_pinned_errors_are_the_librarys_own() -> None:
    from orion_messages import (
        ArgumentTypeError,
        OrionMessagesError,
        PendingResultNotFound,
        ResultAlreadyResolved,
    )

    conversation = Conversation([Message.user("msg-1", "hi", timestamp=1)])
    with pytest.raises(PendingResultNotFound) as missing:
        conversation.resolve("msg-9-call-1", "out")
    assert isinstance(missing.value, (OrionMessagesError, KeyError))
    assert str(missing.value) == 'no pending result for tool call "msg-9-call-1"'  # no quotes around
    conversation.append(Message.pending_result("msg-2", "c1", "tool", timestamp=2))
    conversation.resolve("c1", "done")
    with pytest.raises(ResultAlreadyResolved, match=r'"c1" is already resolved \(at \[1\]\)') as again:
        conversation.resolve("c1", "again")
    assert isinstance(again.value, (OrionMessagesError, ValueError))
    for not_a_bool in ("yes", 1, None):
        with pytest.raises(ArgumentTypeError, match="pinned must be a bool"):
            conversation.set_pinned("msg-1", not_a_bool)  # type: ignore[arg-type]
    assert conversation[0].pinned is False


def test_wrong_argument_types_are_argument_type_errors() -> None:
    from orion_messages import ArgumentTypeError, ContextConfig, get_template, plan_prune

    message = Message.user("msg-1", "hi", timestamp=1)
    for not_messages in (None, "abc", message, 5):
        with pytest.raises(ArgumentTypeError, match="expected an iterable of Message"):
            Conversation(not_messages)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="config must be a ContextConfig"):
        plan_prune([message], {"max_context_tokens": 5})  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="config must be a ContextConfig"):
        Conversation([message]).plan_prune({"max_context_tokens": 5})  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match="template name must be a str"):
        get_template(3)  # type: ignore[arg-type]
    assert plan_prune([message], ContextConfig(100, 0)).kept_tokens > 0


def test_a_save_error_names_the_message_as_save_does(tmp_path: Path) -> None:
    from orion_messages import FormatError, save_jsonl

    messages = [Message.user("msg-1", "a", timestamp=1), Message.user("msg-2", "bad \ud800", timestamp=2)]
    writes: tuple[Callable[[], None], ...] = (
        lambda: Conversation(messages).save(tmp_path / "c.json"),
        lambda: Conversation(messages).save_jsonl(tmp_path / "c.jsonl"),
        lambda: save_jsonl(tmp_path / "d.jsonl", messages),
    )
    for write in writes:
        with pytest.raises(FormatError) as raised:
            write()
        assert raised.value.problems[0].location == "[1].content"
    smuggled = Message.model_construct(**{**messages[0].__dict__, "timestamp": 1.5})
    with pytest.raises(FormatError) as raised:
        Conversation([messages[0], smuggled]).save(tmp_path / "e.json")
    assert raised.value.problems[0].location == "[1].timestamp"
    assert list(tmp_path.iterdir()) == []


def test_an_id_with_a_number_too_long_for_python_is_no_counter() -> None:
    huge = "msg-" + "1" * 4301
    conversation = Conversation(
        [Message.user("msg-1", "a", timestamp=1), Message.user(huge, "b", timestamp=2)]
    )
    assert len(conversation) == 2
    assert conversation.next_id() == "msg-2"
    assert Conversation([Message.user("msg-" + "0" * 5000 + "7", "c", timestamp=3)]).next_id() == "msg-8"


@pytest.mark.parametrize(
    ("message_id", "number"),
    [
        # orion-core's Agent::replace_messages: strip_prefix("msg-") then str::parse::<u64>()
        ("msg-7", 7),
        ("msg-+7", 7),  # Rust's integer parse takes one leading '+'
        ("msg-007", 7),
        ("msg-+0", 0),
        ("msg-18446744073709551615", 2**64 - 1),  # u64::MAX
        ("msg-000018446744073709551615", 2**64 - 1),  # leading zeros never overflow
        ("msg-18446744073709551616", None),  # u64::MAX + 1: the parse fails
        ("msg-99999999999999999999", None),
        ("msg-", None),  # empty digits
        ("msg-+", None),
        ("msg-++7", None),
        ("msg--7", None),  # an unsigned parse takes no '-'
        ("msg- 7", None),
        ("msg-7 ", None),
        ("msg-\u0667", None),  # only ASCII digits (ARABIC-INDIC DIGIT SEVEN is no digit to Rust)
        ("msg-1_000", None),
        ("MSG-7", None),
    ],
)
def test_message_number_reads_as_rust_parses_a_u64(message_id: str, number: int | None) -> None:
    assert message_number(message_id) == number


def test_next_id_counts_a_plus_signed_id_and_ignores_one_past_u64() -> None:
    messages = [
        Message.user("msg-3", "a", timestamp=1),
        Message.user("msg-+9", "b", timestamp=2),
        Message.user("msg-18446744073709551616", "c", timestamp=3),
    ]
    assert Conversation(messages).next_id() == "msg-10"


def test_ids_from_the_data_are_escaped_in_messages_a_terminal_would_print() -> None:
    # An id holding ESC [ 2 J (clear screen) and BEL must not reach a terminal as control codes.
    hostile = "q\x1b[2J\x07"
    with pytest.raises(PendingResultNotFound) as caught:
        Conversation([Message.user("msg-1", "hi", timestamp=1)]).resolve(hostile, "x")
    assert str(caught.value) == 'no pending result for tool call "q\\x1b[2J\\x07"'
    twice = [Message.user(hostile, "a", timestamp=1), Message.user(hostile, "b", timestamp=2)]
    (problem,) = find_problems(twice)
    assert problem.message == 'duplicate message id "q\\x1b[2J\\x07" (first at [0])'


def test_an_id_that_is_not_a_string_is_refused_as_the_store_refuses_it() -> None:
    conversation = Conversation([Message.user("msg-1", "hi", timestamp=1)])
    with pytest.raises(TypeError, match="id must be a str, got an int 5"):
        conversation.set_pinned(5, True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool_call_id must be a str, got an int 5"):
        conversation.resolve(5, "x")  # type: ignore[arg-type]


def test_next_id_past_orion_cores_counter_never_repeats_an_id_after_a_reload() -> None:
    # orion-core's counter is a u64: msg-18446744073709551616 is no counter, so a reload does not
    # count it; the id must still not be handed out again.
    top = Message.user("msg-18446744073709551615", "x", timestamp=1)
    conversation = Conversation([top])
    given = conversation.next_id()
    assert given == "msg-18446744073709551616"
    conversation.append(Message.user(given, "y", timestamp=2))
    reloaded = Conversation(list(conversation))
    assert reloaded.next_id() == "msg-18446744073709551617"
    # README: next_id() is "past every msg-N id", however many follow one another there.
    taken = [f"msg-{2**64 + n}" for n in range(4)]
    assert (
        Conversation([Message.user(i, "x", timestamp=1) for i in [top.id, *taken]]).next_id()
        == f"msg-{2**64 + 4}"
    )


class _IdReadsCounted(Message, frozen=True):
    """A message that counts the reads of its ``id`` (``reads[0]``, shared by all)."""

    reads: ClassVar[list[int]] = [0]

    def __getattribute__(self, name: str) -> Any:
        if name == "id":
            _IdReadsCounted.reads[0] += 1
        return super().__getattribute__(name)


def test_next_id_past_orion_cores_counter_does_not_read_every_id_each_time() -> None:
    # It built a set of every id on each call once an id reached u64::MAX: an agent loop that
    # appends a message per step went quadratic. The conversation's index of ids answers now,
    # built once (one read of each id); later calls read none of the ids already there.
    counted = [
        _IdReadsCounted(id=f"msg-{2**64 + n}", role="user", content="x", timestamp=1) for n in range(499)
    ]
    conversation = Conversation([Message.user("msg-18446744073709551615", "top", timestamp=1), *counted])
    _IdReadsCounted.reads[0] = 0
    assert conversation.next_id() == f"msg-{2**64 + 499}"  # past the 499 taken ids
    assert _IdReadsCounted.reads[0] == 499  # the index built: each id read once
    for step in range(1, 101):
        given = conversation.next_id()
        assert given == f"msg-{2**64 + 499 + step}"
        conversation.append(Message.user(given, "y", timestamp=2))
    assert _IdReadsCounted.reads[0] == 499


def test_a_conversation_is_a_read_only_sequence_of_its_messages() -> None:
    first, second = Message.user("msg-1", "a", timestamp=1), Message.assistant("msg-2", "b", timestamp=2)
    conversation = Conversation([first, second])
    assert isinstance(conversation, collections.abc.Sequence)
    assert not isinstance(conversation, collections.abc.MutableSequence)
    assert conversation[-1:] == [second]
    assert conversation[::-1] == [second, first]
    assert second in conversation
    assert conversation.index(second) == 1
    assert list(reversed(conversation)) == [second, first]


def _call_with_results(*results: Message) -> Conversation:
    call = ToolCall(id="c1", name="build", arguments={})
    return Conversation(
        [
            Message.user("msg-1", "go", timestamp=1),
            Message.assistant("msg-2", "", [call], timestamp=2),
            *results,
        ]
    )


def test_a_placeholder_beside_a_completed_result_is_reported_and_still_filled_in() -> None:
    # resolve fills the first placeholder of the id (ids that calls repeat, call_0 each turn,
    # need it); find_problems says the call is answered twice.
    done = Message.tool_result_message("msg-3", "c1", "build", "ok", timestamp=3)
    waiting = Message.pending_result("msg-4", "c1", "build", timestamp=4)
    conversation = _call_with_results(done, waiting)
    assert [str(problem) for problem in find_problems(conversation.messages)] == [
        '[3].tool_result.tool_call_id: tool call "c1" already has a completed result at [2]'
    ]
    assert conversation.resolve("c1", "again").id == "msg-4"
    with pytest.raises(orion_messages.ResultAlreadyResolved, match=r"already resolved \(at \[3\]\)"):
        conversation.resolve("c1", "a third time")


def test_two_placeholders_for_one_call_are_filled_in_order() -> None:
    first = Message.pending_result("msg-3", "c1", "build", timestamp=3)
    second = Message.pending_result("msg-4", "c1", "build", timestamp=4)
    conversation = _call_with_results(first, second)
    assert [str(problem) for problem in find_problems(conversation.messages)] == [
        '[3].tool_result.tool_call_id: tool call "c1" already has a pending result at [2]'
    ]
    assert [conversation.resolve("c1", text).id for text in ("one", "two")] == ["msg-3", "msg-4"]
    with pytest.raises(orion_messages.ResultAlreadyResolved, match=r"\(at \[3\]\)"):
        conversation.resolve("c1", "three")


def test_resolve_clears_the_placeholder_s_token_count() -> None:
    waiting = Message.pending_result("msg-3", "c1", "build", timestamp=3).with_token_count(1)
    conversation = _call_with_results(waiting)
    resolved = conversation.resolve("c1", "x" * 40_000)
    assert resolved.token_count is None
    # Planned with the default counter, the result now costs its estimate (chars / 4), not 1.
    with pytest.raises(orion_messages.ContextOverflowError):
        conversation.plan_prune(ContextConfig(max_context_tokens=200, max_response_tokens=10))


def test_a_copy_changes_independently_and_hands_out_fresh_ids() -> None:
    import copy

    conversation = _call_with_results()
    assert conversation.next_id() == "msg-3"
    copied = copy.copy(conversation)
    copied.append(Message.user("msg-9", "only in the copy", timestamp=5))
    assert [m.id for m in conversation] == ["msg-1", "msg-2"]
    assert conversation.next_id() == "msg-4"  # still past every id it handed out
    assert copied.next_id() == "msg-10"


def test_a_call_id_used_again_by_a_later_call_is_resolved_for_that_call() -> None:
    # Ids repeated across calls tie each result to the call before it: the earlier call's
    # completed result does not answer the later call, whose placeholder is filled in.
    call = ToolCall(id="c1", name="build", arguments={})
    messages = [
        Message.assistant("msg-1", "", [call], timestamp=1),
        Message.tool_result_message("msg-2", "c1", "build", "first", timestamp=2),
        Message.assistant("msg-3", "", [call], timestamp=3),
        Message.pending_result("msg-4", "c1", "build", timestamp=4),
    ]
    conversation = Conversation(messages)
    assert conversation.resolve("c1", "second").id == "msg-4"
    with pytest.raises(orion_messages.ResultAlreadyResolved, match=r"\(at \[3\]\)"):
        conversation.resolve("c1", "third")


def test_a_copy_of_a_subclass_is_of_the_subclass() -> None:
    import copy

    class Session(Conversation):
        pass

    copied = copy.copy(Session([Message.user("msg-1", "hi", timestamp=1)]))
    assert type(copied) is Session
    assert [m.id for m in copied] == ["msg-1"]


def test_a_pickle_and_a_deep_copy_hold_the_messages_not_the_caches(tmp_path: Path) -> None:
    import copy
    import pickle

    conversation = _call_with_results()
    conversation.next_id()  # msg-3, so the copies go on with msg-4
    # A plan with a counter that cannot be pickled, and a save: both leave caches behind.
    conversation.plan_prune(ContextConfig(max_context_tokens=10_000), count=lambda message: 1)
    conversation.save(tmp_path / "c.json")
    for copied in (pickle.loads(pickle.dumps(conversation)), copy.deepcopy(conversation)):
        assert list(copied) == list(conversation)
        assert copied.next_id() == "msg-4"
        assert copied.plan_prune(ContextConfig(max_context_tokens=10_000)).kept_count == len(conversation)
    assert len(pickle.dumps(conversation)) == len(pickle.dumps(_call_with_results()))


class _Session(Conversation):
    """A host's conversation with attributes of its own, in slots."""

    __slots__ = ("__secret", "owner")

    def __init__(self, messages: list[Message], owner: str) -> None:
        super().__init__(messages)
        self.owner = owner
        self.__secret = owner[::-1]

    def secret(self) -> str:
        return self.__secret


def test_a_pickle_and_a_deep_copy_keep_a_subclasss_slots() -> None:
    import copy
    import pickle

    session = _Session([Message.user("msg-1", "hi", timestamp=1)], "ann")
    for copied in (pickle.loads(pickle.dumps(session)), copy.deepcopy(session)):
        assert type(copied) is _Session
        assert (copied.owner, copied.secret()) == ("ann", "nna")
        assert list(copied) == list(session)
        assert copied.next_id() == "msg-2"


def test_a_lookup_by_id_does_not_grow_the_pickle() -> None:
    # The index of positions by id is a cache: left out of a pickle, as the plans are.
    import pickle

    conversation = Conversation([Message.user(f"msg-{k}", "x", timestamp=k) for k in range(1, 201)])
    size = len(pickle.dumps(conversation))
    assert conversation.set_pinned("no-such-id", True) is False  # builds the index
    assert len(pickle.dumps(conversation)) == size


# A pickle of Conversation([Message.user("msg-1", "hi", timestamp=1)]) after next_id() and a
# plan, made by the code before Conversation had __getstate__ (c1bec84): its state is the whole
# __dict__, caches included.
_PICKLE_BEFORE_GETSTATE = base64.b64decode(
    "gASVWQMAAAAAAACMG29yaW9uX21lc3NhZ2VzLmNvbnZlcnNhdGlvbpSMDENvbnZlcnNhdGlvbpSTlCmBlH2UKIwJX21lc3Nh"
    "Z2VzlF2UjBVvcmlvbl9tZXNzYWdlcy5tb2RlbHOUjAdNZXNzYWdllJOUKYGUfZQojAhfX2RpY3RfX5R9lCiMAmlklIwFbXNn"
    "LTGUjARyb2xllGgHjARSb2xllJOUjAR1c2VylIWUUpSMB2NvbnRlbnSUjAJoaZSMCXRpbWVzdGFtcJRLAYwKdG9vbF9jYWxs"
    "c5QpjAt0b29sX3Jlc3VsdJROjAt0b2tlbl9jb3VudJROjAZwaW5uZWSUiYwSX19weWRhbnRpY19leHRyYV9flH2UdWgdaB6M"
    "F19fcHlkYW50aWNfZmllbGRzX3NldF9flI+UKGgQaBhoDmgWkIwUX19weWRhbnRpY19wcml2YXRlX1+UTnViYYwNX2xhc3Rf"
    "Y291bnRlcpRLAowGX3BsYW5zlIwXb3Jpb25fbWVzc2FnZXMucGxhbm5pbmeUjApfUGxhbkNhY2hllJOUKYGUTn2UKIwIX2Nv"
    "bHVtbnOUfZRoAIwMX1NhbWVPYmplY3RzlJOUKYGUTn2UKIwFX2hhc2iUiggAMazCQEGOBowIX29iamVjdHOUToWUdYaUYmgk"
    "jAdfQ29sdW1ulJOUKYGUTn2UKIwFY29zdHOUXZRLAWGMBWRpcnR5lI+UjAZwcmVmaXiUXZQoSwBLAWV1hpRic4wHX2xheW91"
    "dJSMFm9yaW9uX21lc3NhZ2VzLl9sYXlvdXSUjAdfTGF5b3V0lJOUKYGUTn2UKIwIX2NhbGxlcnOUfZSMD19jYWxsc19pbl9v"
    "cmRlcpROjAVsaW5rc5RdlIwHcGVuZGluZ5RdlGgcXZSMBHNpemWUSwGMBnN0YXJ0c5RdlEsAYYwKdW5hbnN3ZXJlZJR9lHWG"
    "lGJ1hpRijAhfZW5jb2RlZJSMF29yaW9uX21lc3NhZ2VzLl9lbmNvZGVklIwMX0VuY29kZWRGaWxllJOUKYGUTn2UKIwGYnVm"
    "ZmVylIwIYnVpbHRpbnOUjAlieXRlYXJyYXmUk5RDAVuUhZRSlIwHb2Zmc2V0c5RdlIwFc3RhbGWUj5R1hpRijAZfaW5kZXiU"
    "TnViLg=="
)


def test_a_pickle_made_before_getstate_still_loads() -> None:
    import pickle

    conversation = pickle.loads(_PICKLE_BEFORE_GETSTATE)
    assert list(conversation) == [Message.user("msg-1", "hi", timestamp=1)]
    assert conversation.next_id() == "msg-3"  # msg-2 was handed out before the pickle
    assert conversation.plan_prune().kept_count == 1


class ___(Conversation):
    """A class named only with underscores: Python does not mangle its private names."""

    __slots__ = ("__tag",)

    def __init__(self, messages: list[Message], tag: str) -> None:
        super().__init__(messages)
        self.__tag = tag

    def tag(self) -> str:
        return self.__tag


def test_a_copy_keeps_a_subclasss_attributes_and_slots() -> None:
    import copy
    import pickle

    session = _Session([Message.user("msg-1", "hi", timestamp=1)], "ann")
    copied = copy.copy(session)
    assert (copied.owner, copied.secret()) == ("ann", "nna")
    copied.append(Message.user("msg-2", "only in the copy", timestamp=2))
    assert len(session) == 1  # the messages are its own
    plain = ___([Message.user("msg-1", "hi", timestamp=1)], "t")
    for again in (copy.copy(plain), copy.deepcopy(plain), pickle.loads(pickle.dumps(plain))):
        assert again.tag() == "t"


@pytest.mark.parametrize(
    ("call", "error", "text"),
    [
        (
            lambda c: c.set_pinned(5, True),
            ArgumentTypeError,
            "Conversation.set_pinned: id must be a str, got an int 5",
        ),
        (
            lambda c: c.set_pinned("msg-1", 1),
            ArgumentTypeError,
            "Conversation.set_pinned: pinned must be a bool",
        ),
        (
            lambda c: c.set_token_count(5, 1),
            ArgumentTypeError,
            "Conversation.set_token_count: id must be a str",
        ),
        (
            lambda c: c.set_token_count("msg-1", "5"),
            ArgumentTypeError,
            "Conversation.set_token_count: token_count must be an int or None, got a str",
        ),
        (
            lambda c: c.set_token_count("msg-1", -1),
            ArgumentValueError,
            "Conversation.set_token_count: token_count must be an integer from 0 to 4294967295, got -1",
        ),
        (
            lambda c: c.resolve(None, "x"),
            ArgumentTypeError,
            "Conversation.resolve: tool_call_id must be a str",
        ),
        (
            lambda c: c.resolve("k", 5),
            ArgumentTypeError,
            "Conversation.resolve: content must be a str, got an int",
        ),
        (
            lambda c: c.resolve("k", "x", is_error="no"),
            ArgumentTypeError,
            "Conversation.resolve: is_error must be a bool",
        ),
        (
            lambda c: c.plan_prune({}),
            ArgumentTypeError,
            "Conversation.plan_prune: config must be a ContextConfig or None",
        ),
        (
            lambda c: c.prune({}),
            ArgumentTypeError,
            "Conversation.prune: config must be a ContextConfig or None",
        ),
    ],
)
def test_argument_errors_name_the_method(
    call: Callable[[Conversation], object], error: type[Exception], text: str
) -> None:
    conversation = Conversation(_tool_loop())
    with pytest.raises(error) as caught:
        call(conversation)
    assert str(caught.value).startswith(text)
