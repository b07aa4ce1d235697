"""What a session keeps: its commits to the store, checkpoints and rollback, reload.

:class:`SessionKeeping` is the part of :class:`~windowkeeper.ContextSession` that writes and
reads its durable state (the history, the :class:`~windowkeeper.session._state.SessionState`
value and the overwrite store, together), returns to a checkpoint, and reads the task again
after a concurrent update. The attributes it works on are the session's, set by its
constructor.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Self

from .._errors import ConfigurationError
from .._record import replace
from ..cline._manager import ContextManager
from ..core._overwrites import OverwriteStore
from ..core._window import ContextWindowInfo
from ._admission import admit_checkpoint_fields
from ._format import SessionFormat
from ._history import SessionHistory
from ._learning import restore_learnt, snapshot_of
from ._prepared import Checkpoint
from ._request import RequestBuilder
from ._shrinking import Shrinker
from ._state import SessionState
from ._state_extras import load_calibration, stored_window, with_extras
from ._tokens import TokenCounter
from ._usage_record import LastRequest
from ._usage_trust import UsageTrust

if TYPE_CHECKING:
    from ._persistence import Persistence

__all__ = ["SessionKeeping"]


class SessionKeeping:
    """Commits, checkpoints, rollback and reload of a session (see the module docstring)."""

    _counter: TokenCounter
    _format: SessionFormat
    _history: SessionHistory
    _info: ContextWindowInfo
    _last: LastRequest | None
    _manager: ContextManager
    _persistence: Persistence | None
    _place_results: bool
    _requests: RequestBuilder
    _shrinker: Shrinker
    _state: SessionState
    _stored_window: ContextWindowInfo | None
    _ticked: Callable[[SessionState], SessionState]
    _usage_trust: UsageTrust

    # -- checkpoints -----------------------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        """Remember this point; :meth:`rollback` returns to it."""
        self._state = self._ticked(self._state)
        return Checkpoint(
            history_length=len(self._history),
            state=self._state,
            store_json=self._manager.context_history_json(),
            timestamp=self._state.last_timestamp,
            counter_state=snapshot_of(self._counter),
            last_request=self._last,
        )

    def rollback(self, checkpoint: Checkpoint) -> None:
        """Return to ``checkpoint``: later messages, range growth, edits, clips and usage undone.

        The store is restored from the checkpoint's copy rather than rolled back by timestamp:
        edits decided from an earlier request's usage carry that request's (earlier) time. What
        the counter learnt since is forgotten too (when it can ``restore``), so that the same
        calls after a rollback give the same requests.
        """
        admit_checkpoint_fields(checkpoint, len(self._history))
        state = replace(checkpoint.state, last_timestamp=self._state.last_timestamp)
        store = OverwriteStore.from_json(checkpoint.store_json)
        undo = self._history.roll_back(checkpoint.history_length)
        learnt = snapshot_of(self._counter, restorable=True)
        if learnt is not None and checkpoint.counter_state is not None:
            restore_learnt(self._counter, checkpoint.counter_state)  # before the commit keeps it
        try:
            self._commit(state, store)
        except BaseException:
            restore_learnt(self._counter, learnt)
            undo()
            raise
        self._went_back(state, store)
        last = checkpoint.last_request
        if isinstance(last, LastRequest):
            # the request prepared before the checkpoint is again the last one: its usage, when
            # reported after the rollback, is learnt from as it would have been before
            self._last = last

    def _went_back(self, state: SessionState, store: OverwriteStore) -> None:
        """After a committed cut or rollback: ``state`` and ``store`` in force, what the session
        remembered of later requests forgotten."""
        self._requests.forget()
        self._state = state
        self._last = None
        self._usage_trust.forget()
        self._manager.store = store

    # -- persistence -----------------------------------------------------------------------

    def close(self) -> None:
        """Release the storage backend (a database connection); the session stays readable."""
        if self._persistence is not None:
            self._persistence.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _commit(self, state: SessionState, store: OverwriteStore | None = None) -> None:
        """Make the history, ``state`` and the store (``store`` or the manager's) durable together."""
        if self._persistence is None:
            return
        taken = self._persistence.commit(
            self._history.messages,
            state,
            store if store is not None else self._manager.store,
            may_extend=not self._history.openai,
            extras=with_extras({}, self._counter, self._info),
        )
        if taken is not None:  # another program appended: its messages are in the history now
            self._history.messages = taken

    def _request_builder(self) -> RequestBuilder:
        """A fresh request pipeline over the session's manager and counter."""
        return RequestBuilder(
            self._manager,
            self._counter,
            place_results=self._place_results,
            opening=self._format.name == "anthropic",  # the Messages API takes a user turn first
        )

    def reload(self) -> None:
        """Read the task again from the store, dropping everything this session holds in memory.

        The way on after :class:`~windowkeeper.ConcurrentUpdateError`: until then every call
        that writes raises it again. Retry the step on the stored state: ``reload()``, apply
        the change again (append the message, prepare, record the usage), commit by that call.
        """
        persistence = self._persistence
        if persistence is None:
            raise ConfigurationError("reload() needs a session with task_dir or store")
        self._history.clear()
        self._state = SessionState()
        self._last = None
        self._manager.store = OverwriteStore()
        self._requests = self._request_builder()
        self._shrinker.requests = self._requests
        self._usage_trust.forget()
        from ._persistence import Persistence  # noqa: PLC0415 - a stored session's

        self._persistence = Persistence(persistence.backend)
        self._load(self._persistence)

    def _load(self, persistence: Persistence) -> None:
        loaded = persistence.load()
        self._manager.last_load = getattr(persistence.backend, "last_load", None)
        if loaded is None:
            return
        self._history.load(loaded.history)
        if loaded.store is not None:
            self._manager.store = loaded.store
        persistence.loaded(self._history.messages, loaded.store)
        if loaded.state is not None:
            self._state = loaded.state
            where = f"{persistence.backend.name} (session state)"
            load_calibration(self._counter, loaded.raw_state, where)
            self._stored_window = stored_window(loaded.raw_state)
