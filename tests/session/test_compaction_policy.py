"""Compaction's policy pinned on small hand-written histories: what is asked, folded and sent.

Each test states one rule of :class:`~windowkeeper.session._compaction.Compaction` (issue
"Compaction that holds on every trace") and fails without it; the requests are checked by the
strict Anthropic double's own rules, not only by our validator.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import replace
from typing import Any

import pytest

from windowkeeper import (
    ConfigurationError,
    ContextOverflowError,
    ContextSession,
    TokenUsage,
    validate_messages,
)
from windowkeeper.formats import from_anthropic, validate_openai
from windowkeeper.session import Checkpoint, Fold, SessionState
from windowkeeper.session._compaction import Compaction
from windowkeeper.session._request import FOLDED_RESULT, _EmptyMessages
from windowkeeper.session.steps import (
    Action,
    ClipLargeBlocks,
    HideOldTurns,
    ReplaceDuplicateReads,
    SummarizeTurns,
)

from .test_session import Clock, ExactCounter, true_tokens

TASK = {"role": "user", "content": "<task>Refactor the parser.</task>"}


def _call(turn: int, size: int, name: str = "Read") -> list[dict[str, Any]]:
    call = f"t{turn}"
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"step {turn}"},
                {
                    "type": "tool_use",
                    "id": call,
                    "name": name,
                    "input": {"file_path": f"src/m{turn}.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call, "content": "y = 2\n" * (size // 6)}
            ],
        },
    ]


def _session(window: int, **options: Any) -> ContextSession:
    if "steps" not in options:
        options.setdefault("mask_keep_recent", None)
    return ContextSession(window, counter=ExactCounter(), clock=Clock(), **options)


def _valid(prepared: Any) -> None:
    assert [v for v in validate_messages(prepared.messages) if v.rule != "empty-content"] == []
    assert prepared.messages[-1]["role"] == "user"
    assert true_tokens(prepared.messages) + 500 <= prepared.max_allowed_size


def _steps(prepared: Any) -> list[str]:
    return [action.step for action in prepared.actions]


def _in_band_loop(session: ContextSession, turns: int, summary: str) -> list[Any]:
    """An agent loop answering every in-band ask with ``summary``; every request prepared."""
    session.append(TASK)
    prepared = []
    for turn in range(turns):
        session.extend(_call(turn, 3_000))
        request = session.prepare(max_output_tokens=500)
        prepared.append(request)
        while request.summary_requested:
            session.append({"role": "assistant", "content": summary})
            request = session.prepare(max_output_tokens=500)
            prepared.append(request)
    return prepared


class TestInBand:
    def test_never_asks_on_the_request_that_folded_or_the_one_after(self) -> None:
        session = _session(20_000, summarize="in-band", keep_recent_tokens=2_000)
        prepared = _in_band_loop(session, 30, "SUMMARY-MARK: " + "read m.py; " * 300)
        for before, request in itertools.pairwise(prepared):
            if "summarize-in-band" in _steps(request) or "summarize-in-band" in _steps(before):
                assert not request.summary_requested or "summarize-in-band" not in _steps(request)
        folded = [i for i, p in enumerate(prepared) if "summarize-in-band" in _steps(p)]
        assert folded
        for index in folded:
            assert not prepared[index].summary_requested
            if index + 1 < len(prepared):
                assert not prepared[index + 1].summary_requested
        for request in prepared:
            _valid(request)

    def test_the_first_request_may_ask(self) -> None:
        """A session's (or a restarted session's) first request asks like any other."""
        session = _session(20_000, summarize="in-band", keep_recent_tokens=2_000)
        session.append(TASK)
        for turn in range(7):
            session.extend(_call(turn, 8_000))  # 85-95 % of the limit
        first = session.prepare(max_output_tokens=500)
        assert first.summary_requested
        instruction = first.messages[-1]["content"][-1]["text"]
        assert instruction.startswith("[windowkeeper: context compaction]")

    def test_a_pre_flight_fold_keeps_the_models_summary(self) -> None:
        mark = "PLAN-MARKER: finish parser.py then run the tests"
        session = _session(20_000, summarize="in-band", keep_recent_tokens=2_000)
        prepared = _in_band_loop(session, 25, mark + " " + "kept x; " * 50)
        assert any("summarize-in-band" in _steps(p) for p in prepared)
        for turn in range(99, 102):  # past the limit, and past the ask's ceiling too
            session.extend(_call(turn, 16_000))
        request = session.prepare(max_output_tokens=500)
        assert request.preflight_acted
        assert not request.summary_requested
        assert mark in json.dumps(request.messages)
        _valid(request)

    def test_a_summary_longer_than_its_budget_is_clipped_and_the_request_is_valid(self) -> None:
        session = _session(32_000, summarize="in-band", max_output_tokens=500)
        prepared = _in_band_loop(session, 45, "Kept: every test and path. " * 2_000)
        for request in prepared:
            _valid(request)
        folds = [p for p in prepared if "summarize-in-band" in _steps(p)]
        assert folds
        continuation = folds[-1].messages[2]["content"][-1]["text"]
        assert len(continuation) <= int(session.window.max_allowed_size * 0.25 * 3)

    @staticmethod
    def _in_the_band() -> ContextSession:
        session = _session(20_000, summarize="in-band", keep_recent_tokens=2_000)
        session.append(TASK)
        for turn in range(7):
            session.extend(_call(turn, 8_000))  # 85-95 % of the limit
        return session

    def test_replies_that_are_not_summaries_are_declined_then_no_more_asks(self) -> None:
        session = self._in_the_band()
        asks, declined = 0, []
        for turn in range(7, 12):
            request = session.prepare(max_output_tokens=500)
            declined += [a.reason for a in request.actions if a.step == "summary-declined"]
            asks += request.summary_requested
            _valid(request)
            session.extend(_call(turn, 60))  # the model calls a tool instead of summarizing
        assert declined == [
            "a reply that is not a summary to the in-band ask: asked again later",
            "a reply that is not a summary to the in-band ask: no more asks until the next fold",
        ]
        assert asks == 2

    def test_an_empty_reply_is_never_sent_and_the_loop_goes_on(self) -> None:
        session = self._in_the_band()
        assert session.prepare(max_output_tokens=500).summary_requested
        session.append({"role": "assistant", "content": ""})
        assert session.summarizing  # the README's loop prepares again instead of stopping
        request = session.prepare(max_output_tokens=500)
        assert "summary-declined" in _steps(request)
        assert request.messages[-2]["content"][0]["text"] == "step 6"
        assert request.messages[-1]["role"] == "user"
        assert request.messages[-1]["content"][0]["tool_use_id"] == "t6"
        _valid(request)


class TestFoldsThatFit:
    def test_compaction_sends_what_the_default_mode_sends(self) -> None:
        history = [TASK]
        for turn in range(8):
            history += _call(turn, 2_400)
        for summarize in (True, "in-band", lambda request: "Done: " + "all of it. " * 3_000):
            default = _session(6_000, max_output_tokens=300)
            compacting = _session(6_000, max_output_tokens=300, summarize=summarize)
            for message in history:
                default.append(message)
                compacting.append(message)
                if message["role"] == "user" and len(default.history) > 2:
                    default.prepare()  # the default sends it, so compaction must too
                    request = compacting.prepare()
                    assert [
                        v for v in validate_messages(request.messages) if v.rule != "empty-content"
                    ] == []

    def test_a_long_summary_is_asked_for_once_per_fold(self) -> None:
        calls = []

        def verbose(request: Any) -> str:
            calls.append(request)
            return "Summary: " + "every detail again. " * 20_000

        session = _session(40_000, summarize=verbose, keep_recent_tokens=3_000)
        session.append(TASK)
        folds = 0
        for turn in range(40):
            session.extend(_call(turn, 6_000))
            request = session.prepare(max_output_tokens=500)
            folds += _steps(request).count("summarize")
            _valid(request)
        assert folds >= 1
        assert len(calls) == folds

    def test_a_fold_the_limit_cannot_hold_raises_only_when_plain_truncation_would(self) -> None:
        session = _session(6_000, summarize=True, max_output_tokens=300)
        session.append({"role": "user", "content": "x" * 40_000})  # the task alone is too big
        session.append({"role": "assistant", "content": "ok"})
        session.append({"role": "user", "content": "go"})
        default = _session(6_000, max_output_tokens=300)
        default.extend(session.history)
        with pytest.raises(ContextOverflowError):
            default.prepare()
        with pytest.raises(ContextOverflowError):
            session.prepare()

    @pytest.mark.parametrize("shape", ["anthropic", "openai"])
    def test_no_summary_is_asked_for_where_no_fold_can_fit(self, shape: str) -> None:
        # Messages 0-1 alone are over the limit (a Codex task at 8k): every request is refused,
        # as by the default mode, and the summarizer is never called (it was, on every one).
        calls: list[Any] = []

        def summarizer(request: Any) -> str:
            calls.append(request)
            return "Summary: read the modules."

        session = _session(6_000, summarize=summarizer, max_output_tokens=300, format=shape)
        messages = [{"role": "user", "content": "Refactor the parser. " + "Context. " * 3_000}]
        for turn in range(6):
            messages += _call(turn, 600)
        refused = 0
        for message in messages:
            session.extend(from_anthropic([message]) if shape == "openai" else [message])
            if message["role"] == "user" and len(session.history) > 2:
                with pytest.raises(ContextOverflowError):
                    session.prepare()
                refused += 1
        assert refused == 6
        assert calls == []

    def test_a_fold_that_fits_once_the_newest_result_is_clipped_gets_its_summary(self) -> None:
        session = _session(
            6_000,
            summarize=lambda request: "Summary: read the modules.",
            max_output_tokens=300,
            max_result_share=None,
        )
        session.append(TASK)
        for turn in range(3):
            session.extend(_call(turn, 1_000))
            assert _steps(session.prepare()) == []
        session.extend(_call(3, 60_000))  # the fold alone does not fit: the result is clipped
        request = session.prepare()
        assert _steps(request) == ["summarize", "clip-blocks", "clip-blocks"]
        assert "Summary: read the modules." in json.dumps(request.messages)
        assert validate_messages(request.messages) == []
        assert true_tokens(request.messages) + 300 <= request.max_allowed_size


class TestPauseAndResume:
    """Two folds in a row that free little pause summarizing; growth of the history resumes it."""

    @staticmethod
    def _fold(before: int, after: int) -> Action:
        return Action("summarize", tokens_before=before, tokens_after=after)

    def test_the_policy(self) -> None:
        compaction = Compaction(SummarizeTurns())
        state = SessionState(requests=5)
        state, paused = compaction.counted(state, [self._fold(10_000, 9_500)], 100)
        assert (state.compaction.poor_folds, paused) == (1, None)
        state, paused = compaction.counted(state, [self._fold(10_000, 2_000)], 110)
        assert state.compaction.poor_folds == 0  # a good fold: in a row no more
        for length in (120, 130):
            state, paused = compaction.counted(state, [self._fold(10_000, 9_100)], length)
        assert paused is not None
        assert paused.step == "summarize-paused"
        assert paused.reason == (
            "2 folds in a row freed less than 10% of the request: no new summary until the"
            " history has 156 messages"
        )
        assert state.compaction.paused_at == 130
        assert not compaction.may_summarize(replace(state, requests=50))
        assert compaction.resumed(state, 155) == (state, None)
        resumed, action = compaction.resumed(state, 156)
        assert action is not None
        assert action.step == "summarize-resumed"
        assert (resumed.compaction.paused_at, resumed.compaction.poor_folds) == (None, 0)
        assert compaction.may_summarize(replace(resumed, requests=50))

    def test_right_after_a_fold_no_new_summary(self) -> None:
        compaction = Compaction(SummarizeTurns())
        folded = SessionState(requests=7).with_compaction(folded_at=7)
        assert not compaction.may_summarize(folded)  # the request that folded
        assert not compaction.may_summarize(replace(folded, requests=8))  # the one after
        assert compaction.may_summarize(replace(folded, requests=9))
        assert compaction.may_summarize(SessionState())  # the first request of a session


class TestSummarizerContract:
    def test_a_summarizer_that_blocks_times_out_and_the_ledger_stands_in(self) -> None:
        def slow(request: Any) -> str:
            time.sleep(5)
            return "late"

        session = _session(40_000, summarize=slow, keep_recent_tokens=3_000, summarizer_timeout=0.2)
        session.append(TASK)
        started = time.monotonic()
        actions = []
        for turn in range(30):
            session.extend(_call(turn, 6_000))
            actions += session.prepare(max_output_tokens=500).actions
        assert time.monotonic() - started < 4
        folds = [a for a in actions if a.step == "summarize"]
        assert folds
        assert (
            folds[0].reason
            == "the summarizer did not answer within 0.2 s: folded with the ledger alone"
        )

    def test_an_async_summarizer_times_out_too(self) -> None:
        async def slow(request: Any) -> str:
            await asyncio.sleep(5)
            return "late"

        session = _session(40_000, summarize=slow, keep_recent_tokens=3_000, summarizer_timeout=0.2)
        session.append(TASK)

        async def run() -> list[Any]:
            actions = []
            for turn in range(30):
                session.extend(_call(turn, 6_000))
                actions += (await session.aprepare(max_output_tokens=500)).actions
            return actions

        folds = [a for a in asyncio.run(run()) if a.step == "summarize"]
        assert folds
        assert "did not answer within 0.2 s" in (folds[0].reason or "")

    @pytest.mark.parametrize("answer", ["", "   ", 42, "bad \x00 text", "lone \ud800 surrogate"])
    def test_unusable_summaries_are_never_stored_or_sent(self, answer: Any) -> None:
        session = _session(40_000, summarize=lambda request: answer, keep_recent_tokens=3_000)
        session.append(TASK)
        for turn in range(30):
            session.extend(_call(turn, 6_000))
            request = session.prepare(max_output_tokens=500)
            json.dumps(request.messages).encode("utf-8")  # sendable
        fold = session.state.compaction.fold
        assert fold is not None
        assert fold.summary is None
        assert "No summary of them is available" in fold.text

    def test_an_async_summarize_step_given_through_steps_works(self) -> None:
        async def summarizer(request: Any) -> str:
            return "ASYNC-SUMMARY of the work"

        steps = [
            ReplaceDuplicateReads(),
            SummarizeTurns(summarizer, keep_recent_tokens=3_000),
            HideOldTurns(),
            ClipLargeBlocks(),
        ]
        session = _session(40_000, steps=steps)
        session.append(TASK)

        async def run() -> Any:
            for turn in range(30):
                session.extend(_call(turn, 6_000))
                request = await session.aprepare(max_output_tokens=500)
            return request

        asyncio.run(run())
        fold = session.state.compaction.fold
        assert fold is not None
        assert fold.summary == "ASYNC-SUMMARY of the work"


class TestArguments:
    @pytest.mark.parametrize("task_chars", [30, 24_000])
    def test_the_tail_and_the_budget_are_shares_of_the_room(self, task_chars: int) -> None:
        """The continuation's budget is 15 % of what the limit leaves beside messages 0-1 (and
        the prompt): a task that takes most of the limit leaves a short continuation, not 15 %
        of the limit. The verbatim tail beyond the newest turn is none by default."""
        session = _session(20_000, summarize=True)
        session.append({"role": "user", "content": "<task>" + "p" * task_chars + "</task>"})
        session.extend(_call(0, 100))
        session.prepare()
        compaction = session._compaction
        assert compaction is not None
        head = true_tokens(list(session.history[:2]))
        room = session.window.max_allowed_size - head
        assert head < 40 if task_chars == 30 else head > 5_000
        assert compaction.step.keep == 0
        assert compaction.step.budget_chars == int(room * 0.15 * 3)

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"summarize": True, "keep_recent_tokens": 9_000}, "over half the limit"),
            ({"keep_recent_tokens": 1_000}, "plays no part without summarize"),
            ({"in_band_at": 0.5}, "plays no part without summarize='in-band'"),
            ({"summarize": True, "in_band_at": 0.5}, "plays no part without summarize='in-band'"),
            ({"steps": [HideOldTurns()], "mask_keep_recent": 3}, "mask_keep_recent plays no part"),
            ({"steps": [HideOldTurns()], "summarize": True}, "give steps or summarize"),
            (
                {"steps": [SummarizeTurns(), SummarizeTurns()]},
                "more than one SummarizeTurns",
            ),
            ({"summarize": len, "summarizer_timeout": 0}, "timeout must be a positive number"),
        ],
    )
    def test_arguments_that_would_be_ignored_are_refused(
        self, options: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(ConfigurationError, match=message):
            ContextSession(16_000, **options)


def test_usage_recorded_does_not_change_the_rules() -> None:
    """Recorded usage at the truth leaves compaction's requests valid (a smoke of the loop)."""
    session = _session(20_000, summarize=True)
    session.append(TASK)
    for turn in range(30):
        session.extend(_call(turn, 3_000))
        request = session.prepare(max_output_tokens=500)
        session.record_usage(TokenUsage(tokens_in=true_tokens(request.messages), tokens_out=10))
        _valid(request)


class TestEdgesOfTheWindow:
    """Real traces at small windows: a system prompt that takes a third of the limit, long tasks."""

    SYSTEM = "You are a support agent. " + "Follow the policy to the letter. " * 250
    TASK_TEXT = "My booking needs changing. " + "Here are all the details of what I need. " * 30

    def _conversation(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": self.TASK_TEXT}]
        for turn in range(24):
            messages += [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Let me look up reservation {turn}."},
                        {
                            "type": "tool_use",
                            "id": f"c{turn}",
                            "name": "get_reservation",
                            "input": {"reservation_id": f"R{turn:04d}"},
                        },
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"c{turn}",
                            "content": f"reservation R{turn:04d}: " + "seat, fare, segment; " * 40,
                        },
                        {"type": "text", "text": f"Keep instruction {turn} in mind: economy only."},
                    ],
                },
            ]
        return messages

    @pytest.mark.parametrize(
        "summarize", [True, "in-band", lambda request: "The customer wants economy. " * 400]
    )
    def test_compaction_never_refuses_what_the_default_sends(self, summarize: Any) -> None:
        default = ContextSession(6_000, max_output_tokens=300, clock=Clock())
        compacting = ContextSession(
            6_000, max_output_tokens=300, clock=Clock(), summarize=summarize
        )
        sent = 0
        for index, message in enumerate(self._conversation()):
            if message["role"] == "assistant" and index > 0:
                try:
                    default.prepare(system=self.SYSTEM)
                except ContextOverflowError:
                    continue
                request = compacting.prepare(system=self.SYSTEM)
                assert [
                    v for v in validate_messages(request.messages) if v.rule != "empty-content"
                ] == []
                sent += 1
            default.append(message)
            compacting.append(message)
        assert sent > 10

    def test_a_summary_longer_than_what_it_replaces_leaves_every_request_valid(self) -> None:
        session = ContextSession(
            32_000, summarize="in-band", max_output_tokens=1_000, clock=Clock()
        )
        session.append({"role": "user", "content": "Make the test suite pass."})
        checked = 0
        for turn in range(40):
            session.append(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": f"Running the tests (turn {turn})."},
                        {
                            "type": "tool_use",
                            "id": f"call_{turn}",
                            "name": "run",
                            "input": {"command": "pytest"},
                        },
                    ],
                }
            )
            session.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"call_{turn}",
                            "content": "test PASSED\n" * 950,
                        }
                    ],
                }
            )
            request = session.prepare()
            while request.summary_requested:
                folded = len(str(request.messages[2:]))
                session.append(
                    {"role": "assistant", "content": "Kept: every path. " * (folded // 12)}
                )
                request = session.prepare()
                assert request.messages[-1]["role"] == "user"
                assert [
                    v for v in validate_messages(request.messages) if v.rule != "empty-content"
                ] == []
                checked += 1
        assert checked


def test_a_fold_with_nothing_left_after_it_still_sends_its_continuation() -> None:
    """Everything after message 1 hidden or an excluded summary reply: the continuation is the
    last message, answering message 1's tool call (else the request ends with a bare tool_use)."""
    session = _session(20_000, summarize="in-band")
    session.extend(
        [
            TASK,
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "a1", "name": "ls", "input": {}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "a1", "content": "x"}],
            },
            {"role": "assistant", "content": "The summary."},
        ]
    )
    state = SessionState(deleted_range=(2, 2)).with_compaction(
        fold=Fold(2, "FOLDED TEXT", "The summary."), excluded=(3,)
    )
    session.rollback(Checkpoint(history_length=4, state=state, store_json="[]", timestamp=0))
    request = session.prepare()
    assert request.messages[2:] == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a1", "content": FOLDED_RESULT},
                {"type": "text", "text": "FOLDED TEXT"},
            ],
        }
    ]


class TestOpenAIShape:
    """The same in-band rules for a session in the OpenAI Chat Completions shape."""

    def test_in_band_asks_fold_and_never_reask_on_the_continuation(self) -> None:
        session = ContextSession(
            20_000,
            counter=ExactCounter(),
            clock=Clock(),
            format="openai",
            summarize="in-band",
            keep_recent_tokens=2_000,
            mask_keep_recent=None,
        )
        session.extend(from_anthropic([TASK]))
        prepared = []
        for turn in range(30):
            session.extend(from_anthropic(_call(turn, 3_000)))
            request = session.prepare(max_output_tokens=500)
            prepared.append(request)
            while request.summary_requested:
                session.append({"role": "assistant", "content": "OPENAI-SUMMARY " + "kept; " * 200})
                request = session.prepare(max_output_tokens=500)
                prepared.append(request)
        folded = [i for i, p in enumerate(prepared) if "summarize-in-band" in _steps(p)]
        assert folded
        for index in folded:
            assert not prepared[index].summary_requested
        assert any("OPENAI-SUMMARY" in json.dumps(p.messages) for p in prepared[folded[0] :])
        for request in prepared:
            assert validate_openai(request.messages) == []
            assert request.messages[-1]["role"] in ("user", "tool")


@pytest.mark.parametrize("keep", [None, 1_000])
def test_a_model_that_thinks_on_every_turn_still_gets_summaries(keep: int | None) -> None:
    """Every assistant turn continues a thinking tool loop. With a verbatim tail
    (``keep_recent_tokens``) the fold cuts inside one, at an assistant message that keeps its own
    thinking (before, no summary was ever asked for); by default the fold takes the newest
    answer too, and the request ends with the continuation and the newest result as text."""

    def turn(i: int) -> list[dict[str, Any]]:
        return [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"think {i}", "signature": f"sig{i}"},
                    {
                        "type": "tool_use",
                        "id": f"t{i}",
                        "name": "read_file",
                        "input": {"path": f"f{i}.py"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": "x" * 4000}],
            },
        ]

    calls: list[Any] = []
    session = _session(
        20_000,
        summarize=lambda request: calls.append(request) or "SUMMARY",
        keep_recent_tokens=keep,
    )
    session.append({"role": "user", "content": "Task: read the files."})
    for i in range(40):
        session.extend(turn(i))
        request = session.prepare(max_output_tokens=500)
        _valid(request)
        if "summarize" not in _steps(request):
            continue
        if keep is None:
            assert len(request.messages) == 3
            types = [block["type"] for block in request.messages[2]["content"]]
            assert types == ["tool_result", "text", "text", "text"]
            assert request.messages[2]["content"][3]["text"] == "x" * 4000
            assert "waiting" not in request.messages[2]["content"][1]["text"]
        else:
            assert request.messages[3]["content"][0]["type"] == "thinking"
    assert calls


class TestFoldNoLargerThanTruncation:
    """A fold sends no more than plain truncation would at the same point: its verbatim tail
    and its continuation together fit in what truncation keeps, so ledger-only compaction is
    never dearer than hiding turns."""

    WORDS = "Keep the public names of the parser module; " * 120
    HISTORY: tuple[dict[str, Any], ...] = (
        TASK,
        *_call(0, 600),
        {"role": "assistant", "content": "Read it."},
        {"role": "user", "content": WORDS},
        *itertools.chain.from_iterable(_call(turn, 5_000) for turn in range(1, 14)),
    )

    def _prepared(self, **options: Any) -> tuple[ContextSession, Any]:
        session = _session(20_000, **options)
        session.extend(self.HISTORY)
        return session, session.prepare()

    def test_a_long_tail_asked_for_gives_way(self) -> None:
        """With 8,000 tokens of tail asked for and a long instruction in the ledger, the tail
        (2, 18) would leave the request larger than truncation's: the fold cuts two messages
        deeper, and the request is no larger than the default session's."""
        plain, plain_request = self._prepared()
        folded, request = self._prepared(summarize=True, keep_recent_tokens=8_000)
        assert plain.deleted_range == (2, 15)
        assert folded.deleted_range == (2, 20)
        assert _steps(request) == ["summarize"]
        assert true_tokens(request.messages) <= true_tokens(plain_request.messages)
        assert self.WORDS.strip() in json.dumps(request.messages)
        _valid(request)

    def test_a_short_tail_is_kept_as_it_is(self) -> None:
        """A tail that already fits is not cut further."""
        folded, request = self._prepared(summarize=True, keep_recent_tokens=1_000)
        assert folded.deleted_range == (2, 28)
        _valid(request)


def test_the_empty_message_count_of_an_edited_request_is_that_of_a_fresh_count() -> None:
    """The estimate (which a fold must fit under) counts the messages the wire fills with a
    notice; a request whose messages were replaced, hidden or appended since the last count
    (a shrink's steps, then the next turns) counts as many as one counted afresh."""
    empty = [
        {"role": "user", "content": ""},
        {"role": "assistant", "content": [{"type": "text", "text": " "}]},
    ]
    full = [{"role": "user", "content": f"words {n}"} for n in range(6)]
    requests = [
        [TASK, *empty, *full],  # first count
        [TASK, empty[0], full[1], *full[1:], empty[1]],  # replaced in place, one appended
        [TASK, *full[3:], empty[1]],  # a run hidden
        [TASK, *full[3:], empty[1], empty[0], dict(empty[0])],  # appended
        [dict(TASK), empty[0]],  # nothing shared
        [],
    ]
    counter = _EmptyMessages()
    for request in requests:
        before = [dict(message) for message in request]
        assert counter.count(request) == _EmptyMessages().count(request)
        assert request == before
    assert [_EmptyMessages().count(request) for request in requests] == [2, 2, 1, 3, 1, 0]
