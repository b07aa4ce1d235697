"""The policies a replay runs: the original's, windowkeeper's session, and what they share.

A policy decides what each request of a replayed conversation sends (:class:`Policy`):
:class:`ClinePolicy` is the original's :class:`~windowkeeper.ContextManager` deciding from the
previous request's usage, :class:`WindowkeeperPolicy` a
:class:`~windowkeeper.session._session.ContextSession` fed message by message. Each returns a
:class:`Sent`; :class:`Ruler` is the count that never learns, which measures every replay alike.
The original's auto-condense path is in :mod:`._condense_policy`.

Nothing here prints, and nothing given is modified.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from .._errors import ContextOverflowError
from ..cline._manager import ContextManager
from ..core._messages import Message
from ..core._overwrites import EditType, OverwriteStore
from ..core._truncation import DeletedRange
from ..core._usage import TokenUsage
from ..core._window import ContextWindowInfo, as_window_info
from ..session._session import ContextSession
from ..session._tokens import CalibratedEstimator
from ..session._usage_trust import DistrustedUsageWarning
from ..session.steps import Action

__all__ = [
    "ClinePolicy",
    "CondenseStep",
    "Policy",
    "PolicyName",
    "Ruler",
    "Sent",
    "Summarizer",
    "WindowkeeperPolicy",
]

_READ_EDITS = frozenset({EditType.READ_FILE_TOOL, EditType.ALTER_FILE_TOOL, EditType.FILE_MENTION})


class PolicyName(StrEnum):
    """The policies that come with windowkeeper."""

    CLINE = "cline"
    WINDOWKEEPER = "windowkeeper"
    CLINE_CONDENSE = "cline-condense"


class CondenseStep(StrEnum):
    """Which request of a summary a record is."""

    SUMMARIZE = "summarize"
    """The request that asks the model for the summary."""
    CONTINUATION = "continuation"
    """The request after it, which sends the summary as the tool's result."""


Summarizer = Callable[[Sequence[Message]], str]
"""Writes the summary a model would answer to a request (given the messages sent)."""


@dataclass(frozen=True, slots=True)
class Sent:
    """What a policy sent for one request, and what it did to get there."""

    messages: list[Message]
    deleted_range: DeletedRange | None
    truncated: bool  # the deleted range grew for this request
    replaced_reads: int  # older copies of file contents replaced for this request
    overflow_estimate: int | None = None
    """Set when nothing could make the request fit: the policy's estimate of the smallest one."""
    refused: ContextOverflowError | None = None
    """Set with ``overflow_estimate``: the error the policy raised, which says why."""
    condense: CondenseStep | None = None
    """Set when this request belongs to a summary."""
    follow_up: Sent | None = None
    """A request the policy made right after this one, before the next recorded answer (the
    continuation after a summary)."""
    actions: tuple[Action, ...] = ()
    """What the session did to build it (the windowkeeper policy; see ``Prepared.actions``)."""


class Policy(Protocol):
    """Decides what each request sends; one instance replays one conversation.

    ``send`` is called once per request, in order, with the history up to the request (each call's
    history extends the previous one), the usage of the previous request (None when there is none
    or nothing was recorded) and the time of that request (ms).
    """

    @property
    def name(self) -> str:
        """A short name for tables and plots."""
        ...

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """The request for ``history``."""
        ...


class Ruler:
    """A token counter that never learns, so every replay is measured alike.

    It follows the :class:`~windowkeeper.session._tokens.TokenCounter` protocol, so a
    :class:`~windowkeeper.session._session.ContextSession` can use it too: the session's pre-flight then
    judges requests by the same count the replay reports.
    """

    def __init__(self) -> None:
        self._estimator = CalibratedEstimator(safety_margin=0.0)

    def count(
        self,
        messages: Sequence[Message],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Estimated input tokens of a request with these messages, system prompt and tools."""
        return self._estimator.count(messages, system=system, tools=tools)

    def observe(
        self,
        messages: Sequence[Message],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reported_input_tokens: int,
    ) -> None:
        """Ignore what the provider reported: a ruler does not stretch."""


def _read_replacements(store: OverwriteStore) -> int:
    """How many file-content replacements the store holds (the truncation notice is not one)."""
    return store.update_count(_READ_EDITS)


class ClinePolicy:
    """The original: a :class:`~windowkeeper.ContextManager` and the deleted range it carries."""

    def __init__(
        self,
        window: int | ContextWindowInfo,
        *,
        store: OverwriteStore | None = None,
        deleted_range: DeletedRange | None = None,
    ) -> None:
        self.window = _window_info(window)
        self.manager = ContextManager()
        if store is not None:  # resume from a task's stored context, without touching it
            self.manager.store = store.copy()
        self.deleted_range = deleted_range

    @property
    def name(self) -> str:
        """``"cline"``."""
        return PolicyName.CLINE.value

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """The original's ``getNewContextMessagesAndMetadata`` for this request."""
        before = _read_replacements(self.manager.store)
        result = self.manager.get_new_context_messages_and_metadata(
            history,
            usage=usage,
            timestamp=timestamp,
            context_window=self.window,
            deleted_range=self.deleted_range,
        )
        self.deleted_range = result.deleted_range
        replaced = _read_replacements(self.manager.store) - before
        return Sent(
            result.truncated_history,
            result.deleted_range,
            result.updated_deleted_range,
            replaced,
        )


class WindowkeeperPolicy:
    """A :class:`~windowkeeper.session._session.ContextSession` fed message by message, as an agent loop would."""

    def __init__(
        self,
        window: int | ContextWindowInfo,
        *,
        counter: Ruler | None = None,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> None:
        self.system = system
        self.tools = tools
        self._now = 0
        self.session = ContextSession(
            _window_info(window), counter=counter, clock=lambda: self._now
        )
        self._fed = 0

    @property
    def name(self) -> str:
        """``"windowkeeper"``."""
        return PolicyName.WINDOWKEEPER.value

    def send(self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int) -> Sent:
        """Record the previous request's usage, append what is new, and prepare the request."""
        session = self.session
        if usage is not None:
            with warnings.catch_warnings():  # a trace's odd usage: the request's actions say so
                warnings.simplefilter("ignore", DistrustedUsageWarning)
                session.record_usage(usage, timestamp=timestamp)
        session.extend(history[self._fed :])
        self._fed = len(history)
        self._now = timestamp
        store = session.manager.store
        before = _read_replacements(store)
        range_before = session.deleted_range
        try:
            prepared = session.prepare(system=self.system, tools=self.tools)
        except ContextOverflowError as error:
            truncated = session.deleted_range != range_before
            return Sent([], session.deleted_range, truncated, 0, error.estimated_tokens, error)
        replaced = _read_replacements(store) - before
        return Sent(
            prepared.messages,
            prepared.deleted_range,
            prepared.range_changed,
            replaced,
            actions=prepared.actions,
        )


def _window_info(window: int | ContextWindowInfo) -> ContextWindowInfo:
    return as_window_info(window)
