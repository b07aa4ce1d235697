"""The memos behind the per-request speed give exactly the uncached results."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import MalformedMessageError, ensure_tool_results_follow_tool_use
from windowkeeper.core._messages import CheckMemo
from windowkeeper.core._pairing import RepairMemo

from ..builders import T
from ..conftest import examples
from ..strategies import TR, TU, A, U, conversations


def _six_turns() -> list[dict]:
    """Task, reply, and two more user/assistant pairs: each a single text block."""
    texts = ("task", "ok", "one", "two", "three", "four")
    return [(U if index % 2 == 0 else A)([T(text)]) for index, text in enumerate(texts)]


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

    def test_forgets_pairs_no_longer_sent(self) -> None:
        """A request whose newest messages are new objects every time leaves nothing behind:
        what the memo keeps stays proportional to the list, not to the calls made."""
        memo = RepairMemo()
        history = [U("task"), A([TU("a")]), U([TR("a", "done")])]
        for turn in range(500):
            memo.repair([*history, A([TU(f"b{turn}")]), U([TR(f"b{turn}", "ok")])])
        assert len(memo._pairs) <= 2 * 5 + 64


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

    def test_an_edit_copies_only_the_message_it_edits(self) -> None:
        """Other edited messages keep their copies, object for object, across an edit."""
        from windowkeeper import ContextManager
        from windowkeeper.core._overwrites import text_update

        history = _six_turns()
        manager = ContextManager()
        manager.store.record(2, 1, 0, text_update(1, "edited one"))
        manager.store.record(4, 1, 0, text_update(1, "edited three"))
        first = manager.get_truncated_messages(history, None)
        manager.store.record(3, 1, 0, text_update(2, "edited two"))
        second = manager.get_truncated_messages(history, None)
        assert second[2] is first[2]
        assert second[4] is first[4]
        assert second[3] is not first[3]
        assert second[3]["content"] == [{"type": "text", "text": "edited two"}]

    def test_a_rollback_renders_again(self) -> None:
        """After a rollback an edit no longer in the store is no longer sent."""
        from windowkeeper import ContextManager
        from windowkeeper.core._overwrites import text_update

        history = [U([T("task")]), A([T("ok")]), U([T("one")]), A([T("two")])]
        manager = ContextManager()
        manager.store.record(2, 1, 0, text_update(1, "first"))
        manager.get_truncated_messages(history, None)
        manager.store.record(2, 1, 0, text_update(5, "second"))
        assert manager.get_truncated_messages(history, None)[2]["content"][0]["text"] == "second"
        manager.store.rollback(1)
        assert manager.get_truncated_messages(history, None)[2]["content"][0]["text"] == "first"

    def test_copies_of_hidden_messages_are_forgotten(self) -> None:
        """Once a message is in the hidden range, the memo holds nothing for it."""
        from windowkeeper import ContextManager
        from windowkeeper.core._overwrites import text_update

        history = _six_turns()
        manager = ContextManager()
        for index in range(6):
            manager.store.record(index, 1, 0, text_update(1, f"edit {index}"))
        manager.get_truncated_messages(history, None)
        manager.get_truncated_messages(history, (2, 3))
        kept = manager._edits._copies  # what the memo holds is the point
        assert sorted(kept) == [0, 1, 4, 5]
