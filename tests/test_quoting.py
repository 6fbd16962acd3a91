"""Text from the data in error, warning, loss, orphan and problem texts: escaped and cut, never raw.

Each entry point gets a hostile value (ESC, CR/LF, U+202E, a lone surrogate) and a value of a
million characters; its text must be printable, short and printable by ``print`` as UTF-8.
"""

from __future__ import annotations

import io
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

from orion_messages import (
    ContextConfig,
    Conversation,
    ConversionError,
    FormatError,
    Message,
    NotARegularFileError,
    OrionMessagesError,
    Problem,
    ToolCall,
    TornLineWarning,
    UnknownKeyWarning,
    find_orphans,
    find_problems,
    from_anthropic,
    from_chat_template,
    from_openai,
    get_template,
    load,
    loads,
    open_store,
    parse_event,
    parse_store_url,
    read_jsonl,
    tiktoken_counter,
    to_anthropic,
    to_openai,
    to_orion_backend,
)
from orion_messages._text import location, quoted, with_article

HOSTILE = "\x1b[31mRED\x1b[0m\u202eRLO\r\nforged\ud800 line"
VALID_HOSTILE = HOSTILE.replace("\ud800", "")  # a JSON reader refuses a lone surrogate before the key
BIG = "A" * 1_000_000
SHORT = 600  # a message quoting one value cut to 40 characters is well under this
PLACE = 4096 + 600  # a file name or URL is cut to 4,096 characters


def _text_of(action: Callable[[], object]) -> str:
    """The text of what ``action`` raises, or of every warning and loss it gives."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = action()
        except OrionMessagesError as error:
            return str(error)
    if isinstance(result, (Exception, Warning)):  # an error or warning made from the value
        return str(result)
    texts = [str(w.message) for w in caught]
    texts += [str(item) for item in getattr(result, "losses", ())]
    if isinstance(result, list):
        texts += [str(item) for item in result]  # find_orphans, find_problems
    assert texts, "the entry point said nothing"
    return "\n".join(texts)


def _message(**extra: object) -> dict[str, object]:
    return {"id": "m", "role": "user", "content": "x", "timestamp": 1, **extra}


def _pending(content: str) -> list[Message]:
    return [
        Message.user("msg-0", "q", timestamp=0),
        Message.assistant("msg-1", "", [ToolCall(id="c", name="t", arguments={})], timestamp=1),
        Message.pending_result("msg-2", "c", "t", content, timestamp=2),
    ]


def _twice(call_id: str) -> list[Message]:
    messages = [Message.user("msg-0", "q", timestamp=0)]
    for n in (1, 3):
        messages += [
            Message.assistant(f"msg-{n}", "", [ToolCall(id=call_id, name="t", arguments={})], timestamp=n),
            Message.tool_result_message(f"msg-{n + 1}", call_id, "t", "ok", timestamp=n + 1),
        ]
    return messages


def _orphan(call_id: str) -> list[Message]:
    return [Message.tool_result_message("msg-2", call_id, "t", "x", timestamp=2)]


def _in_store(conversation_id: str) -> object:
    with open_store("sqlite://") as store:
        return store.load(conversation_id)


def _format_error(source: str) -> FormatError:
    return FormatError([Problem("[0]", "expected an object, found the number 1")], source=source)


# Each entry point, given the value from the data (``value``).
ENTRY_POINTS: dict[str, Callable[[str], object]] = {
    "from_openai strict key": lambda v: from_openai([{"role": "user", "content": "x", v: 1}], strict=True),
    "from_chat_template strict key": lambda v: from_chat_template(
        [{"role": "user", "content": "x", v: 1}], strict=True
    ),
    "from_anthropic strict key": lambda v: from_anthropic(
        [{"role": "user", "content": [{"type": "text", "text": "x", v: 1}]}], strict=True
    ),
    "parse_event unknown key": lambda v: parse_event(
        '{"type":"message_end","message":' + json.dumps(_message())[:-1] + f",{json.dumps(v)}:1e400}}}}"
    ),
    "tiktoken_counter name": lambda v: tiktoken_counter(v),
    "parse_store_url": lambda v: parse_store_url(f"sqlite:/{v}"),
    "resolve id": lambda v: Conversation().resolve(v, "x"),
    "store conversation id": _in_store,
    "to_openai orphans=": lambda v: to_openai([], orphans=v),  # type: ignore[arg-type]
    "ContextConfig strategy=": lambda v: ContextConfig(strategy=v),  # type: ignore[arg-type]
    "find_orphans id": lambda v: find_orphans(_orphan(v)),
    "to_openai orphan id": lambda v: to_openai(_orphan(v)),
    "find_problems id": lambda v: find_problems(_orphan(v)),
    "to_anthropic renamed id": lambda v: to_anthropic(_twice(v)),
    "to_orion_backend id": lambda v: to_orion_backend(_twice(v)),
    "to_openai pending content": lambda v: to_openai(_pending(v)),
    "to_anthropic pending content": lambda v: to_anthropic(_pending(v)),
    "loads strict duplicate id": lambda v: loads(json.dumps([_message(id=v), _message(id=v)]), strict=True),
    "loads unknown key": lambda v: loads(json.dumps([_message()])[:-2] + f",{json.dumps(v)}:1e400}}]"),
    "loads role": lambda v: loads(json.dumps([_message(role=v)])),
    "get_template name": lambda v: get_template(v),
    "FormatError source": lambda v: _format_error(v),
    "TornLineWarning path": lambda v: TornLineWarning(v, 2, 10, 3, repaired=False),
    "UnknownKeyWarning key and source": lambda v: UnknownKeyWarning("[0]", v, "why", source=v, line=3),
    "NotARegularFileError path": lambda v: NotARegularFileError(v, "a FIFO"),
}
PLACES = {"parse_store_url", "FormatError source", "TornLineWarning path", "UnknownKeyWarning key and source"}
PLACES |= {"NotARegularFileError path", "tiktoken_counter name"}  # tiktoken's message quotes the name


def _checked(name: str, text: str, bound: int) -> None:
    assert text.isprintable(), f"{name}: {text[:300]!r}"
    assert len(text) < bound, f"{name}: {len(text)} characters"
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")  # strict: a lone surrogate would raise
    print(text, file=out)
    out.flush()


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
@pytest.mark.parametrize("value", [HOSTILE, VALID_HOSTILE, BIG], ids=["hostile", "valid-hostile", "big"])
def test_text_from_the_data_is_escaped_and_cut(name: str, value: str) -> None:
    entry = ENTRY_POINTS[name]
    text = _text_of(lambda: entry(value))
    for line in text.split("\n"):  # several losses or warnings: one line each
        _checked(name, line, PLACE if name in PLACES else SHORT)


def _hostile_file_name(folder: Path, suffix: str) -> Path:
    # \udcff: a byte of a file name that is not UTF-8, as Python holds it (a lone surrogate)
    return folder / f"\x1b[2J\u202eRLO\r\nforged\udcff{suffix}"


def test_a_file_name_from_the_disk_is_escaped_in_load_read_jsonl_and_a_folder(tmp_path: Path) -> None:
    name = _hostile_file_name(tmp_path, ".json")
    name.write_text("[1]")
    log = _hostile_file_name(tmp_path, ".jsonl")
    log.write_text('{"id":"a","role":"user","content":"x","timestamp":1}\n{"id":')
    folder = _hostile_file_name(tmp_path, "")
    os.mkdir(folder)
    with pytest.raises(FormatError) as caught:
        load(name)
    _checked("load", str(caught.value), PLACE)
    with pytest.warns(TornLineWarning) as warned:
        read_jsonl(log)
    _checked("read_jsonl", str(warned[0].message), PLACE)
    with pytest.raises(NotARegularFileError) as refused:
        load(folder)
    _checked("load a folder", str(refused.value), PLACE)
    assert caught.value.source == str(name)  # the full name stays in the attributes
    assert refused.value.filename == str(folder)


# Texts written by hand.


def test_quoted_escapes_quotes_backslashes_and_control_characters_and_cuts_at_40() -> None:
    assert quoted("msg-1") == '"msg-1"'
    assert quoted('say "hi" a\\b') == '"say \\"hi\\" a\\\\b"'
    assert quoted("\x1b[2J\u202e\ud800") == '"\\x1b[2J\\u202e\\ud800"'
    assert quoted("A" * 40) == '"' + "A" * 40 + '"'
    assert quoted("A" * 41) == '"' + "A" * 37 + '..."'
    assert quoted(5) == "5"
    assert quoted(None) == "None"


def test_location_quotes_a_key_that_is_not_a_plain_name() -> None:
    assert location((3, "tool_result", "is_error")) == "[3].tool_result.is_error"
    assert location(("x_extra",)) == "x_extra"
    assert location((0, "a.b")) == '[0]["a.b"]'
    assert location((0, "a", "b")) == "[0].a.b"
    assert location((0, "\x1b[2J\r\n")) == '[0]["\\x1b[2J\\r\\n"]'
    assert location(("",)) == '[""]'
    assert location((0, "k" * 41)) == "[0]." + "k" * 41  # a plain name, however long
    assert location((0, "k." * 300)) == '[0]["' + "k." * 300 + '"]'  # never cut: it names one key


def test_two_long_keys_are_two_losses_and_accept_names_one() -> None:
    # Cut to their first 37 characters, both keys had one Loss.field, and accepting one
    # accepted the other.
    first, second = (
        "x_custom_metadata_from_the_host_app_v1_first",
        "x_custom_metadata_from_the_host_app_v1_second",
    )
    request = [{"role": "user", "content": "x", first: 1, second: 2}]
    fields = [
        loss.field for loss in from_openai(request).losses if loss.reason.startswith("orion-core has no")
    ]
    assert fields == [first, second]
    with pytest.raises(ConversionError) as caught:
        from_openai(request, strict=True, accept={first})
    assert [problem.location for problem in caught.value.problems] == [f"[0].{second}"]


def test_a_message_cuts_a_location_no_writer_makes() -> None:
    problem = Problem(location((0, "k." * 300)), "unknown")
    assert str(problem) == '[0]["' + ("k." * 300)[:192] + "...: unknown"  # 200 characters of the location


def test_a_strict_conversion_refusing_a_hostile_key_says_it_escaped() -> None:
    with pytest.raises(ConversionError) as caught:
        from_openai([{"role": "user", "content": "x", "\x1b[2J\ud800": 1}], strict=True)
    assert str(caught.value) == (
        '[0]["\\x1b[2J\\ud800"]: strict conversion refused: orion-core has no place for this key'
    )


def test_accept_names_a_quoted_key_as_its_location_shows_it() -> None:
    request = [{"role": "user", "content": [{"type": "text", "text": "x", "a.b": 1}]}]
    with pytest.raises(ConversionError, match=r'\[0\]\.content\[0\]\["a\.b"\]: strict'):
        from_anthropic(request, strict=True)
    assert from_anthropic(request, strict=True, accept={'["a.b"]'}).losses[0].field == 'content[0]["a.b"]'
    assert from_openai([{"role": "user", "content": "x", "a.b": 1}], strict=True, accept={'["a.b"]'}).value


def test_an_orphan_and_a_renamed_id_are_escaped() -> None:
    (orphan,) = find_orphans(_orphan("c\x1b[2J\x07"))
    assert str(orphan) == '[0].tool_result: result for "c\\x1b[2J\\x07" answers no earlier tool call'
    assert orphan.call_id == "c\x1b[2J\x07"  # the full id stays in the attribute
    losses = [str(loss) for loss in to_anthropic(_twice("i\r")).losses if "earlier call" in str(loss)]
    assert losses == [
        '[3].tool_calls[0].id: "i\\r" is an earlier call\'s id too (Anthropic requires unique tool_use '
        'ids): sent as "i\\r-2"'
    ]


def test_a_pending_result_s_content_is_cut_in_the_loss() -> None:
    (loss,) = [loss for loss in to_openai(_pending("partial " * 100_000)).losses if "pending" in loss.field]
    assert str(loss) == (
        "[2].tool_result.pending: a pending placeholder is sent as a completed result with its "
        'content "partial partial partial partial parti..."'  # 37 characters and ...
    )


def test_file_names_urls_and_foreign_messages_are_escaped() -> None:
    warning = TornLineWarning("log\x1b]0;pwned\x07.jsonl", 2, 10, 3, repaired=False)
    assert str(warning) == (
        "log\\x1b]0;pwned\\x07.jsonl:2: skipping a torn last line (3 bytes at byte offset 10), "
        "as a crash mid-append leaves it"
    )
    assert str(NotARegularFileError("a\rb", "a FIFO")) == "a\\rb: a FIFO, not a regular file"
    with pytest.raises(OrionMessagesError) as caught:
        parse_store_url("sqlite:/\x1b[2J")
    assert str(caught.value) == (
        "sqlite:/\\x1b[2J: expected sqlite:///PATH, sqlite:////ABSOLUTE/PATH or sqlite:// (in memory)"
    )
    with pytest.raises(OrionMessagesError) as refused:
        tiktoken_counter("\x1b[2J")
    assert str(refused.value).startswith(
        'tiktoken_counter: cannot load the encoding "\\x1b[2J": Unknown encoding \\x1b[2J.'
    )


def test_a_loss_cuts_a_location_no_writer_makes() -> None:
    from orion_messages import Loss

    loss = Loss(index=0, field=location(("k." * 300,)), reason="unknown")
    assert str(loss) == '[0]["' + ("k." * 300)[:192] + "...: unknown"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("int", "an int"),
        ("dict", "a dict"),
        ("ErrorEvent", "an ErrorEvent"),
        ("UnknownKeyWarning", "an UnknownKeyWarning"),
        # A "u" read "you" takes "a" ("an uint64", "an UUID" were written).
        ("uint64", "a uint64"),
        ("UUID", "a UUID"),
        ("UserDict", "a UserDict"),
        ("UnicodeDecodeError", "a UnicodeDecodeError"),
    ],
)
def test_a_type_name_takes_the_article_it_sounds_for(name: str, said: str) -> None:
    assert with_article(name) == said
