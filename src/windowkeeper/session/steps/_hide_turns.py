"""Hiding: the range grows by the original's keeps, and message 1 gets the truncation notice."""

from __future__ import annotations

from ...core._truncation import Keep, keep_for, next_range
from ._protocol import Action, Draft, newest_turn

__all__ = ["HideOldTurns"]


class HideOldTurns:
    """Hide older turns while the request is over its target, each round hiding more.

    A round takes half of the rest (a quarter when half the request would still be over the
    limit); on a short rest, where half or a quarter would hide nothing, all but the newest
    turn. The answer the newest turn replies to is never hidden (its tool results are in it).
    The first time, message 1 gets the original's truncation notice.
    """

    name = "hide-turns"
    repeats = True

    def apply(self, draft: Draft) -> Action | None:
        view = draft.view
        current = draft.deleted_range
        end_now = current[1] if current is not None else 1
        ceiling = newest_turn(view).start - 1
        first = keep_for(draft.estimate, draft.limit)
        # next_range steps back over a run of user messages: a candidate that does not end
        # later than the current range is no move.
        candidate = next(
            (
                grown
                for keep in (first, Keep.QUARTER, Keep.LAST_TWO)
                if end_now < (grown := next_range(view, current, keep))[1] < ceiling
            ),
            None,
        )
        if candidate is None:
            return None
        draft.add_truncation_notice()
        draft.hide(candidate)
        return Action(self.name, deleted_range=candidate)
