"""Text the command line prints: data from files never reaches a terminal raw."""

from __future__ import annotations

import errno
import json
import re
import select
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ._text import printable
from .errors import Problem

__all__ = [
    "MAX_PROBLEMS_ON_STDERR",
    "data_for_terminal",
    "display_width",
    "json_report",
    "one_line",
    "out",
    "padded",
    "plural",
    "print_stdout",
    "printable",
    "problem_line",
    "problem_lines",
    "whole_number",
    "write_stdout",
    "writing_stdout",
]

MAX_PROBLEMS_ON_STDERR = 20
"""How many problems a fatal error lists on stderr; the rest are counted on one more line."""

_ONE_LINE_MAX = 160


def json_report(value: Any) -> str:
    """A report as JSON text (indented): every character ``printable`` escapes is written as a
    ``\\uXXXX`` escape (a surrogate pair past U+FFFF), so no DEL, C1 control, line separator
    (U+2028, U+2029), bidirectional override or other invisible character taken from the data
    reaches a terminal raw; the JSON is the same data. Other non-ASCII text stays as it is. A
    lone surrogate (a byte of a file name that is not UTF-8) has no valid JSON escape: it is
    written as the six characters the text output shows for it (``\\udcff``)."""
    return _NOT_PLAIN.sub(_json_escape, json.dumps(value, indent=2, ensure_ascii=False))


# Candidates: anything but printable ASCII and the newlines of the indentation (json.dumps
# escapes a newline inside a string, so every raw one is between values).
_NOT_PLAIN = re.compile(r"[^\x20-\x7e\n]")


def _json_escape(match: re.Match[str]) -> str:
    char = match[0]
    if char.isprintable():
        return char
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        # A lone surrogate (a file name's undecodable byte, held as U+DC80-U+DCFF) has no valid
        # JSON escape: strict readers (serde_json, orjson) refuse one. Written as the text that
        # the text output shows for it, a backslash and ``uXXXX``.
        return f"\\\\u{code:04x}"
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def data_for_terminal(data: bytes) -> bytes:
    """JSON data (UTF-8) as it is shown on a terminal: every character text output escapes (DEL,
    the C1 controls, U+2028, bidirectional overrides...) written as its ``\\uXXXX`` escape.

    The JSON holds the same values; only its bytes differ from orion-core's, which leaves these
    characters raw. Raw C0 controls in JSON are only the whitespace between values (strings
    escape them), so those stay.
    """
    return _TERMINAL_UNSAFE.sub(_json_escape, data.decode("utf-8")).encode("utf-8")


_TERMINAL_UNSAFE = re.compile(r"[^\x20-\x7e\t\n\r]")


_WHOLE_NUMBER = re.compile(r"[+-]?[0-9]+")


def whole_number(text: str) -> int:
    """An option's whole number as typed: ASCII digits, after an optional sign. ``int`` also
    reads other scripts' digits (``١٢٣``), underscores and surrounding spaces, which a command
    line should not take for a number silently.

    Raises:
        ValueError: ``text`` is not such a number (or too long for ``int``).
    """
    if _WHOLE_NUMBER.fullmatch(text) is None:
        raise ValueError(f"not a whole number: {text!r}")
    return int(text)


def write_stdout(data: bytes) -> None:
    """Write JSON data to standard output: its UTF-8 bytes whatever the locale's encoding,
    exactly to a file or a pipe; on a terminal as ``data_for_terminal`` shows them, ending with
    a newline (so the prompt starts on a line of its own; data written exactly may end without
    one, as orion-core's files do)."""
    sys.stdout.flush()  # what was printed before goes first
    if sys.stdout.isatty():
        data = data_for_terminal(data)
        if not data.endswith(b"\n"):
            data += b"\n"
    # A write may take only part of the data (a pipe its reader closed midway returns a short
    # count, no error): write the rest until all is taken or the pipe says it is broken.
    # A non-blocking output (one inherited so) that is full takes part or nothing: wait for room.
    rest = memoryview(data)
    while rest:
        try:
            taken = sys.stdout.buffer.write(rest)
        except BlockingIOError as error:
            taken = error.characters_written
            _wait_for_stdout()
        else:
            if taken is None:  # unbuffered, nothing taken yet
                _wait_for_stdout()
                continue
            if not taken:
                raise BrokenPipeError(errno.EPIPE, "standard output took nothing")
        rest = rest[taken:]
    while True:
        try:
            sys.stdout.buffer.flush()
            return
        except BlockingIOError:
            _wait_for_stdout()


def _wait_for_stdout() -> None:
    """Wait until a non-blocking standard output can take more."""
    select.select([], [sys.stdout], [])


def display_width(text: str) -> int:
    """How many terminal columns ``text`` takes, as ``wcwidth`` counts them: two for a wide or
    full-width character (CJK, most emoji), none for a mark drawn on the character before it (a
    combining accent, Devanagari's and Thai's vowel signs) or a Hangul medial or final jamo, one
    for the rest; and VARIATION SELECTOR-16 (emoji presentation) widens a narrow character before
    it to two (``\u2764\ufe0f``) (``text`` is ``printable``'s)."""
    if text.isascii():
        return len(text)
    columns = 0
    before = ""  # the character before
    for char in text:
        columns += _widened(before) if char == _EMOJI_PRESENTATION else _char_columns(char)
        before = char
    return columns


_EMOJI_PRESENTATION = "\ufe0f"
# What U+FE0F after it draws as a two-column emoji: a narrow symbol (❤, ✔, ©: unicodedata has
# no emoji property, and U+FE0F follows only characters with an emoji form, which are symbols
# (So) but for these few), a keycap's first character (1️⃣ is "1", U+FE0F, U+20E3) among them.
_EMOJI_BASES_NOT_SYMBOLS = frozenset("#*0123456789\u203c\u2049\u2139\u2194\u25fb\u25fc\u2934\u2935")


def _widened(base: str) -> int:
    """The column U+FE0F adds after ``base``: one when it makes a narrow ``base`` an emoji."""
    if not base or _char_columns(base) != 1:
        return 0
    return int(base in _EMOJI_BASES_NOT_SYMBOLS or unicodedata.category(base) == "So")


_ZERO_WIDTH_CATEGORIES = ("Mn", "Me")
"""Marks drawn on the character before them. Not ``unicodedata.combining`` alone: many such
marks (U+0902 DEVANAGARI SIGN ANUSVARA, U+0E31 THAI CHARACTER MAI HAN-AKAT) have combining class
0; a spacing mark with a class (U+302E HANGUL SINGLE DOT TONE MARK) takes none either."""


def _char_columns(char: str) -> int:
    if (
        unicodedata.category(char) in _ZERO_WIDTH_CATEGORIES
        or unicodedata.combining(char)
        or "\u1160" <= char <= "\u11ff"  # the jamo after a leading consonant join it into one
        or "\ud7b0" <= char <= "\ud7ff"  # syllable's two columns (Jamo and Jamo Extended-B)
    ):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def padded(text: str, width: int, *, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (``display_width``), on the left when
    ``right``; ``str.ljust`` counts characters, so wide ids would push the columns after them."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def one_line(text: str) -> str:
    """The first non-blank line of another library's message, cut to a readable length."""
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    # Some messages carry their newlines escaped ("...\\nPlugins found: ..."): cut there too.
    first = first.split("\\n", 1)[0].strip()
    if len(first) > _ONE_LINE_MAX:
        first = first[: _ONE_LINE_MAX - 3].rstrip() + "..."
    return first or "no reason given"


def problem_line(source: str, problem: Problem, *, warning: bool = False) -> str:
    """``FILE: [i].field: message``, ``FILE:LINE: ...`` or ``FILE:LINE:COLUMN: ...``."""
    head = source
    if problem.line is not None:
        head += f":{problem.line}"
        if problem.column is not None:
            head += f":{problem.column}"
    parts = [head]
    if problem.location:
        parts.append(problem.location)
    if warning:
        parts.append("warning")
    parts.append(problem.message)
    return ": ".join(parts)


def problem_lines(name: str, problems: Sequence[Problem], omitted: int = 0) -> list[str]:
    """The lines of a fatal error for a file with ``problems``: the first 20, then a count.

    The first line starts with ``error:``; the command adds its name in front of each line.
    """
    lines = [problem_line(name, problem) for problem in problems[:MAX_PROBLEMS_ON_STDERR]]
    more = len(problems) + omitted - MAX_PROBLEMS_ON_STDERR
    if more > 0:
        lines.append(f"{name}: ... and {more:,} more problems")
    if not lines:
        lines.append(f"{name}: invalid")
    lines[0] = f"error: {lines[0]}"
    return lines


def out(line: str) -> None:
    """Print one line of human output; data in it cannot reach the terminal raw."""
    print_stdout(printable(line))


def print_stdout(text: str, end: str = "\n") -> None:
    """Print ``text`` on stdout (see ``writing_stdout``)."""
    with writing_stdout():
        print(text, end=end)


@contextmanager
def writing_stdout() -> Iterator[None]:
    """A failure to write stdout (a full disk) becomes an ``OSError`` naming ``<stdout>``, as a
    file's names the file. A closed pipe stays itself: ``main`` is quiet then."""
    try:
        yield
    except BrokenPipeError:
        raise
    except OSError as error:
        raise OSError(error.errno, f"cannot write: {error.strerror or error}", "<stdout>") from None


def plural(count: int, word: str) -> str:
    """``1 message``, ``2 messages``, ``1,024 messages``."""
    return f"{count:,} {word}" + ("" if count == 1 else "s")
