"""What a long task costs as its hidden history grows: steady and shrink requests, memory, pauses.

Run with ``.venv/bin/python bench/bench_growth.py`` (about two minutes on a loaded 2-core
machine; ``--quick`` for 1k-20k messages and fewer turns; ``--sizes 20000,100000``, ``--turns N``
and ``--no-trace`` for a shorter run). A generated coding session is grown
to each length (1,000 … 100,000 messages) the way a long task grows: a batch of tool calls and
their results appended, then ``prepare`` and the usage recorded, so that the session's own
shrinking (duplicate reads, masking, hiding turns) decides what is hidden and its store holds
the masks of the whole history, as after a real run. The visible part stays at a few hundred
messages (window 200,000). Then every session gets the same steady turns (append a tool call
and its result, ``prepare``, record the usage), one turn of each length in turn, so machine
load falls on every length alike. A request is a *shrink* when the pre-flight acted. Times are
the process's CPU time (``time.process_time``), so that a wait for a core on a shared machine
is not counted as the session's; garbage collection is.

Prints, per length: the steady median and p95, the shrink median and count, mean / median, the
longest ``prepare``; the growth exponents (time ~ N^k); memory the session retains above the
messages themselves and the GC-tracked objects it holds (a walk of what it references); a full
collection's pause at the largest length with and without ``gc.freeze()`` after the build;
and the session against the faithful core on the 443-message Cline trace. Numbers go into
docs/benchmarks.md, never into test assertions.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import sys
import time
import types
import warnings
from typing import Any

from _traces import load_gcp_trace, recorded_usage
from bench_core import replay_per_turn
from windowkeeper import ContextSession, TokenUsage

SIZES = (1_000, 5_000, 20_000, 50_000, 100_000)
QUICK_SIZES = (1_000, 5_000, 20_000)
WINDOW = 200_000
BATCH = 90  # tool calls appended between two requests while a session is grown
TURNS = 600  # measured turns per length, in each of the two phases (before and after freeze)
QUICK_TURNS = 200
TRACE_WINDOWS = (64_000, 128_000, 200_000)


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


def _messages(length: int) -> list[dict[str, Any]]:
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
    return history


def _grown(messages: list[dict[str, Any]]) -> ContextSession:
    """A session fed ``messages`` in batches, preparing a request after each batch."""
    session = ContextSession(WINDOW, clock=iter(range(1_700_000_000_000, 10**15, 1_000)).__next__)
    session.extend(messages[:2])
    for start in range(2, len(messages), 2 * BATCH):
        session.extend(messages[start : start + 2 * BATCH])
        prepared = session.prepare()
        session.record_usage(TokenUsage(tokens_in=prepared.estimated_tokens, tokens_out=100))
    return session


class _Length:
    """One length's session and what its measured turns took."""

    def __init__(self, length: int, session: ContextSession) -> None:
        self.length = length
        self.session = session
        self.turn = 10**6
        self.steady: list[float] = []
        self.shrink: list[float] = []
        self.longest = [0.0, 0.0]  # per phase: without, then with gc.freeze()
        self.visible: list[int] = []

    def step(self, phase: int) -> None:
        session = self.session
        for message in _pair(self.turn):
            session.append(message)
        self.turn += 1
        started = _clock()
        prepared = session.prepare()
        took = (_clock() - started) * 1000
        (self.shrink if prepared.preflight_acted else self.steady).append(took)
        self.longest[phase] = max(self.longest[phase], took)
        self.visible.append(len(prepared.messages))
        session.record_usage(TokenUsage(tokens_in=prepared.estimated_tokens, tokens_out=100))


def _reachable(root: Any, skip: set[int]) -> tuple[int, int]:
    """(bytes, GC-tracked objects) reachable from ``root``, not counting the ids in ``skip``
    (which are added to it), classes, modules and functions.

    Untracked containers are walked too: CPython stops tracking a tuple or dict of plain
    values, but what it holds is still memory the session retains.
    """
    size = tracked = 0
    stack = [root]
    while stack:
        value = stack.pop()
        if id(value) in skip or isinstance(value, _SHARED_KINDS):
            continue
        skip.add(id(value))
        size += sys.getsizeof(value)
        tracked += gc.is_tracked(value)
        stack.extend(gc.get_referents(value))
    return size, tracked


_SHARED_KINDS = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType)


def _retained(length: int, session: ContextSession) -> tuple[float, float, int, int]:
    """(bytes of the messages, bytes the session holds above them, GC-tracked objects it holds
    above them, visible messages), by walking what the session references."""
    seen: set[int] = set()
    alone, _ = _reachable(session._history, seen)
    added, objects = _reachable(session, seen)
    deleted = session.deleted_range
    visible = length - (deleted[1] + 1 if deleted else 2) + 2
    return alone, added, objects, visible


def _clock() -> float:
    """The process's CPU time: on a shared machine, wall time also counts waits for a core."""
    return time.process_time()


def _exponent(a: int, b: int, ta: float, tb: float) -> float:
    return math.log(tb / ta) / math.log(b / a) if ta > 0 and tb > 0 else float("nan")


def _session(history: list[dict[str, Any]], window: int) -> list[float]:
    """Per request: extend (the messages since the last), prepare, record_usage."""
    session = ContextSession(window)
    pending: list[dict[str, Any]] = []
    samples = []
    for index, message in enumerate(history):
        if message["role"] == "assistant" and index > 0:
            tokens = recorded_usage(message)
            started = _clock()
            session.extend(pending)
            session.prepare()
            if tokens is not None:
                session.record_usage(TokenUsage(tokens_in=tokens[0], tokens_out=tokens[1]))
            samples.append((_clock() - started) * 1000)
            pending = []
        pending.append(message)
    return samples


def trace_ratio(rounds: int) -> None:
    history = load_gcp_trace()
    if history is None:
        print("the 443-message trace is not beside the checkout (../shared/corpus/raw): skipped")
        return
    print(f"\n443-message Cline trace, recorded usage, {rounds} rounds interleaved (median CPU ms)")
    print("| window | faithful core | session | session / core |")
    print("| --- | ---: | ---: | ---: |")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the trace's summed usage is distrusted, as it should be
        for window in TRACE_WINDOWS:
            core: list[float] = []
            session: list[float] = []
            for _ in range(rounds):
                core += replay_per_turn(history, window, _clock)[0]
                session += _session(history, window)
            a, b = statistics.median(core), statistics.median(session)
            print(f"| {window // 1000}k | {a:.3f} | {b:.3f} | {b / a:.2f}x |")


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="1k-20k messages, fewer turns")
    parser.add_argument(
        "--sizes", help="comma-separated lengths to grow (e.g. 20000,100000), instead of all"
    )
    parser.add_argument("--turns", type=int, help="measured turns per length and phase")
    parser.add_argument(
        "--no-trace", action="store_true", help="skip the 443-message trace comparison"
    )
    return parser.parse_args()


def main() -> None:
    options = _options()
    quick = options.quick
    sizes = QUICK_SIZES if quick else SIZES
    if options.sizes:
        sizes = tuple(sorted(int(size) for size in options.sizes.split(",")))
    turns = options.turns or (QUICK_TURNS if quick else TURNS)
    print(f"Python {sys.version.split()[0]}; window {WINDOW:,}; {turns} turns a phase")
    started = time.perf_counter()
    memory = {}
    lengths = []
    for length in sizes:
        began = time.perf_counter()
        session = _grown(_messages(length))
        if length in (sizes[0], sizes[-1]):
            memory[length] = _retained(length, session)
        lengths.append(_Length(length, session))
        print(f"  grew {length:,} messages in {time.perf_counter() - began:.1f} s")
    order = random.Random(25)
    for phase in (0, 1):
        if phase == 1:
            gc.collect()
            gc.freeze()
        for _ in range(turns):
            order.shuffle(lengths)
            for each in lengths:
                each.step(phase)
    lengths.sort(key=lambda each: each.length)
    print(
        "\n| messages | visible (median) | steady median / p95 | shrink median / p95 (n)"
        " | shrink / steady"
        " | mean / median | longest prepare, no freeze / freeze |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for each in lengths:
        steady = sorted(each.steady)
        everything = each.steady + each.shrink
        median = statistics.median(steady)
        p95 = steady[int(len(steady) * 0.95)]
        shrinks = sorted(each.shrink)
        shrink = statistics.median(shrinks) if shrinks else float("nan")
        shrink_p95 = shrinks[int(len(shrinks) * 0.95)] if shrinks else float("nan")
        print(
            f"| {each.length:,} | {statistics.median(each.visible):.0f} | {median:.3f} / {p95:.3f}"
            f" | {shrink:.2f} / {shrink_p95:.2f} ({len(shrinks)}) | {shrink / median:.1f}x"
            f" | {statistics.mean(everything) / statistics.median(everything):.2f}"
            f" | {each.longest[0]:.1f} / {each.longest[1]:.1f} |"
        )
    first, last = lengths[0], lengths[-1]
    start = next((each for each in lengths if each.length >= 20_000), first)
    print(
        f"\nsteady median exponent {first.length:,} -> {last.length:,}:"
        f" {_exponent(first.length, last.length, statistics.median(first.steady), statistics.median(last.steady)):.3f}"
    )
    if start.shrink and last.shrink and start is not last:
        print(
            f"shrink median exponent {start.length:,} -> {last.length:,}:"
            f" {_exponent(start.length, last.length, statistics.median(start.shrink), statistics.median(last.shrink)):.3f}"
        )
    small, large = sizes[0], sizes[-1]
    if small != large:
        _memory(memory, small, large)
    _pause(last.session, last.length)
    if not options.no_trace:
        trace_ratio(1 if quick else 3)
    print(f"\nwhole run: {time.perf_counter() - started:.0f} s")


def _memory(memory: dict[int, tuple[float, float, int, int]], small: int, large: int) -> None:
    """What the session retains per hidden and per visible message, between two lengths."""
    _, a_added, a_objects, a_visible = memory[small]
    b_alone, b_added, b_objects, b_visible = memory[large]
    hidden_small, hidden_large = small - a_visible, large - b_visible
    per_hidden = (b_added - a_added) / (hidden_large - hidden_small)
    objects_per_hidden = (b_objects - a_objects) / (hidden_large - hidden_small)
    per_visible = (a_added - per_hidden * hidden_small) / a_visible
    message_bytes = b_alone / large
    print(
        f"\nretained at {large:,} messages: the messages {b_alone / 1e6:.1f} MB, the session"
        f" {b_added / 1e6:.1f} MB above them ({b_added / large:.0f} B a message);"
        f" per hidden message {per_hidden:.0f} B, per visible message {per_visible:.0f} B"
        f" ({per_visible / message_bytes:.2f}x a message of {message_bytes:.0f} B);"
        f" live objects the session adds: {b_objects:,} ({objects_per_hidden:.2f} per hidden"
        " message)"
    )


def _pause(session: ContextSession, length: int) -> None:
    """A full collection's pause with ``session`` alive, with and without ``gc.freeze()``."""
    gc.unfreeze()
    began = _clock()
    gc.collect()
    unfrozen = (_clock() - began) * 1000
    gc.freeze()
    began = _clock()
    gc.collect()
    frozen = (_clock() - began) * 1000
    gc.unfreeze()
    print(
        f"a full collection with the {length:,}-message session alive: {unfrozen:.0f} ms,"
        f" {frozen:.1f} ms after gc.freeze(); {len(gc.get_objects()):,} live objects"
    )


if __name__ == "__main__":
    main()
