"""Small agent traces the replay and command-line tests write: synthetic, deterministic, tiny."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

Message = dict[str, Any]

TASK = "<task>\nRefactor the storage layer.\n</task>"


def file_body(path: str, turn: int, chars: int) -> str:
    """Some file contents of about ``chars`` characters; the turn makes each version differ."""
    line = f"def handler_{turn}(request):  # {path}\n    return respond(request)\n"
    return (line * (chars // len(line) + 1))[:chars]


def conversation(
    turns: int,
    *,
    chars: int = 2_000,
    paths: tuple[str, ...] = ("src/a.py", "src/b.py", "src/c.py"),
    prompt_step: int | None = None,
) -> list[Message]:
    """The task, then per turn an assistant ``read_file`` call and its Cline-style result, then an answer.

    With ``prompt_step``, assistant message ``k`` of turn ``t`` records
    ``metrics.tokens = {prompt: prompt_step * t, completion: 100}``, as Cline does.
    """
    history: list[Message] = [{"role": "user", "content": [{"type": "text", "text": TASK}]}]
    for turn in range(1, turns + 1):
        path = paths[(turn - 1) % len(paths)]
        call = f"toolu_{turn:02d}"
        assistant: Message = {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Reading {path}."},
                {"type": "tool_use", "id": call, "name": "read_file", "input": {"path": path}},
            ],
        }
        if prompt_step is not None:
            assistant["metrics"] = {"tokens": {"prompt": prompt_step * turn, "completion": 100}}
        history.append(assistant)
        text = f"[read_file for '{path}'] Result:\n{file_body(path, turn, chars)}"
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call,
                        "content": [{"type": "text", "text": text}],
                    }
                ],
            }
        )
    final: Message = {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
    if prompt_step is not None:
        final["metrics"] = {"tokens": {"prompt": prompt_step * (turns + 1), "completion": 100}}
    history.append(final)
    return history


def one_large_result(size: int) -> list[Message]:
    """A task whose one tool result holds ``size`` characters, then the answer."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "Read the log."}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": "log"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "z" * size}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Done."}]},
    ]


def write_json(path: Path, value: Any) -> Path:
    """Write ``value`` as JSON to ``path`` and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value), encoding="utf-8")
    return path


def api_req_started(ts: int, index: int, tokens_in: int, tokens_out: int = 100) -> Message:
    """A ``ui_messages.json`` entry for one request, as Cline writes it."""
    text = json.dumps({"request": "...", "tokensIn": tokens_in, "tokensOut": tokens_out})
    return {
        "ts": ts,
        "type": "say",
        "say": "api_req_started",
        "text": text,
        "conversationHistoryIndex": index,
    }


def cline_folder(
    folder: Path,
    history: list[Message],
    *,
    ui_messages: list[Message] | None = None,
    context_history: str | None = None,
) -> Path:
    """Write a Cline task folder and return it."""
    write_json(folder / "api_conversation_history.json", history)
    if ui_messages is not None:
        write_json(folder / "ui_messages.json", ui_messages)
    if context_history is not None:
        (folder / "context_history.json").write_text(context_history, encoding="utf-8")
    return folder


def openai_messages() -> list[Message]:
    """A short OpenAI Chat Completions conversation with a system prompt and one tool call."""
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the failing test."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "src/a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": file_body("src/a.py", 1, 400)},
        {"role": "assistant", "content": "The test expects a list; fixed."},
    ]


def swe_agent_trajectory() -> dict[str, Any]:
    """A tiny SWE-agent ``.traj`` object in the function-calling layout."""
    return {
        "trajectory": [],
        "info": {"model_stats": {"tokens_sent": 1000, "tokens_received": 100, "api_calls": 2}},
        "history": [
            {"role": "system", "content": "SETTING: a shell.", "agent": "main"},
            {"role": "user", "content": "Fix issue 7.", "agent": "main"},
            {
                "role": "assistant",
                "content": "Looking around.",
                "agent": "main",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                    }
                ],
            },
            {
                "role": "tool",
                "content": "README.md\nsrc",
                "agent": "main",
                "tool_call_ids": ["call_a"],
            },
            {"role": "assistant", "content": "Done.", "agent": "main"},
        ],
    }
