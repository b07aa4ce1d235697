"""A session's link to its storage backend: one commit of what changed, and the load."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import MalformedMessageError, TaskFolderError
from ..core._incremental import Seen
from ..core._inputs import check_session_message
from ..core._messages import Message
from ..core._overwrites import CorruptStoreError, OverwriteStore
from ..storage import Commit, SessionStore
from ._state import SessionState, state_from_json, state_to_json

__all__ = ["HISTORY_FILE", "Loaded", "Persistence", "check_first"]

HISTORY_FILE = "api_conversation_history.json"


def check_first(history: Sequence[Message], name: str) -> None:
    """The first message of a conversation must be a user message (the task)."""
    if history and history[0].get("role") != "user":
        raise MalformedMessageError(
            f"{name}[0].role", "the first message must be a user message (the task)"
        )


@dataclass(frozen=True, slots=True)
class Loaded:
    """What a backend held: the history, the store (None: none yet) and the state (None: none)."""

    history: list[Message]
    store: OverwriteStore | None
    state: SessionState | None


class Persistence:
    """Commits a session to its backend, writing only what changed since the last commit.

    It remembers how much of the history is still what was committed (constant time for a
    growing history, no copy) and which store revision was written, so a steady turn commits
    the appended messages, the state, and the store only when it changed.
    """

    __slots__ = ("_committed", "_store", "_version", "backend")

    def __init__(self, backend: SessionStore) -> None:
        self.backend = backend
        self._version = 0  # of what the backend holds
        self._committed = Seen()
        self._store: tuple[OverwriteStore, int] | None = None  # (store, revision) written

    def commit(self, history: list[Message], state: SessionState, store: OverwriteStore) -> None:
        """Make ``history``, ``state`` and ``store`` durable together (one backend commit)."""
        keep = self._committed.prefix(history)
        changed = self._store != (store, store.revision)
        commit = Commit(
            base_version=self._version,
            keep=keep,
            append=history[keep:],
            state=state_to_json(state, len(history)),
            store_json=store.to_json() if changed else None,
        )
        self._version = self.backend.commit(commit)
        self._committed.remember(history)
        self._store = (store, store.revision)

    def load(self) -> Loaded | None:
        """What the backend holds, every message and the state checked; None when it is new."""
        backend = self.backend
        snapshot = backend.load()
        if snapshot is None:
            return None
        history = snapshot.history
        where = backend.name
        try:
            for index, message in enumerate(history):
                check_session_message(message, f"{HISTORY_FILE}[{index}]")
            check_first(history, HISTORY_FILE)
        except MalformedMessageError as error:
            raise TaskFolderError(f"{where}: {error}") from None
        self._version = snapshot.version
        store = None
        if snapshot.store_json is not None:
            try:
                store = OverwriteStore.from_json(snapshot.store_json)
            except CorruptStoreError as error:
                raise TaskFolderError(f"{where}: the stored overwrite store: {error}") from None
        state = None
        if snapshot.state is not None:
            state = state_from_json(snapshot.state, f"{where} (session state)", len(history))
        return Loaded(history, store, state)

    def loaded(self, history: list[Message], store: OverwriteStore | None) -> None:
        """Remember ``history`` and ``store`` as what the backend holds (after :meth:`load`)."""
        self._committed.remember(history)
        self._store = None if store is None else (store, store.revision)

    def close(self) -> None:
        """Release the backend (a database connection)."""
        self.backend.close()
