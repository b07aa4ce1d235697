"""A throwaway PostgreSQL cluster for the storage bench: initdb and pg_ctl into a temporary folder.

The server listens on a Unix socket in that folder only (no TCP port) and trusts local
connections; it is stopped and removed on exit. As root it runs as the ``postgres`` user (the
server refuses to run as root). Unlike the tests' cluster it runs with ``fsync=on`` (and the
default ``synchronous_commit=on``), as a real deployment does, unless made with ``fsync=False``;
the bench runs one of each side by side to compare them turn by turn.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["Cluster", "PostgresUnavailableError", "binaries"]


class PostgresUnavailableError(RuntimeError):
    """No server binaries, no psycopg, or the server did not start (the reason says which)."""


def binaries() -> Path | None:
    """The newest PostgreSQL server binaries installed (Debian's layout first), or None."""
    for candidate in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    found = shutil.which("initdb")
    return Path(found).parent if found else None


class Cluster:
    """A cluster of its own: ``start()``, ``conninfo(database)``, ``create_database``, ``stop()``."""

    def __init__(self, *, fsync: bool = True, max_connections: int = 40) -> None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise PostgresUnavailableError(
                "psycopg is not installed (the postgres extra)"
            ) from None
        found = binaries()
        if found is None:
            raise PostgresUnavailableError(
                "no PostgreSQL server binaries (apt-get install postgresql)"
            )
        self.binaries = found
        self.user: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailableError(
                    "root without a postgres user to run the server"
                ) from None
            self.user = "postgres"
        # initdb names the superuser; the same name connects (the server's user, or ours)
        self.role = self.user or pwd.getpwuid(os.getuid()).pw_name
        self.fsync = fsync
        self.max_connections = max_connections
        self.root = Path(tempfile.mkdtemp(prefix="wk-bench-pg-"))
        os.chmod(self.root, 0o755)
        self.data = self.root / "data"
        self.socket = self.root / "socket"
        self.version = ""
        self._started = False

    def _run(self, *command: str) -> str:
        argv = [str(self.binaries / command[0]), *command[1:]]
        if self.user is not None:
            argv = ["runuser", "-u", self.user, "--", *argv]
        done = subprocess.run(argv, check=True, capture_output=True, text=True, timeout=180)
        return done.stdout

    def start(self) -> Cluster:
        self.socket.mkdir()
        if self.user is not None:
            shutil.chown(self.root, self.user)
            shutil.chown(self.socket, self.user)
        try:
            self._run("initdb", "-D", str(self.data), "--auth=trust", "--no-sync", "-U", self.role)
            options = (
                f"-k {self.socket} -c listen_addresses='' -c fsync={'on' if self.fsync else 'off'}"
                f" -c max_connections={self.max_connections} -c shared_buffers=128MB"
            )
            self._run(
                "pg_ctl", "-D", str(self.data), "-o", options, "-w", "-l", str(self.root / "log"),
                "start",
            )  # fmt: skip
        except (subprocess.SubprocessError, OSError) as error:
            log = self.root / "log"
            detail = log.read_text()[-500:] if log.exists() else ""
            self.stop()
            raise PostgresUnavailableError(f"the server did not start: {error} {detail}") from None
        self._started = True
        self.version = str(self.scalar("SHOW server_version"))
        return self

    def conninfo(self, database: str = "postgres") -> str:
        return f"host={self.socket} dbname={database} user={self.role}"

    def connect(self, database: str = "postgres") -> Any:
        import psycopg

        return psycopg.connect(self.conninfo(database), autocommit=True)

    def scalar(self, query: str, database: str = "postgres") -> Any:
        with self.connect(database) as connection:
            row = connection.execute(query).fetchone()
        return row[0] if row is not None else None

    def create_database(self, name: str) -> str:
        """A new, empty database ``name`` (dropped first when present); its conninfo."""
        with self.connect() as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.conninfo(name)

    def drop_database(self, name: str) -> None:
        with self.connect() as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        if self._started:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            self._started = False
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
