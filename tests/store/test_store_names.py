"""How a store is named and opened: SQLite file names SQLite could take for a URI, PostgreSQL
passwords written with a raw ``@``, ``/`` or ``?``, the store's name in messages, and which
message of a batch a write refuses.

Every expectation is written from docs/store.md and docs/reliability.md, not from the code's
output.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import pytest

from orion_messages import FormatError, Message, Role, StoreError, ToolCall
from orion_messages.cli import main
from orion_messages.store import masked_url, open_store, parse_store_url

from .test_store import raw_sql

# --------------------------------------------------------------------------------------------
# SQLite: a relative path that starts with "file:" is a file name


def test_a_relative_path_starting_with_file_colon_is_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///file:chats.db") as store:
        assert store.where == "file:chats.db"
        store.create("c1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file:chats.db"]
    with open_store("sqlite:///file:chats.db", create=False) as store:
        assert [c.id for c in store.conversations()] == ["c1"]


def test_a_file_name_holding_mode_memory_is_a_file_whose_data_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # SQLite would read "file:keep.db?mode=memory" as a database in memory, lost on close.
    monkeypatch.chdir(tmp_path)
    url = "sqlite:///file:keep.db%3Fmode%3Dmemory"
    with open_store(url) as store:
        store.create("c2")
    with open_store(url, create=False) as store:
        assert [c.id for c in store.conversations()] == ["c2"]
    assert (tmp_path / "file:keep.db?mode=memory").is_file()


# --------------------------------------------------------------------------------------------
# SQLite: files that cannot be opened, said by name


def test_a_dangling_symlink_is_no_store_database(tmp_path: Path) -> None:
    link = tmp_path / "chats.db"
    link.symlink_to(tmp_path / "gone.db")
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{link}", create=False)
    assert str(caught.value) == f"{link}: no such store database; nothing was created"
    assert not (tmp_path / "gone.db").exists()


def test_a_path_through_a_linked_folder_is_the_file_the_system_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # store.md: the path is a file name, relative to the working folder: "link/../chats.db" is
    # the file the system opens (through the link, real/../chats.db), not ./chats.db.
    (tmp_path / "top" / "real").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "top" / "real")
    monkeypatch.chdir(tmp_path)
    with open_store("sqlite:///link/../chats.db") as store:
        store.create("c1")
    assert (tmp_path / "top" / "chats.db").is_file()
    assert not (tmp_path / "chats.db").exists()
    with open_store("sqlite:///link/../chats.db", create=False) as store:
        assert [c.id for c in store.conversations()] == ["c1"]


@pytest.mark.parametrize("create", [True, False])
def test_a_name_too_long_says_so_and_is_cut_in_the_message(tmp_path: Path, create: bool) -> None:
    # reliability.md: a file name in a message is cut to 4,096 characters (4,093 and "...").
    name = "a" * 5000 + ".db"
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{name}", create=create)
    reason = os.strerror(errno.ENAMETOOLONG)
    assert str(caught.value) == "a" * 4093 + f"...: cannot open the store's database: {reason}"
    assert isinstance(caught.value.__cause__, OSError)
    assert caught.value.__cause__.errno == errno.ENAMETOOLONG


@pytest.mark.parametrize("command", ["list", "validate"])
def test_the_command_line_names_a_store_too_long_once(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The URL, cut to 4,096 characters (4,093 and "..."), says where; the system's reason
    # follows, with no second copy of the file name it holds.
    monkeypatch.chdir(tmp_path)
    url = "sqlite:///" + "a" * 5000 + ".db"
    assert main([command, url]) == 1
    reason = os.strerror(errno.ENAMETOOLONG)
    assert capsys.readouterr().err.splitlines() == [
        "orion-messages: error: sqlite:///" + "a" * 4083 + f"...: {reason}"
    ]


def test_the_store_s_name_is_escaped_as_a_file_name_in_messages(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path}/odd%09name.db") as store:
        assert store.where == f"{tmp_path}/odd\\tname.db"
        with pytest.raises(StoreError) as caught:
            store.info("nope")
    assert str(caught.value) == f'{tmp_path}/odd\\tname.db: no conversation "nope" in the store'
    assert (tmp_path / "odd\tname.db").is_file()


# --------------------------------------------------------------------------------------------
# Values from the data, in double quotes


def test_an_unknown_sqlite_parameter_is_quoted_as_data() -> None:
    with pytest.raises(StoreError) as caught:
        parse_store_url("sqlite:///chats.db?mode=ro")
    assert str(caught.value) == (
        'sqlite:///chats.db?mode=ro: unknown parameter "mode" (a SQLite URL takes only conversation)'
    )


def test_stored_values_another_program_wrote_are_quoted_as_data(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    with open_store(url) as store:
        store.create("a")
    raw_sql(url, "UPDATE orion_conversations SET created_ms = 'yesterday'")
    with open_store(url) as store, pytest.raises(StoreError) as caught:
        store.info("a")
    assert str(caught.value) == (
        f'{tmp_path / "chats.db"}: conversation "a": its created_ms is a str "yesterday", not an integer'
    )
    raw_sql(url, "UPDATE orion_store_version SET version = 'abc'")
    with pytest.raises(StoreError) as caught:
        open_store(url)
    assert str(caught.value) == (
        f'{tmp_path / "chats.db"}: the store\'s version is "abc", not a number; it was not made by orion-messages'
    )


# --------------------------------------------------------------------------------------------
# A batch write names the message it refuses


def _batch_with_infinity_at(index: int, size: int) -> list[Message]:
    batch = [Message.user(f"msg-{i}", "x", timestamp=1) for i in range(size)]
    call = ToolCall(id="call-1", name="f", arguments={"x": 1})
    bad = Message.assistant("msg-bad", "", timestamp=1, tool_calls=[call])
    bad.tool_calls[0].arguments["x"] = float("inf")  # changed in place, past validation
    batch[index] = bad
    return batch


@pytest.mark.parametrize("call", ["extend", "replace_messages"])
def test_a_batch_write_names_the_refused_message_by_its_index(store_url: str, call: str) -> None:
    batch = _batch_with_infinity_at(250, 500)
    with open_store(store_url) as store:
        store.create("c1")
        store.append("c1", Message.user("msg-0", "kept", timestamp=1))
        with pytest.raises(FormatError) as caught:
            getattr(store, call)("c1", batch)
        assert [p.location for p in caught.value.problems] == ["[250].tool_calls[0].arguments.x"]
        assert str(caught.value).startswith("[250].tool_calls[0].arguments.x: cannot be written as JSON")
        assert [m.id for m in store.load("c1")] == ["msg-0"]  # nothing written


@pytest.mark.parametrize(
    ("values", "where", "what"),
    [
        (
            {"role": "x"},
            "[1].role",
            'expected a role, one of "system", "user", "assistant", "tool_call" or "tool_result", found the string "x"',
        ),
        ({"id": None}, "[1].id", "expected a string, found null"),
    ],
)
def test_a_batch_write_refuses_what_no_column_holds_at_its_place(
    sqlite_url: str, values: dict[str, Any], where: str, what: str
) -> None:
    # docs/reliability.md: the store's writes refuse a role or an id model_construct let in
    # that no column holds, as a FormatError placed in the batch; nothing is written.
    built = Message.model_construct(**{"id": "m", "role": "user", "content": "c", "timestamp": 1, **values})
    with open_store(sqlite_url) as store:
        store.create("c1")
        with pytest.raises(FormatError) as caught:
            store.extend("c1", [Message.user("a", "b", timestamp=1), built])
        assert [(p.location, p.message) for p in caught.value.problems] == [(where, what)]
        assert store.load("c1") == []
        # A role given as its plain text is the role: written and read back.
        plain: dict[str, Any] = {"id": "m", "role": "user", "content": "c", "timestamp": 1}
        store.extend("c1", [Message.model_construct(**plain)])
        assert [m.role for m in store.load("c1")] == [Role.USER]


# --------------------------------------------------------------------------------------------
# PostgreSQL: a password holding a raw "@", "/" or "?", which libpq takes for delimiters
# (store.md: percent-encode them); none of its pieces is ever shown

PASSWORD = "s3cr@t/pa?ss-TAIL-SECRET"
PIECES = ("s3cr", "pa?ss", "TAIL", "SECRET")


def test_the_command_line_shows_no_piece_of_such_a_password(capsys: pytest.CaptureFixture[str]) -> None:
    # Port 1 on the local machine: nothing listens, so the driver's own error is shown.
    assert main(["list", f"postgresql://app:{PASSWORD}@127.0.0.1:1/postgres?connect_timeout=3"]) == 1
    assert main(["stats", f"postgresql://app:{PASSWORD}@127.0.0.1:1/postgres?conversation=ro-c"]) == 1
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert text.count("orion-messages: error: postgresql://app:***@127.0.0.1:1/postgres") == 2
    for piece in PIECES:
        assert piece not in text


def test_the_command_line_masks_no_word_of_a_well_written_password_elsewhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Percent-encoded (store.md), the password has no part libpq could quote apart: only the
    # password itself is masked, and libpq's "connection to server at ..." keeps its words.
    url = "postgresql://app:hunter%2Fserver@127.0.0.1:1/postgres?connect_timeout=3"
    assert main(["list", url]) == 1
    text = capsys.readouterr().err
    assert text.startswith(
        "orion-messages: error: postgresql://app:***@127.0.0.1:1/postgres?connect_timeout=3: "
    )
    assert 'connection to server at "127.0.0.1", port 1 failed' in text
    assert "Is the server running" in text


def test_a_part_libpq_reads_as_the_port_is_masked_decoded(capsys: pytest.CaptureFixture[str]) -> None:
    # A raw "/" ends the password for libpq (store.md), which then reads "admin:Pass%2Fw0rd" as
    # a host and its port, and quotes the port decoded ("Pass/w0rd"): masked all the same.
    url = "postgresql://admin:Pass%2Fw0rd/x@db.internal/postgres?hostaddr=127.0.0.1"
    assert main(["list", url]) == 1
    text = capsys.readouterr().err
    assert "Pass" not in text
    assert 'invalid integer value "***" for connection option "port"' in text


def test_a_raw_hash_in_a_password_is_no_end_of_it(capsys: pytest.CaptureFixture[str]) -> None:
    # store.md: a raw "?", "#" or ":" stays part of the password for libpq: only the password is
    # masked, and "server" in libpq's own words stays.
    assert main(["list", "postgresql://u:abc#server@127.0.0.1:1/db?connect_timeout=3"]) == 1
    text = capsys.readouterr().err
    assert "abc" not in text
    assert 'connection to server at "127.0.0.1", port 1 failed' in text


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://app:P@ss:word99@127.0.0.1/postgres?hostaddr=127.0.0.1",  # read as a port
        "postgresql://app:pw@h:1,Secr3tTail@127.0.0.1:1/postgres?connect_timeout=3",  # a 2nd host
        "postgresql://app:5432,Secr3tHost:Zz9Port/x@127.0.0.1:1/postgres?connect_timeout=3",
    ],
)
def test_no_part_libpq_reads_apart_reaches_the_terminal(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # A raw "@" or "/" ends the password for libpq, which reads the rest as hosts (split at
    # ","), ports (after ":"), the path and the query, and quotes such a part in its error.
    assert main(["list", url]) == 1
    text = capsys.readouterr().err
    for part in ("word99", "Secr3tTail", "Secr3tHost", "Zz9Port"):
        assert part not in text


# A password given as a parameter (``?password=``), which libpq reads as it reads one in the
# authority: masked as written and decoded, wherever the URL or libpq's words are shown.


@pytest.mark.parametrize(
    ("option", "written", "said"),
    [
        ("port", "%09", 'invalid integer value "***" for connection option "port"'),
        ("port", "%0A", 'invalid integer value "***" for connection option "port"'),
        ("host", "%09", "failed to resolve host '***'"),  # psycopg's words: the host as repr shows it
    ],
)
def test_a_password_parameter_libpq_quotes_decoded_is_masked(
    option: str, written: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # libpq reads a parameter decoded, a tab or a newline in it, and quotes it in its error,
    # which the command line shows on one line, escaped: masked all the same, in the URL too.
    secret = f"se{written}cretpw"
    url = f"postgresql://u@127.0.0.1:1/db?password={secret}&{option}={secret}"
    assert main(["list", url]) == 1
    text = capsys.readouterr().err
    assert text.startswith(
        f"orion-messages: error: postgresql://u@127.0.0.1:1/db?password=***&{option}=***: "
    )
    assert said in text
    assert "cretpw" not in text


def test_a_value_equal_to_the_password_once_decoded_is_masked(capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql://u@127.0.0.1:1/db?password=secretpw&port=secr%65tpw"
    assert main(["list", "--format", "json", url]) == 1
    text = capsys.readouterr().err
    assert text.startswith("orion-messages: error: postgresql://u@127.0.0.1:1/db?password=***&port=***: ")
    assert "cretpw" not in text
    assert masked_url("postgresql://me@db/x?password=s3cr%65t&host=s3cret&port=s3cr%65t&sslmode=s3cre") == (
        "postgresql://me@db/x?password=***&host=***&port=***&sslmode=s3cre"
    )
    assert masked_url("postgresql://me:s3cr%65t@db/x?application_name=s3cret") == (
        "postgresql://me:***@db/x?application_name=***"
    )


@pytest.mark.parametrize(
    ("url", "shown", "parameter"),
    [
        (
            "postgresql://u:se=cret@127.0.0.1:1/db?application_name=se=cret",
            "postgresql://u:***@127.0.0.1:1/db?application_name=***",
            "application_name",
        ),
        (
            "postgresql://u@127.0.0.1:1/db?password=se=cret&host=se=cret",
            "postgresql://u@127.0.0.1:1/db?password=***&host=***",
            "password",
        ),
    ],
)
def test_a_value_equal_to_a_password_holding_an_equals_sign_is_masked(
    url: str, shown: str, parameter: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # libpq refuses the raw "=" in a value and the command line shows the URL in that error.
    assert main(["validate", url]) == 1
    text = capsys.readouterr().err
    assert text == (
        f'orion-messages: error: {shown}: extra key/value separator "=" in URI query parameter: "{parameter}"\n'
    )


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (
            "postgresql://bob:s3cr#t@h/db?application_name=s3cr#t",
            "postgresql://bob:***@h/db?application_name=***",
        ),
        (
            "postgresql://bob@h/db?password=s3cr#t&application_name=s3cr#t",
            "postgresql://bob@h/db?password=***&application_name=***",
        ),
    ],
)
def test_a_value_runs_past_a_hash_as_libpq_reads_it(url: str, shown: str) -> None:
    # libpq reads no fragment: "s3cr#t" is the whole value of application_name.
    assert masked_url(url) == shown


def test_list_masks_a_password_parameter_in_every_url(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_store(postgres_url) as store:
        store.create("c1")
    # The test server trusts its clients: the password is sent and not needed.
    url = f"{postgres_url}&password=s3cr%65tpw&application_name=s3cretpw"
    masked = f"{postgres_url}&password=***&application_name=***"
    assert main(["list", "--format", "json", url]) == 0
    out = capsys.readouterr().out
    assert "s3cr" not in out
    listed = json.loads(out)
    assert (listed["store"], [c["url"] for c in listed["conversations"]]) == (
        masked,
        [f"{masked}&conversation=c1"],
    )
    assert main(["list", url]) == 0
    out = capsys.readouterr().out
    assert "s3cr" not in out
    assert out.splitlines()[-1] == f"1 conversation in {masked}"
    assert main(["validate", "--format", "json", url]) == 0
    assert [entry["path"] for entry in json.loads(capsys.readouterr().out)["files"]] == [
        f"{masked}&conversation=c1"
    ]


def test_a_usage_error_masks_a_password_parameter_decoded(capsys: pytest.CaptureFixture[str]) -> None:
    # argparse quotes every argument it refuses: one that is the password, decoded, too.
    assert main(["list", "sqlite:///s.db", "postgresql://bob@h/db?password=s3cr%65tpw", "s3cretpw"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "orion-messages: error: unrecognized arguments: postgresql://bob@h/db?password=*** ***"
    )
