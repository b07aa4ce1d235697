"""Compaction by summary in ContextSession: folds, the ledger, no thrash, persistence, rollback."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    ConfigurationError,
    ContextSession,
    SummaryRequest,
    TokenUsage,
    validate_messages,
)
from windowkeeper.session._ledger import LEDGER_HEADING, build_ledger
from windowkeeper.session._ledger_text import TASK_ABOVE
from windowkeeper.session.steps import SummarizeTurns, default_steps
from windowkeeper.session.steps._summarize import LedgerUpTo

from .test_session import Clock, ExactCounter, true_tokens

WINDOW = 40_000
TASK = {
    "role": "user",
    "content": [{"type": "text", "text": "<task>Port the parser to v2.</task>"}],
}
FIRST = {"role": "assistant", "content": [{"type": "text", "text": "I will read the parser."}]}


def _turn(turn: int) -> list[dict[str, Any]]:
    """An edit of one file a turn, with a big result, and now and then a user instruction."""
    call = f"toolu_{turn:03d}"
    result: dict[str, Any] = {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": call, "content": f"ok {turn}\n" + "r" * 6_000}
        ],
    }
    if turn % 5 == 4:
        result["content"].append({"type": "text", "text": f"Please also keep test {turn} green."})
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Now editing module {turn}."},
                {
                    "type": "tool_use",
                    "id": call,
                    "name": "write_to_file",
                    "input": {"path": f"src/mod_{turn}.py", "content": "x = 1\n"},
                },
            ],
        },
        result,
    ]


def _run(session: ContextSession, turns: int, start: int = 0) -> list[Any]:
    if not session.history:
        session.extend([TASK, FIRST, {"role": "user", "content": "Begin."}])
    prepared = []
    for turn in range(start, start + turns):
        request = session.prepare(max_output_tokens=1_000)
        assert true_tokens(request.messages) + 1_000 <= request.max_allowed_size
        assert [v for v in validate_messages(request.messages) if v.rule != "empty-content"] == []
        prepared.append(request)
        session.record_usage(TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=40))
        session.extend(_turn(turn))
    return prepared


def _session(**options: Any) -> ContextSession:
    # Without masking, folding is the first remedy that applies to these results.
    return ContextSession(
        WINDOW, counter=ExactCounter(), clock=Clock(), mask_keep_recent=None, **options
    )


def _continuation(request: Any) -> str | None:
    third = request.messages[2] if len(request.messages) > 2 else None
    if third is None or third["role"] != "user":
        return None
    texts = [b.get("text", "") for b in third["content"] if isinstance(b, dict)]
    joined = "\n".join(texts)
    return joined if LEDGER_HEADING in joined else None


class TestLedgerOnly:
    def test_folded_turns_become_the_ledger_after_the_first_pair(self) -> None:
        prepared = _run(_session(summarize=True, keep_recent_tokens=3_000), 30)
        folds = [p for p in prepared if any(a.step == "summarize" for a in p.actions)]
        assert folds, "the loop outgrows the window: a fold must happen"
        after = prepared[prepared.index(folds[0]) :]
        for request in after:
            assert request.messages[:2][0]["content"] == TASK["content"]
            text = _continuation(request)
            assert text is not None, "the continuation follows messages 0-1"
            # the task is in message 0, right above: the ledger names it, not repeats it
            assert TASK_ABOVE in text
            assert "Port the parser to v2." not in text

    def test_task_frontier_is_kept(self) -> None:
        """After a fold every request carries the task, the latest instruction, each edited file."""
        session = _session(summarize=True, keep_recent_tokens=3_000)
        prepared = _run(session, 30)
        first = next(i for i, p in enumerate(prepared) if _continuation(p))
        for position, request in enumerate(prepared[first:], first):
            sent = json.dumps(request.messages)
            edited = [f"src/mod_{turn}.py" for turn in range(position)]
            missing = [path for path in edited if path not in sent]
            assert missing == [], f"request {position} lost {missing}"
            instructions = [t for t in range(position) if t % 5 == 4]
            if instructions:
                assert f"keep test {instructions[-1]} green" in sent

    def test_never_two_folds_in_a_row_and_poor_folds_stop(self) -> None:
        session = _session(summarize=True, keep_recent_tokens=3_000)
        prepared = _run(session, 40)
        folded = [
            i for i, p in enumerate(prepared) if any(a.step == "summarize" for a in p.actions)
        ]
        assert all(b - a > 1 for a, b in itertools.pairwise(folded))
        poor = [
            a
            for p in prepared
            for a in p.actions
            if a.step == "summarize"
            and (a.tokens_before or 0) - (a.tokens_after or 0) < (a.tokens_before or 0) / 10
        ]
        assert len(poor) <= 2


class TestSummarizer:
    def test_the_summary_is_sent_and_rolls_over(self) -> None:
        requests: list[SummaryRequest] = []

        def summarizer(request: SummaryRequest) -> str:
            requests.append(request)
            return f"SUMMARY {len(requests)}: edited {len(request.messages)} messages' worth."

        prepared = _run(_session(summarize=summarizer, keep_recent_tokens=3_000), 40)
        assert len(requests) >= 2
        assert requests[0].previous_summary is None
        assert requests[1].previous_summary is not None
        assert "SUMMARY 1" in requests[1].previous_summary
        assert all(m["role"] in ("user", "assistant") for m in requests[0].messages)
        last = _continuation(prepared[-1])
        assert last is not None
        assert f"SUMMARY {len(requests)}" in last

    @pytest.mark.parametrize("reply", ["", "   ", None, RuntimeError("model down")])
    def test_no_summary_falls_back_to_the_ledger(self, reply: Any) -> None:
        def summarizer(request: SummaryRequest) -> Any:
            if isinstance(reply, Exception):
                raise reply
            return reply

        step = SummarizeTurns(summarizer, keep_recent_tokens=3_000)
        session = ContextSession(
            WINDOW, counter=ExactCounter(), clock=Clock(), steps=[step, *default_steps(None)[1:]]
        )
        prepared = _run(session, 30)
        text = _continuation(prepared[-1])
        assert text is not None
        assert "No summary" in text
        if isinstance(reply, Exception):
            assert step.last_error is reply

    def test_bad_arguments(self) -> None:
        with pytest.raises(ConfigurationError, match="summarize"):
            ContextSession(WINDOW, summarize="yes")  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match="keep_recent_tokens"):
            ContextSession(WINDOW, summarize=True, keep_recent_tokens=-1)
        with pytest.raises(ConfigurationError, match="steps or summarize"):
            ContextSession(WINDOW, summarize=True, steps=[SummarizeTurns()])


class TestState:
    def test_reopen_gives_the_same_next_request(self, tmp_path: Path) -> None:
        session = _session(summarize=True, keep_recent_tokens=3_000, task_dir=tmp_path)
        _run(session, 30)
        expected = session.prepare(max_output_tokens=1_000).messages
        session.close()
        reopened = _session(summarize=True, keep_recent_tokens=3_000, task_dir=tmp_path)
        assert reopened.prepare(max_output_tokens=1_000).messages == expected

    def test_rollback_undoes_a_fold_and_replay_redoes_it(self) -> None:
        session = _session(summarize=True, keep_recent_tokens=3_000)
        _run(session, 12)
        checkpoint = session.checkpoint()
        later = _run(session, 18, start=12)
        session.rollback(checkpoint)
        again = _run(session, 18, start=12)
        assert [p.messages for p in again] == [p.messages for p in later]
        assert any(_continuation(p) for p in later)

    def test_openai_format_folds_too(self) -> None:
        session = ContextSession(
            WINDOW, clock=Clock(), format="openai", summarize=True, mask_keep_recent=None
        )
        session.append({"role": "user", "content": "Port the parser to v2."})
        session.append({"role": "assistant", "content": "I will read the parser."})
        session.append({"role": "user", "content": "Begin."})
        for turn in range(40):
            request = session.prepare(max_output_tokens=1_000)
            session.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"call_{turn}",
                            "type": "function",
                            "function": {
                                "name": "write_to_file",
                                "arguments": json.dumps({"path": f"src/m{turn}.py"}),
                            },
                        }
                    ],
                }
            )
            session.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "y" * 6_000})
        assert any(a.step == "summarize" for a in request.actions) or any(
            LEDGER_HEADING in json.dumps(m) for m in request.messages
        )


def _summary_reply(number: int) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": f"SUMMARY {number}."}]}


def _in_band_loop(session: ContextSession, turns: int) -> tuple[list[Any], int]:
    """An agent loop that answers an in-band request with a summary, as a model would."""
    if not session.history:
        session.extend([TASK, FIRST, {"role": "user", "content": "Begin."}])
    prepared, summaries = [], 0
    for turn in range(turns):
        request = session.prepare(max_output_tokens=1_000)
        assert true_tokens(request.messages) + 1_000 <= request.max_allowed_size
        assert [v for v in validate_messages(request.messages) if v.rule != "empty-content"] == []
        prepared.append(request)
        session.record_usage(TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=40))
        if request.summary_requested:
            summaries += 1
            session.append(_summary_reply(summaries))
            request = session.prepare(max_output_tokens=1_000)  # the turn goes on
            prepared.append(request)
            session.record_usage(TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=40))
        session.extend(_turn(turn))
    return prepared, summaries


class TestInBand:
    def test_the_request_is_the_usual_one_plus_the_instruction(self) -> None:
        in_band = _session(summarize="in-band", keep_recent_tokens=3_000)
        plain = _session()
        for session in (in_band, plain):
            session.extend([TASK, FIRST, {"role": "user", "content": "Begin."}])
        for turn in range(30):
            asked = in_band.prepare(max_output_tokens=1_000)
            usual = plain.prepare(max_output_tokens=1_000)
            if asked.summary_requested:
                break
            assert asked.messages == usual.messages
            for session, request in ((in_band, asked), (plain, usual)):
                session.record_usage(
                    TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=40)
                )
                session.extend(_turn(turn))
        else:
            pytest.fail("no summary was requested")
        assert asked.messages[:-1] == usual.messages[:-1]  # the cached prefix, whole
        last, before = asked.messages[-1]["content"], usual.messages[-1]["content"]
        assert last[: len(before)] == before
        assert "summary" in json.dumps(last[len(before) :]).lower()

    def test_the_reply_becomes_the_continuation_and_is_never_sent(self) -> None:
        prepared, summaries = _in_band_loop(
            _session(summarize="in-band", keep_recent_tokens=3_000), 40
        )
        assert summaries >= 1
        folded = [p for p in prepared if any(a.step == "summarize-in-band" for a in p.actions)]
        assert folded
        for request in prepared[prepared.index(folded[0]) :]:
            text = _continuation(request)
            assert text is not None
            assert "SUMMARY" in text
            own = [m for m in request.messages if m["content"] == _summary_reply(1)["content"]]
            assert own == []

    def test_a_pending_request_survives_reopen(self, tmp_path: Path) -> None:
        session = _session(summarize="in-band", keep_recent_tokens=3_000, task_dir=tmp_path)
        session.extend([TASK, FIRST, {"role": "user", "content": "Begin."}])
        for turn in range(30):
            request = session.prepare(max_output_tokens=1_000)
            if request.summary_requested:
                break
            session.record_usage(TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=40))
            session.extend(_turn(turn))
        else:
            pytest.fail("no summary was requested")
        session.close()
        reopened = _session(summarize="in-band", keep_recent_tokens=3_000, task_dir=tmp_path)
        reopened.append(_summary_reply(1))
        after = reopened.prepare(max_output_tokens=1_000)
        assert any(a.step == "summarize-in-band" for a in after.actions)
        assert "SUMMARY 1" in (_continuation(after) or "")

    def test_a_reply_that_is_not_a_summary_folds_nothing(self) -> None:
        session = _session(summarize="in-band", keep_recent_tokens=3_000)
        session.extend([TASK, FIRST, {"role": "user", "content": "Begin."}])
        for turn in range(30):
            request = session.prepare(max_output_tokens=1_000)
            session.record_usage(TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=40))
            if request.summary_requested:
                session.extend(_turn(turn))  # the model called a tool instead
                after = session.prepare(max_output_tokens=1_000)
                assert not any(a.step == "summarize-in-band" for a in after.actions)
                return
            session.extend(_turn(turn))
        pytest.fail("no summary was requested")


class TestAsyncSummarizer:
    def test_aprepare_awaits_the_summarizer(self) -> None:
        calls: list[SummaryRequest] = []

        async def summarizer(request: SummaryRequest) -> str:
            calls.append(request)
            await asyncio.sleep(0)
            return f"ASYNC SUMMARY {len(calls)}"

        session = _session(summarize=summarizer, keep_recent_tokens=3_000)
        session.extend([TASK, FIRST, {"role": "user", "content": "Begin."}])

        async def loop() -> list[Any]:
            prepared = []
            for turn in range(30):
                request = await session.aprepare(max_output_tokens=1_000)
                assert true_tokens(request.messages) + 1_000 <= request.max_allowed_size
                prepared.append(request)
                session.record_usage(
                    TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=40)
                )
                session.extend(_turn(turn))
            return prepared

        prepared = asyncio.run(loop())
        assert calls
        assert "ASYNC SUMMARY" in (_continuation(prepared[-1]) or "")
        folds = sum(1 for p in prepared for a in p.actions if a.step == "summarize")
        assert folds == len(calls)  # each awaited summary made one fold, no request twice

    def test_prepare_with_an_async_summarizer_says_to_await(self) -> None:
        async def summarizer(request: SummaryRequest) -> str:
            return "never"

        session = _session(summarize=summarizer, keep_recent_tokens=3_000)
        with pytest.raises(ConfigurationError, match="aprepare"):
            _run(session, 30)


class TestLedgerUpTo:
    @pytest.mark.parametrize("ends", [[5, 9, 9, 20, 41], [30, 12, 25], [41, 3, 41]])
    def test_equals_building_from_scratch(self, ends: list[int]) -> None:
        history = [TASK, FIRST, {"role": "user", "content": "Begin."}]
        for turn in range(19):
            history += _turn(turn)
        ledgers = LedgerUpTo()
        for end in ends:
            assert ledgers.ledger(history, end) == build_ledger(history, end)

    def test_a_changed_history_starts_over(self) -> None:
        history = [TASK, FIRST, {"role": "user", "content": "Begin."}, *_turn(0), *_turn(1)]
        ledgers = LedgerUpTo()
        ledgers.ledger(history, len(history))
        edited = [*history[:3], *_turn(7)]
        assert ledgers.ledger(edited, len(edited)) == build_ledger(edited)


def test_in_band_in_the_openai_format() -> None:
    """format='openai': the ask is on the last user message, the reply folds, and is not sent."""
    session = ContextSession(
        WINDOW, clock=Clock(), format="openai", summarize="in-band", keep_recent_tokens=3_000
    )
    session.append({"role": "user", "content": "Port the parser to v2."})
    session.append({"role": "assistant", "content": "I will read the parser."})
    session.append({"role": "user", "content": "Begin."})
    asked = folded = None
    for turn in range(60):
        request = session.prepare(max_output_tokens=1_000)
        if request.summary_requested:
            asked = request
            assert request.messages[-1]["role"] in ("user", "tool")
            session.append({"role": "assistant", "content": "OPENAI SUMMARY."})
            assert session.summarizing
            folded = session.prepare(max_output_tokens=1_000)
            break
        session.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{turn}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": json.dumps({"path": "a"})},
                    }
                ],
            }
        )
        session.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "y" * 6_000})
    assert asked is not None, "no summary was requested"
    assert folded is not None
    assert any(a.step == "summarize-in-band" for a in folded.actions)
    sent = json.dumps(folded.messages)
    assert "OPENAI SUMMARY." in sent  # in the continuation
    assert {"role": "assistant", "content": "OPENAI SUMMARY."} not in folded.messages


def test_a_summarizer_reports_its_call_usage() -> None:
    """A summarizer with ``last_usage`` (as the ready-made ones) gets it onto the fold's action."""

    class Metered:
        last_usage: TokenUsage | None = None

        def __call__(self, request: SummaryRequest) -> str:
            self.last_usage = TokenUsage(tokens_in=len(request.messages) * 100, tokens_out=321)
            return "METERED SUMMARY"

    prepared = _run(_session(summarize=Metered(), keep_recent_tokens=3_000), 30)
    folds = [a for p in prepared for a in p.actions if a.step == "summarize"]
    assert folds
    assert all(a.usage is not None and a.usage.tokens_out == 321 for a in folds)
