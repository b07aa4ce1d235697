"""The summarize step's own rules, row by row: what a summarizer is given, when a new summary is
worth asking for, what a failed or unusable answer leaves, and which arguments are refused.

The histories are the policy tables' (a task and reads of 5,000 characters in a window of
10,000 tokens): the first request over the limit folds messages 2-12 and keeps the newest turn.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from windowkeeper import ConfigurationError, SummaryRequest
from windowkeeper.session.steps import SummarizeTurns, is_async_summarizer

from .policy_tables import TASK, actions, session, turn

SUMMARY = "SUMMARY: m0-m5 were read."


def _history(turns: int = 7) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [TASK]
    for number in range(turns):
        history += turn(number, 5_000)
    return history


class _Recorder:
    """A summarizer that keeps every request and answers each with the next of ``answers``."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers) or [SUMMARY]
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> Any:
        self.requests.append(request)
        answer = self.answers[min(len(self.requests), len(self.answers)) - 1]
        if isinstance(answer, BaseException):
            raise answer
        return answer


def _folded(summarizer: Any, **options: Any) -> Any:
    keeper = session(
        summarize=summarizer, keep_recent_tokens=1_000, mask_keep_recent=None, **options
    )
    keeper.extend(_history())
    return keeper, keeper.prepare()


class TestWhatTheSummarizerIsGiven:
    def test_exactly_the_messages_folded_after_the_first_pair(self) -> None:
        recorder = _Recorder()
        keeper, prepared = _folded(recorder)
        assert actions(prepared) == [("summarize", tuple(range(2, 13)), (2, 12))]
        [request] = recorder.requests
        assert request.messages == tuple(_history()[2:13])
        assert request.previous_summary is None
        assert keeper.state.compaction.fold is not None
        assert keeper.state.compaction.fold.summary == SUMMARY

    def test_a_later_fold_continues_the_last_summary(self) -> None:
        recorder = _Recorder(SUMMARY, "SECOND")
        keeper, _ = _folded(recorder)
        keeper.extend(turn(7, 100))
        keeper.prepare()  # right after a fold: no new summary
        for number in range(8, 40):
            keeper.extend(turn(number, 5_000))
            fold = keeper.state.compaction.fold
            keeper.prepare()
            if len(recorder.requests) == 2:
                break
        _, second = recorder.requests
        assert fold is not None
        assert SUMMARY in fold.text
        assert second.previous_summary == fold.text  # the continuation the model saw last
        assert second.messages[0] == turn(6, 5_000)[0]  # it starts where the first fold ended
        assert keeper.state.compaction.fold is not None
        assert keeper.state.compaction.fold.summary == "SECOND"


class TestFailures:
    @pytest.mark.parametrize(
        ("answer", "reason"),
        [
            (ValueError("no"), "the summarizer raised ValueError: folded with the ledger alone"),
            (None, "the summarizer gave no usable text: folded with the ledger alone"),
            ("   \n", "the summarizer gave no usable text: folded with the ledger alone"),
            ("a\x00b", "the summarizer gave no usable text: folded with the ledger alone"),
            ("lone \ud800", "the summarizer gave no usable text: folded with the ledger alone"),
            (42, "the summarizer gave no usable text: folded with the ledger alone"),
        ],
    )
    def test_the_ledger_stands_in_and_the_action_says_why(
        self, answer: object, reason: str
    ) -> None:
        keeper, prepared = _folded(_Recorder(answer))
        [action] = prepared.actions
        assert (action.step, action.reason) == ("summarize", reason)
        fold = keeper.state.compaction.fold
        assert fold is not None
        assert fold.summary is None

    def test_a_usable_answer_after_a_failure_clears_the_reason(self) -> None:
        recorder = _Recorder(ValueError("no"), SUMMARY)
        step = SummarizeTurns(recorder, keep_recent_tokens=1_000)
        keeper = session(steps=[step])
        keeper.extend(_history())
        assert keeper.prepare().actions[0].reason is not None
        assert isinstance(step.last_error, ValueError)
        keeper.extend(turn(7, 100))
        keeper.prepare()
        for number in range(8, 40):
            keeper.extend(turn(number, 5_000))
            folds = [a for a in keeper.prepare().actions if a.step == "summarize"]
            if folds:
                break
        assert [(a.step, a.reason) for a in folds] == [("summarize", None)]

    def test_a_summarizer_that_blocks_is_left_in_a_daemon_thread(self) -> None:
        release = threading.Event()

        def blocked(request: SummaryRequest) -> str:
            release.wait(10)
            return "late"

        try:
            _, prepared = _folded(blocked, summarizer_timeout=0.05)
            assert prepared.actions[0].reason == (
                "the summarizer did not answer within 0.05 s: folded with the ledger alone"
            )
            [worker] = [t for t in threading.enumerate() if t.name == "windowkeeper-summarizer"]
            assert worker.daemon  # a hung summarizer never keeps the program from exiting
        finally:
            release.set()


class TestWorthASummary:
    """``worth_summary``: with a last summary of ``len // 4 + 1`` tokens, a new one is asked for
    when the turns it adds hold at least 8 times that (a message's size: its JSON's characters
    over four, plus one)."""

    @staticmethod
    def _message(text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}  # 31 characters of JSON besides the text

    @pytest.mark.parametrize(
        ("text", "worth"),
        [
            ("x" * 29, True),  # 60 // 4 + 1 = 16 tokens, 8 * (4 // 4 + 1) = 16 asked: enough
            ("x" * 28, False),  # 59 // 4 + 1 = 15
            ("é" * 28, False),  # characters, not UTF-8 or escaped bytes, are counted
            ("é" * 29, True),
        ],
    )
    def test_the_turns_added_must_hold_eight_times_the_last_summary(
        self, text: str, worth: bool
    ) -> None:
        assert SummarizeTurns().worth_summary([self._message(text)], "abcd") is worth

    def test_two_messages_add_up(self) -> None:
        step = SummarizeTurns()
        assert step.worth_summary([self._message(""), self._message("")], "abcd")  # 8 + 8
        assert not step.worth_summary([self._message("")], "abcd")

    def test_the_first_summary_is_always_worth_it(self) -> None:
        assert SummarizeTurns().worth_summary([], None)

    @pytest.mark.parametrize(("worth", "asked"), [(0.0, True), (0.5, False), (1.0, False)])
    def test_a_worth_of_zero_always_asks(self, worth: float, asked: bool) -> None:
        step = SummarizeTurns()
        step.summary_worth = worth
        assert step.worth_summary([], "abcd") is asked  # nothing added: 0 tokens


class TestArguments:
    def test_the_tail_kept_defaults_to_eight_thousand_tokens(self) -> None:
        assert SummarizeTurns().keep == 8_000
        assert SummarizeTurns(keep_recent_tokens=10).keep == 10
        assert not SummarizeTurns().repeats  # one fold a request

    @pytest.mark.parametrize("timeout", [0, -1, True, "3", 0.0])
    def test_a_timeout_must_be_a_positive_number(self, timeout: Any) -> None:
        with pytest.raises(ConfigurationError, match="timeout must be a positive number"):
            SummarizeTurns(timeout=timeout)

    @pytest.mark.parametrize("timeout", [None, 0.5, 1, 180.0])
    def test_positive_timeouts_and_none_are_taken(self, timeout: float | None) -> None:
        assert SummarizeTurns(timeout=timeout).timeout == timeout

    def test_in_band_takes_no_summarizer(self) -> None:
        with pytest.raises(ConfigurationError, match="an in-band step asks the model itself"):
            SummarizeTurns(lambda request: "s", in_band=True)
        assert SummarizeTurns(in_band=True).in_band
        assert not SummarizeTurns(lambda request: "s").in_band


async def _async_function(request: SummaryRequest) -> str:
    return "s"


class _AsyncCallable:
    async def __call__(self, request: SummaryRequest) -> str:
        return "s"


class _Callable:
    def __call__(self, request: SummaryRequest) -> str:
        return "s"


@pytest.mark.parametrize(
    ("summarizer", "answer"),
    [
        (_async_function, True),
        (_AsyncCallable(), True),
        (_Callable(), False),
        (lambda request: "s", False),
        (None, False),
    ],
)
def test_an_async_summarizer_is_one_whose_call_is_a_coroutine(
    summarizer: object, answer: bool
) -> None:
    assert is_async_summarizer(summarizer) is answer
