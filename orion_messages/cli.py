"""The ``orion-messages`` command line: validate, summarize, prune, convert and describe conversations.

Run ``orion-messages --help`` (or ``python -m orion_messages --help``). Every command reads
conversation files (``.json``, a JSON array of messages, as orion-core saves it) and JSON Lines
logs (``.jsonl``, one message a line, as ``append_jsonl`` writes it); ``-`` is standard input for
every input and standard output for every output. Exit status: 0 when all is well, 1 when an
input is invalid or an operation is refused, 2 on a usage error, 130 when interrupted. Problems
are printed one per line as ``FILE: [i].field: message`` (``FILE:LINE: ...`` where a line is
known); everything taken from the data is escaped. A user error is one clear line on stderr,
never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing, suppress
from dataclasses import asdict
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NoReturn

# ``_cli_input.messages`` by its module: the commands name their own list of messages ``messages``.
from . import _cli_convert_options, _cli_input, _cli_prune, _cli_validate
from ._cli_base import STDIO, Fatal, kind_by_name, stdin_once
from ._cli_exit import (
    EXIT_CLOSED_PIPE,
    EXIT_INTERRUPTED,
    EXIT_INVALID,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    err,
    ready_streams,
)
from ._cli_input import FOLDER, read_document
from ._cli_lazy import LazyModule
from ._cli_options import option_text, template_option
from ._cli_output import STORE_TO, output_kind, shown_output, write_orion
from ._cli_text import (
    display_width,
    json_report,
    out,
    padded,
    plural,
    print_stdout,
    printable,
    whole_number,
    write_stdout,
    writing_stdout,
)
from ._collector import collector_paused
from ._store_url import is_store_url, is_url, masked_forms, masked_url, password_forms
from ._version import __version__
from .errors import OrionMessagesError
from .models import Message, utc_datetime
from .pruning import ContextConfig
from .stats import conversation_stats

if TYPE_CHECKING:
    from _typeshed import SupportsWrite

    from . import _cli_convert, _store_cli
    from . import schema as schemas
    from . import store as stores
else:  # each loaded when a command first needs it: the rest start without their models (_cli_lazy)
    _cli_convert = LazyModule("_cli_convert")  # convert --to/--from another format
    _store_cli = LazyModule("_store_cli")  # store URLs: asyncio, sqlite3 (psycopg)
    schemas = LazyModule("schema")  # the schema command
    stores = LazyModule("store")  # list

__all__ = ["main"]


# --------------------------------------------------------------------------------------------
# Entry point


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    ready_streams()
    if sys.stdout is None:  # started with standard output closed (``>&-``): nothing can be said
        err("error: standard output is closed")
        return EXIT_INVALID
    given = sys.argv[1:] if argv is None else argv
    try:
        return _parse_and_run(argv)
    except Fatal as fatal:
        for line in fatal.lines:
            err(line)
        return fatal.code
    except _UsageError as usage:  # from argparse, from the checks after it, or from a command
        return usage.report(given)
    except SystemExit as stop:  # --help and --version
        return _status(stop.code)
    except KeyboardInterrupt:
        err("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        _quiet_stdout()
        return EXIT_CLOSED_PIPE
    except OSError as error:  # anything the checks above did not foresee: still one line
        where = f"{error.filename}: " if error.filename else ""  # none: a standard stream
        err(f"error: {where}{error.strerror or error}")
        return EXIT_INVALID
    except MemoryError:
        err("error: out of memory")
        return EXIT_INVALID


def _parse_and_run(argv: Sequence[str] | None) -> int:
    args = _parser().parse_args(argv)
    _check_path_arguments(args)
    command: Callable[[argparse.Namespace], int] = args.run
    return command(args)


def _status(code: object) -> int:
    if code is None:
        return EXIT_OK
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return EXIT_INVALID


def _quiet_stdout() -> None:
    """Point stdout at the null device, so that what is still buffered for a closed pipe or a
    full disk is not written again, with a traceback, when Python exits."""
    with suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


# --------------------------------------------------------------------------------------------
# The command line


class _UsageError(Exception):
    """A usage error, raised by ``_Parser.error`` and reported by ``main``, which knows the
    arguments' passwords: argparse quotes the arguments it refuses (``unrecognized arguments:
    ...``) as they were typed, store URLs included."""

    def __init__(self, usage: str, line: str) -> None:
        super().__init__(line)
        self.usage = usage
        self.line = line

    def report(self, argv: Sequence[str]) -> int:
        """Print the usage and the error line, passwords masked and escaped, and a hint for each
        argument argparse took for an option that names a file; return the status."""
        line = _without_passwords(self.line, argv)
        sys.stderr.write(self.usage)
        sys.stderr.write(printable(line) + "\n")  # a file name may hold ``\x1b]0;...\x07``
        for item in argv:
            if item.startswith("-") and item != "-" and os.path.lexists(item):
                err(f"hint: {item} is read as an option; for the file of that name, write ./{item}")
        return EXIT_USAGE


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its usage errors raised as ``_UsageError`` for ``main`` to report.
    The subcommands' parsers are of this class too (``add_subparsers`` uses the parent's)."""

    def error(self, message: str) -> NoReturn:
        raise _UsageError(self.format_usage(), f"{self.prog}: error: {message}")

    def _print_message(self, message: str, file: SupportsWrite[str] | None = None) -> None:
        # argparse ignores a failure to write (``--help > /dev/full`` exited 0, printing nothing);
        # ``--help`` and ``--version`` on stdout fail as any report on stdout does.
        if file is sys.stdout and message:
            print_stdout(message, end="")
        else:
            super()._print_message(message, file)


def _without_passwords(line: str, argv: Sequence[str]) -> str:
    """``line`` with the passwords of the URLs in the arguments (``--name=URL`` and ``-xURL``
    included) masked: each URL where it is quoted whole, as written or as ``repr`` quotes it
    (argparse's ``invalid choice: %r``), as ``masked_url`` shows it (every password, however
    short), then each password's forms elsewhere, as written, decoded and ``repr``-quoted
    (``masked_forms``: an argument may be the password itself)."""
    urls = {url for item in argv for url in _option_values(item) if is_url(url) or is_store_url(url)}
    for url in sorted(urls, key=len, reverse=True):  # one may hold another
        line = line.replace(url, masked_url(url)).replace(_repr_inner(url), _repr_inner(masked_url(url)))
    forms = {form for url in urls for form in password_forms(url)}
    return masked_forms(line, forms)


def _option_values(item: str) -> list[str]:
    """What argparse may quote alone of an argument: the argument, the value of ``--name=VALUE``,
    and each value glued to short options (``-qVALUE``, ``-qvVALUE``: every rest after a ``-``
    and a letter or more that starts at most ``_SCHEME_MAX`` characters before the first ``://``,
    where a URL's scheme ends)."""
    values = [item]
    if item.startswith("--") and "=" in item:
        values.append(item.partition("=")[2])
    elif item.startswith("-") and (end := item.find("://")) > 1:
        values += [item[start:] for start in range(max(2, end - _SCHEME_MAX), end)]
    return values


_SCHEME_MAX = 32
"""The longest URL scheme looked for inside an argument glued to short options (``postgresql`` is 10)."""


def _repr_inner(text: str) -> str:
    """``text`` as ``repr`` quotes it, without the quotes (a backslash doubled, say)."""
    return repr(text)[1:-1]


_PATH_ARGUMENTS = ("paths", "path", "input", "output", "url")
"""The arguments that name a file or a store, in every command that has them."""


def _check_path_arguments(args: argparse.Namespace) -> None:
    """Usage errors for what names no file or store: an empty argument (``""``, which the
    writers refuse deep inside), and a URL of a scheme no command reads (``mysql://``,
    ``postgresql+psycopg://``, shown without its password) rather than a missing file."""
    for name in _PATH_ARGUMENTS:
        value = getattr(args, name, None)
        for item in value if isinstance(value, list) else [value]:
            if item == "":
                args.parser.error("an empty argument names no file: give a path, a store URL or -")
            if isinstance(item, str) and is_url(item) and not is_store_url(item):
                args.parser.error(
                    f"{masked_url(item)}: not a store URL; expected sqlite:///PATH or "
                    "postgresql://USER@HOST/DB (for a file of that name, write ./NAME)"
                )


def _parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = _Parser(
        prog=PROG,
        description="Validate, summarize, prune and convert orion-core conversations "
        "(.json arrays of messages and .jsonl logs). '-' is standard input or output.",
        epilog="Exit status: 0 valid or done, 1 invalid input or refused, 2 usage error, 130 interrupted, "
        "141 standard output closed before everything was written.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_validate(commands)
    _add_stats(commands)
    _add_prune(commands)
    _add_schema(commands)
    _add_convert(commands)
    _add_list(commands)
    return parser


def _add_validate(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    validate = commands.add_parser(
        "validate",
        help="check conversation files and logs against orion-core's format",
        description="Check .json conversations, .jsonl logs and agent event streams (folders are "
        "searched recursively; '-' reads standard input). Each problem is one line, FILE: [i].field: "
        "message. A known key repeated in one object is an error, as orion-core refuses it. Semantic "
        "problems (duplicate ids, results without a call, ...) are warnings; --strict makes them "
        "errors, along with a torn last line.",
    )
    validate.add_argument(
        "paths", nargs="+", metavar="PATH", help="a file, a folder to search, a store URL, or -"
    )
    validate.add_argument(
        "--strict", action="store_true", help="semantic problems and a torn last line are errors"
    )
    _add_format(validate)
    validate.add_argument("-q", "--quiet", action="store_true", help="print problems only, no summary")
    validate.set_defaults(run=_cli_validate.run, parser=validate)


_ONE_CONVERSATION = "a .json conversation, a .jsonl log, a store URL with ?conversation=ID, or - (stdin)"
"""The help of an argument that names one conversation to read."""


def _add_stats(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    stats = commands.add_parser(
        "stats",
        help="summarize one conversation: roles, turns, pinned, pending, tokens, time span",
        description="Count messages per role and in all, turns, tool calls, pinned and pending "
        "messages, estimate tokens, and show the earliest and latest timestamp (UTC).",
    )
    stats.add_argument("path", metavar="PATH", help=_ONE_CONVERSATION)
    _add_format(stats)
    stats.set_defaults(run=_stats, parser=stats)


_PRUNE_DESCRIPTION = (
    "Plan pruning as orion-core does (sliding window over whole turns; pinned messages keep "
    "their turn) and print a summary (--verbose: every turn). With -o, write the pruned "
    "conversation (-o - writes it to stdout and the summary to stderr). A budget that cannot "
    "hold the fixed overhead (system prompt and tools), the latest turn or the pinned turns is "
    "refused (exit 1)."
)


def _add_prune(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    prune = commands.add_parser(
        "prune",
        help="plan orion-core's turn-aware pruning and write the pruned conversation",
        description=_PRUNE_DESCRIPTION,
    )
    prune.add_argument("path", metavar="PATH", help=_ONE_CONVERSATION)
    defaults = ContextConfig()  # orion-core's defaults
    for flag, metavar, text, default in (
        ("--max-context-tokens", "N", "the model's whole context window", defaults.max_context_tokens),
        ("--max-response-tokens", "M", "tokens kept free for the reply", defaults.max_response_tokens),
    ):
        help_text = f"{text} (default {default}, as orion-core)"
        prune.add_argument(flag, type=_count, default=default, metavar=metavar, help=help_text)
    prune.add_argument(
        "--reserved-tokens",
        type=_count,
        default=0,
        metavar="R",
        help="tokens for the system prompt and tools sent outside the messages (default 0)",
    )
    prune.add_argument("-o", "--output", metavar="OUT", help=_PRUNE_OUTPUT)
    _add_to(prune, "format of OUT (default: by its extension; for -, the input's format)")
    prune.add_argument("-v", "--verbose", action="store_true", help="print every kept and dropped turn")
    prune.add_argument(
        "--template",
        metavar="NAME",
        type=template_option,
        help="plan exactly as orion-core with this chat template (chatml, llama3, mistral, ...; "
        "auto: detect it from --template-file)",
    )
    prune.add_argument(
        "--template-file",
        metavar="FILE",
        help="a Jinja chat template (as in a GGUF file), or - (stdin); only with --template auto, "
        "which detects the template from it (without it, auto is chatml)",
    )
    prompt = prune.add_mutually_exclusive_group()
    prompt.add_argument(
        "--system-prompt-file",
        metavar="FILE",
        help="the system prompt, read from FILE (or - for stdin) as is",
    )
    # Its first name, kept as the same option; errors name the one given.
    prompt.add_argument("--system-prompt", metavar="FILE", help="the same as --system-prompt-file")
    prune.add_argument(
        "--tools",
        metavar="FILE",
        help="the tools, a JSON array of {name, description, parameters}, from FILE or - (stdin)",
    )
    prune.add_argument(
        "--counter",
        metavar="KIND",
        help="how rendered text is counted: chars4 (default), words, hf:TOKENIZER.JSON, "
        "tiktoken:ENCODING or sentencepiece:MODEL",
    )
    _add_format(prune)
    prune.set_defaults(run=_cli_prune.run, parser=prune)


_PRUNE_OUTPUT = (
    "write the pruned conversation here: a .json or .jsonl file, a store URL with ?conversation=ID, or -"
)


def _add_schema(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of a conversation, or write every schema to a folder",
        description="Without --out (or with --out -), print the JSON Schema of a conversation file "
        "to stdout. With --out DIR, write every schema file there.",
    )
    schema.add_argument("--out", metavar="DIR", help="write every schema file into this folder")
    schema.set_defaults(run=_schema, parser=schema)


def _add_convert(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    convert = commands.add_parser(
        "convert",
        help="convert between a JSON array (.json) and JSON Lines (.jsonl)",
        description="Read IN and write OUT, each format chosen by its extension (.json: a JSON "
        "array, as orion-core saves it; .jsonl: one message a line) or by --to. Writes files "
        "atomically; '-' is standard input or output. IN and OUT may be store URLs naming a "
        "conversation (sqlite:///chats.db?conversation=c1, postgresql://user@host/db?conversation=c1): "
        "IN must exist; OUT is created, or its messages replaced.",
    )
    convert.add_argument("input", metavar="IN", help=_ONE_CONVERSATION)
    convert.add_argument(
        "output",
        metavar="OUT",
        help="the file to write (.json or .jsonl), a store URL with ?conversation=ID, or -",
    )
    convert.add_argument(
        "--pretty", action="store_true", help="indent JSON output (serde's pretty form); .json only"
    )
    # --to json|jsonl|openai|anthropic|..., --from, --strict: format conversions
    _cli_convert_options.add_arguments(convert)
    convert.set_defaults(run=_convert, parser=convert)


def _add_list(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    listing = commands.add_parser(
        "list",
        help="list the conversations in a store: id, messages, created, last change, title",
        description="List a store's conversations, oldest first: each one's id, message count, "
        "creation and last change (UTC) and title; --format json adds the metadata and each one's "
        "URL (the id percent-encoded). The store is only read: a URL that names no store is an error.",
    )
    listing.add_argument(
        "url", metavar="URL", help="a store: sqlite:///chats.db or postgresql://user@host/db"
    )
    _add_format(listing)
    listing.set_defaults(run=_list, parser=listing)


def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text for people (default), json for machines",
    )


def _add_to(parser: argparse.ArgumentParser, text: str) -> None:
    parser.add_argument("--to", choices=("json", "jsonl"), help=text)


def _count(text: str) -> int:
    try:
        value = whole_number(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of tokens, found {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of tokens >= 0, found {value}")
    return value


# --------------------------------------------------------------------------------------------
# stats


def _iso(timestamp: int) -> str | None:
    """Milliseconds since the epoch as ISO 8601 UTC (``...Z``); None outside datetime's range."""
    try:
        moment = utc_datetime(timestamp)
    except OverflowError:
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _summary(path: str, messages: Iterable[Message]) -> dict[str, Any]:
    stats = conversation_stats(messages)
    first, last = stats.first_timestamp, stats.last_timestamp
    return {
        "path": path,
        "messages": stats.messages,
        "roles": dict(stats.roles),
        "turns": stats.turns,
        "preamble": stats.preamble,
        "tool_calls": stats.tool_calls,
        "tool_errors": stats.tool_errors,
        "pinned": stats.pinned,
        "pending": stats.pending,
        "tokens": stats.tokens,
        "token_counts_set": stats.token_counts_set,
        "first_timestamp": first,
        "last_timestamp": last,
        "first": None if first is None else _iso(first),
        "last": None if last is None else _iso(last),
    }


def _stats(args: argparse.Namespace) -> int:
    name, stream = _cli_input.message_stream(args.path)  # counted as read: a log is never held
    with collector_paused(), closing(stream):  # turns and token counts of a long log: no cycles
        summary = _summary(name, stream)
    if args.format == "json":
        print_stdout(json_report(summary))
        return EXIT_OK
    rows: list[tuple[str, str]] = [("messages", f"{summary['messages']:,}")]
    rows += [(f"  {role}", f"{count:,}") for role, count in summary["roles"].items()]
    preamble = summary["preamble"]
    about = "~" if summary["token_counts_set"] < summary["messages"] else ""  # some are estimated
    rows += [
        ("turns", f"{summary['turns']:,}" + (f"  (+ {plural(preamble, 'message')} before the first user message)" if preamble else "")),
        ("tool calls", f"{summary['tool_calls']:,}  ({plural(summary['tool_errors'], 'error')})"),
        ("pinned", f"{summary['pinned']:,}"),
        ("pending", f"{summary['pending']:,}"),
        ("tokens", f"{about}{summary['tokens']:,}  ({summary['token_counts_set']:,} of {summary['messages']:,} messages carry a token_count)"),
        ("earliest", _when(summary["first_timestamp"], summary["first"])),
        ("latest", _when(summary["last_timestamp"], summary["last"])),
    ]  # fmt: skip
    out(name)
    width = max(len(row) for row, _ in rows)
    for row, value in rows:
        out(f"  {row.ljust(width)}  {value}")
    return EXIT_OK


def _when(timestamp: int | None, iso: str | None) -> str:
    if timestamp is None:
        return "-"
    return iso if iso is not None else f"{timestamp} ms (outside the calendar's range)"


# --------------------------------------------------------------------------------------------
# list


def _list(args: argparse.Namespace) -> int:
    wanted = "a store URL, sqlite:///PATH or postgresql://USER@HOST/DB, without ?conversation="
    if not is_store_url(args.url):
        args.parser.error(f"{printable(args.url)} is not {wanted}")
    try:
        if stores.parse_store_url(args.url).conversation is not None:
            args.parser.error(f"{printable(masked_url(args.url))} names a conversation; list takes {wanted}")
        listing = _store_cli.listed_conversations(args.url)
    except OrionMessagesError as error:
        raise Fatal(f"error: {printable(str(error))}") from None
    listed = listing.conversations
    if args.format == "json":
        conversations = [{**asdict(info), "url": url} for info, url in listed]
        print_stdout(json_report({"store": listing.url, "conversations": conversations}))
        return EXIT_OK
    rows = [("ID", "MESSAGES", "CREATED (UTC)", "UPDATED (UTC)", "TITLE")]
    rows += [
        (printable(info.id), f"{info.message_count:,}", _when(info.created, _iso(info.created)),
         _when(info.updated, _iso(info.updated)), printable(info.title or ""))
        for info, _ in listed
    ]  # fmt: skip
    widths = [max(display_width(row[column]) for row in rows) for column in range(4)]
    for shown_id, count, created, updated, title in rows if listed else []:
        line = f"{padded(shown_id, widths[0])}  {padded(count, widths[1], right=True)}  {padded(created, widths[2])}  "
        out(f"{line}{padded(updated, widths[3])}  {title}".rstrip())
    out(f"{plural(len(listed), 'conversation')} in {listing.display}")
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# schema


def _schema(args: argparse.Namespace) -> int:
    if args.out is None or args.out == STDIO:
        with writing_stdout():
            write_stdout(schemas.render(schemas.conversation_schema()))
        return EXIT_OK
    if not args.out:  # Path("") is the working folder: five files written where nobody asked
        args.parser.error("--out names no folder; give one, or - for standard output")
    folder = Path(args.out)
    if folder.exists() and not folder.is_dir():
        raise Fatal(f"error: {args.out}: exists and is not a folder")
    try:
        written = schemas.write_schemas(folder)
    except OSError as error:
        raise Fatal(f"error: {args.out}: cannot write: {error.strerror or error}") from None
    for path in written:
        out(str(path))
    return EXIT_OK


# --------------------------------------------------------------------------------------------
# convert


def _convert(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    if (ignored := _cli_convert_options.inapplicable_option(args)) is not None:
        raise Fatal(f"error: {ignored}", code=EXIT_USAGE)  # one line, as prune's --tools without --template
    if _cli_convert_options.wants_conversion(args):
        return _convert_formats(args)
    from_store = is_store_url(args.input)
    if args.input != STDIO and not from_store and os.path.isdir(args.input):
        raise Fatal(f"error: {args.input}: {FOLDER}")  # as stats says it, not "no extension"
    if args.input != STDIO and not from_store and kind_by_name(args.input) is None:
        parser.error(f"cannot tell the format of {printable(args.input)} from its extension: use .json or .jsonl")  # fmt: skip
    target = _orion_target(args)
    _, _, messages = _cli_input.messages(args.input)
    write_orion(args.output, messages, kind=target, pretty=args.pretty)
    if args.output != STDIO:
        out(f"wrote {plural(len(messages), 'message')} to {printable(shown_output(args.output))}")
    return EXIT_OK


def _convert_formats(args: argparse.Namespace) -> int:
    """``convert --to`` or ``--from`` another format. With ``--from``, OUT holds orion-core's
    formats and passes the checks of a plain convert (``_orion_target``), before IN is read."""
    stdin_once(("IN", args.input), ("--system-prompt-file", args.system_prompt_file))
    if args.to in _cli_convert_options.FOREIGN and is_store_url(args.output):
        args.parser.error(
            f"--to {args.to} writes a file or -, not a store URL: a store holds orion conversations only"
        )
    # With --to another format nothing orion is written: OUT is that format's, not checked here.
    target = _orion_target(args) if args.to not in _cli_convert_options.FOREIGN else None
    return _cli_convert.run(
        args,
        read_orion=_read_messages,
        write_orion=partial(write_orion, kind=target, pretty=args.pretty),
        read_document=read_document,
        read_option_text=option_text,
    )


def _orion_target(args: argparse.Namespace) -> Literal["json", "jsonl"] | None:
    """The format ``convert`` writes orion messages to OUT in, None for a store URL: the one
    place where OUT is checked, for a plain convert and for ``--from`` alike, so both refuse the
    same usage errors (``--to`` contradicting the extension, no format for ``-``, ``--pretty``
    where it would be ignored) before anything is read or written."""
    parser: argparse.ArgumentParser = args.parser
    if is_store_url(args.output):
        if args.to is not None:
            parser.error(STORE_TO)
        if args.pretty:
            parser.error(_PRETTY_COMPACT)
        return None
    kind = output_kind(args)
    if args.pretty and kind == "jsonl":
        parser.error(_PRETTY_COMPACT)
    return kind


_PRETTY_COMPACT = "--pretty is for .json output; a JSON Lines record or a stored row is compact"


def _read_messages(name: str) -> list[Message]:
    """The messages of one input (a file, ``-`` or a store URL); any problem is a fatal error."""
    return _cli_input.messages(name)[2]
