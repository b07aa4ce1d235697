"""A deterministic stand-in for the model's summary, so replays with summaries are reproducible.

:func:`scripted_summary` reads the messages a summary would fold and writes text in the shape
the original asks for (the nine numbered sections of
:data:`~windowkeeper.core._condense.SUMMARY_SECTIONS`), of a realistic length (about 6,000
characters, some 1,500 tokens, by default): the first lines of the task, the user's later
words, the tools called, the files touched, the commands run, the last thing the assistant said.
The same messages always give the same text; no model, clock or randomness is involved.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..core._condense import (
    SUMMARY_INSTRUCTION,
    SUMMARY_RESULT_HEADER,
    SUMMARY_SECTIONS,
    continuation_text,
)
from ..core._messages import Message

__all__ = ["DEFAULT_SUMMARY_CHARS", "scripted_summary"]

DEFAULT_SUMMARY_CHARS = 6_000
"""The default length of a scripted summary: about 1,500 tokens."""

_PATH_KEYS = ("path", "file_path", "absolutePath", "filename", "target_file")
_EDIT_TOOLS = frozenset({"write_to_file", "replace_in_file", "edit_file", "apply_diff", "write"})
# Cline's result headers: "[read_file for 'src/a.py'] Result:".
_HEADER = re.compile(r"^\[([A-Za-z_]+)(?: for '([^'\n]*)')?\] Result:")
_CLIP = 240


def scripted_summary(
    messages: Sequence[Message], *, target_chars: int = DEFAULT_SUMMARY_CHARS
) -> str:
    """A summary of ``messages`` of exactly ``target_chars`` characters (or less when the
    sections alone are shorter than a line), always the same for the same messages."""
    facts = _Facts(messages)
    sections = [
        facts.task_lines() or ["(no task text)"],
        [f"- {name} (called {count} times)" for name, count in facts.tools.items()]
        or ["- no tools were called"],
        [f"- {path}: {', '.join(sorted(uses))}" for path, uses in facts.files.items()]
        or ["- no files were touched"],
        [f"- ran: {command}" for command in facts.commands[-8:]]
        or ["- nothing was run; the work so far is reading and planning"],
        [f"- finish the work on {path}" for path in facts.edited[-5:]]
        or ["- carry on with the task as stated above"],
        [f'- the user said: "{words}"' for words in facts.user_words]
        or ["- the task has not changed"],
        [f"- {facts.last_statement or 'working through the task'}"],
        [f"- continue from: {facts.last_statement or 'the task as stated'}"],
        facts.required_files() or ["(none)"],
    ]
    lines: list[str] = []
    for number, (title, body) in enumerate(zip(SUMMARY_SECTIONS, sections, strict=True), 1):
        lines.append(f"{number}. {title}:")
        lines.extend(f"   {line}" for line in body)
    text = "\n".join(lines)
    if len(text) >= target_chars:
        return text[:target_chars]
    # Realistic length: a chronology of the steps, repeated as often as needed, before the end.
    chronology = "\n".join(_steps(facts.steps, target_chars - len(text)))
    return (text + "\n\nChronology:\n" + chronology)[:target_chars]


def _steps(steps: Sequence[str], room: int) -> Iterator[str]:
    if not steps:
        steps = ["no recorded steps"]
    used = 0
    number = 0
    while used < room:
        step = f"   step {number + 1}: {steps[number % len(steps)]}"
        used += len(step) + 1
        number += 1
        yield step


class _Facts:
    """What a summary can be built from, gathered in one pass over the messages."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.task = ""
        self.tools: dict[str, int] = {}
        self.files: dict[str, set[str]] = {}
        self.edited: list[str] = []
        self.commands: list[str] = []
        self.user_words: list[str] = []
        self.steps: list[str] = []
        self.last_statement = ""
        for position, message in enumerate(messages):
            content = message.get("content")
            blocks: list[Any] = (
                content
                if isinstance(content, list)
                else [{"type": "text", "text": content}]
                if isinstance(content, str)
                else []
            )
            for block in blocks:
                if isinstance(block, dict):
                    self._block(block, message.get("role"), position)

    def _block(self, block: dict[str, Any], role: Any, position: int) -> None:
        kind = block.get("type")
        if kind == "tool_use":
            name = str(block.get("name", "tool"))
            raw = block.get("input")
            arguments: dict[str, Any] = raw if isinstance(raw, dict) else {}
            path = next(
                (str(arguments[key]) for key in _PATH_KEYS if isinstance(arguments.get(key), str)),
                None,
            )
            self._tool(name, path)
            command = arguments.get("command")
            if isinstance(command, str) and command:
                self.commands.append(_clip(command.splitlines()[0], 120))
            return
        if kind == "tool_result":
            inner = block.get("content")
            if isinstance(inner, list):
                for item in inner:
                    if isinstance(item, dict) and item.get("type") == "text":
                        self._header(str(item.get("text", "")))
            return
        if kind != "text":
            return
        text = block.get("text")
        if not isinstance(text, str) or not text.strip():
            return
        if role == "assistant":
            self.last_statement = _clip(" ".join(text.split()), _CLIP)
        elif position == 0 and not self.task:
            self.task = text
        elif not self._header(text) and not _is_machinery(text):
            self.user_words.append(_clip(" ".join(text.split()), _CLIP))

    def _header(self, text: str) -> bool:
        match = _HEADER.match(text)
        if match is None:
            return False
        if match.group(1) != _HEADER_TOOL:
            self._tool(match.group(1), match.group(2), result=True)
        return True

    def _tool(self, name: str, path: str | None, *, result: bool = False) -> None:
        if not result:
            self.tools[name] = self.tools.get(name, 0) + 1
            self.steps.append(f"{name}({path})" if path else name)
        if path:
            self.files.setdefault(path, set()).add(name)
            if name in _EDIT_TOOLS and path not in self.edited:
                self.edited.append(path)

    def task_lines(self) -> list[str]:
        """The first non-empty lines of the task, clipped."""
        lines = [line.strip() for line in self.task.splitlines()]
        kept = [line for line in lines if line and line not in ("<task>", "</task>")]
        return [_clip(line, _CLIP) for line in kept[:6]]

    def required_files(self) -> list[str]:
        """The files edited, then the others, at most eight."""
        others = [path for path in self.files if path not in self.edited]
        return [*self.edited, *others][:8]


_HEADER_TOOL = SUMMARY_RESULT_HEADER[1:].split("]", 1)[0]
_MACHINERY = (
    "<environment_details>",
    "# task_progress",
    "# TODO LIST",
    SUMMARY_INSTRUCTION[:40],
    continuation_text("")[:40],
)


def _is_machinery(text: str) -> bool:
    """Text the agent adds to user messages (environment details, reminders), not the user's."""
    stripped = text.lstrip()
    return any(stripped.startswith(prefix) for prefix in _MACHINERY)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
