"""Markdown tables of an evaluation: the traces, every policy per trace, per-turn overhead."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence

from _evaluation import (
    HEADLINE,
    LABELS,
    Evaluation,
)
from _metrics import Totals, percentile
from _runner import (
    CLINE,
    LAST_TOKENS,
    MASKING,
    POLICIES,
    WINDOWKEEPER,
    Case,
    WindowChoice,
)
from windowkeeper import validate_messages

__all__ = [
    "format_overhead",
    "format_trace_overview",
    "format_trace_table",
    "ms",
    "number",
    "pct",
    "table",
    "window_label",
]


def number(value: float) -> str:
    return f"{value:,.0f}"


def pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def ms(value: float) -> str:
    return f"{value:.3f}"


def table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def window_label(choice: WindowChoice) -> str:
    if not choice.scaled:
        return f"{choice.nominal // 1000}k"
    return f"{choice.nominal // 1000}k → {choice.window:,} (scaled)"


def _metric_row(totals: Totals, baseline: Totals | None) -> list[str]:
    cost = f"{totals.cost / baseline.cost:.2f}×" if baseline and baseline.cost else "–"
    violations = f"{totals.violations} ({totals.pairing})"
    if totals.bad_requests:
        violations += f" in {totals.bad_requests} req."
    over_window = str(totals.over_window)
    if totals.refused:
        over_window += f" ({totals.refused} refused)"
    return [
        over_window,
        str(totals.over_limit),
        str(totals.truncations),
        number(totals.tokens_sent),
        pct(totals.mean_reuse),
        cost,
        violations,
        pct(totals.mean_context),
        pct(totals.mean_messages),
    ]


_METRIC_HEADER = [
    "over window",
    "over limit",
    "truncations",
    "tokens sent",
    "cache reuse",
    "billed cost vs cline",
    "violations (pairing)",
    "context retained",
    "messages retained",
]


def _policies(evaluation: Evaluation, case: Case) -> list[str]:
    return [
        policy
        for policy in POLICIES
        if any(evaluation.run(case.name, c.nominal, policy) for c in evaluation.windows[case.name])
    ]


def format_trace_table(evaluation: Evaluation, case: Case) -> list[str]:
    """Every policy at every window of one trace."""
    rows = []
    for choice in evaluation.windows[case.name]:
        baseline = evaluation.run(case.name, choice.nominal, CLINE)
        for policy in _policies(evaluation, case):
            run = evaluation.run(case.name, choice.nominal, policy)
            if run is None:
                continue
            label = LABELS[policy]
            if policy == WINDOWKEEPER:
                label = f"**{label}**"
            rows.append(
                [
                    window_label(choice),
                    label,
                    *_metric_row(run.totals, baseline.totals if baseline else None),
                ]
            )
    return table(["window", "policy", *_METRIC_HEADER], rows, "ll" + "r" * len(_METRIC_HEADER))


def format_trace_overview(evaluation: Evaluation) -> list[str]:
    from windowkeeper.tools._replay import Ruler, request_points

    rows = []
    for case in evaluation.cases:
        ruler = Ruler()
        stored = validate_messages(list(case.history))
        rules = sorted({violation.rule for violation in stored})
        windows = ", ".join(
            f"{c.window:,}" + ("" if not c.scaled else "*") for c in evaluation.windows[case.name]
        )
        rows.append(
            [
                f"`{case.name}`",
                case.source,
                str(len(case.history)),
                str(len(request_points(case.history))),
                number(ruler.count(case.history, system=case.system)),
                "yes" if case.has_recorded_usage else "no",
                "yes" if case.system else "no",
                f"{len(stored)}: {', '.join(rules)}" if stored else "none",
                windows,
            ]
        )
    return table(
        [
            "trace",
            "format",
            "messages",
            "requests",
            "tokens (ruler)",
            "recorded usage",
            "system prompt",
            "violations as stored",
            "windows (* scaled)",
        ],
        rows,
        "llrrrllll",
    )


def format_overhead(evaluation: Evaluation) -> list[str]:
    """Per-turn times on the headline trace, then on the generated session."""
    lines: list[str] = []
    rows = []
    for policy in (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING):
        row = [LABELS[policy]]
        for choice in evaluation.windows.get(HEADLINE, []):
            samples = evaluation.timing.get((choice.nominal, policy), [])
            row.append(
                f"{ms(statistics.median(samples))} / {ms(percentile(samples, 0.95))}"
                if samples
                else "–"
            )
        rows.append(row)
        if policy == CLINE:
            rows[-1][0] = "cline = the original algorithm (`get_new_context_messages_and_metadata`)"
        if policy != WINDOWKEEPER:
            continue
        for part in ("original algorithm", "estimates"):
            row = [f"… inside the session: {part}"]
            for choice in evaluation.windows.get(HEADLINE, []):
                samples = evaluation.timing_parts.get((choice.nominal, part), [])
                row.append(
                    f"{ms(statistics.median(samples))} / {ms(percentile(samples, 0.95))}"
                    if samples
                    else "–"
                )
            rows.append(row)
    header = ["per-request call, ms (median / p95)"] + [
        window_label(choice) for choice in evaluation.windows.get(HEADLINE, [])
    ]
    lines += table(header, rows)
    growth = evaluation.growth
    if growth is None:
        return lines
    lines += [
        "",
        f"Generated session (`bench/_generated.py`: {growth.messages:,} messages, native tool"
        " calls, files re-read and edited), window"
        f" {growth.window:,}: median time per turn (ms) of the requests made at 90-100 % of each"
        " history length, and the growth exponent from the first length to the last"
        " (time ∝ length^k; k = 1 is linear).",
        "",
    ]
    rows = []
    series: list[tuple[str, list[tuple[int, float]]]] = list(growth.times.items())
    series.insert(2, ("original in session", growth.original_in_session))
    for policy, points in series:
        if not points:
            continue
        label = (
            "… the original algorithm inside the session"
            if policy == "original in session"
            else LABELS[policy]
        )
        rows.append(
            [label]
            + [ms(growth.median_at(points, length)) for length in growth.lengths]
            + [
                ms(statistics.median(value for _, value in points)),
                ms(percentile([value for _, value in points], 0.95)),
                f"{growth.slope(points):.2f}",
            ]
        )
    header = (
        ["policy"] + [f"{length:,}" for length in growth.lengths] + ["median, all", "p95, all", "k"]
    )
    lines += table(header, rows)
    return lines
