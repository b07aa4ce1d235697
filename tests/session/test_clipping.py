"""Clipping oversized results: head and tail kept, the cut named, inputs untouched."""

from __future__ import annotations

import json

from windowkeeper import Clip
from windowkeeper.session._clipping import MIN_KEPT_CHARS, apply_clips, clip_text, clippable_blocks


class TestClipText:
    def test_short_text_is_unchanged(self) -> None:
        """A text within the budget comes back as it is."""
        assert clip_text("abc", 10) == "abc"

    def test_keeps_head_and_tail_and_names_the_cut(self) -> None:
        """The first and last characters stay; the notice says how many were cut."""
        text = "H" * 600 + "x" * 10_000 + "T" * 400
        clipped = clip_text(text, 1_000)
        assert clipped.startswith("H" * 600)
        assert clipped.endswith("T" * 400)
        assert "10,000 characters cut" in clipped
        assert len(clipped) < 1_100


class TestApplyClips:
    def _history(self) -> list[dict[str, object]]:
        return [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "run", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "y" * 5_000},
                    {"type": "text", "text": "z" * 3_000},
                ],
            },
        ]

    def test_clips_only_the_named_block_and_copies(self) -> None:
        """The clipped block is shortened in a copy; the input history is untouched."""
        history = self._history()
        before = json.dumps(history)
        output = apply_clips(history, [Clip(2, 0, 1_200)])
        assert json.dumps(history) == before
        assert output[0] is history[0]
        result = output[2]["content"][0]  # type: ignore[index]
        assert len(result["content"]) < 1_300
        assert output[2]["content"][1] is history[2]["content"][1]  # type: ignore[index]

    def test_out_of_range_clips_are_ignored(self) -> None:
        """A clip for a message that no longer exists (after a rollback) does nothing."""
        history = self._history()
        assert apply_clips(history, [Clip(9, 0, 10)]) == history

    def test_clippable_blocks_largest_first(self) -> None:
        """Only blocks above the minimum are offered, the largest first."""
        history = self._history()
        assert clippable_blocks(history[2]) == [(0, 5_000), (1, 3_000)]
        assert clippable_blocks({"role": "user", "content": "x" * (MIN_KEPT_CHARS - 1)}) == []
