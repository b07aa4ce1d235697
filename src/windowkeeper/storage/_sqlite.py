"""The SQLite backend: many tasks in one database file, a row per message, a transaction per commit.

The embedded choice for a service on one machine (standard library only). Schema::

    wk_tasks(task_id PRIMARY KEY, version, commit_id, state JSON, length)
    wk_stores(task_id PRIMARY KEY, store JSON)     written only by a commit that changed it
    wk_messages(task_id, position, body JSON, PRIMARY KEY (task_id, position))

A commit is one ``BEGIN IMMEDIATE`` transaction: it checks the task's version, deletes the
messages past ``keep``, inserts the appended ones and updates the task row; a stale version
raises :class:`ConcurrentUpdateError` and rolls back. The database runs in WAL mode, so readers
never wait for a writer; ``synchronous=FULL`` when ``durable`` (the default), ``NORMAL`` otherwise.
Task ids are the caller's (any non-empty string). One store object per task; the connection is
opened on first use and closed by :meth:`SQLiteStore.close`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

from .._errors import ConfigurationError
from ._folder import encode_message
from ._protocol import Commit, ConcurrentUpdateError, Snapshot, StorageError

__all__ = ["SQLiteStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS wk_tasks (
    task_id TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    commit_id TEXT NOT NULL,
    state TEXT NOT NULL,
    length INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS wk_stores (
    task_id TEXT PRIMARY KEY,
    store TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS wk_messages (
    task_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (task_id, position)
) WITHOUT ROWID;
"""


class SQLiteStore:
    """Task ``task_id`` in the SQLite database at ``path`` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], task_id: str, *, durable: bool = True) -> None:
        if not isinstance(task_id, str) or not task_id:
            raise ConfigurationError(f"task_id must be a non-empty string, got {task_id!r}")
        self.path = Path(path)
        self.task_id = task_id
        self.durable = durable
        self._connection: sqlite3.Connection | None = None
        self._version = 0

    @property
    def name(self) -> str:
        return f"sqlite:{self.path}#{self.task_id}"

    def _connect(self) -> sqlite3.Connection:
        import sqlite3  # noqa: PLC0415  (loaded by the first store, not by import windowkeeper)

        if self._connection is None:
            try:
                connection = sqlite3.connect(self.path, isolation_level=None, timeout=30)
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
                connection.executescript(_SCHEMA)
            except sqlite3.Error as error:
                raise StorageError(f"{self.name}: cannot open the database: {error}") from None
            self._connection = connection
        return self._connection

    def load(self) -> Snapshot | None:
        import sqlite3  # noqa: PLC0415  (loaded by the first store, not by import windowkeeper)

        connection = self._connect()
        try:
            connection.execute("BEGIN")
            row = connection.execute(
                "SELECT version, state, store, length FROM wk_tasks"
                " LEFT JOIN wk_stores USING (task_id) WHERE task_id = ?",
                (self.task_id,),
            ).fetchone()
            bodies = connection.execute(
                "SELECT body FROM wk_messages WHERE task_id = ? ORDER BY position",
                (self.task_id,),
            ).fetchall()
            connection.execute("COMMIT")
        except sqlite3.Error as error:
            raise StorageError(f"{self.name}: cannot be read: {error}") from None
        if row is None:
            self._version = 0
            return None
        version, state, store, length = row
        history = [json.loads(body) for (body,) in bodies]
        if len(history) != length:
            raise StorageError(f"{self.name}: holds {len(history)} messages, recorded {length}")
        self._version = version
        return Snapshot(version, history, store, json.loads(state))

    def commit(self, commit: Commit) -> int:
        import sqlite3  # noqa: PLC0415  (loaded by the first store, not by import windowkeeper)

        connection = self._connect()
        rows = [
            (self.task_id, commit.keep + offset, encode_message(message).decode())
            for offset, message in enumerate(commit.append)
        ]
        state = json.dumps(commit.state, separators=(",", ":"), allow_nan=False)
        try:
            connection.execute("BEGIN IMMEDIATE")
            try:
                version = self._apply(connection, commit, rows, state)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
        except sqlite3.Error as error:
            raise StorageError(f"{self.name}: commit failed: {error}") from None
        self._version = version
        return version

    def _apply(
        self,
        connection: sqlite3.Connection,
        commit: Commit,
        rows: list[tuple[str, int, str]],
        state: str,
    ) -> int:
        row = connection.execute(
            "SELECT version, commit_id, length FROM wk_tasks WHERE task_id = ?", (self.task_id,)
        ).fetchone()
        found, last_id, length = row if row is not None else (0, "", 0)
        if found != commit.base_version:
            if last_id == commit.commit_id:
                return int(found)  # a retry of this very commit: it went through
            raise ConcurrentUpdateError(self.name, commit.base_version, int(found))
        if not 0 <= commit.keep <= length:
            raise ConfigurationError(f"commit keeps {commit.keep} of {length} stored messages")
        version = int(found) + 1
        connection.execute(
            "DELETE FROM wk_messages WHERE task_id = ? AND position >= ?",
            (self.task_id, commit.keep),
        )
        connection.executemany("INSERT INTO wk_messages VALUES (?, ?, ?)", rows)
        length = commit.keep + len(rows)
        if row is None:
            connection.execute(
                "INSERT INTO wk_tasks VALUES (?, ?, ?, ?, ?)",
                (self.task_id, version, commit.commit_id, state, length),
            )
        else:
            connection.execute(
                "UPDATE wk_tasks SET version = ?, commit_id = ?, state = ?, length = ?"
                " WHERE task_id = ?",
                (version, commit.commit_id, state, length, self.task_id),
            )
        if commit.store_json is not None:  # the store only when it changed
            connection.execute(
                "INSERT INTO wk_stores VALUES (?, ?)"
                " ON CONFLICT (task_id) DO UPDATE SET store = excluded.store",
                (self.task_id, commit.store_json),
            )
        return version

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
