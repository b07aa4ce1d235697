"""A session's commits when another program appends to its stored task, case by case.

Cline appends to a task's history file without a new version; a commit that does not keep
those messages is refused as *extended*. The session then takes them in before what it is
appending and commits once more; in every other case (decisions alone, a history the other
program changed, a malformed message, a newer version) it gives up with the store's error, and
refuses every later commit until a reload.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ConcurrentUpdateError, ContextSession
from windowkeeper.storage import Commit, Snapshot

TASK = {"role": "user", "content": "task"}
CLINE = [{"role": "assistant", "content": "cline"}, {"role": "user", "content": "more"}]
MINE = {"role": "assistant", "content": "mine"}


class _Shared:
    """A task another program appends to (:meth:`appended`) without a new version."""

    name = "shared"

    def __init__(self, history: list[dict[str, Any]], *, extended: bool = True) -> None:
        self.history = list(history)
        self.version = 1
        self.state: dict[str, Any] | None = None
        self.commits: list[Commit] = []
        self.foreign = 0  # the stored messages a commit must keep
        self.extended = extended

    def load(self) -> Snapshot:
        return Snapshot(version=self.version, history=list(self.history), state=self.state)

    def appended(self, *messages: dict[str, Any]) -> None:
        self.history += messages
        self.foreign = len(self.history)

    def commit(self, commit: Commit) -> int:
        if commit.base_version != self.version or commit.keep < self.foreign:
            raise ConcurrentUpdateError(
                self.name, commit.base_version, self.version, extended=self.extended
            )
        self.history = [*self.history[: commit.keep], *commit.append]
        self.state, self.foreign = commit.state, 0
        self.version += 1
        self.commits.append(commit)
        return self.version

    def close(self) -> None:
        return None


def _opened(**options: Any) -> tuple[ContextSession, _Shared]:
    backend = _Shared([TASK], **options)
    return ContextSession(10_000, store=backend), backend


def test_messages_appended_by_another_program_are_taken_in_before_ours() -> None:
    keeper, backend = _opened()
    backend.appended(*CLINE)
    keeper.append(MINE)
    assert keeper.history == backend.history == [TASK, *CLINE, MINE]
    [commit] = backend.commits
    assert (commit.base_version, commit.keep, list(commit.append)) == (1, 3, [MINE])
    keeper.append({"role": "user", "content": "next"})  # and the next commit goes on from there
    assert backend.version == 3
    assert backend.commits[-1].keep == 4


def _refused(keeper: ContextSession, backend: _Shared, act: Any) -> None:
    with pytest.raises(ConcurrentUpdateError):
        act()
    assert backend.commits == []
    with pytest.raises(ConcurrentUpdateError):  # and every later commit, until a reload
        keeper.append({"role": "user", "content": "later"})
    assert backend.commits == []


def test_a_commit_of_decisions_alone_is_refused() -> None:
    keeper, backend = _opened()
    keeper.append({"role": "assistant", "content": "a"})
    keeper.append({"role": "user", "content": "u"})
    backend.appended(*CLINE)
    backend.commits.clear()
    _refused(keeper, backend, keeper.prepare)


def test_a_change_that_is_not_an_append_is_refused() -> None:
    keeper, backend = _opened(extended=False)
    backend.appended(*CLINE)
    _refused(keeper, backend, lambda: keeper.append(MINE))


def test_a_history_the_other_program_rewrote_is_refused() -> None:
    keeper, backend = _opened()
    keeper.append({"role": "assistant", "content": "a"})
    backend.commits.clear()
    backend.history[1] = {"role": "assistant", "content": "rewritten"}
    backend.appended(*CLINE)
    _refused(keeper, backend, lambda: keeper.append({"role": "user", "content": "u"}))


def test_a_malformed_message_appended_is_refused() -> None:
    keeper, backend = _opened()
    backend.appended({"role": "assistant", "content": 5}, CLINE[1])
    _refused(keeper, backend, lambda: keeper.append(MINE))


def test_a_newer_version_is_refused() -> None:
    keeper, backend = _opened()
    backend.appended(*CLINE)
    backend.version = 2  # another session committed too
    _refused(keeper, backend, lambda: keeper.append(MINE))


def test_a_reload_takes_the_stored_task_and_commits_again() -> None:
    keeper, backend = _opened(extended=False)
    backend.appended(*CLINE)
    with pytest.raises(ConcurrentUpdateError):
        keeper.append(MINE)
    backend.foreign = 0
    keeper.reload()
    assert keeper.history == [TASK, *CLINE]
    keeper.append(MINE)
    assert backend.history == [TASK, *CLINE, MINE]
