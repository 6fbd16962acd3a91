"""What the ``from_*`` readers take from rows stored elsewhere, and what they must not drop.

Chat-template dicts read back from a Hugging Face dataset (Arrow gives every message every key,
``null`` where it had none), typed content parts, a key repeated in arguments JSON text, a tool
message whose ``name`` and ``tool_name`` disagree, and the folding of list indexes in
``losses_by_field()`` and ``accept=``. Every expectation is written by hand from
docs/conversions.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    ConversionError,
    Message,
    ToolCall,
    dumps,
    from_chat_template,
    from_openai,
    load,
    loads,
    to_chat_template,
    to_openai,
)
from orion_messages.cli import main

from .conftest import FIXTURES

GOLDENS = FIXTURES / "conversions"

# The four-message OpenAI-style chat as Hugging Face ``datasets`` hands it back: the audit ran
# ``pyarrow.array([chat]).to_pylist()[0]`` on it (JSON copy; pyarrow is not needed here).
ARROW_CHAT: list[dict[str, Any]] = [
    {"role": "user", "content": "Weather in Paris?", "tool_calls": None, "tool_call_id": None, "name": None},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
            }
        ],
        "tool_call_id": None,
        "name": None,
    },
    {"role": "tool", "content": "15C", "tool_calls": None, "tool_call_id": "c1", "name": "get_weather"},
    {"role": "assistant", "content": "It is 15C.", "tool_calls": None, "tool_call_id": None, "name": None},
]

# to_chat_template(tool-loop.orion.json), stored the same way as one dataset row (JSON copy): every
# message gets every key and every "orion" key, and each call's object arguments every argument key.
ARROW_TOOL_LOOP: list[dict[str, Any]] = [
    {
        "role": "system",
        "content": "You are a careful assistant with file tools.",
        "orion": {"id": "msg-1", "timestamp": 1781600000000, "tool_result": None, "pinned": None},
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "tool_name": None,
    },
    {
        "role": "user",
        "content": "Show /etc/hostname and list /srv.",
        "orion": {"id": "msg-2", "timestamp": 1781600001000, "tool_result": None, "pinned": None},
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "tool_name": None,
    },
    {
        "role": "assistant",
        "content": "Reading both.",
        "orion": {"id": "msg-3", "timestamp": 1781600002000, "tool_result": None, "pinned": None},
        "tool_calls": [
            {
                "id": "msg-3-call-1",
                "type": "function",
                "function": {
                    "name": "read_file",
                    "arguments": {"path": "/etc/hostname", "depth": None, "url": None},
                },
            },
            {
                "id": "msg-3-call-2",
                "type": "function",
                "function": {"name": "list_dir", "arguments": {"path": "/srv", "depth": 1, "url": None}},
            },
        ],
        "tool_call_id": None,
        "name": None,
        "tool_name": None,
    },
    {
        "role": "tool",
        "content": "orion-box\n",
        "orion": {"id": "msg-4", "timestamp": 1781600002100, "tool_result": None, "pinned": None},
        "tool_calls": None,
        "tool_call_id": "msg-3-call-1",
        "name": "read_file",
        "tool_name": "read_file",
    },
    {
        "role": "tool",
        "content": "permission denied: /srv",
        "orion": {
            "id": "msg-5",
            "timestamp": 1781600002200,
            "tool_result": {"is_error": True, "pending": None},
            "pinned": None,
        },
        "tool_calls": None,
        "tool_call_id": "msg-3-call-2",
        "name": "list_dir",
        "tool_name": "list_dir",
    },
    {
        "role": "assistant",
        "content": "The host is orion-box; /srv is not readable.",
        "orion": {"id": "msg-6", "timestamp": 1781600003000, "tool_result": None, "pinned": True},
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "tool_name": None,
    },
    {
        "role": "user",
        "content": "Fetch https://example.com.",
        "orion": {"id": "msg-7", "timestamp": 1781600004000, "tool_result": None, "pinned": None},
        "tool_calls": None,
        "tool_call_id": None,
        "name": None,
        "tool_name": None,
    },
    {
        "role": "assistant",
        "content": "",
        "orion": {"id": "msg-8", "timestamp": 1781600005000, "tool_result": None, "pinned": None},
        "tool_calls": [
            {
                "id": "msg-8-call-1",
                "type": "function",
                "function": {
                    "name": "fetch",
                    "arguments": {"path": None, "depth": None, "url": "https://example.com"},
                },
            }
        ],
        "tool_call_id": None,
        "name": None,
        "tool_name": None,
    },
    {
        "role": "tool",
        "content": "",
        "orion": {
            "id": "msg-9",
            "timestamp": 1781600005100,
            "tool_result": {"is_error": None, "pending": True},
            "pinned": None,
        },
        "tool_calls": None,
        "tool_call_id": "msg-8-call-1",
        "name": "fetch",
        "tool_name": "fetch",
    },
]


def _tool_loop() -> list[Message]:
    return load(GOLDENS / "tool-loop.orion.json")


def _arrow_shaped(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` as Arrow stores a column of them: every key of any row in each (``None`` where
    absent), the ``"orion"`` metadata and its ``tool_result`` merged the same way."""

    def padded(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        keys = list(dict.fromkeys(key for item in items for key in item))
        return [{key: item.get(key) for key in keys} for item in items]

    rows = padded(rows)
    metadata = padded([row["orion"] for row in rows])
    results = padded([meta["tool_result"] or {} for meta in metadata])
    for row, meta, result in zip(rows, metadata, results, strict=True):
        if meta["tool_result"] is not None:
            meta["tool_result"] = result
        row["orion"] = meta
    return rows


# Finding 1: a null in the "orion" metadata is "not given", never a value that erases the template's.


def test_a_null_tool_result_in_the_metadata_keeps_the_template_s_result() -> None:
    dicts: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": {}}}],
            "orion": {"id": "msg-1", "timestamp": 0},
        },
        {
            "role": "tool",
            "content": "r",
            "tool_call_id": "c1",
            "name": "f",
            "tool_name": "f",
            "orion": {"id": "msg-2", "timestamp": 0, "tool_result": None, "pinned": None},
        },
    ]
    back = from_chat_template(dicts, strict=True)
    assert back.lossless
    expected = [
        Message.assistant("msg-1", "", [ToolCall(id="c1", name="f", arguments={})], timestamp=0),
        Message.tool_result_message("msg-2", "c1", "f", "r", timestamp=0),
    ]
    assert dumps(back.value) == dumps(expected)


def test_nulls_inside_the_metadata_s_result_and_calls_are_not_given() -> None:
    dicts: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}
            ],
            "orion": {"id": "m1", "timestamp": 5, "tool_calls": [{"id": None, "arguments": None}]},
        },
        {
            "role": "tool",
            "content": "boom",
            "tool_call_id": "c1",
            "name": "f",
            "orion": {"id": "m2", "timestamp": None, "tool_result": {"is_error": True, "pending": None}},
        },
    ]
    back = from_chat_template(dicts, timestamp=9, strict=True)
    expected = loads(
        '[{"id":"m1","role":"assistant","content":"","timestamp":5,'
        '"tool_calls":[{"id":"c1","name":"f","arguments":{"a":1}}]},'
        '{"id":"m2","role":"tool_result","content":"boom","timestamp":9,'
        '"tool_result":{"tool_call_id":"c1","tool_name":"f","content":"boom","is_error":true}}]'
    )
    assert dumps(back.value) == dumps(expected)


def test_to_chat_template_reports_an_unknown_key_holding_null() -> None:
    # It would read back as not given: reported, so strict refuses it.
    history = loads('[{"id":"m1","role":"user","content":"hi","timestamp":0,"x_note":null,"x_kept":1}]')
    there = to_chat_template(history)
    assert [loss.location for loss in there.losses] == ["[0].x_note"]
    assert dumps(from_chat_template(there.value).value) == (
        b'[{"id":"m1","role":"user","content":"hi","timestamp":0,"x_kept":1}]'
    )
    with pytest.raises(ConversionError, match=r"\[0\]\.x_note: strict conversion refused"):
        to_chat_template(history, strict=True)


# Finding 2: null optional keys read as absent; rows from a Hugging Face dataset read back.


def test_from_chat_template_reads_rows_from_a_hugging_face_dataset() -> None:
    back = from_chat_template(ARROW_CHAT, timestamp=0, strict=True)
    expected = [
        Message.user("msg-1", "Weather in Paris?", timestamp=0),
        Message.assistant(
            "msg-2", "", [ToolCall(id="c1", name="get_weather", arguments={"city": "Paris"})], timestamp=0
        ),
        Message.tool_result_message("msg-3", "c1", "get_weather", "15C", timestamp=0),
        Message.assistant("msg-4", "It is 15C.", timestamp=0),
    ]
    assert dumps(back.value) == dumps(expected)
    assert dumps(from_openai(ARROW_CHAT, timestamp=0, strict=True).value) == dumps(expected)


def test_a_null_tool_call_id_on_a_tool_message_is_missing() -> None:
    # docs/conversions.md: a tool message without tool_call_id answers the oldest unanswered call.
    rows = [dict(row) for row in ARROW_CHAT]
    rows[2]["tool_call_id"] = None
    back = from_chat_template(rows, timestamp=0)
    assert back.value[2].tool_result is not None
    assert back.value[2].tool_result.tool_call_id == "c1"
    assert [str(loss) for loss in back.losses] == [
        "[2].tool_call_id: missing: paired with the oldest unanswered call"
    ]


def test_null_role_and_call_name_are_still_refused() -> None:
    rows: list[dict[str, Any]] = [
        {"role": None, "content": "x"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "function": {"name": None, "arguments": {}}}],
        },
    ]
    with pytest.raises(ConversionError) as caught:
        from_chat_template(rows, timestamp=0)
    assert [str(problem) for problem in caught.value.problems] == [
        "[0].role: expected a string, found null",
        "[1].tool_calls[0].function.name: expected a string, found null",
    ]


def test_the_golden_comes_back_from_a_dataset_row_with_string_arguments() -> None:
    original = _tool_loop()
    stored = _arrow_shaped(to_chat_template(original, arguments="string").value)
    assert stored[0]["tool_call_id"] is None  # Arrow's shape
    assert stored[0]["orion"]["pinned"] is None
    back = from_chat_template(stored, strict=True)
    assert dumps(back.value) == dumps(original)


def test_the_golden_read_back_from_pyarrow_s_rows_differs_only_in_padded_arguments() -> None:
    back = from_chat_template(ARROW_TOOL_LOOP, strict=True)
    expected = json.loads((GOLDENS / "tool-loop.orion.json").read_text(encoding="utf-8"))
    # Arrow gives every call's object arguments every argument key (docs: use arguments="string").
    expected[2]["tool_calls"][0]["arguments"] = {"path": "/etc/hostname", "depth": None, "url": None}
    expected[2]["tool_calls"][1]["arguments"] = {"path": "/srv", "depth": 1, "url": None}
    expected[7]["tool_calls"][0]["arguments"] = {"path": None, "depth": None, "url": "https://example.com"}
    assert [message.model_dump(mode="json") for message in back.value] == expected


def test_the_command_line_reads_dataset_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "rows.json"
    source.write_text(json.dumps(ARROW_CHAT), encoding="utf-8")
    out = tmp_path / "out.json"
    args = ["convert", str(source), str(out), "--from", "chat-template", "--timestamp", "0", "--strict"]
    assert main(args) == 0
    assert "nothing lost" in capsys.readouterr().out
    assert [message.id for message in load(out)] == ["msg-1", "msg-2", "msg-3", "msg-4"]


# Finding 3: a key repeated in arguments JSON text is a loss at the arguments.

_REPEATED = '{"amount":1,"amount":1000}'
_REPEATED_WHY = (
    'key "amount" repeated in one object: the last value kept (as serde_json keeps it), the others lost'
)


def _openai_call(arguments: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": arguments}}
    return [
        {"role": "user", "content": "pay"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "paid"},
    ]


def test_from_openai_reports_a_key_repeated_in_arguments() -> None:
    result = from_openai(_openai_call(_REPEATED), timestamp=0)
    assert result.value[1].tool_calls[0].arguments == {"amount": 1000}
    assert [str(loss) for loss in result.losses] == [f"[1].tool_calls[0].function.arguments: {_REPEATED_WHY}"]
    with pytest.raises(ConversionError, match=r"\[1\]\.tool_calls\[0\]\.function\.arguments: strict"):
        from_openai(_openai_call(_REPEATED), timestamp=0, strict=True)
    taken = from_openai(_openai_call(_REPEATED), timestamp=0, strict=True, accept={"arguments"})
    assert [loss.location for loss in taken.losses] == ["[1].tool_calls[0].function.arguments"]


def test_repeated_keys_are_named_with_the_object_they_repeat_in() -> None:
    text = '{"a":{"b":1,"b":2},"c":[{"x":1,"x":1}]}'
    result = from_openai(_openai_call(text), timestamp=0)
    assert result.value[1].tool_calls[0].arguments == {"a": {"b": 2}, "c": [{"x": 1}]}
    assert [loss.reason for loss in result.losses] == [
        'keys "b" (in a), "x" (in c[0]) repeated in one object: the last value kept (as serde_json keeps it), '
        "the others lost"
    ]


def test_from_chat_template_reports_a_repeated_key_with_or_without_the_metadata() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "pay", "arguments": _REPEATED}}
    plain = [{"role": "assistant", "content": "", "tool_calls": [call]}]
    with_metadata = [{**plain[0], "orion": {"id": "msg-1", "timestamp": 0}}]
    for dicts in (plain, with_metadata):
        result = from_chat_template(dicts, timestamp=0)
        assert result.value[0].tool_calls[0].arguments == {"amount": 1000}
        assert [str(loss) for loss in result.losses] == [
            f"[0].tool_calls[0].function.arguments: {_REPEATED_WHY}"
        ]
        with pytest.raises(ConversionError, match="strict conversion refused"):
            from_chat_template(dicts, timestamp=0, strict=True)


@pytest.mark.parametrize("form", ["openai", "chat-template"])
def test_convert_strict_refuses_a_repeated_key_in_arguments(tmp_path: Path, form: str) -> None:
    source = tmp_path / "in.json"
    source.write_text(json.dumps(_openai_call(_REPEATED)), encoding="utf-8")
    out = tmp_path / "out.json"
    args = ["convert", str(source), str(out), "--from", form, "--timestamp", "0", "--strict"]
    assert main(args) == 1
    assert not out.exists()


# Finding 4: name and tool_name that disagree.


def test_a_tool_name_differing_from_name_is_reported() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "get_time", "arguments": {}}}
    tool = {
        "role": "tool",
        "content": "x",
        "tool_call_id": "c1",
        "name": "get_time",
        "tool_name": "get_weather",
    }
    result = from_chat_template(
        [{"role": "assistant", "content": "", "tool_calls": [call]}, tool], timestamp=0
    )
    assert result.value[1].tool_result is not None
    assert result.value[1].tool_result.tool_name == "get_time"
    assert [str(loss) for loss in result.losses] == [
        '[1].tool_name: differs from name "get_time", which gives the tool\'s name: not kept'
    ]


# Finding 5: typed content parts, read as from_openai reads them.


def test_from_chat_template_reads_typed_text_parts() -> None:
    one = from_chat_template([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], timestamp=0)
    assert one.lossless
    assert dumps(one.value) == dumps([Message.user("msg-1", "hi", timestamp=0)])
    parts = [{"type": "text", "text": "What is "}, {"type": "image"}, {"type": "text", "text": "this?"}]
    mixed = from_chat_template([{"role": "user", "content": parts}], timestamp=0)
    assert mixed.value[0].content == "What is this?"
    assert [str(loss) for loss in mixed.losses] == [
        '[0].content[1]: a "image" content part has no place in orion-core\'s text content',
        "[0].content: 2 text parts joined into one text",
    ]


def test_from_chat_template_refuses_content_that_is_neither_text_nor_parts() -> None:
    with pytest.raises(ConversionError) as caught:
        from_chat_template([{"role": "user", "content": 5}], timestamp=0)
    assert [str(problem) for problem in caught.value.problems] == [
        "[0].content: expected a string or an array of content parts, found the number 5"
    ]


# Finding 7: only list indexes fold, never digits inside a quoted key.


def test_digits_inside_a_quoted_key_are_not_folded() -> None:
    history = loads('[{"id":"m","role":"user","content":"x","timestamp":0,"a[0]":1,"a[7]":2,"b[1]":3}]')
    result = to_openai(history)
    assert result.losses_by_field() == [
        ('["a[0]"]', 1),
        ('["a[7]"]', 1),
        ('["b[1]"]', 1),
        ("id", 1),
        ("timestamp", 1),
    ]
    with pytest.raises(ConversionError) as caught:
        to_openai(history, strict=True, accept={"id", "timestamp", '["a[]"]', '["b[1]"]'})
    assert [problem.location for problem in caught.value.problems] == ['[0]["a[0]"]', '[0]["a[7]"]']


def test_list_indexes_around_a_quoted_key_still_fold() -> None:
    history = [
        Message.assistant(
            "m",
            "",
            [ToolCall.model_validate({"id": "c", "name": "f", "arguments": {}, "x[2]": 1})],
            timestamp=0,
        )
    ]
    result = to_openai(history, orphans="keep")
    assert ('tool_calls[]["x[2]"]', 1) in result.losses_by_field()
    accepted = to_openai(
        history, orphans="keep", strict=True, accept={"id", "timestamp", 'tool_calls[]["x[2]"]'}
    )
    assert accepted.value[0]["role"] == "assistant"


def test_a_string_with_a_repeated_key_comes_back_whole_through_the_metadata() -> None:
    # orion-core kept the arguments as this very string: the metadata gives it back as it was.
    call = ToolCall(id="c1", name="pay", arguments=_REPEATED)
    history = [Message.assistant("msg-1", "", [call], timestamp=0)]
    back = from_chat_template(to_chat_template(history).value, strict=True)
    assert back.losses == ()
    assert dumps(back.value) == dumps(history)


def test_a_key_repeated_three_times_is_named_once_and_many_are_counted() -> None:
    result = from_openai(_openai_call('{"a":1,"a":2,"a":3}'), timestamp=0)
    assert [loss.reason for loss in result.losses] == [
        'key "a" repeated in one object: the last value kept (as serde_json keeps it), the others lost'
    ]
    many = "{" + ",".join(f'"k{n}":1,"k{n}":2' for n in range(8)) + "}"
    (loss,) = from_openai(_openai_call(many), timestamp=0).losses
    assert loss.reason.startswith('keys "k0", "k1", "k2", "k3", "k4" and 3 more repeated in one object')


class _ArrayLike:
    """A value that, as a numpy array of several items, refuses to say whether it equals None."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("The truth value of an array with more than one element is ambiguous")

    __hash__ = None  # type: ignore[assignment]


def test_an_array_like_value_is_refused_at_its_place_not_compared_with_null() -> None:
    rows = [{"role": "assistant", "content": "", "tool_calls": _ArrayLike()}]
    with pytest.raises(ConversionError) as raised:
        from_chat_template(rows, timestamp=0)
    assert [problem.location for problem in raised.value.problems] == ["[0].tool_calls"]


def test_keys_only_a_tool_message_uses_are_reported_on_other_messages() -> None:
    rows = [
        {"role": "user", "content": "hi", "name": "alice"},
        {"role": "assistant", "content": "ok", "tool_call_id": "c1", "tool_name": "search"},
    ]
    result = from_chat_template(rows, timestamp=0)
    assert [(loss.index, loss.field) for loss in result.losses] == [
        (0, "name"),
        (1, "tool_call_id"),
        (1, "tool_name"),
    ]
    assert result.losses[0].reason == "orion-core has no place for the participant name"
    with pytest.raises(ConversionError, match="strict conversion refused"):
        from_chat_template(rows, timestamp=0, strict=True)
