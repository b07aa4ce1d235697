"""Why a request lost what it lost: each action of a prepared request, with a reason and tokens.

:class:`~windowkeeper.session.steps.Action` says which step changed which messages, with the
session's estimate of the whole request before and after; :func:`explain` turns one into what
``windowkeeper view`` and ``check`` show for people (a sentence) and in ``--json`` (an object).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core._truncation import DeletedRange
from ..session.steps import Action

__all__ = ["Explained", "explain"]

_REASONS = {
    "reported-usage-reads": "the previous request's reported usage was over the limit:"
    " older copies of file contents replaced",
    "reported-usage-truncation": "the previous request's reported usage was over the limit:"
    " turns hidden (the original's truncation)",
    "clip-on-arrival": "a new tool result larger than its share of the limit: clipped as it"
    " arrived",
    "duplicate-reads": "over the limit: older copies of file contents replaced (read replaced)",
    "mask-outputs": "over the limit: older tool outputs masked (outputs masked)",
    "hide-turns": "over the limit: older turns hidden (turns hidden)",
    "clip-blocks": "over the limit: the largest blocks clipped, head and tail kept (blocks"
    " clipped)",
    "summarize": "over the limit: older turns folded into a summary (folded)",
    "summarize-in-band": "the model's summary reply folded in: the turns it covers hidden (folded)",
    "refold": "turns hidden past the last fold added to its ledger (folded)",
    "usage-distrusted": "the usage reported for the previous request was far from the"
    " estimate of what was sent: not used to decide or calibrate (usage distrusted)",
    "truncation": "the original's truncation: turns hidden",
    "replaced-reads": "the original's duplicate-read replacement: older file copies replaced",
}


@dataclass(frozen=True, slots=True)
class Explained:
    """One action for people and for JSON."""

    step: str
    reason: str
    freed: int | None  # tokens, by the session's estimate; None where nothing was measured
    messages: tuple[int, ...]
    deleted_range: DeletedRange | None

    def line(self) -> str:
        """``hide-turns: <reason>; freed about 1,234 tokens; history[4-9]``."""
        parts = [f"{self.step}: {self.reason}"]
        if self.freed is not None:
            parts.append(f"freed about {self.freed:,} tokens")
        if self.deleted_range is not None:
            parts.append(f"hidden {self.deleted_range[0]}-{self.deleted_range[1]}")
        elif self.messages:
            shown = ", ".join(map(str, self.messages[:8]))
            more = f" and {len(self.messages) - 8} more" if len(self.messages) > 8 else ""
            parts.append(f"messages {shown}{more}")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "reason": self.reason,
            "freed_tokens": self.freed,
            "messages": list(self.messages),
            "deleted_range": list(self.deleted_range) if self.deleted_range else None,
        }


def explain(action: Action) -> Explained:
    """``action`` with its reason and the tokens it freed (before minus after, when measured)."""
    before, after = action.tokens_before, action.tokens_after
    freed = before - after if before is not None and after is not None else None
    reason = _REASONS.get(action.step, "a custom step")
    if action.step == "usage-distrusted" and action.usage is not None and before is not None:
        reported = action.usage.tokens_in + action.usage.cache_reads + action.usage.cache_writes
        reason += f" ({reported:,} input tokens reported, about {before:,} estimated)"
    return Explained(action.step, reason, freed, action.messages, action.deleted_range)
