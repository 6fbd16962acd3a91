"""Writing messages: to a file (atomically) or standard output, as a JSON array or JSON Lines, or
to a store URL; the format chosen by ``--to`` or the file's extension."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ._cli_base import STDIO, Fatal, Kind, kind_by_name
from ._cli_lazy import LazyModule
from ._cli_text import printable, write_stdout
from ._store_url import is_store_url, masked_url
from .errors import FormatError, OrionMessagesError
from .models import Message
from .storage import save, save_jsonl
from .wire import dumps, dumps_message

if TYPE_CHECKING:
    from . import _store_cli
else:  # each loaded when a command first needs it: the rest start without their models (_cli_lazy)
    _store_cli = LazyModule("_store_cli")  # store URLs: asyncio, sqlite3 (psycopg)

__all__ = ["STORE_TO", "output_kind", "shown_output", "store_messages", "write", "write_orion"]


def output_kind(args: argparse.Namespace, *, default: Kind | None = None) -> Literal["json", "jsonl"]:
    """The format to write ``args.output`` in: ``--to``, else its extension, else ``default`` for ``-``."""
    parser: argparse.ArgumentParser = args.parser
    if args.to is not None:
        named = kind_by_name(args.output) if args.output != STDIO else None
        if named in ("json", "jsonl") and named != args.to:
            # The file would not read back as its name says (load() of a log fails, and so on).
            parser.error(f"--to {args.to} contradicts the extension of {printable(args.output)}: rename it, or leave --to out")  # fmt: skip
        return "jsonl" if args.to == "jsonl" else "json"
    if args.output == STDIO:
        if default is None or default == "events":
            parser.error("writing to standard output: say which format with --to json or --to jsonl")
        return "jsonl" if default == "jsonl" else "json"
    kind = kind_by_name(args.output)
    if kind is None:
        parser.error(f"cannot tell the format of {printable(args.output)} from its extension: use .json or .jsonl, or --to")  # fmt: skip
    return kind


STORE_TO = "--to is for a file or -: a store URL holds messages, not a file format"
"""The usage error of ``--to`` with a store URL for output."""


def shown_output(name: str) -> str:
    """An output's name as printed: a store URL without its password."""
    return masked_url(name) if is_store_url(name) else name


def write_orion(
    output: str, messages: Sequence[Message], *, kind: Literal["json", "jsonl"] | None, pretty: bool
) -> None:
    """Write ``messages`` to a store URL (``kind`` None), or to a file or ``-`` as ``kind`` says
    (``cli._orion_target`` chose it)."""
    if kind is None:
        store_messages(output, messages)
    else:
        write(output, messages, kind, pretty=pretty)


def store_messages(url: str, messages: Sequence[Message]) -> None:
    """Write ``messages`` as the conversation a store URL names (created, or replaced whole)."""
    try:
        _store_cli.write_target(url, messages)
    except OrionMessagesError as error:
        raise Fatal(f"error: {printable(str(error))}") from None


def write(output: str, messages: Sequence[Message], kind: Literal["json", "jsonl"], *, pretty: bool) -> None:
    """Write ``messages`` to standard output, or atomically to a file, as a JSON array or JSON Lines."""
    try:
        if output == STDIO:
            if kind == "jsonl":
                data = b"".join(dumps_message(message) + b"\n" for message in messages)
            else:
                data = dumps(messages, indent=2 if pretty else None)  # as save writes it
            write_stdout(data)
            return
        path = Path(output)
        if path.is_dir():
            raise Fatal(f"error: {output}: is a folder")
        if not path.parent.is_dir():
            raise Fatal(f"error: {path.parent}: no such folder")
        if kind == "jsonl":
            save_jsonl(path, messages)
        else:
            save(path, messages, indent=2 if pretty else None)
    except FormatError as error:
        raise Fatal(f"error: {output}: {error}") from None
    except BrokenPipeError:
        raise
    except OSError as error:
        raise Fatal(f"error: {output}: cannot write: {error.strerror or error}") from None
