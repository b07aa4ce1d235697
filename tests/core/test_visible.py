"""What is sent: get_truncated_messages (cases 12-16, Appendix B1, B3, B4 and B8)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from windowkeeper import ContextManager, EditType, OverwriteStore
from windowkeeper.core._notices import (
    CONTINUE_NOTICE,
    DUPLICATE_READ_NOTICE,
    RESULT_MISSING,
    TRUNCATION_NOTICE,
)
from windowkeeper.core._overwrites import text_update
from windowkeeper.core._visible import truncated_messages

from ..strategies import TR, TU, A, T, U, create_messages

Message = dict[str, Any]


def _send(history: list[Message], deleted_range: tuple[int, int] | None) -> list[Message]:
    return ContextManager().get_truncated_messages(history, deleted_range)


class TestGetTruncatedMessages:
    """Cases 12-16 of Cline's getTruncatedMessages tests."""

    def test_no_range_returns_the_history(self) -> None:
        """Case 12: without a range the three messages come back as they are."""
        history = create_messages(3)
        assert _send(history, None) == history

    def test_range_start_is_ignored(self) -> None:
        """Case 13: range (1, 3) still keeps messages 0 and 1 and resumes at 4."""
        history = create_messages(5)
        assert _send(history, (1, 3)) == [history[0], history[1], history[4]]

    def test_range_one_to_two(self) -> None:
        """Case 14: range (1, 2) on four messages sends messages 0, 1 and 3."""
        history = create_messages(4)
        assert _send(history, (1, 2)) == [history[0], history[1], history[3]]

    def test_range_two_to_three(self) -> None:
        """Case 15: range (2, 3) on five messages sends 0, 1, 4 as user, assistant, user."""
        history = create_messages(5)
        result = _send(history, (2, 3))
        assert result == [history[0], history[1], history[4]]
        assert [message["role"] for message in result] == ["user", "assistant", "user"]

    def test_orphaned_tool_result_is_removed(self) -> None:
        """Case 16: the first visible message loses its tool_result whose tool_use is hidden."""
        history = [
            U("Initial task"),
            A("Response 1"),
            A(
                [
                    T("Using a tool"),
                    {
                        "type": "tool_use",
                        "id": "tool_123",
                        "name": "read_file",
                        "input": {"path": "test.ts"},
                    },
                ]
            ),
            U([TR("tool_123", "file content here"), T("Additional user text")]),
            A("Response 2"),
        ]
        result = _send(history, (2, 2))
        assert len(result) == 4
        assert result[2] == U([T("Additional user text")])
        assert history[3]["content"][0]["type"] == "tool_result"


class TestVisibleSlice:
    """How the visible rest is cut and shared."""

    def test_appendix_b1_contents(self) -> None:
        """B1: ten messages with range (2, 5) send the task, message 1 and messages 6-9."""
        contents = [message["content"] for message in _send(create_messages(10), (2, 5))]
        assert contents == [
            "Initial task message",
            "Message 1",
            "Message 6",
            "Message 7",
            "Message 8",
            "Message 9",
        ]

    @pytest.mark.parametrize("count", [0, 1])
    def test_tiny_history_is_returned_as_a_new_list(self, count: int) -> None:
        """With at most one message the history is sent as is, in a list of its own."""
        history = create_messages(count)
        result = _send(history, (2, 7))
        assert result == history
        assert result is not history

    def test_range_past_the_end_keeps_the_first_pair(self) -> None:
        """A range ending past the history still sends messages 0 and 1."""
        history = create_messages(6)
        assert _send(history, (2, 40)) == history[:2]

    def test_unchanged_messages_are_shared_not_copied(self) -> None:
        """Messages that need no edit are the caller's own objects (only edits are copied)."""
        history = create_messages(8)
        result = _send(history, (2, 3))
        assert all(
            sent is original
            for sent, original in zip(result, history[:2] + history[4:], strict=True)
        )


class TestOverwritesApplied:
    """The store's effective updates, as get_truncated_messages applies them."""

    def test_last_update_of_a_block_wins(self) -> None:
        """Of several updates to one block, the last one is what is sent."""
        store = OverwriteStore()
        store.record(2, EditType.READ_FILE_TOOL, 0, text_update(1, "first"))
        store.record(2, EditType.READ_FILE_TOOL, 0, text_update(2, "second"))
        history = [U("t"), A("a"), U([T("original"), T("other")])]
        result = truncated_messages(history, None, store)
        assert result[2]["content"] == [T("second"), T("other")]
        assert history[2]["content"] == [T("original"), T("other")]

    def test_tool_result_with_list_content_gets_its_inner_text_replaced(self) -> None:
        """An update to a tool_result with list content replaces the inner first text."""
        store = OverwriteStore()
        store.record(2, EditType.READ_FILE_TOOL, 0, text_update(1, "NEW"))
        image = {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
        history = [U("t"), A([TU("x")]), U([TR("x", [T("OLD"), image])])]
        result = truncated_messages(history, None, store)
        assert result[2]["content"] == [TR("x", [T("NEW"), image])]

    @pytest.mark.parametrize(
        "block",
        [
            TR("x", "string content"),
            {"type": "image", "source": {"type": "base64", "data": "AAAA"}},
            {"type": "thinking", "thinking": "hm", "signature": "c2ln"},
        ],
        ids=["string-tool-result", "image", "thinking"],
    )
    def test_blocks_without_editable_text_are_left_alone(self, block: dict[str, Any]) -> None:
        """An update aimed at a block with no editable text changes nothing."""
        store = OverwriteStore()
        store.record(2, EditType.READ_FILE_TOOL, 0, text_update(1, "NEW"))
        history = [U("t"), A("a"), U([block, T("tail")])]
        result = truncated_messages(history, None, store)
        assert result[2]["content"] == [block, T("tail")]

    def test_update_past_the_last_block_is_ignored(self) -> None:
        """An update for a block index the message does not have is skipped."""
        store = OverwriteStore()
        store.record(2, EditType.READ_FILE_TOOL, 5, text_update(1, "NEW"))
        history = [U("t"), A("a"), U([T("only")])]
        assert truncated_messages(history, None, store)[2] == U([T("only")])

    def test_notices_replace_block_zero_of_the_first_pair(self) -> None:
        """After the standard notices, message 1 starts with the truncation notice and message 0
        with the continue notice; their other blocks stay."""
        manager = ContextManager()
        history = [U([T("the task"), T("env")]), A([T("plan"), TU("a")]), U([TR("a"), T("more")])]
        manager.trigger_apply_standard_context_truncation_notice_change(5, None, history)
        result = manager.get_truncated_messages(history, None)
        assert result[0]["content"] == [T(CONTINUE_NOTICE), T("env")]
        assert result[1]["content"] == [T(TRUNCATION_NOTICE), TU("a")]
        assert history[1]["content"][0] == T("plan")


class TestPairingThroughTruncation:
    """Appendix B3: the pairing repair as getTruncatedMessages applies it (no range)."""

    @staticmethod
    def _after_calls(following: Message) -> list[Message]:
        history = [U("task"), A("ok"), A([TU("a"), TU("b")]), following]
        return _send(history, None)

    def test_results_are_moved_to_the_front_in_tool_use_order(self) -> None:
        """Text before the results and results out of order are put back in tool_use order."""
        result = self._after_calls(U([T("x"), TR("b"), TR("a")]))
        assert result[3]["content"] == [TR("a"), TR("b"), T("x")]

    def test_unknown_result_is_dropped(self) -> None:
        """A tool_result for an id the assistant did not call is dropped."""
        history = [U("task"), A("ok"), A([TU("a")]), U([TR("a"), TR("zz")])]
        assert _send(history, None)[3]["content"] == [TR("a")]

    def test_missing_result_gets_a_placeholder(self) -> None:
        """An unanswered tool_use gets a "result missing" tool_result in its place."""
        result = self._after_calls(U([TR("a"), T("y")]))
        assert result[3]["content"] == [TR("a"), TR("b", RESULT_MISSING), T("y")]

    def test_string_content_becomes_placeholders_without_touching_the_caller(self) -> None:
        """A string user message after a tool_use is sent as placeholders; the caller keeps its
        string (the original emptied it in place)."""
        history = [U("task"), A("ok"), A([TU("a")]), U("plain")]
        result = _send(history, None)
        assert result[3]["content"] == [TR("a", RESULT_MISSING)]
        assert history[3] == U("plain")

    def test_complete_answers_are_left_as_they_are(self) -> None:
        """Results already in order, followed by text, are sent unchanged (same object)."""
        following = U([TR("a"), TR("b"), T("z")])
        result = self._after_calls(following)
        assert result[3] is following

    def test_trailing_tool_use_is_left_alone(self) -> None:
        """A tool_use in the last message has nothing to repair."""
        history = [U("task"), A("ok"), U("go"), A([TU("a")])]
        assert _send(history, None) == history


def _b4_history() -> list[Message]:
    return [
        U([T("task")]),
        A([T("a1")]),
        A([TU("q")]),
        U([TR("q")]),
        A([TU("r")]),
        U(
            [
                TR("r", [T("[read_file for 'f'] Result:\nOLD")]),
                T("<environment_details>ENV</environment_details>"),
            ]
        ),
        A([TU("s")]),
        U([TR("s", [T("[read_file for 'f'] Result:\nNEW")])]),
    ]


class TestAppendixB4:
    """B4: an edit recorded for a tool_result that orphan removal then strips (deliberate fix 3)."""

    def test_edit_is_recorded_for_the_tool_result(self) -> None:
        """Without a range the older read of f, block 0, shows the duplicate notice."""
        manager = ContextManager()
        history = _b4_history()
        assert manager.apply_context_optimizations(history, 2, 100) == (True, {5})
        result = manager.get_truncated_messages(history, None)
        expected = f"[read_file for 'f'] Result:\n{DUPLICATE_READ_NOTICE}"
        assert result[5]["content"][0] == TR("r", [T(expected)])

    def test_edit_does_not_land_on_another_block(self) -> None:
        """With range (2, 4) the tool_result is stripped and its edit goes with it: the
        environment block is sent intact (the original overwrote it with the read notice)."""
        manager = ContextManager()
        history = _b4_history()
        manager.apply_context_optimizations(history, 2, 100)
        result = manager.get_truncated_messages(history, (2, 4))
        assert result == [
            history[0],
            history[1],
            U([T("<environment_details>ENV</environment_details>")]),
            A([TU("s")]),
            history[7],
        ]


class TestAppendixB8:
    """B8: the native summarize flow hides the summary's own tool_result."""

    def test_summary_tool_result_is_stripped_and_placeholder_added(self) -> None:
        """After the summarize bump, what is sent is the task, the first answer, and a user
        message holding a placeholder for t1 and the new environment block."""
        manager = ContextManager()
        history = [
            U([T("task")]),
            A([T("plan"), TU("t1")]),
            U([TR("t1"), T("env")]),
            A([TU("t2")]),
            U([TR("t2"), T("SUMMARIZE INSTRUCTIONS")]),
        ]
        deleted_range = manager.get_next_truncation_range(history, None, "none")
        assert deleted_range == (2, 3)
        history.append(A([TU("t3", "summarize_task")]))
        deleted_range = (deleted_range[0], deleted_range[1] + 2)
        assert deleted_range == (2, 5)
        history.append(
            U(
                [
                    TR("t3", [T("[summarize_task] Result:\nCONTINUATION SUMMARY")]),
                    T("env6"),
                ]
            )
        )
        before = copy.deepcopy(history)
        result = manager.get_truncated_messages(history, deleted_range)
        assert result == [
            history[0],
            history[1],
            U([TR("t1", RESULT_MISSING), T("env6")]),
        ]
        assert history == before
