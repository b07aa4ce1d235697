"""The session's state value pinned call by call: its clock, its request count, its generation.

``ContextSession.state`` is public (:class:`windowkeeper.session.SessionState`); these rows
pin the rules its docstring states: the clock is strictly increasing even when the caller's
clock stands still, ``requests`` counts the requests prepared, and ``generation`` moves on
whenever a sync cuts decisions away, so usage reported before the cut is known to be stale.
"""

from __future__ import annotations

from windowkeeper import ContextSession, Synced

from ..counters import RuleCounter
from .policy_tables import TASK, tokens, turn


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
