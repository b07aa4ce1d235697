"""The PostgreSQL backend (``psycopg`` 3, the ``postgres`` extra): one database for fleets of workers.

The model is SQLite's (see :mod:`windowkeeper.storage._sqlite`): a task row with its version and a
row per message, one transaction per commit. Concurrency is optimistic: a commit updates the task
row only ``WHERE version = <the version it read>``; when another worker got there first nothing
is written and :class:`~windowkeeper.ConcurrentUpdateError` names the task and both versions.
A commit retried after a lost acknowledgement (the same ``commit_id``) succeeds without being
applied twice. Task ids are the caller's. ``psycopg`` is imported when a store is made, so the
core never needs it::

    from windowkeeper.storage.postgres import PostgresStore
    store = PostgresStore("postgresql://worker@db/agents", task_id="ticket-4711")
    session = ContextSession(model="claude-sonnet-4-5", store=store)
"""

from __future__ import annotations

import json
from typing import Any

from .._errors import ConfigurationError
from ._journal import encode_message
from ._protocol import Commit, ConcurrentUpdateError, Snapshot, StorageError

__all__ = ["SCHEMA", "PostgresStore"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS wk_tasks (
    task_id TEXT PRIMARY KEY,
    version BIGINT NOT NULL,
    commit_id TEXT NOT NULL,
    state JSONB NOT NULL,
    store TEXT,
    length INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS wk_messages (
    task_id TEXT NOT NULL REFERENCES wk_tasks (task_id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
);
"""
"""The tables (created on first use when missing; a migration tool may own them instead)."""


def _psycopg() -> Any:
    try:
        import psycopg  # noqa: PLC0415 - the optional extra, imported when used
    except ImportError:  # pragma: no cover - the extra is not installed
        raise ConfigurationError(
            "PostgresStore needs psycopg 3: pip install 'windowkeeper[postgres]'"
        ) from None
    return psycopg


class PostgresStore:
    """Task ``task_id`` in the PostgreSQL database at ``conninfo`` (a URL or key=value string).

    ``connection`` may be given instead (a ``psycopg.Connection`` in autocommit mode, shared by
    the stores of one worker); otherwise one is opened on first use and closed by :meth:`close`.
    """

    def __init__(
        self,
        conninfo: str | None = None,
        task_id: str = "",
        *,
        connection: Any = None,
        create_schema: bool = True,
    ) -> None:
        if not isinstance(task_id, str) or not task_id:
            raise ConfigurationError(f"task_id must be a non-empty string, got {task_id!r}")
        if (conninfo is None) == (connection is None):
            raise ConfigurationError("give conninfo or connection, not both")
        self.conninfo = conninfo
        self.task_id = task_id
        self._connection = connection
        self._owned = connection is None
        self._create_schema = create_schema

    @property
    def name(self) -> str:
        return f"postgres:{self.task_id}"

    def _connect(self) -> Any:
        psycopg = _psycopg()
        if self._connection is None:
            try:
                self._connection = psycopg.connect(self.conninfo, autocommit=True)
            except psycopg.Error as error:
                raise StorageError(f"{self.name}: cannot connect: {error}") from None
        if self._create_schema:
            try:
                with self._connection.transaction():
                    self._connection.execute("SELECT pg_advisory_xact_lock(7110517)")
                    self._connection.execute(SCHEMA)
            except psycopg.Error as error:
                self.close()  # a connection of our own is not left open on failure
                raise StorageError(f"{self.name}: cannot create the tables: {error}") from None
            self._create_schema = False
        return self._connection

    def load(self) -> Snapshot | None:
        connection = self._connect()
        psycopg = _psycopg()
        try:
            with connection.transaction():
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                row = connection.execute(
                    "SELECT version, state, store, length FROM wk_tasks WHERE task_id = %s",
                    (self.task_id,),
                ).fetchone()
                bodies = connection.execute(
                    "SELECT body FROM wk_messages WHERE task_id = %s ORDER BY position",
                    (self.task_id,),
                ).fetchall()
        except psycopg.Error as error:
            self._drop_broken()
            raise StorageError(f"{self.name}: cannot be read: {error}") from None
        if row is None:
            return None
        version, state, store, length = row
        history = [json.loads(body) for (body,) in bodies]
        if len(history) != length:
            raise StorageError(f"{self.name}: holds {len(history)} messages, recorded {length}")
        return Snapshot(int(version), history, store, state)

    def commit(self, commit: Commit) -> int:
        connection = self._connect()
        psycopg = _psycopg()
        rows = [
            (self.task_id, commit.keep + offset, encode_message(message).decode())
            for offset, message in enumerate(commit.append)
        ]
        state = json.dumps(commit.state, separators=(",", ":"), allow_nan=False)
        length = commit.keep + len(rows)
        version = commit.base_version + 1
        try:
            with connection.transaction():
                if commit.base_version == 0:
                    cursor = connection.execute(
                        "INSERT INTO wk_tasks VALUES (%s, %s, %s, %s, %s, %s)"
                        " ON CONFLICT (task_id) DO NOTHING",
                        (self.task_id, version, commit.commit_id, state, commit.store_json, length),
                    )
                else:
                    cursor = connection.execute(
                        "UPDATE wk_tasks SET version = %s, commit_id = %s, state = %s,"
                        " store = COALESCE(%s, store), length = %s"
                        " WHERE task_id = %s AND version = %s",
                        (
                            version,
                            commit.commit_id,
                            state,
                            commit.store_json,
                            length,
                            self.task_id,
                            commit.base_version,
                        ),
                    )
                if cursor.rowcount != 1:
                    raise _StaleError
                connection.execute(
                    "DELETE FROM wk_messages WHERE task_id = %s AND position >= %s",
                    (self.task_id, commit.keep),
                )
                if rows:
                    with (
                        connection.cursor() as copy_cursor,
                        copy_cursor.copy(
                            "COPY wk_messages (task_id, position, body) FROM STDIN"
                        ) as copy,
                    ):
                        for row in rows:
                            copy.write_row(row)
        except _StaleError:
            return self._settle_stale(connection, commit)
        except psycopg.Error as error:
            self._drop_broken()
            raise StorageError(f"{self.name}: commit failed: {error}") from None
        return version

    def _settle_stale(self, connection: Any, commit: Commit) -> int:
        """A refused commit: the version it made when it is a retry of itself, else the error."""
        row = connection.execute(
            "SELECT version, commit_id FROM wk_tasks WHERE task_id = %s", (self.task_id,)
        ).fetchone()
        found, last_id = (int(row[0]), row[1]) if row is not None else (0, "")
        if last_id == commit.commit_id:
            return found
        raise ConcurrentUpdateError(self.name, commit.base_version, found)

    def _drop_broken(self) -> None:
        """Close a connection of our own that failed for good; the next call opens a new one."""
        connection = self._connection
        if self._owned and connection is not None and (connection.closed or connection.broken):
            self.close()

    def close(self) -> None:
        if self._owned and self._connection is not None:
            self._connection.close()
            self._connection = None


class _StaleError(Exception):
    """The task row was not the version the commit was built on (internal)."""
