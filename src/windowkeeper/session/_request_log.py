"""What preparing one request did: the actions in order, and the totals ``Prepared`` reports."""

from __future__ import annotations

from collections.abc import Iterable

from ._clipping import Clip
from .steps import Action, ReplaceDuplicateReads

__all__ = ["RequestLog"]


class RequestLog:
    """The actions of one ``prepare`` and what they add up to: reads replaced, clips, range.

    Each stage notes its actions the way it reports them: :meth:`note` only lists them,
    :meth:`arrived` adds the clips made on arrival, :meth:`shrunk` what the shrink steps
    changed (replaced reads, a grown range, clips).
    """

    __slots__ = ("actions", "clips", "range_changed", "replaced")

    def __init__(self, actions: Iterable[Action] = ()) -> None:
        self.actions: list[Action] = list(actions)
        self.clips: dict[tuple[int, int], Clip] = {}
        self.replaced: set[int] = set()
        self.range_changed = False

    def note(self, *actions: Action | None) -> None:
        """List ``actions`` (None skipped) without counting anything more."""
        self.actions += [action for action in actions if action is not None]

    def arrived(self, action: Action | None) -> None:
        """The clips made on arrival."""
        if action is not None:
            self.actions.append(action)
            self.clips.update({(c.message_index, c.block_index): c for c in action.clips})

    def shrunk(self, actions: Iterable[Action]) -> None:
        """The pre-flight's actions: the reads they replaced, the range and clips they changed."""
        for action in actions:
            self.actions.append(action)
            if action.step == ReplaceDuplicateReads.name:
                self.replaced.update(action.messages)
            self.range_changed = self.range_changed or action.deleted_range is not None
            for clip in action.clips:
                self.clips[clip.message_index, clip.block_index] = clip
