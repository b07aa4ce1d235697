"""The conflict-retry loop: two processes on one task, each retrying every refused step.

Each worker opens a session on the same task and, for each of its messages, appends it; on
:class:`~windowkeeper.ConcurrentUpdateError` it reloads (``session.reload()``) and appends again,
as the documentation says. After each acknowledged append it prepares a request and records its
usage, retried the same way. The parent then reloads the task and checks that every acknowledged
message is stored, once, in each writer's own order. Reported: acknowledged messages per second
(both workers together), the conflicts, and the check.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from windowkeeper import ConcurrentUpdateError, ContextSession
from windowkeeper.storage import SessionStore

__all__ = ["RetryResult", "measure_retry", "retry_rows"]

WINDOW = 200_000
TASK = {"role": "user", "content": "Two workers race on this task."}


@dataclass(frozen=True)
class RetryResult:
    label: str
    messages: int  # acknowledged, both workers
    seconds: float
    conflicts: int
    lost: int
    duplicated: int
    out_of_order: int


def _text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": words}]}


def _worker(make: Callable[[], SessionStore], name: str, count: int, channels: Any) -> None:
    replies, start = channels
    session = ContextSession(WINDOW, store=make())
    start.wait()
    conflicts = 0
    for index in range(count):
        message = _text("user" if index % 2 else "assistant", f"{name}-{index} " + "w" * 400)
        while True:
            try:
                session.append(message)
                break
            except ConcurrentUpdateError:
                conflicts += 1
                session.reload()
        replies.put(f"{name}-{index}")
        while True:
            try:
                prepared = session.prepare()
                session.record_usage({"input_tokens": prepared.estimated_tokens})
                break
            except ConcurrentUpdateError:
                conflicts += 1
                session.reload()
    replies.put(("conflicts", conflicts))
    session.close()


def measure_retry(label: str, make: Callable[[], SessionStore], count: int) -> RetryResult:
    """Two forked workers, ``count`` messages each, on the task ``make()`` opens."""
    with ContextSession(WINDOW, store=make()) as first:
        first.append(TASK)
    context = multiprocessing.get_context("fork")
    replies, start = context.Queue(), context.Barrier(3)
    workers = [
        context.Process(target=_worker, args=(make, name, count, (replies, start)))
        for name in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    start.wait()
    began = time.perf_counter()
    got: list[Any] = []
    while sum(isinstance(reply, tuple) for reply in got) < 2:
        got.append(replies.get(timeout=600))
    seconds = time.perf_counter() - began
    for worker in workers:
        worker.join(timeout=60)
    with ContextSession(WINDOW, store=make()) as reopened:
        stored = [message["content"][0]["text"].split()[0] for message in reopened.history[1:]]
    acknowledged = [reply for reply in got if isinstance(reply, str)]
    out_of_order = sum(
        [item for item in stored if item.startswith(f"{name}-")]
        != [f"{name}-{index}" for index in range(count)]
        for name in ("a", "b")
    )
    return RetryResult(
        label,
        len(acknowledged),
        seconds,
        sum(reply[1] for reply in got if isinstance(reply, tuple)),
        len(set(acknowledged) - set(stored)),
        len(stored) - len(set(stored)),
        out_of_order,
    )


def retry_rows(results: list[RetryResult]) -> list[list[str]]:
    return [
        [
            result.label,
            f"{result.messages:,}",
            f"{result.seconds:.2f}",
            f"{result.messages / result.seconds:,.0f}",
            f"{result.conflicts:,}",
            f"**{result.lost}**",
            f"{result.duplicated}",
            f"{result.out_of_order}",
        ]
        for result in results
    ]
