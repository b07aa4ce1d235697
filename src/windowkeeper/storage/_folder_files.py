"""The task folder's file operations: links never followed, every write whole or undone.

What :class:`~windowkeeper.storage.TaskFolderStore` does to its files, one call each: read a
regular file, write in place at an offset, cut, write beside and rename, compare the bytes at
a file's end, take the folder's lock. Every write goes through :func:`write_all`, so that one
replacement of it (the storage tests' full disk) reaches them all.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._errors import TaskFolderError
from ..core._messages import Message
from ._files import file_mode, follow_owner, read_regular
from ._protocol import StorageError

try:  # POSIX; elsewhere a folder is not guarded against a second writer
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "NOFOLLOW",
    "digest",
    "ends_with",
    "locked",
    "next_path",
    "parse_history",
    "parse_json",
    "plain_write",
    "read",
    "size_and_time",
    "sync",
    "truncate",
    "writable",
    "write_all",
    "write_in_place",
]

NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_READ_ONLY = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})


def digest(data: bytes) -> str:
    import hashlib  # noqa: PLC0415  (a digest is taken on commit, not at import)

    return hashlib.sha256(data).hexdigest()


def read(path: Path) -> bytes | None:
    """The bytes of a regular file (links not followed), None when there is none."""
    try:
        return read_regular(path)
    except OSError as error:
        if os.path.islink(path):
            raise TaskFolderError(f"{path}: a link (links are never followed)") from None
        raise TaskFolderError(f"{path}: cannot be read: {error.strerror or error}") from None


@contextlib.contextmanager
def locked(folder: Path, name: str, *, shared: bool, loaded: bool) -> Iterator[bool]:
    """Hold the folder's lock file ``name`` (flock) while the block runs; yields whether the
    folder is read-only for this process (``shared``, or found so when the lock file cannot be
    opened before the folder was ever ``loaded``: then a shared lock, if there is a file)."""
    if fcntl is None:  # pragma: no cover
        yield shared
        return
    path = folder / name
    descriptor = None
    if not shared:
        try:
            try:
                descriptor = os.open(path, os.O_RDWR | NOFOLLOW)
            except FileNotFoundError:
                descriptor = os.open(path, os.O_RDWR | os.O_CREAT | NOFOLLOW, file_mode(path))
        except OSError as error:
            if error.errno not in _READ_ONLY or loaded:
                raise StorageError(f"{path}: cannot be opened: {error.strerror}") from None
            shared = True
        else:
            follow_owner(descriptor, folder)
    if shared:  # read under the writers' lock when there is one, without creating it
        with contextlib.suppress(OSError):
            descriptor = os.open(path, os.O_RDONLY | NOFOLLOW)
    try:
        if descriptor is not None:
            fcntl.flock(descriptor, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield shared
    finally:
        if descriptor is not None:
            os.close(descriptor)  # releases the lock


def ends_with(path: Path, size: int, expected: bytes) -> bool:
    """Whether the ``len(expected)`` bytes before offset ``size`` of ``path`` are ``expected``."""
    try:
        descriptor = os.open(path, os.O_RDONLY | NOFOLLOW)
    except OSError:
        return False
    try:
        return os.pread(descriptor, len(expected), size - len(expected)) == expected
    finally:
        os.close(descriptor)


def size_and_time(path: Path) -> tuple[int, int] | None:
    """``(size, modification time in ns)`` of ``path`` (not followed), None when absent."""
    try:
        status = os.lstat(path)
    except FileNotFoundError:
        return None
    return (status.st_size, status.st_mtime_ns)


def sync(path: Path) -> None:
    """fsync the file at ``path``: what was written to it reaches the disk."""
    descriptor = os.open(path, os.O_RDONLY | NOFOLLOW)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def write_in_place(path: Path, offset: int, data: bytes, *, sync: bool) -> None:
    descriptor = os.open(path, os.O_WRONLY | NOFOLLOW)
    try:
        os.lseek(descriptor, offset, os.SEEK_SET)
        write_all(descriptor, data)
        if sync:
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def truncate(path: Path, size: int, suffix: bytes = b"", *, sync: bool) -> None:
    """Cut ``path`` to ``size`` bytes, then write ``suffix`` there."""
    descriptor = os.open(path, os.O_WRONLY | NOFOLLOW)
    try:
        os.ftruncate(descriptor, size)
        if suffix:
            os.lseek(descriptor, size, os.SEEK_SET)
            write_all(descriptor, suffix)
        if sync:
            os.fsync(descriptor)
    finally:
        os.close(descriptor)


def plain_write(path: Path, data: bytes) -> None:
    """Write ``data`` to a new temporary file and rename it over ``path`` (no fsync)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | NOFOLLOW
    descriptor = os.open(temporary, flags, file_mode(path))
    try:
        follow_owner(descriptor, path.parent)
        write_all(descriptor, data)
    except BaseException:
        os.close(descriptor)
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    os.close(descriptor)
    os.replace(temporary, path)


def writable(path: Path) -> None:
    """Raise :class:`StorageError` unless ``path`` is absent, a regular file or a link to replace."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise StorageError(f"{path}: {error.strerror or error}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise StorageError(f"{path}: not a regular file; nothing was written")


def next_path(path: Path) -> Path:
    """Where the new version of ``path`` is written before it is renamed into place."""
    return path.with_name(path.name + ".next")


def parse_json(raw: bytes) -> Any:
    """``raw`` as JSON (``NaN`` and ``Infinity`` refused); raises ``ValueError`` or
    ``RecursionError``."""
    return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_history(path: Path, raw: bytes) -> list[Message]:
    try:
        history = parse_json(raw)
    except (ValueError, RecursionError) as error:
        raise TaskFolderError(f"{path}: not JSON: {str(error)[:200]}") from None
    if not isinstance(history, list):
        raise TaskFolderError(f"{path}: expected a list of messages")
    return history
