"""Compaction by summary: older turns are folded into one continuation text after messages 0-1.

Where hiding turns loses them for the model, folding replaces them with a summary (written by a
``summarizer``, e.g. a cheaper model) followed by the ledger, the state of work computed from
the history without a model. With no summarizer, or when it fails or answers nothing, the
ledger alone is the continuation: never worse than truncation. The full history is never
rewritten: the fold is the deleted range plus the continuation text, both persisted.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..._errors import ConfigurationError
from ..._record import replace
from ...core._incremental import Seen
from ...core._messages import Message, SystemPrompt
from ...core._truncation import Keep, keep_for, next_range, visible_start
from ...core._usage import TokenUsage
from .._clipping import MIN_KEPT_CHARS, Clip, clippable_blocks
from .._ledger import Ledger, LedgerBuilder
from .._state import Fold
from .._summary import (
    AsyncSummarizer,
    Summarizer,
    SummaryRequest,
    continuation,
    shortest_continuation,
    summary_instruction,
)
from ._protocol import Action, Draft, newest_turn
from ._signal import SummaryNeeded

__all__ = [
    "REFOLD",
    "SummarizeTurns",
    "SummaryNeeded",
    "call_with_timeout",
    "failure_reason",
    "fold_point",
    "is_async_summarizer",
    "ledger_end",
    "usable_summary",
]

_Previous = tuple[tuple[Message, ...], SystemPrompt | None, tuple[Mapping[str, Any], ...] | None]
REFOLD = "refold"  # the step of a fold that asked for no new summary
SUMMARY_WORTH = 8.0
"""A new summary is asked for only when the turns it adds hold this many times the last
summary's size (see :meth:`SummarizeTurns.worth_summary`; chosen by ``bench/_tuning.py`` on part
of the corpus and reported on the rest)."""


def is_async_summarizer(summarizer: object) -> bool:
    """Whether calling ``summarizer`` gives an awaitable (an ``async def`` function or method)."""
    call = getattr(summarizer, "__call__", None)  # noqa: B004 - a callable object's own method
    return inspect.iscoroutinefunction(summarizer) or inspect.iscoroutinefunction(call)


_THINKING = frozenset({"thinking", "redacted_thinking"})


def _size(message: Message) -> int:
    """A message's size in tokens, roughly (four characters of JSON a token): to place the cut."""
    return len(json.dumps(message, ensure_ascii=False, default=str)) // 4 + 1


def _opens_cleanly(view: Sequence[Message], index: int) -> bool:
    """Whether a request may continue at assistant message ``index`` after a user text.

    Not in the middle of a thinking tool loop: an assistant message with thinking that follows
    a user message of tool results would lose the thinking turn it continues.
    """
    message = view[index]
    if message.get("role") != "assistant":
        return False
    content = message.get("content")
    thinks = isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") in _THINKING for block in content
    )
    if not thinks:
        return True
    before = view[index - 1].get("content")
    return not (
        isinstance(before, list)
        and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in before)
    )


def fold_point(view: Sequence[Message], start: int, keep_recent_tokens: int) -> int | None:
    """The message the verbatim tail starts at, or None when nothing can be folded.

    The tail keeps the latest user turn whole. With ``keep_recent_tokens`` 0 that turn is the
    whole tail: the answer it replies to is folded too (the summary and the ledger say what it
    did), and tool results whose call is folded are sent as text. That answer is often the
    largest message of a request (a file body written, a long plan) and, kept, it would be
    written to the cache again after every fold and read on every request until the next one.
    Otherwise the tail also keeps that answer and at least ``keep_recent_tokens`` of the most
    recent messages; the cut is then before an assistant message, so no tool_use is parted
    from its results (they are in the message after it), and not inside a thinking tool loop
    where a cut outside one exists. When every assistant message continues such a loop (a
    model that thinks on every turn), the cut is made inside one: the assistant message it
    opens at keeps its own thinking blocks, which is what the API asks of the last turn of a
    loop. At least one message past ``start`` must be folded.
    """
    newest = newest_turn(view).start
    if keep_recent_tokens <= 0 and newest < len(view) and newest - 1 >= max(start, 2):
        return newest
    clean = _fold_point(view, start, keep_recent_tokens, inside_loops=False)
    return (
        clean
        if clean is not None
        else _fold_point(view, start, keep_recent_tokens, inside_loops=True)
    )


def ledger_end(view: Sequence[Message], point: int, turn_end: int) -> int:
    """Where the ledger of a fold at ``point`` ends: at the cut, or, when the fold took the
    answer the newest turn replies to (the tail opens with that user turn, ending at
    ``turn_end``), after that turn, so the calls whose results it carries are not listed as
    still waiting."""
    return turn_end if view[point].get("role") == "user" else point


def _fold_point(
    view: Sequence[Message], start: int, keep_recent_tokens: int, *, inside_loops: bool
) -> int | None:
    ceiling = newest_turn(view).start - 1  # the answer the newest turn replies to
    tail = sum(_size(view[index]) for index in range(ceiling, len(view)))
    for index in range(ceiling, max(start, 2), -1):
        if index < ceiling:
            tail += _size(view[index])
        if (
            tail >= keep_recent_tokens
            and index - 1 >= max(start, 2)
            and view[index].get("role") == "assistant"
            and (inside_loops or _opens_cleanly(view, index))
        ):
            return index
    return None


def _truncation_end(draft: Draft, ceiling: int) -> tuple[int, int] | None:
    """Where plain truncation would end the hidden range of ``draft``, and the size it would
    send: the rounds of :class:`HideOldTurns` (half, or a quarter while half the request is
    over the limit; then a quarter, then all but the last two) until the request, measured
    without a continuation, is down to its target; None when it would hide nothing."""
    view = draft.view
    current = draft.deleted_range
    plain = draft.state.with_compaction(fold=None)
    estimate = draft.estimate
    start = end = current[1] if current is not None else 1
    while estimate > draft.target:
        first = keep_for(estimate, draft.limit)
        hidden = (2, end) if end > 1 else None
        grown = next(
            (
                candidate
                for keep in (first, Keep.QUARTER, Keep.LAST_TWO)
                if end < (candidate := next_range(view, hidden, keep)[1]) < ceiling
            ),
            None,
        )
        if grown is None:
            break
        end = grown
        estimate = draft.size_with(plain.hiding((2, end)))
    return (end, estimate) if end > start else None


class LedgerUpTo:
    """The ledger of the first messages of a growing history, fed only what is new each time.

    Folds only move forward (each ends later than the last), so the builder reads the messages
    between two folds once; after the history changed below what it read (a rollback, a
    sync that cut it), it starts over.
    """

    __slots__ = ("_builder", "_seen")

    def __init__(self) -> None:
        self._builder = LedgerBuilder()
        self._seen = Seen()

    def ledger(self, history: Sequence[Message], end: int) -> Ledger:
        """The ledger of ``history[:end]``."""
        builder = self._builder
        if self._seen.prefix(history) < builder.count or end < builder.count:
            builder = self._builder = LedgerBuilder()
        builder.extend(history[builder.count : end])
        self._seen.remember(history)
        return builder.ledger()


class SummarizeTurns:
    """Fold the older visible turns into a continuation, once a request, before any hiding.

    ``summarizer`` is called with a :class:`~windowkeeper.session._summary.SummaryRequest`
    (None: the ledger alone). A new fold takes the previous continuation in (a rolling
    summary). The session stops calling this step after a fold that freed little (see
    :class:`~windowkeeper.ContextSession`'s ``compaction``) and never on the request right after
    a fold; hiding turns then does the rest.
    """

    name = "summarize"
    repeats = False

    def __init__(
        self,
        summarizer: Summarizer | AsyncSummarizer | None = None,
        *,
        keep_recent_tokens: int | None = None,
        in_band: bool = False,
        timeout: float | None = 180.0,
    ) -> None:
        if in_band and summarizer is not None:
            raise ConfigurationError("an in-band step asks the model itself: give no summarizer")
        self.summarizer = summarizer
        self.in_band = in_band  # the session asks on the request itself before this step runs
        # None: a share of the window, decided by the session (see ContextSession)
        self.keep_recent_tokens = keep_recent_tokens
        self.last_error: BaseException | None = None  # what the summarizer raised last, if it did
        self.is_async = is_async_summarizer(summarizer)
        # aprepare's awaited answer for one request: (the request's messages, the summary)
        self.ready: tuple[tuple[Message, ...], str | None] | None = None
        self.ledgers = LedgerUpTo()
        self.keep = keep_recent_tokens if keep_recent_tokens is not None else 8_000
        self.budget_chars: int | None = None  # the continuation's budget, set by the session
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ConfigurationError(
                f"timeout must be a positive number of seconds, got {timeout!r}"
            )
        self.timeout = timeout  # seconds a summarizer may take before the ledger stands in
        self.summary_worth = SUMMARY_WORTH  # see worth_summary
        self.failure: str | None = None  # why the last fold had no new summary, if it had none
        # the request sent before the one being prepared (messages, system, tools), offered to
        # the summarizer so that its call can share the conversation's cached prefix
        self.previous: _Previous | None = None

    def apply(self, draft: Draft) -> Action | None:
        if draft.folded_now:
            return None
        view = draft.view
        start = visible_start(draft.deleted_range)
        point = fold_point(view, start, self.keep)
        if point is None:
            return None
        point, excess = self._as_small_as_truncation(draft, point)
        folded = tuple(view[max(start, 2) : point])
        ledger = self.ledgers.ledger(draft.history, ledger_end(view, point, len(view)))
        hidden = tuple(range(max(start, 2), point))
        if not draft.may_fold or not self.worth_summary(folded, draft.previous_summary):
            # No new summary now (right after a fold, while summarizing is paused, or when the
            # turns not yet summarized are too few to pay for one): the last summary stays,
            # with a ledger that covers the turns folded now.
            kept = draft.previous_summary
            draft.fold((2, point - 1), self._fitted(kept, ledger, excess), kept)
            return Action(REFOLD, messages=hidden, deleted_range=(2, point - 1))
        if self.summarizer is not None and self._smallest_fold(draft, ledger) > draft.limit:
            # Messages 0-1 and the newest turn, clipped as far as they go, are over the limit:
            # the request is refused whatever the summary says, so none is asked for (it was,
            # on every prepare() of such a task).
            summary = None
            self.failure = "even the smallest fold is over the limit: no summary asked for"
        else:
            summary = self._summary(folded, draft.continuation, ledger)
        if summary is None:  # no new summary (none asked for here, or none came): keep the last
            summary = draft.previous_summary
        draft.fold((2, point - 1), self._fitted(summary, ledger, excess), summary)
        usage = getattr(self.summarizer, "last_usage", None)
        return Action(
            self.name,
            messages=hidden,
            deleted_range=(2, point - 1),
            usage=usage if isinstance(usage, TokenUsage) else None,
            reason=self.failure,
        )

    def worth_summary(self, folded: Sequence[Message], previous: str | None) -> bool:
        """Whether a new summary is worth its price for ``folded``, the turns it would be the
        first to summarize (every earlier turn is in ``previous``, the last summary).

        A summary is output, the dearest tokens of a request, and a new one is about as long as
        the last. So with a last summary, a new one is asked for only when the turns it adds
        hold at least :attr:`summary_worth` times the last summary's size; fewer go into the
        ledger alone beside the last summary (a refold). The first summary is always asked.
        """
        if previous is None or self.summary_worth <= 0:
            return True
        added = sum(_size(message) for message in folded)
        return added >= self.summary_worth * (len(previous) // 4 + 1)

    def _fitted(self, summary: str | None, ledger: Ledger, excess: int) -> str:
        """The continuation, a ledger-only one shortened by ``excess`` tokens (at three
        characters a token) when even the latest cut sent more than truncation would; never
        below its must-keep lines, and a model's summary is never cut for this."""
        text = self.text(summary, ledger)
        if summary is not None or excess <= 0:
            return text
        budget = max(shortest_continuation(ledger), len(text) - excess * 3)
        return continuation(None, ledger, max_chars=budget) if budget < len(text) else text

    def _smallest_fold(self, draft: Draft, ledger: Ledger) -> int:
        """A lower bound of what any fold of ``draft`` sends: every turn before the newest one
        folded into the shortest continuation of ``ledger``, and each block the clipping step
        may cut in that turn cut as far as it goes (messages 0-1 are never cut)."""
        newest = newest_turn(draft.view)
        current = draft.deleted_range
        end = newest.start - 1
        if end < 2 or (current is not None and current[1] >= end):
            return 0  # no fold can hide more: nothing to tell
        text = continuation(None, ledger, max_chars=shortest_continuation(ledger))
        state = draft.state.hiding((2, end)).with_compaction(fold=Fold(end, text, None))
        clips = tuple(
            Clip(index, block_index, MIN_KEPT_CHARS)
            for index in newest
            for block_index, _ in clippable_blocks(draft.history[index])
        )
        kept = tuple(clip for clip in state.clips if clip.message_index < newest.start)
        return draft.size_with(replace(state, clips=(*kept, *clips)) if clips else state)

    def _as_small_as_truncation(self, draft: Draft, point: int) -> tuple[int, int]:
        """``point``, or a later cut so the fold sends no more than plain truncation would;
        and by how many tokens the request at that cut is still larger (0 when it fits).

        Plain truncation (:func:`_truncation_end`) would hide turns and send the rest; a fold
        that keeps a longer tail, plus its continuation, would send more on every request
        until the next fold. So the cut is the earliest of the later assistant messages (that
        open cleanly, never past the answer the newest turn replies to) at which the request,
        measured, is no larger than truncation's; failing that, the latest such cut. The
        continuation is sized with the last summary (the new one is not written yet) and the
        ledger up to the latest cut (a little longer than the one it will have).
        """
        view = draft.view
        ceiling = newest_turn(view).start - 1
        truncated = _truncation_end(draft, ceiling)
        if truncated is None:
            return point, 0
        state = draft.state
        plain = truncated[1]
        cuts = [
            index
            for index in range(point + 1, ceiling + 1)
            if view[index].get("role") == "assistant" and _opens_cleanly(view, index)
        ]
        summary = draft.previous_summary
        text = self.text(summary, self.ledgers.ledger(draft.history, (cuts or [point])[-1]))

        def over(cut: int) -> int:
            folded = state.hiding((2, cut - 1)).with_compaction(fold=Fold(cut - 1, text, summary))
            return draft.size_with(folded) - int(plain)

        if not cuts or over(point) <= 0:
            return point, max(over(point), 0) if not cuts else 0
        low, high = 0, len(cuts) - 1  # the earliest cut that fits, by bisection
        while low < high:
            middle = (low + high) // 2
            if over(cuts[middle]) <= 0:
                high = middle
            else:
                low = middle + 1
        return cuts[low], max(over(cuts[low]), 0)

    def text(self, summary: str | None, ledger: Ledger) -> str:
        """The continuation of ``summary`` and ``ledger``, within the budget when one is set.

        The budget never cuts a must-keep line (the latest instruction, up to its own clip, the
        files edited, the todo state): when those alone are longer, they are the budget, and
        only a request still over the limit shortens the fold further."""
        budget = self.budget_chars
        if budget is not None:
            budget = max(budget, shortest_continuation(ledger))
        return continuation(summary, ledger, max_chars=budget)

    def _summary(
        self,
        folded: tuple[Message, ...],
        previous: str | None,
        ledger: Ledger,
    ) -> str | None:
        """The summarizer's answer for ``folded``, or None (no summarizer, a failure, no text)."""
        if self.summarizer is None:
            return None
        prefix, system, tools = self.previous if self.previous is not None else ((), None, None)
        request = SummaryRequest(
            messages=folded,
            previous_summary=previous,
            instruction=summary_instruction(previous),
            ledger=ledger,
            prefix=prefix,
            system=system,
            tools=tools,
        )
        if self.is_async:
            ready, self.ready = self.ready, None
            if ready is None or ready[0] != folded:
                raise SummaryNeeded(request)
            answer: object = ready[1]
        else:
            self.failure = None
            try:
                answer = call_with_timeout(self.summarizer, request, self.timeout)
            except Exception as error:  # any failure means "no summary": the ledger stands in
                self.last_error = error
                self.failure = failure_reason(error, self.timeout)
                return None
        summary = usable_summary(answer)
        if summary is None and self.failure is None:
            self.failure = "the summarizer gave no usable text: folded with the ledger alone"
        return summary


def failure_reason(error: BaseException, timeout: float | None) -> str:
    """What an action says when a summarizer failed with ``error``."""
    if isinstance(error, TimeoutError):
        return f"the summarizer did not answer within {timeout:g} s: folded with the ledger alone"
    return f"the summarizer raised {type(error).__name__}: folded with the ledger alone"


def call_with_timeout(
    summarizer: Callable[[SummaryRequest], object], request: SummaryRequest, timeout: float | None
) -> object:
    """``summarizer(request)``, or :class:`TimeoutError` after ``timeout`` seconds (None: wait).

    The call runs in a daemon thread so a summarizer that blocks cannot block ``prepare``
    forever; Python cannot stop that thread, so its late answer is dropped.
    """
    if timeout is None:
        return summarizer(request)
    import threading  # noqa: PLC0415 - only a session with a summarizer pays for it

    outcome: list[object] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(summarizer(request))
        except BaseException as error:  # handed to the caller's thread below
            failed.append(error)

    worker = threading.Thread(target=run, name="windowkeeper-summarizer", daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise TimeoutError(f"the summarizer did not answer within {timeout:g} s")
    if failed:
        raise failed[0]
    return outcome[0] if outcome else None


def usable_summary(summary: object) -> str | None:
    """``summary`` if it is text a provider and every backend accept, else None.

    Blank text, anything not a string, a NUL character or a lone surrogate (which no JSON
    encoder of a request or a database accepts) all mean "no summary": never stored, never sent.
    """
    if not isinstance(summary, str) or not summary.strip() or "\x00" in summary:
        return None
    try:
        summary.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return summary
