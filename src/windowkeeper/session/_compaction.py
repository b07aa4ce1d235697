"""Compaction as one object: when to fold, the in-band ask and its reply, the fold's counters.

A session with compaction on holds one :class:`Compaction` around its
:class:`~windowkeeper.session.steps.SummarizeTurns` step. The step folds when a request must
shrink; this object decides whether it may ask for a new summary, asks in-band (on the
request itself, so the provider reads the cached prefix) when a request nears the limit, folds
the model's reply in on the next request, keeps every hidden turn in the ledger and counts the
folds so compaction does not thrash. It keeps no state of its own beyond memos: every decision
is in the :class:`~windowkeeper.session._state.CompactionState` it is given and returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from ..core._messages import Message, SystemPrompt
from ..core._truncation import visible_start
from ..core._window import ContextWindowInfo
from ._state import Fold, SessionState
from ._summary import continuation, summary_instruction, with_instruction
from .steps import REFOLD, Action, SummarizeTurns, fold_point
from .steps._summarize import ledger_end, usable_summary

__all__ = ["SUMMARY_REPLY_KINDS", "Compaction", "summary_text"]


class _Sent(Protocol):
    """A request as the session sent it."""

    @property
    def messages(self) -> Sequence[Message]: ...
    @property
    def system(self) -> SystemPrompt | None: ...
    @property
    def tools(self) -> Sequence[Mapping[str, Any]] | None: ...


SUMMARY_REPLY_KINDS = frozenset({"text", "thinking", "redacted_thinking"})
_POOR_SHARE = 0.1  # a fold that frees less than this share of the request frees little
_POOR_FOLDS = 2  # this many such folds in a row pause asking for summaries
_DECLINED = 2  # this many in-band asks answered otherwise in a row: no more asks until a fold
_BUDGET_SHARE = (
    0.15  # of the room, the most a continuation may take (in tokens; chosen as _KEEP_SHARE)
)
# Of the room, the verbatim tail a fold keeps by default (in tokens), beyond the newest turn
# that every fold keeps whole: none. The continuation (summary and ledger) carries the state of
# work, so a fold frees all it can and is needed as rarely as possible (bench/_tuning.py chose
# it on part of the corpus and reported it on the rest).
_KEEP_SHARE = 0.0
_MIN_ROOM_SHARE = 0.1  # the room is taken as at least this share of the limit
# Of the margin the limit leaves below the window, the share an in-band ask may use: a request
# that jumped past the limit is still asked for a summary (as the original's auto-condense
# asks on the request over its limit) when the ask stays this far into the margin; the rest
# is left for the summary it is answered with and for the estimate's error.
_ASK_MARGIN_SHARE = 0.5
# Whether an in-band fold with no verbatim tail asked for takes the turn the ask was made on as
# well: the model wrote its summary with that turn in view, so the continuation after messages
# 0-1 is all the next request needs (a pre-flight fold keeps the newest turn, which its
# summary never saw).
_FOLD_ASKED_TURN = True
_MIN_BUDGET_CHARS = 1_200


def _resumes_at(paused_at: int) -> int:
    """The history length at which summarizing resumes after pausing at ``paused_at``: a fifth
    more messages (at least 8), enough new turns for a fold to free something again."""
    return paused_at + max(8, paused_at // 5)


def _fold_ledger_end(history: Sequence[Message], point: int) -> int:
    """Where the ledger of the fold cut at ``point`` ended when it was made: after the user turn
    at ``point`` when the fold took the answer that turn replies to (:func:`ledger_end`), so a
    shortened continuation does not list the calls that turn answers as still waiting."""
    turn_end = point
    while turn_end < len(history) and history[turn_end].get("role") == "user":
        turn_end += 1
    return ledger_end(history, point, turn_end) if point < len(history) else point


def _empty_reply(reply: Message) -> bool:
    """An assistant reply with nothing in it: no text, no tool call."""
    if reply.get("role") != "assistant":
        return False
    content = reply.get("content")
    if isinstance(content, str):
        return not content.strip()
    if not isinstance(content, list):
        return content is None
    return all(
        isinstance(block, dict)
        and block.get("type") in SUMMARY_REPLY_KINDS
        and not (block.get("type") == "text" and str(block.get("text", "")).strip())
        for block in content
    )


def summary_text(reply: Message) -> str | None:
    """The summary an in-band reply holds: an assistant message of text (and thinking) only."""
    content = reply.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if reply.get("role") != "assistant" or not isinstance(blocks, list):
        return None
    kinds = {block.get("type") if isinstance(block, dict) else None for block in blocks}
    if kinds - SUMMARY_REPLY_KINDS:
        return None
    text = "\n".join(
        block["text"]
        for block in blocks
        if block.get("type") == "text" and isinstance(block.get("text"), str)
    ).strip()
    return text or None


class Compaction:
    """The compaction policy of one session (see the module docstring).

    ``in_band_at`` is the share of the limit past which an in-band session asks for a summary
    on the request itself (ignored by out-of-band and ledger-only steps).
    """

    __slots__ = ("_head", "_head_key", "in_band_at", "step")

    def __init__(self, step: SummarizeTurns, *, in_band_at: float = 0.8) -> None:
        self.step = step
        self.in_band_at = in_band_at
        self._head = 0  # memo: the tokens of the request's fixed head (see configure)
        self._head_key: object = None

    @property
    def in_band(self) -> bool:
        """Whether summaries are asked for on the request itself."""
        return self.step.in_band

    def configure(
        self, limit: float, head: Callable[[], int] | None = None, key: object = None
    ) -> None:
        """Size for a window of ``limit``: the verbatim tail (:data:`_KEEP_SHARE` of the room,
        at most 8,000 tokens) and the continuation's budget (:data:`_BUDGET_SHARE` of the room,
        in characters at a conservative three a token).

        The room is what the limit leaves beside the request's fixed head: the system prompt,
        the tools, the output reserve and messages 0-1, which every request sends (``head``
        measures it, remembered while ``key`` is unchanged). The tail and the continuation
        compete with the conversation for that room only: sized on the whole limit, they take
        all of it when the head is large, and every request after a fold must shrink again.
        """
        if head is not None and key != self._head_key:
            self._head, self._head_key = head(), key
        room = max(limit - self._head, limit * _MIN_ROOM_SHARE)
        wanted = self.step.keep_recent_tokens
        self.step.keep = wanted if wanted is not None else min(8_000, int(room * _KEEP_SHARE))
        self.step.budget_chars = max(_MIN_BUDGET_CHARS, int(room * _BUDGET_SHARE * 3))

    def offer_previous(self, last: _Sent | None) -> None:
        """The request the session sent last (its messages, system prompt and tools; None:
        none yet), for an out-of-band summarizer's call to share its cached prefix
        (:attr:`~windowkeeper.session._summary.SummaryRequest.prefix`)."""
        self.step.previous = (
            None
            if last is None
            else (
                tuple(last.messages),
                last.system,
                tuple(last.tools) if last.tools is not None else None,
            )
        )

    def tightened(
        self, state: SessionState, history: Sequence[Message], excess: int
    ) -> SessionState | None:
        """``state`` with the fold's text cut by about ``excess`` tokens more, or None when it
        cannot go shorter: the last remedy before a request with compaction on is refused."""
        fold = state.compaction.fold
        if fold is None or len(fold.text) <= _MIN_BUDGET_CHARS // 4:
            return None
        budget = max(_MIN_BUDGET_CHARS // 4, len(fold.text) - excess * 4)
        ledger = self.step.ledgers.ledger(history, _fold_ledger_end(history, fold.end + 1))
        text = continuation(fold.summary, ledger, max_chars=budget)
        if len(text) >= len(fold.text):
            return None
        self.step.budget_chars = budget  # later folds of this request stay as short
        return state.with_compaction(fold=replace(fold, text=text))

    def resumed(
        self, state: SessionState, history_length: int
    ) -> tuple[SessionState, Action | None]:
        """After a pause, summarizing resumes once the history has grown enough (an action)."""
        paused_at = state.compaction.paused_at
        if paused_at is None or history_length < _resumes_at(paused_at):
            return state, None
        resumed = state.with_compaction(paused_at=None, poor_folds=0)
        return resumed, Action(
            "summarize-resumed",
            reason=f"the history grew from {paused_at} to {history_length} messages since"
            " summarizing paused",
        )

    def may_summarize(self, state: SessionState) -> bool:
        """Whether a new summary may be asked for in the request being prepared.

        Not on the request right after a fold (its continuation is the newest summary), and not
        after folds that freed little in a row.
        """
        compaction = state.compaction
        if compaction.paused_at is not None:
            return False
        return compaction.folded_at is None or state.requests - compaction.folded_at > 1

    def counted(
        self, state: SessionState, actions: Sequence[Action], history_length: int
    ) -> tuple[SessionState, Action | None]:
        """``state`` with the folds among ``actions`` counted; a pause when they freed little.

        Two folds in a row that freed less than a tenth of the request pause summarizing (an
        action says so) until :meth:`resumed`; hiding turns does the rest meanwhile. A refold
        (a new continuation with the last summary) counts as a fold for :meth:`may_summarize`
        only: the request after it does not ask either.
        """
        compaction = state.compaction
        for action in actions:
            if action.step == REFOLD:  # a new continuation too: the next request may not ask
                compaction = replace(compaction, folded_at=state.requests)
                continue
            if action.step != SummarizeTurns.name:
                continue
            before, after = action.tokens_before or 0, action.tokens_after or 0
            poor = before - after < before * _POOR_SHARE
            compaction = replace(
                compaction,
                folds=compaction.folds + 1,
                folded_at=state.requests,
                poor_folds=compaction.poor_folds + 1 if poor else 0,
                declined=0,
            )
        paused = None
        if compaction.poor_folds >= _POOR_FOLDS and compaction.paused_at is None:
            compaction = replace(compaction, paused_at=history_length)
            paused = Action(
                "summarize-paused",
                reason=f"{compaction.poor_folds} folds in a row freed less than"
                f" {_POOR_SHARE:.0%} of the request: no new summary until the history has"
                f" {_resumes_at(history_length)} messages",
            )
        return replace(state, compaction=compaction), paused

    def cover_hidden(self, state: SessionState, history: Sequence[Message]) -> SessionState | None:
        """``state`` with a continuation that covers every hidden turn, or None if it does.

        Turns hidden past the last fold (hiding went further than folding could) get into its
        ledger, with the same summary; turns hidden with no fold yet get a ledger-only one. So
        what is hidden is always in the ledger: the task, instructions, files, commands.
        """
        hidden = state.deleted_range
        if hidden is None:
            return None
        fold = state.compaction.fold
        if fold is not None and fold.end >= hidden[1]:
            return None
        summary = fold.summary if fold is not None else None
        ledger = self.step.ledgers.ledger(history, hidden[1] + 1)
        return state.with_compaction(fold=Fold(hidden[1], self.step.text(summary, ledger), summary))

    def refold_action(self, state: SessionState) -> Action:
        """The action reported when :meth:`cover_hidden` changed the continuation."""
        return Action(REFOLD, deleted_range=state.deleted_range)

    # -- in-band ---------------------------------------------------------------------------

    @staticmethod
    def ask_ceiling(window: ContextWindowInfo) -> float:
        """The largest in-band ask: the limit and :data:`_ASK_MARGIN_SHARE` of the margin
        between it and the window (the rest of the margin is left for the summary it is
        answered with and for the estimate's error)."""
        limit = window.max_allowed_size
        return limit + max(window.context_window - limit, 0) * _ASK_MARGIN_SHARE

    def ask(
        self,
        state: SessionState,
        *,
        view: list[Message],
        messages: list[Message],
        history_length: int,
        estimate: Callable[[list[Message]], int],
        ceiling: float,
    ) -> tuple[SessionState, list[Message], int] | None:
        """The request with the summary instruction on its last user message, if it is no
        larger than ``ceiling`` (:meth:`ask_ceiling`).

        Everything before the instruction is the request as it would be sent, so the provider
        reads it from its cache; the fold point is decided now and kept with the request.
        """
        compaction = state.compaction
        if compaction.declined >= _DECLINED:
            return None  # the model would not summarize: the pre-flight folds with the ledger
        if compaction.pending is not None:  # asked before, no reply yet (a resumed loop)
            point = compaction.pending[0]
        else:
            found = fold_point(view, visible_start(state.deleted_range), self.step.keep)
            if found is None:
                return None
            point = found
        fold = compaction.fold
        start = max(visible_start(state.deleted_range), 2)
        if fold is not None and not self.step.worth_summary(view[start:point], fold.summary):
            return None  # too little new to pay for a summary: the pre-flight refolds later
        asked = with_instruction(messages, summary_instruction(fold.continuation if fold else None))
        size = estimate(asked)
        if size > ceiling:
            return None
        return state.with_compaction(pending=(point, history_length)), asked, size

    def adopt(
        self, state: SessionState, history: Sequence[Message]
    ) -> tuple[SessionState, Action | None]:
        """After an in-band request: fold with the reply the caller appended, if it is a summary.

        The reply must be an assistant message of text only; it is then the summary, and is
        never sent again. With no verbatim tail asked for, the fold takes the turn the ask was
        made on too (see :data:`_FOLD_ASKED_TURN`): the next request is messages 0-1 and the
        continuation. An empty reply is never sent either. Anything else (a tool call, the
        user speaking first) is the model's normal turn: the ask is dropped and counted as
        declined, and after two in a row no more are made until the next fold.
        """
        compaction = state.compaction
        if compaction.pending is None:
            return state, None
        point, length = compaction.pending
        if len(history) <= length:
            return state, None  # nothing appended yet: the ask stands
        state = state.with_compaction(pending=None)
        reply = history[length]
        text = usable_summary(summary_text(reply))
        current = state.deleted_range
        if text is None:
            empty = _empty_reply(reply)
            declined = compaction.declined + 1
            state = state.with_compaction(
                declined=declined,
                excluded=(*compaction.excluded, length) if empty else compaction.excluded,
            )
            what = "an empty reply" if empty else "a reply that is not a summary"
            more = (
                " no more asks until the next fold"
                if declined >= _DECLINED
                else " asked again later"
            )
            return state, Action("summary-declined", reason=f"{what} to the in-band ask:{more}")
        if _FOLD_ASKED_TURN and self.step.keep <= 0:
            point = length
        if current is not None and current[1] >= point - 1:
            return state, None
        start = visible_start(current)
        ledger = self.step.ledgers.ledger(history, ledger_end(history, point, length))
        state = state.hiding((2, point - 1))
        compaction = state.compaction
        state = replace(
            state,
            compaction=replace(
                compaction,
                fold=Fold(point - 1, self.step.text(text, ledger), text),
                excluded=(*compaction.excluded, length),
                folds=compaction.folds + 1,
                folded_at=state.requests,
                declined=0,
            ),
        )
        action = Action(
            "summarize-in-band",
            messages=tuple(range(max(start, 2), point)),
            deleted_range=(2, point - 1),
        )
        return state, action

    def summarizing(self, state: SessionState, history: Sequence[Message]) -> bool:
        """Whether the history ends with an in-band ask's turn or the summary replying to it."""
        compaction = state.compaction
        pending = compaction.pending
        if pending is None:
            # folded already, but the summary is still the newest message: no answer yet
            excluded = compaction.excluded
            return bool(excluded) and excluded[-1] == len(history) - 1
        if len(history) == pending[1]:
            return True
        if len(history) != pending[1] + 1:
            return False
        reply = history[pending[1]]
        return summary_text(reply) is not None or _empty_reply(reply)
