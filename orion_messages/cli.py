"""The ``orion-messages`` command line: validate, summarize, prune, convert and describe conversations.

Run ``orion-messages --help`` (or ``python -m orion_messages --help``). Every command reads
conversation files (``.json``, a JSON array of messages, as orion-core saves it) and JSON Lines
logs (``.jsonl``, one message a line, as ``append_jsonl`` writes it). Exit status: 0 when all is
well, 1 when an input is invalid or an operation is refused, 2 on a usage error. Problems are
printed one per line as ``FILE: [i].field: message`` (``FILE:LINE: ...`` where a line is known);
a missing file or a file that is not JSON is one clear line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import orjson

from .checks import check
from .errors import FormatError, Problem
from .models import Message, Role
from .storage import TornLineWarning, load, read_jsonl, save, save_jsonl
from .turns import split_turns
from .wire import loads

__all__ = ["main"]

PROG = "orion-messages"
"""The command's name, as installed by the console script."""

EXIT_OK = 0
"""Exit status: everything checked is valid, or the command did what was asked."""
EXIT_INVALID = 1
"""Exit status: an input is invalid or missing, or an operation was refused."""
EXIT_USAGE = 2
"""Exit status: the command line itself is wrong."""

_LOG_SUFFIXES = frozenset({".jsonl", ".ndjson"})
_CONVERSATION_SUFFIXES = frozenset({".json"})
_PROGRESS_MIN_FILES = 20
_MAX_PROBLEMS_ON_STDERR = 20


class _Fatal(Exception):
    """A failure reported as one line (or a few) on stderr, with an exit status."""

    def __init__(self, *lines: str, code: int = EXIT_INVALID) -> None:
        super().__init__(lines[0] if lines else "")
        self.lines = lines
        self.code = code


# --------------------------------------------------------------------------------------------
# Entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version and usage errors
        return _status(stop.code)
    command: Callable[[argparse.Namespace], int] = args.run
    try:
        return command(args)
    except _Fatal as fatal:
        for line in fatal.lines:
            _err(line)
        return fatal.code
    except SystemExit as stop:  # parser.error() from inside a command
        return _status(stop.code)
    except KeyboardInterrupt:
        _err("interrupted")
        return 130
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        with suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return EXIT_INVALID


def _status(code: object) -> int:
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_INVALID


def _err(line: str) -> None:
    print(f"{PROG}: {line}", file=sys.stderr)


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Validate, summarize, prune and convert orion-core conversations "
        "(.json arrays of messages and .jsonl logs).",
        epilog="Exit status: 0 valid or done, 1 invalid input or refused, 2 usage error.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    validate = commands.add_parser(
        "validate",
        help="check conversation files and logs against orion-core's format",
        description="Check .json conversations and .jsonl logs (folders are searched recursively). "
        "Each problem is one line, FILE: [i].field: message. Semantic problems (duplicate ids, "
        "results without a call, ...) are warnings unless --strict makes them errors, along with "
        "duplicate keys and a torn last line in a log.",
    )
    validate.add_argument("paths", nargs="+", metavar="PATH", help="a file, or a folder to search")
    validate.add_argument(
        "--strict", action="store_true", help="treat semantic problems and duplicate keys as errors"
    )
    _add_format(validate)
    validate.add_argument("-q", "--quiet", action="store_true", help="print problems only, no summary")
    validate.set_defaults(run=_validate)

    stats = commands.add_parser(
        "stats",
        help="summarize one conversation: roles, turns, pinned, pending, tokens, time span",
        description="Count messages per role and in all, turns, tool calls, pinned and pending "
        "messages, estimate tokens, and show the first and last timestamp (UTC).",
    )
    stats.add_argument("path", metavar="PATH", help="a .json conversation or a .jsonl log")
    _add_format(stats)
    stats.set_defaults(run=_stats)

    prune = commands.add_parser(
        "prune",
        help="plan orion-core's turn-aware pruning and write the pruned conversation",
        description="Plan pruning as orion-core does (sliding window over whole turns; pinned "
        "messages keep their turn) and print the plan. With -o, write the pruned conversation. "
        "A budget that cannot hold the latest turn or the pinned turns is refused (exit 1).",
    )
    prune.add_argument("path", metavar="PATH", help="a .json conversation or a .jsonl log")
    prune.add_argument(
        "--max-context-tokens",
        type=_count,
        required=True,
        metavar="N",
        help="the model's whole context window",
    )
    prune.add_argument(
        "--max-response-tokens",
        type=_count,
        required=True,
        metavar="M",
        help="tokens kept free for the reply",
    )
    prune.add_argument(
        "--reserved-tokens",
        type=_count,
        default=0,
        metavar="R",
        help="tokens for the system prompt and tools sent outside the messages (default 0)",
    )
    prune.add_argument(
        "--template",
        metavar="NAME",
        help="plan exactly as orion-core with this chat template (chatml, llama3, mistral, ...; "
        "auto: detect it from --template-file)",
    )
    prune.add_argument(
        "--template-file",
        metavar="FILE",
        help="a Jinja chat template (as in a GGUF file) for --template auto",
    )
    prune.add_argument("--system-prompt", metavar="FILE", help="the system prompt, read from FILE as is")
    prune.add_argument(
        "--tools", metavar="FILE", help="the tools, a JSON array of {name, description, parameters}"
    )
    prune.add_argument(
        "--counter",
        metavar="KIND",
        help="how rendered text is counted: chars4 (default), words, hf:TOKENIZER.JSON, "
        "tiktoken:ENCODING or sentencepiece:MODEL",
    )
    prune.add_argument(
        "-o", "--output", metavar="OUT", help="write the pruned conversation here (.json or .jsonl)"
    )
    _add_format(prune)
    prune.set_defaults(run=_prune)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a conversation, or write every schema to a folder",
        description="Without --out, print the JSON Schema of a conversation file to stdout. "
        "With --out DIR, write every schema file there.",
    )
    schema.add_argument("--out", metavar="DIR", help="write every schema file into this folder")
    schema.set_defaults(run=_schema)

    convert = commands.add_parser(
        "convert",
        help="convert between a JSON array (.json) and JSON Lines (.jsonl)",
        description="Read IN and write OUT, each format chosen by its extension (.json: a JSON "
        "array, as orion-core saves it; .jsonl: one message a line). Writes atomically.",
    )
    convert.add_argument("input", metavar="IN", help="a .json conversation or a .jsonl log")
    convert.add_argument("output", metavar="OUT", help="the file to write, .json or .jsonl")
    convert.add_argument(
        "--pretty", action="store_true", help="indent JSON output (serde's pretty form); .json only"
    )
    convert.set_defaults(run=_convert, parser=convert)
    return parser


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people (default), json for machines",
    )


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, found {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of tokens >= 0, found {value}")
    return value


# --------------------------------------------------------------------------------------------
# Reading files


def _is_log(path: Path) -> bool:
    return path.suffix.lower() in _LOG_SUFFIXES


def _problem_line(source: str, problem: Problem, *, warning: bool = False) -> str:
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


def _torn_line_problem(source: str, message: str) -> Problem:
    # TornLineWarning says "PATH:LINE: what"; keep the line number as the problem's line.
    rest = message.removeprefix(f"{source}:")
    number, _, text = rest.partition(": ")
    if rest != message and number.isdigit() and text:
        return Problem("", text, int(number))
    return Problem("", rest.lstrip(": ") if rest != message else message)


@dataclass
class _Read:
    """A file read: its messages, or the problems that stopped it, and the warnings on the way."""

    messages: list[Message] | None
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)


def _read(path: Path, *, strict: bool = False) -> _Read:
    """Read a conversation or a log; problems are returned, never raised (except for a missing file)."""
    source = str(path)
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TornLineWarning)
            messages = read_jsonl(path, strict=strict) if _is_log(path) else load(path, strict=strict)
    except FormatError as error:
        return _Read(None, errors=error.problems)
    except UnicodeDecodeError as error:  # pragma: no cover - the loaders report bad UTF-8 themselves
        return _Read(None, errors=[Problem("", f"not UTF-8 text: {error.reason}")])
    torn = [
        _torn_line_problem(source, str(w.message)) for w in caught if issubclass(w.category, TornLineWarning)
    ]
    for other in caught:
        if not issubclass(other.category, TornLineWarning):
            warnings.warn_explicit(other.message, other.category, other.filename, other.lineno)
    if strict and torn:
        return _Read(None, errors=torn)
    return _Read(messages, warnings=torn)


def _read_or_fail(raw: str) -> list[Message]:
    """Read one input for stats, prune or convert; any problem is a fatal, clear error."""
    path = _existing_file(raw)
    try:
        result = _read(path)
    except OSError as error:
        raise _Fatal(f"error: {raw}: cannot read it: {error.strerror or error}") from None
    if result.messages is None:
        if _looks_like_events(path):
            raise _Fatal(f"error: {raw}: an agent event stream, not a conversation (validate checks it)")
        lines = [_problem_line(raw, problem) for problem in result.errors[:_MAX_PROBLEMS_ON_STDERR]]
        if len(result.errors) > _MAX_PROBLEMS_ON_STDERR:
            lines.append(f"{raw}: ... and {len(result.errors) - _MAX_PROBLEMS_ON_STDERR} more problems")
        lines[0] = f"error: {lines[0]}"
        raise _Fatal(*lines)
    for problem in result.warnings:
        _err(f"warning: {_problem_line(raw, problem)}")
    return result.messages


def _existing_file(raw: str) -> Path:
    path = Path(raw)
    if path.is_dir():
        raise _Fatal(f"error: {raw}: is a folder; expected a .json conversation or a .jsonl log")
    if not path.exists():
        raise _Fatal(f"error: {raw}: no such file")
    if not os.access(path, os.R_OK):
        raise _Fatal(f"error: {raw}: cannot read it (permission denied)")
    return path


def _collect(raws: Sequence[str]) -> list[Path]:
    """The files named, and the ``.json``/``.jsonl`` files under the folders named, each once."""
    found: list[Path] = []
    for raw in raws:
        path = Path(raw)
        if path.is_dir():
            inside = list(_walk(path))
            if not inside:
                raise _Fatal(f"error: {raw}: no .json or .jsonl files in this folder")
            found.extend(inside)
        elif path.exists():
            found.append(path)
        else:
            raise _Fatal(f"error: {raw}: no such file or folder")
    unique: dict[Path, Path] = {}
    for path in found:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


def _walk(folder: Path) -> Iterator[Path]:
    """Conversation files and logs under ``folder``, sorted, hidden files and folders skipped."""
    suffixes = _CONVERSATION_SUFFIXES | {".jsonl"}
    for root, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        for name in sorted(files):
            if not name.startswith(".") and Path(name).suffix.lower() in suffixes:
                yield Path(root, name)


# --------------------------------------------------------------------------------------------
# validate


class _Progress:
    """A one-line progress bar on stderr, drawn with ``\\r``, only on a terminal and for many files."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self._total = total
        self._stream = stream
        self._shown = 0
        self.enabled = total > _PROGRESS_MIN_FILES and _isatty(stream)

    def show(self, done: int, label: str) -> None:
        """Redraw the bar: ``done`` of the files checked, ``label`` the one being checked."""
        if not self.enabled:
            return
        columns = shutil.get_terminal_size((80, 24)).columns
        width = 24
        filled = width * done // self._total if self._total else width
        line = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self._total} {label}"
        line = line[: max(10, columns - 1)]
        self._stream.write("\r" + line.ljust(self._shown))
        self._stream.flush()
        self._shown = len(line)

    def clear(self) -> None:
        """Erase the bar (before printing a line, and at the end)."""
        if self.enabled and self._shown:
            self._stream.write("\r" + " " * self._shown + "\r")
            self._stream.flush()
            self._shown = 0


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass
class _FileReport:
    """What ``validate`` found in one file."""

    path: str
    format: str
    messages: int | None
    errors: list[Problem]
    warnings: list[Problem]

    @property
    def valid(self) -> bool:
        """No errors (warnings allowed)."""
        return not self.errors


def _looks_like_events(path: Path) -> bool:
    """A JSON Lines file whose first record has a ``type`` and no ``role``: an agent event stream."""
    if not _is_log(path):
        return False
    try:
        with path.open("rb") as handle:
            first = next((line for line in handle if line.strip()), b"")
        record = orjson.loads(first)
    except (OSError, orjson.JSONDecodeError):
        return False
    return isinstance(record, dict) and "type" in record and "role" not in record


def _check_events(path: Path) -> _FileReport:
    """Every line of an agent event stream, each bad line reported with its number."""
    from .events import parse_event

    try:
        data = path.read_bytes()
    except OSError as error:
        reason = error.strerror or str(error)
        return _FileReport(str(path), "events", None, [Problem("", f"cannot read the file: {reason}")], [])
    errors: list[Problem] = []
    count = 0
    for number, raw in enumerate(data.split(b"\n"), 1):
        line = raw.rstrip(b"\r")
        if not line.strip():
            continue
        try:
            parse_event(line)
        except FormatError as error:
            errors.extend(error.at_line(number).problems)
        else:
            count += 1
    return _FileReport(str(path), "events", None if errors else count, errors, [])


def _check_file(path: Path, *, strict: bool) -> _FileReport:
    if _looks_like_events(path):
        return _check_events(path)
    kind = "jsonl" if _is_log(path) else "json"
    try:
        result = _read(path, strict=strict)
    except OSError as error:
        reason = error.strerror or str(error)
        return _FileReport(str(path), kind, None, [Problem("", f"cannot read the file: {reason}")], [])
    if result.messages is None:
        return _FileReport(str(path), kind, None, result.errors, result.warnings)
    if strict:  # strict loading made duplicate keys and semantic problems errors already
        return _FileReport(str(path), kind, len(result.messages), [], result.warnings)
    semantic = check(result.messages)
    duplicates = [] if kind == "jsonl" else _duplicate_keys(path, semantic)
    return _FileReport(str(path), kind, len(result.messages), duplicates, [*result.warnings, *semantic])


def _duplicate_keys(path: Path, semantic: Sequence[Problem]) -> list[Problem]:
    """Keys repeated in one object: orion-core (serde) refuses them, so they are errors even here.

    ``loads`` keeps the last value unless ``strict``; strict loading reports duplicate keys first
    and otherwise the semantic problems, which are already known here.
    """
    try:
        loads(path.read_bytes(), strict=True)
    except FormatError as error:
        known = set(semantic)
        return [problem for problem in error.problems if problem not in known]
    except OSError:  # pragma: no cover - it was read a moment ago
        return []
    return []


def _validate(args: argparse.Namespace) -> int:
    files = _collect(args.paths)
    progress = _Progress(len(files), sys.stderr)
    reports: list[_FileReport] = []
    as_text = args.format == "text"
    try:
        for done, path in enumerate(files):
            progress.show(done, str(path))
            report = _check_file(path, strict=args.strict)
            reports.append(report)
            if as_text and (report.errors or report.warnings):
                progress.clear()
                for problem in report.errors:
                    print(_problem_line(report.path, problem))
                for problem in report.warnings:
                    print(_problem_line(report.path, problem, warning=True))
    finally:
        progress.clear()
    invalid = sum(not report.valid for report in reports)
    if as_text:
        if not args.quiet:
            print(_validate_summary(reports))
    else:
        print(json.dumps(_validate_json(reports, strict=args.strict), indent=2, ensure_ascii=False))
    return EXIT_INVALID if invalid else EXIT_OK


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _validate_summary(reports: Sequence[_FileReport]) -> str:
    invalid = sum(not report.valid for report in reports)
    messages = sum(report.messages or 0 for report in reports)
    errors = sum(len(report.errors) for report in reports)
    warned = sum(len(report.warnings) for report in reports)
    events = sum(report.messages or 0 for report in reports if report.format == "events")
    counted = f"{_plural(messages - events, 'message')}" + (
        f" and {_plural(events, 'event')}" if events else ""
    )
    head = f"checked {_plural(len(reports), 'file')} ({counted} in the valid ones)"
    verdict = f"{invalid:,} invalid ({_plural(errors, 'error')})" if invalid else "all valid"
    tail = f", {_plural(warned, 'warning')}" if warned else ""
    return f"{head}: {verdict}{tail}"


def _problem_json(problem: Problem) -> dict[str, Any]:
    return {
        "location": problem.location,
        "message": problem.message,
        "line": problem.line,
        "column": problem.column,
    }


def _validate_json(reports: Sequence[_FileReport], *, strict: bool) -> dict[str, Any]:
    return {
        "valid": all(report.valid for report in reports),
        "strict": strict,
        "files": [
            {
                "path": report.path,
                "format": report.format,
                "valid": report.valid,
                "messages": report.messages,
                "errors": [_problem_json(p) for p in report.errors],
                "warnings": [_problem_json(p) for p in report.warnings],
            }
            for report in reports
        ],
        "counts": {
            "files": len(reports),
            "valid": sum(report.valid for report in reports),
            "invalid": sum(not report.valid for report in reports),
            "errors": sum(len(report.errors) for report in reports),
            "warnings": sum(len(report.warnings) for report in reports),
        },
    }


# --------------------------------------------------------------------------------------------
# stats


def _iso(timestamp: int) -> str | None:
    """Milliseconds since the epoch as ISO 8601 UTC (``...Z``); None outside datetime's range."""
    try:
        moment = datetime.fromtimestamp(timestamp / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _summary(path: str, messages: Sequence[Message]) -> dict[str, Any]:
    from .pruning import TokenCounter, estimate_tokens

    roles = Counter(message.role for message in messages)
    turns = split_turns(messages)
    calls = sum(len(message.tool_calls) for message in messages)
    results = [message.tool_result for message in messages if message.tool_result is not None]
    stamps = [message.timestamp for message in messages]
    first, last = (min(stamps), max(stamps)) if stamps else (None, None)
    return {
        "path": path,
        "messages": len(messages),
        "roles": {role.value: roles.get(role, 0) for role in Role},
        "turns": len(turns.turns),
        "preamble": len(turns.preamble),
        "tool_calls": calls,
        "tool_errors": sum(result.is_error for result in results),
        "pinned": sum(message.pinned for message in messages),
        "pending": sum(message.is_pending for message in messages),
        "tokens": sum(TokenCounter(estimate_tokens, use_token_count=True).counts(messages)),
        "token_counts_set": sum(message.token_count is not None for message in messages),
        "first_timestamp": first,
        "last_timestamp": last,
        "first": None if first is None else _iso(first),
        "last": None if last is None else _iso(last),
    }


def _stats(args: argparse.Namespace) -> int:
    summary = _summary(args.path, _read_or_fail(args.path))
    if args.format == "json":
        print(json.dumps(summary, indent=2, ensure_ascii=False))
        return EXIT_OK
    rows: list[tuple[str, str]] = [("messages", f"{summary['messages']:,}")]
    rows += [(f"  {role}", f"{count:,}") for role, count in summary["roles"].items()]
    preamble = summary["preamble"]
    rows += [
        ("turns", f"{summary['turns']:,}" + (f"  (+ {_plural(preamble, 'message')} before the first user message)" if preamble else "")),
        ("tool calls", f"{summary['tool_calls']:,}  ({_plural(summary['tool_errors'], 'error')})"),
        ("pinned", f"{summary['pinned']:,}"),
        ("pending", f"{summary['pending']:,}"),
        ("tokens", f"~{summary['tokens']:,}  ({summary['token_counts_set']:,} of {summary['messages']:,} messages carry a token_count)"),
        ("first", _when(summary["first_timestamp"], summary["first"])),
        ("last", _when(summary["last_timestamp"], summary["last"])),
    ]  # fmt: skip
    print(args.path)
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value}")
    return EXIT_OK


def _when(timestamp: int | None, iso: str | None) -> str:
    if timestamp is None:
        return "-"
    return iso if iso is not None else f"{timestamp} ms (outside the calendar's range)"


# --------------------------------------------------------------------------------------------
# prune


def _span(indexes: range) -> str:
    if len(indexes) == 0:
        return "none"
    if len(indexes) == 1:
        return f"[{indexes.start}]"
    return f"[{indexes.start}..{indexes.stop - 1}]"


def _prune(args: argparse.Namespace) -> int:
    from .pruning import ContextConfig, ContextOverflowError, prune

    messages = _read_or_fail(args.path)
    try:
        config = ContextConfig(
            max_context_tokens=args.max_context_tokens,
            max_response_tokens=args.max_response_tokens,
            reserved_tokens=args.reserved_tokens,
        )
    except ValueError as error:  # pragma: no cover - the argument parser already checked the numbers
        raise _Fatal(f"error: {error}", code=EXIT_USAGE) from None
    try:
        result = prune(messages, config, **_template_options(args))
    except ContextOverflowError as error:
        raise _Fatal(f"error: cannot prune {args.path}: {error}") from None
    if args.output:
        _write(Path(args.output), result.messages, pretty=False)
    plan = result.plan
    report = {
        "path": args.path,
        "output": args.output,
        "messages": len(messages),
        "turns": len(plan.kept) + len(plan.dropped),
        "budget": plan.budget,
        "preamble": [plan.preamble.start, plan.preamble.stop],
        "preamble_tokens": plan.preamble_tokens,
        "preamble_kept": plan.preamble_kept,
        "fixed_tokens": plan.fixed_tokens,
        "kept": [[turn.start, turn.stop] for turn in plan.kept],
        "dropped": [[turn.start, turn.stop] for turn in plan.dropped],
        "kept_messages": plan.kept_count,
        "dropped_messages": plan.dropped_count,
        "kept_tokens": plan.kept_tokens,
        "dropped_tokens": plan.dropped_tokens,
    }
    if args.format == "json":
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        _print_plan(report)
    return EXIT_OK


def _template_options(args: argparse.Namespace) -> dict[str, Any]:
    """``prune``'s template, system prompt, tools and text counter from the command line."""
    from .errors import OrionMessagesError
    from .templates import ToolSchema, detect_template, get_template

    wanted = [args.system_prompt, args.tools, args.counter, args.template_file]
    if args.template is None:
        if any(option is not None for option in wanted):
            raise _Fatal(
                "error: --system-prompt, --tools, --counter and --template-file need --template",
                code=EXIT_USAGE,
            )
        return {}
    try:
        if args.template == "auto":
            jinja = Path(args.template_file).read_text(encoding="utf-8") if args.template_file else None
            template = detect_template(jinja)
        else:
            template = get_template(args.template)
        options: dict[str, Any] = {"template": template, "counter": _text_counter(args.counter)}
        if args.system_prompt is not None:
            options["system_prompt"] = Path(args.system_prompt).read_text(encoding="utf-8")
        if args.tools is not None:
            tools = json.loads(Path(args.tools).read_text(encoding="utf-8"))
            options["tools"] = [ToolSchema.model_validate(tool) for tool in tools]
    except (OrionMessagesError, ImportError, ValueError, TypeError, OSError) as error:
        raise _Fatal(f"error: {error}", code=EXIT_USAGE) from None
    return options


def _text_counter(kind: str | None) -> Any:
    from .text_counters import (
        count_words,
        estimate_text_tokens,
        huggingface_counter,
        sentencepiece_counter,
        tiktoken_counter,
    )

    if kind in (None, "chars4"):
        return estimate_text_tokens
    if kind == "words":
        return count_words
    name, _, argument = kind.partition(":")
    adapters: dict[str, Callable[[str], Any]] = {
        "hf": huggingface_counter,
        "tiktoken": tiktoken_counter,
        "sentencepiece": sentencepiece_counter,
    }
    if name not in adapters or not argument:
        raise ValueError(
            f"unknown --counter {kind!r}: use chars4, words, hf:FILE, tiktoken:NAME or sentencepiece:FILE"
        )
    return adapters[name](argument)


def _print_plan(report: dict[str, Any]) -> None:
    kept = [range(*pair) for pair in report["kept"]]
    dropped = [range(*pair) for pair in report["dropped"]]
    preamble = range(*report["preamble"])
    print(f"{report['path']}: {_plural(report['messages'], 'message')} in {_plural(report['turns'], 'turn')}")
    print(f"  budget    {report['budget']:,} tokens for messages")
    print(
        f"  kept      {_plural(len(kept), 'turn')}, {_plural(report['kept_messages'], 'message')}, {report['kept_tokens']:,} tokens"
    )
    print(
        f"  dropped   {_plural(len(dropped), 'turn')}, {_plural(report['dropped_messages'], 'message')}, {report['dropped_tokens']:,} tokens"
    )
    if len(preamble):
        print(
            f"  preamble  {_span(preamble)} {'kept' if report['preamble_kept'] else 'left out, as orion-core'}, "
            f"{report['preamble_tokens']:,} tokens (before the first user message)"
        )
    for name, turns in (("kept", kept), ("dropped", dropped)):
        if turns:
            print(f"  {name} turns: " + ", ".join(_span(turn) for turn in turns))
    if report["output"]:
        print(f"wrote {_plural(report['kept_messages'], 'message')} to {report['output']}")
    else:
        print("(a plan only: pass -o OUT to write the pruned conversation)")


# --------------------------------------------------------------------------------------------
# schema


def _schema(args: argparse.Namespace) -> int:
    from .schema import conversation_schema, render, write_schemas

    if args.out is None:
        sys.stdout.write(render(conversation_schema()).decode("utf-8"))
        return EXIT_OK
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise _Fatal(f"error: {args.out}: exists and is not a folder")
    try:
        written = write_schemas(out)
    except OSError as error:
        raise _Fatal(f"error: {args.out}: cannot write: {error.strerror or error}") from None
    for path in written:
        print(path)
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# convert


def _convert(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    source, target = Path(args.input), Path(args.output)
    known = _LOG_SUFFIXES | _CONVERSATION_SUFFIXES
    for path in (source, target):
        if path.suffix.lower() not in known:
            parser.error(f"cannot tell the format of {path} from its extension: use .json or .jsonl")
    if args.pretty and _is_log(target):
        parser.error("--pretty is for .json output; a JSON Lines record is one line")
    messages = _read_or_fail(args.input)
    _write(target, messages, pretty=args.pretty)
    print(f"wrote {_plural(len(messages), 'message')} to {target}")
    return EXIT_OK


def _write(path: Path, messages: Sequence[Message], *, pretty: bool) -> None:
    """Write ``messages`` atomically, as a JSON array or as JSON Lines by the extension."""
    if path.is_dir():
        raise _Fatal(f"error: {path}: is a folder")
    if not path.parent.is_dir():
        raise _Fatal(f"error: {path.parent}: no such folder")
    try:
        if _is_log(path):
            save_jsonl(path, messages)
        else:
            save(path, messages, indent=2 if pretty else None)
    except FormatError as error:
        raise _Fatal(f"error: {path}: {error}") from None
    except OSError as error:
        raise _Fatal(f"error: {path}: cannot write: {error.strerror or error}") from None
