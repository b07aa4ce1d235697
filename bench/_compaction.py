"""windowkeeper's compaction policies for the evaluation, and the summaries they ask for.

- :class:`SessionPolicy` is a :class:`~windowkeeper.session._session.ContextSession` fed
  message by message, as :class:`~windowkeeper.tools._replay.WindowkeeperPolicy` feeds the
  default one, with compaction on in one of three shapes:

  - ``"out-of-band"`` (``windowkeeper-compact``): ``summarize=`` a summarizer that answers with
    :func:`~windowkeeper.tools._scripted_summary.scripted_summary` of the messages it folds.
    The call it stands for is the one the ready-made summarizers send
    (:func:`~windowkeeper.session._summary.summary_messages` of the request: the previous
    request with the instruction appended, once there is one), metered apart;
  - ``"ledger"`` (``windowkeeper-ledger``): ``summarize=True``, the ledger alone, no model;
  - ``"in-band"`` (``windowkeeper-inband``): ``summarize="in-band"``. When a prepared request
    says ``summary_requested``, that request (the instruction on its last user message) is sent
    and metered as a request of the conversation, the scripted summary of it is appended as the
    reply, and the next ``prepare()`` is the continuation. Available only when
    :class:`~windowkeeper.session._session.Prepared` has that field (:data:`IN_BAND`).

- :class:`Summaries` collects the summaries a policy got during one request, for the meter:
  in-band ones by their output alone (the ask is a request of the conversation), out-of-band
  ones with the size of their call. Writing a scripted summary stands for the model's time, so
  it is timed apart and left out of the policy's per-request time where it ran inside it.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from windowkeeper import ContextOverflowError, ContextWindowInfo
from windowkeeper.core._messages import Message
from windowkeeper.core._usage import TokenUsage
from windowkeeper.session._session import ContextSession, Prepared
from windowkeeper.session._summary import (
    SummaryRequest,
    shared_prefix_messages,
    summary_messages,
)
from windowkeeper.tools._replay import CondenseStep, Ruler, Sent, _read_replacements
from windowkeeper.tools._scripted_summary import scripted_summary

__all__ = ["FOLDS", "IN_BAND", "NAMES", "SessionPolicy", "Shape", "Summaries"]

FOLDS = frozenset({"summarize", "summarize-in-band", "refold"})
"""The actions after which a request carries a new continuation (a fold)."""

IN_BAND = "summary_requested" in {field.name for field in dataclasses.fields(Prepared)}
"""Whether this windowkeeper's ``prepare()`` can ask for a summary in-band."""

Shape = Literal["out-of-band", "ledger", "in-band"]
NAMES: Mapping[str, str] = {
    "out-of-band": "windowkeeper-compact",
    "ledger": "windowkeeper-ledger",
    "in-band": "windowkeeper-inband",
}
"""The policy name of each shape."""


class Summaries:
    """The summaries of one replay, taken request by request (:meth:`take`).

    ``timed``: whether the summarizer runs inside the policy's timed call (its time is then
    reported by :meth:`take` to be subtracted).
    """

    def __init__(self, ruler: Ruler, *, timed: bool) -> None:
        self._ruler = ruler
        self._timed = timed
        self._in_band: list[str] = []
        self._out_of_band: list[tuple[SummaryRequest, str]] = []
        self._model_ms = 0.0

    def for_messages(self, messages: Sequence[Message]) -> str:
        """An in-band summary: the answer to a request whose last user message asks for one."""
        started = time.perf_counter()
        text = scripted_summary(messages)
        self._model_ms += (time.perf_counter() - started) * 1000
        self._in_band.append(text)
        return text

    def for_request(self, request: SummaryRequest) -> str:
        """An out-of-band summary: the summarizer a session is given. It writes from what the
        call sends: the previous request with the instruction when the session offers it (as
        an in-band ask does), else the folded messages."""
        started = time.perf_counter()
        shared = shared_prefix_messages(request)
        text = scripted_summary(shared if shared is not None else request.messages)
        self._model_ms += (time.perf_counter() - started) * 1000
        self._out_of_band.append((request, text))
        return text

    @staticmethod
    def _system(request: SummaryRequest) -> object:
        """The system prompt the call sends: the conversation's with the shared prefix."""
        return request.system if shared_prefix_messages(request) is not None else None

    def _tokens(self, text: str) -> int:
        return self._ruler.count([{"role": "assistant", "content": text}])

    def take(self) -> tuple[list[int], list[tuple[int, int, int]], float]:
        """Since the last call: the output tokens of each in-band summary; (input, output,
        cached input) tokens of each out-of-band call; the summarizer's time inside the timed
        call (ms).

        An out-of-band call is metered as the ready-made summarizers send it
        (:func:`summary_messages`). When that is the previous request with the instruction
        appended, all of it but the instruction is the previous request, unchanged, with its
        system prompt: under the bench's cache model (leading messages, then leading blocks,
        equal to the previous request's) it is read from the cache, as an in-band ask's prefix
        is; the instruction is new.
        """
        in_band = [self._tokens(text) for text in self._in_band]
        out_of_band = [
            (
                self._ruler.count(summary_messages(request), system=self._system(request)),
                self._tokens(text),
                self._ruler.count(list(request.prefix), system=request.system)
                if shared_prefix_messages(request) is not None
                else 0,
            )
            for request, text in self._out_of_band
        ]
        model_ms = self._model_ms if self._timed else 0.0
        self._in_band.clear()
        self._out_of_band.clear()
        self._model_ms = 0.0
        return in_band, out_of_band, model_ms


class SessionPolicy:
    """A session with compaction on, in one of the shapes of the module docstring."""

    def __init__(
        self,
        window: ContextWindowInfo,
        shape: Shape,
        *,
        counter: Ruler | None = None,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        in_band_at: float | None = None,
        keep_recent_tokens: int | None = None,
    ) -> None:
        if shape == "in-band" and not IN_BAND:
            raise NotImplementedError("this windowkeeper's prepare() has no summary_requested")
        self.shape = shape
        self.system = system
        self.tools = tools
        self.summaries = Summaries(Ruler(), timed=True)
        summarize: Any = {
            "out-of-band": self.summaries.for_request,
            "ledger": True,
            "in-band": "in-band",
        }[shape]
        self._now = 0
        self.session = ContextSession(
            window,
            counter=counter,
            clock=lambda: self._now,
            summarize=summarize,
            in_band_at=in_band_at if shape == "in-band" else None,
            keep_recent_tokens=keep_recent_tokens,
        )
        self._fed = 0
        self._sent = Sent([], None, False, 0)  # the last prepared request
        self.steps: Counter[str] = Counter()
        """How often each step acted (``Prepared.actions``), over the replay."""
        self.folded: list[bool] = []
        """Per prepared request (one a record of the replay), whether it folded; taken by the
        runner after each request."""
        self.asks = 0
        self.reasks = 0
        """In-band asks on a request that folded, or on the one right after a fold."""
        self.summary_folds = 0
        self.ledger_folds = 0
        """Folds whose continuation carries a model's summary, and those with the ledger alone."""
        self.pauses: list[tuple[str, int]] = []
        """``summarize-paused`` / ``summarize-resumed`` actions, with the history length."""
        self._folded_last = False

    @property
    def name(self) -> str:
        return NAMES[self.shape]

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """Record the previous request's usage, append what is new, and prepare the request
        (in-band: and the continuation after the summary it asked for)."""
        session = self.session
        if usage is not None:
            session.record_usage(usage, timestamp=timestamp)
        session.extend(history[self._fed :])
        self._fed = len(history)
        self._now = timestamp
        prepared = self._prepare()
        if not isinstance(prepared, Prepared):
            return prepared
        asked = getattr(prepared, "summary_requested", None)
        if not asked:
            return self._sent
        # The interface is new: the request itself, a SummaryRequest with its body, or a flag
        # saying the prepared messages are the ask.
        body = getattr(asked, "body", None)
        ask = (
            list(body)
            if body
            else list(asked)
            if isinstance(asked, list | tuple)
            else prepared.messages
        )
        first = dataclasses.replace(self._sent, messages=ask, condense=CondenseStep.SUMMARIZE)
        summary = self.summaries.for_messages(ask)
        session.append({"role": "assistant", "content": [{"type": "text", "text": summary}]})
        continued = self._prepare()
        follow_up = (
            dataclasses.replace(self._sent, truncated=True, condense=CondenseStep.CONTINUATION)
            if isinstance(continued, Prepared)
            else continued
        )
        return dataclasses.replace(first, follow_up=follow_up)

    def _prepare(self) -> Prepared | Sent:
        """The prepared request (kept as ``_sent`` too), or the refusal when nothing fits."""
        session = self.session
        store = session.manager.store
        before = _read_replacements(store)
        range_before = session.deleted_range
        try:
            prepared = session.prepare(system=self.system, tools=self.tools)
        except ContextOverflowError as error:
            self.folded.append(False)
            self._folded_last = False
            truncated = session.deleted_range != range_before
            return Sent([], session.deleted_range, truncated, 0, error.estimated_tokens, error)
        replaced = _read_replacements(store) - before
        self.steps.update(action.step for action in prepared.actions)
        folded = any(action.step in FOLDS for action in prepared.actions)
        if prepared.summary_requested:
            self.asks += 1
            self.reasks += folded or self._folded_last
        self._folded_last = folded
        self.folded.append(folded)
        if folded:
            fold = session.state.compaction.fold
            carried = fold is not None and fold.summary is not None
            self.summary_folds += carried
            self.ledger_folds += not carried
        length = len(session.history)
        self.pauses += [
            (action.step, length)
            for action in prepared.actions
            if action.step in ("summarize-paused", "summarize-resumed")
        ]
        self._sent = Sent(
            prepared.messages, prepared.deleted_range, prepared.range_changed, replaced
        )
        return prepared
