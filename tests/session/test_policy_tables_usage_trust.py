"""Which reports a session believes, pinned at every threshold with a counter of fixed answers.

A report is distrusted when it is far below the floor (under half of it and at least 500 tokens
short) or, for a request the counter estimates at all, far above (over the window, and over four
times the estimate plus a quarter of the window). The counter here answers ``estimate`` for
every count and ``floor`` for ``least_tokens`` (a counter without ``least_tokens`` has half its
estimate as the floor).
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import pytest

from windowkeeper import ContextSession, DistrustedUsageWarning, TokenUsage

WINDOW = 16_000


class Fixed:
    """A token counter that estimates every request at ``estimate`` and learns nothing."""

    def __init__(self, estimate: int) -> None:
        self.estimate = estimate
        self.observed: list[int] = []

    def count(self, messages: Any, *, system: Any = None, tools: Any = None) -> int:
        return self.estimate

    def observe(
        self, messages: Any, *, system: Any = None, tools: Any = None, reported_input_tokens: int
    ) -> None:
        self.observed.append(reported_input_tokens)


class WithFloor(Fixed):
    def __init__(self, estimate: int, floor: int) -> None:
        super().__init__(estimate)
        self.floor = floor

    def least_tokens(self, messages: Any, *, system: Any = None, tools: Any = None) -> int:
        return self.floor


def _record(
    counter: Fixed, usage: TokenUsage
) -> tuple[ContextSession, list[warnings.WarningMessage]]:
    session = ContextSession(WINDOW, counter=counter)  # type: ignore[arg-type]
    session.append({"role": "user", "content": "Fix the parser."})
    session.prepare()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session.record_usage(usage)
    return session, [w for w in caught if issubclass(w.category, DistrustedUsageWarning)]


def distrusted(counter: Fixed, usage: TokenUsage) -> bool:
    session, caught = _record(counter, usage)
    believed = session.state.usage == usage
    assert believed == (
        counter.observed == [usage.tokens_in + usage.cache_writes + usage.cache_reads]
    )
    assert believed != bool(caught)
    return not believed


@pytest.mark.parametrize(
    ("floor", "reported", "expected"),
    [
        (2_000, 999, True),  # under half, 1,001 short
        (2_000, 1_000, False),  # exactly half
        (999, 499, True),  # under half (499.5), exactly 500 short
        (999, 500, False),
        (990, 490, True),  # 500 short
        (990, 491, False),  # under half (495) but only 499 short
        (400, 0, False),  # nothing reported, but the floor is only 400
        (500, 0, True),
        (0, 0, False),
    ],
)
def test_a_report_far_below_the_floor_is_distrusted(
    floor: int, reported: int, expected: bool
) -> None:
    assert distrusted(WithFloor(100, floor), TokenUsage(tokens_in=reported)) is expected


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (TokenUsage(tokens_in=400), True),
        (TokenUsage(tokens_in=400, cache_reads=600), False),  # 1,000 in all: half the floor
        (TokenUsage(tokens_in=400, cache_writes=600), False),
        (TokenUsage(tokens_in=0, cache_writes=300, cache_reads=300), True),
        (TokenUsage(tokens_in=0, cache_writes=600, cache_reads=400), False),
        (TokenUsage(tokens_in=10, tokens_out=5_000), True),  # output is not input
    ],
)
def test_the_input_reported_is_input_cache_writes_and_cache_reads(
    usage: TokenUsage, expected: bool
) -> None:
    assert distrusted(WithFloor(100, 2_000), usage) is expected


@pytest.mark.parametrize(
    ("estimate", "reported", "expected"),
    [
        (4_001, 1_000, False),  # no least_tokens: the floor is 2,000
        (4_001, 999, True),
        (3_999, 1_000, False),  # a floor of 1,999: 1,000 is over half of it
        (3_999, 999, True),
    ],
)
def test_without_least_tokens_the_floor_is_half_the_estimate(
    estimate: int, reported: int, expected: bool
) -> None:
    assert distrusted(Fixed(estimate), TokenUsage(tokens_in=reported)) is expected


@pytest.mark.parametrize(
    ("estimate", "reported", "expected"),
    [
        (1_000, 16_000, False),  # the window (above 4 * 1,000 + 4,000)
        (1_000, 16_001, True),
        (4_000, 20_000, False),  # 4 * 4,000 + a quarter of the window
        (4_000, 20_001, True),
        (3_001, 16_004, False),
        (3_001, 16_005, True),
        (1, 16_001, True),
        (0, 10**9, False),  # a request the counter does not estimate is never judged high
    ],
)
def test_a_report_far_above_the_estimate_is_distrusted(
    estimate: int, reported: int, expected: bool
) -> None:
    assert distrusted(WithFloor(estimate, 0), TokenUsage(tokens_in=reported)) is expected


@pytest.mark.parametrize(
    ("floor", "usage", "cause"),
    [
        (10_000, TokenUsage(tokens_in=99), "the backend measured almost nothing"),
        (10_000, TokenUsage(tokens_in=100), "cached prompt tokens left out of the count"),
        (
            10_000,
            TokenUsage(tokens_in=99, cache_reads=1),
            "the backend reports only part of the prompt",
        ),
        (
            10_000,
            TokenUsage(tokens_in=100, cache_reads=1),
            "the backend reports only part of the prompt",
        ),
        (
            10_000,
            TokenUsage(tokens_in=100, cache_writes=1),
            "the backend reports only part of the prompt",
        ),
        (
            10_000,
            TokenUsage(tokens_in=100, cache_writes=1, cache_reads=1),
            "the backend reports only part",
        ),
        (599, TokenUsage(tokens_in=99), "the backend measured almost nothing"),
    ],
)
def test_the_warning_names_the_likely_cause(floor: int, usage: TokenUsage, cause: str) -> None:
    _session, caught = _record(WithFloor(100, floor), usage)
    (warning,) = caught
    reported = usage.tokens_in + usage.cache_writes + usage.cache_reads
    text = str(warning.message)
    assert text.startswith(f"reported usage ({reported:,} input tokens) is far below the estimate")
    assert "(about 100)" in text
    assert cause in text
    assert warning.filename == __file__  # it points at the caller of record_usage


def test_a_high_report_names_a_run_total_as_the_cause() -> None:
    _session, caught = _record(WithFloor(1_000, 0), TokenUsage(tokens_in=16_001))
    (warning,) = caught
    text = str(warning.message)
    assert text.startswith("reported usage (16,001 input tokens) is far above the estimate")
    assert "usage summed over several requests" in text


def test_the_next_request_reports_the_distrust_once() -> None:
    session, _ = _record(WithFloor(100, 2_000), TokenUsage(tokens_in=7, tokens_out=1))
    session.append({"role": "assistant", "content": "ok"})
    session.append({"role": "user", "content": "go on"})
    actions = [a for a in session.prepare().actions if a.step == "usage-distrusted"]
    assert [(a.tokens_before, a.tokens_after, a.usage) for a in actions] == [
        (100, 100, TokenUsage(tokens_in=7, tokens_out=1))
    ]
    session.record_usage(TokenUsage(tokens_in=3_000))
    assert [a for a in session.prepare().actions if a.step == "usage-distrusted"] == []


def test_a_believed_report_of_the_same_request_supersedes_a_distrusted_one() -> None:
    session, _ = _record(WithFloor(100, 2_000), TokenUsage(tokens_in=7))
    session.record_usage(TokenUsage(tokens_in=3_000))
    assert session.state.usage == TokenUsage(tokens_in=3_000)
    session.append({"role": "assistant", "content": "ok"})
    session.append({"role": "user", "content": "go on"})
    assert [a for a in session.prepare().actions if a.step == "usage-distrusted"] == []


def test_the_warning_is_given_once_per_session() -> None:
    session, caught = _record(WithFloor(100, 2_000), TokenUsage(tokens_in=7))
    assert len(caught) == 1
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        session.prepare()
        session.record_usage(TokenUsage(tokens_in=8))
        session.prepare()
        session.record_usage(TokenUsage(tokens_in=50_000))
    assert [w for w in again if issubclass(w.category, DistrustedUsageWarning)] == []
    assert session.state.usage is None
    _other, caught = _record(WithFloor(100, 2_000), TokenUsage(tokens_in=7))
    assert len(caught) == 1


def test_the_warning_points_at_the_line_that_recorded_the_usage() -> None:
    session = ContextSession(WINDOW, counter=WithFloor(100, 2_000))  # type: ignore[arg-type]
    session.append({"role": "user", "content": "Fix the parser."})
    session.prepare()
    frame = inspect.currentframe()
    assert frame is not None
    line = frame.f_lineno + 2  # the record_usage call
    with pytest.warns(DistrustedUsageWarning) as caught:
        session.record_usage(TokenUsage(tokens_in=7))
    assert (caught[0].filename, caught[0].lineno) == (__file__, line)
