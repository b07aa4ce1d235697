"""Garbage-collection pauses of a long session: live objects per hidden message, full collections.

Run with ``.venv/bin/python bench/bench_pauses.py`` (``--sizes 5000,20000`` for other lengths,
``--turns 300`` for fewer turns). For each length, alone in the process, a generated session is
grown the way ``bench_growth.py`` grows it (a batch of tool calls, then ``prepare``). Right after
the shrinks past 3,000 messages it counts the GC-tracked objects the session holds beyond the
messages themselves (a walk of what it references, untracked containers included); the slope of
that count against the hidden messages is what each hidden message adds to every full
collection. Then: the pause of a full collection (median of 3), and the measured turns (append a
tool call and its result, ``prepare``, record the usage) without and then with ``gc.freeze()``
after the growth, timing every generation-2 collection that runs (``gc.callbacks``) and the
longest ``prepare``. Times are the process's CPU time, in ms.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from typing import Any

from bench_growth import BATCH, WINDOW, _Length, _messages, _reachable
from windowkeeper import ContextSession, TokenUsage

SIZES = (5_000, 20_000, 100_000)
TURNS = 600


def _held(session: ContextSession) -> int:
    """The tracked objects the session holds beyond its messages, after full collections."""
    for _ in range(3):
        gc.collect()
    seen: set[int] = set()
    _reachable(session.history, seen)
    return _reachable(session, seen)[1]


def _grow(length: int) -> tuple[ContextSession, list[tuple[int, int]]]:
    """A session grown to ``length``; (hidden messages, objects held) after some shrinks."""
    messages = _messages(length)
    session = ContextSession(WINDOW, clock=iter(range(1_700_000_000_000, 10**15, 1_000)).__next__)
    session.extend(messages[:2])
    samples = []
    shrinks = 0
    every = max(1, length // 6_000)  # a shrink each ~560 messages: about 15 samples
    for start in range(2, len(messages), 2 * BATCH):
        session.extend(messages[start : start + 2 * BATCH])
        prepared = session.prepare()
        session.record_usage(TokenUsage(tokens_in=prepared.estimated_tokens, tokens_out=100))
        if prepared.preflight_acted and start > 3_000:
            shrinks += 1
            if shrinks % every == 0:
                deleted = session.deleted_range
                hidden = deleted[1] - deleted[0] + 1 if deleted else 0
                samples.append((hidden, _held(session)))
    return session, samples


def _slope(samples: list[tuple[int, int]]) -> float:
    xs, ys = [x for x, _ in samples], [y for _, y in samples]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    return sum((x - mx) * (y - my) for x, y in samples) / sum((x - mx) ** 2 for x in xs)


def _turns(length: _Length, turns: int, phase: int) -> list[float]:
    """Run ``turns`` measured turns; the pause of each generation-2 collection in them."""
    pauses: list[float] = []
    began = [0.0]

    def timed(stage: str, info: dict[str, Any]) -> None:
        if info["generation"] == 2:
            if stage == "start":
                began[0] = time.process_time()
            else:
                pauses.append((time.process_time() - began[0]) * 1000)

    gc.callbacks.append(timed)
    try:
        for _ in range(turns):
            length.step(phase)
    finally:
        gc.callbacks.remove(timed)
    return pauses


def main() -> None:
    sizes = SIZES
    if "--sizes" in sys.argv:
        sizes = tuple(int(size) for size in sys.argv[sys.argv.index("--sizes") + 1].split(","))
    turns = int(sys.argv[sys.argv.index("--turns") + 1]) if "--turns" in sys.argv else TURNS
    print(f"Python {sys.version.split()[0]}; window {WINDOW:,}; {turns} turns a phase")
    print(
        "\n| messages | objects held (last sample) | per hidden message | full collection"
        " | gen-2 collections (longest), no freeze | longest prepare, no freeze / freeze"
        " | mean / median, no freeze / freeze |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for size in sizes:
        session, samples = _grow(size)
        full = []
        for _ in range(3):
            began = time.process_time()
            gc.collect()
            full.append((time.process_time() - began) * 1000)
        length = _Length(size, session)
        pauses = _turns(length, turns, 0)
        ratios = []
        for phase in (0, 1):
            if phase == 1:
                length.steady, length.shrink = [], []
                gc.collect()
                gc.freeze()
                _turns(length, turns, 1)
            every = length.steady + length.shrink
            ratios.append(statistics.mean(every) / statistics.median(every))
        gc.unfreeze()
        slope = _slope(samples) if len(samples) > 1 else float("nan")
        longest = f" ({max(pauses):.0f} ms)" if pauses else ""
        print(
            f"| {size:,} | {samples[-1][1] if samples else 0:,} | {slope:.3f}"
            f" | {statistics.median(full):.0f} ms | {len(pauses)}{longest}"
            f" | {length.longest[0]:.1f} / {length.longest[1]:.1f}"
            f" | {ratios[0]:.2f} / {ratios[1]:.2f} |"
        )
        del session, length
        gc.collect()


if __name__ == "__main__":
    main()
