"""``prune``'s chat template options (``--template``, ``--template-file``, the system prompt,
``--tools``, ``--counter``), and the files that options name, read as every input is (``-`` is
standard input; only a regular file is read)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from functools import cache
from typing import Any

from pydantic import TypeAdapter
from pydantic_core import ErrorDetails

from ._cli_base import STDIO, Fatal
from ._cli_exit import EXIT_USAGE, err
from ._cli_input import (
    STDIN_LABEL,
    Progress,
    Unreadable,
    library_warnings,
    open_file,
    read_stdin,
    warning_problems,
)
from ._cli_lazy import interrupts_held
from ._cli_text import MAX_PROBLEMS_ON_STDERR, one_line, printable, problem_line, problem_lines
from ._problems import describe, problem_from
from ._whitespace import UNICODE_WHITESPACE
from .errors import FormatError, OrionMessagesError, OrionMessagesWarning, Problem
from .templates import ChatTemplate, ToolSchema, detect_template, get_template
from .text_counters import (
    count_words,
    estimate_text_tokens,
    huggingface_counter,
    sentencepiece_counter,
    tiktoken_counter,
)
from .wire import duplicate_key_problems, validate_json

__all__ = ["option_text", "system_prompt_option", "template_option", "template_options", "template_usage"]


def template_option(value: str) -> str:
    """``--template``'s value, ``auto`` spelled as template names may be (trimmed, ASCII letters
    in any case: ``Auto``), so that it is told from a name as ``get_template`` would read it."""
    trimmed = value.strip(UNICODE_WHITESPACE)
    return "auto" if trimmed.isascii() and trimmed.lower() == "auto" else value


def template_usage(args: argparse.Namespace) -> None:
    """Refuse, before anything is read, template options that would be ignored: a usage error."""
    options = [system_prompt_option(args), ("--tools", args.tools), ("--counter", args.counter)]
    given = [
        option for option, value in [*options, ("--template-file", args.template_file)] if value is not None
    ]
    if args.template is None and given:
        names = ", ".join(given[:-1]) + " and " + given[-1] if len(given) > 1 else given[0]
        raise Fatal(f"error: {names} {'need' if len(given) > 1 else 'needs'} --template", code=EXIT_USAGE)
    if args.template_file is not None and args.template != "auto":
        raise Fatal(
            f"error: --template-file is read only by --template auto, which detects the template "
            f"from it; --template {printable(args.template)} names the template itself",
            code=EXIT_USAGE,
        )


def template_options(args: argparse.Namespace) -> dict[str, Any]:
    """``prune``'s template, system prompt, tools and text counter from the command line."""
    if args.template is None:
        return {}
    try:
        if args.template == "auto":
            template = _detected_template(args.template_file)
        else:
            template = get_template(args.template)
        options: dict[str, Any] = {"template": template, "counter": _text_counter(args.counter)}
        option, name = system_prompt_option(args)
        if name is not None:
            options["system_prompt"] = option_text(option, name)
        if args.tools is not None:
            options["tools"] = _read_tools(args.tools)
    except (OrionMessagesError, ImportError, ValueError, TypeError) as error:
        raise Fatal(f"error: {error}", code=EXIT_USAGE) from None
    except OSError as error:  # its reason, never "[Errno 2] ..."
        raise Fatal(f"error: {error.filename or ''}: {error.strerror or error}", code=EXIT_USAGE) from None
    return options


def system_prompt_option(args: argparse.Namespace) -> tuple[str, str | None]:
    """``prune``'s system prompt file as given: the option's name and the file's (None without one)."""
    if args.system_prompt is not None:
        return "--system-prompt", args.system_prompt
    return "--system-prompt-file", args.system_prompt_file


def _detected_template(name: str | None) -> ChatTemplate:
    """``--template auto``: the template orion-core detects from ``--template-file``; without
    one, ChatML, as orion-core picks for a model without a chat template, said on stderr."""
    if name is None:
        err("note: --template auto without --template-file: no chat template to detect from, so chatml, as orion-core uses for a model without one")  # fmt: skip
        return detect_template(None)
    return detect_template(option_text("--template-file", name))


@cache  # built on first use: only prune --tools reads a tools file
def _tools_adapter() -> TypeAdapter[list[ToolSchema]]:
    """A tools file: a JSON array of orion-core's ToolSchema, read as its serde reads one."""
    with interrupts_held():  # as while a module builds its models (_cli_lazy)
        return TypeAdapter(list[ToolSchema])


_TOOL_FIELDS = frozenset(ToolSchema.model_fields)


def _tool_fields(path: tuple[int | str, ...]) -> frozenset[str] | None:
    """``StructFields`` of a tools file: each tool's own keys (``parameters`` is a free value)."""
    return _TOOL_FIELDS if len(path) == 1 and isinstance(path[0], int) else None


def _tool_problem(detail: ErrorDetails) -> Problem:
    """A problem of a tools file; the top level is an array of tools, not of messages."""
    if not detail["loc"] and detail["type"] in ("list_type", "iterable_type", "tuple_type"):
        return Problem("", f"expected a JSON array of tools, found {describe(detail.get('input'))}")
    return problem_from(detail)


_PROMPT_FILE_OPTIONS = ("--system-prompt-file", "--system-prompt")  # prune's old name reads a file too


def _option_bytes(option: str, name: str) -> bytes:
    """The bytes of the regular file an option names, or of standard input for ``-``; a usage
    error naming the option and the file (``<stdin>``) if it cannot be read."""
    try:
        if name == STDIO:
            return read_stdin(Progress(sys.stderr))
        with os.fdopen(open_file(name), "rb") as handle:
            return handle.read()
    except Unreadable as unreadable:  # the reason without its hint, which is for conversations
        reason = unreadable.reason.partition(";")[0]
        if option in _PROMPT_FILE_OPTIONS and any(char.isspace() for char in name):  # the prompt itself?
            reason += "; it names a file holding the system prompt, or - for standard input"
        raise Fatal(f"error: {option} {name}: {reason}", code=EXIT_USAGE) from None
    except OSError as error:
        raise Fatal(
            f"error: {option} {_shown(name)}: cannot read it: {error.strerror or error}", code=EXIT_USAGE
        ) from None


def _shown(name: str) -> str:
    """An input's name as printed: ``<stdin>`` for ``-``."""
    return STDIN_LABEL if name == STDIO else name


def option_text(option: str, name: str) -> str:
    """The text of the UTF-8 file (or standard input) an option names, exactly as it is (no
    newline is translated)."""
    data = _option_bytes(option, name)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise Fatal(
            f"error: {option} {_shown(name)}: invalid UTF-8 at byte {error.start}", code=EXIT_USAGE
        ) from None


def _read_tools(name: str) -> list[ToolSchema]:
    """The tools of ``--tools FILE``, read as orion-core's serde reads them (``-0`` is the float
    ``-0.0``, ``NaN`` and a repeated key of a tool are refused); any problem is a usage error
    naming the option, the file and the place (``--tools tools.json: [0].name: ...``)."""
    data = _option_bytes("--tools", name)
    name = f"--tools {STDIN_LABEL if name == STDIO else name}"  # which option, as when unreadable
    caught: list[OrionMessagesWarning] = []
    try:
        with library_warnings(caught):
            tools = validate_json(_tools_adapter(), data, _tool_problem)
        if repeated := duplicate_key_problems(data, _tool_fields):  # serde's "duplicate field"
            raise FormatError(repeated)
    except FormatError as error:
        raise Fatal(*problem_lines(name, error.problems, error.omitted), code=EXIT_USAGE) from None
    for problem in warning_problems(caught)[:MAX_PROBLEMS_ON_STDERR]:
        err(f"warning: {problem_line(name, problem)}")
    return tools


def _text_counter(kind: str | None) -> Any:
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
    if name != "tiktoken" and argument == STDIO:  # "-" is standard input everywhere else
        reason = (
            f"a tokenizer is not read from standard input: give its path (./{STDIO} for a file named {STDIO})"
        )
        raise Fatal(f"error: --counter {kind}: {reason}", code=EXIT_USAGE)
    if name != "tiktoken":  # a file: only a regular one is read, as every file
        _option_file("--counter", kind, argument)
    try:
        return adapters[name](argument)
    except Exception as error:  # tokenizers raises a bare Exception: any failure is one line
        reason = one_line(str(error)) if isinstance(error, OrionMessagesError) else _load_failure(error)
        raise Fatal(f"error: --counter {kind}: {reason}", code=EXIT_USAGE) from None


def _load_failure(error: Exception) -> str:
    """Why another library could not load a tokenizer, in one line (a network failure offline
    would otherwise print a long ``HTTPSConnectionPool(...)`` message)."""
    kinds = {klass.__name__ for klass in type(error).__mro__}
    if kinds & {"ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout"}:
        return "cannot load it: it is not in the local cache and could not be downloaded"
    return f"cannot load it: {one_line(str(error))}"


def _option_file(option: str, value: str, name: str) -> None:
    """Refuse what is not a regular file before another library reads ``name`` (a FIFO would hang,
    ``/dev/zero`` never end); a usage error naming the option."""
    try:
        os.close(open_file(name))
    except Unreadable as unreadable:
        raise Fatal(
            f"error: {option} {value}: {unreadable.reason.partition(';')[0]}", code=EXIT_USAGE
        ) from None
