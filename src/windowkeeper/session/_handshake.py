"""The async summary handshake: ``aprepare`` awaits the summary a fold asked for.

A summarize step with an async summarizer cannot call it from the synchronous pipeline: it
raises :class:`~windowkeeper.session.steps.SummaryNeeded` with its request, the session undoes
that attempt, :func:`await_summary` awaits the summarizer and leaves its answer on the step
(``ready``), and the request is prepared again with it.
"""

from __future__ import annotations

from .._errors import ConfigurationError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._compaction import Compaction
    from ._summary import SummaryRequest

__all__ = ["await_summary"]


async def await_summary(compaction: Compaction | None, request: SummaryRequest) -> None:
    """Await the summarizer on ``request`` within its timeout; a failure leaves the ledger alone."""
    import asyncio  # noqa: PLC0415 - an async session's: asyncio costs more than the rest

    from .steps._summarize import failure_reason  # noqa: PLC0415

    step = compaction.step if compaction is not None else None
    if step is None or step.summarizer is None:  # pragma: no cover - only the step raises it
        raise ConfigurationError("a step asked for a summary, but none can be awaited")
    step.failure = None
    try:
        summary = await asyncio.wait_for(
            step.summarizer(request),  # type: ignore[arg-type]
            step.timeout,
        )
    except Exception as error:  # no summary: the ledger stands in
        step.last_error = error
        step.failure = failure_reason(error, step.timeout)
        summary = None
    step.ready = (request.messages, summary if isinstance(summary, str) else None)
