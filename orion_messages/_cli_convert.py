"""``orion-messages convert --to/--from FORMAT``: conversions between formats on the command line.

``cli.py`` adds the options to its ``convert`` command (``_cli_convert_options``) and hands over
to ``run`` when a format other than orion-core's own is asked for (``wants_conversion``). The loss
report goes to stdout, every line escaped (never raw data from the files); ``--strict`` refuses
a lossy conversion and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ._cli_convert_options import FOREIGN, ORION
from ._cli_exit import EXIT_INVALID, EXIT_OK, EXIT_USAGE, err
from ._cli_text import printable, problem_lines, write_stdout
from ._conversion_input import TIMESTAMP_EXPECTED, carries_nothing, is_timestamp
from ._json_rules import ANY_JSON, minus_zero_as_float
from ._problems import problem_from
from ._store_url import is_store_url, masked_url
from ._text import location, shown_location
from ._unknown_values import is_too_deep
from .anthropic_messages import from_anthropic, to_anthropic
from .chat_template_dicts import from_chat_template, to_chat_template
from .conversions import ConversionResult, _Report
from .errors import ConversionError, FormatError, Problem
from .models import Message
from .openai_chat import from_openai, to_openai
from .orion_backend import to_orion_backend
from .storage import _replace_atomically
from .wire import duplicate_key_problems, refuse_non_finite_literal, validate_json

__all__ = ["run"]

ReadOrion = Callable[[str], list[Message]]
"""How the command line reads orion messages from a name (a file, ``-`` or a store URL)."""
ReadDocument = Callable[[str], tuple[str, bytes]]
"""How the command line reads another format's document: the name to show and the bytes."""
WriteOrion = Callable[[str, list[Message]], None]
"""How the command line writes orion messages to a name, in the format it chose for OUT (the
checks of a plain convert, made before anything is read)."""
ReadOptionText = Callable[[str, str], str]
"""How the command line reads the text of the file an option names: ``(option, name)``, ``-`` for stdin."""

_SHOWN = 20


def run(
    args: argparse.Namespace,
    *,
    read_orion: ReadOrion,
    write_orion: WriteOrion,
    read_document: ReadDocument,
    read_option_text: ReadOptionText,
) -> int:
    """Convert ``args.input`` to ``args.output`` between formats, print the report, return the exit status.

    The command line's own readers and writers handle orion-core's side, read the foreign
    document and the files options name, so ``-``, store URLs and the refusal of special files
    work here as everywhere.
    """
    if args.to in FOREIGN and args.from_format != ORION:
        return _usage("convert between two foreign formats in two steps, through orion")
    if args.system_prompt is not None and args.system_prompt_file is not None:
        return _usage("give --system-prompt-file FILE or the deprecated --system-prompt TEXT, not both")
    if args.timestamp is not None and not is_timestamp(args.timestamp):  # before the input is read
        return _usage(f"--timestamp {args.timestamp}: expected {TIMESTAMP_EXPECTED}, found {args.timestamp}")
    source = "<stdin>" if args.input == "-" else args.input
    try:
        if args.from_format == ORION:
            prompt = _system_prompt(args, read_option_text)  # a usage error before the input is read
            result: ConversionResult[Any] = _export(args, read_orion(args.input), prompt)
        else:
            source, data = read_document(args.input)
            result = _import(args, _parse_document(data))
    except (FormatError, ConversionError) as error:
        omitted = error.omitted if isinstance(error, FormatError) else 0
        for line in problem_lines(source, error.problems, omitted):
            err(line)
        return EXIT_INVALID
    try:
        if args.from_format == ORION:
            _write_foreign(args.output, result.value, pretty=args.pretty)
        else:
            write_orion(args.output, result.value)
    except FormatError as error:
        err(f"error: {_shown(args.output)}: {error}")
        return EXIT_INVALID
    except BrokenPipeError:  # the reader went away: exit 141 with nothing said, as every command
        raise
    except OSError as error:
        err(f"error: {_shown(args.output)}: cannot write: {error.strerror or error}")
        return EXIT_INVALID
    _print_report(args, result)
    return EXIT_OK


def _usage(text: str) -> int:
    err(f"error: {text}")
    return EXIT_USAGE


def _options(args: argparse.Namespace) -> dict[str, Any]:
    # Each --accept adds its fields; each is split alone, so a quote left open in one cannot
    # take in the next.
    fields = [field for given in args.accept or () for field in accepted_fields(given)]
    return {"strict": args.strict, "accept": fields}


# A field, up to a comma outside quotes: a key that is not a plain name is printed quoted in
# brackets (``["a,b"]``, ``\"`` and ``\\`` escaped inside), commas included, and named so here.
_FIELD = re.compile(r'(?:"(?:[^"\\]|\\.)*"?|[^,"])+')


def accepted_fields(given: str) -> list[str]:
    """The fields one ``--accept`` names: split on commas outside a quoted key (``["a,b"]``,
    as the losses print a key that is not a plain name), each stripped, empty ones left out."""
    return [field.strip() for field in _FIELD.findall(given) if field.strip()]


def _system_prompt(args: argparse.Namespace, read_option_text: ReadOptionText) -> str:
    """``--to orion-backend``'s system prompt: the text of ``--system-prompt-file``, or the
    deprecated ``--system-prompt TEXT`` (with a note on stderr), or none."""
    if args.system_prompt_file is not None:
        return read_option_text("--system-prompt-file", args.system_prompt_file)
    if args.system_prompt is None:
        return ""
    err("warning: convert --system-prompt TEXT is deprecated and goes in the next release: put the "
        "prompt in a file and pass --system-prompt-file FILE (or - for standard input), as prune does")  # fmt: skip
    if args.system_prompt == "-" or (args.system_prompt and os.path.isfile(args.system_prompt)):
        what = "standard input" if args.system_prompt == "-" else "a file"
        err(f'note: --system-prompt is the prompt itself here, and "{args.system_prompt}" is sent as it is '
            f"(--system-prompt-file reads {what})")  # fmt: skip
    return str(args.system_prompt)


def _export(args: argparse.Namespace, messages: list[Message], system_prompt: str) -> ConversionResult[Any]:
    options = _options(args)
    if args.to == "orion-backend":
        return to_orion_backend(messages, system_prompt=system_prompt, **options)
    if args.to == "chat-template":
        return to_chat_template(
            messages,
            arguments=args.arguments or "object",
            metadata=not args.no_metadata,
            orphans=args.orphans or "keep",
            **options,
        )
    convert: Callable[..., ConversionResult[Any]] = to_openai if args.to == "openai" else to_anthropic
    return convert(messages, orphans=args.orphans or "error", **options)


def _import(args: argparse.Namespace, data: Any) -> ConversionResult[list[Message]]:
    """Read a foreign document: a JSON array of messages, or a request object with ``"messages"``.

    A request's other parameters (``model``, ``tools``...) have no place in an orion-core
    conversation: each one is reported (at the key, outside the message list), and ``--strict``
    refuses them unless accepted.
    """
    report = _Report(**_options(args))
    known = _REQUEST_KEYS.get(args.from_format, _REQUEST_KEYS["openai"])
    if isinstance(data, dict):
        for key, value in data.items():
            if key not in known and not carries_nothing(value):
                report.lose(None, location((key,)), _NOT_CONVERTED)  # as a message's key: ``["a.b"]``
        messages = _list(data.get("messages"))
    else:
        messages = _list(data)
    options: dict[str, Any] = {"timestamp": args.timestamp}
    if args.from_format == "anthropic":
        options["system"] = data.get("system") if isinstance(data, dict) else None
    result = _IMPORTERS[args.from_format](messages, **options)
    report.extend(result.losses)
    return report.finish(result.value)


_IMPORTERS: dict[str, Callable[..., ConversionResult[list[Message]]]] = {
    "anthropic": from_anthropic,
    "openai": from_openai,
    "chat-template": from_chat_template,
}


_REQUEST_KEYS = {"anthropic": frozenset({"messages", "system"}), "openai": frozenset({"messages"})}
_NOT_CONVERTED = "a request parameter, not converted: an orion-core conversation holds only the messages"


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ConversionError(
            [Problem("", 'expected a JSON array of messages (or an object with "messages")')]
        )
    return value


def _parse_document(data: bytes) -> Any:
    """A JSON document in another format, read as every input is: malformed JSON (a byte order
    mark, trailing data, ``NaN`` or ``Infinity`` where JSON has none, a lone surrogate escape)
    is reported at its line and column, in the library's words.

    Every value of such a document is read: none is an unknown key that orion-core skips
    unread, so the library's reading past values it cannot keep (stand-ins for them, with a
    warning) is not for it; only nesting deeper than the parser reads is read past, as for
    every input. For the same reason a key repeated in any object is refused (the parser keeps
    the last value: the others would be lost silently), with the check every command makes.
    """
    try:
        value = ANY_JSON.validator.validate_json(minus_zero_as_float(data))
    except ValidationError as error:
        # Read again to be told where and why (an empty document, a byte order mark, NaN
        # before the parser's stop); "whole": a value the parser cannot read is malformed here.
        return validate_json(ANY_JSON, data, problem_from, read_whole=not is_too_deep(error))
    # jiter reads NaN and Infinity as floats; JSON has neither, and the library refuses them
    # only once a read has failed.
    refuse_non_finite_literal(data, None)
    if repeated := duplicate_key_problems(data, None):
        raise FormatError(repeated)
    return value


def _write_foreign(name: str, value: Any, *, pretty: bool) -> None:
    data = (json.dumps(value, ensure_ascii=False, indent=2 if pretty else None) + "\n").encode("utf-8")
    if name == "-":
        write_stdout(data)
    else:
        _replace_atomically(name, data)


def _shown(name: str) -> str:
    """A file name as given, a store URL without its password."""
    return masked_url(name) if is_store_url(name) else name


def _print_report(args: argparse.Namespace, result: ConversionResult[Any]) -> None:
    target = args.to if args.from_format == ORION else ORION
    # The report goes to stderr when the conversion itself goes to stdout.
    out = sys.stderr if args.output == "-" else sys.stdout
    count = len(result.value["messages"]) if isinstance(result.value, dict) else len(result.value)
    print(
        f"wrote {count:,} message{'' if count == 1 else 's'} to {printable(_shown(args.output))} ({target})",
        file=out,
    )
    if result.lossless:
        print("nothing lost", file=out)
        return
    print(f"lost or changed ({len(result.losses):,}):", file=out)
    fields = ", ".join(
        f"{printable(shown_location(field))} {number:,}" for field, number in result.losses_by_field()
    )
    print(f"  by field: {fields}", file=out)
    for loss in result.losses[:_SHOWN]:
        print(f"  {printable(str(loss))}", file=out)
    if len(result.losses) > _SHOWN:
        print(f"  ... and {len(result.losses) - _SHOWN:,} more", file=out)
