"""A throwaway PostgreSQL cluster for the tests: initdb and pg_ctl into a temporary folder.

The server listens on a Unix socket in that folder only (no TCP port), trusts local connections,
and is stopped and removed when the test session ends. As root (CI), it runs as the ``postgres``
user that Debian's package creates. Without server binaries or ``psycopg`` the tests that need it
are skipped with the reason; in CI (``CI=true``) they fail instead, so they always run there.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

__all__ = ["postgres_server", "postgres_store_factory"]


def _binaries() -> Path | None:
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"PostgreSQL tests cannot run in CI: {reason}")
    pytest.skip(reason)


class Server:
    """A running cluster: ``conninfo`` for psycopg, ``run`` for its own tools."""

    def __init__(self, root: Path, binaries: Path, user: str | None) -> None:
        self.root = root
        self.binaries = binaries
        self.user = user
        self.data = root / "data"
        self.socket = root / "socket"
        self.conninfo = (
            f"host={self.socket} dbname=postgres user={user or pwd.getpwuid(os.getuid()).pw_name}"
        )

    def run(self, *command: str) -> None:
        argv = [str(self.binaries / command[0]), *command[1:]]
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        subprocess.run(argv, check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self.socket.mkdir()
        if self.user is not None:
            shutil.chown(self.root, self.user)
            shutil.chown(self.socket, self.user)
        self.run(
            "initdb",
            "-D",
            str(self.data),
            "--auth=trust",
            "--no-sync",
            "-U",
            self.user or pwd.getpwuid(os.getuid()).pw_name,  # the name conninfo connects as
        )
        options = f"-k {self.socket} -c listen_addresses='' -c fsync=off -c max_connections=60"
        self.run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-w",
            "-l",
            str(self.root / "log"),
            "start",
        )

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[Server]:
    """The session's PostgreSQL server (started on first use)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (the postgres extra)")
    binaries = _binaries()
    if binaries is None:
        _unavailable("no PostgreSQL server binaries (Debian: apt-get install postgresql)")
    assert binaries is not None
    user = None
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("running as root without a postgres user to run the server as")
        user = "postgres"
    root = Path(tempfile.mkdtemp(prefix="wk-pg-"))
    os.chmod(root, 0o755)
    server = Server(root, binaries, user)
    try:
        server.start()
    except (subprocess.SubprocessError, OSError) as error:
        log = root / "log"
        detail = log.read_text()[-500:] if log.exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        _unavailable(f"the PostgreSQL server did not start: {error} {detail}")
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)


def postgres_store_factory(request: pytest.FixtureRequest) -> Callable[[str], Any]:
    """Task id -> a PostgresStore on a database of this test's own (task ids never collide)."""
    import psycopg

    from windowkeeper.storage.postgres import PostgresStore

    server: Server = request.getfixturevalue("postgres_server")
    database = f"t_{abs(hash(request.node.nodeid)) % 10**12}"
    with psycopg.connect(server.conninfo, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {database}")
        admin.execute(f"CREATE DATABASE {database}")
    conninfo = server.conninfo.replace("dbname=postgres", f"dbname={database}")
    return lambda task: PostgresStore(conninfo, task)
