"""Compaction pinned on one small history: what each request of an in-band fold sends and says.

A 10,000-token window (limit 8,000), the task and six reads of 5,000 characters (1,250 tokens
each, 7,993 tokens in all): the request passes the in-band threshold, so the session asks the
model for a summary; the reply is folded; later requests keep the fold. Each row states which
messages are sent, which actions are reported, and whether the session is summarizing.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession, SummaryRequest
from windowkeeper.session.steps import fold_point

from .policy_tables import TASK, actions, call, result, session, tokens, tool_ids, turn

SUMMARY = "SUMMARY: the parser is half done; m5.py is next."
FOLDED = "[windowkeeper: this result was folded into the summary that follows]"


def _asked() -> tuple[ContextSession, Any]:
    keeper = session(summarize="in-band", keep_recent_tokens=1_000, mask_keep_recent=None)
    keeper.append(TASK)
    for number in range(6):
        keeper.extend(turn(number, 5_000))
    return keeper, keeper.prepare()


class TestInBandFold:
    def test_the_ask_is_the_whole_request_plus_the_instruction(self) -> None:
        keeper, asked = _asked()
        assert asked.summary_requested
        assert asked.actions == ()
        assert asked.deleted_range is None
        assert tool_ids(asked.messages) == ["t0", "t1", "t2", "t3", "t4", "t5"]
        last = asked.messages[-1]["content"]
        assert [block["type"] for block in last] == ["tool_result", "text"]
        assert last[1]["text"].startswith("[windowkeeper: context compaction]")
        assert keeper.summarizing  # the ask's turn is the newest

    def test_the_reply_is_folded_and_never_sent(self) -> None:
        keeper, _ = _asked()
        keeper.append({"role": "assistant", "content": SUMMARY})
        assert keeper.summarizing  # the reply, not yet folded
        folded = keeper.prepare()
        assert actions(folded) == [
            ("summarize-in-band", (2, 3, 4, 5, 6, 7, 8, 9, 10), (2, 10)),
        ]
        assert folded.deleted_range == (2, 10)
        assert not folded.summary_requested
        assert [m["role"] for m in folded.messages] == [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
        ]
        assert folded.messages[:2] == [TASK, turn(0, 5_000)[0]]
        result, continuation = folded.messages[2]["content"]
        assert result == {"type": "tool_result", "tool_use_id": "t0", "content": FOLDED}
        assert SUMMARY in continuation["text"]
        assert "m0.py, m1.py, m2.py, m3.py, m4.py" in continuation["text"]  # the ledger's reads
        assert folded.messages[3:] == turn(5, 5_000)  # the kept tail, as written
        assert SUMMARY not in str(folded.messages[3:])  # the reply itself is not sent
        assert keeper.summarizing  # the summary is still the newest message

    def test_the_next_turns_keep_the_fold_without_a_refold(self) -> None:
        keeper, _ = _asked()
        keeper.append({"role": "assistant", "content": SUMMARY})
        keeper.prepare()
        keeper.extend(turn(6, 100))
        assert not keeper.summarizing
        later = keeper.prepare()
        assert actions(later) == []  # the fold covers everything hidden: nothing to report
        assert later.deleted_range == (2, 10)
        assert not later.summary_requested  # the request right after a fold never asks
        assert tool_ids(later.messages) == ["t0", "t5", "t6"]
        assert SUMMARY in later.messages[2]["content"][1]["text"]

    def test_a_reply_that_is_not_a_summary_is_declined_and_sent(self) -> None:
        keeper, _ = _asked()
        keeper.extend(turn(6, 100))  # the model called a tool instead of summarizing
        assert not keeper.summarizing
        declined = keeper.prepare()
        assert [(a.step, a.deleted_range) for a in declined.actions][:1] == [
            ("summary-declined", None)
        ]
        assert "not a summary" in (declined.actions[0].reason or "")
        assert "t6" in tool_ids(declined.messages)


FOUR_K = [TASK, *turn(0, 4_000), *turn(1, 4_000), *turn(2, 4_000)]


class TestFoldPoint:
    """Where a fold cuts: the latest assistant message whose tail (from it to the end, about four
    characters of JSON a token) holds ``keep_recent_tokens``, past the first pair and ``start``.

    The view is the task and three reads of 4,000 characters; the newest turn (messages 5-6) is
    1,062 tokens by that measure, the last two turns (messages 3-6) 2,124.
    """

    @pytest.mark.parametrize(
        ("start", "keep", "point"),
        [
            (0, 1, 5),
            (0, 1_062, 5),  # the newest turn holds exactly the tail asked for
            (0, 1_063, 3),  # one token more: the turn before it is kept too
            (0, 2_124, 3),
            (0, 2_125, None),  # nothing may fold but the first pair: no cut
            (3, 1, 5),
            (3, 1_063, None),  # message 3 is where the hidden part ends: it cannot be the cut
            (5, 1, None),  # the newest turn's answer is never folded
        ],
    )
    def test_the_cut(self, start: int, keep: int, point: int | None) -> None:
        assert fold_point(FOUR_K, start, keep) == point


class TestLedgerFold:
    """``summarize=True``: the pre-flight folds with the ledger alone, one action, nothing more."""

    def test_one_fold_covers_the_hidden_turns_and_reports_nothing_else(self) -> None:
        keeper = session(summarize=True, keep_recent_tokens=1_000, mask_keep_recent=None)
        keeper.append(TASK)
        for number in range(7):
            keeper.extend(turn(number, 5_000))
        prepared = keeper.prepare()
        assert [
            (a.step, a.messages, a.deleted_range, a.tokens_before, a.tokens_after)
            for a in prepared.actions
        ] == [("summarize", tuple(range(2, 13)), (2, 12), 8_885, 1_434)]
        assert prepared.deleted_range == (2, 12)
        assert prepared.preflight_acted
        assert prepared.messages[:2] == [TASK, turn(0, 5_000)[0]]
        result, continuation = prepared.messages[2]["content"]
        assert result == {"type": "tool_result", "tool_use_id": "t0", "content": FOLDED}
        assert "No summary of them is available" in continuation["text"]
        assert "Files read: m0.py, m1.py, m2.py, m3.py, m4.py, m5.py" in continuation["text"]
        assert prepared.messages[3:] == turn(6, 5_000)
        assert prepared.estimated_tokens == tokens(prepared.messages) == 1_434


class TestSummarizerFold:
    """A summarizer callable: what it is given (the ledger) and what the continuation shows."""

    EXACT = "w" * 299 + "!"  # an instruction of exactly the 300 characters an earlier one shows

    def _fold(self) -> tuple[list[SummaryRequest], Any]:
        asked: list[SummaryRequest] = []

        def summarizer(request: SummaryRequest) -> str:
            asked.append(request)
            return SUMMARY

        keeper = session(summarize=summarizer, keep_recent_tokens=1_000, mask_keep_recent=None)
        history: list[dict[str, Any]] = [TASK]
        for number in range(22):
            history.append({"role": "assistant", "content": f"answer {number}"})
            words = self.EXACT if number == 2 else f"instruction {number}"
            history.append({"role": "user", "content": words})
        history += [call(30, "shell", command=["bash", "-lc", "make test"]), result(30, "ok")]
        history += [call(31, "shell", command=["git", "commit", "-m"]), result(31, "ok")]
        for number in range(7):
            history += turn(number, 5_000)
        keeper.extend(history)
        return asked, keeper.prepare()

    def test_the_summarizer_gets_the_ledger_of_what_it_folds(self) -> None:
        asked, prepared = self._fold()
        assert actions(prepared) == [("summarize", tuple(range(2, 61)), (2, 60))]
        [request] = asked
        assert request.ledger.task == "Fix the parser."
        assert request.ledger.commands == ("make test", "git commit -m")  # bash -lc: its script
        assert len(request.ledger.instructions) == 22
        assert request.ledger.instructions[2] == self.EXACT
        assert request.ledger.latest_instruction == "instruction 21"

    def test_the_continuation_shows_the_latest_twenty_instructions_whole(self) -> None:
        _, prepared = self._fold()
        text = prepared.messages[2]["content"][-1]["text"]
        assert SUMMARY in text
        shown = [line[2:] for line in text.splitlines() if line.startswith("- instruction ")]
        assert shown == [f"instruction {number}" for number in range(3, 22)]
        assert "(2 earlier instructions not shown)" in text
        assert f"\n- {self.EXACT}\n" in text  # exactly 300 characters: not cut
        assert "Commands run (oldest first):\n- `make test`\n- `git commit -m`" in text


class TestRefold:
    def test_over_the_limit_right_after_a_fold_the_old_summary_covers_more(self) -> None:
        """No new summary on the request after a fold: the turns folded now get into the ledger,
        the summary stays, and the action says which messages and what range."""
        keeper, _ = _asked()
        keeper.append({"role": "assistant", "content": SUMMARY})
        keeper.prepare()
        keeper.extend(turn(6, 30_000))
        prepared = keeper.prepare()
        assert actions(prepared) == [("refold", (11, 12, 13), (2, 13))]
        assert prepared.deleted_range == (2, 13)
        assert tool_ids(prepared.messages) == ["t0", "t6"]
        continuation = prepared.messages[2]["content"][1]["text"]
        assert SUMMARY in continuation
        assert "m0.py, m1.py, m2.py, m3.py, m4.py, m5.py" in continuation
        assert prepared.estimated_tokens == tokens(prepared.messages)


class TestDefaultKeep:
    def test_a_large_window_keeps_at_most_eight_thousand_tokens_verbatim(self) -> None:
        """Window 50,000 (limit 40,000): a quarter of the limit is 10,000, so the default tail is
        the cap, 8,000 tokens, which the newest turn (31,752 characters) holds exactly."""
        keeper = session(50_000, summarize=True, mask_keep_recent=None)
        history = [TASK]
        for number in range(5):
            history += turn(number, 30_000)
        keeper.extend([*history, *turn(5, 31_752)])
        assert fold_point(keeper.history, 0, 8_000) == 11
        assert fold_point(keeper.history, 0, 8_001) == 9
        prepared = keeper.prepare()
        assert [(a.step, a.deleted_range) for a in prepared.actions] == [("summarize", (2, 10))]
        assert tool_ids(prepared.messages) == ["t0", "t5"]
