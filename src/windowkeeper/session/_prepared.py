"""What the session hands back: a prepared request, a checkpoint, what a sync did."""

from __future__ import annotations

from .._record import record
from ..core._messages import Message
from ..core._truncation import DeletedRange
from ..core._usage import TokenUsage
from ..formats._wire import Repair
from ._clipping import Clip
from ._state import SessionState
from .steps import Action

__all__ = ["Checkpoint", "Prepared", "Synced"]


@record(frozen=True, slots=True)
class Prepared:
    """The request to send, and what the session did to build it.

    ``messages`` belong to the caller: they are fresh objects down to each block (and a
    tool_result's inner blocks), so setting ``cache_control`` on them changes nothing the
    session holds; deeper values (tool inputs, image sources) are shared and read-only.
    """

    messages: list[Message]
    deleted_range: DeletedRange | None
    range_changed: bool  # the range grew while preparing this request
    replaced_reads: int  # messages whose older file copies were replaced while preparing
    estimated_tokens: int  # messages + system + tools + reserved output, by the session's counter
    max_allowed_size: float
    preflight_acted: bool  # the estimate exceeded the limit, so the session shrank the request
    clipped: tuple[Clip, ...] = ()  # clips added while preparing (on arrival or to fit)
    ignored_stale_usage: bool = False  # usage described a context that no longer exists
    repairs: tuple[Repair, ...] = ()  # what was changed so the provider accepts the request
    # in-band compaction: the last user message asks for a summary; append the reply as usual
    summary_requested: bool = False
    actions: tuple[Action, ...] = ()  # what shrank the request, in order (see session.steps)


@record(frozen=True, slots=True)
class Checkpoint:
    """A point to roll back to: the history length, the session's state value and its store.

    ``state`` is the whole :class:`~windowkeeper.session._state.SessionState` (range, usage,
    clips, the fold and its counters); ``store_json`` the overwrite store as the original
    serializes it; ``counter_state`` the counter's ``snapshot()``, when it has one;
    ``last_request`` the request prepared last before the checkpoint (in memory only), so that
    usage reported for it after a rollback teaches the counter as it would have before.
    """

    history_length: int
    state: SessionState
    store_json: str
    timestamp: int
    counter_state: object = None
    last_request: object = None

    @property
    def deleted_range(self) -> DeletedRange | None:
        """The range hidden at the checkpoint."""
        return self.state.deleted_range

    @property
    def clips(self) -> tuple[Clip, ...]:
        """The clips in force at the checkpoint."""
        return self.state.clips

    @property
    def usage(self) -> TokenUsage | None:
        """The usage the session acted on at the checkpoint."""
        return self.state.usage


@record(frozen=True, slots=True)
class Synced:
    """What :meth:`ContextSession.sync` did: messages kept, appended and dropped."""

    kept: int
    appended: int
    dropped: int = 0  # messages past the common prefix, cut with their decisions
    restarted: bool = False  # the first message differed: the task started over
