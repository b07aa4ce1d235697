"""A long generated coding-agent session, for per-turn overhead at 500 to 5,000 messages.

Deterministic (no randomness): the task, then one native tool call and its tool_result per
step, in the shape of :func:`windowkeeper.tools._demo.demo_conversation` (Cline's ``[tool for 'x']
Result:`` header inside the tool_result). A project of 60 files is read, re-read (every file
many times over the session), edited (the result echoes the whole file in
``<final_file_content>``), searched and tested; every few steps the assistant also thinks aloud.
"""

from __future__ import annotations

from typing import Any

__all__ = ["generated_session"]

_FILES = tuple(f"src/pkg/module_{number:02d}.py" for number in range(60))
_WORDS = ("load", "save", "parse", "render", "merge", "count", "check", "build", "sort", "split")


def _file(path: str, version: int) -> str:
    seed = int(path[-5:-3])
    lines = [f'"""{path} (revision {version})."""', ""]
    for index in range(25 + seed % 20 + version % 5):
        word = _WORDS[(seed + index * 3 + version) % len(_WORDS)]
        lines += [
            f"def {word}_{index}(rows: list[dict], limit: int = {50 + version}) -> list[dict]:",
            f'    """{word.title()} at most limit rows ({seed}.{index})."""',
            f"    return [row for row in rows if row.get('{word}')][:limit]",
            "",
        ]
    return "\n".join(lines)


def _step(number: int, versions: dict[str, int]) -> tuple[str, str, dict[str, Any], str]:
    """(say, tool, input, output) of step ``number``."""
    kind = number % 10
    path = _FILES[(number * 7) % len(_FILES)]
    if kind in (0, 1, 2, 4, 6):  # half the steps read a file, most of them a second time or more
        return "Reading it again.", "read_file", {"path": path}, _file(path, versions[path])
    if kind in (3, 7):
        versions[path] += 1
        output = (
            f"The content was successfully saved to {path}.\n\n"
            f'<final_file_content path="{path}">\n{_file(path, versions[path])}\n'
            "</final_file_content>"
        )
        return "Editing it.", "replace_in_file", {"path": path, "diff": "..."}, output
    if kind == 5:
        hits = "\n".join(f"{_FILES[(number + row) % 60]}:{row * 4}: limit" for row in range(12))
        return "Searching.", "search_files", {"regex": "limit"}, hits
    log = "\n".join(
        f"tests/test_{row:02d}.py::test_case_{number}_{row} {'FAILED' if row % 11 == 0 else 'ok'}"
        for row in range(40)
    )
    return "Running the tests.", "execute_command", {"command": "pytest -q"}, log


def generated_session(messages: int = 5000) -> list[dict[str, Any]]:
    """``messages`` messages (rounded up to odd): the task, then call/result pairs."""
    versions = dict.fromkeys(_FILES, 0)
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nRefactor pkg.\n</task>"}]}
    ]
    number = 0
    while len(history) < messages:
        number += 1
        say, tool, tool_input, output = _step(number, versions)
        call_id = f"toolu_gen_{number:05d}"
        content: list[dict[str, Any]] = []
        if number % 4 == 0:
            content.append(
                {
                    "type": "thinking",
                    "thinking": f"Step {number}: check what changed.",
                    "signature": "x",
                }
            )
        content += [
            {"type": "text", "text": f"{say} (step {number})"},
            {"type": "tool_use", "id": call_id, "name": tool, "input": tool_input},
        ]
        history.append({"role": "assistant", "content": content})
        target = tool_input.get("path") or tool_input.get("regex") or tool_input.get("command")
        history.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call_id,
                        "content": [
                            {"type": "text", "text": f"[{tool} for '{target}'] Result:\n{output}"}
                        ],
                    }
                ],
            }
        )
    return history
