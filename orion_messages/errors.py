"""Everything the library raises or warns on purpose, in one place.

Every exception the library raises on purpose derives from ``OrionMessagesError``; every warning it
issues derives from ``OrionMessagesWarning``. Catch the base class to handle them all. Operating
system failures (a full disk, a missing file) stay ``OSError``, named with the file, as Python's
own I/O raises them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "ContextOverflowError",
    "FormatError",
    "OrionMessagesError",
    "OrionMessagesWarning",
    "OverflowReason",
    "Problem",
    "TornLineWarning",
    "UnknownKeyWarning",
]

MAX_REPORTED_PROBLEMS = 100
"""How many problems a ``FormatError`` holds; the rest are only counted (``omitted``)."""


class OrionMessagesError(Exception):
    """The base class of every exception orion-messages raises on purpose."""


class OrionMessagesWarning(UserWarning):
    """The base class of every warning orion-messages issues."""


@dataclass(frozen=True)
class Problem:
    """One problem found in a conversation, with where it is and what is wrong.

    ``location`` is a JSON path such as ``[3].tool_result.is_error`` (empty for the document as a
    whole); ``line`` and ``column`` are set for malformed JSON and for JSON Lines records.
    """

    location: str
    """A JSON path into the document, such as ``[3].tool_calls[0].id``; empty for the whole document."""
    message: str
    """What was expected and what was found, in plain words."""
    line: int | None = None
    """The 1-based line in the file, where known."""
    column: int | None = None
    """The 1-based column on that line, where known."""

    def __str__(self) -> str:
        where = self.location
        if self.line is not None:
            position = f"line {self.line}" + (f", column {self.column}" if self.column is not None else "")
            where = f"{position}: {where}" if where else position
        return f"{where}: {self.message}" if where else self.message


class FormatError(OrionMessagesError, ValueError):
    """Input that is not a valid orion-core conversation, message or event.

    ``problems`` lists every problem found, each with its location. ``source`` names the file
    when the input came from one. Nothing is ever returned partially when this is raised.
    """

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None, omitted: int = 0) -> None:
        kept: list[Problem] = []
        for problem in problems:  # a hostile file can hold millions: keep the first, count the rest
            if len(kept) < MAX_REPORTED_PROBLEMS:
                kept.append(problem)
            else:
                omitted += 1
        self.problems: list[Problem] = kept
        """The first ``MAX_REPORTED_PROBLEMS`` problems, in document order."""
        self.omitted = omitted
        """How many more problems were found and not kept."""
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.source}: " if self.source else ""
        count = len(self.problems) + self.omitted
        if count == 1:
            return f"{head}{self.problems[0]}"
        lines = [f"{head}{count} problems:"]
        lines.extend(f"  {problem}" for problem in self.problems)
        if self.omitted:
            lines.append(f"  ... and {self.omitted} more")
        return "\n".join(lines)

    def with_source(self, source: str) -> FormatError:
        """The same problems, reported against the file ``source``."""
        return FormatError(self.problems, source=source, omitted=self.omitted)

    def at_line(self, line: int, *, source: str | None = None) -> FormatError:
        """The same problems, placed on ``line`` of a JSON Lines file."""
        return FormatError(
            (
                Problem(p.location, p.message, line, p.column if p.line in (None, 1) else None)
                for p in self.problems
            ),
            source=source if source is not None else self.source,
            omitted=self.omitted,
        )


OverflowReason = Literal["overhead", "latest", "pinned"]
"""Which of orion-core's refusals a ``ContextOverflowError`` is."""


class ContextOverflowError(OrionMessagesError, ValueError):
    """orion-core's three refusals: no room at all, the latest turn does not fit, the pinned turns do not fit.

    ``reason`` says which (``"overhead"``, ``"latest"`` or ``"pinned"``); ``tokens`` is what needed
    room and ``budget`` the room it had; ``turn`` is the turn's message range where one is at fault.
    """

    def __init__(
        self, reason: OverflowReason, tokens: int, budget: int, detail: str = "", turn: range | None = None
    ) -> None:
        self.reason: OverflowReason = reason
        """Which refusal: ``"overhead"``, ``"latest"`` or ``"pinned"``."""
        self.tokens = tokens
        """The tokens that needed room."""
        self.budget = budget
        """The room they had."""
        self.turn = turn
        """The message range of the turn at fault (the latest turn, or the pinned turn that did not fit)."""
        if reason == "overhead":
            text = (
                f"System prompt and tools ({tokens} tokens) exceed available context budget ({budget} tokens)"
            )
        elif reason == "latest":
            text = f"Latest message ({tokens} tokens) exceeds context budget ({budget} tokens)"
        else:
            text = f"Pinned messages ({tokens} tokens) exceed the available context budget ({budget} tokens)"
        super().__init__(f"{text}{detail}")


class TornLineWarning(OrionMessagesWarning):
    """A JSON Lines log ends in an incomplete record, as a crash mid-append leaves it."""


class UnknownKeyWarning(OrionMessagesWarning):
    """An unknown key was loaded without its value, which cannot be written back exactly.

    orion-core skips unknown keys unread, so it loads a value such as ``1e400`` or one nested
    deeper than any parser goes; this library loads the document too, leaves that key out and
    says so with this warning. ``location`` is the JSON path of the object that held the key
    (``[3]``, ``[3].tool_calls[0]``), ``key`` the key and ``reason`` what is wrong with its value.
    """

    def __init__(self, location: str, key: str, reason: str) -> None:
        self.location = location
        """The JSON path of the object that held the key, such as ``[3]``."""
        self.key = key
        """The unknown key that was left out."""
        self.reason = reason
        """Why its value cannot be written back."""
        where = f"{location}: " if location else ""
        super().__init__(f'{where}unknown key "{key}" left out: {reason}')
