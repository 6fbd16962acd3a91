"""Arguments of the wrong kind are refused with the library's own errors, naming the argument,
instead of being taken by truthiness, read once, or failing deep inside with a bare TypeError."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    ArgumentTypeError,
    ArgumentValueError,
    Conversation,
    Message,
    ToolCall,
    append_jsonl,
    dumps,
    find_orphans,
    find_problems,
    load,
    loads,
    loads_message,
    parse_event,
    plan_prune,
    prune,
    read_jsonl,
    save,
    save_jsonl,
    split_turns,
    to_chat_template,
)
from orion_messages.ids import FreshIds
from orion_messages.store import parse_store_url

USER = Message.user("msg-1", "hi", timestamp=1)
CALL = Message.assistant("msg-2", "", [ToolCall(id="c", name="t", arguments={})], timestamp=2)


@pytest.mark.parametrize("function", [plan_prune, prune, split_turns, find_orphans], ids=lambda f: f.__name__)
def test_functions_that_read_the_messages_twice_refuse_an_iterator(function: Callable[..., Any]) -> None:
    # An iterator would be read once: find_orphans returned [] for one holding an orphan.
    with pytest.raises(ArgumentTypeError, match=rf"^{function.__name__} takes a list of messages"):
        function(iter([USER, CALL]))
    with pytest.raises(ArgumentTypeError, match=rf"^{function.__name__} takes a list of messages"):
        function("msg-1")


@pytest.mark.parametrize(
    "function", [plan_prune, prune, split_turns, find_orphans, find_problems], ids=lambda f: f.__name__
)
def test_an_item_that_is_not_a_message_is_named(function: Callable[..., Any]) -> None:
    with pytest.raises(ArgumentTypeError) as raised:
        function([USER, {"id": "msg-2", "role": "user"}])
    assert str(raised.value) == f"{function.__name__}: [1]: expected a Message, found a dict"


def _flag_calls(tmp_path: Path) -> dict[str, Callable[[Any], object]]:
    path = tmp_path / "chat.json"
    path.write_bytes(dumps([USER]))
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"")  # an empty log
    return {
        "loads strict": lambda flag: loads(dumps([USER]), strict=flag),
        "loads_message strict": lambda flag: loads_message(
            b'{"id":"a","role":"user","content":"","timestamp":1}', strict=flag
        ),
        "load strict": lambda flag: load(path, strict=flag),
        "Conversation.load strict": lambda flag: Conversation.load(path, strict=flag),
        "read_jsonl repair": lambda flag: read_jsonl(log, repair=flag),
        "append_jsonl fsync": lambda flag: append_jsonl(log, USER, fsync=flag),
        "parse_event strict": lambda flag: parse_event('{"type":"warning","message":"w"}', strict=flag),
        "to_chat_template metadata": lambda flag: to_chat_template([USER], metadata=flag),
    }


@pytest.mark.parametrize(
    "call",
    [
        "loads strict",
        "loads_message strict",
        "load strict",
        "Conversation.load strict",
        "read_jsonl repair",
        "append_jsonl fsync",
        "parse_event strict",
        "to_chat_template metadata",
    ],
)
def test_a_flag_must_be_a_bool(tmp_path: Path, call: str) -> None:
    # "no" would be taken as true; to_chat_template(metadata="no") wrote the metadata.
    run = _flag_calls(tmp_path)[call]
    name = call.split()[-1]
    with pytest.raises(ArgumentTypeError, match=rf"^{name} must be a bool, got str 'no'$"):
        run("no")
    run(False)  # the same call with a bool works


@pytest.mark.parametrize("reader", [loads, loads_message, parse_event])
@pytest.mark.parametrize(
    ("data", "kind"), [(None, "a NoneType"), (5, "an int"), (Path("c.json"), f"a {type(Path()).__name__}")]
)
def test_a_reader_names_input_that_is_not_json_text(
    reader: Callable[..., Any], data: object, kind: str
) -> None:
    # It was a TypeError from a regular expression inside: "expected string or bytes-like object".
    expected = f"{reader.__name__}: expected JSON as bytes or str, got {kind}"
    with pytest.raises(ArgumentTypeError, match=expected):
        reader(data)


@pytest.mark.parametrize(
    ("call", "said"),
    [
        (
            lambda path: save(path, USER),  # type: ignore[arg-type]
            "save takes a list of messages, got a Message (put it in a list: [message])",
        ),
        (
            lambda path: save_jsonl(path, USER),  # type: ignore[arg-type]
            "save_jsonl takes a list of messages, got a Message (append_jsonl adds",
        ),
        (
            lambda path: dumps(USER),  # type: ignore[arg-type]
            "dumps takes a list of messages, got a Message (dumps_message writes one)",
        ),
        (lambda path: find_problems(USER), "find_problems takes a list of messages, got a Message"),  # type: ignore[arg-type]
    ],
    ids=["save", "save_jsonl", "dumps", "find_problems"],
)
def test_one_message_where_a_list_belongs_is_named(
    tmp_path: Path, call: Callable[[Path], object], said: str
) -> None:
    # A Message iterates over its fields: it was "[0]: expected a Message, found a tuple".
    with pytest.raises(ArgumentTypeError, match=re.escape(said)):
        call(tmp_path / "out.json")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("writer", [save, save_jsonl])
def test_a_writer_given_its_arguments_swapped_says_the_path_comes_first(
    tmp_path: Path, writer: Callable[..., None]
) -> None:
    # It was a bare TypeError: "'PosixPath' object is not iterable".
    path = tmp_path / "out.json"
    expected = (
        f"{writer.__name__}(path, messages) takes the path first; got a list and then a {type(path).__name__}"
    )
    with pytest.raises(ArgumentTypeError, match=re.escape(expected)):
        writer([USER], path)
    with pytest.raises(ArgumentTypeError, match=r"takes the path first; got a list and then a str$"):
        writer([USER], str(path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("messages", "kind"), [(5, "an int"), (None, "a NoneType"), ("text", "a str")])
def test_dumps_names_messages_that_are_no_list(messages: object, kind: str) -> None:
    with pytest.raises(ArgumentTypeError, match=f"^dumps takes a list of messages, got {kind}$"):
        dumps(messages)  # type: ignore[arg-type]


def test_a_float_style_that_is_not_one_of_the_two_is_refused() -> None:
    with pytest.raises(ArgumentValueError, match=r"""^float_style must be "zmij" or "ryu", got 'Ryu'$"""):
        dumps([USER], float_style="Ryu")  # type: ignore[arg-type]


def test_a_parsed_store_url_never_shows_its_password() -> None:
    url = parse_store_url("postgresql://alice:s3cret@db/app")
    assert "s3cret" not in repr(url)
    assert "postgresql://alice:***@db/app" in repr(url)
    assert url.database == "postgresql://alice:s3cret@db/app"  # still there to connect with


def test_reprs_count_in_words() -> None:
    assert repr(Conversation([USER])) == "Conversation(1 message)"
    assert repr(Conversation([USER, CALL]).messages) == "<2 messages>"


def test_save_refuses_a_flag_before_writing(tmp_path: Path) -> None:
    with pytest.raises(ArgumentTypeError):
        save(tmp_path / "chat.json", [USER], indent="2")  # type: ignore[arg-type]
    assert not (tmp_path / "chat.json").exists()


# --- ids.FreshIds (internal: the converters' and prune's numbering) ------------------------------


@pytest.mark.parametrize(
    ("taken", "found"), [("msg-5", "a str"), (b"msg-5", "a bytes"), (None, "a NoneType"), (5, "an int")]
)
def test_fresh_ids_refuse_what_is_not_an_iterable_of_ids(taken: Any, found: str) -> None:
    # "msg-5" was taken as its characters {"m", "s", "g", "-", "5"} and gave msg-1; None gave a
    # bare TypeError.
    with pytest.raises(ArgumentTypeError) as raised:
        FreshIds(taken)
    assert str(raised.value) == f"FreshIds: taken must be an iterable of ids (str), got {found}"


def test_fresh_ids_name_themselves_for_an_id_that_is_not_a_str() -> None:
    # It was message_number's error ("message_number: message_id must be a str, got an int").
    with pytest.raises(ArgumentTypeError) as raised:
        FreshIds(iter(["msg-1", 2]))  # type: ignore[arg-type]
    assert str(raised.value) == "FreshIds: taken[1]: expected an id (a str), got an int"
    assert FreshIds(iter(["msg-5", "x"])).next() == "msg-6"
