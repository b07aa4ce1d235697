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


class TestInBandFoldTakesTheAskedTurn:
    """With no verbatim tail asked for (the default), the in-band fold takes the turn the ask
    was made on too: the model wrote its summary with that turn in view. The continuation is
    then all that follows messages 0-1, and the ledger runs to the end of that turn."""

    def test_the_request_after_the_reply(self) -> None:
        keeper = session(summarize="in-band", mask_keep_recent=None)
        keeper.append(TASK)
        for number in range(6):
            keeper.extend(turn(number, 5_000))
            asked = keeper.prepare()
        assert asked.summary_requested
        assert asked.estimated_tokens == 7_993  # past in_band_at of the 8,000-token limit
        keeper.append({"role": "assistant", "content": SUMMARY})
        folded = keeper.prepare()
        assert actions(folded) == [("summarize-in-band", tuple(range(2, 13)), (2, 12))]
        assert [m["role"] for m in folded.messages] == ["user", "assistant", "user"]
        assert folded.messages[:2] == [TASK, turn(0, 5_000)[0]]
        result, continuation = folded.messages[2]["content"]
        assert result == {"type": "tool_result", "tool_use_id": "t0", "content": FOLDED}
        assert SUMMARY in continuation["text"]
        assert "Files read: m0.py, m1.py, m2.py, m3.py, m4.py, m5.py" in continuation["text"]
        assert folded.estimated_tokens == tokens(folded.messages) == 198
        keeper.extend(turn(6, 100))
        later = keeper.prepare()
        assert actions(later) == []
        assert not later.summary_requested
        assert tool_ids(later.messages) == ["t0", "t6"]


class TestNoAskAfterARefold:
    """A refold (a pre-flight fold that keeps the last summary) is a new continuation too: the
    request right after it does not ask for a summary, however near the limit it is."""

    def test_the_request_after_a_refold_does_not_ask(self) -> None:
        keeper = session(summarize="in-band", keep_recent_tokens=100, mask_keep_recent=None)
        keeper.append(TASK)
        for number in range(6):
            keeper.extend(turn(number, 5_000))
        assert keeper.prepare().summary_requested
        keeper.append({"role": "assistant", "content": SUMMARY})
        assert actions(keeper.prepare())[0][0] == "summarize-in-band"
        keeper.extend(turn(6, 27_000))  # over the limit right after the fold: a refold
        refolded = keeper.prepare()
        assert actions(refolded) == [("refold", (11, 12, 13), (2, 13))]
        keeper.extend(turn(7, 2_000))
        after = keeper.prepare()
        assert after.estimated_tokens == 7_494  # past in_band_at (6,800), under the limit
        assert not after.summary_requested
        assert actions(after) == []
        assert tool_ids(after.messages) == ["t0", "t6", "t7"]


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
        """Window 50,000 (limit 40,000): an explicit tail of 8,000 tokens is what the newest turn
        (31,752 characters) and the answer it replies to hold exactly; by default (no tail) the
        fold takes that answer too and sends the newest result as text."""
        keeper = session(50_000, summarize=True, mask_keep_recent=None)
        history = [TASK]
        for number in range(5):
            history += turn(number, 30_000)
        keeper.extend([*history, *turn(5, 31_752)])
        assert fold_point(keeper.history, 0, 8_000) == 11
        assert fold_point(keeper.history, 0, 8_001) == 9
        prepared = keeper.prepare()
        assert [(a.step, a.deleted_range) for a in prepared.actions] == [("summarize", (2, 11))]
        assert tool_ids(prepared.messages) == ["t0"]
        assert len(prepared.messages) == 3


SYSTEM = "You are a careful coding agent."
TOOLS = [{"name": "Read", "input_schema": {"type": "object"}}]


class _Recorder:
    """An out-of-band summarizer keeping every request it is given."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    def __call__(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        return SUMMARY


class TestOutOfBandSharesThePrefix:
    """The summarizer of an out-of-band fold is offered the request sent before (messages,
    system prompt, tools), so that its call can be served from the conversation's cache."""

    def test_the_previous_request_is_offered(self) -> None:
        summarizer = _Recorder()
        keeper = session(summarize=summarizer, keep_recent_tokens=1_000, mask_keep_recent=None)
        keeper.append(TASK)
        sent = []
        for number in range(7):
            keeper.extend(turn(number, 5_000))
            sent.append(keeper.prepare(system=SYSTEM, tools=TOOLS))
        (request,) = summarizer.requests
        folding = next(i for i, p in enumerate(sent) if p.actions)
        assert [a.step for a in sent[folding].actions] == ["summarize"]
        assert request.prefix == tuple(sent[folding - 1].messages)
        assert request.system == SYSTEM
        assert request.tools == tuple(TOOLS)
        assert tool_ids(request.prefix) == [f"t{n}" for n in range(folding)]
        # every message it folds (after messages 0-1) is in the prefix, as the model saw it
        assert tool_ids(request.messages) == tool_ids(request.prefix)[1:]
        assert all(message in request.prefix for message in request.messages)

    def test_none_is_offered_before_a_first_request(self) -> None:
        summarizer = _Recorder()
        keeper = session(summarize=summarizer, keep_recent_tokens=1_000, mask_keep_recent=None)
        keeper.append(TASK)
        for number in range(7):
            keeper.extend(turn(number, 5_000))
        keeper.prepare()  # the first request already over the limit: it folds at once
        (request,) = summarizer.requests
        assert request.prefix == ()
        assert request.system is None
        assert request.tools is None


class TestDeepFold:
    """By default a fold keeps only the newest turn verbatim, without the answer it replies to:
    the continuation carries the state of work, so the fold frees all it can (a verbatim tail,
    the answer with it, is kept only when asked). The newest results, whose call is folded, are
    sent as text after the continuation, and the ledger runs to the end of that turn."""

    def _folded(self, **options: Any) -> Any:
        keeper = session(summarize=True, mask_keep_recent=None, **options)
        keeper.append(TASK)
        for number in range(7):
            keeper.extend(turn(number, 5_000))
            prepared = keeper.prepare()
        return prepared

    def test_the_request_after_a_fold(self) -> None:
        folded = self._folded()
        assert actions(folded) == [("summarize", tuple(range(2, 14)), (2, 13))]
        assert len(folded.messages) == 3  # messages 0-1, the continuation and the newest turn
        assert folded.messages[:2] == [TASK, turn(0, 5_000)[0]]
        placeholder, ledger, header, result = folded.messages[2]["content"]
        assert placeholder == {"type": "tool_result", "tool_use_id": "t0", "content": FOLDED}
        assert ledger["text"].startswith("[windowkeeper: earlier turns of this conversation were")
        assert "Files read: m0.py, m1.py, m2.py, m3.py, m4.py, m5.py, m6.py" in ledger["text"]
        assert "waiting" not in ledger["text"]
        assert header == {
            "type": "text",
            "text": "[windowkeeper: the result of a tool call (t6) whose call is not in this"
            " request:]",
        }
        assert result == {"type": "text", "text": turn(6, 5_000)[1]["content"][0]["content"]}
        assert folded.estimated_tokens == 1_438

    def test_a_tail_is_kept_when_asked_for(self) -> None:
        folded = self._folded(keep_recent_tokens=2_000)
        assert actions(folded) == [("summarize", tuple(range(2, 11)), (2, 10))]
        assert folded.messages[3:] == [*turn(5, 5_000), *turn(6, 5_000)]


class TestSummaryWorth:
    """Once there is a summary, a new one is asked for only when the turns it would add hold at
    least eight times its size; fewer are folded into the ledger beside it (a refold)."""

    def _run(self, summary_chars: int, turns: int = 14) -> tuple[list[list[str]], list[Any]]:
        calls: list[list[str]] = []

        def summarizer(request: SummaryRequest) -> str:
            calls.append(tool_ids(request.messages))
            return "SUMMARY " + "s" * (summary_chars - 8)

        keeper = session(summarize=summarizer, mask_keep_recent=None)
        keeper.append(TASK)
        folds = []
        for number in range(turns):
            keeper.extend(turn(number, 5_000))
            prepared = keeper.prepare()
            folds += actions(prepared)
        return calls, folds

    def test_too_little_new_keeps_the_last_summary(self) -> None:
        """A 4,400-character summary (1,101 tokens): the second fold adds six turns of 1,250
        tokens, less than 8 x 1,101, so no second summary is paid for."""
        calls, folds = self._run(4_400)
        assert calls == [["t1", "t2", "t3", "t4", "t5", "t6"]]
        assert folds == [
            ("summarize", tuple(range(2, 14)), (2, 13)),
            ("refold", tuple(range(14, 26)), (2, 25)),
        ]

    def test_enough_new_asks_again(self) -> None:
        """A 2,000-character summary (501 tokens): five new turns are worth a new one."""
        calls, folds = self._run(2_000)
        assert calls == [
            ["t1", "t2", "t3", "t4", "t5", "t6"],
            ["t7", "t8", "t9", "t10", "t11", "t12"],
        ]
        assert [step for step, _, _ in folds] == ["summarize", "summarize"]

    def test_in_band_does_not_ask_for_too_little_new(self) -> None:
        """In-band, past ``in_band_at`` with five turns (about 6,300 tokens) since a summary of
        1,101 tokens: no ask; the pre-flight folds them into the ledger beside that summary (a
        refold) when the limit comes. The in-band fold took the turn it was asked on (messages
        11-12), so the refold starts after the summary's reply (message 13)."""
        keeper = session(summarize="in-band", mask_keep_recent=None)
        keeper.append(TASK)
        asks = []
        for number in range(12):
            keeper.extend(turn(number, 5_000))
            prepared = keeper.prepare()
            asks.append((number, prepared.estimated_tokens, prepared.summary_requested))
            if prepared.summary_requested:
                keeper.append({"role": "assistant", "content": "SUMMARY " + "s" * 4_392})
                assert actions(keeper.prepare())[0][0] == "summarize-in-band"
        assert asks[5] == (5, 7_993, True)  # the first summary is always asked for
        assert asks[10] == (10, 7_276, False)  # past 6,400, but too little new since
        assert asks[11][2] is False
        assert actions(prepared) == [("refold", tuple(range(13, 25)), (2, 24))]
        assert "SUMMARY sss" in prepared.messages[2]["content"][1]["text"]  # the last one kept


def test_a_long_latest_instruction_is_sent_whole_after_a_small_windows_fold() -> None:
    """At 8k the continuation's budget (15 % of the room) is shorter than a 2,600-character
    instruction: the must-keep lines are the budget then, so the instruction follows the fold
    whole instead of head and tail."""
    items = "\n".join(
        f"Item {k}: make handler {k} check the caller's role first." for k in range(45)
    )
    instruction = "Work through every item below; keep the tests passing.\n" + items
    assert 2_400 < len(instruction) < 3_000
    chat = ContextSession(context_window=8_000, summarize=True)
    chat.extend([TASK, {"role": "assistant", "content": "Ready."}])
    chat.append({"role": "user", "content": instruction})
    for k in range(20):
        chat.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {k}: " + "reading the handlers. " * 80},
                    {
                        "type": "tool_use",
                        "id": f"r{k}",
                        "name": "Read",
                        "input": {"file_path": f"h{k}.py"},
                    },
                ],
            }
        )
        chat.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"r{k}", "content": "ok"}],
            }
        )
        prepared = chat.prepare(max_output_tokens=200)
        if prepared.deleted_range and prepared.deleted_range[1] >= 2:
            break
    else:
        pytest.fail("the session never folded the instruction's message")
    sent = "\n".join(
        block["text"] if isinstance(block, dict) else block
        for message in prepared.messages
        for block in (
            [message["content"]] if isinstance(message["content"], str) else message["content"]
        )
        if isinstance(block, str) or block.get("type") == "text"
    )
    assert " ".join(instruction.split()) in " ".join(sent.split())  # the ledger indents its lines


class TestFoldBeforeMasking:
    """With compaction on, the fold runs before masking old outputs: both rewrite the request
    from its first tool output on, and the fold leaves the smaller request to re-read until the
    next shrink. Seven reads of 5,000 characters (8,885 tokens, limit 8,000), masking on."""

    def test_the_fold_comes_first(self) -> None:
        keeper = session(summarize=True)
        keeper.append(TASK)
        for number in range(7):
            keeper.extend(turn(number, 5_000))
            prepared = keeper.prepare()
        assert [(a.step, a.tokens_before, a.tokens_after) for a in prepared.actions] == [
            ("summarize", 8_885, 1_438)
        ]
        assert actions(prepared) == [("summarize", tuple(range(2, 14)), (2, 13))]
        assert len(prepared.messages) == 3
        assert tool_ids(prepared.messages) == ["t0"]

    def test_without_compaction_masking_is_the_first_remedy(self) -> None:
        keeper = session()
        keeper.append(TASK)
        for number in range(7):
            keeper.extend(turn(number, 5_000))
            prepared = keeper.prepare()
        assert [(a.step, a.messages, a.tokens_before) for a in prepared.actions] == [
            ("mask-outputs", (2, 4, 6, 8), 8_885)
        ]
