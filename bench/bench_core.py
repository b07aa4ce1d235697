"""Per-request cost of the faithful core on the 443-message real Cline trace.

Run with ``make bench`` or ``.venv/bin/python bench/bench_core.py``. Prints medians and p95 in
milliseconds; numbers go into the docs and closing notes, never into test assertions.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any, Literal

from _timing import summary, timings
from _traces import load_gcp_trace, recorded_usage
from windowkeeper import ContextManager, ContextSession, TokenUsage
from windowkeeper.formats import from_anthropic


def replay_per_turn(
    history: list[dict[str, Any]], window: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[list[float], Any]:
    """Time get_new_context_messages_and_metadata once before every assistant message
    (by ``clock``, in seconds: wall time unless told otherwise)."""
    manager = ContextManager()
    deleted_range = None
    usage = None
    samples = []
    for index, message in enumerate(history):
        if message["role"] != "assistant":
            continue
        prefix = history[:index]
        started = clock()
        result = manager.get_new_context_messages_and_metadata(
            prefix, usage=usage, timestamp=index, context_window=window, deleted_range=deleted_range
        )
        samples.append((clock() - started) * 1000)
        deleted_range = result.deleted_range
        tokens = recorded_usage(message)
        if tokens is not None:
            usage = TokenUsage(tokens_in=tokens[0], tokens_out=tokens[1])
    return sorted(samples), deleted_range


def replay_session(
    history: list[dict[str, Any]], window: int, format: Literal["anthropic", "openai"] = "anthropic"
) -> tuple[list[float], Any]:
    """Time ContextSession.prepare once before every assistant message (recorded usage)."""
    session = ContextSession(window, format=format)
    samples = []
    for index, message in enumerate(history):
        if message["role"] == "assistant" and index > 0:
            started = time.perf_counter()
            session.prepare()
            samples.append((time.perf_counter() - started) * 1000)
            tokens = recorded_usage(message)
            if tokens is not None:
                session.record_usage(TokenUsage(tokens_in=tokens[0], tokens_out=tokens[1]))
        session.append(message)
    return sorted(samples), session.deleted_range


def main() -> int:
    history = load_gcp_trace()
    if history is None:
        print(
            "the 443-message trace is not beside the checkout (../shared/corpus/raw); nothing to do"
        )
        return 0
    print(f"trace: {len(history)} messages, Python {sys.version.split()[0]}")
    manager = ContextManager()
    print(
        summary(
            "get_truncated_messages, 443 messages, no range",
            timings(lambda: manager.get_truncated_messages(history, None), 300),
        )
    )
    print(
        summary(
            "get_truncated_messages, 443 messages, range (2, 199)",
            timings(lambda: manager.get_truncated_messages(history, (2, 199)), 300),
        )
    )
    for window in (128_000, 64_000):
        rounds = [replay_per_turn(history, window) for _ in range(5)]
        samples = sorted(s for round_samples, _ in rounds for s in round_samples)
        final_range = rounds[-1][1]
        print(
            summary(f"per turn (replay, recorded usage, window {window}) -> {final_range}", samples)
        )
    for window in (128_000, 64_000):
        rounds = [replay_session(history, window) for _ in range(3)]
        samples = sorted(s for round_samples, _ in rounds for s in round_samples)
        print(
            summary(f"ContextSession.prepare per turn, window {window} -> {rounds[-1][1]}", samples)
        )
    openai_history = from_anthropic(_plain(history))
    for window in (128_000, 64_000):
        rounds = [replay_session(openai_history, window, "openai") for _ in range(3)]
        samples = sorted(s for round_samples, _ in rounds for s in round_samples)
        print(summary(f"the same, format='openai', window {window} -> {rounds[-1][1]}", samples))
    return 0


def _plain(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace without Cline's storage-only keys, as an agent would hold it."""
    keys = {"type", "text", "id", "name", "input", "tool_use_id", "content", "source"}
    return [
        {
            "role": message["role"],
            "content": [
                {k: v for k, v in block.items() if k in keys} for block in message["content"]
            ]
            if isinstance(message["content"], list)
            else message["content"],
        }
        for message in history
    ]


if __name__ == "__main__":
    raise SystemExit(main())
