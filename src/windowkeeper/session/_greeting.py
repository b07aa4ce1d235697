"""A conversation that opens with an assistant greeting, and the placeholder turn sent before it.

Chat apps open with the assistant's greeting: ``history[0]`` is an assistant message and the
user's task is ``history[1]``. The session takes such a conversation as it is (a deliberate
difference from the original, whose conversations always open with the task):

- messages 0-1, which the original always keeps, are the greeting and the task, so the task is
  never hidden; a second assistant message before the task is refused, since it would push the
  task out of the kept pair;
- the original's truncation notice, written over message 1, would replace the task's text here,
  so it is not recorded (:func:`windowkeeper.core._overwrites.add_truncation_notice`); the model
  gets the same notice as a text block of the greeting instead, while turns are hidden;
- Anthropic's Messages API refuses a request whose first message is not a user message, so
  each request in the Anthropic shape starts with :data:`OPENING`, a placeholder user turn of
  its own text, before the greeting. OpenAI's Chat Completions and Responses take an assistant
  message first, so nothing is added in those shapes.

The placeholder is added to each request, never to the history: it is not persisted, not
counted as the user's words anywhere (the ledger, the reopen law, ``sync``), and it is counted
by the estimate like everything sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from ..core._messages import Message

__all__ = ["OPENING", "OPENING_TEXT", "is_opening", "opens_with_greeting", "with_opening"]

OPENING_TEXT: Final = "[The conversation opens with the assistant's message that follows.]"
OPENING: Final[dict[str, Any]] = {
    "role": "user",
    "content": [{"type": "text", "text": OPENING_TEXT}],
}


def opens_with_greeting(messages: Sequence[Message]) -> bool:
    """Whether ``messages`` opens with an assistant message (a greeting before the task)."""
    return bool(messages) and messages[0].get("role") == "assistant"


def with_opening(messages: list[Message]) -> list[Message]:
    """``messages`` with :data:`OPENING` before a leading assistant message; else ``messages``."""
    return [OPENING, *messages] if opens_with_greeting(messages) else messages


def is_opening(message: object) -> bool:
    """Whether a sent message is the placeholder (its wire copy compares equal)."""
    return message == OPENING
