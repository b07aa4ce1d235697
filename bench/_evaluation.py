"""What one ``make bench`` run measured, and the names, targets and colours reports use."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from _runner import (
    CLINE,
    CLINE_CONDENSE,
    CLINE_RECORDED,
    LAST_TOKENS,
    LC_SUMMARY,
    MASKING,
    WINDOWKEEPER,
    WK_COMPACT,
    WK_INBAND,
    WK_LEDGER,
    Case,
    Run,
    WindowChoice,
)

__all__ = [
    "BREAK",
    "COLORS",
    "HEADLINE",
    "LABELS",
    "TARGET_COST",
    "TARGET_MEDIAN_MS",
    "TARGET_MESSAGES_GAIN",
    "TARGET_REUSE_GAIN",
    "Evaluation",
    "Growth",
]

HEADLINE = "cline-gcp-443"
TARGET_REUSE_GAIN = 0.0
TARGET_COST = 0.85
TARGET_MESSAGES_GAIN = 0.05
TARGET_MEDIAN_MS = 0.09
BREAK = 0.5  # a request reusing less than this share of itself from the cache "breaks" it

LABELS = {
    CLINE: "cline",
    WINDOWKEEPER: "windowkeeper",
    LAST_TOKENS: "last N tokens (LangChain)",
    MASKING: "observation masking",
    CLINE_RECORDED: "cline, recorded usage (ref.)",
    CLINE_CONDENSE: "cline auto-condense",
    WK_COMPACT: "windowkeeper compaction, out-of-band",
    WK_INBAND: "windowkeeper compaction, in-band",
    WK_LEDGER: "windowkeeper compaction, ledger only",
    LC_SUMMARY: "LangChain SummarizationMiddleware",
}
COLORS = {
    CLINE: "#1f77b4",
    WINDOWKEEPER: "#2ca02c",
    LAST_TOKENS: "#ff7f0e",
    MASKING: "#9467bd",
    CLINE_RECORDED: "#7f7f7f",
    CLINE_CONDENSE: "#17becf",
    WK_COMPACT: "#98df8a",
    WK_INBAND: "#006400",
    WK_LEDGER: "#bcbd22",
    LC_SUMMARY: "#d62728",
}


@dataclass(slots=True)
class Growth:
    """Per-turn times on the generated session: per policy, the samples by history length."""

    messages: int
    window: int
    times: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    original_in_session: list[tuple[int, float]] = field(default_factory=list)
    lengths: tuple[int, ...] = (500, 1000, 2000, 3000, 4000, 5000)

    def median_at(self, samples: Sequence[tuple[int, float]], length: int) -> float:
        """Median time of the requests made at 90-100 % of ``length``."""
        near = [ms for at, ms in samples if 0.9 * length < at <= length + 1]
        return statistics.median(near) if near else math.nan

    def slope(self, samples: Sequence[tuple[int, float]]) -> float:
        """Log-log slope of the median time from the first length to the last (1 = linear)."""
        first, last = self.lengths[0], self.lengths[-1]
        low, high = self.median_at(samples, first), self.median_at(samples, last)
        if not (low > 0 and high > 0):
            return math.nan
        return math.log(high / low) / math.log(last / first)


@dataclass(slots=True)
class Evaluation:
    """Everything one ``make bench`` run measured."""

    machine: str
    command: str
    date: str
    cases: list[Case]
    windows: dict[str, list[WindowChoice]]
    runs: dict[tuple[str, int, str], Run]
    timing: dict[tuple[int, str], list[float]]  # headline trace: (nominal window, policy) -> ms
    timing_parts: dict[tuple[int, str], list[float]]  # (nominal window, part) -> ms
    timing_rounds: int
    growth: Growth | None
    seconds: float = 0.0
    tuning: Any = None  # _tuning.Tuning, when the defaults' procedure ran

    def run(self, case: str, nominal: int, policy: str) -> Run | None:
        return self.runs.get((case, nominal, policy))
