"""The deliberate fixes of SPEC.md: one test each that the original's behaviour would fail.

Fix 2 (file-mention metadata snapshots) is covered with the overwrite store's tests.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from windowkeeper import ContextManager, InvalidUsageError, validate_messages
from windowkeeper.core._notices import (
    DUPLICATE_READ_NOTICE,
    RESULT_MISSING,
    STRIPPED_RESULTS_NOTICE,
)

from ..strategies import TR, TU, A, T, U, create_messages


class TestFix1InputsAreNeverMutated:
    """Fix 1: the pairing repair leaves the caller's messages alone."""

    def test_string_answer_after_a_tool_use_is_not_cleared(self) -> None:
        """The original sets the caller's string-content user message to ``[]`` in place when it
        follows a tool_use, so the history would no longer equal its earlier copy; here only the
        sent copy changes."""
        history = [U("task"), A([T("let me look"), TU("a")]), U("never mind, stop")]
        before = copy.deepcopy(history)
        sent = ContextManager().get_truncated_messages(history, None)
        assert history == before
        assert history[2]["content"] == "never mind, stop"
        assert sent[2]["content"] == [TR("a", RESULT_MISSING)]


class TestFix3OverwriteLandsOnItsBlock:
    """Fix 3: an overwrite follows its block when orphan tool_results are stripped."""

    def test_mention_edit_follows_its_block_after_stripping(self) -> None:
        """The original applies the block-1 edit to ``content[1]`` of the stripped message, which
        then has one block only, so the stale file contents would be sent and the duplicate
        notice assertion would fail; here the edit lands on the moved mention block."""
        mention = 'see <file_content path="a.txt">\nAAA\n</file_content>'
        history = [
            U([T("task")]),
            A([T("a1")]),
            U([T("next")]),
            A([TU("x", "list_files")]),
            U([TR("x", [T("listing done")]), T(mention)]),
            A([TU("y")]),
            U([TR("y", [T("[read_file for 'a.txt'] Result:\nAAA2")])]),
        ]
        manager = ContextManager()
        assert manager.apply_context_optimizations(history, 2, 50) == (True, {4})
        sent = manager.get_truncated_messages(history, (2, 3))
        replaced = f'see <file_content path="a.txt">{DUPLICATE_READ_NOTICE}</file_content>'
        assert sent[2] == U([T(replaced)])
        assert history[4]["content"][1] == T(mention)


class TestFix4NoDuplicatedMessages:
    """Fix 4: an inverted range never repeats the first pair."""

    @pytest.mark.parametrize("deleted_range", [(2, -1), (2, 0)])
    def test_inverted_range_sends_each_message_once(self, deleted_range: tuple[int, int]) -> None:
        """The original slices from ``end + 1`` (0 or 1 here) after the first pair, so messages 0
        and 1 (or 1) would be sent twice and the list would be longer than the history; here
        the rest starts at 2 and the history is sent once."""
        history = create_messages(5)
        assert ContextManager().get_truncated_messages(history, deleted_range) == history


class TestFix5MalformedUsageRaises:
    """Fix 5: unreadable usage raises the same error from both entry points."""

    @pytest.mark.parametrize("entry", ["should_compact", "get_new_context"])
    def test_malformed_usage_json_raises_invalid_usage_error(self, entry: str) -> None:
        """The original's shouldCompactContextWindow swallows the JSON error and answers False
        (so no exception would be raised there) while getNewContextMessagesAndMetadata throws;
        here both raise InvalidUsageError."""
        manager = ContextManager()
        history = create_messages(6)
        before = json.dumps(history)
        bad_usage = '{"tokensIn": 170000'
        calls: dict[str, Callable[[], object]] = {
            "should_compact": lambda: manager.should_compact_context_window(bad_usage, 200_000),
            "get_new_context": lambda: manager.get_new_context_messages_and_metadata(
                history, usage=bad_usage, timestamp=1, context_window=200_000
            ),
        }
        with pytest.raises(InvalidUsageError, match="not JSON"):
            calls[entry]()
        assert json.dumps(history) == before
        assert manager.context_history_json() == "[]"


class TestFix6EmptiedMessageSaysWhy:
    """Fix 6: a message emptied by orphan removal gets a text block instead of no content."""

    def test_message_with_only_orphan_results_gets_the_notice(self) -> None:
        """The original sends ``content: []`` here (message 1 has no tool_use to add placeholders
        for), which the provider rejects and which the equality below would not match; here the
        message says its tool results were removed."""
        history: list[dict[str, Any]] = [
            U("task"),
            A("ok"),
            U("go on"),
            A([TU("a"), TU("b")]),
            U([TR("a"), TR("b", [T("listing")])]),
            A("done"),
        ]
        sent = ContextManager().get_truncated_messages(history, (2, 3))
        assert sent[2] == U([T(STRIPPED_RESULTS_NOTICE)])
        assert validate_messages(sent) == []
        assert history[4]["content"] == [TR("a"), TR("b", [T("listing")])]
