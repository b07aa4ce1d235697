"""The view: the original's decision from the usage the provider reported for the last request.

Before the pre-flight looks at a request, the session makes the decision Cline's context manager
makes (replace duplicate reads, truncate) from the usage reported for the request before, unless
that usage is stale (the range grew since that request was prepared), or the range it would
grow to hides the assistant message whose tool calls the newest turn answers. That happens on a
short rest (a quarter of three messages hides two): the newest tool results would be stripped
as orphans and the caller's newest message lost. The decision is then left to the pre-flight,
whose hiding step keeps that answer, as it keeps it on every request.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..cline._manager import ContextManager
from ..core._messages import Message, tool_calls_before
from ..core._truncation import keep_for, next_range
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo
from ._state import SessionState
from .steps import Action, newest_turn

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
    decides = usage is not None and not stale
    if decides and not compacting and _hides_newest_answer(view, state, usage, window):
        decides = False
    manager.last_replaced = frozenset()
    result = manager.get_new_context_messages_and_metadata(
        view,
        usage=usage if decides else None,
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


def _hides_newest_answer(
    view: Sequence[Message],
    state: SessionState,
    usage: TokenUsage | None,
    window: ContextWindowInfo,
) -> bool:
    """Whether the range the original would grow to from ``usage`` reaches the assistant message
    whose tool calls the newest turn's tool_results answer (the keep is the original's: a
    quarter when half the reported size still exceeds the limit)."""
    if usage is None or usage.total < window.max_allowed_size:
        return False  # the original decides nothing
    keep = keep_for(usage.total, window.max_allowed_size)
    current = state.deleted_range
    end_now = current[1] if current is not None else 1
    newest = newest_turn(view)
    answer = newest.start - 1
    if not end_now < next_range(view, current, keep)[1] >= answer:
        return False
    calls = tool_calls_before(view, newest.start)
    return any(
        isinstance(block, dict)
        and block.get("type") == "tool_result"
        and block.get("tool_use_id") in calls
        for index in newest
        for block in _content(view[index])
    )


def _content(message: Message) -> list[object]:
    content = message.get("content")
    return content if isinstance(content, list) else []
