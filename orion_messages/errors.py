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
    "MissingExtraError",
    "OrionMessagesError",
    "OrionMessagesWarning",
    "OverflowReason",
    "Problem",
    "TornLineWarning",
    "UnknownTemplateError",
]


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

    def __init__(self, problems: Iterable[Problem], *, source: str | None = None) -> None:
        self.problems: list[Problem] = list(problems)
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        head = f"{self.source}: " if self.source else ""
        count = len(self.problems)
        if count == 1:
            return f"{head}{self.problems[0]}"
        lines = [f"{head}{count} problems:"]
        lines.extend(f"  {problem}" for problem in self.problems)
        return "\n".join(lines)

    def with_source(self, source: str) -> FormatError:
        """The same problems, reported against the file ``source``."""
        return FormatError(self.problems, source=source)

    def at_line(self, line: int, *, source: str | None = None) -> FormatError:
        """The same problems, placed on ``line`` of a JSON Lines file."""
        return FormatError(
            (
                Problem(p.location, p.message, line, p.column if p.line in (None, 1) else None)
                for p in self.problems
            ),
            source=source if source is not None else self.source,
        )


OverflowReason = Literal["overhead", "latest", "pinned"]
"""Which of orion-core's refusals a ``ContextOverflowError`` is."""


class ContextOverflowError(OrionMessagesError, ValueError):
    """orion-core's three refusals: no room at all, the latest turn does not fit, the pinned turns do not fit.

    The text is orion-core's own, numbers included (what it shows after ``Context error: ``); what
    we know beyond it is in the attributes.
    """

    def __init__(
        self,
        reason: OverflowReason,
        tokens: int,
        available: int,
        *,
        fixed_tokens: int = 0,
        budget: int | None = None,
        turn: range | None = None,
    ) -> None:
        self.reason: OverflowReason = reason
        """Which refusal: ``"overhead"``, ``"latest"`` or ``"pinned"``."""
        self.tokens = tokens
        """The tokens in the text: the fixed overhead, the latest turn, or every pinned turn together."""
        self.available = available
        """``max(0, max_context_tokens - max_response_tokens)``, as in the text."""
        self.fixed_tokens = fixed_tokens
        """The fixed overhead (system block and assistant prefix, or ``reserved_tokens`` and the preamble)."""
        self.budget = available - fixed_tokens if budget is None else budget
        """The room the refused part had: what was left when it was tried."""
        self.turn = turn
        """The message range of the turn at fault (the latest turn, or the pinned turn that did not fit)."""
        if reason == "overhead":
            text = f"System prompt and tools ({tokens} tokens) exceed available context budget ({available} tokens)"
        elif reason == "latest":
            text = (
                f"Latest message ({tokens} tokens) plus system prompt ({fixed_tokens} tokens) exceeds context "
                f"budget ({available} tokens). Clear the conversation or increase context size."
            )
        else:
            text = (
                f"Pinned messages ({tokens} tokens) exceed the available context budget ({available} tokens). "
                "Unpin some messages or increase context size."
            )
        super().__init__(text)


class TornLineWarning(OrionMessagesWarning):
    """A JSON Lines log ends in an incomplete record, as a crash mid-append leaves it."""


class UnknownTemplateError(OrionMessagesError, ValueError):
    """A chat template name orion-core does not know.

    ``name`` is the name as given; ``suggestion`` is a known name close to it, if any.
    """

    def __init__(self, message: str, *, name: str, suggestion: str | None = None) -> None:
        self.name = name
        """The name as given."""
        self.suggestion = suggestion
        """A known name or alias close to ``name``, or ``None``."""
        super().__init__(message)


class MissingExtraError(OrionMessagesError, ImportError):
    """An optional feature whose package is not installed; the message says which extra to install."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.extra = extra
        """The orion-messages extra that installs what is missing, such as ``"huggingface"``."""
        super().__init__(
            f'{feature} needs the "{package}" package: pip install "orion-messages[{extra}]"',
            name=package,
        )
