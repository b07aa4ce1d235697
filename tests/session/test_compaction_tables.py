"""Compaction's counters pinned at their bounds, on sessions reopened from a hand-written state.

A session with compaction on keeps its fold counters in the persisted state
(:class:`~windowkeeper.session.CompactionState`); these rows open a session on a stored state and
a small history, prepare one request, and state what compaction decided: when a paused session
resumes summarizing, and what it reports; then what each reply to an in-band ask is taken for.
Last, :class:`~windowkeeper.session._compaction.Compaction`'s counting rules as the pure
functions of a state they are: the exact state each gives back for hand-made actions.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from windowkeeper import ContextSession
from windowkeeper.session import CompactionState, Fold, SessionState
from windowkeeper.session._compaction import Compaction
from windowkeeper.session.steps import REFOLD, Action, SummarizeTurns
from windowkeeper.storage import Snapshot

from ..counters import RuleCounter
from .policy_tables import TASK, Clock, Held, tokens, turn
from .test_policy_tables_compaction import _asked
from .test_state_codec import stored


def _history(length: int) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"m{i}"}
        if i % 2 == 0
        else {"role": "assistant", "content": f"a{i}"}
        for i in range(length)
    ]


def _reopened(compaction: dict[str, Any], length: int, **options: Any) -> ContextSession:
    state = {**stored(compaction=compaction), "history_length": length}
    backend = Held(Snapshot(version=1, history=_history(length), state=state))
    options.setdefault("summarize", True)
    return ContextSession(
        10_000, store=backend, counter=RuleCounter(tokens), clock=Clock(), **options
    )


class TestResumingAfterAPause:
    """Paused at a history of ``paused`` messages, summarizing resumes once the history has a
    fifth more, at least 8 more: 11 -> 19, 51 -> 61."""

    PAUSED: ClassVar[dict[str, Any]] = {
        "paused_at": None,
        "poor_folds": 2,
        "folds": 2,
        "folded_at": 0,
    }

    @pytest.mark.parametrize(
        ("paused", "length", "resumes"),
        [(11, 17, False), (11, 19, True), (11, 21, True), (51, 59, False), (51, 61, True)],
    )
    def test_when(self, paused: int, length: int, resumes: bool) -> None:
        keeper = _reopened({**self.PAUSED, "paused_at": paused}, length)
        prepared = keeper.prepare()
        compaction = keeper.state.compaction
        if resumes:
            assert [(a.step, a.reason) for a in prepared.actions] == [
                (
                    "summarize-resumed",
                    f"the history grew from {paused} to {length} messages since summarizing paused",
                )
            ]
            assert (compaction.paused_at, compaction.poor_folds) == (None, 0)
        else:
            assert prepared.actions == ()
            assert (compaction.paused_at, compaction.poor_folds) == (paused, 2)
        assert (compaction.folds, compaction.folded_at) == (2, 0)  # the rest is kept

    def test_a_session_not_paused_reports_nothing(self) -> None:
        keeper = _reopened(self.PAUSED, 61)
        assert keeper.prepare().actions == ()
        assert keeper.state.compaction.poor_folds == 2


THINKING = {"type": "thinking", "thinking": "t", "signature": "s"}
EMPTY = "an empty reply to the in-band ask: asked again later"


class TestTheReplyToAnAsk:
    """The message after an in-band ask (``test_policy_tables_compaction``'s: messages 2-12
    are to be folded): a summary is an assistant message of text and thinking only, its text
    parts joined; one with nothing in it is an empty reply, declined and never sent."""

    @pytest.mark.parametrize(
        ("content", "summary"),
        [
            ("SUM", "SUM"),
            ([THINKING, {"type": "text", "text": "SUM"}], "SUM"),
            ([{"type": "text", "text": "A"}, {"type": "text", "text": " B "}], "A\n B"),
            ([{"type": "text", "text": "  "}, {"type": "text", "text": "B"}], "B"),
        ],
    )
    def test_a_summary_is_folded(self, content: Any, summary: str) -> None:
        keeper, _ = _asked()
        keeper.append({"role": "assistant", "content": content})
        assert keeper.summarizing
        prepared = keeper.prepare()
        assert [(a.step, a.deleted_range) for a in prepared.actions] == [
            ("summarize-in-band", (2, 10))
        ]
        fold = keeper.state.compaction.fold
        assert fold is not None
        assert (fold.end, fold.summary) == (10, summary)
        assert keeper.state.compaction.excluded == (13,)  # the reply is never sent
        assert keeper.summarizing  # it is still the newest message
        keeper.append({"role": "user", "content": "Go on."})
        assert not keeper.summarizing

    @pytest.mark.parametrize(
        "content",
        [
            [THINKING],
            [{"type": "redacted_thinking", "data": "d"}],
            [{"type": "text", "text": "  "}],
            [{"type": "text", "text": " "}, THINKING],
            [{**THINKING, "text": "stray"}],  # only a text block's text is text
            "",
        ],
    )
    def test_an_empty_reply_is_declined_and_left_out(self, content: Any) -> None:
        keeper, _ = _asked()
        keeper.append({"role": "assistant", "content": content})
        assert keeper.summarizing
        prepared = keeper.prepare()
        assert [(a.step, a.reason) for a in prepared.actions] == [("summary-declined", EMPTY)]
        compaction = keeper.state.compaction
        assert (compaction.fold, compaction.declined, compaction.excluded) == (None, 1, (13,))
        assert prepared.summary_requested  # asked again, on the same request
        assert content not in [m["content"] for m in prepared.messages]

    def test_a_reply_with_a_tool_call_is_the_models_turn(self) -> None:
        keeper, _ = _asked()
        call = {"type": "tool_use", "id": "x1", "name": "Read", "input": {}}
        keeper.append({"role": "assistant", "content": [{"type": "text", "text": "S"}, call]})
        assert not keeper.summarizing
        keeper.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "x1", "content": "ok"}],
            }
        )
        prepared = keeper.prepare()
        assert [(a.step, a.reason) for a in prepared.actions] == [
            (
                "summary-declined",
                "a reply that is not a summary to the in-band ask: asked again later",
            )
        ]
        compaction = keeper.state.compaction
        assert (compaction.fold, compaction.declined, compaction.excluded) == (None, 1, ())

    def test_the_ask_stands_until_a_reply_comes(self) -> None:
        keeper, asked = _asked()
        assert keeper.summarizing  # the ask's turn is the newest
        again = keeper.prepare()  # no reply yet: the same ask
        assert again.summary_requested
        assert again.messages == asked.messages
        assert keeper.state.compaction.pending == (11, 13)


def _fold(before: int, after: int) -> Action:
    return Action("summarize", deleted_range=(2, 5), tokens_before=before, tokens_after=after)


class TestCountingFolds:
    """:meth:`Compaction.counted`: a fold that frees less than a tenth of the request is poor;
    two poor ones in a row pause summarizing until the history has a fifth more messages."""

    compaction = Compaction(SummarizeTurns())

    @pytest.mark.parametrize(
        ("before", "after", "poor"),
        [
            (1_000, 900, False),
            (1_000, 901, True),
            (1_000, 0, False),
            (1_000, 1_000, True),
            (1, 0, False),  # all of it freed, however small
        ],
    )
    def test_a_fold_that_frees_less_than_a_tenth_is_poor(
        self, before: int, after: int, poor: bool
    ) -> None:
        state = SessionState(requests=7, compaction=CompactionState(folds=3, declined=1))
        counted, paused = self.compaction.counted(state, [_fold(before, after)], 40)
        assert counted == SessionState(
            requests=7,
            compaction=CompactionState(folds=4, poor_folds=int(poor), folded_at=7, declined=0),
        )
        assert paused is None

    def test_a_good_fold_clears_the_poor_count(self) -> None:
        state = SessionState(compaction=CompactionState(poor_folds=1))
        counted, paused = self.compaction.counted(state, [_fold(1_000, 500)], 40)
        assert (counted.compaction.poor_folds, paused) == (0, None)

    def test_the_second_poor_fold_in_a_row_pauses(self) -> None:
        state = SessionState(requests=9, compaction=CompactionState(folds=1, poor_folds=1))
        counted, paused = self.compaction.counted(state, [_fold(1_000, 950)], 40)
        assert counted.compaction == CompactionState(
            folds=2, poor_folds=2, folded_at=9, paused_at=40
        )
        assert paused == Action(
            "summarize-paused",
            reason="2 folds in a row freed less than 10% of the request: no new summary until"
            " the history has 48 messages",
        )

    def test_a_paused_session_is_not_paused_again(self) -> None:
        state = SessionState(compaction=CompactionState(poor_folds=2, paused_at=30))
        counted, paused = self.compaction.counted(state, [_fold(1_000, 950)], 40)
        assert (counted.compaction.paused_at, counted.compaction.poor_folds, paused) == (
            30,
            3,
            None,
        )

    def test_a_refold_counts_only_for_the_next_ask(self) -> None:
        state = SessionState(requests=5, compaction=CompactionState(folds=2, poor_folds=1))
        counted, paused = self.compaction.counted(state, [Action(REFOLD, deleted_range=(2, 9))], 40)
        assert counted.compaction == CompactionState(folds=2, poor_folds=1, folded_at=5)
        assert paused is None

    def test_other_steps_are_not_counted(self) -> None:
        state = SessionState(requests=5, compaction=CompactionState(poor_folds=1))
        actions = [Action("hide-turns", deleted_range=(2, 9), tokens_before=900, tokens_after=899)]
        assert self.compaction.counted(state, actions, 40) == (state, None)

    @pytest.mark.parametrize(
        ("compaction", "requests", "may"),
        [
            (CompactionState(), 0, True),  # no fold yet: even the first request may ask
            (CompactionState(folded_at=4), 5, False),  # the request right after a fold
            (CompactionState(folded_at=4), 6, True),
            (CompactionState(folded_at=0), 1, False),
            (CompactionState(folded_at=0), 2, True),
            (CompactionState(folded_at=None, paused_at=10), 3, False),
        ],
    )
    def test_when_a_new_summary_may_be_asked_for(
        self, compaction: CompactionState, requests: int, may: bool
    ) -> None:
        state = SessionState(requests=requests, compaction=compaction)
        assert self.compaction.may_summarize(state) is may


READS = [TASK, *(message for number in range(6) for message in turn(number, 50))]


class TestCoveringWhatIsHidden:
    """:meth:`Compaction.cover_hidden`: every hidden turn is in the continuation's ledger. The
    history is the task and six reads (m0.py at messages 1-2, ..., m5.py at 11-12)."""

    compaction = Compaction(SummarizeTurns())

    def test_nothing_hidden_needs_no_continuation(self) -> None:
        assert self.compaction.cover_hidden(SessionState(), READS) is None

    @pytest.mark.parametrize("end", [6, 8])
    def test_a_fold_that_reaches_the_range_covers_it(self, end: int) -> None:
        state = SessionState(
            deleted_range=(2, 6), compaction=CompactionState(fold=Fold(end, "t", "S"))
        )
        assert self.compaction.cover_hidden(state, READS) is None

    def test_turns_hidden_with_no_fold_get_a_ledger_only_one(self) -> None:
        covered = self.compaction.cover_hidden(SessionState(deleted_range=(2, 6)), READS)
        assert covered is not None
        fold = covered.compaction.fold
        assert fold is not None
        assert (fold.end, fold.summary, covered.deleted_range) == (6, None, (2, 6))
        assert "Files read: m0.py, m1.py, m2.py\n" in fold.text  # up to the range's end
        assert "No summary of them is available" in fold.text

    def test_turns_hidden_past_the_fold_join_its_ledger_with_its_summary(self) -> None:
        state = SessionState(
            deleted_range=(2, 8), compaction=CompactionState(fold=Fold(6, "old", "S"))
        )
        covered = self.compaction.cover_hidden(state, READS)
        assert covered is not None
        fold = covered.compaction.fold
        assert fold is not None
        assert (fold.end, fold.summary) == (8, "S")
        assert "\n\nS\n\n" in fold.text
        assert "Files read: m0.py, m1.py, m2.py, m3.py\n" in fold.text


class TestTighteningTheFold:
    """:meth:`Compaction.tightened`: the last remedy shortens the fold's text by four
    characters for each token over, down to 300 characters, and keeps later folds as short."""

    def test_no_fold_or_a_fold_of_three_hundred_characters_cannot_go_shorter(self) -> None:
        compaction = Compaction(SummarizeTurns())
        assert compaction.tightened(SessionState(deleted_range=(2, 6)), READS, 10) is None
        short = SessionState(
            deleted_range=(2, 6), compaction=CompactionState(fold=Fold(6, "y" * 300, None))
        )
        assert compaction.tightened(short, READS, 10) is None

    @pytest.mark.parametrize(
        ("length", "excess", "budget"), [(2_000, 100, 1_600), (2_000, 450, 300)]
    )
    def test_the_text_is_cut_to_the_budget(self, length: int, excess: int, budget: int) -> None:
        compaction = Compaction(SummarizeTurns())
        state = SessionState(
            deleted_range=(2, 6), compaction=CompactionState(fold=Fold(6, "y" * length, "S"))
        )
        tightened = compaction.tightened(state, READS, excess)
        assert tightened is not None
        fold = tightened.compaction.fold
        assert fold is not None
        assert (fold.end, fold.summary) == (6, "S")
        assert len(fold.text) <= budget
        assert "Files read: m0.py, m1.py, m2.py\n" in fold.text or budget == 300
        assert compaction.step.budget_chars == budget
        assert tightened.deleted_range == (2, 6)

    def test_a_call_answered_by_the_kept_turn_is_not_waiting(self) -> None:
        """A fold that took the newest call (message 11, reading m5.py) keeps the turn with its
        result (12): shortened, its ledger still has that result, so the call is not listed as
        waiting, as in the ledger the fold was made with."""
        compaction = Compaction(SummarizeTurns())
        state = SessionState(
            deleted_range=(2, 11), compaction=CompactionState(fold=Fold(11, "y" * 2_000, "S"))
        )
        tightened = compaction.tightened(state, READS, 100)
        assert tightened is not None
        fold = tightened.compaction.fold
        assert fold is not None
        assert "Files read: m0.py, m1.py, m2.py, m3.py, m4.py, m5.py\n" in fold.text
        assert "Tool calls still waiting for a result:" not in fold.text

    def test_a_text_already_as_short_as_the_budget_is_left(self) -> None:
        compaction = Compaction(SummarizeTurns())
        covered = compaction.cover_hidden(SessionState(deleted_range=(2, 6)), READS)
        assert covered is not None
        assert compaction.tightened(covered, READS, 0) is None  # no shorter text to give


SUMMARY_REPLY = {"role": "assistant", "content": "SUMMARY"}
ASKED = CompactionState(pending=(7, 13), folds=1, declined=1)


class TestAdoptingTheReply:
    """:meth:`Compaction.adopt`, after an ask made at a history of 13 messages (:data:`READS`)
    to fold before message 7."""

    compaction = Compaction(SummarizeTurns())

    def test_no_ask_no_change(self) -> None:
        state = SessionState(requests=3)
        assert self.compaction.adopt(state, [*READS, SUMMARY_REPLY]) == (state, None)

    def test_no_reply_yet_the_ask_stands(self) -> None:
        state = SessionState(compaction=ASKED)
        assert self.compaction.adopt(state, READS) == (state, None)

    @pytest.mark.parametrize(("current", "start"), [(None, 2), ((2, 4), 5)])
    def test_a_summary_is_folded_in(self, current: tuple[int, int] | None, start: int) -> None:
        state = SessionState(deleted_range=current, generation=2, requests=4, compaction=ASKED)
        adopted, action = self.compaction.adopt(state, [*READS, SUMMARY_REPLY])
        assert action == Action(
            "summarize-in-band", messages=tuple(range(start, 7)), deleted_range=(2, 6)
        )
        fold = adopted.compaction.fold
        assert fold is not None
        assert (fold.end, fold.summary) == (6, "SUMMARY")
        assert "Files read: m0.py, m1.py, m2.py\n" in fold.text
        assert adopted.compaction == CompactionState(
            fold=fold, folds=2, folded_at=4, excluded=(13,), declined=0
        )
        assert (adopted.deleted_range, adopted.generation) == ((2, 6), 3)

    @pytest.mark.parametrize(("current", "folds"), [((2, 6), False), ((2, 5), True)])
    def test_a_range_that_already_reaches_the_point_leaves_nothing_to_fold(
        self, current: tuple[int, int], folds: bool
    ) -> None:
        state = SessionState(deleted_range=current, compaction=ASKED)
        adopted, action = self.compaction.adopt(state, [*READS, SUMMARY_REPLY])
        assert (action is not None) is folds
        if not folds:
            assert adopted == SessionState(
                deleted_range=current, compaction=CompactionState(folds=1, declined=1)
            )

    @pytest.mark.parametrize(
        ("declined", "reply", "excluded", "reason"),
        [
            (0, "", (13,), "an empty reply to the in-band ask: asked again later"),
            (1, "", (13,), "an empty reply to the in-band ask: no more asks until the next fold"),
            (
                0,
                [{"type": "tool_use", "id": "t9", "name": "Read", "input": {}}],
                (),
                "a reply that is not a summary to the in-band ask: asked again later",
            ),
        ],
    )
    def test_anything_else_is_declined(
        self, declined: int, reply: Any, excluded: tuple[int, ...], reason: str
    ) -> None:
        state = SessionState(compaction=CompactionState(pending=(7, 13), declined=declined))
        adopted, action = self.compaction.adopt(
            state, [*READS, {"role": "assistant", "content": reply}]
        )
        assert action == Action("summary-declined", reason=reason)
        assert adopted == SessionState(
            compaction=CompactionState(declined=declined + 1, excluded=excluded)
        )


class TestAsking:
    """:meth:`Compaction.ask` on :data:`READS` (whose latest turn starts at message 12, so a
    fold keeping one token verbatim is made before message 11); every request measures 500."""

    @staticmethod
    def _ask(state: SessionState, limit: float = 1_000, keep: int = 1) -> Any:
        compaction = Compaction(SummarizeTurns(keep_recent_tokens=keep))
        return compaction.ask(
            state,
            view=READS,
            messages=READS,
            history_length=13,
            estimate=lambda messages: 500,
            ceiling=limit,
        )

    def test_the_ask_is_the_request_with_the_instruction_and_remembers_its_point(self) -> None:
        asked = self._ask(SessionState(compaction=CompactionState(declined=1)))
        assert asked is not None
        state, messages, size = asked
        assert state.compaction == CompactionState(declined=1, pending=(11, 13))
        assert messages[:-1] == READS[:-1]
        assert messages[-1]["content"][:-1] == READS[-1]["content"]
        assert messages[-1]["content"][-1]["text"].startswith("[windowkeeper: context compaction]")
        assert size == 500

    @pytest.mark.parametrize(("limit", "asks"), [(500, True), (499, False)])
    def test_an_ask_that_does_not_fit_is_not_made(self, limit: int, asks: bool) -> None:
        assert (self._ask(SessionState(), limit=limit) is not None) is asks

    def test_two_declined_asks_stop_asking(self) -> None:
        assert self._ask(SessionState(compaction=CompactionState(declined=2))) is None

    def test_a_pending_ask_keeps_its_point(self) -> None:
        asked = self._ask(SessionState(compaction=CompactionState(pending=(5, 9))))
        assert asked is not None
        assert asked[0].compaction.pending == (5, 13)

    def test_no_fold_point_no_ask(self) -> None:
        assert self._ask(SessionState(), keep=10**6) is None

    @pytest.mark.parametrize(
        ("summary", "asks"),
        [("s" * 400, False), ("s" * 168, False), ("s" * 164, True), ("s" * 4, True)],
    )
    def test_after_a_fold_only_when_enough_is_new(self, summary: str, asks: bool) -> None:
        """From message 2 to the point: 9 messages of 336 tokens (36 + 39 + 36 + ... at four
        characters of JSON a token), against 8 times the summary's ``len // 4 + 1`` tokens:
        336 for 164 characters (enough, exactly), 344 for 168."""
        state = SessionState(compaction=CompactionState(fold=Fold(1, "text", summary)))
        assert (self._ask(state) is not None) is asks
