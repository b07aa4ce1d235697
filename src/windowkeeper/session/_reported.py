"""The view: the original's decision from the usage the provider reported for the last request.

Before the pre-flight looks at a request, the session makes the decision Cline's context manager
makes (replace duplicate reads, truncate) from the usage reported for the request before, unless
that usage is stale (the range grew since that request was prepared).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cline._manager import ContextManager
from ..core._messages import Message
from ..core._window import ContextWindowInfo
from ._state import SessionState
from .steps import Action

__all__ = ["Decision", "decide_from_usage"]


class Decision:
    """The state after the decision, the messages it leaves, and what it did.

    ``replaced`` are the history indices whose duplicate reads were replaced; ``stale`` says the
    reported usage belonged to an older range and decided nothing. (A plain class: a dataclass
    costs the session's import a millisecond.)
    """

    __slots__ = ("actions", "messages", "range_changed", "replaced", "stale", "state")

    def __init__(
        self,
        state: SessionState,
        *,
        messages: list[Message],
        actions: tuple[Action, ...],
        replaced: frozenset[int],
        range_changed: bool,
        stale: bool,
    ) -> None:
        self.state = state
        self.messages = messages
        self.actions = actions
        self.replaced = replaced
        self.range_changed = range_changed
        self.stale = stale


def decide_from_usage(
    manager: ContextManager,
    view: Sequence[Message],
    state: SessionState,
    window: ContextWindowInfo,
    *,
    compacting: bool,
) -> Decision:
    """The original's decision over ``view``; ``compacting`` leaves truncation to the fold."""
    usage = state.usage
    stale = usage is not None and state.usage_generation != state.generation
    manager.last_replaced = frozenset()
    result = manager.get_new_context_messages_and_metadata(
        view,
        usage=None if stale else usage,
        timestamp=state.usage_timestamp,  # edits are dated by the request, as in the original
        context_window=window,
        deleted_range=state.deleted_range,
        # With compaction on, the pre-flight folds instead of the original's truncation,
        # as the original itself skips it when it auto-condenses.
        use_auto_condense=compacting,
    )
    replaced = frozenset(manager.last_replaced)
    actions: list[Action] = []
    if replaced:
        actions.append(Action("reported-usage-reads", tuple(sorted(replaced))))
    range_changed = result.updated_deleted_range
    if range_changed:
        state = state.hiding(result.deleted_range)
        actions.append(Action("reported-usage-truncation", deleted_range=result.deleted_range))
    return Decision(
        state,
        messages=result.truncated_history,
        actions=tuple(actions),
        replaced=replaced,
        range_changed=range_changed,
        stale=stale,
    )
