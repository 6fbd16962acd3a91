"""Text shown from the data, in messages and on a terminal (private): escaped, quoted, named, located.

The one way a value from the data (an id, a key, a name, a value found) goes into an error,
warning, loss or problem text is ``quoted``: escaped by ``printable`` and cut to
``SHOWN_CHARACTERS``. A file name, a URL or another library's message, which say where rather
than what, go through ``shown_place``: escaped the same way, unquoted, cut to
``SHOWN_PLACE_CHARACTERS``. A value a caller's argument got is shown as Python writes it and cut
the same way, ``excerpt(repr(value))``; an int too long for that by its number of digits
(``shown_int``). The full value stays in the exception's attributes.
"""

from __future__ import annotations

import math
import re

__all__ = [
    "SHOWN_CHARACTERS",
    "SHOWN_LOCATION_CHARACTERS",
    "SHOWN_PLACE_CHARACTERS",
    "excerpt",
    "joined_location",
    "kind_of",
    "location",
    "printable",
    "quoted",
    "shown_int",
    "shown_location",
    "shown_place",
    "with_article",
]

SHOWN_CHARACTERS = 40
"""How many characters of a value from the data a message shows: enough to recognize an id
(a UUID is 36); a longer value shows its first ``SHOWN_CHARACTERS - 3`` and ``...``."""

SHOWN_LOCATION_CHARACTERS = 200
"""How many characters of a location a message shows (``Problem``, ``Loss``): a path a few keys
deep shows whole; only a key no writer makes is cut. The attribute keeps the location whole."""

SHOWN_PLACE_CHARACTERS = 4096
"""How many characters of a file name, a URL or another library's message a message shows: a
path as long as Linux opens (``PATH_MAX``) is shown whole."""

# A dict key shown bare in a location: letters, digits, ``_``, ``$``, ``@``, ``-`` (Unicode
# letters included); any other key is quoted, so ``a.b`` is told apart from a nested path.
_PLAIN_KEY = re.compile(r"[\w$@-]+")


def kind_of(value: object) -> str:
    """The type of ``value`` with its article, for a message: ``an int``, ``a dict``."""
    return with_article(type(value).__name__)


def with_article(name: str) -> str:
    """``name`` (a type's) after its article, by how it sounds: ``an ErrorEvent``, ``a dict``,
    ``a UUID`` (a "u" read "you": ``_YOU_SOUND``), ``an UnknownKeyWarning``."""
    vowel = name[:1].lower() in "aeiou" and not _YOU_SOUND.match(name)
    return f"an {name}" if vowel else f"a {name}"


# A name starting with "u" read as "you": uint64, UUID, UserDict, Union, Unicode (not Unknown).
_YOU_SOUND = re.compile(r"u(?:ni|[irstu])", re.IGNORECASE)


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on escaped as ``repr`` does (``\\x1b``,
    ``\\n``, ``\\u202e``, a lone surrogate ``\\ud800``): the result is printable and encodes as UTF-8."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def excerpt(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """``text`` cut to ``limit`` characters (``limit - 3`` and ``...`` when longer), escaped by
    ``printable``; unquoted."""
    return printable(_cut(text, limit))


def shown_int(value: int) -> str:
    """An int for a message: as Python writes it when that fits ``SHOWN_CHARACTERS``, else by its
    number of digits (``an int of 5001 digits``, ``a negative int of ...``). ``str()`` of an int
    past 4300 digits raises ``ValueError``, and a number cut short would read as another."""
    if -(10**39) < value < 10**40:
        return repr(value)
    magnitude = abs(value)
    exponent = math.log10(magnitude)  # exact to far better than 1e-6, however long the int
    nearest = round(exponent)
    if abs(exponent - nearest) < 1e-6:  # next to a power of ten: decide exactly
        digits = nearest + (magnitude >= 10**nearest)
    else:
        digits = math.floor(exponent) + 1
    return f"{'a negative' if value < 0 else 'an'} int of {digits} digits"


def shown_location(location: str) -> str:
    """A location (already escaped by ``location``) for a message: cut to ``SHOWN_LOCATION_CHARACTERS``."""
    return _cut(location, SHOWN_LOCATION_CHARACTERS)


def shown_place(text: str) -> str:
    """A file name, a URL or another library's message, for a message: ``excerpt`` cut to
    ``SHOWN_PLACE_CHARACTERS``, unquoted (``log\\x1b[2J.jsonl:3: ...``)."""
    return excerpt(text, SHOWN_PLACE_CHARACTERS)


def quoted(value: object, *, limit: int | None = SHOWN_CHARACTERS) -> str:
    """A value from the data, for a message: a str cut to ``limit`` characters (None: whole),
    escaped by ``printable``, in double quotes with ``"`` and ``\\`` escaped (``"it's"``,
    ``"say \\"hi\\""``, ``"a\\\\b"``, ``"\\x1b"``); any other value as its ``repr``, escaped and
    cut the same way (``5``, ``None``, ``[1, 2]``)."""
    if isinstance(value, str):
        text = value if limit is None else _cut(value, limit)
        return '"' + printable(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'
    shown = repr(value)
    return excerpt(shown, len(shown) if limit is None else limit)


def location(loc: tuple[int | str, ...]) -> str:
    """``(3, 'tool_result', 'is_error')`` -> ``[3].tool_result.is_error``.

    A key other than a plain name is quoted in brackets: ``(3, 'a.b')`` -> ``[3]["a.b"]``,
    ``(3, '\\x1b')`` -> ``[3]["\\x1b"]``. Never cut: a location names one key exactly (a loss's
    ``field``, which ``accept=`` matches).
    """
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        elif not _PLAIN_KEY.fullmatch(item):
            parts.append(f"[{quoted(item, limit=None)}]")
        else:
            parts.append(f".{item}" if parts else item)
    return "".join(parts)


def joined_location(where: str, path: tuple[int | str, ...]) -> str:
    """The location of ``path`` inside the value at ``where`` (``[1].content[0].input`` and
    ``("a", 0)`` give ``[1].content[0].input.a[0]``)."""
    inside = location(path)
    return f"{where}{inside}" if inside.startswith("[") or not inside else f"{where}.{inside}"
