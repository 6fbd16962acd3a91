"""Text shown from the data, in messages and on a terminal (private): escaped, quoted, named, located."""

from __future__ import annotations

__all__ = ["kind_of", "location", "printable", "quoted"]


def kind_of(value: object) -> str:
    """The type of ``value`` with its article, for a message: ``an int``, ``a dict``."""
    name = type(value).__name__
    return f"an {name}" if name[:1].lower() in "aeiou" else f"a {name}"


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on escaped as ``repr`` does (``\\x1b``, ``\\n``)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def quoted(value: object) -> str:
    """``value`` in double quotes for a message, escaped by ``printable`` (``"a\\x1b[31m"``):
    ids and keys come from the data."""
    return f'"{printable(str(value))}"'


def location(loc: tuple[int | str, ...]) -> str:
    """``(3, 'tool_result', 'is_error')`` -> ``[3].tool_result.is_error``."""
    parts: list[str] = []
    for item in loc:
        if isinstance(item, int):
            parts.append(f"[{item}]")
        else:
            parts.append(f".{item}" if parts else item)
    return "".join(parts)
