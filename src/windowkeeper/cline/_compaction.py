"""The in-memory compaction used by the original's sub-agents (``compactConversationForContextWindow``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core._messages import Message
from ..core._truncation import DeletedRange, Keep, check_range, next_range
from ._manager import ContextManager

__all__ = ["Compaction", "compact_conversation_for_context_window"]


@dataclass(frozen=True, slots=True)
class Compaction:
    """The conversation to keep using, its deleted range, and whether anything was compacted."""

    history: list[Message]
    deleted_range: DeletedRange | None
    did_compact: bool


def compact_conversation_for_context_window(
    manager: ContextManager,
    history: Sequence[Message],
    deleted_range: DeletedRange | None,
    *,
    timestamp: int,
) -> Compaction:
    """Shrink a sub-agent's conversation in memory, persisting nothing.

    First duplicate reads are replaced over the whole conversation (no range); when that changed
    something, the returned history is the altered copy (edits and pairing repair applied for
    good). If that saved enough, nothing is hidden; otherwise the range grows by a quarter keep.
    A range that would not change, or would hide nothing, is not adopted.
    """
    deleted_range = check_range(deleted_range)
    optimization = manager.attempt_file_read_optimization_in_memory(history, None, timestamp)
    conversation = optimization.optimized_history
    if optimization.any_context_updates and not optimization.need_to_truncate:
        return Compaction(conversation, deleted_range, True)
    candidate = next_range(conversation, deleted_range, Keep.QUARTER)
    if candidate[1] < candidate[0] or candidate == deleted_range:
        return Compaction(conversation, deleted_range, optimization.any_context_updates)
    return Compaction(conversation, candidate, True)
