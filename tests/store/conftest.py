"""Fixtures for the store tests: a store URL on each backend, against a real PostgreSQL server.

The PostgreSQL tests skip, with the reason, only when no server can be had and the environment
variable CI is not set; under CI they fail instead.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from .support import ENVIRONMENT_URL, Unavailable, own_server, with_schema


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a PostgreSQL server: ORION_TEST_POSTGRES_URL, or one started for this session."""
    given = os.environ.get(ENVIRONMENT_URL)
    if given:
        yield given
        return
    try:
        import psycopg  # noqa: F401 - only to say clearly that the extra is missing
    except ImportError:
        _unavailable("psycopg is not installed (pip install -e '.[dev]')")
    try:
        server = own_server()
        url = server.__enter__()
    except Unavailable as error:
        _unavailable(str(error))
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


def _unavailable(reason: str) -> NoReturn:
    text = f"no PostgreSQL server: {reason}; or set {ENVIRONMENT_URL}"
    if os.environ.get("CI"):
        pytest.fail(f"{text} (CI is set: the store's PostgreSQL tests must run)", pytrace=False)
    pytest.skip(text)


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A store URL on PostgreSQL with a fresh, empty schema of its own, dropped afterwards."""
    import psycopg

    schema = f"orion_test_{secrets.token_hex(6)}"
    with psycopg.connect(postgres_server, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    try:
        yield with_schema(postgres_server, schema)
    finally:
        with psycopg.connect(postgres_server, autocommit=True) as connection:
            connection.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A store URL on a new SQLite file."""
    return f"sqlite:///{tmp_path / 'chats.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest) -> str:
    """A store URL on each backend in turn, each empty."""
    name = "sqlite_url" if request.param == "sqlite" else "postgres_url"
    url: str = request.getfixturevalue(name)
    return url
