"""ContextSession: the per-turn object an agent loop holds for one task.

It owns the full history and the session's decisions about it (one
:class:`~windowkeeper.session._state.SessionState` value), and, optionally, a storage backend
where both persist, so that re-opening resumes exactly. Each turn::

    session.append(user_message)
    prepared = session.prepare(system=SYSTEM, tools=TOOLS, max_output_tokens=4096)
    reply = client.messages.create(messages=prepared.messages, ...)
    session.record_usage(reply.usage)
    session.append({"role": "assistant", "content": reply.content})

``prepare`` reads as feed -> view -> steps -> wire -> commit: it first makes the original's
decision from the usage the provider reported for the previous request, then checks the
request it is about to return (pre-flight): when the estimate exceeds ``max_allowed_size`` it
runs the shrink steps (duplicate reads, masking, folding when compaction is on, hiding turns,
clipping) until it fits, and raises :class:`~windowkeeper.ContextOverflowError` only when
nothing can make it fit. Compaction's own policy lives in
:class:`~windowkeeper.session._compaction.Compaction`, the request pipeline in
:class:`~windowkeeper.session._request.RequestBuilder`, the decisions of one request in
:func:`~windowkeeper.session._planning.plan_request`, commits, checkpoints and reload in
:class:`~windowkeeper.session._keeping.SessionKeeping`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigurationError, MalformedMessageError
from .._record import replace
from ..cline._manager import ContextManager
from ..core._file_reads import ReadDetector
from ..core._messages import Message, SystemPrompt
from ..core._window import ContextWindowInfo
from ._admission import (
    AdmittedArguments,
    admit_range,
    admit_timestamp,
    admit_usage,
)
from ._arguments import (
    backend_of,
    check_system,
    check_tools,
    count_argument,
    share,
    shrink_steps,
    window_of,
)
from ._format import FormatName, SessionFormat
from ._handshake import await_summary
from ._history import SessionHistory
from ._keeping import SessionKeeping
from ._learning import restore_learnt, snapshot_of
from ._native_reads import NativeReadDetector
from ._planning import plan_request
from ._prepared import Checkpoint, Prepared, Synced
from ._request import finish_request, place_truncation_notice
from ._request_log import RequestLog
from ._sdk import MessageLike, UsageInput, message_from_sdk, usage_from_sdk
from ._shrinking import Shrinker
from ._state import SessionState, cut_state
from ._syncing import common_prefix, extends, store_before
from ._tokens import CalibratedEstimator, TokenCounter
from ._usage_record import LastRequest, recorded_usage
from ._usage_trust import UsageTrust
from .steps import Step, SummaryNeeded

if TYPE_CHECKING:
    from ..storage import SessionStore
    from ._persistence import Persistence
    from ._summary import AsyncSummarizer, Summarizer

__all__ = [
    "Checkpoint",
    "ContextSession",
    "Prepared",
    "Synced",
    "finish_request",
    "place_truncation_notice",
]


class ContextSession(SessionKeeping):
    """One task's conversation, kept within ``context_window`` on every request.

    ``context_window`` is an int (tokens) or a :class:`ContextWindowInfo`; without it, ``model``
    looks the window up in the shipped model table (:func:`windowkeeper.model_window`: an unknown
    model gets the original's 128 000 with an :class:`UnknownModelWarning`); ``counter`` estimates
    request sizes (default: :class:`~windowkeeper.session._tokens.CalibratedEstimator`, calibrated from the
    usage you record); ``detector`` finds duplicate reads (default:
    :class:`~windowkeeper.session._native_reads.NativeReadDetector`, every block and native tool calls;
    pass :class:`~windowkeeper.ClineReadDetector` for the original's); ``place_results`` sends
    Cline's text-block tool results inside their tool_result blocks; ``max_result_share`` clips
    any result of the newest turn larger than that share of the limit as it arrives (keeping its
    head and tail; None never clips on arrival); when a request must shrink, tool outputs older
    than the last ``mask_keep_recent`` are masked first (None never masks), and the session shrinks
    it to ``shrink_target`` of the limit, so that shrinking, which costs prompt-cache reuse, is rare;
    ``steps`` replaces those remedies with your own list of
    :class:`~windowkeeper.session.steps.Step` objects (default: duplicate reads, masking, hiding
    turns, clipping; ``mask_keep_recent`` then plays no part), each reported in
    ``Prepared.actions``;
    ``summarize`` turns compaction on (``True``: the ledger alone; ``"in-band"``: the model is
    asked on the request itself once it passes ``in_band_at`` of the limit, or past the limit
    while the ask takes at most half the margin between the limit and the window; a summarizer
    callable, sync or async, for out-of-band summaries): it is sugar for a
    :class:`~windowkeeper.session.steps.SummarizeTurns` step, which ``steps`` may hold instead;
    ``keep_recent_tokens`` is the verbatim tail a fold keeps beside the newest turn, always kept
    whole (default none; at most half the limit); ``summarizer_timeout`` the seconds a summarizer may
    take before the fold goes ahead with the ledger alone (None: no limit);
    ``task_dir`` persists everything: each call that changes the session (``append``, ``extend``,
    ``record_usage``, ``prepare``, ``rollback``) has written it when it returns, so reopening the
    folder resumes exactly where the last call left; ``clock`` returns milliseconds since the
    epoch (injectable for tests).

    Bad arguments raise :class:`~windowkeeper.ConfigurationError` naming them. Not thread-safe:
    one session per task. Sessions share nothing mutable with each other.
    """

    def __init__(
        self,
        context_window: int | ContextWindowInfo | None = None,
        *,
        model: str | None = None,
        task_dir: str | os.PathLike[str] | None = None,
        store: SessionStore | None = None,
        counter: TokenCounter | None = None,
        detector: ReadDetector | None = None,
        max_output_tokens: int = 0,
        place_results: bool = True,
        max_result_share: float | None = 0.25,
        mask_keep_recent: int | None = 2,
        shrink_target: float = 0.6,
        format: FormatName = "anthropic",
        clock: Callable[[], int] | None = None,
        steps: Sequence[Step] | None = None,
        summarize: bool | Literal["in-band"] | Summarizer | AsyncSummarizer = False,
        keep_recent_tokens: int | None = None,
        in_band_at: float | None = None,
        summarizer_timeout: float | None = 180.0,
    ) -> None:
        self._info = window_of(context_window, model)
        backend = backend_of(task_dir, store)
        self._counter: TokenCounter = counter if counter is not None else CalibratedEstimator()
        self._manager = ContextManager(
            detector=detector if detector is not None else NativeReadDetector(),
            keep_user_text=True,  # the user's words after the cut are sent, never replaced
        )
        self._place_results = place_results
        self._format = SessionFormat(format)
        self._requests = self._request_builder()
        self._max_result_share = (
            share("max_result_share", max_result_share) if max_result_share is not None else None
        )
        if mask_keep_recent is not None:
            count_argument("mask_keep_recent", mask_keep_recent)
        self._shrink_target = share("shrink_target", shrink_target)
        self._steps, self._compaction = shrink_steps(
            steps,
            summarize,
            mask_keep_recent=mask_keep_recent,
            keep_recent_tokens=keep_recent_tokens,
            in_band_at=in_band_at,
            timeout=summarizer_timeout,
        )
        if keep_recent_tokens is not None and keep_recent_tokens > self._info.max_allowed_size / 2:
            raise ConfigurationError(
                f"keep_recent_tokens={keep_recent_tokens:,} is over half the limit"
                f" ({self._info.max_allowed_size:,.0f} tokens): a fold could free nothing"
            )
        self._shrinker = Shrinker(
            self._steps,
            self._compaction,
            self._requests,
            self._manager,
            self._shrink_target,
            self._max_result_share,
        )
        self._arguments = AdmittedArguments()  # the system prompt and tools let in last
        self._awaiting = False  # inside aprepare: an async summarizer's request is awaited there
        self._max_output_tokens = count_argument("max_output_tokens", max_output_tokens)
        self._clock = clock if clock is not None else (lambda: time.time_ns() // 1_000_000)
        self._history = SessionHistory(self._format)
        self._state = SessionState()
        self._last: LastRequest | None = None
        self._usage_trust = UsageTrust()  # reported usage checked before it is believed
        self._stored_window: ContextWindowInfo | None = None
        self._persistence: Persistence | None = None
        if backend is not None:
            from ._persistence import Persistence  # noqa: PLC0415 - a stored session's

            self._persistence = Persistence(backend)
            self._load(self._persistence)
        if context_window is None and model is None:  # the stored window, else the default
            if self._stored_window is None:
                from ._models import warn_no_window  # noqa: PLC0415 - the model table's module

                warn_no_window()
            self._info = self._stored_window or self._info

    # -- what the session holds ------------------------------------------------------------

    @property
    def history(self) -> list[Message]:
        """A copy of the full history, in the session's format (messages shared, never modified)."""
        return self._history.given()

    @property
    def state(self) -> SessionState:
        """The session's decisions as one frozen value (what a checkpoint holds and commits write)."""
        return self._state

    @property
    def deleted_range(self) -> tuple[int, int] | None:
        """The inclusive range of history indices hidden from requests, or None."""
        return self._state.deleted_range

    @deleted_range.setter
    def deleted_range(self, value: tuple[int, int] | None) -> None:
        # For flows that hide history themselves, as Cline's summarize and condense tools do.
        self._history.sync()
        checked = admit_range(value, len(self._history.messages))
        state = replace(self._state, deleted_range=checked)
        self._commit(state)
        self._state = state

    @property
    def format(self) -> FormatName:
        """The shape the session is fed in and prepares requests in."""
        return self._format.name

    @property
    def window(self) -> ContextWindowInfo:
        """The model's window and the limit requests are kept under."""
        return self._info

    @window.setter
    def window(self, value: int | ContextWindowInfo) -> None:
        # A model switch: the next decision uses the new limit, as in the original.
        self._info = window_of(value, None)

    @property
    def summarizing(self) -> bool:
        """An in-band summary was asked for and its reply is not folded in yet.

        True from the request with ``summary_requested`` until the model's next reply, while
        the history ends with that request's turn or with the summary replying to it (an
        assistant message of text only, folded in or not yet): an agent loop then prepares again instead of
        treating the reply as a final answer. Persisted, so a resumed loop knows it too.
        """
        if self._compaction is None:
            return False
        self._history.sync()
        return self._compaction.summarizing(self._state, self._history.messages)

    @property
    def manager(self) -> ContextManager:
        """The underlying manager (its store holds every content edit)."""
        return self._manager

    # -- feeding the session ---------------------------------------------------------------

    def append(self, message: MessageLike) -> None:
        """Add a message (a dict, or an SDK reply object), checked; persisted with ``task_dir``.

        A dict is kept as it is (never modified, not copied); an SDK object (an Anthropic
        ``Message``, an OpenAI ``ChatCompletion`` or its message) is read into a dict first
        (:func:`windowkeeper.session._sdk.message_from_sdk`).
        """
        self.extend([message])

    def extend(self, messages: Iterable[MessageLike]) -> None:
        """Add several messages: all are checked before any is added, then persisted.

        Raises :class:`~windowkeeper.MalformedMessageError` naming the first message that a
        provider or the task folder could not take (see :mod:`windowkeeper.core._inputs`); the first
        message of a conversation must be a user message (the task).
        """
        batch = [message_from_sdk(message) for message in messages]
        if batch:
            self._history.extend(batch, lambda: self._commit(self._state))

    def sync(self, messages: Iterable[MessageLike]) -> Synced:
        """Make the history ``messages`` (the whole conversation, as a framework holds it).

        The one entry point for frameworks, which hand their hook the full message list on
        every model call. When ``messages`` extends the history, only the new suffix is
        appended (the usual case). When it differs inside the history (an edit, a fork, the
        framework's own trimming), the history is cut back to the longest common prefix and
        the rest appended: every decision about a message past the cut (store edits, clips, the
        part of the hidden range past it, the last usage) is dropped with it, as a rollback
        would, so two histories are never mixed. A different first message starts the task
        over. Messages compare by value, SDK objects read as by :meth:`append`.
        """
        wanted = [message_from_sdk(message) for message in messages]
        wanted = self._format.canonical(wanted)
        current = self._history.given()
        known = len(current)
        if extends(current, wanted):
            self.extend(wanted[known:])
            return Synced(kept=known, appended=len(wanted) - known)
        common = common_prefix(current, wanted)
        self._cut(common)
        self.extend(wanted[common:])
        return Synced(
            kept=common,
            appended=len(wanted) - common,
            dropped=len(current) - common,
            restarted=common == 0,
        )

    def _cut(self, length: int) -> None:
        """Cut the history to ``length`` messages and forget every decision past the cut."""
        kept = self._history.cut(length)
        state = cut_state(self._state, kept)
        store = store_before(self._manager.store, kept, hidden=state.deleted_range is not None)
        self._commit(state, store)
        self._went_back(state, store)

    def record_usage(self, usage: UsageInput, *, timestamp: int | None = None) -> None:
        """What the provider reported for the last prepared request.

        Accepts a :class:`TokenUsage` or an Anthropic or OpenAI usage object or dict, checked
        before anything is kept. It teaches the counter the real size of that request and drives
        the next decision, unless the range has grown since that request was prepared (then the
        usage is stale and ignored). ``timestamp`` overrides when that request was sent (ms).
        """
        parsed = admit_usage(usage_from_sdk(usage))
        if timestamp is not None:
            admit_timestamp(timestamp)
        last = self._last
        state = self._state
        if timestamp is not None:
            sent_at = timestamp
        elif last is not None:
            sent_at = last.timestamp
        else:
            state = self._ticked(state)
            sent_at = state.last_timestamp
        state, distrusted = recorded_usage(
            state,
            parsed,
            last,
            sent_at=sent_at,
            trust=self._usage_trust,
            counter=self._counter,
            context_window=self._info.context_window,
        )
        # what it knew, for a commit that fails (a session without storage commits nothing)
        learnt = snapshot_of(self._counter) if self._persistence is not None else None
        if last is not None and not distrusted:  # learnt first: the commit keeps what it learnt
            reported = parsed.tokens_in + parsed.cache_writes + parsed.cache_reads
            self._counter.observe(
                last.messages, system=last.system, tools=last.tools, reported_input_tokens=reported
            )
        try:
            self._commit(state)
        except BaseException:
            restore_learnt(self._counter, learnt)
            raise
        self._state = state

    # -- building a request ----------------------------------------------------------------

    def prepare(
        self,
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_output_tokens: int | None = None,
    ) -> Prepared:
        """The messages to send now, within the window, and what was done to get them.

        With ``format="openai"`` the messages come back in OpenAI's shape, system messages
        included, and ``system`` defaults to the history's own system messages for the estimate.
        Raises :class:`~windowkeeper.ContextOverflowError` when nothing can make the request fit;
        the session is then left exactly as it was before the call.
        """
        openai_system = self._history.sync()
        if not self._history.messages:
            raise MalformedMessageError("history", "no messages to send: append the task first")
        system = check_system(openai_system if system is None else system)
        tools = check_tools(tools)
        self._arguments.admit(system, tools)
        reserve = self._max_output_tokens
        if max_output_tokens is not None:
            reserve = count_argument("max_output_tokens", max_output_tokens)
        store = self._manager.store
        store.open_journal()
        try:
            prepared = self._prepare(system, tools, reserve)
        except BaseException as error:
            store.undo_journal()
            if isinstance(error, SummaryNeeded) and not self._awaiting:
                raise ConfigurationError(
                    "summarize= is an async summarizer: call aprepare(), not prepare()"
                ) from None
            raise
        store.close_journal()
        return prepared

    async def aprepare(
        self,
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        max_output_tokens: int | None = None,
    ) -> Prepared:
        """:meth:`prepare` for a session whose summarize step has an async summarizer.

        When a fold needs a summary, the summarizer is awaited and the request prepared again
        with it (the first attempt leaves the session as it was). Same result as ``prepare`` for
        any other session.
        """
        for _attempt in range(2):  # the second attempt has the summary it asked for
            self._awaiting = True
            try:
                return self.prepare(system=system, tools=tools, max_output_tokens=max_output_tokens)
            except SummaryNeeded as needed:
                request = needed.request
            finally:
                self._awaiting = False
            await await_summary(self._compaction, request)
        raise AssertionError("unreachable: the second attempt had its summary")  # pragma: no cover

    def _prepare(
        self, system: Any, tools: Sequence[Mapping[str, Any]] | None, reserve: int
    ) -> Prepared:
        log = RequestLog(self._usage_trust.pending())
        now = self._now(self._state)
        plan = plan_request(
            self._history.messages,
            self._state,
            log,
            now=now,
            system=system,
            tools=tools,
            reserve=reserve,
            window=self._info,
            manager=self._manager,
            requests=self._requests,
            shrinker=self._shrinker,
            compaction=self._compaction,
            last=self._last,
        )
        # commit, then the wire (the clock moved on and the request counted in one new state)
        state = replace(plan.state, last_timestamp=now, requests=plan.state.requests + 1)
        self._commit(state)
        self._state = state
        self._usage_trust.forget()  # reported in these actions
        self._last = LastRequest(plan.messages, system, tools, now, state.generation)
        wired, repairs = self._format.send(plan.messages)
        return Prepared(
            messages=wired,
            deleted_range=state.deleted_range,
            range_changed=log.range_changed,
            replaced_reads=len(log.replaced),
            estimated_tokens=plan.estimate,
            max_allowed_size=self._info.max_allowed_size,
            preflight_acted=plan.acted,
            clipped=tuple(log.clips.values()),
            ignored_stale_usage=plan.stale,
            repairs=self._requests.id_repairs(state) + self._requests.orphaned + repairs,
            actions=tuple(log.actions),
            summary_requested=plan.requested,
        )

    def _ticked(self, state: SessionState) -> SessionState:
        """``state`` with the session's clock moved on (strictly increasing)."""
        return replace(state, last_timestamp=self._now(state))

    def _now(self, state: SessionState) -> int:
        """The session's clock, moved on from ``state``'s (strictly increasing)."""
        now = admit_timestamp(int(self._clock()), "clock()")
        return max(now, state.last_timestamp + 1)
