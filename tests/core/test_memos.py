"""The memos behind the per-request speed give exactly the uncached results."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import MalformedMessageError, ensure_tool_results_follow_tool_use
from windowkeeper.core._messages import CheckMemo
from windowkeeper.core._pairing import RepairMemo

from ..conftest import examples
from ..strategies import TR, TU, A, U, conversations


class TestRepairMemo:
    @settings(max_examples=examples(60, deep=1_500), deadline=None)
    @given(st.lists(conversations(max_size=12), min_size=1, max_size=4))
    def test_same_result_as_the_pure_repair_across_calls(self, histories: list[list[dict]]) -> None:
        """Calls on growing and changing histories give what the pure function gives."""
        memo = RepairMemo()
        for history in histories:
            for end in range(len(history) + 1):
                prefix = history[:end]
                before = json.dumps(prefix)
                assert memo.repair(prefix) == ensure_tool_results_follow_tool_use(prefix)
                assert json.dumps(prefix) == before

    def test_reuses_the_repaired_object(self) -> None:
        """A pair seen before gives the same repaired message object (a stable prompt prefix)."""
        history = [U("task"), A([TU("a")]), U("plain")]
        memo = RepairMemo()
        first = memo.repair(history)
        assert memo.repair(history)[2] is first[2]
        assert first[2]["content"] == [TR("a", "result missing")]

    def test_a_replaced_message_is_repaired_again(self) -> None:
        """Putting a new dict in a message's place invalidates what was remembered for it."""
        history = [U("task"), A([TU("a")]), U("plain")]
        memo = RepairMemo()
        memo.repair(history)
        history[2] = U([TR("a", "done")])
        assert memo.repair(history)[2] is history[2]


class TestCheckMemo:
    def test_a_new_malformed_message_is_reported(self) -> None:
        """Messages not seen before are checked, with their path."""
        memo = CheckMemo()
        history = [U("task"), A("ok")]
        memo.check_history(history)
        history.append({"role": "user", "content": [{"text": "no type"}]})
        with pytest.raises(MalformedMessageError, match=r"history\[2\]\.content\[0\]"):
            memo.check_history(history)

    def test_a_replaced_message_is_checked_again(self) -> None:
        """Putting a new dict in a message's place (the documented way to edit) is checked."""
        memo = CheckMemo()
        history = [U("task"), A("ok")]
        memo.check_history(history)
        history[1] = {"role": "assistant", "content": 42}
        with pytest.raises(MalformedMessageError, match=r"history\[1\]\.content"):
            memo.check_history(history)

    def test_not_a_list(self) -> None:
        """The history itself must be a sequence of messages."""
        with pytest.raises(MalformedMessageError, match="expected a list"):
            CheckMemo().check_history("nope")


class TestOverwriteMemo:
    @settings(max_examples=examples(40, deep=1_000), deadline=None)
    @given(conversations(min_size=3, max_size=12), st.lists(st.integers(0, 11), max_size=6))
    def test_same_result_as_without_the_memo(self, history: list[dict], edits: list[int]) -> None:
        """Edits recorded between calls show up exactly as a fresh manager renders them."""
        from windowkeeper import ContextManager
        from windowkeeper.core._overwrites import text_update

        manager = ContextManager()
        for step, index in enumerate(edits):
            manager.get_truncated_messages(history, None)
            manager.store.record(index % len(history), 1, 0, text_update(step, f"edit {step}"))
            fresh = ContextManager()
            fresh.store = manager.store.copy()
            assert manager.get_truncated_messages(history, None) == fresh.get_truncated_messages(
                history, None
            )
