"""An OpenAI Chat Completions history kept beside its Anthropic-shaped form, for ContextSession.

The session works on Anthropic-shaped messages; with ``format="openai"`` it is fed and answers in
OpenAI's shape. The Anthropic form is rebuilt when the OpenAI list changed, and every rebuilt
message equal to the one before it is replaced by that earlier object, so the identity-based
memos (pairing repair, token counting) keep working across requests.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._errors import MalformedMessageError
from .formats import from_anthropic, to_anthropic
from .messages import Message

__all__ = ["OpenAIHistory"]


class OpenAIHistory:
    """The OpenAI messages of a session and their Anthropic form."""

    __slots__ = ("_anthropic", "_current", "_messages", "_system")

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        self._messages: list[Message] = []
        self._anthropic: list[Message] = []
        self._system: str | None = None
        self._current = True
        self.extend(messages)

    @property
    def messages(self) -> list[Message]:
        """The OpenAI messages, as appended (a new list; the messages are shared)."""
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def extend(self, messages: Sequence[Message]) -> None:
        """Add messages, each checked on its own (its path named by its place in the history)."""
        for offset, message in enumerate(messages):
            where = f"history[{len(self._messages) + offset}]"
            try:
                to_anthropic([message], name="history")
            except MalformedMessageError as error:
                raise MalformedMessageError(
                    error.path.replace("history[0]", where, 1), error.problem
                ) from None
        self._messages.extend(messages)
        self._current = False

    def cut(self, length: int) -> None:
        """Keep only the first ``length`` messages."""
        del self._messages[length:]
        self._current = False

    def anthropic(self) -> tuple[list[Message], str | None]:
        """The Anthropic-shaped history and the joined system prompt."""
        if not self._current:
            conversation = to_anthropic(self._messages, name="history")
            previous = self._anthropic
            rebuilt: list[Any] = list(conversation.messages)
            for index in range(min(len(previous), len(rebuilt))):
                if previous[index] == rebuilt[index]:
                    rebuilt[index] = previous[index]
            self._anthropic = rebuilt
            self._system = conversation.system
            self._current = True
        return self._anthropic, self._system

    @staticmethod
    def to_openai(messages: Sequence[Message]) -> list[Message]:
        """Anthropic-shaped messages (as prepared) in OpenAI's shape, system messages included."""
        return from_anthropic(messages)
