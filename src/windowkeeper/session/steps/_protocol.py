"""What a shrink step sees and may change (:class:`Draft`), what it reports (:class:`Action`).

A request that is over the limit is shrunk by a list of steps, each a small object with a
``name``, a ``repeats`` flag and an ``apply(draft)`` method that applies one batch of changes
and returns an :class:`Action`, or None when it can do no more. A step changes the request in
only three ways, each through a method of the draft, which checks it: it edits content
(:meth:`Draft.replace_duplicate_reads`, :meth:`Draft.mask_old_outputs`,
:meth:`Draft.add_truncation_notice`, :meth:`Draft.replace_text`, each dated ``draft.now``), it
hides more turns (:meth:`Draft.hide`, a range that extends the current one; :meth:`Draft.fold`
with a text in their place), or it clips one more block (:meth:`Draft.clip`, tighter than
before). The draft holds no handle on the session, its manager or its edit log: a step reads
values and asks for changes.

The runner owns the stop rule: it calls a step only while the request is over the step's goal,
``draft.target`` (the default) or, for a step whose ``goal`` attribute is ``"limit"``, the
limit itself (clipping, the last resort, stops as soon as the request fits).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from ..._errors import StepError
from ..._record import record, replace
from ...core._messages import Message
from ...core._overwrites import EditType, OverwriteStore, add_truncation_notice, text_update
from ...core._truncation import DeletedRange, visible_start
from ...core._usage import TokenUsage
from .._clipping import Clip
from .._masking import MaskScan, mask_old_context
from .._state import Fold, SessionState

__all__ = ["Action", "Draft", "Step", "newest_turn"]


@record(frozen=True, slots=True)
class Action:
    """One batch a step applied: which step, what it changed, and the estimate around it.

    ``messages`` are the history indices whose content changed; ``deleted_range`` is the range
    after a step that hid turns; ``clips`` the clips a step added. The token counts are the
    session's estimate of the whole request before and after (None where nothing was measured,
    as for decisions driven by the provider's reported usage); ``usage`` what a summary call
    cost, when the summarizer says (``last_usage``, as the ready-made ones do).
    """

    step: str
    messages: tuple[int, ...] = ()
    deleted_range: DeletedRange | None = None
    clips: tuple[Clip, ...] = ()
    tokens_before: int | None = None
    tokens_after: int | None = None
    usage: TokenUsage | None = None  # a summary call's own usage, when its summarizer reports it
    reason: str | None = None  # why, where the step says more than its name (e.g. no summary)


@runtime_checkable
class Step(Protocol):
    """One remedy for a request over its budget; see the module docstring."""

    @property
    def name(self) -> str:
        """A short stable name, the ``step`` of the actions it reports."""
        ...

    @property
    def repeats(self) -> bool:
        """Whether the runner calls it again after an action (until it returns None)."""
        ...

    def apply(self, draft: Draft) -> Action | None:
        """Apply one batch to ``draft`` and report it, or return None to pass."""
        ...


def newest_turn(history: Sequence[Message]) -> range:
    """Indices of the newest turn: the user messages after the last assistant one (not 0-1)."""
    start = len(history)
    while start > 2 and history[start - 1].get("role") == "user":
        start -= 1
    return range(start, len(history))


class Draft:
    """The request being shrunk, re-measured by the runner after every action.

    ``history`` is the full history as appended; ``view`` is what the manager sees (ids made
    unique, text results placed, clips applied); ``messages`` and ``estimate`` are the request
    as it would be sent now and its size by the session's counter. ``limit`` is the window's
    ``max_allowed_size``; ``target`` the size a shrinking request aims at (``shrink_target`` of
    the limit), so that shrinking, which costs prompt-cache reuse, is rare. ``state`` is the
    session's decisions as they stand; a step changes them only through :meth:`hide`,
    :meth:`fold` and :meth:`clip`, and content only through the edit methods, which write the
    session's edit log (the draft keeps it private: a step has no store to write past them).
    """

    __slots__ = (
        "_clip_run",
        "_masks",
        "_measure",
        "_replace_reads",
        "_stale_view",
        "_store",
        "_view_of",
        "estimate",
        "folded_now",
        "history",
        "limit",
        "may_fold",
        "messages",
        "now",
        "state",
        "target",
        "view",
    )

    def __init__(
        self,
        *,
        history: Sequence[Message],
        state: SessionState,
        store: OverwriteStore,
        view_of: Callable[[SessionState], list[Message]],
        measure: Callable[[list[Message], SessionState], tuple[list[Message], int]],
        replace_reads: Callable[[list[Message], int, int], set[int]],
        view: list[Message],
        messages: list[Message],
        estimate: int,
        now: int,
        limit: float,
        target: float,
        may_fold: bool = False,
        masks: MaskScan | None = None,
    ) -> None:
        self.history = history
        self.state = state
        self._store = store  # the edit log: the edit methods write it, dated ``now``
        self.view = view
        self.messages = messages
        self.estimate = estimate
        self.now = now
        self.limit = limit
        self.target = target
        self.may_fold = may_fold  # whether a new summary may be asked for in this request
        self.folded_now = False  # one fold a request
        self._view_of = view_of
        self._measure = measure
        self._replace_reads = replace_reads
        self._stale_view = False
        self._masks = masks  # what masking found in each message, kept between requests
        self._clip_run: tuple[tuple[int, int] | None, int] = (None, 0)

    @property
    def deleted_range(self) -> DeletedRange | None:
        """The range hidden now."""
        return self.state.deleted_range

    @property
    def clips(self) -> tuple[Clip, ...]:
        """The clips in force now."""
        return self.state.clips

    def replace_duplicate_reads(self) -> tuple[int, ...]:
        """Replace older copies of duplicated file reads in the visible part (the session's
        read detector decides what a read is); the indices of the messages changed."""
        start = visible_start(self.state.deleted_range)
        return tuple(sorted(self._replace_reads(self.view, start, self.now)))

    def mask_old_outputs(self, keep_recent: int) -> tuple[int, ...]:
        """Mask tool outputs of the visible part older than the last ``keep_recent`` (never the
        newest turn's, never a block edited before); the indices of the messages changed."""
        start = visible_start(self.state.deleted_range)
        masked = mask_old_context(
            self.view, start, self._store, self.now, keep_recent, scan=self._masks
        )
        return tuple(sorted(masked))

    def add_truncation_notice(self) -> bool:
        """The original's truncation notice on message 1, unless it has an edit already; True
        when it was added."""
        return add_truncation_notice(self._store, self.now, self.history)

    def replace_text(self, message_index: int, block_index: int, text: str) -> None:
        """Send ``text`` instead of a block's content (an edit of the history's message
        ``message_index``, block ``block_index``; the history itself is never changed)."""
        if not 0 <= message_index < len(self.history):
            raise StepError(f"a step edited message {message_index}, not in the history")
        self._store.record(
            message_index, EditType.UNDEFINED, block_index, text_update(self.now, text)
        )

    def hide(self, deleted_range: DeletedRange) -> None:
        """Hide more turns: ``deleted_range`` must extend the current range and leave a message."""
        current = self.state.deleted_range
        start, end = deleted_range
        if (
            start < 2
            or (current is not None and start != current[0])
            or end <= (current[1] if current is not None else 1)
            or end >= len(self.history)
        ):
            raise StepError(
                f"a step hid {deleted_range} over {current} in a history of"
                f" {len(self.history)} messages: a new range keeps its start and ends later"
            )
        self.state = self.state.hiding(deleted_range)

    @property
    def continuation(self) -> str | None:
        """The continuation text of the last fold (what a new fold takes in), or None."""
        fold = self.state.compaction.fold
        return fold.continuation if fold is not None else None

    @property
    def previous_summary(self) -> str | None:
        """The model's summary the last fold carries, or None."""
        fold = self.state.compaction.fold
        return fold.summary if fold is not None else None

    def fold(self, deleted_range: DeletedRange, text: str, summary: str | None = None) -> None:
        """Hide ``deleted_range`` (as :meth:`hide`) and send ``text`` after messages 0-1 instead;
        ``summary`` is the model's summary ``text`` carries, if any."""
        if self.folded_now:
            raise StepError("a step folded turns twice in one request")
        self.hide(deleted_range)
        self.state = self.state.with_compaction(fold=Fold(deleted_range[1], text, summary))
        self.folded_now = True

    def clip(self, clip: Clip) -> None:
        """Clip one more block: tighter than any clip it has, in a message of the history."""
        if not 0 <= clip.message_index < len(self.history):
            raise StepError(f"a step clipped message {clip.message_index}, not in the history")
        key = (clip.message_index, clip.block_index)
        clips = self.state.clips
        others = [c for c in clips if (c.message_index, c.block_index) != key]
        before = [c.kept for c in clips if (c.message_index, c.block_index) == key]
        if before and clip.kept >= min(before):
            raise StepError(f"a step re-clipped {key} to {clip.kept}, not tighter than {before}")
        self.state = replace(self.state, clips=(*others, clip))
        self._stale_view = True
        last, run = self._clip_run
        self._clip_run = (key, run + 1 if last == key else 1)

    def clips_in_a_row(self, message_index: int, block_index: int) -> int:
        """How many clips this request made on that block in a row, up to its latest clip
        (0 when its latest clip was of another block, or it made none)."""
        last, run = self._clip_run
        return run if last == (message_index, block_index) else 0

    def refresh(self) -> None:
        """Re-render and re-measure the request after an action (the runner's job)."""
        if self._stale_view:
            self.view = self._view_of(self.state)
            self._stale_view = False
        self.messages, self.estimate = self._measure(self.view, self.state)

    def size_with(self, state: SessionState) -> int:
        """What the request would measure with ``state`` instead (nothing is changed): for a
        step that weighs its options before it acts. Clips other than the draft's own are
        rendered for it (a clip changes the view)."""
        view = self.view if state.clips == self.state.clips else self._view_of(state)
        return self._measure(view, state)[1]

    def fingerprint(self) -> tuple[object, ...]:
        """What an action must change: the range, the clips, the store or the estimate."""
        state = self.state
        return (
            state.deleted_range,
            state.clips,
            state.compaction.fold,
            self._store.revision,
            self.estimate,
        )
