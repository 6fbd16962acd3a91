"""Text token counters: what orion-core's ``plan_prune`` counts rendered template text with.

A counter is any ``Callable[[str], int]``. This module gives orion-core's default estimate
(``estimate_text_tokens``), a word counter exactly like Rust's ``split_whitespace`` (``count_words``) and
adapters for the real tokenizers a host may have: Hugging Face ``tokenizers`` (a
``tokenizer.json``), ``tiktoken`` encodings and SentencePiece models. Each adapter needs an
optional extra and imports its library only when called.
"""

from __future__ import annotations

import errno
import importlib
import inspect
import os
import reprlib
import stat
import typing
from collections.abc import Callable, Sized
from functools import partial
from typing import Any, Literal, Protocol, TypeAlias

from ._text import excerpt, kind_of, quoted, shown_int, shown_place
from .errors import (
    ArgumentTypeError,
    ArgumentValueError,
    MissingExtraError,
    NotARegularFileError,
    require_bool,
)
from .models import U32_MAX, U64_MAX, Message

__all__ = [
    "TextCounter",
    "callable_counter",
    "count_words",
    "estimate_text_tokens",
    "huggingface_counter",
    "sentencepiece_counter",
    "tiktoken_counter",
]

TextCounter: TypeAlias = Callable[[str], int]
"""A token counter for text: takes a string, returns how many tokens it is (an ``int`` >= 0).

Any such callable works: ``estimate_text_tokens``, ``count_words``, one of the adapters below,
or your own (``lambda text: len(my_tokenizer.encode(text))``). Pass it through
``callable_counter`` to have it checked once up front.
"""


COUNT_MAX = U64_MAX
"""The largest count a counter may return (text or message counter): orion-core's counters
return a ``usize``, 64 bits. A larger int, or a negative one, is refused as no count."""


def counter_name(function: object) -> str:
    """A counter as its messages name it: its qualified name (``by_length``), else its own
    ``repr`` if its class writes one (``tokenizer_counter(count_words)``), else its type's name."""
    name = getattr(function, "__qualname__", None)
    if isinstance(name, str):
        return name
    if type(function).__repr__ is not object.__repr__:
        return excerpt(repr(function))
    return type(function).__name__


def checked_count(
    value: object, counter: object, kind: str, place: str | int, message: Message | None = None
) -> int:
    """``value`` if it is a count, an int from 0 to ``COUNT_MAX``; else ``ArgumentTypeError`` (not
    an int, a bool included) or ``ArgumentValueError`` (out of range) saying that the ``kind``
    counter (``"text"``, ``"message"``) ``counter`` returned it for ``place``: a text
    (``"the system block"``), or the index of ``message``.
    """
    if type(value) is int and 0 <= value <= COUNT_MAX:
        return value
    where = place if message is None else f"message [{place}] (id {quoted(message.id)})"
    said = f"the {kind} counter {counter_name(counter)} returned"
    expected = f"expected an int from 0 to {COUNT_MAX}"
    if type(value) is not int:
        raise ArgumentTypeError(f"{said} {kind_of(value)} ({reprlib.repr(value)}) for {where}; {expected}")
    raise ArgumentValueError(f"{said} {shown_int(value)} for {where}; {expected}")


def estimate_text_tokens(text: str) -> int:
    """orion-core's default estimate: ``max(1, chars // 4)``, counting characters (code points).

    This is the ``estimate_tokens`` orion-core's backends fall back on when they have no tokenizer
    of their own. The empty string counts 1. Like orion-core, the character count is taken as an
    unsigned 32-bit number (it wraps past 4,294,967,295 characters).

    Raises:
        ArgumentTypeError: ``text`` is not a str (bytes, a list or a dict have a length too).
    """
    if not isinstance(text, str):
        raise ArgumentTypeError(f"estimate_text_tokens: text must be a str, got {kind_of(text)}")
    return estimate_from_length(len(text))


def estimate_from_length(characters: int) -> int:
    """orion-core's estimate for text of ``characters`` code points: ``max(1, chars // 4)``.

    The one statement of the formula, for ``estimate_text_tokens`` and the message estimate
    (``estimate_tokens``). The count is taken as an unsigned 32-bit number, as orion-core does.
    """
    return max(1, (characters % (U32_MAX + 1)) // 4)


# Python's str.split() also splits at U+001C..U+001F (file, group, record and unit separators);
# Rust's split_whitespace, which orion-core counts words with, does not.
_PYTHON_ONLY_SPACE = ("\x1c", "\x1d", "\x1e", "\x1f")
_NOT_SPACE = str.maketrans(dict.fromkeys(map(ord, _PYTHON_ONLY_SPACE), "x"))


def count_words(text: str) -> int:
    """The number of whitespace-separated words, as Rust's ``split_whitespace().count()``.

    Whitespace is Unicode's White_Space set (so U+001C to U+001F, which Python's ``str.split()``
    splits at, do not split words). A tokenizer-free counter, and the CLI's ``--counter words``.
    A long text is split a chunk at a time, never into a list of all its words.

    Raises:
        ArgumentTypeError: ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise ArgumentTypeError(f"count_words: text must be a str, got {kind_of(text)}")
    if len(text) <= _WORDS_CHUNK:
        return _split_count(text)
    words = 0
    in_word = False  # whether the chunk before ended inside a word, which goes on in this one
    for start in range(0, len(text), _WORDS_CHUNK):
        chunk = text[start : start + _WORDS_CHUNK]
        words += _split_count(chunk) - (in_word and not _is_space(chunk[0]))
        in_word = not _is_space(chunk[-1])
    return words


_WORDS_CHUNK = 1 << 16
"""How many characters of a long text ``count_words`` splits at a time: the list of words
``str.split`` builds stays small (a whole 15 MB text cost 350 MB more, split at once)."""


def _split_count(text: str) -> int:
    """``count_words`` of a text up to ``_WORDS_CHUNK`` characters."""
    # The four of _PYTHON_ONLY_SPACE, spelled out: four substring tests cost far less than a
    # regex search or a generator over them, on the usual text without them.
    if "\x1c" in text or "\x1d" in text or "\x1e" in text or "\x1f" in text:
        text = text.translate(_NOT_SPACE)
    return len(text.split())


def _is_space(char: str) -> bool:
    """Whether ``char`` separates words for ``count_words`` (Unicode's White_Space set)."""
    return char.isspace() and char not in _PYTHON_ONLY_SPACE


_PROBE = "Hello, world! orion-messages counts tokens."


def _check_signature(function: Callable[..., Any]) -> None:
    """Refuse a callable whose first parameter is annotated as a ``Message``."""
    try:
        hints = typing.get_type_hints(function)
        parameters = list(inspect.signature(function).parameters)
    except (TypeError, ValueError, NameError, AttributeError):
        return  # builtins, C extensions and unresolved annotations: the probe call decides
    if parameters and hints.get(parameters[0]) is Message:
        raise ArgumentTypeError(
            f"{counter_name(function)} counts Message objects; a text counter takes the rendered text "
            "(a str). Count the message's rendered fragment instead: "
            "counter(template.format_message(message))"
        )


def callable_counter(function: Callable[[str], int]) -> TextCounter:
    """Check that ``function`` counts text, and return it unchanged.

    It is called once on a sample string, and must return a count: an ``int`` from 0 to
    ``COUNT_MAX`` (2**64 - 1).

    Raises:
        TypeError: ``function`` is not callable, takes a ``Message`` rather than a ``str`` (its
            first parameter is annotated ``Message``, or it raises ``TypeError`` or
            ``AttributeError`` on the sample string and counts a sample message), or returns
            something other than an ``int``.
        ValueError: it returns a negative count or one above ``COUNT_MAX``.

    Any other error ``function`` raises on the sample string (a ``KeyError``, a ``ValueError``,
    a ``TypeError`` of a bug of its own) reaches the caller as it raised it.
    """
    if not callable(function):
        raise ArgumentTypeError(f"a text counter must be callable (str -> int), got {kind_of(function)}")
    _check_signature(function)
    try:
        count = function(_PROBE)
    except (AttributeError, TypeError) as error:
        # What a message counter given a str raises; a bug of the counter's own stays itself.
        if not returns_count(function, Message.user("msg-1", _PROBE, timestamp=0)):
            raise
        raise ArgumentTypeError(
            f"the text counter {counter_name(function)} failed on a str ({type(error).__name__}: "
            f"{shown_place(str(error))}); a text counter takes the rendered text (a str), not a Message"
        ) from error
    checked_count(count, function, "text", "a sample text")
    return function


def returns_count(count: Callable[[Any], object], value: object) -> bool:
    """Whether ``count`` returns an int for ``value``. Asked once it failed on the other kind
    (a message counter on a text, a text counter on a message), it decides whether the library's
    error, saying the counter was passed as the wrong kind, is true; if not, its own stands."""
    try:
        return type(count(value)) is int
    except Exception:  # any failure says it is not the other kind of counter
        return False


# What each adapter uses of a tokenizer object it is given, as structural types: the adapters'
# signatures are then fully known without the optional packages installed (naming their classes
# left the parameter types unknown to a type checker where they are not), and the real objects
# match them: tokenizers.Tokenizer, tiktoken.Encoding, sentencepiece.SentencePieceProcessor.
# Private: a caller passes the library's own object, which it names by the library's class.


class _HuggingFaceTokenizer(Protocol):
    """A Hugging Face ``tokenizers.Tokenizer``: ``huggingface_counter`` copies it by its JSON."""

    def to_str(self) -> str:
        """The tokenizer serialized as ``tokenizer.json`` text."""
        ...


class _TiktokenEncoding(Protocol):
    """A ``tiktoken.Encoding``: ``tiktoken_counter`` counts what its encode methods return."""

    def encode(self, text: str, /, *, allowed_special: Literal["all"]) -> Sized:
        """The tokens of ``text``, special-token text counting as that token."""
        ...

    def encode_ordinary(self, text: str, /) -> Sized:
        """The tokens of ``text``, all of it ordinary text."""
        ...


class _SentencePieceModel(Protocol):
    """A ``sentencepiece.SentencePieceProcessor``: ``sentencepiece_counter`` counts what ``encode``
    gives with BOS, EOS and sampling switched off."""

    def encode(self, text: str, /, *, add_bos: bool, add_eos: bool, enable_sampling: bool) -> Sized:
        """The pieces (ids) of ``text``."""
        ...


def _import(module: str, feature: str, package: str, extra: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(feature, package, extra) from error


def _existing_file(path: str | os.PathLike[str]) -> str:
    """``path`` as text, or ``FileNotFoundError`` (``IsADirectoryError`` for a folder,
    ``NotARegularFileError`` for a FIFO or a device) naming it: the tokenizer libraries report
    those in their own words and types (``tokenizers`` raises a bare ``Exception``), or block."""
    text = os.fspath(path)
    try:
        mode = os.stat(text).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(errno.ENOENT, "no such tokenizer file", text) from None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "a folder, not a tokenizer file", text)
    if (error := NotARegularFileError.of_mode(text, mode)) is not None:
        raise error
    return text


def _loaded(load: Callable[[], Any], function: str, what: str) -> Any:
    """What ``load()`` returns; a tokenizer library's own failure to read ``what`` becomes an
    ``ArgumentValueError`` naming it (``tokenizers`` raises a bare ``Exception`` that names no
    file), with that failure as its ``__cause__``."""
    try:
        return load()
    except (OSError, MemoryError):
        raise  # the system's own failure (tiktoken's download included) stays what it is
    except Exception as error:
        reason = shown_place(str(error).partition("\n")[0]) or type(error).__name__
        raise ArgumentValueError(f"{function}: cannot load {what}: {reason}") from error


def _require_loaded(value: object, method: str, function: str, expected: str) -> None:
    """``ArgumentTypeError`` unless ``value`` has ``method``: what the adapter calls on a loaded
    tokenizer (an ``int`` or ``bytes`` path would fail later with an ``AttributeError``)."""
    if not callable(getattr(value, method, None)):
        raise ArgumentTypeError(f"{function}: expected {expected}, got {kind_of(value)}")


def huggingface_counter(
    tokenizer: str | os.PathLike[str] | _HuggingFaceTokenizer, *, add_special_tokens: bool = False
) -> TextCounter:
    """A counter from a Hugging Face ``tokenizers`` tokenizer or a ``tokenizer.json`` file.

    Truncation and padding configured in the tokenizer are switched off (on a copy) so that long
    texts are counted in full. Special-token text in the input (``<|im_start|>``) counts as the one
    token it is; with ``add_special_tokens`` the tokenizer's own BOS/EOS are counted too.
    Needs the ``huggingface`` extra. A path is read from disk; nothing is downloaded.

    Raises:
        MissingExtraError: ``tokenizers`` is not installed.
        ArgumentTypeError: ``tokenizer`` is neither a path nor a tokenizer, or
            ``add_special_tokens`` is not a bool.
        FileNotFoundError: no file at the path (``IsADirectoryError`` for a folder).
        NotARegularFileError: the path names a FIFO or a device.
        OSError: the path cannot be looked at (no permission, a part of it not a folder).
        ArgumentValueError: a file ``tokenizers`` cannot read as a tokenizer, named (its error
            is the ``__cause__``).
    """
    require_bool("huggingface_counter: add_special_tokens", add_special_tokens)
    module = _import("tokenizers", "huggingface_counter", "tokenizers", "huggingface")
    if isinstance(tokenizer, str | os.PathLike):
        path = _existing_file(tokenizer)
        loaded = _loaded(
            partial(module.Tokenizer.from_file, path),
            "huggingface_counter",
            f"the tokenizer file {shown_place(path)}",
        )
    else:
        _require_loaded(
            tokenizer, "to_str", "huggingface_counter", "a tokenizers.Tokenizer or a tokenizer.json path"
        )
        loaded = module.Tokenizer.from_str(tokenizer.to_str())
    loaded.no_truncation()
    loaded.no_padding()
    encode = loaded.encode

    def count(text: str) -> int:
        return len(encode(text, add_special_tokens=add_special_tokens).ids)

    return count


def tiktoken_counter(encoding: str | _TiktokenEncoding, *, special_tokens: bool = True) -> TextCounter:
    """A counter from a ``tiktoken`` encoding (an ``Encoding`` or its name, such as ``"cl100k_base"``).

    With ``special_tokens`` (the default), text spelling one of the encoding's special tokens
    counts as that one token, as an engine parsing the prompt counts it; otherwise all text is
    ordinary. A name is looked up with ``tiktoken.get_encoding``, which reads tiktoken's cache and
    may download the encoding's file the first time. Needs the ``tiktoken`` extra.

    Raises:
        MissingExtraError: ``tiktoken`` is not installed.
        ArgumentTypeError: ``encoding`` is neither a name nor an encoding, or ``special_tokens``
            is not a bool.
        ArgumentValueError: ``tiktoken`` knows no encoding of that name, or cannot read its
            file; the encoding is named (tiktoken's error is the ``__cause__``).
        OSError: ``tiktoken``'s own error when the encoding's file is not cached and cannot be
            downloaded (such as ``requests.ConnectionError``).
    """
    require_bool("tiktoken_counter: special_tokens", special_tokens)
    module = _import("tiktoken", "tiktoken_counter", "tiktoken", "tiktoken")
    if isinstance(encoding, str):
        what = f"the encoding {quoted(encoding)}"
        loaded = _loaded(partial(module.get_encoding, encoding), "tiktoken_counter", what)
    else:
        _require_loaded(encoding, "encode", "tiktoken_counter", "a tiktoken.Encoding or its name")
        loaded = encoding
    if special_tokens:
        encode = loaded.encode

        def count(text: str) -> int:
            return len(encode(text, allowed_special="all"))

        return count
    encode_ordinary = loaded.encode_ordinary

    def count_ordinary(text: str) -> int:
        return len(encode_ordinary(text))

    return count_ordinary


def sentencepiece_counter(
    model: str | os.PathLike[str] | _SentencePieceModel,
) -> TextCounter:
    """A counter from a SentencePiece model (a ``.model`` file or a loaded processor).

    Counts the pieces of the text, without BOS/EOS and without sampling, whatever a given
    processor was built with (``add_bos=True``, ``enable_sampling=True``: the count must not
    change from one call to the next). SentencePiece does not parse special-token text such as
    ``<s>`` in the input: it is counted as ordinary text. Needs the ``sentencepiece`` extra.

    Raises:
        MissingExtraError: ``sentencepiece`` is not installed.
        ArgumentTypeError: ``model`` is neither a path nor a processor.
        FileNotFoundError: no file at the path (``IsADirectoryError`` for a folder).
        NotARegularFileError: the path names a FIFO or a device.
        OSError: the path cannot be looked at (no permission, a part of it not a folder).
        ArgumentValueError: a file SentencePiece cannot read as a model, named (its error is
            the ``__cause__``).
    """
    module = _import("sentencepiece", "sentencepiece_counter", "sentencepiece", "sentencepiece")
    if isinstance(model, str | os.PathLike):
        path = _existing_file(model)
        processor = _loaded(
            partial(module.SentencePieceProcessor, model_file=path),
            "sentencepiece_counter",
            f"the SentencePiece model {shown_place(path)}",
        )
    else:
        _require_loaded(model, "encode", "sentencepiece_counter", "a SentencePieceProcessor or a .model path")
        processor = model
    encode = processor.encode

    def count(text: str) -> int:
        return len(encode(text, add_bos=False, add_eos=False, enable_sampling=False))

    return count
