"""Files on disk: atomic writes, and reading the store file of a task folder without losing it.

A write goes to a temporary file in the same folder, is flushed and fsynced, then renamed over the
target with ``os.replace`` (atomic on POSIX and Windows), and the folder is fsynced where the
platform allows. A reader therefore sees the old file or the new one, never a mix, even when the
writer is killed mid-write.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from .overwrites import CorruptStoreError, OverwriteStore

__all__ = [
    "CONTEXT_HISTORY_FILE",
    "LoadReport",
    "LoadStatus",
    "atomic_write_text",
    "load_store",
]

CONTEXT_HISTORY_FILE = "context_history.json"


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace the file at ``path`` with ``text`` (UTF-8) atomically; raise ``OSError`` on failure."""
    target = Path(path)
    data = text.encode("utf-8", "surrogatepass")
    descriptor, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=".tmp", dir=target.parent
    )
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_folder(target.parent)


def _fsync_folder(folder: Path) -> None:
    """Persist the rename itself; best effort, as not every platform can open a folder."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


class LoadStatus(StrEnum):
    """How loading a task folder's store went."""

    MISSING = "missing"  # no file: a fresh task, an empty store
    LOADED = "loaded"
    CORRUPT = "corrupt"  # a file the original could not use either: set aside, empty store
    UNREADABLE = "unreadable"  # the file could not be read (permissions, I/O): empty store


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What ``initialize_context_history`` found, so "nothing saved" and "saved but unusable" differ."""

    status: LoadStatus
    path: Path
    reason: str = ""
    set_aside: Path | None = None  # where a corrupt file was moved, so nothing is lost

    @property
    def ok(self) -> bool:
        """True when the store reflects what was saved (loaded, or nothing was saved)."""
        return self.status in (LoadStatus.MISSING, LoadStatus.LOADED)


def load_store(task_dir: str | os.PathLike[str]) -> tuple[OverwriteStore, LoadReport]:
    """Read ``context_history.json`` from ``task_dir``; never raises.

    A missing file gives an empty store. A file that is not JSON, or not the original's nested
    layout, also gives an empty store (the original silently starts empty), but is renamed to
    ``context_history.json.corrupt-<ms>`` so the next save cannot overwrite it, and reported.
    """
    path = Path(task_dir) / CONTEXT_HISTORY_FILE
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return OverwriteStore(), LoadReport(LoadStatus.MISSING, path)
    except OSError as error:
        return OverwriteStore(), LoadReport(LoadStatus.UNREADABLE, path, str(error))
    try:
        store = OverwriteStore.from_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, CorruptStoreError) as error:
        aside = path.with_name(f"{path.name}.corrupt-{time.time_ns() // 1_000_000}")
        try:
            os.replace(path, aside)
        except OSError:
            aside = None  # type: ignore[assignment]
        return OverwriteStore(), LoadReport(LoadStatus.CORRUPT, path, str(error), aside)
    return store, LoadReport(LoadStatus.LOADED, path)
