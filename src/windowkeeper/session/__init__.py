"""The per-turn API for agent loops: :class:`ContextSession`, its state value and the steps it runs."""

from __future__ import annotations

from ._session import Checkpoint, ContextSession, Prepared, Synced
from ._state import CompactionState, Fold, SessionState

__all__ = [
    "Checkpoint",
    "CompactionState",
    "ContextSession",
    "Fold",
    "Prepared",
    "SessionState",
    "Synced",
]
