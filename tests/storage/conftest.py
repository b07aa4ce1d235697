"""The storage tests' shared fixture: every backend behind one factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from windowkeeper import SessionStore, SQLiteStore, TaskFolderStore

from ..postgres import postgres_store_factory

Factory = Callable[[str], SessionStore]


@pytest.fixture(params=["folder", "folder-nondurable", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """A factory: task id -> a new store object for that task (the same task for the same id)."""
    made: list[SessionStore] = []
    kind = request.param
    if kind == "postgres":
        base = postgres_store_factory(request)
    elif kind == "sqlite":

        def base(task: str) -> SessionStore:
            return SQLiteStore(tmp_path / "tasks.db", task)
    else:

        def base(task: str) -> SessionStore:
            return TaskFolderStore(tmp_path / task, durable=kind == "folder")

    def make(task: str) -> SessionStore:
        store = base(task)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
