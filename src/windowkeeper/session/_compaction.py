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

from collections.abc import Callable, Sequence
from dataclasses import replace

from ..core._messages import Message
from ..core._truncation import visible_start
from ._state import Fold, SessionState
from ._summary import continuation, summary_instruction, with_instruction
from .steps import REFOLD, Action, SummarizeTurns, fold_point

__all__ = ["SUMMARY_REPLY_KINDS", "Compaction", "summary_text"]

SUMMARY_REPLY_KINDS = frozenset({"text", "thinking", "redacted_thinking"})
_POOR_SHARE = 0.1  # a fold that frees less than this share of the request frees little
_POOR_FOLDS = 2  # this many such folds in a row pause asking for summaries


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

    __slots__ = ("in_band_at", "step")

    def __init__(self, step: SummarizeTurns, *, in_band_at: float = 0.85) -> None:
        self.step = step
        self.in_band_at = in_band_at

    @property
    def in_band(self) -> bool:
        """Whether summaries are asked for on the request itself."""
        return self.step.in_band

    def configure(self, limit: float) -> None:
        """Size the verbatim tail for a window of ``limit`` (a quarter of it, at most 8,000)."""
        wanted = self.step.keep_recent_tokens
        self.step.keep = wanted if wanted is not None else min(8_000, int(limit) // 4)

    def may_summarize(self, state: SessionState) -> bool:
        """Whether a new summary may be asked for in the request being prepared.

        Not on the request right after a fold (its continuation is the newest summary), and not
        after folds that freed little in a row.
        """
        compaction = state.compaction
        return compaction.poor_folds < _POOR_FOLDS and compaction.folded_at != state.requests - 1

    def counted(self, state: SessionState, actions: Sequence[Action]) -> SessionState:
        """``state`` with the folds among ``actions`` counted (and those that freed little)."""
        compaction = state.compaction
        for action in actions:
            if action.step != SummarizeTurns.name:
                continue
            before, after = action.tokens_before or 0, action.tokens_after or 0
            poor = before - after < before * _POOR_SHARE
            compaction = replace(
                compaction,
                folds=compaction.folds + 1,
                folded_at=state.requests,
                poor_folds=compaction.poor_folds + poor,
            )
        return replace(state, compaction=compaction)

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
        return state.with_compaction(fold=Fold(hidden[1], continuation(summary, ledger), summary))

    def refold_action(self, state: SessionState) -> Action:
        """The action reported when :meth:`cover_hidden` changed the continuation."""
        return Action(REFOLD, deleted_range=state.deleted_range)

    # -- in-band ---------------------------------------------------------------------------

    def ask(
        self,
        state: SessionState,
        *,
        view: list[Message],
        messages: list[Message],
        history_length: int,
        estimate: Callable[[list[Message]], int],
        limit: float,
    ) -> tuple[SessionState, list[Message], int] | None:
        """The request with the summary instruction on its last user message, if it fits.

        Everything before the instruction is the request as it would be sent, so the provider
        reads it from its cache; the fold point is decided now and kept with the request.
        """
        compaction = state.compaction
        if compaction.pending is not None:  # asked before, no reply yet (a resumed loop)
            point = compaction.pending[0]
        else:
            found = fold_point(view, visible_start(state.deleted_range), self.step.keep)
            if found is None:
                return None
            point = found
        fold = compaction.fold
        asked = with_instruction(messages, summary_instruction(fold.text if fold else None))
        size = estimate(asked)
        if size > limit:
            return None
        return state.with_compaction(pending=(point, history_length)), asked, size

    def adopt(
        self, state: SessionState, history: Sequence[Message]
    ) -> tuple[SessionState, Action | None]:
        """After an in-band request: fold with the reply the caller appended, if it is a summary.

        The reply must be an assistant message of text only; it is then the summary, and is
        never sent again. Anything else (a tool call, the user speaking first) drops the ask.
        """
        compaction = state.compaction
        if compaction.pending is None:
            return state, None
        point, length = compaction.pending
        if len(history) <= length:
            return state, None  # nothing appended yet: the ask stands
        state = state.with_compaction(pending=None)
        text = summary_text(history[length])
        current = state.deleted_range
        if text is None or (current is not None and current[1] >= point - 1):
            return state, None
        start = visible_start(current)
        ledger = self.step.ledgers.ledger(history, point)
        state = state.hiding((2, point - 1))
        compaction = state.compaction
        state = replace(
            state,
            compaction=replace(
                compaction,
                fold=Fold(point - 1, continuation(text, ledger), text),
                excluded=(*compaction.excluded, length),
                folds=compaction.folds + 1,
                folded_at=state.requests,
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
        return summary_text(history[pending[1]]) is not None
