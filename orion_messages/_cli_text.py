"""Text the command line prints: data from files never reaches a terminal raw."""

from __future__ import annotations

__all__ = ["printable"]


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on escaped as ``repr`` does (``\\x1b``, ``\\n``)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
