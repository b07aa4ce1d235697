"""The strict API doubles of ``tests/doubles`` as judges of the bench's requests.

The double (``AnthropicDouble.problems``) checks a request body as the Messages API would:
alternation, empty content, blocks in their role, tool pairing and ids, tools defined. The
bench gives it each request's messages (role and content only, as a client sends them), the
trace's system prompt, and a tool definition for every tool name the replay has used so far
(an agent defines its tools on every request). Size is judged apart (the bench's ruler against
the window), so the double is given a window no request reaches. Our own validator
(:func:`windowkeeper.validate_messages`) is then not the only judge of our output.
:class:`StrictOpenAIDouble` does the same for Chat Completions messages (``OpenAIDouble``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from windowkeeper.core._messages import Message

__all__ = ["StrictDouble", "StrictOpenAIDouble"]

_TESTS = Path(__file__).resolve().parent.parent / "tests"
_MODEL = "claude-sonnet-4-5"


def _on_path() -> None:
    if str(_TESTS) not in sys.path:
        sys.path.insert(0, str(_TESTS))


def _double() -> Any:
    _on_path()
    from doubles.anthropic_api import AnthropicDouble

    return AnthropicDouble(window=10**12)


class StrictDouble:
    """Judges requests of one replay (``system``: the trace's system prompt, if any).

    The double accepts thinking blocks only byte for byte as it issued them; the trace's own
    thinking blocks (``history``) are registered as issued, so a request that alters one is
    still caught.
    """

    def __init__(self, system: Any = None, history: Sequence[Message] = ()) -> None:
        self._double = _double()
        self._system = system
        self._tools: dict[str, dict[str, Any]] = {}
        for message in history:
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "thinking" and isinstance(block.get("signature"), str):
                    self._double._signatures[block["signature"]] = block.get("thinking")
                elif block.get("type") == "redacted_thinking":
                    self._double._redacted.add(block.get("data"))

    def problems(self, messages: Sequence[Message]) -> list[str]:
        """The rules the double says ``messages`` break (empty: it would accept them)."""
        for message in messages:
            content = message.get("content")
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    name = str(block.get("name"))
                    self._tools.setdefault(
                        name,
                        {"name": name, "description": name, "input_schema": {"type": "object"}},
                    )
        body: dict[str, Any] = {
            "model": _MODEL,
            "max_tokens": 1024,
            "messages": [{"role": m.get("role"), "content": m.get("content")} for m in messages],
        }
        if self._tools:
            body["tools"] = list(self._tools.values())
        if isinstance(self._system, str) and self._system.strip():
            body["system"] = self._system
        return [problem.rule for problem in self._double.problems(body)]


class StrictOpenAIDouble:
    """Judges Chat Completions requests of one replay, as :class:`StrictDouble` does Anthropic
    ones: the messages as sent (a system message among them), every function called so far
    defined, a window no request reaches."""

    def __init__(self) -> None:
        _on_path()
        from doubles.openai_api import OpenAIDouble

        self._double = OpenAIDouble(window=10**12)
        self._tools: dict[str, dict[str, Any]] = {}

    def problems(self, messages: Sequence[Message]) -> list[str]:
        """The rules the double says ``messages`` break (empty: it would accept them)."""
        for message in messages:
            for call in message.get("tool_calls") or ():
                name = str(call.get("function", {}).get("name"))
                self._tools.setdefault(
                    name, {"type": "function", "function": {"name": name, "parameters": {}}}
                )
        body: dict[str, Any] = {"model": "gpt-4o", "messages": list(messages)}
        if self._tools:
            body["tools"] = list(self._tools.values())
        return [problem.message for problem in self._double.problems(body)]
