"""bench/replay_transcripts.py: every request of a transcript judged by the strict doubles."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

from _doubles import StrictOpenAIDouble
from replay_transcripts import main

FIXTURES = Path(__file__).resolve().parent.parent / "transcripts" / "fixtures"


def test_a_fixture_replays_clean_in_every_mode(capsys: pytest.CaptureFixture[str]) -> None:
    """One row per window, shape and mode; exit 0 when nothing was rejected or refused."""
    path = FIXTURES / "claude_code_session.jsonl"
    assert main([str(path), "--windows", "8000"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| claude")]
    assert len(rows) == 6  # 2 shapes x 3 modes


def test_the_same_requests_in_every_shape_and_mode(capsys: pytest.CaptureFixture[str]) -> None:
    """A request before each model response: as many in either shape and every mode."""
    assert main([str(FIXTURES / "codex_rollout.jsonl"), "--windows", "128000"]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()]
    counts = {row[4] for row in rows if row[0] == "| codex_rollout.jsonl"}
    assert len(counts) == 1
    assert int(counts.pop()) > 1


def test_the_openai_judge_rejects_an_unanswered_call() -> None:
    """The judge is the strict double: a tool call with no tool message after it is refused."""
    judge = StrictOpenAIDouble().problems
    call = {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "user", "content": "and?"},
    ]
    assert judge(messages) != []
    assert judge(messages[:1]) == []
