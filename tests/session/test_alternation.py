"""Runs of one role merged, so what the session sends alternates as providers expect."""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import validate_messages
from windowkeeper.session._alternation import RoleMerger, merge_same_roles

from ..strategies import TR, TU, A, T, U, conversations


def test_alternating_messages_are_shared() -> None:
    """Nothing to merge: the same message objects come back."""
    history = [U("task"), A("ok"), U("more")]
    merged = merge_same_roles(history)
    assert merged == history
    assert all(a is b for a, b in zip(merged, history, strict=True))


def test_two_user_messages_become_one() -> None:
    """A demonstration followed by the task (as in a SWE-agent trace) is sent as one message."""
    history = [U("demonstration"), U([T("the task")]), A("ok")]
    merged = merge_same_roles(history)
    assert merged == [U([T("demonstration"), T("the task")]), A("ok")]
    assert validate_messages(merged) == []


def test_tool_results_move_to_the_front_and_calls_stay_answered() -> None:
    """Merged assistant calls are answered; merged tool_results lead their message."""
    history = [
        U("task"),
        A([TU("a")]),
        A([TU("b")]),
        U([T("note")]),
        U([TR("b"), TR("a")]),
    ]
    before = json.dumps(history)
    merged = merge_same_roles(history)
    assert json.dumps(history) == before
    assert [m["role"] for m in merged] == ["user", "assistant", "user"]
    assert [b["type"] for b in merged[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert validate_messages(merged) == []


@settings(max_examples=100, deadline=None)
@given(conversations(max_size=10), st.lists(st.integers(0, 9), max_size=3))
def test_merged_requests_alternate(history: list[dict[str, Any]], repeats: list[int]) -> None:
    """Whatever runs of one role a history holds, the merged request alternates roles."""
    odd = list(history)
    for at in repeats:
        if odd:
            odd.insert(at % len(odd), dict(odd[at % len(odd)]))
    merged = merge_same_roles(odd)
    roles = [m["role"] for m in merged]
    assert all(a != b for a, b in itertools.pairwise(roles))
    memo = RoleMerger()
    for end in range(len(odd) + 1):
        assert memo.merge(odd[:end]) == merge_same_roles(odd[:end])


@settings(max_examples=100, deadline=None)
@given(
    conversations(max_size=10),
    st.lists(st.tuples(st.integers(0, 9), st.integers(0, 12)), min_size=1, max_size=6),
)
def test_the_memo_merges_like_the_function_whatever_changes(
    history: list[dict[str, Any]], edits: list[tuple[int, int]]
) -> None:
    """Between requests, messages are repeated, replaced, dropped or appended anywhere: each
    request is merged as :func:`merge_same_roles` merges it alone."""
    memo = RoleMerger()
    messages = list(history)
    for at, cut in edits:
        if messages:
            where = at % len(messages)
            messages.insert(where, dict(messages[where]))  # a run of one role, or a longer one
            if cut % 3 == 0:
                messages[where] = dict(messages[where])  # a new object in an old place
        messages = messages[: max(len(messages) - cut % 2, 0)]
        assert memo.merge(messages) == merge_same_roles(messages)


def test_a_merged_run_stays_the_same_object_while_the_history_grows() -> None:
    """Two assistant messages in a row early in a task: later requests send the very same merged
    message, so the memos after the merge (and the prompt cache) see an unchanged prefix."""
    history = [U("task"), A("I will start."), A([TU("a")]), U([TR("a")])]
    memo = RoleMerger()
    first = memo.merge(history)
    history += [A([TU("b")]), U([TR("b")])]
    second = memo.merge(history)
    assert second == merge_same_roles(history)
    assert [m["role"] for m in second] == ["user", "assistant", "user", "assistant", "user"]
    assert second[1] is first[1]
    assert second[1]["content"] == [T("I will start."), TU("a")]
