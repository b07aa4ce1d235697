"""Cost of persisting the overwrite store: a store of 1,000 updates, saved and serialized.

Run with ``.venv/bin/python bench/bench_store.py``. Prints medians in milliseconds (and p95) for
``save_context_history`` (serialize, write, fsync, rename, fsync the folder),
``context_history_json()`` alone, and ``initialize_context_history``; numbers go into the docs
and closing notes, never into test assertions.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _timing import summary, timings
from windowkeeper import ContextManager, EditType
from windowkeeper.core._notices import DUPLICATE_READ_NOTICE
from windowkeeper.core._overwrites import text_update

UPDATES = 1_000
RUNS = 50


def _store_manager(updates: int, *, with_float: bool = False) -> ContextManager:
    """A store shaped like a long task's: mostly read replacements, some edits and mentions."""
    manager = ContextManager()
    store = manager.store
    store.record(1, EditType.UNDEFINED, 0, text_update(1_700_000_000_000, "[NOTE] truncated"))
    for k in range(updates - 1):
        stamp = 1_700_000_000_000 + 1_000 * k
        message = 2 + (k * 7) % 600
        if k % 10 < 6:
            text = f"[read_file for 'src/module_{k % 40}.py'] Result:\n{DUPLICATE_READ_NOTICE}"
            store.record(message, EditType.READ_FILE_TOOL, 0, text_update(stamp, text))
        elif k % 10 < 9:
            text = (
                f"[replace_in_file for 'src/módulo_{k % 40}.py'] Result:\nThe content was "
                "successfully saved.\n\n"
                + "Here is the full, updated content:\n"
                * 12
                + f'<final_file_content path="src/módulo_{k % 40}.py"> {DUPLICATE_READ_NOTICE} '
                "</final_file_content>"
            )
            store.record(message, EditType.ALTER_FILE_TOOL, 0, text_update(stamp, text))
        else:
            body = "def handler(event):  # 日本語のコメント 😀\n    return event\n" * 60
            text = (
                f'<file_content path="a{k}.txt">{DUPLICATE_READ_NOTICE}</file_content>\n'
                f'<file_content path="b{k}.txt">\n{body}</file_content>'
            )
            metadata = [[f"a{k}.txt"], [f"a{k}.txt", f"b{k}.txt"]]
            store.record(message, EditType.FILE_MENTION, 1, text_update(stamp, text, metadata))
    if with_float:
        store.record(2, EditType.READ_FILE_TOOL, 5, text_update(1.5, "fractional"))  # type: ignore[arg-type]
    return manager


def _timings(call: Callable[[], Any], runs: int = RUNS) -> list[float]:
    return timings(call, runs, warm_up=True)


def _line(name: str, samples: list[float]) -> str:
    return summary(name, samples, width=52, digits=3)


def main() -> None:
    manager = _store_manager(UPDATES)
    exotic = _store_manager(UPDATES, with_float=True)
    size = len(manager.context_history_json().encode("utf-8"))
    print(f"store: {UPDATES} updates, {len(manager.store)} messages, {size / 1024:.0f} KiB of JSON")
    with tempfile.TemporaryDirectory() as folder:
        print(
            _line(
                "save_context_history (atomic, fsynced)",
                _timings(lambda: manager.save_context_history(folder)),
            )
        )
        print(_line("context_history_json()", _timings(manager.context_history_json)))
        print(
            _line(
                "context_history_json(), store holding a float",
                _timings(exotic.context_history_json),
            )
        )
        loader = ContextManager()
        print(
            _line(
                "initialize_context_history",
                _timings(lambda: loader.initialize_context_history(folder)),
            )
        )
        assert loader.store == manager.store
        assert Path(folder, "context_history.json").stat().st_size == size


if __name__ == "__main__":
    main()
