"""Ready-made summarizers for a session's out-of-band compaction, on the Anthropic and OpenAI SDKs.

::

    import anthropic
    from windowkeeper.adapters.summarizers import anthropic_summarizer

    summarize = anthropic_summarizer(anthropic.Anthropic(), "claude-haiku-4-5")
    text = summarize(request)      # a SummaryRequest from the session
    summarize.last_usage           # the summary call's own TokenUsage

Each summarizer sends :func:`~windowkeeper.session._summary.summary_messages` of the request.
When the request carries the conversation's previous request (``request.prefix``), that is
the previous request unchanged with the instruction at the end of its final user turn, sent
with the conversation's system prompt and tools (``request.system``, ``request.tools``; the
summarizer's own ``system`` is then not sent): given the conversation's model, the provider
reads all of it but the instruction from its prompt cache. ``shared_prefix=False`` (for a
model that shares no cache with the conversation, e.g. a cheaper one) and a request without a
prefix send the other form: the folded messages written out as text (tool calls and results
included), roles alternating, the instruction as the final user turn; valid for any model,
needing no tool definitions and pairing no tool blocks. The reply's text is returned,
stripped. The OpenAI ones convert the messages with
:func:`windowkeeper.formats.openai.from_anthropic` and call Chat Completions.

Failures: an error of the SDK (a refused request, a timeout, a rate limit) is raised as the SDK
raised it, and an empty reply gives ``""``; the session treats both as "no summary" and compacts
with the ledger alone, so nothing is retried or hidden here. ``last_usage`` is None until a call
succeeds, and is reset when one starts.

No SDK is imported by this module: it only calls the client it is given.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..core._usage import TokenUsage
from ..formats.openai import from_anthropic
from ..session._sdk import usage_from_sdk
from ..session._summary import (
    RESULT_CHARS,
    SummaryRequest,
    shared_prefix_messages,
    summary_messages,
)

if TYPE_CHECKING:  # named in the client type arguments below, as strings
    import anthropic  # noqa: F401
    import openai  # noqa: F401

__all__ = [
    "AnthropicSummarizer",
    "AsyncAnthropicSummarizer",
    "AsyncOpenAISummarizer",
    "OpenAISummarizer",
    "anthropic_async_summarizer",
    "anthropic_summarizer",
    "openai_async_summarizer",
    "openai_summarizer",
]

DEFAULT_MAX_TOKENS = 2_048
"""The default cap on a summary's length, in output tokens."""


Client = TypeVar("Client")


class _Base(Generic[Client]):
    """What every summarizer keeps: the client, the model, its limits, the last call's usage.

    ``max_tokens`` caps the summary; ``system`` is an optional system prompt for the summary
    call (a first system message for Chat Completions); ``result_chars`` cuts each tool result
    and input (None: whole); ``shared_prefix``: whether to send the conversation's previous
    request when the session offers it (see the module docstring).
    """

    __slots__ = (
        "client",
        "last_usage",
        "max_tokens",
        "model",
        "result_chars",
        "shared_prefix",
        "system",
    )

    def __init__(
        self,
        client: Client,
        model: str,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        system: str | None = None,
        result_chars: int | None = RESULT_CHARS,
        shared_prefix: bool = True,
    ) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.system = system
        self.result_chars = result_chars
        self.shared_prefix = shared_prefix
        self.last_usage: TokenUsage | None = None

    def _messages(self, request: SummaryRequest) -> _Call:
        """The call's messages, and the system prompt and tools to send with them."""
        self.last_usage = None
        shared = shared_prefix_messages(request) if self.shared_prefix else None
        if shared is not None:
            return _Call(shared, request.system, request.tools)
        messages = summary_messages(request, result_chars=self.result_chars, shared_prefix=False)
        return _Call(messages, self.system or None, None)


@dataclass(frozen=True, slots=True)
class _Call:
    """What one summary call sends: its messages, system prompt and tools (None: none)."""

    messages: list[dict[str, Any]]
    system: Any
    tools: Sequence[Any] | None


class AnthropicSummarizer(_Base["anthropic.Anthropic"]):
    """A :data:`~windowkeeper.session._summary.Summarizer` calling ``client.messages.create``."""

    __slots__ = ()

    def __call__(self, request: SummaryRequest) -> str:
        """The summary of ``request``'s messages (may raise the SDK's errors; see the module)."""
        create: Any = self.client.messages.create
        reply = create(**_anthropic_params(self, self._messages(request)))
        self.last_usage = usage_from_sdk(reply.usage)
        return _anthropic_text(reply.content)


class AsyncAnthropicSummarizer(_Base["anthropic.AsyncAnthropic"]):
    """An :data:`~windowkeeper.session._summary.AsyncSummarizer` on ``anthropic.AsyncAnthropic``."""

    __slots__ = ()

    async def __call__(self, request: SummaryRequest) -> str:
        """The summary of ``request``'s messages (may raise the SDK's errors; see the module)."""
        create: Any = self.client.messages.create
        reply = await create(**_anthropic_params(self, self._messages(request)))
        self.last_usage = usage_from_sdk(reply.usage)
        return _anthropic_text(reply.content)


class OpenAISummarizer(_Base["openai.OpenAI"]):
    """A :data:`~windowkeeper.session._summary.Summarizer` calling Chat Completions
    (``max_tokens`` is sent as ``max_completion_tokens``)."""

    __slots__ = ()

    def __call__(self, request: SummaryRequest) -> str:
        """The summary of ``request``'s messages (may raise the SDK's errors; see the module)."""
        create: Any = self.client.chat.completions.create
        reply = create(**_openai_params(self, self._messages(request)))
        self.last_usage = usage_from_sdk(reply.usage) if reply.usage is not None else None
        return _openai_text(reply.choices)


class AsyncOpenAISummarizer(_Base["openai.AsyncOpenAI"]):
    """An :data:`~windowkeeper.session._summary.AsyncSummarizer` on ``openai.AsyncOpenAI``."""

    __slots__ = ()

    async def __call__(self, request: SummaryRequest) -> str:
        """The summary of ``request``'s messages (may raise the SDK's errors; see the module)."""
        create: Any = self.client.chat.completions.create
        reply = await create(**_openai_params(self, self._messages(request)))
        self.last_usage = usage_from_sdk(reply.usage) if reply.usage is not None else None
        return _openai_text(reply.choices)


def _anthropic_params(summarizer: _Base[Any], call: _Call) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": summarizer.model,
        "max_tokens": summarizer.max_tokens,
        "messages": call.messages,
    }
    if call.system:
        params["system"] = call.system
    if call.tools:
        params["tools"] = list(call.tools)
    return params


def _anthropic_text(content: Sequence[Any]) -> str:
    return "".join(
        block.text for block in content if getattr(block, "type", None) == "text"
    ).strip()


def _openai_params(summarizer: _Base[Any], call: _Call) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": summarizer.model,
        "max_completion_tokens": summarizer.max_tokens,
        "messages": from_anthropic(call.messages, system=call.system or None),
    }
    if call.tools:
        params["tools"] = list(call.tools)
    return params


def _openai_text(choices: Sequence[Any]) -> str:
    if not choices:
        return ""
    content = choices[0].message.content
    return content.strip() if isinstance(content, str) else ""


# The factory names the module's docstring uses: the classes themselves.
anthropic_summarizer = AnthropicSummarizer
anthropic_async_summarizer = AsyncAnthropicSummarizer
openai_summarizer = OpenAISummarizer
openai_async_summarizer = AsyncOpenAISummarizer
