"""Behaviour that mutation testing found unpinned, each pinned by one small worked example.

Every test here fails when its rule is changed by one: masking keeping one output fewer or more,
a pre-flight stopping at the limit instead of ``shrink_target`` of it, the 30% savings boundary
moving or turning strict, duplicate tool_use ids going unreported or unrenamed.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import (
    ClineReadDetector,
    ContextManager,
    ContextSession,
    TokenUsage,
    Violation,
    context_window_info,
    validate_messages,
)

from ..builders import TR, TU, A, T, U, read_result

PLACEHOLDER = "[windowkeeper: the output of"  # how a masked tool output starts


def tool_turns(turns: int, chars: int) -> list[dict[str, Any]]:
    """A task, then ``turns`` tool calls each answered by an output of about ``chars`` characters."""
    history = [U("Task: run the jobs.")]
    for n in range(turns):
        history.append(A([T(f"job {n}"), TU(f"t{n}", "run", cmd=f"job {n}")]))
        history.append(U([TR(f"t{n}", f"out {n} " + "z" * chars)]))
    return history


def tool_outputs(messages: list[dict[str, Any]]) -> list[str]:
    return [
        str(block["content"])
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


class TestMaskingKeepsExactlyTheRecent:
    """``mask_keep_recent`` is the number of older outputs left whole, not one fewer or more."""

    @pytest.mark.parametrize("keep", [0, 1, 2, 3, 5])
    def test_keep_recent_outputs_stay_whole(self, keep: int) -> None:
        """Twelve large outputs over the limit: all but the last ``keep`` older ones are masked,
        and the newest turn's output is never masked."""
        session = ContextSession(
            20_000, mask_keep_recent=keep, shrink_target=1.0, max_result_share=None
        )
        session.extend(tool_turns(12, 6_000))
        prepared = session.prepare()
        assert prepared.preflight_acted
        assert prepared.deleted_range is None  # masking alone was enough: nothing hidden
        outputs = tool_outputs(prepared.messages)
        whole = [n for n, text in enumerate(outputs) if not text.startswith(PLACEHOLDER)]
        assert len(outputs) == 12
        assert whole == list(range(11 - keep, 12))  # the `keep` before the newest, and the newest


class TestPreflightReachesTheShrinkTarget:
    """A pre-flight that acted leaves the estimate at most ``shrink_target`` times the limit."""

    @pytest.mark.parametrize(
        ("target", "mask_keep_recent"), [(0.3, None), (0.45, None), (0.6, None), (0.2, 2)]
    )
    def test_estimate_within_the_target(self, target: float, mask_keep_recent: int | None) -> None:
        """Forty turns, about twice the limit: shrinking stops only once under the target
        (stopping at the limit would leave about 0.74 of it here)."""
        session = ContextSession(
            20_000,
            shrink_target=target,
            mask_keep_recent=mask_keep_recent,
            max_result_share=None,
        )
        session.extend(tool_turns(40, 1_500))
        prepared = session.prepare()
        assert prepared.preflight_acted
        assert prepared.deleted_range is not None
        assert prepared.estimated_tokens <= target * prepared.max_allowed_size


# -- the duplicate-read rule at exactly 30% ---------------------------------------------------

TASK = "<task>\nFix it.\n</task>"
BODY = "y" * 1_050
PADDING = 801  # characters of assistant text that make the saving exactly 30%


def read_history(padding: int) -> list[dict[str, Any]]:
    """The task, some assistant text, and the same 1,050-character file read twice.

    Replacing the older read saves 897 UTF-16 units (1,081 characters become the original's
    184-character notice); with 801 characters of padding the history holds 2,990 units of text,
    and 897 / 2,990 is exactly 0.3.
    """
    return [
        U([T(TASK)]),
        A([T("p" * padding)]),
        read_result("a.py", BODY),
        A([T("again")]),
        read_result("a.py", BODY),
    ]


def text_length(history: list[dict[str, Any]]) -> int:
    return sum(len(block["text"]) for message in history for block in message["content"])


class TestSavingsBoundary:
    """Replacement saving at least 30% of the characters avoids truncation; less does not."""

    def test_the_worked_example_saves_exactly_thirty_percent(self) -> None:
        """The numbers in :func:`read_history`'s docstring are the ones the rule sees."""
        history = read_history(PADDING)
        optimized = ContextManager().attempt_file_read_optimization_in_memory(history, None, 5)
        saved = text_length(history) - text_length(optimized.optimized_history)
        assert (saved, text_length(history)) == (897, 2_990)
        assert saved / text_length(history) == 0.3

    @pytest.mark.parametrize(
        ("padding", "truncates"), [(PADDING - 1, False), (PADDING, False), (PADDING + 1, True)]
    )
    def test_manager_truncates_only_under_thirty_percent(
        self, padding: int, truncates: bool
    ) -> None:
        """Usage at the limit: the range grows only when the saving is under 0.3."""
        info = context_window_info(64_000)
        history = read_history(padding)
        result = ContextManager().get_new_context_messages_and_metadata(
            history,
            usage=TokenUsage(tokens_in=int(info.max_allowed_size)),
            timestamp=5,
            context_window=info,
        )
        assert result.updated_deleted_range is truncates
        assert (result.deleted_range is not None) is truncates
        in_memory = ContextManager().attempt_file_read_optimization_in_memory(history, None, 5)
        assert in_memory.any_context_updates
        assert in_memory.need_to_truncate is truncates

    @pytest.mark.parametrize(("padding", "truncates"), [(PADDING, False), (PADDING + 1, True)])
    def test_session_follows_the_same_boundary(self, padding: int, truncates: bool) -> None:
        """A session with the original's detector, told the last request reached the limit."""
        info = context_window_info(64_000)
        session = ContextSession(info, detector=ClineReadDetector(), clock=lambda: 10)
        session.extend(read_history(padding))
        session.prepare()
        session.record_usage(TokenUsage(tokens_in=int(info.max_allowed_size)))
        prepared = session.prepare()
        assert prepared.replaced_reads == 1
        assert prepared.range_changed is truncates
        assert not prepared.preflight_acted


# -- duplicate tool_use ids in one message ----------------------------------------------------


def twin_calls() -> list[dict[str, Any]]:
    """One assistant message calling two tools under the same id, both answered."""
    return [
        U("task"),
        A([TU("t1", "run", cmd="a"), TU("t1", "run", cmd="b")]),
        U([TR("t1", "out a"), TR("t1", "out b")]),
    ]


class TestDuplicateToolUseIds:
    """The providers reject a repeated tool_use id; the session renames the later one."""

    def test_validate_messages_reports_the_second(self) -> None:
        """Exactly one violation, at the second block, naming where the id was first used."""
        assert validate_messages(twin_calls()) == [
            Violation(
                "messages[1].content[1]",
                "duplicate-tool-use-id",
                "tool_use id 't1' is already used at messages[1].content[0]",
            )
        ]

    def test_session_renames_the_later_call_and_its_result(self) -> None:
        """The second call and the second result go out as ``t1_2``, reported as a repair; the
        history keeps what the caller appended."""
        session = ContextSession(200_000)
        session.extend(twin_calls())
        prepared = session.prepare()
        assert validate_messages(prepared.messages) == []
        assert [b["id"] for b in prepared.messages[1]["content"]] == ["t1", "t1_2"]
        assert [b["tool_use_id"] for b in prepared.messages[2]["content"]] == ["t1", "t1_2"]
        assert [b["content"] for b in prepared.messages[2]["content"]] == ["out a", "out b"]
        assert [(r.path, r.detail) for r in prepared.repairs] == [
            ("history[1].content[1].id", "a tool_use id used before: sent as 't1_2'")
        ]
        assert session.history == twin_calls()
