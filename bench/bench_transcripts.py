"""``inspect``, ``check`` and ``view`` on long transcripts of every format: the time each takes.

Run with ``.venv/bin/python bench/bench_transcripts.py [MESSAGES]`` (default 7,000). For each
format a transcript of about MESSAGES messages is generated in a temporary folder (a coding
session: a file read, a shell command, an edit per step, the same files read again and again,
usage recorded where the format records it), then each command runs in-process through the CLI
(click's runner, as a user would call it) three times; the median and the slowest run are
printed in seconds. ``check`` and ``view`` use the windowkeeper policy on a Cline task folder
without a stored session as well, the case that replayed every request (15-20 s before). The
target is under 3 s for every row; the numbers go into docs, not asserts.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from windowkeeper.cli._main import cli

RUNS = 3
TARGET_S = 3.0
FILES = 40  # distinct files the session reads, again and again


def _steps(messages: int) -> int:
    return max(1, (messages - 1) // 2)


def _code(step: int) -> str:
    return "".join(f"{n:5d}\tdef f{n}_{step % FILES}(): return {n}\n" for n in range(1, 40))


def _claude_code(folder: Path, messages: int) -> Path:
    records: list[dict[str, Any]] = [{"type": "permission-mode", "permissionMode": "default"}]
    parent: str | None = None

    def add(kind: str, content: Any, **extra: Any) -> None:
        nonlocal parent
        uuid = f"{kind[0]}-{len(records):06d}"
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message.update(id=f"msg_{len(records)}", model="claude-sonnet-4-6")
            message["usage"] = {
                "input_tokens": 3,
                "output_tokens": 50,
                "cache_read_input_tokens": 20_000 + len(records) * 30,
            }
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "type": kind,
                "message": message,
                "uuid": uuid,
                "sessionId": "s",
                "version": "2.1.92",
                **extra,
            }
        )
        parent = uuid

    add("user", "Refactor the package.")
    for step in range(_steps(messages)):
        call = {
            "type": "tool_use",
            "id": f"toolu_{step}",
            "name": "Read",
            "input": {"file_path": f"/src/m{step % FILES}.py"},
        }
        add("assistant", [call], requestId=f"req_{step}")
        add(
            "user",
            [{"type": "tool_result", "tool_use_id": f"toolu_{step}", "content": _code(step)}],
        )
    return _jsonl(folder / "session.jsonl", records)


def _codex(folder: Path, messages: int) -> Path:
    lines: list[dict[str, Any]] = [
        {
            "type": "session_meta",
            "payload": {
                "id": "x",
                "cli_version": "0.144.0",
                "base_instructions": {"text": "You are Codex."},
            },
        },
        {"type": "turn_context", "payload": {"model": "gpt-5.1-codex"}},
        _codex_item(
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Refactor the package."}],
            }
        ),
    ]
    for step in range(_steps(messages)):
        arguments = json.dumps({"cmd": f"sed -n 1,200p src/m{step % FILES}.py"})
        lines.append(
            _codex_item(
                {
                    "type": "function_call",
                    "name": "exec_command",
                    "arguments": arguments,
                    "call_id": f"c{step}",
                }
            )
        )
        lines.append(
            _codex_item(
                {"type": "function_call_output", "call_id": f"c{step}", "output": _code(step)}
            )
        )
        usage = {
            "input_tokens": 20_000 + step * 30,
            "cached_input_tokens": 19_000,
            "output_tokens": 50,
        }
        lines.append(
            {
                "type": "event_msg",
                "payload": {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {"total_tokens": step},
                        "last_token_usage": usage,
                    },
                },
            }
        )
    return _jsonl(folder / "rollout.jsonl", lines)


def _codex_item(payload: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response_item", "payload": payload}


def _gemini(folder: Path, messages: int) -> Path:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Refactor."}]}]
    for step in range(_steps(messages)):
        call = {"name": "read_file", "args": {"absolute_path": f"/src/m{step % FILES}.py"}}
        contents.append({"role": "model", "parts": [{"functionCall": call}]})
        response = {"name": "read_file", "response": {"output": _code(step)}}
        contents.append({"role": "user", "parts": [{"functionResponse": response}]})
    path = folder / "checkpoint.json"
    path.write_text(json.dumps(contents), encoding="utf-8")
    return path


def _openhands(folder: Path, messages: int) -> Path:
    events: list[dict[str, Any]] = [
        {
            "id": "s",
            "source": "agent",
            "kind": "SystemPromptEvent",
            "system_prompt": {"type": "text", "text": "You are OpenHands."},
            "tools": [],
        },
        {
            "id": "u",
            "source": "user",
            "kind": "MessageEvent",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "Refactor."}]},
        },
    ]
    for step in range(_steps(messages)):
        arguments = json.dumps({"command": f"cat src/m{step % FILES}.py"})
        events.append(
            {
                "id": f"a{step}",
                "source": "agent",
                "kind": "ActionEvent",
                "thought": [],
                "tool_name": "terminal",
                "tool_call_id": f"c{step}",
                "tool_call": {"id": f"c{step}", "name": "terminal", "arguments": arguments},
                "llm_response_id": f"r{step}",
            }
        )
        events.append(
            {
                "id": f"o{step}",
                "source": "environment",
                "kind": "ObservationEvent",
                "tool_name": "terminal",
                "tool_call_id": f"c{step}",
                "action_id": f"a{step}",
                "observation": {"content": [{"type": "text", "text": _code(step)}]},
            }
        )
    path = folder / "events.json"
    path.write_text(json.dumps(events), encoding="utf-8")
    return path


def _roo(folder: Path, messages: int) -> Path:
    turns = ["**User:**\n\n<task>\nRefactor.\n</task>"]
    for step in range(_steps(messages)):
        path = f"src/m{step % FILES}.py"
        turns.append(
            f"**Assistant:**\n\n<read_file>\n<args>\n<file>\n<path>{path}</path>\n"
            "</file>\n</args>\n</read_file>"
        )
        turns.append(f"**User:**\n\n[read_file for '{path}'] Result:\n{_code(step)}")
    path = folder / "export.md"
    path.write_text("\n\n---\n\n".join(turns), encoding="utf-8")
    return path


def _cline(folder: Path, messages: int) -> Path:
    task = folder / "cline-task"
    task.mkdir()
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nRefactor.\n</task>"}]}
    ]
    for step in range(_steps(messages)):
        path = f"src/m{step % FILES}.py"
        history.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"t{step}",
                        "name": "read_file",
                        "input": {"path": path},
                    }
                ],
            }
        )
        history.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{step}", "content": _code(step)}
                ],
            }
        )
    (task / "api_conversation_history.json").write_text(json.dumps(history), encoding="utf-8")
    return task


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return path


GENERATORS: dict[str, Callable[[Path, int], Path]] = {
    "claude-code": _claude_code,
    "codex": _codex,
    "gemini-cli": _gemini,
    "openhands": _openhands,
    "roo": _roo,
    "cline": _cline,
}

COMMANDS = {
    "inspect": ["inspect"],
    "check": ["check"],
    "view": ["view"],
    "check --policy windowkeeper": ["check", "--policy", "windowkeeper"],
    "view --policy windowkeeper": ["view", "--policy", "windowkeeper"],
}


def _time(arguments: list[str]) -> float:
    start = time.perf_counter()
    result = CliRunner().invoke(cli, arguments)
    elapsed = time.perf_counter() - start
    if result.exit_code not in (0, 1):
        raise SystemExit(f"{' '.join(arguments)} failed: {result.output[-400:]}")
    return elapsed


def main() -> None:
    messages = int(sys.argv[1]) if len(sys.argv) > 1 else 7_000
    print(f"{messages:,} messages per transcript, {RUNS} runs; median / slowest in s")
    print(f"{'format':<12} {'command':<28} {'median':>7} {'max':>7}")
    slow = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name, generate in GENERATORS.items():
            folder = Path(scratch) / name
            folder.mkdir()
            path = generate(folder, messages)
            for label, command in COMMANDS.items():
                if "windowkeeper" in label and name != "cline":
                    continue
                times = [_time([*command, str(path)]) for _ in range(RUNS)]
                median, worst = statistics.median(times), max(times)
                slow += worst >= TARGET_S
                flag = "" if worst < TARGET_S else "  over target"
                print(f"{name:<12} {label:<28} {median:7.2f} {worst:7.2f}{flag}")
    print(f"target under {TARGET_S:.0f} s: {'met' if not slow else f'{slow} rows over'}")


if __name__ == "__main__":
    main()
