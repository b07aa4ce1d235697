"""The request's remedies: clips on arrival, then the shrink steps when it is over the limit.

:class:`Shrinker` runs them for one session: the newest results too large for their share are
clipped as they arrive (that changes nothing already sent), and a request over the limit is
shrunk by the steps over a :class:`~windowkeeper.session.steps.Draft`, with compaction's own
part (every hidden turn in the ledger, a continuation that gives way before anything raises,
the fold counters) after them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .._record import field, record, replace
from ..cline._manager import ContextManager
from ..core._messages import Message
from ._masking import MaskScan
from ._request import RequestBuilder, arrival_clips
from ._state import SessionState
from .steps import Action, Draft, Step, run_steps

if TYPE_CHECKING:
    from ._compaction import Compaction

__all__ = ["Shrinker"]


@record(slots=True)
class Shrinker:
    """What a session shrinks with: its steps, compaction, request pipeline and manager."""

    steps: list[Step]
    compaction: Compaction | None
    requests: RequestBuilder
    manager: ContextManager
    shrink_target: float
    max_result_share: float | None
    masks: MaskScan = field(default_factory=MaskScan)  # what masking found in each message

    def arrive(
        self, history: Sequence[Message], state: SessionState, limit: float
    ) -> tuple[SessionState, list[Message], Action | None]:
        """The view, with results of the newest turn too large for their share clipped first."""
        view = self.requests.view(history, state)
        share_of_limit = self.max_result_share
        if share_of_limit is None:
            return state, view, None
        # sizes in characters at a conservative 3 characters a token
        budget = int(limit * share_of_limit * 3)
        arrivals = arrival_clips(history, view, state, budget)
        if not arrivals:
            return state, view, None
        state = replace(state, clips=(*state.clips, *arrivals))
        action = Action(
            "clip-on-arrival",
            tuple(sorted({c.message_index for c in arrivals})),
            clips=tuple(arrivals),
        )
        return state, self.requests.view(history, state), action

    def shrink(
        self,
        history: list[Message],
        state: SessionState,
        view: list[Message],
        messages: list[Message],
        estimate: int,
        *,
        now: int,
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        reserve: int,
        limit: float,
    ) -> tuple[Draft, list[Action]]:
        """Run the steps over a draft of the request: the draft at the end, and what they did."""
        requests = self.requests
        compaction = self.compaction

        def measure(view: list[Message], state: SessionState) -> tuple[list[Message], int]:
            rendered = requests.render(view, state)
            return rendered, requests.estimate(rendered, system, tools, reserve)

        def replace_reads(view: list[Message], start: int, now: int) -> set[int]:
            return self.manager.apply_context_optimizations(view, start, now)[1]

        draft = Draft(
            history=history,
            state=state,
            store=self.manager.store,
            view_of=lambda state: requests.view(history, state),
            measure=measure,
            replace_reads=replace_reads,
            view=view,
            messages=messages,
            estimate=estimate,
            now=now,
            limit=limit,
            target=limit * self.shrink_target,
            may_fold=compaction is not None and compaction.may_summarize(state),
            masks=self.masks,
        )
        shrunk = run_steps(self.steps, draft)
        if compaction is not None:
            covered = compaction.cover_hidden(draft.state, history)
            if covered is not None:  # the continuation now covers every hidden turn
                draft.state = covered
                draft.refresh()
                shrunk.append(compaction.refold_action(covered))
                if draft.estimate > limit:
                    shrunk += run_steps(self.steps, draft)
                    covered = compaction.cover_hidden(draft.state, history)
                    if covered is not None:
                        draft.state = covered
                    draft.refresh()
            for _round in range(4):  # a fold that always fits: its text gives way first
                if draft.estimate <= limit:
                    break
                tightened = compaction.tightened(draft.state, history, draft.estimate - int(limit))
                if tightened is None:
                    break
                draft.state = tightened
                draft.refresh()
                shrunk.append(
                    Action(
                        "continuation-clipped",
                        deleted_range=draft.state.deleted_range,
                        reason="the summary and ledger were cut to fit the window",
                    )
                )
            draft.state, paused = compaction.counted(draft.state, shrunk, len(history))
            if paused is not None:
                shrunk.append(paused)
        return draft, shrunk
