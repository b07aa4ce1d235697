"""Timing helpers shared by the plain benchmark scripts: samples in ms, medians and p95."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def timings(call: Callable[[], Any], runs: int, *, warm_up: bool = False) -> list[float]:
    """``runs`` wall-clock samples of ``call()`` in milliseconds, sorted."""
    if warm_up:
        call()
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        samples.append((time.perf_counter() - started) * 1000)
    return sorted(samples)


def summary(name: str, samples: list[float], *, width: int = 58, digits: int = 4) -> str:
    """One line: the name, the median and p95 of sorted ``samples``, and their count."""
    p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
    median = statistics.median(samples)
    return (
        f"{name:<{width}} median {median:8.{digits}f} ms   p95 {p95:8.{digits}f} ms"
        f"   n={len(samples)}"
    )
