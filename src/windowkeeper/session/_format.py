"""The session's format: the shape it is fed in and the shape its requests leave in.

A session works on Anthropic-shaped messages. With ``format="openai"`` or ``"responses"`` it
keeps an :class:`~windowkeeper.session._openai_history.OpenAIHistory` beside them (made by
:meth:`SessionFormat.history`) and converts each prepared request back; every format's request
is then shaped for its wire (:meth:`SessionFormat.send`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from .._errors import ConfigurationError
from ..core._messages import Message
from ..formats import from_anthropic, responses
from ..formats._wire import Repair, WireShaper, anthropic_message, openai_message
from ._openai_history import OpenAIHistory, OpenAIShaper

__all__ = ["FormatName", "SessionFormat"]

FormatName = Literal["anthropic", "openai", "responses"]


class SessionFormat:
    """One session's format: its OpenAI history (none for Anthropic) and its wire shaping."""

    __slots__ = ("_to_openai", "_wire", "dialect", "name")

    def __init__(self, name: FormatName) -> None:
        if name not in ("anthropic", "openai", "responses"):
            raise ConfigurationError(
                f"format must be 'anthropic', 'openai' or 'responses', got {name!r}"
            )
        self.name: FormatName = name
        self.dialect: Literal["chat", "responses"] = "responses" if name == "responses" else "chat"
        self._to_openai = OpenAIShaper(
            responses.from_anthropic if name == "responses" else from_anthropic
        )
        shapes = {
            "anthropic": anthropic_message,
            "openai": openai_message,
            "responses": responses.responses_item,
        }
        self._wire = WireShaper(shapes[name])

    def history(self, messages: Sequence[Message] = ()) -> OpenAIHistory | None:
        """A new OpenAI history holding ``messages``, or None for an Anthropic session."""
        if self.name == "anthropic":
            return None
        return OpenAIHistory(messages, dialect=self.dialect)

    def send(self, messages: list[Message]) -> tuple[list[Message], tuple[Repair, ...]]:
        """``messages`` (Anthropic-shaped) as the wire takes them, and what shaping repaired."""
        sent = self._to_openai.to_openai(messages) if self.name != "anthropic" else messages
        wired, repairs = self._wire.shape(sent, "input" if self.name == "responses" else "messages")
        if self.name == "responses":
            wired, dropped = responses.without_trailing_reasoning(wired)
            repairs += dropped
        return wired, repairs
