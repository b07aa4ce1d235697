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
            if draft.estimate > limit and draft.state.compaction.fold is not None:
                shrunk += self._without_continuation(draft)
            draft.state, paused = compaction.counted(draft.state, shrunk, len(history))
            if paused is not None:
                shrunk.append(paused)
        return draft, shrunk

    def _without_continuation(self, draft: Draft) -> list[Action]:
        """The fold's text gives way altogether when even its shortest form leaves the request
        over the limit: the folded turns stay hidden (the newest turn's results whose call was
        folded still go, as text), no continuation is sent, message 1 gets the original's
        truncation notice, and the steps shrink the request on without a new fold, rather than
        let it be refused. The fold keeps its summary, and the next fold writes its ledger from
        the history again, so nothing is lost for good."""
        fold = draft.state.compaction.fold
        assert fold is not None  # the caller checked
        draft.state = draft.state.with_compaction(fold=replace(fold, text=""))
        draft.add_truncation_notice()  # message 1 says what was hidden, as without compaction
        draft.may_fold = False
        draft.refresh()
        dropped = Action(
            "continuation-dropped",
            deleted_range=draft.state.deleted_range,
            reason="even the shortest summary and ledger leave the request over the window:"
            " it is sent without them, as without compaction",
        )
        # the steps shrink on as without compaction: a fold now would bring a text back
        plain = [step for step in self.steps if step.name != "summarize"]
        return [dropped, *run_steps(plain, draft)]
