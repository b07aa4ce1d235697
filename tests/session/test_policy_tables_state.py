"""The session's state value pinned call by call: its clock, its request count, its generation.

``ContextSession.state`` is public (:class:`windowkeeper.session.SessionState`); these rows
pin the rules its docstring states: the clock is strictly increasing even when the caller's
clock stands still, ``requests`` counts the requests prepared, and ``generation`` moves on
whenever a sync cuts decisions away, so usage reported before the cut is known to be stale.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from windowkeeper import (
    ContextSession,
    InvalidUsageError,
    StorageError,
    Synced,
    TokenUsage,
    usage_from_sdk,
)
from windowkeeper.session.steps import Action

from ..counters import RuleCounter
from .policy_tables import TASK, TRUNCATION_NOTICE, session, tokens, turn


def _still() -> ContextSession:
    """A session whose clock always reads 5,000 ms."""
    return ContextSession(
        10_000, counter=RuleCounter(tokens), clock=lambda: 5_000, max_result_share=None
    )


class TestClockAndCount:
    def test_a_fresh_state_has_counted_nothing(self) -> None:
        state = _still().state
        assert (state.last_timestamp, state.requests, state.generation) == (0, 0, 0)

    def test_a_still_clock_moves_on_by_one_millisecond_a_tick(self) -> None:
        keeper = _still()
        keeper.extend([TASK, *turn(0, 10)])
        assert (keeper.state.last_timestamp, keeper.state.requests) == (0, 0)  # no tick yet
        keeper.prepare()
        assert (keeper.state.last_timestamp, keeper.state.requests) == (5_000, 1)
        assert keeper.checkpoint().timestamp == 5_001
        keeper.prepare()
        assert (keeper.state.last_timestamp, keeper.state.requests) == (5_002, 2)


class TestSyncCuts:
    def test_each_cut_moves_the_generation_on_and_trims_the_range(self) -> None:
        keeper = _still()
        keeper.extend([TASK, *turn(0, 10), *turn(1, 10)])
        keeper.prepare()
        keeper.deleted_range = (2, 2)
        assert keeper.state.generation == 0
        shorter = [TASK, *turn(0, 10), turn(1, 10)[0]]
        assert keeper.sync(shorter) == Synced(kept=4, appended=0, dropped=1)
        assert (keeper.state.generation, keeper.deleted_range) == (1, (2, 2))
        assert keeper.sync([TASK, *turn(0, 10)]) == Synced(kept=3, appended=0, dropped=1)
        # (2, 2) would now hide the last message: the range goes
        assert (keeper.state.generation, keeper.deleted_range) == (2, None)

    def test_a_cut_below_every_hidden_turn_sends_the_history_whole_without_the_notice(
        self,
    ) -> None:
        keeper = session(mask_keep_recent=None)
        long = [TASK, *turn(0, 10)]
        for number in range(1, 8):
            long += turn(number, 6_000)
        keeper.extend(long)
        hidden = keeper.prepare()
        assert hidden.deleted_range == (2, 11)
        assert hidden.messages[1]["content"][0] == {"type": "text", "text": TRUNCATION_NOTICE}
        # the framework keeps the task, turn 0 and turn 1's call; turn 1's result is new
        short = [TASK, *turn(0, 10), *turn(1, 10)]
        assert keeper.sync(short) == Synced(kept=4, appended=1, dropped=13)
        assert keeper.deleted_range is None  # (2, 2) would split turn 0 from its answer
        after = keeper.prepare()
        assert after.messages == short  # no notice of a removal, no "result missing"
        assert after.actions == ()

    def test_a_cut_that_leaves_turns_hidden_keeps_the_notice_and_whole_pairs(self) -> None:
        keeper = session(mask_keep_recent=None)
        long = [TASK, *turn(0, 10)]
        for number in range(1, 8):
            long += turn(number, 6_000)
        keeper.extend(long)
        assert keeper.prepare().deleted_range == (2, 11)
        keeper.sync([*long[:9], *turn(4, 10)])  # turns 0-3, turn 4's call, a small result
        assert keeper.deleted_range == (2, 7)  # past the cut at 10: (2, 8) would split turn 3
        after = keeper.prepare()
        assert after.messages == [
            TASK,
            {
                "role": "assistant",
                "content": [{"type": "text", "text": TRUNCATION_NOTICE}, *long[1]["content"][1:]],
            },
            {  # turn 0's answer is hidden; turn 3's answer lost its call and goes
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t0", "content": "result missing"}
                ],
            },
            *turn(4, 10),
        ]


class _BreakingStore:
    """A store that keeps nothing and, once ``broken``, refuses every commit."""

    name = "memory:breaking"

    def __init__(self) -> None:
        self.broken = False
        self.version = 0

    def load(self) -> None:
        return None

    def commit(self, commit: object) -> int:
        if self.broken:
            raise StorageError("disk full")
        self.version += 1
        return self.version

    def close(self) -> None:
        return None


class _LearningCounter(RuleCounter):
    """The exact counter with a learnt state: ``snapshot()`` and, if ``restores``, ``restore``."""

    def __init__(self, restores: bool) -> None:
        super().__init__(tokens)
        self.learnt = 0
        self.restored: list[object] = []
        if restores:
            self.restore = self.restored.append

    def snapshot(self) -> object:
        return ("learnt", self.learnt)

    def observe(self, *args: Any, **kwargs: Any) -> None:
        self.learnt += 1


class TestAFailedCommitOfUsage:
    """``record_usage`` learns, then commits; when the commit fails, the learning is undone (if
    the counter can restore) and the store's own error reaches the caller."""

    @staticmethod
    def _failing(counter: _LearningCounter) -> ContextSession:
        store = _BreakingStore()
        keeper = ContextSession(10_000, store=store, counter=counter, clock=lambda: 5_000)
        keeper.extend([TASK, *turn(0, 10)])
        keeper.prepare()
        store.broken = True
        with pytest.raises(StorageError, match="disk full"):
            keeper.record_usage(TokenUsage(tokens_in=50, tokens_out=5))
        return keeper

    def test_the_counter_is_restored_to_what_it_knew_before(self) -> None:
        counter = _LearningCounter(restores=True)
        keeper = self._failing(counter)
        assert counter.restored == [("learnt", 0)]
        assert keeper.state.usage is None  # the failed report decides nothing

    def test_a_counter_without_restore_lets_the_store_error_through(self) -> None:
        counter = _LearningCounter(restores=False)
        self._failing(counter)
        assert counter.learnt == 1


class TestValuesHandedBack:
    def test_a_prepared_request_and_a_checkpoint_are_frozen(self) -> None:
        keeper = _still()
        keeper.extend([TASK, *turn(0, 10)])
        prepared = keeper.prepare()
        with pytest.raises(dataclasses.FrozenInstanceError):
            prepared.estimated_tokens = 0  # type: ignore[misc]
        checkpoint = keeper.checkpoint()
        with pytest.raises(dataclasses.FrozenInstanceError):
            checkpoint.history_length = 0  # type: ignore[misc]
        action = Action("hide-turns", deleted_range=(2, 3))
        with pytest.raises(dataclasses.FrozenInstanceError):
            action.deleted_range = None  # type: ignore[misc]

    @pytest.mark.parametrize(("count", "taken"), [(10**15 - 1, True), (10**15, False)])
    def test_a_usage_count_is_taken_up_to_below_ten_to_the_fifteen(
        self, count: int, taken: bool
    ) -> None:
        report = {"input_tokens": count, "output_tokens": 1}
        if taken:
            assert usage_from_sdk(report) == TokenUsage(tokens_in=count, tokens_out=1)
        else:
            with pytest.raises(InvalidUsageError, match=r"usage\.input_tokens"):
                usage_from_sdk(report)


class TestRollbackKeepsTheLastRequest:
    """A checkpoint between ``prepare`` and ``record_usage`` (the request is in flight): after a
    rollback to it, the usage reported for that request still teaches the counter, so the same
    calls give the same requests as without the rollback (seen by the OpenAI state machine)."""

    def _next_estimate(self, *, rollback: bool, report: bool = True) -> int:
        keeper = ContextSession(200_000)  # the default counter learns from reported usage
        keeper.extend(
            [
                {"role": "user", "content": "Fix the parser. " * 200},
                {"role": "assistant", "content": "Reading it now. " * 100},
                {"role": "user", "content": "go on " * 300},
            ]
        )
        keeper.prepare()
        mark = keeper.checkpoint()
        if report:
            keeper.record_usage({"input_tokens": 3_000, "output_tokens": 10})
        if rollback:
            keeper.rollback(mark)
            keeper.record_usage({"input_tokens": 3_000, "output_tokens": 10})
        keeper.append({"role": "assistant", "content": "done " * 50})
        keeper.append({"role": "user", "content": "more " * 50})
        return keeper.prepare().estimated_tokens

    def test_the_usage_reported_after_the_rollback_is_learnt_from(self) -> None:
        learnt = self._next_estimate(rollback=False)
        assert self._next_estimate(rollback=True) == learnt
        assert learnt > self._next_estimate(rollback=False, report=False)  # it did learn
