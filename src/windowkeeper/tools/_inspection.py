"""What a trace holds, counted: messages, tool calls, file reads, recorded usage, stored context.

:func:`inspect_trace` is what ``windowkeeper inspect`` shows; :meth:`Inspection.to_json` is its
``--json`` form. Nothing here prints or modifies what it is given.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import WindowkeeperError
from ..core._messages import Message
from ..core._overwrites import EditType, OverwriteStore
from ..core._truncation import DeletedRange
from ..core._window import DEFAULT_CONTEXT_WINDOW
from ..formats._wire import ANTHROPIC_BLOCK_KEYS
from ..rules._anthropic import FIRST_NOT_USER, SAME_ROLE_TWICE, Violation, validate_messages
from ..session._native_reads import NativeReadDetector
from ..session._session import ContextSession
from ..storage import ReadOnlyStore, TaskFolderStore
from ._trace import Trace

__all__ = ["AGENTS", "Inspection", "UsageStats", "inspect_trace", "model_calls"]


@dataclass(frozen=True, slots=True)
class UsageStats:
    """The provider-reported request sizes a trace recorded (input + output + cache)."""

    requests: int  # requests the trace recorded
    with_usage: int  # of which recorded a usage
    minimum: int | None
    median: float | None
    maximum: int | None

    def to_json(self) -> dict[str, Any]:
        """The ``requests`` part of ``inspect --json``."""
        return {
            "count": self.requests,
            "with_usage": self.with_usage,
            "min": self.minimum,
            "median": self.median,
            "max": self.maximum,
        }


@dataclass(frozen=True, slots=True)
class Inspection:
    """The counts ``windowkeeper inspect`` reports for one trace."""

    source: str
    format: str
    roles: dict[str, int]  # messages per role
    tool_calls: dict[str, int]  # tool_use blocks per tool name, most used first
    file_reads: dict[str, int]  # copies of each file's contents (normalized path), every block
    usage: UsageStats
    deleted_range: DeletedRange | None  # stored by Cline for the task
    overwrite_entries: int  # messages with stored overwrites (context_history.json)
    overwrites: dict[str, int]  # stored overwrite updates per kind of edit
    violations: tuple[Violation, ...]  # provider rules the stored history breaks
    unknown: tuple[str, ...] = ()  # ``where: type`` of what no request will carry
    model: str | None = None  # as the trace recorded it
    agent: str | None = None  # the agent that wrote the trace, when the format tells
    version: str | None = None  # its version, when the trace records it
    model_calls: int = 0  # model responses: runs of consecutive assistant messages
    forks: int = 0  # branches of the file the reader left out
    warnings: tuple[str, ...] = ()  # what the reader repaired or dropped
    compactions: int = 0  # times the agent put a summary in place of earlier turns

    @property
    def skipped(self) -> dict[str, int]:
        """The unknown types left out, with how many of each (most frequent first)."""
        counts = Counter(item.rsplit(": ", 1)[-1] for item in self.unknown)
        return dict(counts.most_common())

    @property
    def messages(self) -> int:
        """How many messages the history holds."""
        return sum(self.roles.values())

    @property
    def repeated_reads(self) -> dict[str, int]:
        """Files whose contents appear more than once, with their number of copies."""
        return {path: copies for path, copies in self.file_reads.items() if copies > 1}

    def to_json(self) -> dict[str, Any]:
        """The ``inspect --json`` object."""
        rules = Counter(violation.rule for violation in self.violations)
        return {
            "source": self.source,
            "format": self.format,
            "messages": {"total": self.messages, **self.roles},
            "tool_calls": self.tool_calls,
            "file_reads": {
                "copies": sum(self.file_reads.values()),
                "files": len(self.file_reads),
                "repeated": self.repeated_reads,
            },
            "requests": self.usage.to_json(),
            "deleted_range": None if self.deleted_range is None else list(self.deleted_range),
            "overwrites": {"entries": self.overwrite_entries, "updates": self.overwrites},
            "model": self.model,
            "agent": {"name": self.agent, "version": self.version},
            "model_calls": self.model_calls,
            "forks": self.forks,
            "compactions": self.compactions,
            "warnings": list(self.warnings),
            "skipped": self.skipped,
            "unknown": list(self.unknown),
            "violations": {
                "count": len(self.violations),
                "by_rule": dict(rules.most_common()),
                "items": [
                    {"path": v.path, "rule": v.rule, "detail": v.detail} for v in self.violations
                ],
            },
        }


def inspect_trace(trace: Trace, *, detector: NativeReadDetector | None = None) -> Inspection:
    """Count what ``trace`` holds.

    File reads are found by ``detector`` (default: the session's, which sees Cline's headers and
    native tool reads in every block, and file mentions), over the whole history.
    """
    history = list(trace.history)
    copies = (detector or NativeReadDetector()).copies(history, 0, OverwriteStore())
    reads = {path: len(found) for path, found in copies.items()}
    return Inspection(
        source=str(trace.path),
        format=trace.format.value,
        roles=dict(Counter(str(message.get("role")) for message in history)),
        tool_calls=dict(_tool_calls(history).most_common()),
        file_reads=dict(sorted(reads.items(), key=lambda item: (-item[1], item[0]))),
        usage=_usage_stats(trace),
        deleted_range=_stored_range(trace),
        overwrite_entries=0 if trace.store is None else len(trace.store),
        overwrites=_overwrite_counts(trace.store),
        violations=tuple(
            violation
            for violation in validate_messages(history, "history")
            if not _sent_fixed(violation, trace, history)
        ),
        unknown=(*trace.unknown, *unknown_blocks(history)),
        model=trace.model,
        agent=trace.agent or AGENTS.get(trace.format.value),
        version=trace.version,
        model_calls=model_calls(history),
        forks=trace.forks,
        warnings=trace.warnings,
        compactions=trace.compactions,
    )


def _stored_range(trace: Trace) -> DeletedRange | None:
    """The hidden range stored for the trace: a session's own (in its journal) in a folder it
    keeps, else what Cline saved."""
    if trace.session_folder is None:
        return trace.deleted_range
    try:
        session = ContextSession(
            DEFAULT_CONTEXT_WINDOW, store=ReadOnlyStore(TaskFolderStore(trace.session_folder))
        )
    except WindowkeeperError:  # a state it cannot read: what Cline saved is all there is
        return trace.deleted_range
    return session.deleted_range


def _sent_fixed(violation: Violation, trace: Trace, history: Sequence[Message]) -> bool:
    """Whether windowkeeper sends ``history`` without this fault, so it is none of the history's.

    An assistant greeting first is sent after a placeholder user turn (see
    :mod:`windowkeeper.session._greeting`); in a session's own folder, runs of one role (an
    in-band summary reply and the answer after it) are merged by the session before it sends.
    """
    if violation.rule == FIRST_NOT_USER:
        return len(history) > 1 and history[1].get("role") == "user"
    return violation.rule == SAME_ROLE_TWICE and trace.session_folder is not None


AGENTS = {
    "cline": "Cline",
    "swe-agent": "SWE-agent",
    "claude-code": "Claude Code",
    "codex": "Codex CLI",
    "gemini-cli": "Gemini CLI",
    "openhands": "OpenHands",
    "roo": "Roo Code",
}
"""The agent that writes each trace format (plain message files name none)."""


def model_calls(history: Sequence[Message]) -> int:
    """The model responses a history holds: one per run of consecutive assistant messages."""
    return sum(
        1
        for index, message in enumerate(history)
        if message.get("role") == "assistant"
        and (index == 0 or history[index - 1].get("role") != "assistant")
    )


def unknown_blocks(history: Sequence[Message]) -> tuple[str, ...]:
    """``history[i].content[j]: type`` for each block of a type the Messages API does not take.

    Such blocks stay in the history and are left out of every request (:mod:`windowkeeper.formats._wire`).
    """
    found = []
    for index, message in enumerate(history):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for position, block in enumerate(content):
            kind = block.get("type") if isinstance(block, dict) else None
            if kind not in ANTHROPIC_BLOCK_KEYS:
                found.append(f"history[{index}].content[{position}]: {kind}")
    return tuple(found)


def _tool_calls(history: Sequence[Message]) -> Counter[str]:
    calls: Counter[str] = Counter()
    for message in history:
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls[str(block.get("name"))] += 1
    return calls


def _usage_stats(trace: Trace) -> UsageStats:
    totals = [request.usage.total for request in trace.requests if request.usage is not None]
    if not totals:
        return UsageStats(len(trace.requests), 0, None, None, None)
    return UsageStats(
        len(trace.requests), len(totals), min(totals), statistics.median(totals), max(totals)
    )


def _overwrite_counts(store: OverwriteStore | None) -> dict[str, int]:
    counts: Counter[str] = Counter()
    if store is not None:
        for entry in store.entries():
            kind = _edit_name(entry.edit_type)
            counts[kind] += sum(len(block.updates) for block in entry.blocks)
    return dict(counts)


def _edit_name(edit_type: Any) -> str:
    try:
        return EditType(edit_type).name.lower()
    except ValueError:
        return str(edit_type)
