"""Which texts of a user message are the user's own words, and which the agent's harness wrote.

The ledger takes the user's words for instructions; everything else a user message carries is
tool output or machinery and must never become "the latest instruction". The rules, none tied to
one agent:

- **machinery**: texts that open with a marker the agent writes (:data:`MACHINERY`:
  ``<environment_details>``, continuation notices, interruption markers, Cline's notices after
  a result, an ``OBSERVATION:`` line...) and elements it inserts into the user's text
  (``<system-reminder>``...), which are removed before the rest is read;
- **the user's words inside results**: Cline's ``<feedback>``, ``<answer>`` and
  ``<user_message>`` elements (:func:`tagged_words`) are the user's, wherever they are;
- **answers to a text action**: an agent that calls no native tools can still act in text. When
  its message ends with a fenced command block (```` ``` ```` with no language or a shell's,
  the way SWE-agent and mini-swe-agent issue commands) or a ``<command>`` element (SWE-agent's
  XML action format) (:func:`issues_command`), the harness runs the block and the next user
  message is its output, not the user speaking. This holds only
  while the history has no native tool call (an agent with tools shows code in fences, it does
  not run them), and the user's tagged words are still read in such an output.

Nothing here modifies its arguments.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import cache

__all__ = ["MACHINERY", "issues_command", "own_words", "tagged_words", "task_element"]

MACHINERY = (
    "<environment_details>",
    "<environment_context>",
    "<user_instructions>",
    "<system-reminder>",
    "This session is being continued from a previous conversation",
    "[Request interrupted by user",
    "<user-prompt-submit-hook>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<turn_aborted>",
    "<subagent_notification>",  # Codex: a sub-agent's status, sent as a user message
    "<command-name>",
    "<command-message>",
    "<local-command-",
    "Caveat: The messages below were generated",
    "[TASK RESUMPTION]",
    "[ERROR]",
    "[Response interrupted",
    "[windowkeeper:",
    "# TODO LIST UPDATE REQUIRED",
    "# task_progress",
    "Files attached by the user:",
    "Base directory for this skill:",  # Claude Code: a skill's text, sent as a user message
    "(The user did not provide",
    # Cline's notices after a tool result
    "The user has provided feedback on the results",
    "The user denied this operation",
    "The user approved this operation",
    "[The user has switched to",
    "Tool [",
    "Skipping tool",
    "Command failed with exit code",
    "Command executed",
    "New instructions for task continuation",
    "New message to respond to with",
    "The user provided the following feedback",
    # harnesses that hand a command's output back as a user text (ReAct, CodeAct)
    "OBSERVATION:",
    "Observation:",
    "EXECUTION RESULT",
)
"""Openings of the texts an agent writes into user messages: never the user's own words."""

_INSERTED = (
    "system-reminder",
    "environment_details",
    "user-prompt-submit-hook",
    # Claude Code: a background task's notice, what the user's IDE shows
    "task-notification",
    "ide_opened_file",
    "ide_selection",
)
"""Elements an agent inserts into a user's text: removed before the text is read."""

_OPEN_COMMAND = "<command>"
_CLOSE_COMMAND = "</command>"
"""The element SWE-agent's XML action format puts the command to run in."""

_SHELLS = frozenset({"", "bash", "sh", "shell", "console", "zsh", "sh-session"})
"""The info strings of a fenced block that is a command to run (none, or a shell's)."""


@cache
def _tagged() -> re.Pattern[str]:
    # Where Cline puts the user's own words inside its texts.
    return re.compile(r"<(feedback|answer|user_message)>\n?(.*?)\n?</\1>", re.DOTALL)


@cache
def _task() -> re.Pattern[str]:
    return re.compile(r"<task>\n?(.*?)\n?</task>", re.DOTALL)


@cache
def _inserted() -> re.Pattern[str]:
    tags = "|".join(map(re.escape, _INSERTED))
    return re.compile(rf"<({tags})>.*?(?:</\1>|\Z)", re.DOTALL)


def tagged_words(text: str) -> Iterator[str]:
    """The user's words Cline wraps in ``<feedback>``, ``<answer>`` or ``<user_message>``."""
    for match in _tagged().finditer(text):
        yield match.group(2)


def task_element(text: str) -> str | None:
    """The content of Cline's ``<task>`` element in ``text``, if there is one."""
    match = _task().search(text)
    return match.group(1) if match is not None else None


def own_words(text: str) -> str | None:
    """``text`` less the elements the agent inserts, or None when what is left is the agent's."""
    if "<" in text:
        text = _inserted().sub("", text)
    stripped = text.strip()
    if not stripped or stripped.startswith(MACHINERY):
        return None
    return stripped


def issues_command(text: str) -> bool:
    """Whether an assistant ``text`` ends with a command (see the module docstring): the last
    thing in it is a block fenced by three backticks whose info string is empty or names a
    shell, or a non-empty ``<command>`` element opened at the start of a line."""
    body = text.rstrip()
    if body.endswith(_CLOSE_COMMAND):
        opening = body.rfind(_OPEN_COMMAND)
        return (
            opening >= 0
            and (opening == 0 or body[opening - 1] == "\n")
            and bool(body[opening + len(_OPEN_COMMAND) : -len(_CLOSE_COMMAND)].strip())
        )
    if not body.endswith("```") or body.endswith("````"):
        return False
    inner = body[:-3]
    if not inner.endswith("\n"):
        return False
    opening = inner.rfind("```")
    if opening < 0 or (opening > 0 and inner[opening - 1] != "\n"):
        return False
    first_line, newline, _ = inner[opening + 3 :].partition("\n")
    return bool(newline) and first_line.strip().casefold() in _SHELLS
