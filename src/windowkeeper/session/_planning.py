"""One request's decisions, before anything is committed: feed -> view -> steps.

:func:`plan_request` makes every decision a request needs from the history and the session's
state: an in-band summary reply folded in and the newest results clipped as they arrive
(feed), the original's decision from the usage reported for the previous request (view), the
pre-flight's shrink steps or its refusal, and an in-band summary asked for (steps). The session
then commits the new state and shapes the messages for the wire.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..cline._manager import ContextManager
from ..core._messages import Message
from ..core._window import ContextWindowInfo
from ._preflight import check_fits
from ._reported import decide_from_usage
from ._request import RequestBuilder
from ._request_log import RequestLog
from ._shrinking import Shrinker
from ._state import SessionState

if TYPE_CHECKING:
    from ._compaction import Compaction
    from ._usage_record import LastRequest

__all__ = ["Plan", "plan_request"]


class Plan:
    """What a request sends and the state it leaves, before the commit.

    ``acted`` says the pre-flight shrank the request, ``requested`` that it asks for an in-band
    summary, ``stale`` that the reported usage belonged to an older range. (A plain class, as
    :class:`~windowkeeper.session._reported.Decision`.)
    """

    __slots__ = ("acted", "estimate", "messages", "requested", "stale", "state")

    def __init__(
        self,
        state: SessionState,
        messages: list[Message],
        estimate: int,
        *,
        acted: bool,
        requested: bool,
        stale: bool,
    ) -> None:
        self.state = state
        self.messages = messages
        self.estimate = estimate
        self.acted = acted
        self.requested = requested
        self.stale = stale


def plan_request(
    history: list[Message],
    state: SessionState,
    log: RequestLog,
    *,
    now: int,
    system: Any,
    tools: Sequence[Mapping[str, Any]] | None,
    reserve: int,
    window: ContextWindowInfo,
    manager: ContextManager,
    requests: RequestBuilder,
    shrinker: Shrinker,
    compaction: Compaction | None,
    last: LastRequest | None = None,
) -> Plan:
    """The request of ``state`` over ``history``, made at time ``now`` (ms; the state's clock
    moves on to it at the commit); ``last`` is the request sent before it, if any; ``log`` notes what each stage did. Raises
    :class:`~windowkeeper.ContextOverflowError` when nothing fits."""
    limit = window.max_allowed_size
    # feed: an in-band summary reply is folded in, the newest results clipped on arrival
    if compaction is not None:
        compaction.configure(
            limit,
            lambda: requests.estimate(list(history[:2]), system, tools, reserve),
            (*map(id, history[:2]), id(system), id(tools), reserve),
        )
        compaction.offer_previous(last)  # what the provider may hold cached
        state, adopted = compaction.adopt(state, history)
        state, resumed = compaction.resumed(state, len(history))
        log.note(adopted, resumed)
    state, view, arrived = shrinker.arrive(history, state, limit)
    log.arrived(arrived)
    # view: the original's decision from the usage reported for the previous request
    decision = decide_from_usage(manager, view, state, window, compacting=compaction is not None)
    state = decision.state
    log.note(*decision.actions)
    log.replaced.update(decision.replaced)
    log.range_changed = decision.range_changed
    messages = requests.visible(decision.messages, state)
    estimate = requests.estimate(messages, system, tools, reserve)
    # asks: an in-band summary asked for on the request itself, past ``in_band_at`` of the
    # limit, even past the limit while the ask stays under its ceiling (then nothing shrinks:
    # the summary's fold follows on the next request)
    requested = False
    if (
        compaction is not None
        and compaction.in_band
        and estimate > limit * compaction.in_band_at
        and compaction.may_summarize(state)
    ):
        asked = compaction.ask(
            state,
            view=view,
            messages=messages,
            history_length=len(history),
            estimate=lambda request: requests.estimate(request, system, tools, reserve),
            ceiling=compaction.ask_ceiling(window),
        )
        if asked is not None:
            state, messages, estimate = asked
            requested = True
    # steps: the pre-flight shrinks a request over the limit, or refuses it
    acted = not requested and estimate > limit
    if acted:
        draft, shrunk = shrinker.shrink(
            history,
            state,
            view,
            messages,
            estimate,
            now=now,
            system=system,
            tools=tools,
            reserve=reserve,
            limit=limit,
        )
        log.shrunk(shrunk)
        check_fits(draft.estimate, reserve, window)
        state, messages, estimate = draft.state, draft.messages, draft.estimate
    return Plan(state, messages, estimate, acted=acted, requested=requested, stale=decision.stale)
