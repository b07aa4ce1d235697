"""Files on disk: atomic writes, and reading the store file of a task folder without losing it.

A write goes to a temporary file in the same folder, is flushed and fsynced, then renamed over the
target with ``os.replace`` (atomic on POSIX and Windows), and the folder is fsynced where the
platform allows. A reader therefore sees the old file or the new one, never a mix, even when the
writer is killed mid-write. A writer killed before its rename leaves its temporary file behind;
loading the folder removes such leftovers once they are an hour old.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from enum import StrEnum
from pathlib import Path

from .._record import record
from ..core._overwrites import CorruptStoreError, OverwriteStore

__all__ = [
    "CONTEXT_HISTORY_FILE",
    "LoadReport",
    "LoadStatus",
    "atomic_write_bytes",
    "atomic_write_text",
    "file_mode",
    "follow_owner",
    "fsync_folder",
    "load_store",
    "read_regular",
    "remove_stale_temporaries",
]

CONTEXT_HISTORY_FILE = "context_history.json"

_STALE_AFTER = 3600.0  # seconds; a live writer renames its temporary file long before this


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Replace the file at ``path`` with ``text`` (UTF-8) atomically; raise ``OSError`` on failure.

    The new file keeps the permission bits of the file it replaces; a file that did not exist
    gets the folder's read and write bits less the umask (0600 in a folder only its owner may
    enter), and, written by root in a folder another user owns, that user as its owner. A link
    at ``path`` is replaced, never followed. Nothing is left behind when the write fails.
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`atomic_write_text` for bytes."""
    target = Path(path)
    mode = file_mode(target)
    temporary, descriptor = _create_temporary(target)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            with contextlib.suppress(OSError):
                os.fchmod(handle.fileno(), mode)
            follow_owner(handle.fileno(), target.parent)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    fsync_folder(target.parent)


def file_mode(target: Path) -> int:
    """The permission bits a write of ``target`` gives it (see :func:`atomic_write_text`)."""
    try:
        existing = os.lstat(target)
    except OSError:
        existing = None
    if existing is not None and stat.S_ISREG(existing.st_mode):
        return stat.S_IMODE(existing.st_mode)
    try:
        folder = stat.S_IMODE(os.stat(target.parent).st_mode)
    except OSError:
        return 0o600
    return ((folder & 0o666) & ~_umask()) | 0o600


def _umask() -> int:
    """The process's umask, read without changing it where the platform tells it (Linux)."""
    try:
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)  # elsewhere: set and restore (a file created meanwhile is rare)
    os.umask(current)
    return current


def follow_owner(descriptor: int | Path, folder: Path) -> None:
    """Run as root in a folder another user owns, give that user the new file; best effort.

    So that a task folder written by a root service stays readable and writable by its owner.
    ``descriptor`` is an open file or a path (a link is not followed).
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return
    with contextlib.suppress(OSError):
        owner = os.stat(folder)
        if owner.st_uid != 0 or owner.st_gid != 0:
            if isinstance(descriptor, int):
                os.fchown(descriptor, owner.st_uid, owner.st_gid)
            else:
                os.chown(descriptor, owner.st_uid, owner.st_gid, follow_symlinks=False)


def read_regular(path: Path) -> bytes | None:
    """The bytes of the regular file at ``path``, None when there is none; a link is not followed.

    Raises ``OSError`` when ``path`` is a link (``ELOOP``), not a regular file, or unreadable.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(f"{path}: not a regular file")
        return handle.read()


def _temporary_glob(target: Path) -> str:
    return f".{target.name}.*.tmp"


def _create_temporary(target: Path) -> tuple[Path, int]:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    flags |= getattr(os, "O_NOFOLLOW", 0)
    while True:
        # What secrets.token_hex(6) returns, without importing secrets (hmac, hashlib, random).
        temporary = target.with_name(f".{target.name}.{os.urandom(6).hex()}.tmp")
        try:
            return temporary, os.open(temporary, flags, 0o600)
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


def fsync_folder(folder: Path) -> None:
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


def remove_stale_temporaries(target: Path, *, older_than: float = _STALE_AFTER) -> None:
    """Delete temporary files that killed writers left beside ``target``; best effort.

    Only files older than ``older_than`` seconds go (a live writer renames its own long before),
    unless the caller holds the folder's lock and passes 0.
    """
    cutoff = time.time() - older_than
    with contextlib.suppress(OSError):
        for leftover in target.parent.glob(_temporary_glob(target)):
            with contextlib.suppress(OSError):
                if older_than <= 0 or leftover.stat().st_mtime < cutoff:
                    leftover.unlink()


class LoadStatus(StrEnum):
    """How loading a task folder's store went."""

    MISSING = "missing"  # no file: a fresh task, an empty store
    LOADED = "loaded"
    CORRUPT = "corrupt"  # a file the original could not use either: set aside, empty store
    UNREADABLE = "unreadable"  # the file could not be read (permissions, I/O): empty store


@record(frozen=True, slots=True)
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

    A missing file gives an empty store; a link is not followed (reported unreadable). The text is decoded as the original reads it (invalid
    UTF-8 becomes U+FFFD). A file the original cannot load (not JSON, or not its layout) also
    gives an empty store, as in the original, but is renamed to
    ``context_history.json.corrupt-<ms>`` (never over an earlier one) so the next save cannot
    overwrite it, and reported.
    """
    path = Path(task_dir) / CONTEXT_HISTORY_FILE
    remove_stale_temporaries(path)
    try:
        raw = read_regular(path)
    except OSError as error:
        if os.path.islink(path):
            reason = "a symbolic link (links are never followed)"
            return OverwriteStore(), LoadReport(LoadStatus.UNREADABLE, path, reason)
        return OverwriteStore(), LoadReport(LoadStatus.UNREADABLE, path, str(error))
    if raw is None:
        return OverwriteStore(), LoadReport(LoadStatus.MISSING, path)
    try:
        store = OverwriteStore.from_json(raw.decode("utf-8", "replace"))
    except CorruptStoreError as error:
        aside = _set_aside(path)
        return OverwriteStore(), LoadReport(LoadStatus.CORRUPT, path, str(error), aside)
    return store, LoadReport(LoadStatus.LOADED, path)


def _set_aside(path: Path) -> Path | None:
    """Rename ``path`` to a ``.corrupt-<ms>`` name no other file has; None if it cannot be moved."""
    stamp = time.time_ns() // 1_000_000
    for attempt in range(100):
        suffix = f".corrupt-{stamp}" if attempt == 0 else f".corrupt-{stamp}-{attempt}"
        aside = path.with_name(path.name + suffix)
        try:
            os.link(path, aside)  # fails if the name is taken, unlike a rename on POSIX
        except FileExistsError:
            continue
        except OSError:  # no hard links here: rename, after checking the name is free
            if aside.exists():
                continue
            try:
                os.rename(path, aside)
            except OSError:
                return None
            return aside
        try:
            os.unlink(path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(aside)
            return None
        return aside
    return None
