"""Compaction's counters pinned at their bounds, on sessions reopened from a hand-written state.

A session with compaction on keeps its fold counters in the persisted state
(:class:`~windowkeeper.session.CompactionState`); these rows open a session on a stored state and
a small history, prepare one request, and state what compaction decided: when a paused session
resumes summarizing, and what it reports.
"""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from windowkeeper import ContextSession
from windowkeeper.storage import Snapshot

from ..counters import RuleCounter
from .policy_tables import Clock, Held, tokens
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
