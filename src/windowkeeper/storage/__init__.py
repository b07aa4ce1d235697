"""Where a session persists: atomic files, task folders, and the storage protocol with its backends.

- :mod:`._files`: atomic writes and reading a task folder's ``context_history.json`` safely;
- :mod:`._protocol`: :class:`SessionStore` (``load`` / ``commit``), :class:`Commit`,
  :class:`Snapshot`, :class:`ConcurrentUpdateError`;
- backends: :class:`TaskFolderStore` (Cline's task folder, the default), :class:`SQLiteStore`
  (many tasks in one database file); ``windowkeeper.storage.postgres.PostgresStore`` for fleets.
"""

from __future__ import annotations

from ._files import (
    CONTEXT_HISTORY_FILE,
    LoadReport,
    LoadStatus,
    atomic_write_bytes,
    atomic_write_text,
    file_mode,
    fsync_folder,
    load_store,
    remove_stale_temporaries,
)
from ._folder import TaskFolderStore
from ._protocol import (
    Commit,
    ConcurrentUpdateError,
    ReadOnlyStore,
    SessionStore,
    Snapshot,
    StorageError,
    copy_task,
)
from ._sqlite import SQLiteStore

__all__ = [
    "CONTEXT_HISTORY_FILE",
    "Commit",
    "ConcurrentUpdateError",
    "LoadReport",
    "LoadStatus",
    "ReadOnlyStore",
    "SQLiteStore",
    "SessionStore",
    "Snapshot",
    "StorageError",
    "TaskFolderStore",
    "atomic_write_bytes",
    "atomic_write_text",
    "copy_task",
    "file_mode",
    "fsync_folder",
    "load_store",
    "remove_stale_temporaries",
]
