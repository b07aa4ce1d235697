"""bench/replay_transcripts.py: every request of a transcript judged by the strict doubles."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent / "bench"))

from _doubles import StrictOpenAIDouble
from replay_transcripts import main

from ..transcripts.claude_lines import line, results

FIXTURES = Path(__file__).resolve().parent.parent / "transcripts" / "fixtures"


def test_a_fixture_replays_clean_in_every_mode(capsys: pytest.CaptureFixture[str]) -> None:
    """One row per window, shape and mode; exit 0 when nothing was rejected or refused."""
    path = FIXTURES / "claude_code_session.jsonl"
    assert main([str(path), "--windows", "8000"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| claude")]
    assert len(rows) == 6  # 2 shapes x 3 modes


def test_every_format_the_command_line_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SWE-agent trajectory and a Cline task folder replay too; a path that cannot be read is
    named, the others still run, and the exit is 1."""
    folder = tmp_path / "task"
    folder.mkdir()
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nfix it\n</task>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]},
    ]
    (folder / "api_conversation_history.json").write_text(json.dumps(history))
    call = {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
    trajectory = {
        "history": [
            {"role": "system", "content": "You are a programmer."},
            {"role": "user", "content": "Fix the bug."},
            {"role": "assistant", "content": "Looking.", "tool_calls": [call]},
            {"role": "tool", "content": "ok", "tool_call_ids": ["c1"]},
            {"role": "assistant", "content": "Done."},
        ],
        "trajectory": [],
        "info": {},
    }
    (tmp_path / "run.traj").write_text(json.dumps(trajectory))
    missing = tmp_path / "missing.jsonl"
    paths = [str(tmp_path / "run.traj"), str(folder), str(missing)]
    assert main([*paths, "--windows", "8000"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len([row for row in out if row.startswith("| run.traj |")]) == 6
    assert len([row for row in out if row.startswith("| task |")]) == 6
    assert [row for row in out if row.startswith("| missing.jsonl")] == [
        f"| missing.jsonl | unreadable: {missing}: no such file or folder |"
    ]


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


def _long_task() -> str:
    """A Claude Code session that must fold at an 8k window: ten edits with long results, a
    todo list, and an instruction given after tool results."""
    lines = [line("user", "u-0", None, "Task: split the parser into modules.")]
    todo = {"type": "tool_use", "id": "toolu_todo", "name": "TodoWrite"}
    todo["input"] = {"todos": [{"content": "move the lexer", "status": "in_progress"}]}
    lines += [
        line("assistant", "a-todo", "u-0", [todo]),
        line("user", "r-todo", "a-todo", results(("toolu_todo", "Todos updated"))),
    ]
    parent = "r-todo"
    for turn in range(10):
        call_id = f"toolu_{turn}"
        edit = {"type": "tool_use", "id": call_id, "name": "Edit"}
        edit["input"] = {"file_path": f"src/part{turn}.py", "old_string": "a", "new_string": "b"}
        answer = results((call_id, f"edited part {turn}\n" + "x = 1\n" * 400))
        if turn == 2:
            answer.append({"type": "text", "text": "Keep the old import path working."})
        lines += [
            line("assistant", f"a-{turn}", parent, [edit]),
            line("user", f"r-{turn}", f"a-{turn}", answer),
        ]
        parent = f"r-{turn}"
    return "\n".join(lines) + "\n"


def test_a_fold_is_checked_for_the_state_of_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every fold of both compaction modes carries the instruction, the files and the todo;
    the OpenAI shape is not checked, and the default mode never folds."""
    path = tmp_path / "session.jsonl"
    path.write_text(_long_task(), encoding="utf-8")
    assert main([str(path), "--windows", "8000"]) == 0
    cells = {
        (row[2], row[3]): row[-1].removesuffix(" |")
        for row in (line.split(" | ") for line in capsys.readouterr().out.splitlines())
        if row[0] == "| session.jsonl"
    }
    assert cells[("anthropic", "default")] == "–"
    assert cells[("openai", "ledger")] == "not checked"
    for mode in ("ledger", "out-of-band"):
        kept = cells[("anthropic", mode)]
        folds = int(kept.split("(")[1].rstrip(")"))
        assert folds > 0
        assert kept == f"{folds} / {folds} / {folds} ({folds})"
