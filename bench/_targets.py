"""The issue's targets for windowkeeper's default policy, and where the prompt cache breaks."""

from __future__ import annotations

import math
import statistics

from _evaluation import (
    BREAK,
    HEADLINE,
    LABELS,
    TARGET_COST,
    TARGET_MEDIAN_MS,
    TARGET_MESSAGES_GAIN,
    TARGET_REUSE_GAIN,
    Evaluation,
)
from _metrics import Totals
from _runner import CLINE, LAST_TOKENS, MASKING, WINDOWKEEPER, Case
from _tables import ms, number, pct, table, window_label
from windowkeeper import validate_messages

__all__ = ["format_cache_analysis", "format_targets"]


def _status(met: bool) -> str:
    return "**met**" if met else "**missed**"


def _breaks(totals: Totals) -> dict[str, int]:
    """Requests after the first that reused less than :data:`BREAK`, by what happened at them."""
    causes = {"truncation": 0, "read replacement": 0, "other": 0}
    for position, (_, truncated, replaced, reuse) in enumerate(totals.events):
        if position == 0 or reuse >= BREAK:
            continue
        if truncated:
            causes["truncation"] += 1
        elif replaced:
            causes["read replacement"] += 1
        else:
            causes["other"] += 1
    return causes


def _first_violation(case: Case) -> str:
    stored = validate_messages(list(case.history))
    return f"`{stored[0]}`" if stored else ""


def format_targets(evaluation: Evaluation) -> list[str]:
    """The issue's targets for windowkeeper's default policy, each met or missed, with numbers."""
    lines: list[str] = []
    rows: list[list[str]] = []
    # 1 and 2: every trace and window
    over, bad, over_limit = [], [], []
    for case in evaluation.cases:
        for choice in evaluation.windows[case.name]:
            run = evaluation.run(case.name, choice.nominal, WINDOWKEEPER)
            if run is None:
                continue
            where = f"{case.name} at {window_label(choice)}"
            totals = run.totals
            if totals.over_window:
                over.append(f"{where}: {totals.over_window}")
            if totals.violations:
                stored = {v.rule for v in validate_messages(list(case.history))}
                # every rule broken is broken by the stored history too
                inherited = bool(stored) and set(run.totals.rules) <= stored
                reason = (
                    f"inherited: the trace itself breaks the rule ({_first_violation(case)})"
                    if inherited
                    else "sent by the session"
                )
                bad.append(
                    f"{where}: {totals.violations} in {totals.bad_requests} requests, {reason}"
                )
            if totals.over_limit:
                over_limit.append(f"{where}: {totals.over_limit}")
    rows.append(
        [
            "0 requests over the window, every trace and window",
            "; ".join(over) or "0 everywhere",
            _status(not over),
        ]
    )
    rows.append(
        [
            "0 provider-rule violations, every trace and window",
            "; ".join(bad) or "0 everywhere",
            _status(not bad),
        ]
    )
    rows.append(
        [
            "0 requests over max_allowed_size",
            "; ".join(over_limit) or "0 everywhere",
            _status(not over_limit),
        ]
    )
    # 3-5: the headline trace
    reuse, cost, kept = [], [], []
    reuse_ok = cost_ok = kept_ok = True
    for choice in evaluation.windows.get(HEADLINE, []):
        ours = evaluation.run(HEADLINE, choice.nominal, WINDOWKEEPER)
        base = evaluation.run(HEADLINE, choice.nominal, CLINE)
        if ours is None or base is None:
            continue
        label = window_label(choice)
        a, b = ours.totals, base.totals
        reuse.append(f"{label}: {pct(a.mean_reuse)} vs {pct(b.mean_reuse)}")
        reuse_ok &= a.mean_reuse >= b.mean_reuse + TARGET_REUSE_GAIN
        ratio = a.cost / b.cost if b.cost else math.nan
        cost.append(f"{label}: {ratio:.2f}×")
        cost_ok &= ratio <= TARGET_COST
        gain = a.mean_messages - b.mean_messages
        kept.append(
            f"{label}: {pct(a.mean_messages)} vs {pct(b.mean_messages)} ({100 * gain:+.1f} pt)"
        )
        kept_ok &= gain >= TARGET_MESSAGES_GAIN
    if reuse:
        rows.append(
            ["prompt-cache reuse ≥ the original's (443 trace)", "; ".join(reuse), _status(reuse_ok)]
        )
        rows.append(
            [
                f"billed cost with caching ≤ {TARGET_COST}× the original's (443 trace)",
                "; ".join(cost),
                _status(cost_ok),
            ]
        )
        rows.append(
            [
                "messages retained ≥ the original's + 5 points (443 trace)",
                "; ".join(kept),
                _status(kept_ok),
            ]
        )
    # 6-7: overhead
    medians = []
    median_ok = True
    for choice in evaluation.windows.get(HEADLINE, []):
        samples = evaluation.timing.get((choice.nominal, WINDOWKEEPER))
        if samples:
            value = statistics.median(samples)
            medians.append(f"{window_label(choice)}: {ms(value)} ms")
            median_ok &= value <= TARGET_MEDIAN_MS
    if medians:
        rows.append(
            [
                f"per-turn median ≤ {TARGET_MEDIAN_MS} ms (443 trace)",
                "; ".join(medians),
                _status(median_ok),
            ]
        )
    growth = evaluation.growth
    if growth is not None and WINDOWKEEPER in growth.times:
        slope = growth.slope(growth.times[WINDOWKEEPER])
        rows.append(
            [
                "linear or better growth, 500 → 5,000 messages",
                f"time per turn ∝ length^{slope:.2f} (1 = linear)",
                _status(slope <= 1.1),
            ]
        )
    lines += table(["target", "measured", ""], rows, "lll")
    return lines


def format_cache_analysis(evaluation: Evaluation) -> list[str]:
    """Where the prompt cache breaks on the headline trace, per policy and window."""
    rows = []
    for choice in evaluation.windows.get(HEADLINE, []):
        for policy in (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING):
            run = evaluation.run(HEADLINE, choice.nominal, policy)
            if run is None:
                continue
            totals = run.totals
            causes = _breaks(totals)
            kept = [
                reuse
                for position, (*_, reuse) in enumerate(totals.events)
                if position and reuse >= BREAK
            ]
            rows.append(
                [
                    window_label(choice),
                    LABELS[policy],
                    str(sum(causes.values())),
                    str(causes["truncation"]),
                    str(causes["read replacement"]),
                    str(causes["other"]),
                    pct(statistics.fmean(kept)) if kept else "–",
                    number(totals.tokens_sent),
                    number(totals.cost),
                ]
            )
    return table(
        [
            "window",
            "policy",
            "cache breaks",
            "at a truncation",
            "at a read replacement",
            "other",
            "reuse of the other requests",
            "tokens sent",
            "billed (token units)",
        ],
        rows,
        "ll" + "r" * 7,
    )
