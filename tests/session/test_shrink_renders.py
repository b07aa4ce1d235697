"""Every render a shrink makes through the overwrite memo is what a render without it gives.

A shrink masks outputs and replaces duplicate reads in the middle of the request, then grows
the hidden range, re-rendering after each step; the overwrite memo patches its last output
instead of visiting every edited message. Here each of a session's renders (steady turns and
every step of every shrink) is compared with the same history, start and store rendered
without the memo.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import ContextSession
from windowkeeper.core._visible import OverwriteMemo, _visible

from ..conftest import examples
from ..strategies import conversations
from .test_session_properties import CharCounter, play


def _checked_visible(renders: list[int]) -> Any:
    """:meth:`OverwriteMemo.visible`, checked against a render without the memo on every call."""
    memoized = OverwriteMemo.visible

    def checked(memo: OverwriteMemo, history: Any, start: int, store: Any) -> Any:
        sent = memoized(memo, history, start, store)
        assert sent == _visible(history, start, store, None)
        renders.append(len(sent[0]))
        return sent

    return patch.object(OverwriteMemo, "visible", checked)


@settings(max_examples=examples(60, deep=1_500), deadline=None)
@given(
    conversations(min_size=5, max_size=24, ends_with="user"),
    st.integers(500, 2_000),
    st.sampled_from([0, 1, 2, None]),
)
def test_each_render_of_a_shrinking_session_is_a_fresh_render(
    history: list[dict[str, Any]], window: int, keep_recent: int | None
) -> None:
    """Turn by turn, with the shrinks a small window forces, the memo never sends a stale copy."""
    session = ContextSession(
        window,
        counter=CharCounter(),
        mask_keep_recent=keep_recent,
        clock=iter(range(10**6)).__next__,
    )
    renders: list[int] = []
    with _checked_visible(renders):
        play(session, history, 0, len(history))
    assert renders  # every request renders through the memo
