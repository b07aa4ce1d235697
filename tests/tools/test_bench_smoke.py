"""The evaluation in bench/ stays importable and right, on tiny generated conversations.

It runs in ``make test``: langchain-core, which the bench's peer policy needs, is in the dev
extra, so a missing install fails here instead of skipping quietly.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

from _evaluation import Evaluation, Growth
from _generated import generated_session
from _peers import LastTokensPolicy, MaskingPolicy, from_langchain, to_langchain
from _report import format_report, growth_section
from _roo import load_roo_export
from _runner import (
    CLINE,
    LAST_TOKENS,
    MASKING,
    POLICIES,
    WINDOWKEEPER,
    WindowChoice,
    make_case,
    run,
    windows_for,
)
from windowkeeper import context_window_info, validate_messages
from windowkeeper.tools._replay import Ruler, request_points

HISTORY = generated_session(61)
CASE = make_case("tiny", "generated", HISTORY)
CHOICE = WindowChoice(64_000, context_window_info(12_000), True)


class TestConversion:
    def test_round_trip_keeps_every_message(self) -> None:
        """Anthropic -> LangChain -> Anthropic gives the same messages back."""
        lc = [
            part for index, message in enumerate(HISTORY) for part in to_langchain(message, index)
        ]
        back, system = from_langchain(lc)
        assert system is None
        assert back == [{"role": m["role"], "content": m["content"]} for m in HISTORY]

    def test_text_and_results_share_one_user_message(self) -> None:
        """A tool result and text in one user message come back as one user message."""
        message = {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "out"},
                {"type": "text", "text": "note"},
            ],
        }
        parts = to_langchain(message, 3)
        assert [type(part).__name__ for part in parts] == ["ToolMessage", "HumanMessage"]
        assert from_langchain(parts)[0] == [message]


class TestPolicies:
    @pytest.mark.parametrize("policy", [CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING])
    def test_every_policy_replays_and_measures(self, policy: str) -> None:
        """Each policy replays the conversation; shares stay within 0-1."""
        totals = run(CASE, CHOICE, policy).totals
        assert totals.requests == len(request_points(HISTORY))
        for share in (totals.mean_reuse, totals.mean_context, totals.mean_messages):
            assert 0.0 <= share <= 1.0
        assert totals.cost > 0

    def test_windowkeeper_keeps_within_the_limit_and_the_rules(self) -> None:
        """The session never sends over the limit nor breaks a provider rule here."""
        totals = run(CASE, CHOICE, WINDOWKEEPER).totals
        assert totals.truncations + totals.over_limit > 0 or max(totals.tokens) < 9_600
        assert totals.over_limit == totals.over_window == totals.violations == 0

    def test_last_tokens_sends_what_langchain_trimmed(self) -> None:
        """Under the limit LangChain keeps everything; over it, with start_on="human" and only
        tool results after the task, it keeps nothing (an empty request)."""
        roomy = LastTokensPolicy(context_window_info(10**7))
        sent = roomy.send(HISTORY[:41], usage=None, timestamp=1)
        assert roomy.retained_messages == 41
        assert not validate_messages(sent.messages)
        tight = LastTokensPolicy(CHOICE.info)
        sent = tight.send(HISTORY[:41], usage=None, timestamp=1)
        assert Ruler().count(HISTORY[:41]) > CHOICE.info.max_allowed_size
        assert sent.messages == []
        assert tight.retained_messages == 0

    def test_masking_keeps_the_last_outputs(self) -> None:
        """All but the last ten tool outputs are replaced by the placeholder."""
        sent = MaskingPolicy(context_window_info(10**7)).send(HISTORY, usage=None, timestamp=1)
        texts = [
            block["content"]
            for message in sent.messages
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]
        masked = [text for text in texts if str(text).startswith("Old environment output")]
        assert len(texts) - len(masked) == 10


def test_roo_export_is_read_as_alternating_turns(tmp_path: Path) -> None:
    """A Roo Code export becomes user/assistant messages with the result header apart."""
    export = tmp_path / "task.md"
    export.write_text(
        "**User:**\n\n<task>\nDo it\n</task>\n\n---\n\n**Assistant:**\n\n<read_file>\n"
        "<path>a.md</path>\n</read_file>\n\n---\n\n**User:**\n\n[read_file for 'a.md'] Result:"
        "\nbody\n<environment_details>\nx\n</environment_details>\n",
        encoding="utf-8",
    )
    messages = load_roo_export(export)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert [b["text"] for b in messages[2]["content"]] == [
        "[read_file for 'a.md'] Result:",
        "body",
        "<environment_details>\nx\n</environment_details>",
    ]
    assert not validate_messages(messages)


def test_report_renders(tmp_path: Path) -> None:
    """The report has a table per trace and the targets, from a tiny evaluation."""
    case = make_case("cline-gcp-443", "generated", HISTORY)
    choices = windows_for(case)
    runs = {(case.name, c.nominal, p): run(case, c, p) for c in choices for p in POLICIES[:4]}
    timing = {
        (c.nominal, p): runs[case.name, c.nominal, p].totals.times_ms
        for c in choices
        for p in POLICIES[:4]
    }
    growth = Growth(messages=61, window=12_000, lengths=(20, 61))
    growth.times = {
        p: list(
            zip(
                runs[case.name, choices[0].nominal, p].totals.lengths,
                runs[case.name, choices[0].nominal, p].totals.times_ms,
                strict=True,
            )
        )
        for p in POLICIES[:4]
    }
    evaluation = Evaluation(
        machine="test",
        command="pytest",
        date="today",
        cases=[case],
        windows={case.name: choices},
        runs=runs,
        timing=timing,
        timing_parts={},
        timing_rounds=1,
        growth=growth,
    )
    report = format_report(evaluation, [])
    assert "## Targets for windowkeeper's default policy" in report
    assert report.count("| --- |") >= 4


class TestCompactionFigures:
    def test_a_long_instruction_counts_by_its_head_and_tail(self) -> None:
        """The judge of "verbatim": the whole message counts, so does the ledger's head and
        tail; a head alone, or another text, does not."""
        from _frontier import _carries, _normal
        from windowkeeper.session._ledger_text import head_and_tail

        words = "Fix the build. " + "log line 1234\n" * 1000 + "Then deploy it to staging."
        kept = head_and_tail(words, 8_000)
        assert _carries(_normal(words), kept)
        assert _carries(_normal(f"x {kept} y"), kept)
        assert not _carries(_normal(words[:9_000]), kept)
        assert not _carries(_normal("Fix the build. Then deploy it to staging."), kept)
        assert _carries(_normal("so: fix it now…"), "fix it now…")

    def test_todo_state_is_the_latest_call(self) -> None:
        """Cline's task_progress, a todo tool and Roo Code's XML each give the latest items."""
        from _frontier import TodoTracker

        tracker = TodoTracker()
        tracker.extend(
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "a",
                            "name": "read_file",
                            "input": {"path": "x", "task_progress": "- [ ] one\n- [ ] two"},
                        }
                    ],
                },
            ]
        )
        assert tracker.items == ["- [ ] one", "- [ ] two"]
        tracker.extend(
            [
                {
                    "role": "assistant",
                    "content": "<update_todo_list>\n<todos>\n[x] one\n[-] two\n</todos>\n"
                    "</update_todo_list>",
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "b", "name": "read_file", "input": {"todos": []}}
                    ],
                },
            ]
        )
        assert tracker.items == ["[x] one", "[-] two"]  # "todos" of a non-todo tool: ignored
        tracker.extend(
            [
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "c",
                            "name": "TodoWrite",
                            "input": {"todos": [{"content": "ship it", "status": "pending"}]},
                        }
                    ],
                }
            ]
        )
        assert tracker.items == ["ship it"]

    def test_strict_double_judges_what_our_validator_may_miss(self) -> None:
        """The double accepts a valid request and rejects an unanswered tool_use."""
        from _doubles import StrictDouble

        judge = StrictDouble("system prompt")
        call = {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}
        result = {"type": "tool_result", "tool_use_id": "t1", "content": "body"}
        valid = [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
        ]
        assert judge.problems(valid) == []
        assert judge.problems([*valid[:2], {"role": "user", "content": "next"}])

    def test_off_for_good_needs_the_history_to_grow(self) -> None:
        """A pause left unresumed counts only when the trace grew past the resume point."""
        from _compaction_traces import off_for_good
        from _metrics import Totals
        from _runner import Run

        def at(pauses: list[tuple[str, int]], length: int) -> bool:
            return off_for_good(Run("t", "p", CHOICE, Totals(), {}, pauses=pauses, length=length))

        assert not at([], 500)
        assert not at([("summarize-paused", 100)], 119)
        assert at([("summarize-paused", 100)], 120)
        assert not at([("summarize-paused", 100), ("summarize-resumed", 120)], 400)

    def test_compaction_runs_measure_folds_and_refusals(self) -> None:
        """An in-band replay of the tiny trace: folds checked, no refusal the default sends."""
        from _compaction_traces import SettingFigures

        default = run(CASE, CHOICE, WINDOWKEEPER)
        inband = run(CASE, CHOICE, "windowkeeper-inband")
        figures = SettingFigures(inband, default, None)
        assert inband.totals.requests >= len(request_points(HISTORY))
        assert figures.folds == len(inband.totals.fold_checks) > 0
        assert figures.refused_sent_by_default == 0
        # the generated session signs every thinking block "x", so the double can hold only
        # one of them as issued: that rule apart, the double accepts every request
        assert set(inband.totals.strict_rules) <= {"thinking_signature"}
        assert all(0.0 <= r <= 1.0 for r in inband.totals.summary_previous_read)


def test_hand_measured_sections_survive_a_new_report(tmp_path: Path) -> None:
    """The growth, pauses and outside-transcripts sections come from runs of their own (the
    transcripts are never bundled): writing the report again keeps them, in that order."""
    old = tmp_path / "benchmarks.md"
    old.write_text(
        "# Benchmarks\n\n## Every trace\n\nregenerated\n\n"
        "## Transcripts outside the corpus\n\n27 files replayed\n\n"
        "## Growth to 100,000 messages\n\nflat\n\n## Storage\n\nsee storage.md\n",
        encoding="utf-8",
    )
    assert growth_section(old) == [
        "## Growth to 100,000 messages",
        "",
        "flat",
        "",
        "## Transcripts outside the corpus",
        "",
        "27 files replayed",
        "",
    ]
