"""The summarize step's own rules, row by row: what a summarizer is given, when a new summary is
worth asking for, what a failed or unusable answer leaves, and which arguments are refused.

The histories are the policy tables' (a task and reads of 5,000 characters in a window of
10,000 tokens): the first request over the limit folds messages 2-12 and keeps the newest turn.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from windowkeeper import ConfigurationError, OverwriteStore, SummaryRequest
from windowkeeper.session import SessionState
from windowkeeper.session.steps import (
    Draft,
    HideOldTurns,
    SummarizeTurns,
    is_async_summarizer,
    run_steps,
)

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


def _numbered(count: int = 21) -> list[dict[str, Any]]:
    """The task, then user and assistant messages in turn (odd ones answer), ending with a user
    message: message 19 answers the newest turn, message 20."""
    view: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
    for index in range(1, count):
        role = "assistant" if index % 2 else "user"
        view.append({"role": role, "content": f"{index}:" + "x" * 400})
    return view


NUMBERED = _numbered()


def _draft(fold_cost: int, limit: float, target: float, state: SessionState | None = None) -> Draft:
    """A draft of :data:`NUMBERED` measured by hand: 100 tokens a message sent, and
    ``fold_cost`` for a continuation, whatever its text; a state whose fold does not end
    where its hidden range ends is refused."""

    def size(state: SessionState) -> int:
        hidden = state.deleted_range
        fold = state.compaction.fold
        # a state weighed must be one a session could hold: a fold ends where the range does
        assert fold is None or (hidden is not None and fold.end == hidden[1]), state
        sent = sum(1 for i in range(len(NUMBERED)) if i < 2 or hidden is None or i > hidden[1])
        return 100 * sent + (fold_cost if fold is not None else 0)

    state = state or SessionState()
    return Draft(
        history=NUMBERED,
        state=state,
        store=OverwriteStore(),
        view_of=lambda state: NUMBERED,
        measure=lambda view, state: (list(view), size(state)),
        replace_reads=lambda view, start, now: set(),
        view=NUMBERED,
        messages=list(NUMBERED),
        estimate=size(state),
        now=1,
        limit=limit,
        target=target,
        may_fold=True,
    )


class TestAFoldSendsNoMoreThanTruncation:
    """The cut moves past the fold point to the earliest assistant message at which the fold
    sends no more than plain truncation would; failing that, to the latest (message 19).

    :data:`NUMBERED` is 21 messages of 100 tokens; a fold at assistant message ``c`` hides
    2..c-1 and sends 23 - c messages and its continuation (``fold_cost``), so it fits when
    ``100 * (23 - c) + fold_cost`` is at most what truncation sends (``plain``, checked against
    :class:`HideOldTurns` on the same draft). With 1,500 tokens kept the fold point is 7; with
    1,800 it is 3; a range (2, 4) already hidden leaves point 7 or 11.
    """

    @pytest.mark.parametrize(
        ("keep", "fold_cost", "limit", "target", "plain", "end"),
        [
            # 2,100 tokens, half of it not over the limit: half the turns go, then more: 900
            (1_500, 0, 1_500, 1_200, 900, 14),  # 100 * (23 - 15) = 800 fits at 15, not at 13
            (1_500, 100, 1_500, 1_200, 900, 14),  # 900 fits: no larger is enough
            (1_500, 101, 1_500, 1_200, 900, 16),  # one token over at 15: the next cut
            (1_500, 250, 1_500, 1_200, 900, 16),
            (1_500, 450, 1_500, 1_200, 900, 18),  # 400 + 450 at message 19
            (1_500, 650, 1_500, 1_200, 900, 18),  # nothing fits: the latest cut
            (1_800, 0, 1_500, 1_200, 900, 14),  # from point 3, eight cuts to choose from
            (1_800, 250, 1_500, 1_200, 900, 16),
            (1_800, 650, 1_500, 1_200, 900, 18),
            # a target of the whole limit: one round of truncation (1,300) is enough
            (1_500, 0, 1_500, 1_500, 1_300, 10),  # 1,200 fits at 11
            (1_500, 250, 1_500, 1_500, 1_300, 12),
            (1_500, 450, 1_500, 1_500, 1_300, 14),
            (1_500, 650, 1_500, 1_500, 1_300, 16),
            (1_800, 0, 1_500, 1_500, 1_300, 10),
            (1_800, 650, 1_500, 1_500, 1_300, 16),
            # half the request (1,050) exactly at the limit: still half the turns first
            (1_500, 0, 1_050, 900, 900, 14),
            # one token under it: a quarter first, and truncation sends less (700)
            (1_500, 0, 1_049, 900, 700, 16),
            (1_500, 250, 1_049, 900, 700, 18),
            (1_500, 0, 1_000, 600, 500, 18),
        ],
    )
    def test_the_cut(
        self, *, keep: int, fold_cost: int, limit: int, target: int, plain: int, end: int
    ) -> None:
        truncated = _draft(fold_cost, limit, target)
        run_steps([HideOldTurns()], truncated)
        assert truncated.estimate == plain
        draft = _draft(fold_cost, limit, target)
        action = SummarizeTurns(keep_recent_tokens=keep).apply(draft)
        assert action is not None
        assert (action.step, action.deleted_range) == ("summarize", (2, end))
        assert action.messages == tuple(range(2, end + 1))
        assert draft.state.deleted_range == (2, end)

    @pytest.mark.parametrize(
        ("keep", "fold_cost", "end"),
        [(1_000, 0, 12), (1_000, 250, 14), (1_500, 450, 16)],
    )
    def test_with_turns_hidden_already(self, keep: int, fold_cost: int, end: int) -> None:
        """(2, 4) hidden: 1,800 tokens; truncation hides (2, 11) and sends 1,100."""
        state = SessionState(deleted_range=(2, 4))
        truncated = _draft(fold_cost, 1_500, 1_200, state)
        run_steps([HideOldTurns()], truncated)
        assert (truncated.deleted_range, truncated.estimate) == ((2, 11), 1_100)
        draft = _draft(fold_cost, 1_500, 1_200, state)
        action = SummarizeTurns(keep_recent_tokens=keep).apply(draft)
        assert action is not None
        assert action.deleted_range == (2, end)
        assert action.messages == tuple(range(5, end + 1))  # from the first message visible

    def test_a_ledger_only_fold_that_still_sends_more_is_shortened(self) -> None:
        """At the latest cut the fold sends 400 + ``fold_cost`` against truncation's 900: the
        continuation (ledger only) loses three characters for each token over."""
        texts = {}
        for fold_cost in (450, 650, 1_000):
            step = SummarizeTurns(keep_recent_tokens=1_500)
            draft = _draft(fold_cost, 1_500, 1_200)
            step.apply(draft)
            fold = draft.state.compaction.fold
            assert fold is not None
            texts[fold_cost] = fold.text
        full = step.text(None, step.ledgers.ledger(NUMBERED, 19))
        assert texts[450] == full  # it fits: nothing to shorten
        assert len(texts[1_000]) <= len(full) - 500 * 3 < len(texts[650]) <= len(full) - 150 * 3


class TestHideOldTurns:
    """One round of :class:`HideOldTurns` on :data:`NUMBERED` (2,100 tokens): half the turns,
    or a quarter while half the request is still over the limit; never the newest turn's answer
    (message 19)."""

    @pytest.mark.parametrize(
        ("limit", "state", "hidden"),
        [
            (1_500, None, (2, 9)),
            (1_050, None, (2, 9)),  # half the request exactly at the limit: half
            (1_049, None, (2, 15)),  # over it: a quarter is kept
            (1_500, SessionState(deleted_range=(2, 9)), (2, 13)),
            (1_500, SessionState(deleted_range=(2, 13)), (2, 15)),
            (1_500, SessionState(deleted_range=(2, 15)), (2, 17)),
        ],
    )
    def test_one_round(
        self, limit: int, state: SessionState | None, hidden: tuple[int, int]
    ) -> None:
        draft = _draft(0, limit, 0, state)
        action = HideOldTurns().apply(draft)
        assert action is not None
        assert (action.step, action.deleted_range, draft.deleted_range) == (
            "hide-turns",
            hidden,
            hidden,
        )

    def test_nothing_left_to_hide_before_the_newest_answer(self) -> None:
        draft = _draft(0, 100, 0, SessionState(deleted_range=(2, 17)))  # 19 is next: kept
        assert HideOldTurns().apply(draft) is None
        assert HideOldTurns.repeats


class TestAFoldPointThatFitsAlready:
    """With 600 tokens kept the fold point is 15 (cuts 17 and 19 after it), with one token it
    is 19, the newest turn's answer (no later cut). Truncation sends 1,300 (target 1,500)."""

    @staticmethod
    def _fold(keep: int, fold_cost: int, target: int = 1_500) -> tuple[Any, str, str]:
        step = SummarizeTurns(keep_recent_tokens=keep)
        draft = _draft(fold_cost, 1_500, target)
        action = step.apply(draft)
        assert action is not None
        fold = draft.state.compaction.fold
        assert fold is not None
        end = action.deleted_range[1]
        return action, fold.text, step.text(None, step.ledgers.ledger(NUMBERED, end + 1))

    @pytest.mark.parametrize(("fold_cost", "end"), [(500, 14), (501, 16), (0, 14)])
    def test_the_point_is_kept_when_it_sends_no_more_than_truncation(
        self, fold_cost: int, end: int
    ) -> None:
        """At 15: 800 + ``fold_cost`` against 1,300; one token over moves the cut to 17."""
        action, text, full = self._fold(600, fold_cost)
        assert action.deleted_range == (2, end)
        assert text == full  # it fits: the continuation is not shortened

    @pytest.mark.parametrize(("fold_cost", "shortened"), [(0, False), (500, False), (501, True)])
    def test_with_no_later_cut_the_excess_shortens_a_ledger_only_fold(
        self, fold_cost: int, shortened: bool
    ) -> None:
        """At 19: 400 + ``fold_cost`` against truncation's 900 (target 1,200)."""
        action, text, full = self._fold(1, fold_cost, target=1_200)
        assert action.deleted_range == (2, 18)
        assert (text != full) is shortened
        assert len(text) <= len(full)
