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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..cline._task import ApiRequest
from ..core._messages import Message
from ..core._truncation import DeletedRange
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo
from ._condense_policy import ClineCondensePolicy
from ._policies import (
    ClinePolicy,
    CondenseStep,
    Policy,
    PolicyName,
    Ruler,
    Sent,
    Summarizer,
    WindowkeeperPolicy,
    _read_replacements,  # noqa: F401 - imported from here by bench/
    _window_info,
)

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

Progress = Callable[[int, int], None]
"""Called after each request with (requests done, requests in all)."""


class UsageSource(StrEnum):
    """Where the usage that drives each decision comes from."""

    RECORDED = "recorded"
    ESTIMATED = "estimated"


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
