"""Laws that hold for every well-formed conversation, range and keep (hypothesis)."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper import (
    ContextManager,
    Keep,
    TokenUsage,
    compact_conversation_for_context_window,
    ensure_tool_results_follow_tool_use,
    validate_messages,
)
from windowkeeper.core._truncation import next_range
from windowkeeper.rules import TOOL_RESULT_UNKNOWN, TOOL_USE_UNANSWERED

from ..conftest import examples
from ..strategies import conversations, conversations_with_ranges, keeps

Message = dict[str, Any]
Range = tuple[int, int] | None

PROPERTY = settings(
    max_examples=examples(60, deep=1_500),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
PAIRING_RULES = {TOOL_USE_UNANSWERED, TOOL_RESULT_UNKNOWN}
OVER_THE_LIMIT = TokenUsage(tokens_in=500_000)  # more than twice any window used here


def _pairing_violations(messages: list[Message]) -> list[str]:
    return [str(v) for v in validate_messages(messages) if v.rule in PAIRING_RULES]


class TestInputsAreNeverModified:
    """No public call changes what it was given."""

    @PROPERTY
    @given(keep=keeps, timestamp=st.integers(1, 10**13), case=conversations_with_ranges())
    def test_every_public_call_leaves_the_history_alone(
        self, case: tuple[list[Message], Range], keep: Keep | str, timestamp: int
    ) -> None:
        """After every public call the history serializes exactly as before."""
        history, deleted_range = case
        before = json.dumps(history)
        snapshot = copy.deepcopy(history)
        manager = ContextManager()
        manager.get_next_truncation_range(history, deleted_range, keep)
        manager.get_truncated_messages(history, deleted_range)
        manager.apply_context_optimizations(history, 2, timestamp)
        manager.attempt_file_read_optimization_in_memory(history, deleted_range, timestamp + 1)
        manager.get_new_context_messages_and_metadata(
            history,
            usage=OVER_THE_LIMIT,
            timestamp=timestamp + 2,
            context_window=200_000,
            deleted_range=deleted_range,
        )
        manager.trigger_apply_standard_context_truncation_notice_change(
            timestamp + 3, None, history
        )
        manager.get_truncated_messages(history, deleted_range)
        compact_conversation_for_context_window(
            ContextManager(), history, deleted_range, timestamp=timestamp
        )
        ensure_tool_results_follow_tool_use(history)
        validate_messages(history)
        assert json.dumps(history) == before
        assert history == snapshot


class TestOutputIsValid:
    """What is sent keeps every tool call paired with its result."""

    @PROPERTY
    @given(case=conversations_with_ranges(aligned=True, ends_with="user"))
    def test_truncated_messages_keep_tool_pairing(self, case: tuple[list[Message], Range]) -> None:
        """With a range ending on an assistant message, no tool_use is unanswered and no
        tool_result is unknown in what is sent; in fact no provider rule is broken."""
        history, deleted_range = case
        sent = ContextManager().get_truncated_messages(history, deleted_range)
        assert _pairing_violations(sent) == []
        assert [str(violation) for violation in validate_messages(sent)] == []

    @PROPERTY
    @given(keep=keeps, case=conversations_with_ranges(aligned=True, ends_with="user"))
    def test_next_range_output_keeps_tool_pairing(
        self, keep: Keep | str, case: tuple[list[Message], Range]
    ) -> None:
        """A range made by next_range sends a valid pairing, and a valid request overall."""
        history, previous = case
        deleted_range = next_range(history, previous, keep)
        sent = ContextManager().get_truncated_messages(history, deleted_range)
        assert _pairing_violations(sent) == []
        assert [str(violation) for violation in validate_messages(sent)] == []

    @PROPERTY
    @given(
        window=st.sampled_from([32_768, 64_000, 200_000]),
        tokens=st.integers(0, 600_000),
        case=conversations_with_ranges(aligned=True, ends_with="user"),
    )
    def test_per_request_entry_point_keeps_tool_pairing(
        self, case: tuple[list[Message], Range], window: int, tokens: int
    ) -> None:
        """The per-request entry point, truncating or not, sends a valid request."""
        history, deleted_range = case
        result = ContextManager().get_new_context_messages_and_metadata(
            history,
            usage=TokenUsage(tokens_in=tokens),
            timestamp=7,
            context_window=window,
            deleted_range=deleted_range,
        )
        assert _pairing_violations(result.truncated_history) == []
        assert [str(violation) for violation in validate_messages(result.truncated_history)] == []

    @PROPERTY
    @given(history=conversations(ends_with="user"))
    def test_well_formed_conversations_are_sent_unchanged(self, history: list[Message]) -> None:
        """A well-formed conversation validates, and without a range it is sent as it is."""
        assert validate_messages(history) == []
        assert ContextManager().get_truncated_messages(history, None) == history


class TestFirstPairIsKept:
    """Messages 0 and 1 always open what is sent."""

    @PROPERTY
    @given(case=conversations_with_ranges())
    def test_output_starts_with_the_first_pair(self, case: tuple[list[Message], Range]) -> None:
        """Without overwrites the first two messages are sent as they are, once, then the rest
        from max(end + 1, 2)."""
        history, deleted_range = case
        sent = ContextManager().get_truncated_messages(history, deleted_range)
        assert sent[:2] == history[:2]
        start = 2 if deleted_range is None else max(deleted_range[1] + 1, 2)
        assert len(sent) == min(len(history), 2) + max(len(history) - start, 0)

    @PROPERTY
    @given(timestamp=st.integers(1, 10**13), case=conversations_with_ranges())
    def test_notices_change_only_block_zero_of_the_first_pair(
        self, case: tuple[list[Message], Range], timestamp: int
    ) -> None:
        """After the standard notices the first pair keeps its roles and every block but the
        first."""
        history, deleted_range = case
        manager = ContextManager()
        manager.trigger_apply_standard_context_truncation_notice_change(timestamp, None, history)
        sent = manager.get_truncated_messages(history, deleted_range)
        for original, out in zip(history[:2], sent[:2], strict=True):
            assert out["role"] == original["role"]
            if isinstance(original["content"], str):
                assert out["content"] == original["content"]
            else:
                assert out["content"][1:] == original["content"][1:]
                assert out["content"][0]["type"] == original["content"][0]["type"]


class TestNextRangeLaws:
    """The shape of the ranges next_range makes."""

    @PROPERTY
    @given(keep=keeps, case=conversations_with_ranges())
    def test_range_ends_on_an_assistant_message_or_is_empty(
        self, case: tuple[list[Message], Range], keep: Keep | str
    ) -> None:
        """The new range starts at 2 and ends on an assistant message, or hides nothing."""
        history, previous = case
        start, end = next_range(history, previous, keep)
        assert start == 2
        assert end < start or history[end]["role"] == "assistant"

    @PROPERTY
    @given(first=keeps, second=keeps, case=conversations_with_ranges())
    def test_next_range_never_shrinks_its_own_range(
        self, case: tuple[list[Message], Range], first: Keep | str, second: Keep | str
    ) -> None:
        """Extending a range that next_range made never shows a hidden message again.

        Its end never moves back, except from one empty range to another: as in the original,
        (2, 1) on a single message extends with "half" to (2, -1), which hides nothing either.
        """
        history, previous = case
        made = next_range(history, previous, first)
        extended = next_range(history, made, second)
        assert extended[0] == 2
        assert max(extended[1], 1) >= max(made[1], 1)
