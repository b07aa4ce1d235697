"""The overwrite memo brought up to date in place gives what a fresh render gives, step by step.

A shrink records edits in the middle of the sent part and grows the hidden range between two
renders; the memo then patches its last output instead of visiting every edited message. Each
step here is checked against :func:`truncated_messages` without any memo.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.core._overwrites import CONTENT, INPUT, OverwriteStore, text_update
from windowkeeper.core._visible import OverwriteMemo, truncated_messages

from ..builders import T
from ..conftest import examples
from ..strategies import A, U, conversations

_steps = st.lists(
    st.one_of(
        st.tuples(st.just("edit"), st.integers(0, 15), st.integers(0, 3), st.booleans()),
        st.tuples(st.just("hide"), st.integers(-3, 4)),  # a rollback moves it back
        st.tuples(st.just("grow"), st.integers(1, 3)),
    ),
    max_size=12,
)


@settings(max_examples=examples(150, deep=3_000), deadline=None)
@given(conversations(min_size=4, max_size=16), st.integers(3, 8), _steps)
def test_same_output_as_a_fresh_render_after_every_step(
    history: list[dict], shown: int, steps: list[tuple]
) -> None:
    """Edits, a hidden range that grows (or goes back) and appended messages, in any order,
    render as from scratch."""
    store = OverwriteStore()
    memo = OverwriteMemo()
    length = min(shown, len(history))
    end = 1  # no range yet
    for stamp, step in enumerate(steps):
        if step[0] == "edit":
            _, index, block, as_input = step
            update = text_update(stamp, f"edit {stamp}", kind=INPUT if as_input else CONTENT)
            store.record(index % len(history), 1, block, update)
        elif step[0] == "hide":
            end = max(1, end + step[1])
        else:
            length = min(len(history), length + step[1])
        sent = history[:length]
        deleted = (2, end) if end > 1 else None
        expected = truncated_messages(sent, deleted, store)
        assert truncated_messages(sent, deleted, store, edits=memo) == expected


def test_a_grown_range_keeps_the_copies_it_still_sends() -> None:
    """After the range grows, the edited messages still sent are the same objects as before."""
    history = [U([T("task")]), A([T("ok")])]
    for turn in range(4):
        history += [U([T(f"result {turn}")]), A([T(f"answer {turn}")])]
    store = OverwriteStore()
    for index in (0, 3, 6, 8):
        store.record(index, 1, 0, text_update(1, f"edit {index}"))
    memo = OverwriteMemo()
    first = truncated_messages(history, None, store, edits=memo)
    second = truncated_messages(history, (2, 3), store, edits=memo)
    assert second == truncated_messages(history, (2, 3), store)
    assert second[0] is first[0]
    assert second[2 + 6 - 4] is first[6]  # message 6: position 6, then position 4
    assert second[2 + 8 - 4] is first[8]
    assert 3 not in memo._copies  # hidden now: its copy is forgotten
