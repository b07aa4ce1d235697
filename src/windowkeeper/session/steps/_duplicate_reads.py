"""The original's remedy, first: older copies of a file's contents become a notice."""

from __future__ import annotations

from ._protocol import Action, Draft

__all__ = ["ReplaceDuplicateReads"]


class ReplaceDuplicateReads:
    """Replace every older copy of a duplicated file read in the visible part, once per request.

    The session's read detector (the manager's) decides what a read is; the edits are the
    original's, dated by the request.
    """

    name = "duplicate-reads"
    repeats = False

    def apply(self, draft: Draft) -> Action | None:
        altered = draft.replace_duplicate_reads()
        if not altered:
            return None
        return Action(self.name, messages=altered)
