"""The store keeps docs/store.md's promises where an audit found it did not: a reader's open
leaves the file as it is, ids have one length limit on both databases, the store's errors name
the store, passwords are masked conservatively, and a version table is one row of a known version.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import os
import pickle
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from orion_messages import (
    ArgumentValueError,
    ConversationExists,
    ConversationNotFound,
    Message,
    MessageNotFound,
    StoreError,
    ToolCall,
    _store_ops,
)
from orion_messages._store_ops import ID_BYTES_MAX
from orion_messages.cli import main
from orion_messages.store import masked_url, open_async_store, open_store, parse_store_url, url_passwords

from .test_store import raw_sql
from .test_store_schema import V1, V1_GOLDENS, V1_PRUNED

NOBODY = 65534  # the conventional unprivileged user and group ("nobody", "nogroup")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def journal_mode(path: Path) -> str:
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as connection:
        mode: str = connection.execute("PRAGMA journal_mode").fetchone()[0]
    return mode


def reading_commands(url: str) -> list[list[str]]:
    """The command line's commands that only read a store (convert's input written to stdout)."""
    named = f"{url}?conversation={V1_PRUNED}"
    return [["list", url], ["validate", url], ["stats", named], ["convert", named, "-", "--to", "json"]]


# --------------------------------------------------------------------------------------------
# 1. create=False, and the commands that only read, leave the file as it is


def test_reading_a_version_1_store_changes_not_one_byte(tmp_path: Path) -> None:
    copy = tmp_path / "v1.sqlite"
    shutil.copyfile(V1, copy)
    before = digest(copy)
    assert journal_mode(copy) == "delete"
    url = f"sqlite:///{copy}"
    with open_store(url, create=False) as store:
        assert [c.id for c in store.conversations()] == [*V1_GOLDENS, V1_PRUNED]
        assert store.load(V1_PRUNED)
    for command in reading_commands(url):
        assert main(command) == 0, command
    assert digest(copy) == before
    assert journal_mode(copy) == "delete"  # the switch to WAL is a writer's, not a reader's
    assert sorted(p.name for p in tmp_path.iterdir()) == ["v1.sqlite"]  # no -wal, no -shm


@contextlib.contextmanager
def read_only_copy() -> Iterator[Path]:
    """A copy of the version-1 store in a folder of its own, neither of them writable by a reader.

    A world-readable temporary folder (pytest's tmp_path is private to its user), so that the
    unprivileged user of ``as_reader`` may read it when the tests run as root.
    """
    folder = Path(tempfile.mkdtemp(prefix="orion-read-only-"))
    copy = folder / "v1.sqlite"
    shutil.copyfile(V1, copy)
    copy.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield copy
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def as_reader(work: Callable[[], Any]) -> Any:
    """``work()`` run in a child process that may not write the store's file, and what it returned
    (JSON), or the error it raised as ``{"error": "Type: text"}``.

    Root may write any file whatever its permissions, so as root the child runs as ``nobody``
    (no capability beyond setuid is needed, as in CI's containers); as anyone else the file's
    permissions (``read_only_copy``) already forbid writing.
    """
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child, reports through the pipe
        status = 1
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setgid(NOBODY)
                os.setuid(NOBODY)
            try:
                result: Any = work()
            except Exception as error:
                result = {"error": f"{type(error).__name__}: {error}"}
            with os.fdopen(write_end, "w") as out:
                json.dump(result, out)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as answer:
        text = answer.read()
    _, status = os.waitpid(child, 0)
    assert status == 0, "the reader's child process failed"
    return json.loads(text)


def run_main(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()  # convert writes bytes
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    out.flush()
    return code, out.buffer.getvalue().decode(), err.getvalue()


def test_a_file_that_may_not_be_written_is_read_by_the_library_and_the_commands() -> None:
    with read_only_copy() as copy:
        url = f"sqlite:///{copy}"
        before = digest(copy)

        def read() -> dict[str, Any]:
            with open_store(url, create=False) as store:
                ids = [c.id for c in store.conversations()]
                count = len(store.load(V1_PRUNED))
            commands = [run_main(command) for command in reading_commands(url)]
            return {"writable": os.access(copy, os.W_OK), "ids": ids, "count": count, "commands": commands}

        found = as_reader(read)
        assert "error" not in found, found
        assert found["writable"] is False  # the test means something: the reader cannot write
        assert found["ids"] == [*V1_GOLDENS, V1_PRUNED]
        assert found["count"] == 3
        for command, (code, out, err) in zip(reading_commands(url), found["commands"], strict=True):
            assert (code, err) == (0, ""), command
            assert out, command
        assert digest(copy) == before


def test_a_writer_still_switches_a_new_store_to_wal(tmp_path: Path) -> None:
    open_store(f"sqlite:///{tmp_path / 'chats.db'}").close()
    assert journal_mode(tmp_path / "chats.db") == "wal"


# --------------------------------------------------------------------------------------------
# 2. one limit on the ids the store indexes, on both databases

LONGEST_CONVERSATION = "😀" * (ID_BYTES_MAX // 4)  # four bytes a character: exactly the limit
LONGEST_MESSAGE = "é" * (ID_BYTES_MAX // 2)
LONGEST_CALL = "ü" * (ID_BYTES_MAX // 2)


def test_ids_up_to_the_limit_are_stored_and_found(store_url: str) -> None:
    assert len(LONGEST_CONVERSATION.encode()) == len(LONGEST_MESSAGE.encode()) == ID_BYTES_MAX
    with open_store(store_url) as store:
        store.create(LONGEST_CONVERSATION)
        store.append(LONGEST_CONVERSATION, Message.pending_result(LONGEST_MESSAGE, LONGEST_CALL, "w"))
        assert store.set_pinned(LONGEST_CONVERSATION, LONGEST_MESSAGE, True)
        assert store.resolve(LONGEST_CONVERSATION, LONGEST_CALL, "done").content == "done"
        assert [m.id for m in store.load(LONGEST_CONVERSATION)] == [LONGEST_MESSAGE]
        store.replace_messages("😀" + LONGEST_CONVERSATION[1:], [], create=True)


def test_a_longer_id_is_refused_before_the_database_is_touched(store_url: str) -> None:
    over = LONGEST_CONVERSATION + "x"  # one byte over
    with open_store(store_url) as store:
        with pytest.raises(ArgumentValueError) as caught:
            store.create(over)
        text = str(caught.value)
        assert f"{ID_BYTES_MAX + 1} bytes" in text
        assert f"at most {ID_BYTES_MAX} bytes" in text
        assert f"conversation id {chr(34)}{LONGEST_CONVERSATION[:10]}" in text
        with pytest.raises(ArgumentValueError, match=f"at most {ID_BYTES_MAX} bytes"):
            store.replace_messages(over, [], create=True)
        assert store.conversations() == []

        store.create("c")
        good = Message.user("m1", "kept only if the batch is")
        with pytest.raises(ArgumentValueError, match=f"message id .* at most {ID_BYTES_MAX} bytes"):
            store.extend("c", [good, Message.user(LONGEST_MESSAGE + "x", "too long")])
        with pytest.raises(ArgumentValueError, match=f"tool call id .* at most {ID_BYTES_MAX} bytes"):
            store.append("c", Message.pending_result("m2", "a" * (ID_BYTES_MAX + 1), "w"))
        # A call whose id its result could never be stored under is refused too.
        call = ToolCall(id="a" * (ID_BYTES_MAX + 1), name="t", arguments={})
        with pytest.raises(
            ArgumentValueError, match=f'tool call id of message "m3" .* at most {ID_BYTES_MAX} bytes'
        ):
            store.append("c", Message.assistant("m3", "", [call]))
        assert store.load("c") == []
        assert store.info("c").message_count == 0


def test_the_limit_is_refused_as_plain_text_too(store_url: str) -> None:
    # Lengths in characters never pass for bytes: 1,024 ASCII characters fit, 1,025 do not.
    with open_store(store_url) as store:
        store.create("a" * ID_BYTES_MAX)
        with pytest.raises(ArgumentValueError):
            store.create("a" * (ID_BYTES_MAX + 1))


# --------------------------------------------------------------------------------------------
# 3. the store's own errors name the store; the command line names the URL


def test_lookup_errors_name_the_store_and_keep_their_attributes(store_url: str) -> None:
    with open_store(store_url) as store:
        where = store.where
        with pytest.raises(ConversationNotFound) as missing:
            store.info("nope")
        assert str(missing.value) == f'{where}: no conversation "nope" in the store'
        assert missing.value.conversation_id == "nope"
        store.create("c")
        with pytest.raises(ConversationExists) as taken:
            store.create("c")
        assert str(taken.value) == f'{where}: a conversation "c" is already in the store'
        assert taken.value.conversation_id == "c"
        with pytest.raises(MessageNotFound) as no_message:
            store.load("c", since="m9")
        assert str(no_message.value) == f'{where}: conversation "c" holds no message "m9"'
        assert (no_message.value.conversation_id, no_message.value.message_id) == ("c", "m9")
        copied = pickle.loads(pickle.dumps(no_message.value))
        assert (str(copied), copied.message_id) == (str(no_message.value), "m9")


def test_the_async_store_names_itself_too(store_url: str) -> None:
    async def main_() -> str:
        async with await open_async_store(store_url) as store:
            try:
                await store.info("nope")
            except ConversationNotFound as error:
                return f"{store.where}|{error}"
        return "no error"

    where, _, text = asyncio.run(main_()).partition("|")
    assert text == f'{where}: no conversation "nope" in the store'


def test_a_password_never_reaches_where(postgres_url: str) -> None:
    with (
        open_store(f"{postgres_url}&password=hunter2") as store,
        pytest.raises(ConversationNotFound) as caught,
    ):
        store.info("nope")
    assert "hunter2" not in str(caught.value)
    assert "password=***" in str(caught.value)


def test_stats_and_convert_name_the_url_of_a_corrupt_row(
    sqlite_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(sqlite_url) as store:
        store.create("c")
        store.extend("c", [Message.user("m1", "hi"), Message.assistant("m2", "hello")])
    raw_sql(sqlite_url, "UPDATE orion_messages SET data = ? WHERE position = 1", ('{"id": "m2"}',))
    url = f"{sqlite_url}?conversation=c"
    # As docs/store.md places a stored row's problem: the URL, then the conversation and position.
    placed = f'{url}: conversation "c", position 1: '
    for command in (["stats", url], ["convert", url, "-", "--to", "json"]):
        assert main(command) == 1
        lines = capsys.readouterr().err.splitlines()
        assert lines[0].startswith(f"orion-messages: error: {placed}"), (command, lines)
    assert main(["validate", url]) == 1
    assert placed in capsys.readouterr().out + capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# 4. a missing folder: see tests/store/test_store.py (a StoreError with the OSError as its cause)

# --------------------------------------------------------------------------------------------
# 5. passwords masked conservatively


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://me:top/secret@127.0.0.1:1/db", "postgresql://me:***@127.0.0.1:1/db"),
        ("postgresql://me:top@secret@host/db", "postgresql://me:***@host/db"),
        (
            "postgresql://me@host/db?sslpassword=s3cret&sslmode=require",
            "postgresql://me@host/db?sslpassword=***&sslmode=require",
        ),
        ("postgresql://me@host/db?SSLPassword=s3cret", "postgresql://me@host/db?SSLPassword=***"),
        (
            "postgresql://me:pw@host/db?password=p2&sslpassword=p3",
            "postgresql://me:***@host/db?password=***&sslpassword=***",
        ),
        ("postgresql://me@host/db?conversation=a:b@c", "postgresql://me@host/db?conversation=a:b@c"),
        ("postgresql:///db?host=/run/postgresql", "postgresql:///db?host=/run/postgresql"),
        # An @ in a parameter before ?password=: both passwords masked, whatever lies between.
        (
            "postgresql://me:pw@db/chats?application_name=me@host&password=secret",
            "postgresql://me:***@host&password=***",
        ),
        ("postgresql://db:5432/x?user=a@b&password=secret", "postgresql://db:***@b&password=***"),
        # A password holding "=", repeated as another parameter's whole value.
        (
            "postgresql://u:se=cret@127.0.0.1:1/db?application_name=se=cret",
            "postgresql://u:***@127.0.0.1:1/db?application_name=***",
        ),
        (
            "postgresql://u@127.0.0.1:1/db?password=se=cret&host=se=cret",
            "postgresql://u@127.0.0.1:1/db?password=***&host=***",
        ),
        # A value starts after "?" or "&", never at an "=" in the path, and runs to the next "&"
        # as libpq reads it; read again as if "#" ended it, a password after a "#" is masked too.
        ("postgresql://u:pw1@h/d=b?application_name=pw1", "postgresql://u:***@h/d=b?application_name=***"),
        ("postgresql://u:se=cret@h/db?a=x#b=se=cret", "postgresql://u:***@h/db?a=x#b=***"),
    ],
)
def test_every_password_is_masked(url: str, shown: str) -> None:
    assert masked_url(url) == shown
    assert parse_store_url(url).display == shown
    for secret in url_passwords(url):
        assert secret not in masked_url(url).replace("***", "")


def test_an_at_sign_later_in_the_url_masks_more_never_less() -> None:
    shown = masked_url("postgresql://me:pa/ss@host/db?conversation=bob@example.com")
    assert "pa/ss" not in shown
    assert shown.startswith("postgresql://me:***@")


# --------------------------------------------------------------------------------------------
# 6. an empty extend changes nothing; a version table is one row of a known version


def test_extending_by_nothing_leaves_updated(store_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(range(1_000, 2_000, 10))
    monkeypatch.setattr(_store_ops, "now_ms", lambda: next(clock))
    with open_store(store_url) as store:
        before = store.create("c")
        store.extend("c", [])
        assert store.info("c") == before  # "when the messages, title or metadata last changed"
        with pytest.raises(ConversationNotFound):
            store.extend("nope", [])
        store.extend("c", [Message.user("m1", "hi")])
        assert store.info("c").updated > before.updated


def test_a_change_in_place_moves_updated_and_a_change_to_the_same_leaves_it(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/store.md: ``updated`` is "when its messages, title or metadata last changed". A message
    # pinned, counted or resolved in place is a change; pinning a pinned message, or clearing a
    # count that is not set, changes nothing (as an empty extend, above).
    clock = iter(range(1_000, 2_000, 10))
    monkeypatch.setattr(_store_ops, "now_ms", lambda: next(clock))
    with open_store(store_url) as store:
        created = store.create("c")
        store.extend("c", [Message.user("m1", "hi"), Message.pending_result("m2", "call-1", "f")])
        before = store.info("c")
        assert store.set_pinned("c", "m1", True)
        pinned = store.info("c")
        assert pinned.updated > before.updated
        assert store.set_pinned("c", "m1", True)  # already pinned
        assert store.set_token_count("c", "m2", None)  # no count to clear
        assert store.info("c") == pinned
        assert store.set_token_count("c", "m1", 3)
        counted = store.info("c")
        assert counted.updated > pinned.updated
        store.resolve("c", "call-1", "done")
        resolved = store.info("c")
        assert resolved.updated > counted.updated
        assert resolved.created == created.created
        assert resolved.message_count == 2


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ("(-1)", "the store's version is -1, which no orion-messages writes"),
        ("(0)", "the store's version is 0, which no orion-messages writes"),
        ("(2), (1)", "the store's version table holds 2 rows (2, 1), not one"),
        ("(2), (2)", "the store's version table holds 2 rows (2, 2), not one"),
    ],
)
@pytest.mark.parametrize("create", [True, False])
def test_a_version_table_that_is_not_one_known_version_is_refused(
    store_url: str, rows: str, said: str, create: bool
) -> None:
    with open_store(store_url) as store:
        store.create("c")
        where = store.where
    raw_sql(store_url, "DELETE FROM orion_store_version")
    raw_sql(store_url, f"INSERT INTO orion_store_version (version) VALUES {rows}")
    parsed = parse_store_url(store_url)
    before = digest(Path(parsed.database)) if parsed.backend == "sqlite" else None
    with pytest.raises(StoreError) as caught:
        open_store(store_url, create=create)
    assert str(caught.value).startswith(f"{where}: {said}")
    if before is not None:
        assert digest(Path(parsed.database)) == before


def test_a_longer_id_stored_before_the_limit_can_still_be_pinned_and_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # docs/store.md: lookups take an id of any length; a rewrite in place keeps the stored ids.
    url = f"sqlite:///{tmp_path / 'old.db'}"
    long_id, long_call = "m" * 2000, "c" * 2000
    with monkeypatch.context() as before_the_limit:
        before_the_limit.setattr(_store_ops, "ID_BYTES_MAX", 10**6)
        with open_store(url) as store:
            store.create("c")
            store.extend(
                "c",
                [
                    Message.user(long_id, "hi", timestamp=1),
                    Message.pending_result("r", long_call, "t", timestamp=2),
                ],
            )
    with open_store(url) as store:
        assert store.set_pinned("c", long_id, True)
        assert store.resolve("c", long_call, "done").content == "done"
        assert [m.pinned for m in store.load("c")] == [True, False]
