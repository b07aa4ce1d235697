"""The per-turn API for agent loops: :class:`ContextSession` and the steps it runs."""

from __future__ import annotations

from ._session import Checkpoint, ContextSession, Prepared, Synced

__all__ = ["Checkpoint", "ContextSession", "Prepared", "Synced"]
