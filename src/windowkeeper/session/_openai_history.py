"""An OpenAI Chat Completions history kept beside its Anthropic-shaped form, for ContextSession.

The session works on Anthropic-shaped messages; with ``format="openai"`` it is fed and answers in
OpenAI's shape. Both directions are incremental, so a turn costs what it added:

- OpenAI -> Anthropic: when messages are appended, only the group of the last Anthropic message
  (a run of tool messages joins the user message after it; system messages ride on the next
  message as notes) and what follows is converted again; the earlier messages are kept, object
  for object, and a rebuilt message equal to the one before it is replaced by that earlier
  object, so the identity-based memos (pairing repair, token counting) keep working;
- Anthropic -> OpenAI (what ``prepare`` sends): each Anthropic message is converted once, and its
  OpenAI messages reused while it is the same object (the conversion is per message).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from .._errors import MalformedMessageError
from ..core._incremental import Growing
from ..core._messages import Message, shared_prefix
from ..formats import from_anthropic, responses, to_anthropic
from ..formats._responses_in import to_anthropic_tracked as to_anthropic_tracked_responses
from ..formats._responses_notes import CUSTOM_NOTE
from ..formats.openai import to_anthropic_tracked

__all__ = ["OpenAIHistory", "OpenAIShaper"]


_SYSTEM = frozenset({"system", "developer"})


def _single_text(content: Any) -> str | None:
    """The text of a list holding one plain ``{"type": "text", "text": ...}`` part, else None."""
    if isinstance(content, list) and len(content) == 1:
        part = content[0]
        if isinstance(part, dict) and set(part) == {"type", "text"} and part["type"] == "text":
            text = part["text"]
            return text if isinstance(text, str) else None
    return None


def _canonical(message: Message, previous_role: Any) -> Message:
    """``message`` in the one form its Anthropic shape gives back (see formats.openai, rules 1-2).

    The same for the API, and what a task folder reopens to: an assistant's empty content is
    None, and a single plain text part beside tool calls, or in a user message right after tool
    messages, is its string. Returns ``message`` itself when it is already canonical.
    """
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        calls = message.get("tool_calls")
        if content == [] or (calls and content == ""):
            return {**message, "content": None}
        text = _single_text(content) if calls else None
        if text is not None:
            return {**message, "content": text}
    elif role == "user" and previous_role == "tool":
        text = _single_text(content)
        if text is not None:
            return {**message, "content": text}
    return message


class OpenAIHistory:
    """The OpenAI messages (Chat Completions) or input items (Responses) of a session, and their
    Anthropic form. ``dialect`` says which."""

    __slots__ = (
        "_anthropic",
        "_converted",
        "_customs",
        "_dialect",
        "_ends",
        "_messages",
        "_system_parts",
    )

    def __init__(
        self, messages: Sequence[Message] = (), *, dialect: Literal["chat", "responses"] = "chat"
    ) -> None:
        self._dialect = dialect
        self._customs = False  # a custom tool call was appended (Responses)
        self._messages: list[Message] = []
        self._anthropic: list[Message] = Growing()  # converted in place: changes are logged
        self._ends: list[int] = []  # per Anthropic message: the OpenAI index past its sources
        self._system_parts: list[tuple[int, str]] = []
        self._converted = 0  # OpenAI messages the Anthropic form reflects
        self.extend(messages)

    @property
    def messages(self) -> list[Message]:
        """The OpenAI messages, as appended (a new list; the messages are shared)."""
        return list(self._messages)

    def __len__(self) -> int:
        return len(self._messages)

    def extend(self, messages: Sequence[Message]) -> None:
        """Add messages, each checked on its own (its path named by its place in the history).

        Chat messages are kept in their canonical form (see :func:`_canonical`), the form a
        reopened task gives back.
        """
        for offset, message in enumerate(messages):
            where = f"history[{len(self._messages) + offset}]"
            try:
                self._to_anthropic([message], name="history")
            except MalformedMessageError as error:
                raise MalformedMessageError(
                    error.path.replace("history[0]", where, 1), error.problem
                ) from None
        previous = next(
            (m.get("role") for m in reversed(self._messages) if m.get("role") not in _SYSTEM),
            None,
        )
        for message in messages:
            if message.get("type") == "custom_tool_call":
                self._customs = True
            canonical = _canonical(message, previous) if self._dialect == "chat" else message
            self._messages.append(canonical)
            if canonical.get("role") not in _SYSTEM:
                previous = canonical.get("role")

    @staticmethod
    def canonical(messages: Sequence[Message]) -> list[Message]:
        """``messages`` (Chat Completions) as :meth:`extend` keeps them."""
        output: list[Message] = []
        previous = None
        for message in messages:
            canonical = _canonical(message, previous) if isinstance(message, dict) else message
            output.append(canonical)
            if isinstance(canonical, dict) and canonical.get("role") not in _SYSTEM:
                previous = canonical.get("role")
        return output

    def cut(self, length: int) -> None:
        """Keep only the first ``length`` messages (the Anthropic form is rebuilt from scratch)."""
        del self._messages[length:]
        self._anthropic, self._ends, self._system_parts, self._converted = Growing(), [], [], 0

    def anthropic(self) -> tuple[list[Message], str | None]:
        """The Anthropic-shaped history and the joined system prompt."""
        if self._converted != len(self._messages):
            self._convert_tail()
        system = "\n\n".join(text for _, text in self._system_parts) or None
        if not self._system_parts:
            system = None
        return self._anthropic, system

    def _to_anthropic(self, messages: Sequence[Message], *, name: str) -> Any:
        if self._dialect == "responses":
            return responses.to_anthropic(messages, name=name)
        return to_anthropic(messages, name=name)

    def _convert_tail(self) -> None:
        """Convert again from where the last Anthropic message's sources begin."""
        kept = max(len(self._anthropic) - 1, 0)
        start = self._ends[kept - 1] if kept else 0
        if self._dialect == "responses":
            custom = [
                block["id"]
                for message in (self._anthropic[:kept] if self._customs else ())
                if message.get("role") == "assistant" and isinstance(message.get("content"), list)
                for block in message["content"]
                if isinstance(block, dict) and block.get(CUSTOM_NOTE)
            ]
            tail = to_anthropic_tracked_responses(
                self._messages[start:], name="history", custom_ids=custom
            )
        else:
            tail = to_anthropic_tracked(self._messages[start:], name="history")
        previous = self._anthropic[kept:]
        rebuilt: list[Any] = list(tail.conversation.messages)
        for index in range(min(len(previous), len(rebuilt))):
            if previous[index] == rebuilt[index]:
                rebuilt[index] = previous[index]
        same = 0  # keep what did not change, so readers of the list see the longest prefix
        while same < min(len(previous), len(rebuilt)) and rebuilt[same] is previous[same]:
            same += 1
        if kept + same < len(self._anthropic):
            del self._anthropic[kept + same :]
        self._anthropic.extend(rebuilt[same:])
        self._ends = self._ends[:kept] + [start + end for end in tail.ends]
        self._system_parts = [part for part in self._system_parts if part[0] < start] + [
            (start + index, text) for index, text in tail.system_parts
        ]
        self._converted = len(self._messages)

    def to_openai(self, messages: Sequence[Message]) -> list[Message]:
        """Anthropic-shaped messages in this dialect's shape, system messages included."""
        if self._dialect == "responses":
            return responses.from_anthropic(messages)
        return from_anthropic(messages)


class OpenAIShaper:
    """:meth:`OpenAIHistory.to_openai`, converting each message object once. Not thread-safe.

    When a request starts with the last one's messages (the usual turn), that part of the output
    is reused whole and only the new messages are looked at.
    """

    __slots__ = ("_convert", "_ends", "_input", "_memo", "_output")

    def __init__(
        self, convert: Callable[[Sequence[Message]], list[Message]] = from_anthropic
    ) -> None:
        self._convert = convert
        self._memo: dict[int, tuple[Message, list[Message]]] = {}
        self._input: list[Message] = []
        self._output: list[Message] = []
        self._ends: list[int] = [0]  # output length after each input message

    def to_openai(self, messages: Sequence[Message]) -> list[Message]:
        """The same list as :meth:`OpenAIHistory.to_openai`, its messages reused across calls."""
        done = shared_prefix(self._input, messages)
        output = self._output[: self._ends[done]]
        ends = self._ends[: done + 1]
        memo = self._memo
        for message in messages[done:]:
            known = memo.get(id(message))
            if known is None or known[0] is not message:
                known = (message, self._convert([message]))
                memo[id(message)] = known
            output.extend(known[1])
            ends.append(len(output))
        if len(memo) > 2 * len(messages) + 64:  # forget messages no longer sent
            live = {id(message) for message in messages}
            self._memo = {key: entry for key, entry in memo.items() if key in live}
        self._input, self._output, self._ends = list(messages), output, ends
        return list(output)
