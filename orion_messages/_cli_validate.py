"""``orion-messages validate``: check files, folders, logs, event streams and stores, print each
problem and a summary, or a JSON report."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Callable, Generator, Sequence
from contextlib import closing
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, NamedTuple

from ._cli_base import Fatal, stdin_once
from ._cli_exit import EXIT_INVALID, EXIT_OK
from ._cli_input import (
    Parsed,
    Progress,
    Unreadable,
    collect,
    library_warnings,
    not_read,
    parse,
    print_notices,
    read_input,
    warning_problems,
)
from ._cli_lazy import LazyModule
from ._cli_text import json_report, out, plural, print_stdout, printable, problem_line
from ._store_url import is_store_url, masked_url
from .errors import OrionMessagesError, OrionMessagesWarning, Problem

if TYPE_CHECKING:
    from . import _store_cli
else:  # each loaded when a command first needs it: the rest start without their models (_cli_lazy)
    _store_cli = LazyModule("_store_cli")  # store URLs: asyncio, sqlite3 (psycopg)

__all__ = ["run"]

_PROGRESS_MIN_FILES = 20


def run(args: argparse.Namespace) -> int:
    """``validate``: check every input named, print the problems and the summary; the exit status."""
    stdin_once(*((f"PATH {number}", path) for number, path in enumerate(args.paths, 1)))
    # A store named twice is checked once, as a file named twice is (``collect``).
    stores = [_listed(raw) for raw in dict.fromkeys(args.paths) if is_store_url(raw)]
    files = [raw for raw in args.paths if not is_store_url(raw)]
    found = collect(files) if files else []
    total = sum(len(store.conversations) for store in stores) + len(found)
    progress = Progress(sys.stderr)
    as_text = args.format == "text"
    tallies: list[_Tally] = []

    def checked(name: str, check: Callable[[], Parsed]) -> None:
        """Check one input and keep its tally: its report (and its messages) go once tallied."""
        if total > _PROGRESS_MIN_FILES:
            progress.show(len(tallies), total, name)
        tallies.append(_tally(check(), progress, as_text=as_text))

    try:
        for store in stores:
            _check_store(store, checked, strict=args.strict)
        for entry in found:
            name = entry.name if isinstance(entry, Parsed) else entry
            checked(name, partial(_check, entry, progress, strict=args.strict))
    finally:
        progress.clear()
    if as_text:
        if not args.quiet:
            out(_validate_summary(tallies, stores=bool(stores)))
    else:
        print_stdout(json_report(_validate_json(tallies, stores, strict=args.strict)))
    return EXIT_OK if all(tally.valid for tally in tallies) else EXIT_INVALID


class _Listed(NamedTuple):
    """A store URL to validate: the conversations it names, and the library's warnings caught
    while it is read."""

    raw: str
    conversations: list[_store_cli.Stored]
    caught: list[OrionMessagesWarning]

    def json(self) -> dict[str, Any]:
        """The store's entry in ``validate``'s JSON report: its URL, as its conversations' paths
        start, and how many conversations were checked in it (0 for an empty store)."""
        return {"url": masked_url(self.raw), "conversations": len(self.conversations)}


def _listed(raw: str) -> _Listed:
    """The conversations a store URL names: every store is opened and listed before anything is
    checked, so that one that cannot be opened stops the run at once."""
    caught: list[OrionMessagesWarning] = []
    try:
        with library_warnings(caught):
            conversations = _store_cli.stored_conversations(raw) or []
    except OrionMessagesError as error:
        raise Fatal(f"error: {printable(str(error))}") from None
    return _Listed(raw, conversations, caught)


def _check_store(
    store: _Listed, checked: Callable[[str, Callable[[], Parsed]], None], *, strict: bool
) -> None:
    """Each conversation of a store URL, checked like a file, loaded one at a time.

    The library's warnings go to the conversation's report when there is one conversation;
    otherwise they cannot be told apart by conversation, and once the store is checked they are
    printed on stderr.
    """
    alone = len(store.conversations) == 1
    reports = _store_cli.check_stored(store.raw, store.conversations, strict=strict)
    with closing(reports):
        for conversation in store.conversations:
            checked(conversation.label, partial(_stored_report, reports, store.caught, alone=alone))
    problems = warning_problems(store.caught)
    if not alone and problems:
        whole = Parsed(masked_url(store.raw), "json")
        whole.notice(problems)
        print_notices(whole)


def _stored_report(
    reports: Generator[_store_cli.Report, None, None], caught: list[OrionMessagesWarning], *, alone: bool
) -> Parsed:
    """The next conversation of ``check_stored``, as a report (its warnings with it if ``alone``)."""
    try:
        with library_warnings(caught):
            stored = next(reports)
    except OrionMessagesError as error:
        raise Fatal(f"error: {printable(str(error))}") from None
    report = Parsed(stored.label, "json", stored.messages or [], what="stored conversation")
    report.add(stored.errors, omitted=stored.omitted)  # kept up to the cap, as a file's
    report.add(stored.warnings, error=False)
    if alone:
        report.notice(warning_problems(caught))
    return report


def _check(entry: str | Parsed, progress: Progress, *, strict: bool) -> Parsed:
    """The report of one input that ``collect`` found (one it could not search is already one)."""
    return entry if isinstance(entry, Parsed) else _check_one(entry, progress, strict=strict)


def _check_one(name: str, progress: Progress, *, strict: bool) -> Parsed:
    try:
        return parse(read_input(name, progress), strict=strict, progress=progress)
    except Unreadable as unreadable:  # one invalid file, not the end of the run
        return not_read(name, unreadable.reason)


@dataclass(frozen=True)
class _Tally:
    """What ``validate`` keeps of an input once it is checked and its problems printed: what
    the summary counts, and for ``--format json`` its entry; never its messages, so that a run
    over thousands of inputs holds one input's messages at a time."""

    what: str
    valid: bool
    messages: int
    events: int
    errors: int
    """Errors listed and omitted."""
    warnings: int
    entry: dict[str, Any] | None
    """The input's entry in the JSON report (None for text)."""


def _tally(report: Parsed, progress: Progress, *, as_text: bool) -> _Tally:
    """Print the problems of a checked input (text), and tally it."""
    if as_text and (report.errors or report.warnings or report.omitted or report.omitted_warnings):
        progress.clear()
        _print_problems(report)
    return _Tally(
        what=report.what,
        valid=report.valid,
        messages=len(report.messages),
        events=report.events,
        errors=len(report.errors) + report.omitted,
        warnings=len(report.warnings) + report.omitted_warnings,
        entry=None if as_text else _file_json(report),
    )


def _print_problems(report: Parsed) -> None:
    for problem in report.errors:
        out(problem_line(report.name, problem))
    for problem in report.warnings:
        out(problem_line(report.name, problem, warning=True))
    if report.omitted or report.omitted_warnings:
        out(f"{report.name}: ... and {report.omitted + report.omitted_warnings:,} more problems")


def _validate_summary(tallies: Sequence[_Tally], *, stores: bool) -> str:
    """The summary line; ``stores``: a store URL was checked, so its conversations are counted
    even when it holds none (``0 stored conversations``)."""
    invalid = sum(not tally.valid for tally in tallies)
    messages = sum(tally.messages for tally in tallies if tally.valid)
    events = sum(tally.events for tally in tallies if tally.valid)
    errors = sum(tally.errors for tally in tallies)
    warned = sum(tally.warnings for tally in tallies)
    counted = plural(messages, "message") + (f" and {plural(events, 'event')}" if events else "")
    whats = Counter(dict.fromkeys(["stored conversation"] if stores else [], 0))
    whats.update(tally.what for tally in tallies)
    checked = _and([plural(count, what) for what, count in whats.items()]) or "0 files"
    head = f"checked {checked} ({counted} in the valid ones)"
    verdict = f"{invalid:,} invalid ({plural(errors, 'error')})" if invalid else "all valid"
    tail = f", {plural(warned, 'warning')}" if warned else ""
    return f"{head}: {verdict}{tail}"


def _and(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else "".join(parts)


def _problem_json(problem: Problem) -> dict[str, Any]:
    return {
        "location": problem.location,
        "message": problem.message,
        "line": problem.line,
        "column": problem.column,
    }


def _file_json(report: Parsed) -> dict[str, Any]:
    """An input's entry in ``validate``'s JSON report: its counts as the text summary has them
    (messages and events, each 0 where the format holds none), null for an invalid input."""
    return {
        "path": report.name,
        "format": report.kind,
        "valid": report.valid,
        "messages": len(report.messages) if report.valid else None,
        "events": report.events if report.valid else None,
        "errors": [_problem_json(p) for p in report.errors],
        "warnings": [_problem_json(p) for p in report.warnings],
        "omitted": report.omitted + report.omitted_warnings,
    }


def _validate_json(tallies: Sequence[_Tally], listed: Sequence[_Listed], *, strict: bool) -> dict[str, Any]:
    return {
        "valid": all(tally.valid for tally in tallies),
        "strict": strict,
        "files": [tally.entry for tally in tallies],
        "stores": [store.json() for store in listed],
        "counts": {
            "files": len(tallies),
            "valid": sum(tally.valid for tally in tallies),
            "invalid": sum(not tally.valid for tally in tallies),
            "errors": sum(tally.errors for tally in tallies),
            "warnings": sum(tally.warnings for tally in tallies),
        },
    }
