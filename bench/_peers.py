"""The peers windowkeeper is measured against, as :class:`windowkeeper.tools._replay.Policy` objects.

- :class:`LastTokensPolicy` ("last N tokens"): LangChain's own ``trim_messages(strategy="last")``
  from langchain-core, called on every request with ``max_tokens`` = the window's
  ``max_allowed_size`` and a token counter on the replay's ruler. The Anthropic-shaped history
  is converted to LangChain messages (``HumanMessage``, ``AIMessage`` with ``tool_calls``,
  ``ToolMessage``), trimmed, and converted back; nothing of LangChain is re-implemented here.
- :class:`MaskingPolicy` ("observation masking"), as in the SWE-agent study (Lindenbauer et
  al., *The Complexity Trap*, 2025) and OpenHands' ``ObservationMaskingCondenser``: every tool
  output but the last 10 is replaced by SWE-agent's placeholder ``Old environment output: (N
  lines omitted)``. When the masked request is still over ``max_allowed_size`` by the ruler, the
  original's truncation (``half``, or ``quarter`` when half is not enough) hides older messages
  until it fits, or until nothing more can be hidden (the overflow is then counted).

Both see what an agent built on those frameworks holds: Cline's ``[tool for 'x'] Result:`` text
results are first put into the tool_result blocks of their calls (windowkeeper's
:class:`~windowkeeper.session._native_results.ResultPlacer`, the same placement the session applies), as a
LangChain or OpenHands agent keeps tool results as tool messages, and a call the trace left
unanswered gets the original's ``result missing`` tool_result (for LangChain here; masking sends
through the original's pairing repair anyway). Results the placer cannot place stay text;
masking recognises those by their header too.

Each policy keeps ``retained_messages``: how many history messages the last request carried.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)

from windowkeeper import (
    ContextManager,
    ContextWindowInfo,
    Keep,
    context_window_info,
    ensure_tool_results_follow_tool_use,
)
from windowkeeper.core._messages import Message
from windowkeeper.core._truncation import DeletedRange, next_range
from windowkeeper.core._usage import TokenUsage
from windowkeeper.session._native_results import ResultPlacer
from windowkeeper.tools._replay import Ruler, Sent

__all__ = [
    "MASK_KEEP",
    "LastTokensPolicy",
    "MaskingPolicy",
    "from_langchain",
    "to_langchain",
    "tool_outputs",
]

MASK_KEEP = 10
"""Tool outputs kept intact by the masking policy (the study's window)."""

_RESULT_HEADER_START = "["
_RESULT_HEADER_MARK = "] Result:"


def _window(window: int | ContextWindowInfo) -> ContextWindowInfo:
    return window if isinstance(window, ContextWindowInfo) else context_window_info(window)


# ------------------------------------------------------------------------- LangChain conversion


def to_langchain(message: Message, index: int) -> list[BaseMessage]:
    """LangChain messages for ``message`` (``history[index]``), each id'd by its source index.

    An assistant message becomes one ``AIMessage`` whose content keeps every block (tool_use
    included, as langchain-anthropic does) and whose ``tool_calls`` list the calls; a user
    message becomes one ``ToolMessage`` per tool_result, then a ``HumanMessage`` with the rest.
    """
    content = message.get("content")
    if message.get("role") == "assistant":
        if not isinstance(content, list):
            return [AIMessage(content=content or "", id=f"{index}")]
        calls = [
            {
                "name": block.get("name", ""),
                "args": block.get("input") if isinstance(block.get("input"), dict) else {},
                "id": block.get("id"),
                "type": "tool_call",
            }
            for block in content
            if isinstance(block, dict) and block.get("type") == "tool_use"
        ]
        return [AIMessage(content=list(content), tool_calls=calls, id=f"{index}")]
    if not isinstance(content, list):
        return [HumanMessage(content=content, id=f"{index}")]
    output: list[BaseMessage] = []
    rest: list[Any] = []
    for position, block in enumerate(content):
        if isinstance(block, dict) and block.get("type") == "tool_result":
            result = block.get("content", "")
            output.append(
                ToolMessage(
                    content=result if isinstance(result, str | list) else str(result),
                    tool_call_id=str(block.get("tool_use_id")),
                    status="error" if block.get("is_error") else "success",
                    id=f"{index}.{position}",
                )
            )
        else:
            rest.append(block)
    if rest:
        output.append(HumanMessage(content=rest, id=f"{index}.h"))
    return output


def from_langchain(messages: Sequence[BaseMessage]) -> tuple[list[Message], Any]:
    """Anthropic-shaped messages and the system prompt, as a chat model would send them.

    Consecutive tool and human messages form one user message (tool_results first, as they
    come); a lone human message keeps its content as it is.
    """
    output: list[Message] = []
    system: Any = None
    pending: list[BaseMessage] = []

    def flush() -> None:
        if not pending:
            return
        if len(pending) == 1 and isinstance(pending[0], HumanMessage):
            output.append({"role": "user", "content": pending[0].content})
        else:
            blocks: list[Any] = []
            for part in pending:
                if isinstance(part, ToolMessage):
                    block: dict[str, Any] = {
                        "type": "tool_result",
                        "tool_use_id": part.tool_call_id,
                        "content": part.content,
                    }
                    if part.status == "error":
                        block["is_error"] = True
                    blocks.append(block)
                elif isinstance(part.content, str):
                    blocks.append({"type": "text", "text": part.content})
                else:
                    blocks.extend(part.content)
            output.append({"role": "user", "content": blocks})
        pending.clear()

    for message in messages:
        if isinstance(message, SystemMessage):
            system = message.content
        elif isinstance(message, AIMessage):
            flush()
            output.append({"role": "assistant", "content": message.content})
        else:
            pending.append(message)
    flush()
    return output, system


def _source(message: BaseMessage) -> int:
    return int(str(message.id).split(".", 1)[0])


class LastTokensPolicy:
    """LangChain's ``trim_messages(strategy="last")`` on every request, at ``max_allowed_size``.

    Called as ``trim_messages(messages, strategy="last", token_counter=<ruler>,
    max_tokens=int(max_allowed_size), start_on="human", include_system=True,
    allow_partial=False)``. The token counter sums, per LangChain message, the ruler's count of
    that message in Anthropic shape (the system prompt as a system prompt); summing per message
    never counts less than the ruler counts the merged request, so a trimmed request fits by the
    ruler too. LangChain messages are built once per history message, as an agent holding them
    would; the conversion back runs on every request, as a chat model's would.
    """

    name = "last-tokens"

    def __init__(
        self, window: int | ContextWindowInfo, *, system: Any = None, ruler: Ruler | None = None
    ) -> None:
        self.window = _window(window)
        self.system = system
        self._ruler = ruler if ruler is not None else Ruler()
        self._placer = ResultPlacer()
        self._converted: list[list[BaseMessage]] = []
        self._sources: list[Message] = []
        self._sizes: dict[int, tuple[BaseMessage, int]] = {}
        self._system_message = SystemMessage(content=system, id="system") if system else None
        self._dropped = 0
        self.retained_messages = 0

    def _count(self, messages: list[BaseMessage]) -> int:
        total = 0
        sizes = self._sizes
        for message in messages:
            entry = sizes.get(id(message))
            if entry is None or entry[0] is not message:
                if isinstance(message, SystemMessage):
                    size = self._ruler.count([], system=message.content)
                else:
                    size = self._ruler.count(from_langchain([message])[0])
                entry = sizes[id(message)] = (message, size)
            total += entry[1]
        return total

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """Convert what is new, trim the whole conversation, convert back."""
        placed = self._placer.place(history)
        converted = self._converted
        for index in range(len(placed)):
            message = placed[index]
            if index < len(converted) and self._sources[index] is message:
                continue
            del converted[index:], self._sources[index:]
            self._sources.append(message)
            if index and message.get("role") == "user":  # every call answered, as agents hold it
                message = ensure_tool_results_follow_tool_use([placed[index - 1], message])[1]
            converted.append(to_langchain(message, index))
        chain: list[BaseMessage] = [] if self._system_message is None else [self._system_message]
        for parts in converted:
            chain.extend(parts)
        trimmed = trim_messages(
            chain,
            strategy="last",
            token_counter=self._count,
            max_tokens=int(self.window.max_allowed_size),
            start_on="human",
            include_system=True,
            allow_partial=False,
        )
        messages, _ = from_langchain(trimmed)
        kept = {_source(message) for message in trimmed if not isinstance(message, SystemMessage)}
        self.retained_messages = len(kept)
        dropped = len(history) - len(kept)
        truncated = dropped > self._dropped
        self._dropped = dropped
        return Sent(messages, None, truncated, 0)


# ----------------------------------------------------------------------------- masking


def _is_result_text(text: Any) -> bool:
    return (
        isinstance(text, str)
        and text.startswith(_RESULT_HEADER_START)
        and _RESULT_HEADER_MARK in text[:2000]
    )


def tool_outputs(history: Sequence[Message], index: int) -> list[int]:
    """Positions of the tool outputs in ``history[index]``; -1 stands for the whole content.

    Tool outputs are tool_result blocks, Cline's ``[tool ...] Result:`` text blocks, and, for
    agents without native tool calls (SWE-agent's thought/action format), a user message of
    plain text answering an assistant message.
    """
    message = history[index]
    if message.get("role") != "user" or index < 2:
        return []
    content = message.get("content")
    if isinstance(content, str):
        previous = history[index - 1]
        return [-1] if previous.get("role") == "assistant" and content else []
    if not isinstance(content, list):
        return []
    return [
        position
        for position, block in enumerate(content)
        if isinstance(block, dict)
        and (
            block.get("type") == "tool_result"
            or (block.get("type") == "text" and _is_result_text(block.get("text")))
        )
    ]


def _lines(value: Any) -> int:
    if isinstance(value, str):
        return value.count("\n") + 1
    if isinstance(value, list):
        return sum(
            _lines(block.get("text", "")) for block in value if isinstance(block, dict)
        ) or len(value)
    return 1


def placeholder(value: Any) -> str:
    """SWE-agent's placeholder for an omitted observation."""
    return f"Old environment output: ({_lines(value)} lines omitted)"


def _masked(message: Message, positions: Sequence[int]) -> Message:
    content = message.get("content")
    if positions == [-1] or not isinstance(content, list):
        return {**message, "content": placeholder(content)}
    new_content = list(content)
    for position in positions:
        block = content[position]
        if block.get("type") == "tool_result":
            new_content[position] = {**block, "content": placeholder(block.get("content", ""))}
        else:
            new_content[position] = {"type": "text", "text": placeholder(block.get("text"))}
    return {**message, "content": new_content}


class MaskingPolicy:
    """Observation masking: tool outputs but the last ``keep`` replaced, truncation to fit.

    Whether a request fits is judged before sending, by the ruler, against
    ``max_allowed_size``; truncation is the original's (``next_range``, messages 0-1 kept,
    orphan tool_results stripped by :meth:`ContextManager.get_truncated_messages`).
    """

    name = "masking"

    def __init__(
        self,
        window: int | ContextWindowInfo,
        *,
        keep: int = MASK_KEEP,
        system: Any = None,
        ruler: Ruler | None = None,
    ) -> None:
        self.window = _window(window)
        self.keep = keep
        self.system = system
        self._ruler = ruler if ruler is not None else Ruler()
        self._placer = ResultPlacer()
        self._manager = ContextManager()
        self._view: list[Message] = []
        self._outputs: list[tuple[int, int]] = []  # (message index, position), in order
        self._masked_upto = 0  # outputs[:masked_upto] are masked
        self._mask_positions: dict[int, list[int]] = {}
        self.deleted_range: DeletedRange | None = None
        self.retained_messages = 0

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """Mask what fell out of the last ``keep`` outputs, then truncate until it fits."""
        placed = self._placer.place(history)
        view = self._view
        for index in range(len(view), len(placed)):
            view.append(placed[index])
            self._outputs.extend((index, position) for position in tool_outputs(placed, index))
        target = max(0, len(self._outputs) - self.keep)
        changed: set[int] = set()
        for index, position in self._outputs[self._masked_upto : target]:
            self._mask_positions.setdefault(index, []).append(position)
            changed.add(index)
        self._masked_upto = max(self._masked_upto, target)
        for index in changed:
            view[index] = _masked(placed[index], self._mask_positions[index])
        limit = self.window.max_allowed_size
        messages = self._manager.get_truncated_messages(view, self.deleted_range)
        tokens = self._ruler.count(messages, system=self.system)
        truncated = False
        while tokens > limit:
            keep = Keep.QUARTER if tokens / 2 > limit else Keep.HALF
            candidate = next_range(view, self.deleted_range, keep)
            if candidate[1] < candidate[0] or candidate == self.deleted_range:
                break  # nothing more to hide: the request goes out over the limit
            self.deleted_range = candidate
            truncated = True
            messages = self._manager.get_truncated_messages(view, self.deleted_range)
            tokens = self._ruler.count(messages, system=self.system)
        self.retained_messages = len(messages)
        return Sent(messages, self.deleted_range, truncated, 0)
