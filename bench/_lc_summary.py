"""LangChain's ``SummarizationMiddleware`` as a peer, run through langchain itself.

:class:`SummarizationPolicy` holds the conversation as a LangChain agent's state does (a list
of LangChain messages, built once per history message as :mod:`_peers` converts them) and, before
every request, calls the middleware's own ``before_model`` hook on that state, exactly as
``create_agent`` does before each model call. When the hook returns an update (it summarized),
the update is applied with langgraph's own ``add_messages`` reducer, so the state becomes what
the agent would hold: the middleware's summary message, then the messages it preserved. The
request is that state converted back to the Anthropic shape, with the system prompt apart (an
agent's system prompt is not part of its state).

Configured as a user of the middleware would for this window: ``trigger=("tokens", limit)``
where limit is ``max_allowed_size`` less the system prompt (the middleware counts the state
only), ``token_counter`` the replay's ruler per message, everything else at the middleware's
defaults (``keep=("messages", 20)``; the messages to summarize trimmed to their last 4,000
tokens; its default summary prompt).

The model is :class:`ScriptedSummaryModel`, a fake chat model: it reads the conversation the
summary prompt quotes (the middleware writes it as XML) back into messages and answers with
:func:`~windowkeeper.tools._scripted_summary.scripted_summary` of them, the same stand-in every
summarizing policy of the evaluation uses. Nothing of the middleware is re-implemented here.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any
from xml.etree import ElementTree

from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models import SimpleChatModel
from langchain_core.messages import BaseMessage, SystemMessage
from langgraph.graph.message import add_messages
from pydantic import Field

from _peers import from_langchain, to_langchain
from windowkeeper import ContextWindowInfo, context_window_info, ensure_tool_results_follow_tool_use
from windowkeeper.core._messages import Message
from windowkeeper.core._usage import TokenUsage
from windowkeeper.session._native_results import ResultPlacer
from windowkeeper.tools._replay import Ruler, Sent
from windowkeeper.tools._scripted_summary import scripted_summary

__all__ = ["ScriptedSummaryModel", "SummarizationPolicy", "quoted_messages"]

_OPEN = "Messages to summarize:\n"
_CLOSE = "</messages>"


def _element_message(element: ElementTree.Element) -> Message | None:
    """One ``<message type=...>`` of the middleware's XML as an Anthropic-shaped message."""
    kind = element.get("type")
    if kind == "human":
        return {"role": "user", "content": [{"type": "text", "text": element.text or ""}]}
    if kind == "tool":
        result = [{"type": "text", "text": element.text or ""}]
        return {"role": "user", "content": [{"type": "tool_result", "content": result}]}
    if kind != "ai":
        return None
    blocks: list[dict[str, Any]] = []
    if element.text and element.text.strip():
        blocks.append({"type": "text", "text": element.text.strip()})
    for child in element:
        if child.tag == "content" and child.text:
            blocks.append({"type": "text", "text": child.text})
        elif child.tag == "tool_call":
            try:
                arguments = json.loads(child.text or "{}")
            except ValueError:
                arguments = {}
            blocks.append(
                {
                    "type": "tool_use",
                    "id": child.get("id", ""),
                    "name": child.get("name", ""),
                    "input": arguments if isinstance(arguments, dict) else {},
                }
            )
    return {"role": "assistant", "content": blocks}


def quoted_messages(prompt: str) -> list[Message]:
    """The conversation a summary prompt quotes, read back from its XML (one user message with
    the whole quoted text when it does not parse)."""
    start = prompt.find(_OPEN)
    end = prompt.rfind(_CLOSE)
    body = prompt[start + len(_OPEN) : end] if start >= 0 and end > start else prompt
    try:
        root = ElementTree.fromstring(f"<r>{body}</r>")
    except ElementTree.ParseError:
        return [{"role": "user", "content": body}]
    found = [_element_message(element) for element in root]
    return [message for message in found if message is not None]


class ScriptedSummaryModel(SimpleChatModel):
    """A fake chat model answering each prompt with the scripted summary of what it quotes."""

    calls: list[tuple[str, str]] = Field(default_factory=list)
    """(prompt, summary) of every call, oldest first."""
    model_ms: float = 0.0
    """Time spent writing summaries (the model's part, not the middleware's)."""

    @property
    def _llm_type(self) -> str:
        return "scripted-summary"

    def _call(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> str:
        started = time.perf_counter()
        prompt = messages[-1].text if messages else ""
        summary = scripted_summary(quoted_messages(prompt))
        self.calls.append((prompt, summary))
        self.model_ms += (time.perf_counter() - started) * 1000
        return summary


def _is_summary(message: BaseMessage) -> bool:
    return message.additional_kwargs.get("lc_source") == "summarization"


class SummarizationPolicy:
    """LangChain's ``SummarizationMiddleware`` before every request (see the module docstring)."""

    name = "langchain-summarization"

    def __init__(
        self, window: int | ContextWindowInfo, *, system: Any = None, ruler: Ruler | None = None
    ) -> None:
        self.window = (
            window if isinstance(window, ContextWindowInfo) else context_window_info(window)
        )
        self.system = system
        self._ruler = ruler if ruler is not None else Ruler()
        self._sizes: dict[int, tuple[BaseMessage, int]] = {}
        self._placer = ResultPlacer()
        self._state: list[BaseMessage] = []
        self._fed = 0
        self.model = ScriptedSummaryModel()
        head = self._ruler.count([], system=system) if system else 0
        trigger = max(1, int(self.window.max_allowed_size) - head)
        self.middleware: SummarizationMiddleware[Any, Any] = SummarizationMiddleware(
            self.model, trigger=("tokens", trigger), token_counter=self._count
        )
        self.retained_messages = 0
        self.steps: Counter[str] = Counter()
        """Summarizations: "summarize" with a model call, "no-model" without one (the
        middleware's stock text when the trimmed messages are empty)."""

    def _count(self, messages: Any) -> int:
        """The ruler's count of each message in Anthropic shape, summed (remembered per object)."""
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
        """Append what is new to the state, run the middleware's hook, send the state."""
        placed = self._placer.place(history)
        for index in range(self._fed, len(placed)):
            message = placed[index]
            if index and message.get("role") == "user":  # every call answered, as agents hold it
                message = ensure_tool_results_follow_tool_use([placed[index - 1], message])[1]
            self._state.extend(to_langchain(message, index))
        self._fed = len(placed)
        calls = len(self.model.calls)
        update = self.middleware.before_model({"messages": self._state}, None)  # type: ignore[typeddict-item,arg-type]
        if update is not None:
            self.steps["summarize" if len(self.model.calls) > calls else "no-model"] += 1
            self._state = list(add_messages(self._state, update["messages"]))  # type: ignore[arg-type]
        messages, _ = from_langchain(self._state)
        kept = {str(m.id).split(".", 1)[0] for m in self._state if not _is_summary(m)}
        self.retained_messages = len(kept)
        return Sent(messages, None, update is not None, 0)
