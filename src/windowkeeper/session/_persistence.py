"""A session's link to its storage backend: one commit of what changed, and the load."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._errors import ConcurrentUpdateError, MalformedMessageError, TaskFolderError
from .._record import record
from ..core._incremental import Growing, Seen
from ..core._inputs import check_session_message
from ..core._messages import Message
from ..core._overwrites import CorruptStoreError, OverwriteStore
from ._admission import check_first
from ._state import SessionState, state_from_json, state_to_json

if TYPE_CHECKING:
    from ..storage import SessionStore

__all__ = ["HISTORY_FILE", "Loaded", "Persistence"]

HISTORY_FILE = "api_conversation_history.json"


@record(frozen=True, slots=True)
class Loaded:
    """What a backend held: the history, the store (None: none yet) and the state (None: none)."""

    history: list[Message]
    store: OverwriteStore | None
    state: SessionState | None
    raw_state: dict[str, Any] | None = None  # as stored: its window and calibration too


class Persistence:
    """Commits a session to its backend, writing only what changed since the last commit.

    It remembers how much of the history is still what was committed (constant time for a
    growing history, no copy) and which store revision was written, so a steady turn commits
    the appended messages, the state, and the store only when it changed.
    """

    __slots__ = ("_committed", "_store", "_version", "backend", "refused")

    def __init__(self, backend: SessionStore) -> None:
        self.backend = backend
        self.refused: ConcurrentUpdateError | None = None  # lost a conflict: reload first
        self._version = 0  # of what the backend holds
        self._committed = Seen()
        self._store: tuple[OverwriteStore, int] | None = None  # (store, revision) written

    def commit(
        self,
        history: list[Message],
        state: SessionState,
        store: OverwriteStore,
        *,
        may_extend: bool = True,
        extras: Mapping[str, Any] | None = None,
    ) -> list[Message] | None:
        """Make ``history``, ``state`` and ``store`` durable together (one backend commit).

        When another program (Cline) only appended to the stored history, its messages are
        taken in before the ones this commit appends and the commit is tried once more: the
        history then committed is returned (None when it is ``history`` itself). After a
        :class:`ConcurrentUpdateError` every later commit raises it again, until
        :meth:`ContextSession.reload`: a session that lost a conflict never overwrites the
        other writer's commit.
        """
        if self.refused is not None:  # the stored task moved on: reload before writing again
            refused = self.refused
            raise ConcurrentUpdateError(refused.task, self._version, refused.found)
        from ..storage import Commit  # noqa: PLC0415 - loaded with the backend, not the session

        changed = self._store != (store, store.revision)
        store_json = store.to_json() if changed else None
        taken: list[Message] | None = None
        for attempt in range(2):
            keep = self._committed.prefix(history)
            value = state_to_json(state, len(history))
            state_from_json(value, "the state to commit", len(history))  # what commits, loads
            if extras:
                value = {**value, **extras}
            commit = Commit(self._version, keep, history[keep:], value, store_json)
            try:
                self._version = self.backend.commit(commit)
                break
            except ConcurrentUpdateError as error:
                extended = None
                if not attempt and error.extended and may_extend:
                    extended = self._extension(history, keep)
                if extended is None:
                    self.refused = error
                    raise
                history = taken = extended
            except BaseException:
                if attempt:  # it took in another program's messages: only a reload is sure
                    self.refused = ConcurrentUpdateError(
                        self.backend.name,
                        self._version,
                        self._version,
                        detail="the commit after taking in another program's messages failed",
                    )
                raise
        self._committed.remember(history)
        self._store = (store, store.revision)
        return taken

    def _extension(self, history: list[Message], keep: int) -> list[Message] | None:
        """The history with what another program appended to the stored one taken in, or None.

        Its messages go after what this session committed and before the ones it is appending
        now, when that is possible: a commit that appends and cuts nothing, the stored messages
        this session knew unchanged, the new ones checked. A commit of decisions alone (a
        request, a usage) was decided without them: it is refused, and a reload takes them in.
        """
        if keep != self._committed.length or len(history) <= keep:
            return None
        snapshot = self.backend.load()
        if snapshot is None or snapshot.version != self._version:
            return None
        stored = snapshot.history
        if len(stored) < keep or stored[:keep] != history[:keep]:
            return None
        try:
            for index in range(keep, len(stored)):
                check_session_message(stored[index], f"{HISTORY_FILE}[{index}]")
        except MalformedMessageError:
            return None
        extended = Growing([*history[:keep], *stored[keep:]])
        self._committed.remember(extended)
        extended.extend(history[keep:])
        return extended

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
        raw = snapshot.state if isinstance(snapshot.state, dict) else None
        return Loaded(history, store, state, raw)

    def loaded(self, history: list[Message], store: OverwriteStore | None) -> None:
        """Remember ``history`` and ``store`` as what the backend holds (after :meth:`load`)."""
        self._committed.remember(history)
        self._store = None if store is None else (store, store.revision)

    def close(self) -> None:
        """Release the backend (a database connection)."""
        self.backend.close()
