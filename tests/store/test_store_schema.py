"""Schema versions: the checked-in first-version store still opens; upgrades run whole or not at all;
a newer store is refused untouched."""

from __future__ import annotations

import hashlib
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
from orion_messages.store import open_store

from ..conftest import FIXTURES
from ..test_goldens import RYU_TWINS
from .test_store import raw_sql

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


def test_the_first_version_store_opens_and_loads_byte_identical(v1_copy: Path) -> None:
    assert version_of(v1_copy) == 1
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


def _pretend_version_2(monkeypatch: pytest.MonkeyPatch, *steps: str) -> None:
    """Stand in a schema version 2 made of ``steps``, to exercise the upgrade path."""
    monkeypatch.setattr(_store_schema, "UPGRADES", {**_store_schema.UPGRADES, 1: list(steps)})
    monkeypatch.setattr(_store_schema, "SCHEMA_VERSION", 2)


def test_an_older_store_is_upgraded_in_place(v1_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_version_2(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT")
    with open_store(f"sqlite:///{v1_copy}") as store:
        assert_same_as_golden(store.load(V1_GOLDENS[0]), V1_GOLDENS[0])
    assert version_of(v1_copy) == 2
    assert "owner" in columns(v1_copy, "orion_conversations")
    with open_store(f"sqlite:///{v1_copy}"):  # a second open finds it current
        pass
    assert version_of(v1_copy) == 2


def test_a_failed_upgrade_leaves_the_store_as_it_was(v1_copy: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _pretend_version_2(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT", "NOT SQL AT ALL")
    with pytest.raises(sqlite3.OperationalError):
        open_store(f"sqlite:///{v1_copy}")
    assert version_of(v1_copy) == 1
    assert "owner" not in columns(v1_copy, "orion_conversations")  # the first step was rolled back too
    monkeypatch.undo()
    with open_store(f"sqlite:///{v1_copy}") as store:
        assert dumps(store.load(V1_GOLDENS[1])) == (FIXTURES / V1_GOLDENS[1]).read_bytes()


def test_a_newer_sqlite_store_is_refused_untouched(v1_copy: Path) -> None:
    with sqlite3.connect(v1_copy) as connection:
        connection.execute("UPDATE orion_store_version SET version = 2")
    connection.close()
    before = hashlib.sha256(v1_copy.read_bytes()).hexdigest()
    with pytest.raises(StoreVersionError, match="schema version 2, newer than 1") as caught:
        open_store(f"sqlite:///{v1_copy}")
    assert (caught.value.found, caught.value.supported) == (2, 1)
    assert hashlib.sha256(v1_copy.read_bytes()).hexdigest() == before


def test_postgres_upgrades_and_refuses_like_sqlite(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(postgres_url) as store:
        store.create("c")
        store.extend("c", load(FIXTURES / V1_GOLDENS[0]))
    _pretend_version_2(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT", "NOT SQL AT ALL")
    import psycopg

    with pytest.raises(psycopg.errors.SyntaxError):
        open_store(postgres_url)
    _pretend_version_2(monkeypatch, "ALTER TABLE orion_conversations ADD COLUMN owner TEXT")
    with open_store(postgres_url) as store:
        assert_same_as_golden(store.load("c"), V1_GOLDENS[0])
    monkeypatch.undo()
    with pytest.raises(StoreVersionError, match="schema version 2, newer than 1"):
        open_store(postgres_url)


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
    with pytest.raises(StoreError, match="the store's version is 'abc', not a number"):
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
