"""Replay a recorded conversation request by request under a context policy, and measure it.

A recorded history is fed as the agent fed it: one model request before each assistant message
(one before a run of consecutive assistant messages: one response written in pieces),
sending what the policy decides from the history up to that message. Two policies come with
windowkeeper, and anything with a ``send`` method (:class:`Policy`) can be replayed the same way:

- ``"cline"``: the original's :class:`~windowkeeper.ContextManager`, deciding from the usage of the
  previous request, exactly as Cline does;
- ``"windowkeeper"``: a :class:`~windowkeeper.session._session.ContextSession`, which also checks every
  request before it is sent (pre-flight);
- ``"cline-condense"``: the original's auto-condense path (:class:`ClineCondensePolicy`): instead
  of truncating, it asks the model for a summary and goes on from it. The summaries come from
  :func:`~windowkeeper.tools._scripted_summary.scripted_summary`, so replays are reproducible.
  Each summary adds a request: the one that asks for it and the one that sends the continuation
  are both recorded, at the same ``index``, and say so (``condense``).

The usage that drives the decisions is either ``"recorded"``, what the trace recorded for the
previous request (what Cline saw live: ``api_req_started`` in ``ui_messages.json``, or the
assistant messages' ``metrics.tokens``), or ``"estimated"``, the estimate of what the policy sent
for the previous request plus the tokens of the answer it got (what would happen now).

Every request is measured with one ruler for all policies: the token estimator of
:mod:`windowkeeper.session._tokens`, uncalibrated (about 3 bytes of UTF-8 per token, no safety margin),
over the messages sent, the system prompt and the tool definitions when the trace has them. A
request *overflows* when that estimate exceeds the context window. The ruler never learns from the
trace, so two replays of the same history are measured alike and give the same numbers every time.

:meth:`Replay.to_json` gives the documented, stable JSON form::

    {"policy": str, "window": {"context_window": int, "limit": number},
     "requests": [{"index": int, "deleted_range": [start, end] | null, "truncated": bool,
                   "replaced_reads": int, "estimated_tokens": int, "reported_tokens": int | null,
                   "overflow": bool}, ...],
     "summary": {"requests": int, "truncations": int, "overflows": int,
                 "estimated_tokens_sent": int, "replaced_reads": int}}

A policy that summarizes adds ``"condense": "summarize" | "continuation"`` to the records of the
requests its summaries made, and ``"condensations": int`` (the summaries asked for) to the
summary; the other policies' JSON has neither key.

Nothing here prints, and nothing given is modified.
"""

from __future__ import annotations

import bisect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from .._errors import ContextOverflowError
from ..cline._manager import ContextManager
from ..cline._task import ApiRequest
from ..core._condense import (
    bumped_range,
    is_next_gen_model_family,
    summary_call,
    summary_range,
    summary_result,
    summary_would_fold_a_summary,
    task_compact_threshold,
    with_summary_request,
)
from ..core._messages import Message
from ..core._overwrites import EditType, OverwriteStore
from ..core._truncation import DeletedRange, Keep, next_range
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo, as_window_info
from ..session._session import ContextSession
from ..session._tokens import CalibratedEstimator
from ..session._usage_trust import DistrustedUsageWarning
from ..session.steps import Action
from ._scripted_summary import scripted_summary

__all__ = [
    "ClineCondensePolicy",
    "ClinePolicy",
    "CondenseStep",
    "Policy",
    "PolicyName",
    "Replay",
    "ReplaySummary",
    "Replayer",
    "RequestRecord",
    "Ruler",
    "Sent",
    "Summarizer",
    "UsageSource",
    "WindowkeeperPolicy",
    "make_policy",
    "replay",
    "request_points",
]

_READ_EDITS = frozenset({EditType.READ_FILE_TOOL, EditType.ALTER_FILE_TOOL, EditType.FILE_MENTION})

Progress = Callable[[int, int], None]
"""Called after each request with (requests done, requests in all)."""


class PolicyName(StrEnum):
    """The policies that come with windowkeeper."""

    CLINE = "cline"
    WINDOWKEEPER = "windowkeeper"
    CLINE_CONDENSE = "cline-condense"


class CondenseStep(StrEnum):
    """Which request of a summary a record is."""

    SUMMARIZE = "summarize"
    """The request that asks the model for the summary."""
    CONTINUATION = "continuation"
    """The request after it, which sends the summary as the tool's result."""


Summarizer = Callable[[Sequence[Message]], str]
"""Writes the summary a model would answer to a request (given the messages sent)."""


class UsageSource(StrEnum):
    """Where the usage that drives each decision comes from."""

    RECORDED = "recorded"
    ESTIMATED = "estimated"


@dataclass(frozen=True, slots=True)
class Sent:
    """What a policy sent for one request, and what it did to get there."""

    messages: list[Message]
    deleted_range: DeletedRange | None
    truncated: bool  # the deleted range grew for this request
    replaced_reads: int  # older copies of file contents replaced for this request
    overflow_estimate: int | None = None
    """Set when nothing could make the request fit: the policy's estimate of the smallest one."""
    refused: ContextOverflowError | None = None
    """Set with ``overflow_estimate``: the error the policy raised, which says why."""
    condense: CondenseStep | None = None
    """Set when this request belongs to a summary."""
    follow_up: Sent | None = None
    """A request the policy made right after this one, before the next recorded answer (the
    continuation after a summary)."""
    actions: tuple[Action, ...] = ()
    """What the session did to build it (the windowkeeper policy; see ``Prepared.actions``)."""


class Policy(Protocol):
    """Decides what each request sends; one instance replays one conversation.

    ``send`` is called once per request, in order, with the history up to the request (each call's
    history extends the previous one), the usage of the previous request (None when there is none
    or nothing was recorded) and the time of that request (ms).
    """

    @property
    def name(self) -> str:
        """A short name for tables and plots."""
        ...

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """The request for ``history``."""
        ...


class Ruler:
    """A token counter that never learns, so every replay is measured alike.

    It follows the :class:`~windowkeeper.session._tokens.TokenCounter` protocol, so a
    :class:`~windowkeeper.session._session.ContextSession` can use it too: the session's pre-flight then
    judges requests by the same count the replay reports.
    """

    def __init__(self) -> None:
        self._estimator = CalibratedEstimator(safety_margin=0.0)

    def count(
        self,
        messages: Sequence[Message],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Estimated input tokens of a request with these messages, system prompt and tools."""
        return self._estimator.count(messages, system=system, tools=tools)

    def observe(
        self,
        messages: Sequence[Message],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reported_input_tokens: int,
    ) -> None:
        """Ignore what the provider reported: a ruler does not stretch."""


def _read_replacements(store: OverwriteStore) -> int:
    """How many file-content replacements the store holds (the truncation notice is not one)."""
    return store.update_count(_READ_EDITS)


class ClinePolicy:
    """The original: a :class:`~windowkeeper.ContextManager` and the deleted range it carries."""

    def __init__(
        self,
        window: int | ContextWindowInfo,
        *,
        store: OverwriteStore | None = None,
        deleted_range: DeletedRange | None = None,
    ) -> None:
        self.window = _window_info(window)
        self.manager = ContextManager()
        if store is not None:  # resume from a task's stored context, without touching it
            self.manager.store = store.copy()
        self.deleted_range = deleted_range

    @property
    def name(self) -> str:
        """``"cline"``."""
        return PolicyName.CLINE.value

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """The original's ``getNewContextMessagesAndMetadata`` for this request."""
        before = _read_replacements(self.manager.store)
        result = self.manager.get_new_context_messages_and_metadata(
            history,
            usage=usage,
            timestamp=timestamp,
            context_window=self.window,
            deleted_range=self.deleted_range,
        )
        self.deleted_range = result.deleted_range
        replaced = _read_replacements(self.manager.store) - before
        return Sent(
            result.truncated_history,
            result.deleted_range,
            result.updated_deleted_range,
            replaced,
        )


class ClineCondensePolicy:
    """The original's task with auto-condense on: summaries instead of truncation.

    Before each request, as the original's task does: when the previous request reached
    ``max_allowed_size`` (the task's threshold), at least three messages follow the last summary
    and replacing duplicate file reads would save under 30%, the new user message carries the
    summary request and goes out whole. The model's answer (``summarizer`` over what was sent;
    :func:`~windowkeeper.tools._scripted_summary.scripted_summary` by default) is a
    ``summarize_task`` call; as its handler does, everything after the first pair up to that user
    message is hidden (keep "none"), the truncation notice is set on message 1 and the task text
    of message 0 is replaced, and the next request, the continuation, hides the user message and
    the call too (+2) and carries the summary as the tool's result. The recorded answer follows
    that continuation, and the replay goes on from there.

    The policy keeps its own history: the recorded one with the summary request folded into its
    user message and each summary's call and result inserted. Calls are tool_use blocks when the
    history has any, else Cline's XML text; results are tool_result blocks when the history has
    any, else text. ``native_calls``/``native_results`` fix either choice. With native results
    the summary is dropped as an orphan by the original's truncation, as it is in Cline.

    A request that ``counter`` (with ``system`` and ``tools``) finds larger than the window is
    refused as the provider would refuse it, and handled as the original's task handles a
    context-window error, once per request: a quarter more is hidden, the notice set and the task
    text replaced, and the request sent again (the refused one is not recorded). If it still does
    not fit, it is recorded as it is, overflowing: the original gives up there.

    ``model_id`` gates auto-condense as the original does: a model that is not next-gen
    (:func:`~windowkeeper.core._condense.is_next_gen_model_family`) gets the plain truncation
    of ``"cline"``. None (the default) means a next-gen model.
    """

    def __init__(
        self,
        window: int | ContextWindowInfo,
        *,
        summarizer: Summarizer | None = None,
        model_id: str | None = None,
        native_calls: bool | None = None,
        native_results: bool | None = None,
        counter: Ruler | None = None,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.window = _window_info(window)
        self.manager = ContextManager()
        self.counter = counter if counter is not None else Ruler()
        self.system = system
        self.tools = tools
        self.summarizer: Summarizer = summarizer if summarizer is not None else scripted_summary
        self.auto_condense = model_id is None or is_next_gen_model_family(model_id)
        self.native_calls = native_calls
        self.native_results = native_results
        self.deleted_range: DeletedRange | None = None
        self.history: list[Message] = []
        """The conversation as this policy made it (summary requests, calls and results in it)."""
        self.condensations = 0
        self._fed = 0

    @property
    def name(self) -> str:
        """``"cline-condense"``."""
        return PolicyName.CLINE_CONDENSE.value

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """The request for ``history``, and the continuation after it when it asks for a summary."""
        new = list(history[self._fed :])
        self._fed = len(history)
        own = self.history
        before = _read_replacements(self.manager.store)
        if not self.auto_condense:
            own.extend(new)
            return self._send(usage, timestamp, before, use_auto_condense=False)
        asks = bool(new) and new[-1].get("role") == "user"
        own.extend(new[:-1] if asks else new)
        if asks:
            summarize = self._should_summarize(usage, timestamp)
            own.append(with_summary_request(new[-1]) if summarize else new[-1])
            asks = summarize
        sent = self._send(usage, timestamp, before, use_auto_condense=True)
        if not asks:
            return sent
        continuation = self._condense(sent.messages, timestamp)
        return Sent(
            sent.messages,
            sent.deleted_range,
            sent.truncated,
            sent.replaced_reads,
            condense=CondenseStep.SUMMARIZE,
            follow_up=continuation,
        )

    def _should_summarize(self, usage: TokenUsage | None, timestamp: int) -> bool:
        """The task's decision, on the history before the new user message is appended."""
        own = self.history
        if usage is None or usage.total < task_compact_threshold(self.window):
            return False
        if summary_would_fold_a_summary(own, self.deleted_range):
            return False
        optimization = self.manager.attempt_file_read_optimization_in_memory(
            own, self.deleted_range, timestamp
        )
        return optimization.need_to_truncate

    def _condense(self, asked: Sequence[Message], timestamp: int) -> Sent:
        """The model's summary, its handler, and the continuation request that follows."""
        own = self.history
        summary = self.summarizer(asked)
        self.condensations += 1
        tool_id = f"toolu_windowkeeper_summary_{self.condensations}"
        native_calls = self.native_calls
        if native_calls is None:
            native_calls = _has_block(own, "tool_use")
        native_results = self.native_results
        if native_results is None:
            native_results = _has_block(own, "tool_result")
        # The summarize_task handler, while the history still ends with the asking message.
        self.deleted_range = summary_range(own, self.deleted_range)
        handled = timestamp + 1  # the handler's own time, just after the request
        self.manager.trigger_apply_standard_context_truncation_notice_change(handled, None, own)
        own.append(summary_call(summary, tool_id, native=native_calls))
        # The next request: the asking message and the call hidden too, the result appended.
        self.deleted_range = bumped_range(own, self.deleted_range)
        own.append(summary_result(summary, tool_id, native=native_results))
        before = _read_replacements(self.manager.store)
        sent = self._send(None, handled, before, use_auto_condense=True)
        return Sent(
            sent.messages,
            sent.deleted_range,
            True,
            sent.replaced_reads,
            condense=CondenseStep.CONTINUATION,
        )

    def _send(
        self, usage: TokenUsage | None, timestamp: int, before: int, *, use_auto_condense: bool
    ) -> Sent:
        result = self.manager.get_new_context_messages_and_metadata(
            self.history,
            usage=usage,
            timestamp=timestamp,
            context_window=self.window,
            deleted_range=self.deleted_range,
            use_auto_condense=use_auto_condense,
        )
        self.deleted_range = result.deleted_range
        messages = result.truncated_history
        truncated = result.updated_deleted_range
        if self._refused(messages):
            # The original's context-window error path: hide a quarter more, notices, retry once.
            self.deleted_range = next_range(self.history, self.deleted_range, Keep.QUARTER)
            self.manager.trigger_apply_standard_context_truncation_notice_change(
                timestamp + 1, None, self.history
            )
            messages = self.manager.get_truncated_messages(self.history, self.deleted_range)
            truncated = True
        replaced = _read_replacements(self.manager.store) - before
        return Sent(messages, self.deleted_range, truncated, replaced)

    def _refused(self, messages: Sequence[Message]) -> bool:
        """Whether the provider would refuse these messages as too large for the window."""
        size = self.counter.count(messages, system=self.system, tools=self.tools)
        return size > self.window.context_window


def _has_block(history: Sequence[Message], kind: str) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") == kind
        for message in history
        if isinstance(message.get("content"), list)
        for block in message["content"]
    )


class WindowkeeperPolicy:
    """A :class:`~windowkeeper.session._session.ContextSession` fed message by message, as an agent loop would."""

    def __init__(
        self,
        window: int | ContextWindowInfo,
        *,
        counter: Ruler | None = None,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.system = system
        self.tools = tools
        self._now = 0
        self.session = ContextSession(
            _window_info(window), counter=counter, clock=lambda: self._now
        )
        self._fed = 0

    @property
    def name(self) -> str:
        """``"windowkeeper"``."""
        return PolicyName.WINDOWKEEPER.value

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """Record the previous request's usage, append what is new, and prepare the request."""
        session = self.session
        if usage is not None:
            with warnings.catch_warnings():  # a trace's odd usage: the request's actions say so
                warnings.simplefilter("ignore", DistrustedUsageWarning)
                session.record_usage(usage, timestamp=timestamp)
        session.extend(history[self._fed :])
        self._fed = len(history)
        self._now = timestamp
        store = session.manager.store
        before = _read_replacements(store)
        range_before = session.deleted_range
        try:
            prepared = session.prepare(system=self.system, tools=self.tools)
        except ContextOverflowError as error:
            truncated = session.deleted_range != range_before
            return Sent([], session.deleted_range, truncated, 0, error.estimated_tokens, error)
        replaced = _read_replacements(store) - before
        return Sent(
            prepared.messages,
            prepared.deleted_range,
            prepared.range_changed,
            replaced,
            actions=prepared.actions,
        )


def make_policy(
    name: str | PolicyName,
    window: int | ContextWindowInfo,
    *,
    counter: Ruler | None = None,
    system: Any = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> Policy:
    """A fresh policy by name: ``"cline"``, ``"windowkeeper"`` or ``"cline-condense"``.

    The session of ``"windowkeeper"`` measures requests with ``counter`` and counts ``system``
    and ``tools``. The original decides from reported usage alone, so ``"cline"`` and
    ``"cline-condense"`` need neither.
    """
    kind = PolicyName(name)
    if kind is PolicyName.CLINE:
        return ClinePolicy(window)
    if kind is PolicyName.CLINE_CONDENSE:
        return ClineCondensePolicy(window, counter=counter, system=system, tools=tools)
    return WindowkeeperPolicy(window, counter=counter, system=system, tools=tools)


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One replayed request."""

    index: int
    """The history length at the request: the index of the assistant message it answered."""
    deleted_range: DeletedRange | None
    """The range hidden from this request."""
    truncated: bool
    """Whether the range grew for this request."""
    replaced_reads: int
    """Older copies of file contents replaced for this request."""
    estimated_tokens: int
    """The ruler's count of what was sent."""
    reported_tokens: int | None
    """What the trace recorded for this request (input + output + cache writes + cache reads,
    the size the original compares), None when nothing was recorded. It describes what was sent
    when the trace was made, whatever the policy replayed."""
    overflow: bool
    """Whether ``estimated_tokens`` exceeds the context window."""
    condense: CondenseStep | None = None
    """Which request of a summary this is, None for an ordinary one."""

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form of the record (``condense`` only when set)."""
        found: dict[str, Any] = {
            "index": self.index,
            "deleted_range": None if self.deleted_range is None else list(self.deleted_range),
            "truncated": self.truncated,
            "replaced_reads": self.replaced_reads,
            "estimated_tokens": self.estimated_tokens,
            "reported_tokens": self.reported_tokens,
            "overflow": self.overflow,
        }
        if self.condense is not None:
            found["condense"] = self.condense.value
        return found


@dataclass(frozen=True, slots=True)
class ReplaySummary:
    """Totals over a replay."""

    requests: int
    truncations: int
    overflows: int
    estimated_tokens_sent: int
    replaced_reads: int
    condensations: int = 0
    """Summaries asked for (each is two requests: the ask and the continuation)."""

    def to_json(self) -> dict[str, int]:
        """The documented JSON form of the summary (``condensations`` only when any)."""
        found = {
            "requests": self.requests,
            "truncations": self.truncations,
            "overflows": self.overflows,
            "estimated_tokens_sent": self.estimated_tokens_sent,
            "replaced_reads": self.replaced_reads,
        }
        if self.condensations:
            found["condensations"] = self.condensations
        return found


@dataclass(frozen=True, slots=True)
class Replay:
    """The outcome of replaying one history under one policy."""

    policy: str
    usage: UsageSource
    window: ContextWindowInfo
    requests: tuple[RequestRecord, ...]

    @property
    def summary(self) -> ReplaySummary:
        """Totals over every request."""
        records = self.requests
        return ReplaySummary(
            requests=len(records),
            truncations=sum(record.truncated for record in records),
            overflows=sum(record.overflow for record in records),
            estimated_tokens_sent=sum(record.estimated_tokens for record in records),
            replaced_reads=sum(record.replaced_reads for record in records),
            condensations=sum(record.condense is CondenseStep.SUMMARIZE for record in records),
        )

    @property
    def condense_requests(self) -> tuple[RequestRecord, ...]:
        """The requests that asked for a summary (each followed by its continuation)."""
        return tuple(r for r in self.requests if r.condense is CondenseStep.SUMMARIZE)

    @property
    def largest_request(self) -> int:
        """The ruler's count of the largest request sent (0 when there was none)."""
        return max((record.estimated_tokens for record in self.requests), default=0)

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form: ``{"policy", "window", "requests": [...], "summary": {...}}``."""
        window = self.window
        limit = window.max_allowed_size
        return {
            "policy": self.policy,
            "window": {
                "context_window": window.context_window,
                "limit": int(limit) if float(limit).is_integer() else limit,
            },
            "requests": [record.to_json() for record in self.requests],
            "summary": self.summary.to_json(),
        }


def request_points(history: Sequence[Message]) -> list[int]:
    """The history length at each request: one before each run of assistant messages.

    One model response is one request. A conversation exported one assistant message per
    content block holds runs of consecutive assistant messages: nothing was asked between them
    (a request there would end with the previous piece's unanswered tool_use).
    """
    return [
        index
        for index, message in enumerate(history)
        if index and _is_assistant(message) and not _is_assistant(history[index - 1])
    ]


class Replayer:
    """Feeds one history to one policy, request by request, measuring every request.

    :func:`replay` drives it over every request of a history; :meth:`request` can also be called
    for a request the history has not made yet (the next one). See :func:`replay` for the
    arguments; ``system`` and ``tools`` are counted in every request's estimate.
    """

    def __init__(
        self,
        history: Sequence[Message],
        *,
        window: int | ContextWindowInfo,
        policy: str | Policy = PolicyName.CLINE,
        usage: str | UsageSource = UsageSource.RECORDED,
        requests: Sequence[ApiRequest] = (),
        ruler: Ruler | None = None,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.history = history
        self.window = _window_info(window)
        self.usage = UsageSource(usage)
        self.ruler = ruler if ruler is not None else Ruler()
        self.system = system
        self.tools = tools
        self.policy = (
            # The policy's own ruler (the same count): one estimator counting two different
            # lists in turn would count both whole every time instead of what each added.
            make_policy(policy, self.window, counter=Ruler(), system=system, tools=tools)
            if isinstance(policy, str)
            else policy
        )
        self.records: list[RequestRecord] = []
        self._recorded = _RecordedRequests(requests)

    def request(self, length: int) -> tuple[Sent, RequestRecord]:
        """Send the request for ``history[:length]``; each call's ``length`` must be larger."""
        history = self.history
        earlier = self._recorded.previous(length)
        last = self.records[-1] if self.records else None
        driving: TokenUsage | None
        if self.usage is UsageSource.RECORDED:
            driving = earlier.usage if earlier is not None else None
        elif last is None:
            driving = None
        else:
            answer = self.ruler.count([history[last.index]]) if last.index < length else 0
            driving = TokenUsage(tokens_in=last.estimated_tokens, tokens_out=answer)
        timestamp = _timestamp(earlier, history, length, len(self.records))
        sent = self.policy.send(history[:length], usage=driving, timestamp=timestamp)
        this = self._recorded.at(length)
        reported = None if this is None or this.usage is None else this.usage.total
        first = self._record(length, sent, reported)
        follow_up = sent.follow_up
        while follow_up is not None:  # requests the policy made before the recorded answer
            self._record(length, follow_up, None)
            follow_up = follow_up.follow_up
        return sent, first

    def _record(self, length: int, sent: Sent, reported: int | None) -> RequestRecord:
        tokens = (
            self.ruler.count(sent.messages, system=self.system, tools=self.tools)
            if sent.overflow_estimate is None
            else sent.overflow_estimate
        )
        record = RequestRecord(
            index=length,
            deleted_range=sent.deleted_range,
            truncated=sent.truncated,
            replaced_reads=sent.replaced_reads,
            estimated_tokens=tokens,
            reported_tokens=reported,
            overflow=tokens > self.window.context_window,
            condense=sent.condense,
        )
        self.records.append(record)
        return record

    def result(self) -> Replay:
        """Everything sent so far."""
        return Replay(self.policy.name, self.usage, self.window, tuple(self.records))


def replay(
    history: Sequence[Message],
    *,
    window: int | ContextWindowInfo,
    policy: str | Policy = PolicyName.CLINE,
    usage: str | UsageSource = UsageSource.RECORDED,
    requests: Sequence[ApiRequest] = (),
    ruler: Ruler | None = None,
    system: Any = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    progress: Progress | None = None,
) -> Replay:
    """Replay ``history`` request by request under ``policy`` (a name or a :class:`Policy`).

    ``requests`` are the requests the trace recorded (``Trace.requests`` or
    ``ClineTask.requests``): they give the recorded usage, each record's ``reported_tokens`` and
    the requests' times. With ``usage="recorded"`` a request whose predecessor recorded nothing
    makes no decision, as in the original. A policy given by name is built fresh and measures with
    ``ruler``; a :class:`Policy` instance must be fresh too. ``system`` and ``tools``, the system
    prompt and tool definitions when the trace has them (``Trace.system``, ``Trace.tools``), are
    counted in every estimate, and given to the session of ``"windowkeeper"``.
    """
    replayer = Replayer(
        history,
        window=window,
        policy=policy,
        usage=usage,
        requests=requests,
        ruler=ruler,
        system=system,
        tools=tools,
    )
    points = request_points(history)
    for done, length in enumerate(points, 1):
        replayer.request(length)
        if progress is not None:
            progress(done, len(points))
    return replayer.result()


class _RecordedRequests:
    """The recorded requests, found by the history length they sent."""

    def __init__(self, requests: Sequence[ApiRequest]) -> None:
        self._requests = list(requests)
        self._by_length: dict[int, ApiRequest] = {}
        for request in self._requests:
            index = request.conversation_history_index
            if index is not None:  # a retry records the same index again: the last one counts
                self._by_length[index + 2] = request
        # For previous(): the keys (index + 2) sorted, with the latest position among the
        # requests up to each key, so a lookup is a bisection instead of a scan.
        keyed = sorted(
            (request.conversation_history_index + 2, position)
            for position, request in enumerate(self._requests)
            if request.conversation_history_index is not None
        )
        self._keys = [key for key, _ in keyed]
        self._latest: list[int] = []
        for _, position in keyed:
            self._latest.append(max(position, self._latest[-1]) if self._latest else position)

    def at(self, length: int) -> ApiRequest | None:
        """The recorded request that sent ``history[:length]``."""
        return self._by_length.get(length)

    def previous(self, length: int) -> ApiRequest | None:
        """The last request made before the one that sends ``history[:length]``.

        The rule of :meth:`windowkeeper.cline._task.ClineTask.previous_request`.
        """
        below = bisect.bisect_left(self._keys, length)
        return self._requests[self._latest[below - 1]] if below else None


def _timestamp(
    earlier: ApiRequest | None, history: Sequence[Message], length: int, number: int
) -> int:
    """The time the original passes: the previous request's, else the latest message time found,
    else the request's number (a replay needs only the order)."""
    if earlier is not None and earlier.ts is not None:
        return earlier.ts
    ts = history[length - 1].get("ts") if length else None
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ts
    return number + 1


def _is_assistant(message: Message) -> bool:
    return message.get("role") == "assistant"


def _window_info(window: int | ContextWindowInfo) -> ContextWindowInfo:
    return as_window_info(window)
