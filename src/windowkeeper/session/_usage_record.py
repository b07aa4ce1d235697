"""The request a session prepared last, and the state a usage report for it leaves.

:meth:`ContextSession.record_usage` checks the report against that request (see
:mod:`windowkeeper.session._usage_trust`) before the next decision may use it; the request is
also what the counter learns the real size of.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._record import replace
from ..core._messages import Message
from ..core._usage import TokenUsage
from ._state import SessionState
from ._tokens import TokenCounter
from ._usage_trust import UsageTrust

__all__ = ["LastRequest", "recorded_usage"]


class LastRequest:
    """What the last prepared request sent, when, and under which range generation.

    A plain class: one is made per request, and a frozen dataclass costs several times more
    to build.
    """

    __slots__ = ("generation", "messages", "system", "timestamp", "tools")

    def __init__(
        self,
        messages: list[Message],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        timestamp: int,
        generation: int,
    ) -> None:
        self.messages = messages
        self.system = system
        self.tools = tools
        self.timestamp = timestamp
        self.generation = generation

    def __repr__(self) -> str:
        return f"LastRequest({len(self.messages)} messages, timestamp={self.timestamp})"


def recorded_usage(
    state: SessionState,
    usage: TokenUsage,
    last: LastRequest | None,
    *,
    sent_at: int,
    trust: UsageTrust,
    counter: TokenCounter,
    context_window: int,
) -> tuple[SessionState, bool]:
    """``state`` with ``usage`` reported for ``last`` (None: nothing prepared since), and whether
    the report is distrusted: then it is kept as a time only and decides nothing."""
    distrusted = last is not None and trust.judge(
        usage,
        last.messages,
        system=last.system,
        tools=last.tools,
        counter=counter,
        context_window=context_window,
    )
    state = replace(
        state,
        usage=None if distrusted else usage,
        usage_timestamp=sent_at,
        usage_generation=last.generation if last is not None else state.generation,
    )
    return state, bool(distrusted)
