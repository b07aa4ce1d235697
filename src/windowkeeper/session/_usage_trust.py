"""Reported usage checked against the estimate of what was sent, before the session believes it.

The session decides from the usage the provider reports for the previous request, and calibrates
its estimator from it. A backend that reports too little (a test model without usage, a stream
whose usage is read before it ended, a server that leaves cached prompt tokens out of the count)
makes it believe a request fits when it does not; one that reports too much (a run's total
instead of the last request's) makes it cut what fits. So each report is compared with two
numbers of the session's own about the request it describes:

- far below: fewer than :data:`LOW_SHARE` of the *floor*, the request's text (thinking and images
  left out, as a provider may not count them) at the ratio learnt from trusted reports (never above the starting one), and at
  least :data:`LOW_SLACK` tokens short of it;
- far above (for a request the counter estimates at all): more than the whole window (no provider accepted such a request), and more than
  :data:`HIGH_FACTOR` times the session's estimate plus a quarter of the window (what a hidden
  system prompt or tool list can add).

Such a report is not used to decide nor to calibrate (the session then goes by its own estimate),
the next request's actions say so (``usage-distrusted``), and a :class:`DistrustedUsageWarning`
names the likely cause, once per session.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import DistrustedUsageWarning
from .._record import record
from ..core._messages import Message
from ..core._usage import TokenUsage
from .steps import Action

__all__ = ["DISTRUSTED", "DistrustedUsageWarning", "UsageTrust", "Verdict"]

DISTRUSTED = "usage-distrusted"
LOW_SHARE = 0.5
LOW_SLACK = 500
HIGH_FACTOR = 4
_NOTHING_MEASURED = 100  # a report this small for a request that is not: nothing was measured


@record(frozen=True, slots=True)
class Verdict:
    """Why a report was not believed: the input tokens reported and the session's numbers."""

    reported: int  # input + cache writes + cache reads
    estimate: int  # the session's estimate of the request's input
    floor: int  # the least the request's text is taken to cost
    cause: str

    def action(self, usage: TokenUsage) -> Action:
        """The action the next request reports: nothing freed, the estimate before and after."""
        return Action(
            DISTRUSTED, tokens_before=self.estimate, tokens_after=self.estimate, usage=usage
        )


def _cause(usage: TokenUsage, reported: int, floor: int, high: bool, *, bare: bool) -> str:
    if high and bare:  # a replayed transcript: the system prompt and tools were never recorded
        return (
            "a system prompt or tools sent to the model but not given to prepare() (the"
            " estimate leaves them out), or usage summed over several requests (a run's total"
            " instead of the last request's), is the likely cause"
        )
    if high:
        return (
            "usage summed over several requests (a run's total instead of the last request's)"
            " is the likely cause"
        )
    if reported < _NOTHING_MEASURED and floor >= 2 * _NOTHING_MEASURED:
        return (
            "the backend measured almost nothing: a test or function model without usage, or a"
            " stream's usage read before the stream ended"
        )
    if not usage.cache_reads and not usage.cache_writes:
        return (
            "cached prompt tokens left out of the count is the likely cause (record the"
            " provider's usage object itself: usage_from_sdk counts cache reads and writes)"
        )
    return "the backend reports only part of the prompt"


class UsageTrust:
    """One session's check of reported usage, and what it still has to report."""

    __slots__ = ("_pending", "_warned")

    def __init__(self) -> None:
        self._warned = False
        self._pending: Action | None = None

    def judge(
        self,
        usage: TokenUsage,
        messages: Sequence[Message],
        *,
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        counter: Any,
        context_window: int,
    ) -> Verdict | None:
        """None when ``usage`` is believable for a request that sent these; else why not.

        Call it before the counter observes ``usage``: the estimate it takes is the one the
        request was prepared with. A distrusted report is kept for :meth:`pending` and warned
        about (the first time only).
        """
        reported = usage.tokens_in + usage.cache_writes + usage.cache_reads
        estimate = counter.count(messages, system=system, tools=tools)
        least = getattr(counter, "least_tokens", None)
        floor = least(messages, system=system, tools=tools) if callable(least) else estimate // 2
        high = estimate > 0 and reported > max(
            HIGH_FACTOR * estimate + context_window // 4, context_window
        )
        low = reported < LOW_SHARE * floor and floor - reported >= LOW_SLACK
        if not (high or low):
            self._pending = None  # a later report of the same request supersedes a distrusted one
            return None
        verdict = Verdict(
            reported,
            estimate,
            floor,
            _cause(usage, reported, floor, high, bare=system is None and not tools),
        )
        self._pending = verdict.action(usage)
        if not self._warned:
            self._warned = True
            side = "above" if high else "below"
            warnings.warn(
                f"reported usage ({reported:,} input tokens) is far {side} the estimate of what"
                f" was sent (about {estimate:,}): not used to decide or calibrate; "
                f"{verdict.cause}. Warned once per session.",
                DistrustedUsageWarning,
                stacklevel=4,  # judge <- recorded_usage <- record_usage <- the caller
            )
        return verdict

    def pending(self) -> tuple[Action, ...]:
        """The ``usage-distrusted`` action the next request reports (at most one)."""
        return (self._pending,) if self._pending is not None else ()

    def forget(self) -> None:
        """Done with the pending action: reported, or moot (the history was cut or rolled back)."""
        self._pending = None
