"""ContextManager: the original's class, wiring the pure parts to one overwrite store.

It holds only the store (and the detector used to find duplicate reads); the history, the
deleted range and the usage are passed in on every call, as in the original. One instance per
task; not thread-safe; no singleton.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, cast

from .._record import record

if TYPE_CHECKING:
    import logging

    from ..storage import LoadReport

from ..core._file_reads import (
    SAVINGS_THRESHOLD,
    ClineReadDetector,
    ReadDetector,
    apply_read_replacements,
    savings_ratio,
)
from ..core._messages import CheckMemo, Message, MessageInput, MessageT, block_text
from ..core._notices import CONTINUE_NOTICE
from ..core._overwrites import EditType, OverwriteStore, add_truncation_notice, text_update
from ..core._pairing import RepairMemo
from ..core._truncation import (
    DeletedRange,
    Keep,
    check_range,
    keep_for,
    next_range,
    visible_start,
)
from ..core._usage import UsageLike, _as_usage, should_compact
from ..core._visible import OverwriteMemo, truncated_messages
from ..core._window import ContextWindowInfo, as_window_info

__all__ = ["ContextManager", "ContextResult", "FileReadOptimization"]


def _logger() -> logging.Logger:
    """The "windowkeeper" logger, its module loaded on the first message (not by the import)."""
    import logging  # noqa: PLC0415

    return logging.getLogger("windowkeeper")


TaskDir = str | os.PathLike[str] | None


def _dicts(history: Sequence[MessageInput]) -> Sequence[Message]:
    """``history`` as the core types it: the check that follows refuses any message not a dict."""
    return cast("Sequence[Message]", history)


def _same_type(history: Sequence[MessageT], sent: list[Message]) -> list[MessageT]:
    """``sent`` typed as ``history``'s messages: they are those, or copies that keep their shape."""
    return cast("list[MessageT]", sent)


@record(frozen=True, slots=True)
class ContextResult(Generic[MessageT]):
    """What to send for one request, and whether the deleted range changed.

    ``truncated_history`` holds messages of the type given (for a type checker; at run time
    dicts): the history's own, or copies of them with text replaced and tool results repaired.
    """

    deleted_range: DeletedRange | None
    updated_deleted_range: bool
    truncated_history: list[MessageT]


@record(frozen=True, slots=True)
class FileReadOptimization(Generic[MessageT]):
    """The outcome of replacing duplicate reads in memory (messages typed as the history's)."""

    any_context_updates: bool
    need_to_truncate: bool
    optimized_history: list[MessageT]


class ContextManager:
    """The original's ContextManager: decides what each request sends, keeps the overwrite store.

    ``detector`` finds duplicate file reads; the default is the original's
    (:class:`~windowkeeper.core._file_reads.ClineReadDetector`). ``keep_user_text``: the
    pairing repair keeps a string-content user message's text after the ``result missing``
    results it adds (the original drops it; the session turns this on).
    """

    def __init__(
        self, *, detector: ReadDetector | None = None, keep_user_text: bool = False
    ) -> None:
        self.store = OverwriteStore()
        self.detector: ReadDetector = detector if detector is not None else ClineReadDetector()
        self.last_load: LoadReport | None = None
        self._checks = CheckMemo()
        self._repairs = RepairMemo(keep_text=keep_user_text)
        self._edits = OverwriteMemo()
        self.last_replaced: frozenset[int] = frozenset()
        """Messages whose older file copies the latest duplicate-read replacement changed."""

    # -- persistence -----------------------------------------------------------------------

    def initialize_context_history(self, task_dir: str | os.PathLike[str]) -> LoadReport:
        """Replace the store with the one saved in ``task_dir`` (empty when none or unusable).

        Returns, and keeps in ``last_load``, a report of what was found; a corrupt file is logged,
        set aside and reported rather than raised, as the original starts empty on it.
        """
        from ..storage import load_store  # noqa: PLC0415 - a task folder's, not the import's

        self.store, report = load_store(task_dir)
        self.last_load = report
        if not report.ok:
            _logger().warning(
                "context history %s is %s (%s); starting with an empty store%s",
                report.path,
                report.status,
                report.reason,
                f", the file was moved to {report.set_aside}" if report.set_aside else "",
            )
        return report

    def save_context_history(self, task_dir: str | os.PathLike[str]) -> bool:
        """Write the store to ``task_dir`` atomically; log and return False on failure."""
        from pathlib import Path  # noqa: PLC0415 - a task folder's, not the import's

        from ..storage import CONTEXT_HISTORY_FILE, atomic_write_text  # noqa: PLC0415

        path = Path(task_dir) / CONTEXT_HISTORY_FILE
        try:
            atomic_write_text(path, self.store.to_json())
        except (OSError, ValueError) as error:
            _logger().error("failed to save context history to %s: %s", path, error)
            return False
        return True

    def context_history_json(self) -> str:
        """The store serialized exactly as the original writes ``context_history.json``."""
        return self.store.to_json()

    def _save_if(self, task_dir: TaskDir) -> None:
        if task_dir is not None:
            self.save_context_history(task_dir)

    # -- decisions -------------------------------------------------------------------------

    def should_compact_context_window(
        self,
        usage: UsageLike | None,
        context_window: int | ContextWindowInfo | None,
        threshold_percentage: float | None = None,
    ) -> bool:
        """Has the previous request (``usage``; None = no previous request) reached the limit?"""
        return should_compact(usage, context_window, threshold_percentage)

    def get_new_context_messages_and_metadata(
        self,
        history: Sequence[MessageT],
        *,
        usage: UsageLike | None,
        timestamp: int,
        context_window: int | ContextWindowInfo | None,
        deleted_range: DeletedRange | None = None,
        task_dir: TaskDir = None,
        use_auto_condense: bool = False,
    ) -> ContextResult[MessageT]:
        """The per-request entry point: maybe shrink the context, then build what is sent.

        When the previous request (``usage``, sent at ``timestamp``) reached ``max_allowed_size``,
        duplicate file reads are replaced first; if that saved under 30% of the characters, the
        truncation notice is set on message 1 and the range grows (keep half, or a quarter when
        half the total still exceeds the limit). The store is saved to ``task_dir`` when it
        changed. With ``use_auto_condense`` the decision is skipped, as in the original.
        """
        messages = _dicts(history)
        self._checks.check_history(messages)
        deleted_range = check_range(deleted_range)
        updated = False
        if not use_auto_condense and usage is not None:
            total = _as_usage(usage).total
            limit = as_window_info(context_window).max_allowed_size
            if total >= limit:
                keep = keep_for(total, limit)
                start = visible_start(deleted_range)
                any_updates, altered = self._optimize(messages, start, timestamp)
                need_to_truncate = True
                if any_updates:
                    ratio = savings_ratio(messages, self.store, deleted_range, altered)
                    need_to_truncate = ratio < SAVINGS_THRESHOLD
                if need_to_truncate:
                    any_updates = self._add_truncation_notice(timestamp, messages) or any_updates
                    deleted_range = next_range(messages, deleted_range, keep)
                    updated = True
                if any_updates:
                    self._save_if(task_dir)
        sent = truncated_messages(messages, deleted_range, self.store, self._repairs, self._edits)
        return ContextResult(deleted_range, updated, _same_type(history, sent))

    def get_next_truncation_range(
        self, history: Sequence[MessageInput], deleted_range: DeletedRange | None, keep: Keep | str
    ) -> DeletedRange:
        """The next, larger, deleted range (see :func:`windowkeeper.core._truncation.next_range`)."""
        messages = _dicts(history)
        self._checks.check_history(messages)
        return next_range(messages, check_range(deleted_range), keep)

    def get_truncated_messages(
        self, history: Sequence[MessageT], deleted_range: DeletedRange | None
    ) -> list[MessageT]:
        """What is sent: messages 0-1, the visible rest, overwrites applied, pairing repaired."""
        messages = _dicts(history)
        self._checks.check_history(messages)
        sent = truncated_messages(
            messages, check_range(deleted_range), self.store, self._repairs, self._edits
        )
        return _same_type(history, sent)

    def apply_context_optimizations(
        self, history: Sequence[MessageInput], start_index: int, timestamp: int
    ) -> tuple[bool, set[int]]:
        """Replace duplicate file reads from ``start_index`` on; return (changed, altered indices)."""
        messages = _dicts(history)
        self._checks.check_history(messages)
        return self._optimize(messages, start_index, timestamp)

    def _optimize(
        self, history: Sequence[Message], start_index: int, timestamp: int
    ) -> tuple[bool, set[int]]:
        scan = self.detector.scan(history, start_index, self.store)
        changed, altered = apply_read_replacements(self.store, history, scan, timestamp)
        self.last_replaced = frozenset(altered)
        return changed, altered

    def attempt_file_read_optimization_in_memory(
        self, history: Sequence[MessageT], deleted_range: DeletedRange | None, timestamp: int
    ) -> FileReadOptimization[MessageT]:
        """Replace duplicate reads and report whether truncation is still needed; no disk I/O."""
        messages = _dicts(history)
        self._checks.check_history(messages)
        deleted_range = check_range(deleted_range)
        changed, altered = self._optimize(messages, visible_start(deleted_range), timestamp)
        if not changed:
            return FileReadOptimization(False, True, list(history))
        ratio = savings_ratio(messages, self.store, deleted_range, altered)
        optimized = truncated_messages(
            messages, deleted_range, self.store, self._repairs, self._edits
        )
        return FileReadOptimization(True, ratio < SAVINGS_THRESHOLD, _same_type(history, optimized))

    # -- notices and rollback --------------------------------------------------------------

    def _add_truncation_notice(self, timestamp: int, history: Sequence[Message]) -> bool:
        return add_truncation_notice(self.store, timestamp, history)

    def _replace_first_user_message(self, timestamp: int, history: Sequence[Message]) -> bool:
        if 0 in self.store or not history or history[0].get("role") != "user":
            return False  # an assistant greeting is not the task it stands for
        content = history[0].get("content")
        if not isinstance(content, list) or not content:
            return False
        first: Any = content[0]
        if not isinstance(first, dict) or first.get("type") != "text" or block_text(first) is None:
            return False
        self.store.record(0, EditType.UNDEFINED, 0, text_update(timestamp, CONTINUE_NOTICE))
        return True

    def trigger_apply_standard_context_truncation_notice_change(
        self, timestamp: int, task_dir: TaskDir, history: Sequence[MessageInput]
    ) -> None:
        """Set the truncation notice on message 1 and replace the task text of message 0.

        Each is added only when that message has no entry yet; saves when either was added.
        """
        messages = _dicts(history)
        self._checks.check_history(messages)
        notice_added = self._add_truncation_notice(timestamp, messages)
        task_replaced = self._replace_first_user_message(timestamp, messages)
        if notice_added or task_replaced:
            self._save_if(task_dir)

    def truncate_context_history(self, timestamp: int, task_dir: TaskDir = None) -> None:
        """Roll back to a checkpoint: drop every update newer than ``timestamp``, then save."""
        self.store.rollback(timestamp)
        self._save_if(task_dir)
