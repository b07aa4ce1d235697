"""Clipping, the last resort: the largest blocks keep their head and tail around a notice."""

from __future__ import annotations

from ...core._truncation import visible_start
from .._clipping import MIN_KEPT_CHARS, Clip, clippable_blocks
from ._protocol import Action, Draft, newest_turn

__all__ = ["ClipLargeBlocks"]

_FIRST_ESCALATION = 64  # characters: the third cut in a row of one block cuts at least this


class ClipLargeBlocks:
    """Clip one block per round while the request is over the limit itself.

    The newest turn's largest result first (every user message after the last assistant one:
    a tool result can be followed by the user's own text); when that is cut as far as it goes,
    the largest block of any other message still sent (the first pair stays whole). A block is
    never cut below ``MIN_KEPT_CHARS``, so the rounds end.
    """

    name = "clip-blocks"
    repeats = True
    goal = "limit"  # the last resort: only as far as the request must go

    def apply(self, draft: Draft) -> Action | None:
        clip = self._tighter(draft)
        if clip is None:
            return None
        draft.clip(clip)
        return Action(self.name, messages=(clip.message_index,), clips=(clip,))

    @staticmethod
    def _tighter(draft: Draft) -> Clip | None:
        history = draft.history
        current = {(clip.message_index, clip.block_index): clip.kept for clip in draft.clips}
        # Four characters per token over-cuts for typical text; the runner re-estimates anyway.
        excess_chars = int((draft.estimate - draft.limit) * 4) + 1
        newest = newest_turn(history)
        sent = range(max(visible_start(draft.deleted_range), 2), newest.start)
        for indices in (newest, sent):
            candidates = [
                (size, index, block_index)
                for index in indices
                for block_index, size in clippable_blocks(history[index])
            ]
            for size, index, block_index in sorted(candidates, reverse=True):
                kept_now = min(size, current.get((index, block_index), size))
                # Cutting the same block again and again means the estimate moves less than
                # four characters a token (a dense text, or a counter that credits little for
                # a cut): the cuts double from the third on, so the rounds stay few.
                again = draft.clips_in_a_row(index, block_index)
                cut = (
                    max(excess_chars, _FIRST_ESCALATION << (again - 1))
                    if again > 1
                    else excess_chars
                )
                kept = max(MIN_KEPT_CHARS, kept_now - cut)
                if kept < kept_now:
                    return Clip(index, block_index, kept)
        return None
