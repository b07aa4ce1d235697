"""Reported usage is checked against the estimate of what was sent before the session believes it."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from windowkeeper import ContextSession, DistrustedUsageWarning, TokenUsage
from windowkeeper.session._usage_trust import DISTRUSTED

from .test_session import true_tokens

WINDOW = 16_000
RESERVE = 1_000
TURN = "y" * 6_000


def _loop(report: Any, turns: int = 40, **options: Any) -> tuple[ContextSession, list[Any]]:
    """A loop whose backend reports ``report(true input tokens)``; the prepared requests."""
    session = ContextSession(WINDOW, **options)
    session.append({"role": "user", "content": "Fix the parser. " + "x" * 400})
    prepared = []
    for turn in range(turns):
        request = session.prepare(max_output_tokens=RESERVE)
        prepared.append(request)
        session.record_usage(report(true_tokens(request.messages)))
        session.append({"role": "assistant", "content": f"Turn {turn}: {TURN}"})
        session.append({"role": "user", "content": f"Go on. {TURN}"})
    return session, prepared


class TestUnderReported:
    @pytest.mark.parametrize(
        "report",
        [
            lambda true: TokenUsage(tokens_in=true // 50, tokens_out=20),  # 2 % of the truth
            lambda true: TokenUsage(tokens_in=50, tokens_out=20),  # streaming: about 50, always
            lambda true: TokenUsage(tokens_in=true // 10, tokens_out=20),  # cached tokens left out
        ],
        ids=["two-percent", "fifty-tokens", "cache-left-out"],
    )
    def test_no_request_goes_over_the_window(self, report: Any) -> None:
        """A backend that under-reports cannot make the session send a request over the window."""
        with pytest.warns(DistrustedUsageWarning) as caught:
            _session, prepared = _loop(report)
        over = [p for p in prepared if true_tokens(p.messages) + RESERVE > WINDOW]
        assert over == []
        assert len(caught) == 1  # once per session
        assert any(a.step == DISTRUSTED for p in prepared for a in p.actions)

    def test_the_action_and_the_warning_say_what_and_why(self) -> None:
        """The next request's first action is the distrust, with the report and the estimate."""
        session = ContextSession(WINDOW)
        session.append({"role": "user", "content": "x" * 20_000})
        first = session.prepare(max_output_tokens=RESERVE)
        with pytest.warns(DistrustedUsageWarning, match="far below") as caught:
            session.record_usage(TokenUsage(tokens_in=40, tokens_out=5))
        assert "measured almost nothing" in str(caught[0].message)
        session.append({"role": "assistant", "content": "ok"})
        session.append({"role": "user", "content": "more"})
        action = session.prepare(max_output_tokens=RESERVE).actions[0]
        assert action.step == DISTRUSTED
        assert action.usage == TokenUsage(tokens_in=40, tokens_out=5)
        assert action.tokens_before == action.tokens_after == first.estimated_tokens - RESERVE
        # reported once: the request after it has no such action
        session.record_usage(TokenUsage(tokens_in=true_tokens(session.history)))
        assert all(a.step != DISTRUSTED for a in session.prepare().actions)

    def test_a_distrusted_report_does_not_calibrate(self) -> None:
        """The estimator learns nothing from a distrusted report: the next estimate is its own."""
        trusting = ContextSession(WINDOW)
        checking = ContextSession(WINDOW)
        for session in (trusting, checking):
            session.append({"role": "user", "content": "x" * 20_000})
            session.prepare()
        checking_estimate = ContextSession(WINDOW)
        checking_estimate.append({"role": "user", "content": "x" * 20_000})
        with pytest.warns(DistrustedUsageWarning):
            checking.record_usage(TokenUsage(tokens_in=100))
        for session in (checking, checking_estimate):
            session.append({"role": "assistant", "content": "ok"})
            session.append({"role": "user", "content": "more"})
        assert checking.prepare().estimated_tokens == checking_estimate.prepare().estimated_tokens


class TestBelieved:
    @pytest.mark.parametrize("share", [0.8, 1.0, 1.6, 3.0])
    def test_plausible_reports_are_believed(self, share: float) -> None:
        """Reports from 0.8 to 3 times a count at 4 characters a token are used, with no warning."""
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _session, prepared = _loop(lambda true: TokenUsage(tokens_in=int(true * share)), 12)
        assert all(a.step != DISTRUSTED for p in prepared for a in p.actions)

    def test_small_requests_are_not_judged(self) -> None:
        """Below a few hundred tokens of difference, a low report is believed (framing noise)."""
        session = ContextSession(WINDOW)
        session.append({"role": "user", "content": "Hello there, fix the bug please."})
        session.prepare()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            session.record_usage(TokenUsage(tokens_in=1))

    def test_a_report_over_the_window_summed_over_a_run_is_distrusted(self) -> None:
        """A run's total (far above the estimate and over the window) decides nothing."""
        session = ContextSession(WINDOW)
        session.append({"role": "user", "content": "x" * 4_000})
        session.prepare()
        with pytest.warns(DistrustedUsageWarning, match="summed over several requests"):
            session.record_usage(TokenUsage(tokens_in=5 * WINDOW))
        session.append({"role": "assistant", "content": "ok"})
        session.append({"role": "user", "content": "more"})
        prepared = session.prepare()
        assert prepared.deleted_range is None  # the original's truncation did not run on it
        assert prepared.actions[0].step == DISTRUSTED

    def test_a_high_report_inside_the_window_is_believed(self) -> None:
        """A hidden system prompt can make the report many times the estimate: believed."""
        session = ContextSession(WINDOW)
        session.append({"role": "user", "content": "x" * 400})
        session.prepare()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            session.record_usage(TokenUsage(tokens_in=WINDOW - 1_000))
