"""The task-folder backend: Cline's files kept valid, appended in place, one journal line per commit.

Files of a task folder::

    api_conversation_history.json   the history, a JSON list (Cline reads it)
    context_history.json            the overwrite store, byte for byte as Cline writes it
    windowkeeper_session.jsonl      the journal: one line per commit, the last complete one rules
    windowkeeper.lock               taken (flock) while loading and committing

A commit that appends writes only the new messages, in place over the closing ``]`` of the
history, then one journal line naming the history's length, its size in bytes and a digest of
its last 4 KiB, the digest of the store and the session state: its cost follows what changed,
not the history. A commit that rewrites (a rollback cut, or the first commit on a history written
by another program) writes the new file beside the old one (``.next``), then the journal line,
then renames it into place; a changed store goes the same way. The journal line is the commit
point. Loading repairs what a crash can leave, so it always gives what the last journal line
describes:

- the history longer than recorded (an append whose line was never written): cut back;
- a ``.next`` file matching the line (a crash after the line, before the rename): renamed in;
- a ``.next`` not matching (a crash before the line): removed;
- a torn last journal line: ignored and cut off.

A history or store changed by another program since the last commit (Cline running the task)
is not repaired: the store is taken as found, the history refused with a clear error. The
journal is rewritten (atomically) in one line once it passes 1,000 lines.

Each commit checks, under the lock, that the journal is still the one this session last wrote;
another writer's commit in between gives :class:`ConcurrentUpdateError` and writes nothing.
With ``durable=True`` (the default) every write is fsynced before the next, so a commit survives
a power loss; ``durable=False`` skips the fsyncs: a commit still survives the process being
killed at any instant, not a crash of the machine. Links are never followed: every file is
opened with ``O_NOFOLLOW`` or replaced by rename.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError, TaskFolderError
from ..core._messages import Message
from ._files import (
    CONTEXT_HISTORY_FILE,
    LoadReport,
    atomic_write_bytes,
    file_mode,
    fsync_folder,
    load_store,
    remove_stale_temporaries,
)
from ._protocol import Commit, ConcurrentUpdateError, Snapshot, StorageError

try:  # POSIX; elsewhere a folder is not guarded against a second writer
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = ["HISTORY_FILE", "JOURNAL_FILE", "LEGACY_STATE_FILE", "TaskFolderStore", "encode_message"]

HISTORY_FILE = "api_conversation_history.json"
JOURNAL_FILE = "windowkeeper_session.jsonl"
LEGACY_STATE_FILE = "windowkeeper_session.json"  # before the journal: the state alone
LOCK_FILE = "windowkeeper.lock"
_TAIL = 4096
_JOURNAL_LIMIT = 1000
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def encode_message(message: Message) -> bytes:
    """A message as the history file holds it: compact JSON, non-ASCII kept, no NaN."""
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _digest(data: bytes) -> str:
    import hashlib  # noqa: PLC0415  (a digest is taken on commit, not at import)

    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes | None:
    """The bytes of a regular file (links not followed), None when there is none."""
    try:
        descriptor = os.open(path, os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as error:
        raise TaskFolderError(f"{path}: cannot be read: {error.strerror or error}") from None
    with os.fdopen(descriptor, "rb") as handle:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise TaskFolderError(f"{path}: not a regular file")
        return handle.read()


class TaskFolderStore:
    """A task folder as a :class:`~windowkeeper.storage.SessionStore` (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike[str], *, durable: bool = True) -> None:
        self.folder = Path(folder)
        self.durable = durable
        self.last_load: LoadReport | None = None
        self._version = 0
        self._ends: list[int] = [1]  # byte size of "[" and the first k messages, commas between
        self._tail = b"[]"  # the last bytes of the history file as committed
        self._foreign = False  # the history file is not in this writer's layout: rewrite it
        self._journal_size = 0  # the journal's size after this writer's last commit
        self._journal_lines = 0
        self._store_digest: str | None = None  # of the store file as last committed
        self._last_commit_id = ""
        self._loaded = False
        # Called with a step's name before each write of a commit: the tests' crash points.
        self.before_write: Callable[[str], None] | None = None

    @property
    def name(self) -> str:
        return str(self.folder)

    # -- locking ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover
            yield
            return
        path = self.folder / LOCK_FILE
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, file_mode(path))
        except OSError as error:
            raise StorageError(f"{path}: cannot be opened: {error.strerror or error}") from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
            yield
        finally:
            os.close(descriptor)  # releases the lock

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> Snapshot | None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StorageError(f"{self.folder}: cannot be created: {error}") from None
        with self._locked():
            return self._load()

    def _load(self) -> Snapshot | None:
        self._loaded = True
        history_path = self.folder / HISTORY_FILE
        for name in (HISTORY_FILE, CONTEXT_HISTORY_FILE, JOURNAL_FILE, LEGACY_STATE_FILE):
            # under the lock no writer of this folder is between its write and its rename
            remove_stale_temporaries(self.folder / name, older_than=0.0)
            remove_stale_temporaries(_next(self.folder / name), older_than=0.0)
        record = self._last_record()
        if record is not None:
            self._repair(history_path, record)
        raw = _read(history_path)
        history: list[Message] = []
        if raw is not None:
            history = _parse_history(history_path, raw)
        if record is not None and len(history) != record["history_length"]:
            raise TaskFolderError(
                f"{history_path}: holds {len(history)} messages, the last commit recorded"
                f" {record['history_length']}: the file was changed by another program"
                f" (remove {JOURNAL_FILE} to start from the file as it is)"
            )
        self._index(history, raw)
        store, report = load_store(self.folder)
        self.last_load = report
        store_json = store.to_json() if report.status.value == "loaded" else None
        state: dict[str, Any] | None
        if record is not None:
            self._version = int(record["commit"])
            self._store_digest = record.get("store_sha256")
            state = record["state"]
        else:
            self._version = 0
            self._store_digest = None
            state = _legacy_state(self.folder / LEGACY_STATE_FILE)
        if raw is None and store_json is None and state is None:
            return None
        return Snapshot(self._version, history, store_json, state)

    def _last_record(self) -> dict[str, Any] | None:
        """The journal's last complete line (the journal cut after it), or None."""
        path = self.folder / JOURNAL_FILE
        data = _read(path)
        if not data:
            self._journal_size = 0
            self._journal_lines = 0
            return None
        end = len(data)
        record = None
        while end > 0:
            start = data.rfind(b"\n", 0, end - 1) + 1
            line = data[start:end]
            if line.endswith(b"\n"):
                try:
                    value = json.loads(line)
                except ValueError:
                    value = None
                if _is_record(value):
                    record = value
                    break
            end = start
        if end != len(data):  # a torn line after the last complete one
            self._truncate(path, end)
        self._journal_size = end
        self._journal_lines = data.count(b"\n", 0, end)
        return record

    def _repair(self, history_path: Path, record: dict[str, Any]) -> None:
        """Make the history and store files what ``record`` says (see the module docstring)."""
        size, tail = record["history_bytes"], record["history_tail"]
        self._settle(history_path, lambda data: len(data) == size and _tail_digest(data) == tail)
        current = _read(history_path)
        matches = current is not None and len(current) == size and _tail_digest(current) == tail
        if current is not None and len(current) >= size - 1 and not matches:
            repaired = current[: size - 1] + b"]"
            if _tail_digest(repaired) == tail:
                # The bracket first, then the cut: a crash between the two leaves a file this
                # same repair mends on the next load.
                self._write_in_place(history_path, size - 1, b"]", sync=True)
                self._truncate(history_path, size)
        store_digest = record.get("store_sha256")
        store_path = self.folder / CONTEXT_HISTORY_FILE
        if store_digest is not None:
            self._settle(store_path, lambda data: _digest(data) == store_digest)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_next(store_path))

    def _settle(self, path: Path, matches: Any) -> None:
        """Rename ``path.next`` into place when it is what the record describes, else drop it."""
        pending = _next(path)
        data = _read(pending)
        if data is None:
            return
        current = _read(path)
        if matches(data) and (current is None or not matches(current)):
            os.replace(pending, path)
            self._sync_folder()
        else:
            os.unlink(pending)

    def _index(self, history: list[Message], raw: bytes | None) -> None:
        ends = [1]
        for position, message in enumerate(history):
            ends.append(ends[-1] + (1 if position else 0) + len(encode_message(message)))
        self._ends = ends
        expected_size = ends[-1] + 1
        self._foreign = raw is None or len(raw) != expected_size
        self._tail = raw[-_TAIL:] if raw is not None and not self._foreign else b"[]"

    # -- committing ------------------------------------------------------------------------

    def commit(self, commit: Commit) -> int:
        if not self._loaded:  # a commit never writes over what it has not read
            self.load()
        with self._locked():
            done = self._check_version(commit)
            if done is not None:
                return done
            try:
                return self._commit(commit)
            except OSError as error:
                raise StorageError(f"{self.folder}: commit failed: {error}") from error

    def _check_version(self, commit: Commit) -> int | None:
        """None when ``commit`` may go ahead; its version when it already went through."""
        journal = self.folder / JOURNAL_FILE
        try:
            size = os.lstat(journal).st_size
        except FileNotFoundError:
            size = 0
        if size == self._journal_size and commit.base_version == self._version:
            return None
        if commit.commit_id == self._last_commit_id:
            return self._version  # a retry of the commit this writer made last
        record = self._last_record() if size != self._journal_size else None
        found = int(record["commit"]) if record is not None else self._version
        raise ConcurrentUpdateError(self.name, commit.base_version, found)

    def _commit(self, commit: Commit) -> int:
        history_path = self.folder / HISTORY_FILE
        for name in (HISTORY_FILE, CONTEXT_HISTORY_FILE, JOURNAL_FILE):
            _writable(self.folder / name)  # fail here, before anything is written
        stored = len(self._ends) - 1
        if not 0 <= commit.keep <= stored:
            raise ConfigurationError(f"commit keeps {commit.keep} of {stored} stored messages")
        encoded = [encode_message(message) for message in commit.append]
        ends = self._ends[: commit.keep + 1]
        for position, data in enumerate(encoded, commit.keep):
            ends.append(ends[-1] + (1 if position else 0) + len(data))
        rewrite = self._foreign or commit.keep < stored
        if rewrite:
            content = self._rewritten(history_path, commit.keep, encoded)
            tail = content[-_TAIL:]
            self._step("history.next")
            self._write_next(history_path, content)
        elif encoded:
            addition = (b"," if commit.keep else b"") + b",".join(encoded) + b"]"
            self._step("history")
            self._write_in_place(history_path, self._ends[commit.keep], addition)
            tail = (self._tail[:-1] + addition)[-_TAIL:]
        else:
            tail = self._tail
        store_path = self.folder / CONTEXT_HISTORY_FILE
        store_digest = None
        if commit.store_json is not None:
            store_bytes = commit.store_json.encode("utf-8")
            store_digest = _digest(store_bytes)
            self._step("store.next")
            self._write_next(store_path, store_bytes)
        else:
            store_digest = self._current_store_digest()
        version = self._version + 1
        record = {
            "format": "windowkeeper-journal",
            "commit": version,
            "commit_id": commit.commit_id,
            "history_length": len(ends) - 1,
            "history_bytes": ends[-1] + 1,
            "history_tail": _tail_digest(tail),
            "store_sha256": store_digest,
            "state": commit.state,
        }
        self._step("journal")
        self._append_record(record)  # the commit point: from here on the commit stands
        self._step("renames")
        with contextlib.suppress(OSError):  # if a rename fails, the next load or commit redoes it
            if rewrite:
                os.replace(_next(history_path), history_path)
            if commit.store_json is not None:
                os.replace(_next(store_path), store_path)
            if rewrite or commit.store_json is not None:
                self._sync_folder()
        self._version = version
        self._last_commit_id = commit.commit_id
        self._ends = ends
        self._tail = tail
        self._foreign = False
        if commit.store_json is not None:
            self._store_digest = store_digest
        return version

    def _current_store_digest(self) -> str | None:
        if self._store_digest is None:
            data = _read(self.folder / CONTEXT_HISTORY_FILE)
            self._store_digest = _digest(data) if data is not None else None
        return self._store_digest

    def _rewritten(self, path: Path, keep: int, encoded: Sequence[bytes]) -> bytes:
        """The whole new history file: the kept messages as they are on disk, then the new."""
        kept: list[bytes] = []
        if keep:
            current = _read(path) or b"[]"
            if self._foreign:
                kept = [encode_message(message) for message in _parse_history(path, current)[:keep]]
            else:
                kept = [current[1 : self._ends[keep]]]
        return b"[" + b",".join([*kept, *encoded]) + b"]"

    def _step(self, name: str) -> None:
        if self.before_write is not None:
            self.before_write(name)

    def _write_in_place(self, path: Path, offset: int, data: bytes, *, sync: bool = False) -> None:
        descriptor = os.open(path, os.O_WRONLY | _NOFOLLOW)
        try:
            os.lseek(descriptor, offset, os.SEEK_SET)
            _write_all(descriptor, data)
            if self.durable or sync:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _write_next(self, path: Path, data: bytes) -> None:
        pending = _next(path)
        mode = file_mode(path)
        atomic_write_bytes(pending, data) if self.durable else _plain_write(pending, data)
        with contextlib.suppress(OSError):
            os.chmod(pending, mode)

    def _append_record(self, record: dict[str, Any]) -> None:
        path = self.folder / JOURNAL_FILE
        line = json.dumps(record, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        data = line.encode() + b"\n"
        if self._journal_lines >= _JOURNAL_LIMIT:  # start over with this line alone
            atomic_write_bytes(path, data) if self.durable else _plain_write(path, data)
            self._journal_size, self._journal_lines = len(data), 1
            return
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | _NOFOLLOW
        descriptor = os.open(path, flags, file_mode(path))
        try:
            _write_all(descriptor, data)
            if self.durable:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
        if self._journal_size == 0:
            self._sync_folder()
        self._journal_size += len(data)
        self._journal_lines += 1

    def _truncate(self, path: Path, size: int, suffix: bytes = b"") -> None:
        descriptor = os.open(path, os.O_WRONLY | _NOFOLLOW)
        try:
            os.ftruncate(descriptor, size)
            if suffix:
                os.lseek(descriptor, size, os.SEEK_SET)
                _write_all(descriptor, suffix)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)

    def _sync_folder(self) -> None:
        if self.durable:
            fsync_folder(self.folder)

    def close(self) -> None:
        """Nothing is held between calls: the lock is taken per load and per commit."""


def _writable(path: Path) -> None:
    """Raise :class:`StorageError` unless ``path`` is absent, a regular file or a link to replace."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as error:
        raise StorageError(f"{path}: {error.strerror or error}") from None
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise StorageError(f"{path}: not a regular file; nothing was written")


def _next(path: Path) -> Path:
    return path.with_name(path.name + ".next")


def _tail_digest(data: bytes) -> str:
    return _digest(data[-_TAIL:])


def _write_all(descriptor: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(descriptor, view)
        view = view[written:]


def _plain_write(path: Path, data: bytes) -> None:
    """Write ``data`` to a new temporary file and rename it over ``path`` (no fsync)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _NOFOLLOW
    descriptor = os.open(temporary, flags, file_mode(path))
    try:
        _write_all(descriptor, data)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)


def _is_record(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("format") == "windowkeeper-journal"
        and isinstance(value.get("commit"), int)
        and isinstance(value.get("history_length"), int)
        and isinstance(value.get("history_bytes"), int)
        and isinstance(value.get("history_tail"), str)
        and isinstance(value.get("state"), dict)
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_history(path: Path, raw: bytes) -> list[Message]:
    try:
        history = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise TaskFolderError(f"{path}: not JSON: {str(error)[:200]}") from None
    if not isinstance(history, list):
        raise TaskFolderError(f"{path}: expected a list of messages")
    return history


def _legacy_state(path: Path) -> dict[str, Any] | None:
    """The state file of windowkeeper 0.1 (``windowkeeper_session.json``), as a state object."""
    raw = _read(path)
    if raw is None:
        return None
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (ValueError, RecursionError) as error:
        raise TaskFolderError(f"{path}: not JSON: {str(error)[:200]}") from None
    if not isinstance(value, dict):
        raise TaskFolderError(f"{path}: unreadable session state: expected an object")
    return value
