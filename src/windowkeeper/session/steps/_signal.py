"""The signal between an async summarize step and ``aprepare``: a summary must be awaited.

Its own module, so that a session catches it without loading the summarize step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .._summary import SummaryRequest

__all__ = ["SummaryNeeded"]


class SummaryNeeded(Exception):  # noqa: N818 - a signal between the step and aprepare, not an error
    """Raised by the step for an async summarizer: ``aprepare`` awaits it, then prepares again."""

    def __init__(self, request: SummaryRequest) -> None:
        super().__init__("an async summarizer must be awaited: use aprepare")
        self.request = request
