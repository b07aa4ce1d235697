"""Token counters for session tests: a rule the test chooses, and nothing learned."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any


class RuleCounter:
    """Counts every request with ``rule(messages, system, tools)``; remembers the last report."""

    def __init__(self, rule: Callable[[Sequence[Any], Any, Any], int]) -> None:
        self._rule = rule
        self.observed: int | None = None

    def count(
        self,
        messages: Sequence[Any],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        return self._rule(messages, system, tools)

    def observe(
        self,
        messages: Sequence[Any],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reported_input_tokens: int,
    ) -> None:
        self.observed = reported_input_tokens
