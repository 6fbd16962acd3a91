"""Schema versions: the checked-in first-version store still opens and is upgraded to version 2;
upgrades run whole or not at all; a newer store is refused untouched."""

from __future__ import annotations

import hashlib
import re
import secrets
import shutil
import sqlite3
import threading
from pathlib import Path

import pytest

from orion_messages import (
    ContextConfig,
    Message,
    StoreError,
    StoreVersionError,
    _store_schema,
    dumps,
    load,
    plan_prune,
)
from orion_messages.cli import main
from orion_messages.store import open_store, parse_store_url

from ..conftest import FIXTURES
from ..test_goldens import RYU_TWINS
from .test_store import chat, raw_sql
from .test_store_plans import connection_to

V1 = FIXTURES / "store" / "v1.sqlite"
# What fixtures/store/v1.sqlite was made from (each conversation is named after its golden).
V1_GOLDENS = [
    "v0.7/edge-values.json",
    "v0.7/edge-unicode-escapes.json",
    "newer/unknown-keys.json",
    "v0.8/pending-mixed.json",
]
V1_PRUNED = "v0.7/plain-chat.json"
V1_PRUNE_CONFIG = ContextConfig(max_context_tokens=28, max_response_tokens=0)


def assert_same_as_golden(messages: list[Message], name: str) -> None:
    """The messages are the golden's: byte for byte in the writer the golden was written by."""
    if name in RYU_TWINS:  # spelled as serde_json before 1.0.146 wrote floats; the twin as today
        assert dumps(messages, float_style="ryu") == (FIXTURES / name).read_bytes(), name
        assert dumps(messages) == (FIXTURES / RYU_TWINS[name]).read_bytes(), name
    else:
        assert dumps(messages) == (FIXTURES / name).read_bytes(), name


def version_of(database: Path) -> int:
    with sqlite3.connect(database) as connection:
        (version,) = connection.execute("SELECT version FROM orion_store_version").fetchone()
    return int(version)


def columns(database: Path, table: str) -> list[str]:
    with sqlite3.connect(database) as connection:
        return [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]


@pytest.fixture
def v1_copy(tmp_path: Path) -> Path:
    """A copy of the checked-in first-version store (opening one may upgrade it)."""
    copy = tmp_path / "v1.sqlite"
    shutil.copyfile(V1, copy)
    return copy


def sqlite_indexes(database: Path, table: str) -> dict[str, list[str]]:
    """The named indexes of ``table`` (SQLite's own automatic ones left out), with their columns."""
    with sqlite3.connect(database) as connection:
        names = [row[1] for row in connection.execute(f"PRAGMA index_list({table})")]
        return {
            name: [row[2] for row in connection.execute(f"PRAGMA index_info({name})")]
            for name in names
            if not name.startswith("sqlite_autoindex")
        }


def test_the_first_version_store_opens_and_loads_byte_identical(v1_copy: Path) -> None:
    assert version_of(v1_copy) == 1
    assert sqlite_indexes(v1_copy, "orion_conversations") == {}
    with open_store(f"sqlite:///{v1_copy}") as store:
        assert [c.id for c in store.conversations()] == [*V1_GOLDENS, V1_PRUNED]
        for name in V1_GOLDENS:
            assert_same_as_golden(store.load(name), name)
            info = store.info(name)
            assert (info.title, info.metadata) == (f"golden {name}", {"fixture": name, "big": 2**64})
        golden = load(FIXTURES / V1_PRUNED)
        plan = plan_prune(golden, V1_PRUNE_CONFIG)
        assert store.load(V1_PRUNED) == plan.kept_messages(golden)
        assert store.load_archived(V1_PRUNED) == plan.dropped_messages(golden)
        assert store.info(V1_PRUNED).message_count == plan.kept_count
    # Opened by this version, the released version-1 store is now a version-2 one.
    assert version_of(v1_copy) == 2
    assert sqlite_indexes(v1_copy, "orion_conversations") == {
        "orion_conversations_by_created": ["created_ms", "id"]
    }
    with open_store(f"sqlite:///{v1_copy}") as store:
        first, second = store.conversations(limit=3), store.conversations(after=V1_GOLDENS[2])
        assert [c.id for c in first + second] == [*V1_GOLDENS, V1_PRUNED]


def test_the_schema_version_is_2_and_upgrades_only_append() -> None:
    assert _store_schema.SCHEMA_VERSION == 2
    assert sorted(_store_schema.UPGRADES) == [0, 1]
    assert _store_schema.UPGRADES[1] == [
        "CREATE INDEX orion_conversations_by_created ON orion_conversations (created_ms, id)"
    ]


def _pretend_version_3(monkeypatch: pytest.MonkeyPatch, *steps: str) -> None:
    """Stand in a schema version 3 made of ``steps``, to exercise the upgrade path past this one."""
    monkeypatch.setattr(_store_schema, "UPGRADES", {**_store_schema.UPGRADES, 2: list(steps)})
    monkeypatch.setattr(_store_schema, "SCHEMA_VERSION", 3)


def test_an_older_store_is_upgraded_in_place(v1_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_version_3(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT")
    with open_store(f"sqlite:///{v1_copy}") as store:  # two steps: 1 -> 2 -> 3
        assert_same_as_golden(store.load(V1_GOLDENS[0]), V1_GOLDENS[0])
    assert version_of(v1_copy) == 3
    assert "owner" in columns(v1_copy, "orion_conversations")
    assert "orion_conversations_by_created" in sqlite_indexes(v1_copy, "orion_conversations")
    with open_store(f"sqlite:///{v1_copy}"):  # a second open finds it current
        pass
    assert version_of(v1_copy) == 3


def test_a_failed_upgrade_leaves_the_store_as_it_was(v1_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_version_3(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT", "NOT SQL AT ALL")
    with pytest.raises(sqlite3.OperationalError):
        open_store(f"sqlite:///{v1_copy}")
    assert version_of(v1_copy) == 1
    assert "owner" not in columns(v1_copy, "orion_conversations")  # the later steps were rolled back too
    assert sqlite_indexes(v1_copy, "orion_conversations") == {}  # and the 1 -> 2 step with them
    monkeypatch.undo()
    with open_store(f"sqlite:///{v1_copy}") as store:
        assert dumps(store.load(V1_GOLDENS[1])) == (FIXTURES / V1_GOLDENS[1]).read_bytes()


def test_a_newer_sqlite_store_is_refused_untouched(v1_copy: Path) -> None:
    with sqlite3.connect(v1_copy) as connection:
        connection.execute("UPDATE orion_store_version SET version = 3")
    connection.close()
    before = hashlib.sha256(v1_copy.read_bytes()).hexdigest()
    with pytest.raises(StoreVersionError, match="schema version 3, newer than 2") as caught:
        open_store(f"sqlite:///{v1_copy}")
    assert (caught.value.found, caught.value.supported) == (3, 2)
    assert hashlib.sha256(v1_copy.read_bytes()).hexdigest() == before


def test_postgres_upgrades_and_refuses_like_sqlite(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(postgres_url) as store:
        store.create("c")
        store.extend("c", load(FIXTURES / V1_GOLDENS[0]))
    _pretend_version_3(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT", "NOT SQL AT ALL")
    import psycopg

    with pytest.raises(psycopg.errors.SyntaxError):
        open_store(postgres_url)
    _pretend_version_3(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT")
    with open_store(postgres_url) as store:
        assert_same_as_golden(store.load("c"), V1_GOLDENS[0])
    monkeypatch.undo()
    with pytest.raises(StoreVersionError, match="schema version 3, newer than 2"):
        open_store(postgres_url)


def version_and_indexes(url: str) -> tuple[int, dict[str, list[str]]]:
    """The store's schema version and the named indexes of ``orion_conversations`` with their
    columns (the primary key's own index left out), read from the database behind the store's back."""
    with connection_to(url) as connection:
        (version,) = connection.execute("SELECT version FROM orion_store_version").fetchone()
        if parse_store_url(url).backend == "sqlite":
            return version, sqlite_indexes(Path(parse_store_url(url).database), "orion_conversations")
        rows = connection.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema() "
            "AND tablename = 'orion_conversations' AND indexname <> 'orion_conversations_pkey'"
        ).fetchall()
    return version, {name: definition.rsplit("(", 1)[1].rstrip(")").split(", ") for name, definition in rows}


def test_a_version_1_store_is_upgraded_to_2_with_its_data_intact(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A version-1 store as the first release made it: the open stops at version 1 (UPGRADES[0] only).
    monkeypatch.setattr(_store_schema, "SCHEMA_VERSION", 1)
    golden = load(FIXTURES / V1_GOLDENS[0])
    config = ContextConfig(max_context_tokens=600, max_response_tokens=100)
    plan = plan_prune(chat(8), config)
    assert plan.dropped  # something is archived
    with open_store(store_url) as store:
        # Created in the order of their ids, so listed in it (the same millisecond or not).
        store.create("a", title="first", metadata={"big": 2**64})
        store.create("b", title="second", metadata={"n": [1, 2]})
        store.extend("a", golden)
        store.create("pruned")
        store.extend("pruned", chat(8))
        assert store.prune("pruned", config, archive=True) == plan
        before = store.conversations()
    assert version_and_indexes(store_url) == (1, {})
    monkeypatch.undo()

    with open_store(store_url) as store:
        assert store.conversations() == before  # ids, titles, metadata, times and counts as they were
        assert [(c.id, c.title, c.metadata) for c in before] == [
            ("a", "first", {"big": 2**64}),
            ("b", "second", {"n": [1, 2]}),
            ("pruned", None, None),
        ]
        assert [c.message_count for c in before] == [len(golden), 0, plan.kept_count]
        assert_same_as_golden(store.load("a"), V1_GOLDENS[0])
        assert store.load("b") == []
        assert store.load("pruned") == plan.kept_messages(chat(8))
        assert store.load_archived("pruned") == plan.dropped_messages(chat(8))
        assert store.conversations(limit=1, after="a") == before[1:2]
    assert version_and_indexes(store_url) == (2, {"orion_conversations_by_created": ["created_ms", "id"]})

    # From now on an orion-messages that reads only version 1 refuses the store.
    monkeypatch.setattr(_store_schema, "SCHEMA_VERSION", 1)
    with pytest.raises(StoreVersionError, match="schema version 2, newer than 1"):
        open_store(store_url)
    monkeypatch.undo()
    assert version_and_indexes(store_url)[0] == 2


def test_an_empty_version_table_is_refused(store_url: str) -> None:
    open_store(store_url).close()
    raw_sql(store_url, "DELETE FROM orion_store_version")
    with pytest.raises(StoreError, match="version table is empty"):
        open_store(store_url)


def test_a_version_that_is_no_number_is_refused(tmp_path: Path) -> None:
    # SQLite keeps what it is given in an INTEGER column; a table of that name from elsewhere.
    url = f"sqlite:///{tmp_path / 'chats.db'}"
    open_store(url).close()
    raw_sql(url, "UPDATE orion_store_version SET version = 'abc'")
    with pytest.raises(StoreError, match='the store\'s version is "abc", not a number'):
        open_store(url)


def test_processes_creating_one_store_at_once_do_not_clash(store_url: str) -> None:
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            open_store(store_url).close()
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=open_it) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_opening_without_create_uses_a_version_1_store_as_it_is(
    v1_copy: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Version 2 only adds an index: read-only opens (and the commands, which open so) leave the
    # schema alone, so an older orion-messages sharing the store keeps working.
    url = f"sqlite:///{v1_copy}"
    with open_store(url, create=False) as store:
        assert [c.id for c in store.conversations(limit=2)] == V1_GOLDENS[:2]  # sorted, no index
        assert [c.id for c in store.conversations(after=V1_GOLDENS[1])] == [*V1_GOLDENS[2:], V1_PRUNED]
        assert_same_as_golden(store.load(V1_GOLDENS[0]), V1_GOLDENS[0])
    for command in (["list", url], ["validate", url], ["stats", f"{url}?conversation={V1_PRUNED}"]):
        assert main(command) == 0, capsys.readouterr().err
    assert (version_of(v1_copy), sqlite_indexes(v1_copy, "orion_conversations")) == (1, {})
    open_store(url).close()  # a writer's open (create=True) upgrades it
    assert version_of(v1_copy) == 2


def test_a_role_that_may_only_read_opens_a_version_1_store(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    monkeypatch.setattr(_store_schema, "SCHEMA_VERSION", 1)
    golden = load(FIXTURES / V1_GOLDENS[0])
    with open_store(postgres_url) as store:
        store.create("a")
        store.extend("a", golden)
    monkeypatch.undo()
    found = re.search(r"search_path%3D(\w+)", postgres_url)
    assert found is not None
    schema, role = found[1], f"orion_reader_{secrets.token_hex(4)}"
    reader_url = postgres_url.replace("postgresql://postgres@", f"postgresql://{role}@", 1)
    grants = [
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
    ]
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        try:
            for grant in grants:
                admin.execute(grant)
            with open_store(reader_url, create=False) as store:
                assert store.load("a") == golden
                assert [c.id for c in store.conversations(limit=1)] == ["a"]
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                open_store(reader_url)  # a writer's open upgrades, which this role may not
            assert version_and_indexes(postgres_url) == (1, {})
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
