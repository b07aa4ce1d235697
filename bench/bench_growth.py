"""Per-turn cost of ContextSession.prepare as the hidden part of the history grows.

Run with ``.venv/bin/python bench/bench_growth.py``. A generated coding session of N messages
(N = 1,000 … 50,000) whose visible part stays near 600 messages (the rest is in the deleted
range), then steady turns: append an assistant tool call and its result, prepare, record the
usage. The work a steady turn must do (slice the visible list, shape the newest message) does
not grow with N, so neither should the time. Prints medians and p95 in ms and the growth
exponent between sizes (time ~ N^k).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from typing import Any

from windowkeeper import ContextSession, TokenUsage

VISIBLE = 600
SIZES = (1_000, 5_000, 20_000, 50_000)
TURNS = 60


def _pair(turn: int) -> list[dict[str, Any]]:
    call = f"toolu_{turn:06d}"
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Step {turn}: reading module {turn % 97}."},
                {
                    "type": "tool_use",
                    "id": call,
                    "name": "read_file",
                    "input": {"path": f"src/m{turn % 97}.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call,
                    "content": f"def f{turn}():\n    return {turn}\n" * 8,
                }
            ],
        },
    ]


def _session(length: int) -> ContextSession:
    session = ContextSession(200_000, clock=iter(range(1_700_000_000_000, 10**14, 1_000)).__next__)
    history: list[dict[str, Any]] = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "<task>Refactor the service.</task>"}],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "I will start with the modules."}],
        },
    ]
    turn = 0
    while len(history) < length:
        history += _pair(turn)
        turn += 1
    session.extend(history)
    end = len(history) - VISIBLE
    if end > 2:
        session.deleted_range = (2, end - (end % 2 == 1))  # ends on an assistant message
    return session


def measure(length: int) -> list[float]:
    session = _session(length)
    session.prepare()
    samples = []
    turn = 10**6
    for _ in range(TURNS):
        for message in _pair(turn):
            session.append(message)
        turn += 1
        started = time.perf_counter()
        prepared = session.prepare()
        samples.append((time.perf_counter() - started) * 1000)
        session.record_usage(TokenUsage(tokens_in=prepared.estimated_tokens, tokens_out=100))
    return sorted(samples)


def main() -> None:
    sizes = tuple(int(arg) for arg in sys.argv[1:]) or SIZES
    medians = []
    print(f"ContextSession.prepare, steady turns, about {VISIBLE} visible messages")
    for length in sizes:
        samples = measure(length)
        median = statistics.median(samples)
        p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
        medians.append(median)
        print(
            f"  {length:>7,} messages   median {median:7.3f} ms   p95 {p95:7.3f} ms   n={len(samples)}"
        )
    for step in range(1, len(sizes)):
        a, b, ma, mb = sizes[step - 1], sizes[step], medians[step - 1], medians[step]
        print(f"  exponent {a:,} -> {b:,}: {math.log(mb / ma) / math.log(b / a):.2f}")


if __name__ == "__main__":
    main()
