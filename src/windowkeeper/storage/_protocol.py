"""What a session persists, and the one protocol every backend speaks: ``load`` and ``commit``.

A session's durable state is its history (append-only, cut back only by a rollback), the
overwrite store (Cline's ``context_history.json`` text), and a small JSON object of decisions
(the hidden range, clips, the last usage, ...). Each call that changes the session makes one
:class:`Commit`: the messages appended since the last one (or a cut, after a rollback), the new
state, and the store when it changed. A backend applies a commit all or nothing: after the
process is killed at any instant, :meth:`SessionStore.load` returns what the last completed
commit made (what a power loss can take back depends on the backend and its ``durable``
setting: ``docs/persistence.md``).

Every commit names the version it was built on. A backend refuses a commit whose base is not
the version it holds (another writer committed in between) with
:class:`ConcurrentUpdateError`, and writes nothing; a commit retried after its first try went
through (a lost acknowledgement) is recognised by its ``commit_id`` and succeeds again without
applying twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from .._errors import ConcurrentUpdateError, StorageError
from .._record import field, record
from ..core._messages import Message

__all__ = [
    "Commit",
    "ConcurrentUpdateError",
    "ReadOnlyStore",
    "SessionStore",
    "Snapshot",
    "StorageError",
    "copy_task",
]


@record(frozen=True, slots=True)
class Snapshot:
    """What a backend holds for a task: the history, the store's JSON text and the state."""

    version: int
    history: list[Message]
    store_json: str | None = None  # None: no store saved
    state: dict[str, Any] | None = None  # None: no state saved


def _new_commit_id() -> str:
    """A random UUID's hex: tells a retried commit from another writer's."""
    import uuid  # noqa: PLC0415 - uuid imports platform (a few ms): the first commit pays

    return uuid.uuid4().hex


@record(frozen=True, slots=True)
class Commit:
    """One change, durable all or nothing.

    The stored history keeps its first ``keep`` messages and gets ``append`` after them (a
    pure append keeps them all; a rollback keeps fewer). ``store_json`` is the new store, or
    None when it did not change.
    """

    base_version: int
    keep: int
    append: Sequence[Message]
    state: dict[str, Any]
    store_json: str | None = None
    commit_id: str = field(default_factory=_new_commit_id)


@runtime_checkable
class SessionStore(Protocol):
    """Where a session persists: a task folder, a SQLite database, a PostgreSQL server, ..."""

    @property
    def name(self) -> str:
        """The task, for messages: a folder path or ``backend:task-id``."""
        ...

    def load(self) -> Snapshot | None:
        """The task as the last completed commit left it, or None when nothing was stored."""
        ...

    def commit(self, commit: Commit) -> int:
        """Apply ``commit`` all or nothing; return the new version.

        Raises :class:`ConcurrentUpdateError` when ``commit.base_version`` is not the version
        held, :class:`StorageError` when the write failed (nothing of it is kept), and
        :class:`~windowkeeper.ConfigurationError` (a ``ValueError``) when ``commit.keep`` is not
        between 0 and the number of messages stored.
        """
        ...

    def close(self) -> None:
        """Release what the backend holds (connections, file handles)."""
        ...


class ReadOnlyStore:
    """A backend seen without writing: loads from ``inner``, keeps commits in memory only.

    For tools that want to see what a stored session would do next (``windowkeeper view``)
    without changing what is stored.
    """

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self._version = 0

    @property
    def name(self) -> str:
        return self.inner.name

    def load(self) -> Snapshot | None:
        snapshot = self.inner.load()
        self._version = snapshot.version if snapshot is not None else 0
        return snapshot

    def commit(self, commit: Commit) -> int:
        self._version += 1
        return self._version

    def close(self) -> None:
        self.inner.close()


def copy_task(source: SessionStore, target: SessionStore) -> int:
    """Copy what ``source`` holds for its task into ``target``, which must hold nothing yet.

    For moving a task between backends, e.g. from a database to a Cline task folder (what
    ``windowkeeper export`` does). Returns the number of messages copied; raises
    :class:`StorageError` when ``source`` holds nothing or ``target`` already holds the task.
    """
    snapshot = source.load()
    if snapshot is None:
        raise StorageError(f"{source.name}: holds no task to copy")
    if target.load() is not None:
        raise StorageError(f"{target.name}: already holds a task; copy into an empty place")
    target.commit(Commit(0, 0, snapshot.history, snapshot.state or {}, snapshot.store_json or "[]"))
    return len(snapshot.history)
