"""A picture of replays: tokens per request against the window, with truncations marked.

Matplotlib is an optional extra (``pip install 'windowkeeper[plot]'``); it is imported only when a
plot is drawn, with the non-interactive Agg backend, and its absence raises
:class:`PlotUnavailableError`, which says how to install it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Sequence
from typing import Any

from .._errors import PlotUnavailableError
from ._replay import Replay, RequestRecord

__all__ = ["PLOT_EXTRA", "PlotUnavailableError", "check_plotting", "plot_replays"]

PLOT_EXTRA = "pip install 'windowkeeper[plot]'"
"""The command that installs what plotting needs."""

_COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b")


def plot_replays(
    replays: Sequence[Replay], path: str | os.PathLike[str], *, title: str = ""
) -> None:
    """Write a PNG to ``path``: one line of estimated tokens per replay, one point per request.

    The window and ``max_allowed_size`` are horizontal lines; truncations are marked with a
    triangle, requests that replaced file reads with a circle, overflows with a cross; the tokens
    the trace recorded (of the requests it made, whatever the policy replayed), when it did, are
    a dotted grey line. All replays must share one window.
    """
    if not replays:
        raise ValueError("nothing to plot: no replay given")
    pyplot = _pyplot()
    window = replays[0].window
    figure, axes = pyplot.subplots(figsize=(10, 5.2), dpi=110)
    try:
        recorded = [
            (record.index, record.reported_tokens)
            for record in replays[0].requests
            if record.reported_tokens  # a request recorded as 0 tokens failed: no point for it
        ]
        if recorded:
            axes.plot(
                *zip(*recorded, strict=True),
                color="#999999",
                linewidth=1,
                linestyle=":",
                label="recorded by the trace",
            )
        for number, replay in enumerate(replays):
            _draw(axes, replay, _COLORS[number % len(_COLORS)])
        axes.axhline(window.context_window, color="#d62728", linewidth=1.2, linestyle="--")
        axes.axhline(window.max_allowed_size, color="#ff7f0e", linewidth=1.2, linestyle="-.")
        right = max((r.requests[-1].index for r in replays if r.requests), default=1)
        for value, text, color in (
            (window.context_window, f"window {window.context_window:,}", "#d62728"),
            (window.max_allowed_size, f"limit {window.max_allowed_size:,.0f}", "#ff7f0e"),
        ):
            axes.annotate(
                text,
                (right, value),
                xytext=(0, 3),
                textcoords="offset points",
                ha="right",
                va="bottom",
                color=color,
                fontsize=8,
            )
        axes.set_xlabel("history length at the request (messages)")
        axes.set_ylabel("estimated tokens sent")
        axes.set_ylim(bottom=0)
        axes.set_xlim(left=0)
        axes.yaxis.set_major_formatter(_thousands())
        axes.grid(True, alpha=0.3)
        if title:
            axes.set_title(title, fontsize=11)
        axes.legend(loc="upper left", fontsize=8, framealpha=0.9)
        figure.tight_layout()
        figure.savefig(os.fspath(path), format="png")
    finally:
        pyplot.close(figure)


def _draw(axes: Any, replay: Replay, color: str) -> None:
    records = replay.requests
    indices = [record.index for record in records]
    tokens = [record.estimated_tokens for record in records]
    axes.plot(indices, tokens, color=color, linewidth=1.6, label=replay.policy)
    marks: tuple[tuple[str, str, int, Callable[[RequestRecord], bool], str], ...] = (
        ("truncated", "v", 60, _truncated, color),
        ("file reads replaced", "o", 34, _replaced, "none"),
        ("over the window", "X", 70, _overflow, "#d62728"),
    )
    for label, marker, size, chosen, face in marks:
        points = [(r.index, r.estimated_tokens) for r in records if chosen(r)]
        if not points:
            continue
        xs, ys = zip(*points, strict=True)
        axes.scatter(
            xs,
            ys,
            marker=marker,
            s=size,
            facecolors=face,
            edgecolors=color if face != "#d62728" else face,
            linewidths=1.3,
            zorder=3,
            label=f"{replay.policy}: {label}",
        )


def _truncated(record: RequestRecord) -> bool:
    return record.truncated


def _replaced(record: RequestRecord) -> bool:
    return record.replaced_reads > 0


def _overflow(record: RequestRecord) -> bool:
    return record.overflow


def check_plotting() -> None:
    """Raise :class:`PlotUnavailableError` now when matplotlib is missing (before a long replay)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise PlotUnavailableError(f"plotting needs matplotlib: {PLOT_EXTRA}")


def _pyplot() -> Any:
    try:
        import matplotlib  # noqa: PLC0415 - an optional extra, imported when a plot is drawn
    except ImportError:
        raise PlotUnavailableError(f"plotting needs matplotlib: {PLOT_EXTRA}") from None
    matplotlib.use("Agg")
    from matplotlib import pyplot  # noqa: PLC0415

    return pyplot


def _thousands() -> Any:
    from matplotlib.ticker import FuncFormatter  # noqa: PLC0415

    return FuncFormatter(lambda value, _position: f"{value:,.0f}")
