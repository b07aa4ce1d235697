"""Unique tool_use ids: what is decided incrementally equals what a fresh look decides."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core._incremental import Growing
from windowkeeper.session._tool_ids import UniqueToolIds

from ..conftest import examples

IDS = st.sampled_from(["call_0", "call_1", "call_0_2"])


@st.composite
def turns(draw: st.DrawFn) -> list[dict[str, Any]]:
    """An assistant message calling tools with reused ids, then the user message answering."""
    ids = draw(st.lists(IDS, min_size=1, max_size=3))
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": i, "name": "x", "input": {}} for i in ids],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids],
        },
    ]


class TestUniqueToolIds:
    @settings(max_examples=examples(60, deep=600), deadline=None)
    @given(st.lists(st.tuples(st.integers(0, 12), st.lists(turns(), max_size=3)), max_size=8))
    def test_cuts_and_appends_give_what_a_fresh_look_gives(
        self, steps: list[tuple[int, list[list[dict[str, Any]]]]]
    ) -> None:
        """After any cut of the history and new turns, the renames equal a fresh memo's (the
        ids a cut message had added are free again)."""
        history = Growing([{"role": "user", "content": "task"}])
        memo = UniqueToolIds()
        for cut, added in steps:
            if cut < len(history):
                del history[max(cut, 1) :]
            for turn in added:
                history.extend(turn)
            assert memo.apply(history) == UniqueToolIds().apply(list(history))
            assert memo.renamed() == _fresh_renames(history)


def _fresh_renames(history: list[dict[str, Any]]) -> dict[int, dict[int, str]]:
    fresh = UniqueToolIds()
    fresh.apply(list(history))
    return fresh.renamed()
