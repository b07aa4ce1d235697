"""The PNG plots of an evaluation (matplotlib, Agg backend), written into docs/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _evaluation import COLORS, HEADLINE, LABELS, TARGET_COST, Evaluation, Growth
from _runner import CLINE, LAST_TOKENS, MASKING, WINDOWKEEPER, Run
from _tables import pct, window_label

__all__ = ["plot_all"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    return pyplot


def plot_all(evaluation: Evaluation, folder: Path) -> list[str]:
    """Write the plots that the data allows; return their file names."""
    written = []
    if evaluation.run(HEADLINE, 128_000, CLINE) is not None:
        _plot_tokens(evaluation, folder / "bench-tokens-443-128k.png")
        written.append("bench-tokens-443-128k.png")
        _plot_cache(evaluation, folder / "bench-cache-443.png")
        written.append("bench-cache-443.png")
    if evaluation.growth is not None:
        _plot_growth(evaluation.growth, folder / "bench-overhead.png")
        written.append("bench-overhead.png")
    return written


def _thousands(axis: Any) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:,.0f}"))


def _headline_runs(evaluation: Evaluation, nominal: int) -> list[Run]:
    runs = [
        evaluation.run(HEADLINE, nominal, p) for p in (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING)
    ]
    return [run for run in runs if run is not None and run.totals.lengths]


def _plot_tokens(evaluation: Evaluation, path: Path) -> None:
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(11, 6.2), dpi=110)
    window = None
    for policy in (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING):
        run = evaluation.run(HEADLINE, 128_000, policy)
        if run is None:
            continue
        window = run.choice.info
        totals = run.totals
        axes.plot(
            totals.lengths,
            totals.tokens,
            color=COLORS[policy],
            linewidth=1.3 if policy != WINDOWKEEPER else 1.8,
            label=f"{LABELS[policy]} ({pct(totals.mean_reuse)} cache reuse)",
        )
        marks = [
            (at, tokens)
            for (at, truncated, *_), tokens in zip(totals.events, totals.tokens, strict=True)
            if truncated
        ]
        if marks:
            axes.scatter(*zip(*marks, strict=True), color=COLORS[policy], marker="v", s=22)
    if window is not None:
        axes.axhline(window.context_window, color="#d62728", linestyle="--", linewidth=1)
        axes.axhline(window.max_allowed_size, color="#d62728", linestyle=":", linewidth=1)
        right = max(run.totals.lengths[-1] for run in _headline_runs(evaluation, 128_000))
        for value, text in (
            (window.context_window, f"window {window.context_window:,}"),
            (window.max_allowed_size, f"limit {window.max_allowed_size:,.0f}"),
        ):
            axes.text(right, value, text, va="bottom", ha="right", color="#d62728", fontsize=9)
    axes.set_xlabel("history length at the request (messages)")
    axes.set_ylabel("tokens sent (ruler)")
    axes.set_title("443-message Cline trace at a 128k window: tokens per request (▼ truncation)")
    _thousands(axes.yaxis)
    axes.set_ylim(0, (window.context_window if window else 0) * 1.12 or None)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, fontsize=9)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)


def _plot_cache(evaluation: Evaluation, path: Path) -> None:
    pyplot = _pyplot()
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(12, 5.2), dpi=110)
    choices = evaluation.windows[HEADLINE]
    policies = [CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING]
    width = 0.8 / len(policies)
    for number, policy in enumerate(policies):
        reuse, cost = [], []
        for choice in choices:
            run = evaluation.run(HEADLINE, choice.nominal, policy)
            base = evaluation.run(HEADLINE, choice.nominal, CLINE)
            reuse.append(100 * run.totals.mean_reuse if run else 0)
            cost.append(run.totals.cost / base.totals.cost if run and base else 0)
        positions = [index + (number - 1.5) * width for index in range(len(choices))]
        for axes, values, fmt in ((left, reuse, "{:.0f}"), (right, cost, "{:.2f}")):
            bars = axes.bar(positions, values, width, color=COLORS[policy], label=LABELS[policy])
            axes.bar_label(bars, [fmt.format(v) for v in values], fontsize=7, padding=1)
    labels = [window_label(choice) for choice in choices]
    left.set_title("prompt-cache reuse, % of each request (mean)")
    left.set_ylim(0, 108)
    right.set_title("billed input cost with caching, relative to cline (log scale)")
    right.set_yscale("log")
    right.axhline(1.0, color="#555555", linewidth=0.8)
    target = right.axhline(
        TARGET_COST, color="#2ca02c", linewidth=0.9, linestyle="--", label=f"target {TARGET_COST}×"
    )
    from matplotlib.ticker import FuncFormatter, NullFormatter

    right.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))
    right.yaxis.set_minor_formatter(NullFormatter())
    right.set_yticks([0.5, 0.75, 1, 1.5, 2, 3, 5])
    for axes in (left, right):
        axes.set_xticks(range(len(choices)), labels)
        axes.set_xlabel("window")
        axes.grid(axis="y", alpha=0.3)
    handles, names = left.get_legend_handles_labels()
    handles.append(target)
    names.append(f"windowkeeper's cost target ({TARGET_COST}×)")
    figure.legend(handles, names, loc="lower center", ncol=len(handles), fontsize=9)
    figure.suptitle("443-message Cline trace: cache reuse and billed cost per policy")
    figure.tight_layout(rect=(0, 0.07, 1, 1))
    figure.savefig(path)
    pyplot.close(figure)


def _plot_growth(growth: Growth, path: Path) -> None:
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(figsize=(9, 5), dpi=110)
    series = [*growth.times.items(), ("original in session", growth.original_in_session)]
    for policy, samples in series:
        if not samples:
            continue
        medians = [growth.median_at(samples, length) for length in growth.lengths]
        label = (
            "original algorithm inside the session"
            if policy == "original in session"
            else LABELS[policy]
        )
        axes.plot(
            growth.lengths,
            medians,
            marker="o",
            color=COLORS.get(policy, "#17becf"),
            linestyle="--" if policy == "original in session" else "-",
            label=f"{label} (k = {growth.slope(samples):.2f})",
        )
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xticks(list(growth.lengths), [f"{n:,}" for n in growth.lengths])
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axes.yaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}"))
    axes.yaxis.set_minor_formatter(NullFormatter())
    axes.set_xlabel("history length (messages)")
    axes.set_ylabel("median time per turn (ms)")
    axes.set_title(
        f"Per-turn time on the generated session, window {growth.window:,} (time ∝ length^k)"
    )
    axes.grid(alpha=0.3, which="both")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path)
    pyplot.close(figure)
