"""What a session keeps of its counter's learning at a checkpoint, and gives back at a rollback.

A counter that offers ``snapshot()`` has it kept in every checkpoint; one that also offers
``restore(value)`` is given the checkpoint's back when the session rolls back to it. Other
counters are left as they are.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextSession, TokenUsage


class Counter:
    """Counts a fixed 10 tokens; remembers what it was told."""

    def __init__(self) -> None:
        self.learnt = 0

    def count(self, messages: Any, *, system: Any = None, tools: Any = None) -> int:
        return 10

    def observe(
        self, messages: Any, *, system: Any = None, tools: Any = None, reported_input_tokens: int
    ) -> None:
        self.learnt = reported_input_tokens


class Snapshots(Counter):
    def snapshot(self) -> object:
        return ("learnt", self.learnt)


class Restores(Snapshots):
    def __init__(self) -> None:
        super().__init__()
        self.restored: list[object] = []

    def restore(self, snapshot: object) -> None:
        self.restored.append(snapshot)
        self.learnt = snapshot[1]  # type: ignore[index]


def _session(counter: Counter) -> ContextSession:
    session = ContextSession(16_000, counter=counter)  # type: ignore[arg-type]
    session.append({"role": "user", "content": "Fix the parser."})
    session.prepare()
    session.record_usage(TokenUsage(tokens_in=12))
    return session


def test_a_checkpoint_keeps_the_snapshot_of_a_counter_that_cannot_restore() -> None:
    session = _session(Snapshots())
    assert session.checkpoint().counter_state == ("learnt", 12)


def test_a_checkpoint_of_a_counter_without_snapshots_keeps_nothing() -> None:
    counter = Counter()
    session = _session(counter)
    checkpoint = session.checkpoint()
    assert checkpoint.counter_state is None
    session.prepare()
    session.record_usage(TokenUsage(tokens_in=30))
    session.rollback(checkpoint)
    assert counter.learnt == 30  # nothing to give back


def test_a_rollback_gives_the_counter_back_what_it_knew() -> None:
    counter = Restores()
    session = _session(counter)
    checkpoint = session.checkpoint()
    session.prepare()
    session.record_usage(TokenUsage(tokens_in=30))
    assert counter.learnt == 30
    session.rollback(checkpoint)
    assert counter.restored == [("learnt", 12)]
    assert counter.learnt == 12


def test_a_counter_that_cannot_restore_keeps_what_it_learnt_after_a_rollback() -> None:
    counter = Snapshots()
    session = _session(counter)
    checkpoint = session.checkpoint()
    session.prepare()
    session.record_usage(TokenUsage(tokens_in=30))
    session.rollback(checkpoint)
    assert counter.learnt == 30


class Store:
    """A backend that holds nothing and refuses commits once ``failing`` is set."""

    def __init__(self) -> None:
        self.failing = False

    def name(self) -> str:
        return "memory:flaky"

    def load(self) -> None:
        return None

    def commit(self, commit: object) -> int:
        if self.failing:
            raise OSError("disk full")
        return 1

    def close(self) -> None:
        pass


class RestoresOnly(Counter):
    """Can restore, but has no snapshot to restore from."""

    def __init__(self) -> None:
        super().__init__()
        self.restored: list[object] = []

    def restore(self, snapshot: object) -> None:
        self.restored.append(snapshot)


def test_a_failed_commit_restores_nothing_when_nothing_was_kept() -> None:
    store, counter = Store(), RestoresOnly()
    session = ContextSession(16_000, store=store, counter=counter)  # type: ignore[arg-type]
    session.append({"role": "user", "content": "Fix the parser."})
    session.prepare()
    store.failing = True
    with pytest.raises(OSError, match="disk full"):
        session.record_usage(TokenUsage(tokens_in=12))
    assert counter.restored == []
