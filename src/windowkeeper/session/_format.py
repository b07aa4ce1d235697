"""The session's format: the shape it is fed in and the shape its requests leave in.

A session works on Anthropic-shaped messages. With ``format="openai"`` or ``"responses"`` it
keeps an :class:`~windowkeeper.session._openai_history.OpenAIHistory` beside them (made by
:meth:`SessionFormat.history`) and converts each prepared request back; every format's request
is then shaped for its wire (:meth:`SessionFormat.send`). The converters are loaded by the
sessions that use them: an Anthropic session needs only the wire shaping.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from .._errors import ConfigurationError
from ..core._messages import Message
from ..formats._wire import Repair, WireShaper, anthropic_message

if TYPE_CHECKING:
    from ._openai_history import OpenAIHistory, OpenAIShaper

__all__ = ["FormatName", "SessionFormat"]

FormatName = Literal["anthropic", "openai", "responses"]


class SessionFormat:
    """One session's format: its OpenAI history (none for Anthropic) and its wire shaping."""

    __slots__ = ("_finish", "_to_openai", "_wire", "dialect", "name")

    def __init__(self, name: FormatName) -> None:
        if name not in ("anthropic", "openai", "responses"):
            raise ConfigurationError(
                f"format must be 'anthropic', 'openai' or 'responses', got {name!r}"
            )
        self.name: FormatName = name
        self.dialect: Literal["chat", "responses"] = "responses" if name == "responses" else "chat"
        self._to_openai: OpenAIShaper | None = None
        self._finish: Callable[[list[Message]], tuple[list[Message], tuple[Repair, ...]]]
        self._finish = _unchanged
        if name == "anthropic":
            self._wire = WireShaper(anthropic_message)
            return
        # the imports marked PLC0415 below: the converters are loaded by the sessions that use them
        from ._openai_history import OpenAIShaper  # noqa: PLC0415

        if name == "responses":
            from ..formats import responses  # noqa: PLC0415

            self._to_openai = OpenAIShaper(responses.from_anthropic)
            self._wire = WireShaper(responses.responses_item)
            self._finish = responses.without_trailing_reasoning
        else:
            from ..formats._wire import openai_message  # noqa: PLC0415
            from ..formats.openai import from_anthropic  # noqa: PLC0415

            self._to_openai = OpenAIShaper(from_anthropic)
            self._wire = WireShaper(openai_message)

    def history(self, messages: Sequence[Message] = ()) -> OpenAIHistory | None:
        """A new OpenAI history holding ``messages``, or None for an Anthropic session."""
        if self.name == "anthropic":
            return None
        from ._openai_history import OpenAIHistory  # noqa: PLC0415 - see __init__

        return OpenAIHistory(messages, dialect=self.dialect)

    def canonical(self, messages: list[Message]) -> list[Message]:
        """``messages`` as the session keeps them: OpenAI Chat messages in their one canonical
        form (see :meth:`OpenAIHistory.canonical`), other formats as they are."""
        if self.name != "openai":
            return messages
        from ._openai_history import OpenAIHistory  # noqa: PLC0415 - see __init__

        return OpenAIHistory.canonical(messages)

    def send(self, messages: list[Message]) -> tuple[list[Message], tuple[Repair, ...]]:
        """``messages`` (Anthropic-shaped) as the wire takes them, and what shaping repaired."""
        sent = self._to_openai.to_openai(messages) if self._to_openai is not None else messages
        wired, repairs = self._wire.shape(sent, "input" if self.name == "responses" else "messages")
        wired, dropped = self._finish(wired)
        return wired, repairs + dropped


def _unchanged(messages: list[Message]) -> tuple[list[Message], tuple[Repair, ...]]:
    return messages, ()
