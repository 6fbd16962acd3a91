"""A real PostgreSQL server for the store tests: the one ORION_TEST_POSTGRES_URL names, or our own.

Our own is PostgreSQL from the system's packages (Debian: ``apt-get install postgresql``), set
up with ``initdb`` in a temporary folder and started with ``pg_ctl`` on 127.0.0.1 at a free
port, as a non-root user (PostgreSQL refuses to run as root: as root, the ``postgres`` system
user runs it). It is stopped and removed when the test session ends.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENVIRONMENT_URL = "ORION_TEST_POSTGRES_URL"


class Unavailable(Exception):
    """No PostgreSQL server can be had; the message says why."""


def _bin_dir() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if not candidates:
        raise Unavailable(
            "no PostgreSQL binaries (pg_ctl) found; install them (Debian: apt-get install postgresql)"
        )
    return Path(candidates[-1]).parent


def _as_server_user() -> tuple[list[str], int | None, int | None]:
    """The command prefix that runs a program as a user PostgreSQL accepts, and that user's ids."""
    if os.geteuid() != 0:
        return [], None, None
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise Unavailable("running as root and there is no 'postgres' user to run the server as") from None
    runner = shutil.which("runuser") or shutil.which("setpriv")
    if runner is None:
        raise Unavailable("running as root and neither runuser nor setpriv is available")
    if runner.endswith("runuser"):
        return [runner, "-u", "postgres", "--"], user.pw_uid, user.pw_gid
    return (
        [runner, f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups"],
        user.pw_uid,
        user.pw_gid,
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        program = Path(next(part for part in command if "/bin/" in part)).name
        raise Unavailable(f"{program} failed: {done.stderr.strip()[-600:]}")


@contextlib.contextmanager
def own_server() -> Iterator[str]:
    """Start a throwaway PostgreSQL server; yield its URL (database ``postgres``, user ``postgres``)."""
    bin_dir = _bin_dir()
    prefix, uid, gid = _as_server_user()
    folder = Path(tempfile.mkdtemp(prefix="orion-pg-"))
    if uid is not None and gid is not None:
        os.chown(folder, uid, gid)
    data = folder / "data"
    port = _free_port()
    try:
        _run(
            [
                *prefix,
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
            ]
        )
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60"
        _run(
            [
                *prefix,
                str(bin_dir / "pg_ctl"),
                "-D",
                str(data),
                "-l",
                str(folder / "log"),
                "-o",
                options,
                "-w",
                "start",
            ]
        )
        try:
            yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
        finally:
            subprocess.run(
                [*prefix, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                timeout=60,
                check=False,
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def with_schema(url: str, schema: str) -> str:
    """``url`` with its search path set to ``schema`` (libpq's ``options`` parameter)."""
    separator = "&" if "?" in url else "?"
    return f"{url}{separator}options=-csearch_path%3D{schema}"
