"""Values serde skips unread but pydantic-core's parser cannot read (issue 14: "whatever orion-core
loads, we load").

serde skips an unknown key's value without deserializing it: its lone surrogate escapes
(``"\\ud800"``, only four hex digits are checked) and its numbers of any length load in
orion-core. jiter refuses both wherever they are. Each verdict and column below was measured by
running orion-core's ``Message`` and ``AgentEvent`` through ``serde_json::from_str`` (the probe
of the earlier audits); the columns are counted by hand from each document's own text.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_core import from_json

from orion_messages import (
    FormatError,
    Problem,
    UnknownKeyWarning,
    dumps_message,
    loads,
    loads_message,
    parse_event,
    read_jsonl,
)
from orion_messages._json_rules import PARSER_INT_DIGITS_MAX, unreadable_spans

HEAD = '{"id":"m","role":"user","content":"hi","timestamp":1'
"""A message's known fields; the cases add what follows them."""

BIG = "1" + "0" * 5000
"""A 5001-digit integer: serde skips it in an unknown key, refuses it in a known one."""

# Unknown values orion-core's serde loads (measured): (what follows HEAD, location, key, reason).
SKIPPED_BY_SERDE = {
    "lone-high": (r',"x":"\ud800"', "", "x", r"lone surrogate escape (\ud800)"),
    "lone-low-then-text": (r',"x":"\udc00x"', "", "x", r"lone surrogate escape (\udc00)"),
    "high-then-letter": (r',"x":"\ud800\u0041"', "", "x", r"lone surrogate escape (\ud800)"),
    "nested-in-an-array": (r',"x":{"a":[1,"\udbff"]}', "", "x", r"lone surrogate escape (\udbff)"),
    "an-object-key": (r',"x":{"\ud800":1}', "", "x", r"object key with a lone surrogate escape (\ud800)"),
    "long-integer": (f',"x":{BIG}', "", "x", "a number with 5001 digits before its decimal point"),
    "long-negative": (f',"x":[-{BIG}]', "", "x", "a number with 5001 digits before its decimal point"),
    "long-with-fraction": (f',"x":{BIG}.5e3', "", "x", "a number with 5001 digits before its decimal point"),
    "in-a-tool-call": (
        r',"tool_calls":[{"id":"c","name":"n","arguments":{},"y":"\ud800"}]',
        "tool_calls[0]",
        "y",
        r"lone surrogate escape (\ud800)",
    ),
    "in-a-tool-result": (
        f',"tool_result":{{"tool_call_id":"c","tool_name":"n","content":"x","is_error":false,"y":{BIG}}}',
        "tool_result",
        "y",
        "a number with 5001 digits",
    ),
}


@pytest.mark.parametrize("case", SKIPPED_BY_SERDE, ids=list(SKIPPED_BY_SERDE))
def test_an_unreadable_unknown_value_loads_without_its_key_and_a_warning_names_it(case: str) -> None:
    tail, where, key, reason = SKIPPED_BY_SERDE[case]
    document = f'[{HEAD}{tail},"kept":true}}]'
    with pytest.warns(UnknownKeyWarning) as caught:
        (message,) = loads(document)
    warned = [w.message for w in caught if isinstance(w.message, UnknownKeyWarning)]
    assert [(w.location, w.key) for w in warned] == [(f"[0].{where}" if where else "[0]", key)]
    assert reason in warned[0].reason
    assert message.__pydantic_extra__ == {"kept": True}
    holder = message if not where else message.tool_calls[0] if "tool_calls" in where else message.tool_result
    assert key not in (holder.__pydantic_extra__ or {})  # type: ignore[union-attr]


def test_every_unreadable_unknown_key_is_named_and_the_others_are_kept() -> None:
    document = f'{HEAD},"a":"\\ud800","b":[{BIG}],"c":3,"d":"\\ud83d\\ude00"}}'
    with pytest.warns(UnknownKeyWarning) as caught:
        message = loads_message(document)
    assert [w.message.key for w in caught if isinstance(w.message, UnknownKeyWarning)] == ["a", "b"]
    assert message.__pydantic_extra__ == {"c": 3, "d": "\U0001f600"}  # a pair is one character
    assert dumps_message(message).endswith(b'"c":3,"d":"\xf0\x9f\x98\x80"}')


def test_a_log_with_an_unreadable_unknown_value_loads(tmp_path: Any) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text(f'{HEAD},"x":"\\ud800"}}\n{HEAD.replace("m", "n", 1)},"y":{BIG}}}\n')
    with pytest.warns(UnknownKeyWarning) as caught:
        messages = read_jsonl(path)
    assert [m.id for m in messages] == ["m", "n"]
    assert [w.message.key for w in caught if isinstance(w.message, UnknownKeyWarning)] == ["x", "y"]


def test_a_log_read_record_by_record_names_each_left_out_key_once(tmp_path: Any) -> None:
    # The third record breaks the one-array fast path, so the records are read again one by one:
    # each key is still named once, at its own line.
    path = tmp_path / "log.jsonl"
    second = HEAD.replace("m", "n", 1)
    path.write_text(f'{HEAD},"x":"\\ud800"}}\n{second},"y":{BIG}}}\n{HEAD[:-1]}"one"}}\n')
    with pytest.warns(UnknownKeyWarning) as caught, pytest.raises(FormatError) as refused:
        read_jsonl(path)
    assert [(w.message.key, w.message.line) for w in caught if isinstance(w.message, UnknownKeyWarning)] == [
        ("x", 1),
        ("y", 2),
    ]
    assert [p.line for p in refused.value.problems] == [3]


# Where serde reads the value itself, it refuses it; the columns serde_json printed for these
# very documents (a number is reported at its last character).
REFUSED_BY_SERDE = {
    # A message's own key: serde reads the field name as a string.
    "a-message-key": (HEAD + r',"\ud800":1}', 61),
    # arguments is a serde_json::Value: read.
    "in-arguments": (HEAD + r',"tool_calls":[{"id":"c","name":"n","arguments":{"a":"\ud800"}}]}', 113),
    "long-timestamp": (HEAD[:-1] + BIG + "}", 5052),
    "long-timestamp-with-fraction": (HEAD[:-1] + BIG + ".5}", 5054),
    "long-argument": (HEAD + ',"tool_calls":[{"id":"c","name":"n","arguments":{"a":' + BIG + "}}]}", 5106),
}


@pytest.mark.parametrize("case", REFUSED_BY_SERDE, ids=list(REFUSED_BY_SERDE))
def test_an_unreadable_value_in_a_known_place_is_refused_where_serde_refuses_it(case: str) -> None:
    document, column = REFUSED_BY_SERDE[case]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is dropped: the document is refused
        with pytest.raises(FormatError) as caught:
            loads_message(document)
    (problem,) = caught.value.problems
    assert (problem.line, problem.column) == (1, column)
    assert problem.message.startswith("malformed JSON")


def test_an_unreadable_value_serde_skips_is_passed_over_to_the_one_it_refuses() -> None:
    # serde skips x0 and stops in content, at column 64 (measured); then in arguments, at the
    # last digit of the number (column 10109, measured), not in the unknown x0 before it.
    for document, column in (
        (r'{"id":"m","x0":{"k1":"a\udc00"},"timestamp":1,"content":"\ud800","role":"assistant"}', 64),
        (
            f'{{"id":"m","x0":{BIG},"role":"user","content":"hi","timestamp":1,'
            f'"tool_calls":[{{"id":"c","name":"n","arguments":[{BIG}]}}]}}',
            10109,
        ),
    ):
        with pytest.raises(FormatError) as caught:
            loads_message(document)
        assert [(p.line, p.column) for p in caught.value.problems] == [(1, column)]


def test_an_object_with_an_unreadable_key_is_left_out_whole_with_what_it_holds() -> None:
    with pytest.warns(UnknownKeyWarning) as caught:
        message = loads_message(f'{HEAD},"x":{{"a":"\\ud800","\\udc00":[1]}},"y":2}}')
    assert [w.message.key for w in caught if isinstance(w.message, UnknownKeyWarning)] == ["x"]
    assert message.__pydantic_extra__ == {"y": 2}
    spans = unreadable_spans(f'{HEAD},"x":{{"a":"\\ud800","\\udc00":[1]}},"y":2}}')
    assert [(s.start, s.end, s.token) for s in spans] == [
        (len(HEAD) + 5, len(HEAD) + 32, (len(HEAD) + 19, len(HEAD) + 27))  # x's object; its second key
    ]


def test_a_wrong_known_field_beside_an_unreadable_unknown_value_is_reported_as_itself() -> None:
    # serde skips the unknown value and stops on the known field.
    with pytest.raises(FormatError) as caught:
        loads_message(f'{HEAD},"x":"\\ud800","pinned":"yes"}}')
    assert [p.location for p in caught.value.problems] == ["pinned"]


def test_an_event_is_read_whole_so_its_unreadable_unknown_value_refuses_it() -> None:
    # Measured: serde refuses both, at column 91 and at the number's last character (5084).
    event = '{"type":"message_delta","delta":"hi","tokens_generated":0,"tokens_per_sec":0.0,"x":%s}'
    for value, column in (('"\\ud800"', 91), (BIG, 5084)):
        with pytest.raises(FormatError) as caught:
            parse_event(event % value)
        (problem,) = caught.value.problems
        assert (problem.line, problem.column) == (1, column)


def test_strict_still_finds_a_repeated_key_beside_a_long_number() -> None:
    with pytest.warns(UnknownKeyWarning), pytest.raises(FormatError) as caught:
        loads(f'[{HEAD},"x":{BIG},"content":"again"}}]', strict=True)
    assert caught.value.problems == [Problem("[0]", 'duplicate key "content" in one object')]


# --- The scanner agrees with the two parsers it stands between. --------------------------------

ESCAPES = st.sampled_from([r"\ud800", r"\udbff", r"\udc00", r"\udfff", r"\u0041", r"\\", r"\n", "a", "é"])


@given(st.lists(ESCAPES, max_size=6))
def test_a_string_is_found_exactly_when_it_holds_an_unpaired_surrogate(pieces: list[str]) -> None:
    string = '"' + "".join(pieces) + '"'
    # The standard library reads lone surrogates into a str and joins pairs.
    lone = any(0xD800 <= ord(char) <= 0xDFFF for char in json.loads(string))
    assert bool(unreadable_spans(f"[{string}]")) is lone
    assert bool(unreadable_spans(f"[{string}]".encode())) is lone


@given(st.integers(PARSER_INT_DIGITS_MAX - 2, PARSER_INT_DIGITS_MAX + 2), st.sampled_from(["", "-", "x"]))
def test_a_number_is_found_exactly_when_jiter_refuses_it(digits: int, form: str) -> None:
    number = "1" * digits
    text = f"-{number}" if form == "-" else f"{number}.5e1" if form == "x" else number
    try:
        from_json(text)
    except ValueError:
        refused = True
    else:
        refused = False
    assert [(s.start, s.end) for s in unreadable_spans(f"[{text}]")] == (
        [(1, 1 + len(text))] if refused else []
    )


def test_digits_in_strings_fractions_and_exponents_are_not_integer_parts() -> None:
    long = "1" * (PARSER_INT_DIGITS_MAX + 1)
    for document in (f'["{long}"]', f"[1.{long}]", f"[1e{long}]", f"[1e-{long}]", f'{{"{long}":1}}'):
        assert unreadable_spans(document) == []
        from_json(document)  # and jiter reads each one


# Characters no JSON token starts or ends with: the scanner's lookahead skips runs of them.
FILLER = st.text(st.sampled_from(["\x00", "a", "é", "\x7f", "\U0001f600"]), max_size=40)
JSON_PIECES = st.sampled_from(
    ['"', "[", "]", "{", "}", "-", "1" * (PARSER_INT_DIGITS_MAX + 1), r'"\ud800"', "0"]
)


@given(st.lists(st.tuples(FILLER, JSON_PIECES), max_size=12))
def test_runs_of_other_characters_between_tokens_only_shift_the_spans(pieces: list[tuple[str, str]]) -> None:
    """The lookahead that makes long runs of other characters fast finds the same spans."""
    spans = unreadable_spans("".join(filler + piece for filler, piece in pieces))
    # The same pieces with each run of filler cut to one character: the spans only shift.
    shifted = {}
    position = short = 0
    for filler, piece in pieces:
        position, short = position + len(filler), short + min(len(filler), 1)
        shifted[position] = short
        position, short = position + len(piece), short + len(piece)
    plain = unreadable_spans("".join(filler[:1] + piece for filler, piece in pieces))
    assert [(shifted.get(span.start), span.why) for span in spans] == [(s.start, s.why) for s in plain]
