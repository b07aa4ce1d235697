"""The history a session holds: the Anthropic-shaped messages every decision is about and, for an
OpenAI session, the OpenAI messages it is fed, kept in step.

:class:`SessionHistory` is what ``append``, ``sync``'s cut, a rollback and a load change; every
change that can fail (a commit after it) comes with its undo, so a failed call leaves the history
as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core._incremental import Growing
from ..core._inputs import check_json_value, check_session_message
from ..core._messages import Message
from ._admission import admit_messages, check_first
from ._format import SessionFormat

if TYPE_CHECKING:
    from ._openai_history import OpenAIHistory

__all__ = ["SessionHistory"]


class SessionHistory:
    """One session's messages: :attr:`messages` (Anthropic-shaped) and the given ones."""

    __slots__ = ("_format", "_openai", "messages")

    def __init__(self, format: SessionFormat) -> None:
        self._format = format
        self.messages: list[Message] = Growing()  # appended to; any other change is logged
        self._openai: OpenAIHistory | None = format.history()

    @property
    def openai(self) -> bool:
        """Whether the session is fed OpenAI messages (Chat Completions or Responses items)."""
        return self._openai is not None

    def given(self) -> list[Message]:
        """A copy of the history in the session's format (messages shared, never modified)."""
        return self._openai.messages if self._openai is not None else list(self.messages)

    def __len__(self) -> int:
        """How many messages the history holds in the session's format."""
        return len(self._openai) if self._openai is not None else len(self.messages)

    def sync(self) -> str | None:
        """Bring :attr:`messages` up to date; the system prompt of an OpenAI history."""
        if self._openai is None:
            return None
        self.messages, system = self._openai.anthropic()
        return system

    def extend(self, batch: list[Message], commit: Callable[[], None]) -> None:
        """Check ``batch`` (each message, then the first), add it, then ``commit``; when any of it
        fails the history is as it was."""
        openai = self._openai
        if openai is not None:
            for offset, message in enumerate(batch):
                check_json_value(message, f"history[{len(openai) + offset}]")
            admit_messages(batch, len(openai))
            openai.extend(batch)
            try:
                self.sync()
                check_first(self.messages, "history")
                commit()
            except BaseException:
                openai.cut(len(openai) - len(batch))
                self.sync()
                raise
            return
        start = len(self.messages)
        for offset, message in enumerate(batch):
            check_session_message(message, f"history[{start + offset}]")
        admit_messages(batch, start)
        check_first([*self.messages[:2], *batch[:2]][:2], "history")
        self.messages.extend(batch)
        try:
            commit()
        except BaseException:
            del self.messages[start:]
            raise

    def cut(self, length: int) -> int:
        """Keep the first ``length`` messages (of the session's format); how many Anthropic
        messages that keeps."""
        self.sync()
        if self._openai is not None:
            self._openai.cut(length)
            self.sync()
            return len(self.messages)
        del self.messages[length:]
        return length

    def roll_back(self, length: int) -> Callable[[], None]:
        """Go back to the first ``length`` messages (a checkpoint's, in the session's format);
        the function that undoes it, for a commit that fails."""
        before = self.messages
        openai_before = None
        if self._openai is not None:
            openai_before = self._openai.messages
            self._openai.cut(length)
            self.sync()
        self.messages = Growing(self.messages[: len(self.messages) if self._openai else length])

        def undo() -> None:
            self.messages = before
            if openai_before is not None:
                self._openai = self._format.history(openai_before)
                self.sync()

        return undo

    def load(self, messages: list[Message]) -> None:
        """Hold ``messages`` (Anthropic-shaped, as a backend stores them), and nothing else."""
        self.messages = Growing(messages)
        openai = self._format.history()
        if openai is not None:
            openai.extend(openai.to_openai(messages))
            self._openai = openai
            self.sync()

    def clear(self) -> None:
        """Hold no message (before a reload)."""
        self.messages = Growing()
        self._openai = self._format.history()
