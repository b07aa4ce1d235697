"""The task-folder backend: Cline's files kept valid, appended in place, one journal line per commit.

Files of a task folder::

    api_conversation_history.json   the history, a JSON list (Cline reads it)
    context_history.json            the overwrite store, byte for byte as Cline writes it
    windowkeeper_session.jsonl      the journal: one line per commit, the last complete one rules
    windowkeeper.lock               taken (flock) while loading and committing

A commit that appends writes one journal line first (the commit point: the history's new
length, size and tail digest, the digest of the store, the session state, and the appended
messages themselves, see :mod:`._journal`), then the new messages in place over the closing
``]`` of the history: its cost follows what changed, not the history. A commit that rewrites (a
rollback cut, or the first commit on a history written by another program) writes the new file
beside the old one (``.next``), then the journal line, then renames it into place; a changed
store goes the same way. Loading repairs what a crash can leave, so it always gives what the
last journal line describes:

- a history missing appends the journal holds (a crash, or a power loss before the history's
  pages reached the disk): the appends are replayed from the journal;
- a ``.next`` file matching the line (a crash after the line, before the rename): renamed in;
- a ``.next`` not matching (a crash before the line): removed;
- a torn last journal line: ignored and cut off.

Another program (Cline running the task) may append to the history: a history that holds every
message of the last commit unchanged, and more after them, is taken as it is. Any other change
is refused with a clear error. The journal is rewritten (atomically) in one line once it passes
1,000 lines or 8 MiB, after the history was synced.

Each commit checks, under the lock, before it writes, that the journal's last line is still the
one this writer last wrote (its ``commit_id`` never repeats, so a journal rewritten to the same
size is still recognised) and that the history file is as this writer left it (size,
modification time and its last 4 KiB). Another writer's commit in between gives
:class:`ConcurrentUpdateError` and writes nothing, and so does every later commit until the
store is loaded again; a history another program extended gives the same error with
``extended`` set. Nothing is ever written at an offset that is not this writer's own end.

With ``durable=True`` (the default) one fsync, of the journal, makes a commit of messages (or of
the store, whose new file is synced too, or a rewrite) survive a power loss; a commit of
decisions alone (a request's range, a usage) is synced by the next such commit, so a power loss
can take the last of those back to the commit before (see ``docs/persistence.md``).
``durable=False`` skips the fsyncs: a commit still survives the process being killed at any
instant, not a crash of the machine. A write that
fails (a full disk) is undone, so every file stays parseable, and raises :class:`StorageError`
naming the file. A folder this process may not write loads read-only: commits that add or cut
messages raise :class:`StorageError`, the others (a request's decisions, usage) are kept in
memory. Links are never followed: every file is opened with ``O_NOFOLLOW`` or replaced by rename.
The file operations are in :mod:`._folder_files`, loading and its repairs in :mod:`._folder_load`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError, TaskFolderError
from ..core._messages import Message
from . import _folder_files as files
from ._files import (
    CONTEXT_HISTORY_FILE,
    LoadReport,
    LoadStatus,
    atomic_write_bytes,
    file_mode,
    follow_owner,
    fsync_folder,
    load_store,
    remove_stale_temporaries,
)
from ._folder_load import extension, index, legacy_state, read_journal, repair
from ._journal import TAIL, encode_message, encode_record, last_line, tail_digest
from ._protocol import Commit, ConcurrentUpdateError, Snapshot, StorageError

__all__ = ["HISTORY_FILE", "JOURNAL_FILE", "LEGACY_STATE_FILE", "TaskFolderStore", "encode_message"]

HISTORY_FILE = "api_conversation_history.json"
JOURNAL_FILE = "windowkeeper_session.jsonl"
LEGACY_STATE_FILE = "windowkeeper_session.json"  # before the journal: the state alone
LOCK_FILE = "windowkeeper.lock"
_JOURNAL_LIMIT = 1000
_JOURNAL_BYTES = 8 << 20


class TaskFolderStore:
    """A task folder as a :class:`~windowkeeper.storage.SessionStore` (see the module docstring)."""

    def __init__(self, folder: str | os.PathLike[str], *, durable: bool = True) -> None:
        if not isinstance(folder, str | os.PathLike) or not os.fspath(folder):
            raise ConfigurationError(f"the task folder must be a non-empty path, got {folder!r}")
        self.folder = Path(folder)
        self._history_path = self.folder / HISTORY_FILE  # paths made once: a commit uses each
        self._journal_path = self.folder / JOURNAL_FILE
        self._store_path = self.folder / CONTEXT_HISTORY_FILE
        self.durable = durable
        self.read_only = False  # found at load: the folder cannot be written by this process
        self.last_load: LoadReport | None = None
        self._version = 0
        self._ends: list[int] = [1]  # byte size of "[" and the first k messages, commas between
        self._tail = b"[]"  # the last bytes of the history in this writer's layout
        self._foreign = False  # the history file is not in this writer's layout: rewrite it
        self._stat: tuple[int, int] | None = None  # the history's (size, mtime) as last seen
        self._journal_size = 0  # the journal's size after this writer's last commit
        self._journal_lines = 0
        self._journal_last = b""  # the journal's last line as this writer last saw it
        self._store_digest: str | None = None  # of the store file as last committed
        self._last_commit_id = ""
        self._stale: ConcurrentUpdateError | None = None  # refused until loaded again
        self._loaded = False
        # Called with a step's name before each write of a commit: the tests' crash points.
        self.before_write: Callable[[str], None] | None = None

    @property
    def name(self) -> str:
        return str(self.folder)

    # -- locking ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        shared, loaded = self.read_only, self._loaded
        with files.locked(self.folder, LOCK_FILE, shared=shared, loaded=loaded) as read_only:
            self.read_only = read_only
            yield

    # -- loading ---------------------------------------------------------------------------

    def load(self) -> Snapshot | None:
        if not self.folder.is_dir():
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
            except OSError as error:
                raise StorageError(f"{self.folder}: cannot be created: {error}") from None
        if os.path.islink(self.folder):
            raise StorageError(f"{self.folder}: a link (links are never followed)")
        self._loaded = False
        self.read_only = not os.access(self.folder, os.W_OK)
        with self._locked():
            snapshot = self._load()
        self._stale = None
        self._loaded = True
        return snapshot

    def _load(self) -> Snapshot | None:
        history_path = self._history_path
        if not self.read_only:
            for name in (HISTORY_FILE, CONTEXT_HISTORY_FILE, JOURNAL_FILE, LEGACY_STATE_FILE):
                # under the lock no writer of this folder is between its write and its rename
                remove_stale_temporaries(self.folder / name, older_than=0.0)
                remove_stale_temporaries(files.next_path(self.folder / name), older_than=0.0)
        journal = read_journal(
            self._journal_path, writable=not self.read_only, durable=self.durable
        )
        self._journal_size, self._journal_lines = journal.size, journal.lines
        self._journal_last = journal.last
        record = journal.record
        raw = files.read(history_path)
        history: list[Message] | None = None
        if record is not None:
            raw, history = repair(
                history_path,
                self._store_path,
                raw,
                record,
                journal.data,
                read_only=self.read_only,
                durable=self.durable,
            )
        del journal  # kept until the history was checked against it
        if history is None:
            history = files.parse_history(history_path, raw) if raw is not None else []
        if record is not None and len(history) < record["history_length"]:
            raise TaskFolderError(
                f"{history_path}: holds {len(history)} messages, the last commit recorded"
                f" {record['history_length']}: the file was changed by another program"
                f" (remove {JOURNAL_FILE} to start from the file as it is)"
            )
        self._ends, self._foreign, self._tail = index(history, raw)
        self._stat = self._history_stat()
        store, report = load_store(self.folder)
        self.last_load = report
        if report.status is LoadStatus.UNREADABLE:
            raise StorageError(f"{report.path}: {report.reason}")
        store_json = store.to_json() if report.status is LoadStatus.LOADED else None
        state: dict[str, Any] | None
        if record is not None:
            self._version = int(record["commit"])
            self._last_commit_id = str(record.get("commit_id", ""))
            self._store_digest = record.get("store_sha256")
            state = record["state"]
        else:
            self._version = 0
            self._store_digest = None
            state = legacy_state(self.folder / LEGACY_STATE_FILE)
        if raw is None and store_json is None and state is None:
            return None
        return Snapshot(self._version, history, store_json, state)

    def _history_stat(self) -> tuple[int, int] | None:
        return files.size_and_time(self._history_path)

    # -- committing ------------------------------------------------------------------------

    def commit(self, commit: Commit) -> int:
        if not self._loaded:  # a commit never writes over what it has not read
            self.load()
        if self.read_only:
            return self._commit_in_memory(commit)
        with self._locked():
            done = self._check_version(commit)
            if done is not None:
                return done
            self._check_history()
            try:
                return self._commit(commit)
            except OSError as error:
                raise StorageError(f"{self.folder}: commit failed: {error}") from error

    def _commit_in_memory(self, commit: Commit) -> int:
        """A read-only folder: decisions are kept in memory, messages are refused."""
        if commit.append or commit.keep != len(self._ends) - 1:
            raise StorageError(
                f"{self.folder}: the folder is read-only for this process; messages cannot be"
                " added or removed (nothing was written)"
            )
        if commit.commit_id != self._last_commit_id:
            self._version += 1
            self._last_commit_id = commit.commit_id
        return self._version

    def _check_version(self, commit: Commit) -> int | None:
        """None when ``commit`` may go ahead; its version when it already went through."""
        if commit.commit_id == self._last_commit_id and self._last_commit_id:
            return self._version  # a retry of the commit this writer made last
        if self._stale is None:
            if commit.base_version == self._version and self._journal_unchanged():
                return None
            found = self._version
            journal = files.read(self._journal_path) or b""
            record = last_line(journal, len(journal))[1]
            if record is not None:
                found = int(record["commit"])
            self._stale = ConcurrentUpdateError(self.name, commit.base_version, found)
        stale = self._stale
        raise ConcurrentUpdateError(
            stale.task, commit.base_version, stale.found, extended=stale.extended
        )

    def _journal_unchanged(self) -> bool:
        """The journal ends with the line this writer last wrote or read, at the same size."""
        path = self._journal_path
        try:
            size = os.lstat(path).st_size
        except FileNotFoundError:
            size = 0
        if size != self._journal_size:
            return False
        if not size:
            return True
        return files.ends_with(path, size, self._journal_last)

    def _check_history(self) -> None:
        """Refuse to write when another program changed the history since this writer saw it."""
        path = self._history_path
        now = self._history_stat()
        if now == self._stat and (now is None or self._foreign or self._tail_unchanged(now[0])):
            return
        raw = files.read(path)
        stored = len(self._ends) - 1
        extended = (
            raw is not None
            and extension(raw, stored, self._ends[-1] + 1, tail_digest(self._tail)) is not None
        )
        self._stale = ConcurrentUpdateError(
            self.name,
            self._version,
            self._version,
            detail=f"{path} was changed by another program since this session read it"
            + (" (messages were appended)" if extended else ""),
            extended=extended,
        )
        raise self._stale

    def _tail_unchanged(self, size: int) -> bool:
        width = min(len(self._tail), size)
        return files.ends_with(self._history_path, size, self._tail[-width:])

    def _commit(self, commit: Commit) -> int:
        history_path = self._history_path
        # fail here, before anything is written (the history and the journal were checked by
        # the load and by _check_history / _check_version since)
        if commit.store_json is not None:
            files.writable(self._store_path)
        stored = len(self._ends) - 1
        if not 0 <= commit.keep <= stored:
            raise ConfigurationError(f"commit keeps {commit.keep} of {stored} stored messages")
        encoded = [encode_message(message) for message in commit.append]
        added = []
        end = self._ends[commit.keep]
        for position, data in enumerate(encoded, commit.keep):
            end += (1 if position else 0) + len(data)
            added.append(end)
        rewrite = self._foreign or commit.keep < stored
        addition = b""
        if rewrite:
            content = self._rewritten(history_path, commit.keep, encoded)
            tail = content[-TAIL:]
            self._step("history.next")
            self._write_next(history_path, content)
        elif encoded:
            addition = (b"," if commit.keep else b"") + b",".join(encoded) + b"]"
            tail = (self._tail[:-1] + addition)[-TAIL:]
        else:
            tail = self._tail
        store_path = self._store_path
        store_digest: str | None
        if commit.store_json is not None:
            store_bytes = commit.store_json.encode("utf-8")
            store_digest = files.digest(store_bytes)
            self._step("store.next")
            self._write_next(store_path, store_bytes)
        else:
            store_digest = self._current_store_digest()
        version = self._version + 1
        record = {
            "format": "windowkeeper-journal",
            "commit": version,
            "commit_id": commit.commit_id,
            "history_length": commit.keep + len(encoded),
            "history_bytes": (added[-1] if added else self._ends[commit.keep]) + 1,
            "history_tail": tail_digest(tail),
            "store_sha256": store_digest,
            "base_bytes": self._ends[-1] + 1,
            "base_tail": tail_digest(self._tail),
            "state": commit.state,
        }
        line = encode_record(record, None if rewrite else encoded)
        last_line_before = self._journal_last
        self._step("journal")
        # the commit point: from here on the commit stands. A commit of decisions alone is not
        # synced: the next commit of messages or of the store syncs it with its own line.
        self._append_record(line, sync=bool(encoded) or rewrite or commit.store_json is not None)
        if addition:
            self._step("history")
            self._append_history(history_path, self._ends[-1], addition, last_line_before)
        self._step("renames")
        renamed = True
        try:
            if rewrite:
                os.replace(files.next_path(history_path), history_path)
            if commit.store_json is not None:
                os.replace(files.next_path(store_path), store_path)
            if rewrite:  # later appends go to the renamed file: its name must last
                self._sync_folder()
            # A store's rename is not synced: after a power loss its .next file (its name was
            # synced) is renamed in by the next load, and the next .next write syncs the folder.
        except OSError:
            renamed = False  # the commit stands: the next load renames what is left
        self._version = version
        self._last_commit_id = commit.commit_id
        if rewrite:
            del self._ends[commit.keep + 1 :]  # in place: a cut costs what it cuts, not a copy
        self._ends.extend(added)  # an append costs what it appends
        self._tail = tail
        self._foreign = False
        self._stat = self._history_stat()
        if commit.store_json is not None:
            self._store_digest = store_digest
        if not renamed:
            self._loaded = False
        elif self._journal_lines >= _JOURNAL_LIMIT or self._journal_size >= _JOURNAL_BYTES:
            self._compact_journal(history_path)
        return version

    def _current_store_digest(self) -> str | None:
        if self._store_digest is None:
            data = files.read(self._store_path)
            self._store_digest = files.digest(data) if data is not None else None
        return self._store_digest

    def _rewritten(self, path: Path, keep: int, encoded: Sequence[bytes]) -> bytes:
        """The whole new history file: the kept messages as they are on disk, then the new."""
        kept: list[bytes] = []
        if keep:
            current = files.read(path) or b"[]"
            if self._foreign:
                history = files.parse_history(path, current)[:keep]
                kept = [encode_message(message) for message in history]
            else:
                kept = [current[1 : self._ends[keep]]]
        return b"[" + b",".join([*kept, *encoded]) + b"]"

    def _step(self, name: str) -> None:
        if self.before_write is not None:
            self.before_write(name)

    def _append_history(self, path: Path, offset: int, addition: bytes, before: bytes) -> None:
        """Write ``addition`` over the closing bracket at ``offset``; on failure undo the commit.

        Not synced: the journal line, synced already, holds the messages (see :func:`replay`).
        A failed write (a full disk) puts the bracket back and removes the journal line, so the
        files are as before the commit, and raises :class:`StorageError` naming the history.
        """
        try:
            files.write_in_place(path, offset, addition, sync=False)
        except OSError as error:
            undone = True
            try:
                files.truncate(path, offset, b"]", sync=self.durable)
            except OSError:
                undone = False
            try:
                line = len(self._journal_last)
                files.truncate(self._journal_path, self._journal_size - line, sync=self.durable)
                self._journal_size -= line
                self._journal_lines -= 1
                self._journal_last = before
            except OSError:
                undone = False
            self._stat = self._history_stat()
            if not undone:
                self._loaded = False  # the next commit loads, and replays, first
            raise StorageError(
                f"{path}: cannot be written: {error.strerror or error}; the commit was"
                + (
                    " undone"
                    if undone
                    else " recorded in the journal and is completed on the next load"
                )
            ) from None

    def _write_next(self, path: Path, data: bytes) -> None:
        pending = files.next_path(path)
        mode = file_mode(path)
        try:
            atomic_write_bytes(pending, data) if self.durable else files.plain_write(pending, data)
        except OSError as error:
            raise StorageError(
                f"{pending}: cannot be written: {error.strerror or error}; nothing was committed"
            ) from None
        with contextlib.suppress(OSError):
            os.chmod(pending, mode)

    def _append_record(self, data: bytes, *, sync: bool = True) -> None:
        path = self._journal_path
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | files.NOFOLLOW
        try:
            descriptor = os.open(path, flags, file_mode(path))
        except OSError as error:
            self._drop_pending()
            raise StorageError(f"{path}: cannot be opened: {error.strerror or error}") from None
        try:
            if self._journal_size == 0:
                follow_owner(descriptor, self.folder)
            files.write_all(descriptor, data)
            if self.durable and sync:
                os.fsync(descriptor)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, self._journal_size)  # a reader skips a torn line anyway
            self._drop_pending()
            raise StorageError(
                f"{path}: cannot be written: {error.strerror or error}; nothing was committed"
            ) from None
        finally:
            os.close(descriptor)
        if self._journal_size == 0:
            self._sync_folder()
        self._journal_size += len(data)
        self._journal_lines += 1
        self._journal_last = data

    def _drop_pending(self) -> None:
        for name in (HISTORY_FILE, CONTEXT_HISTORY_FILE):
            with contextlib.suppress(OSError):
                os.unlink(files.next_path(self.folder / name))

    def _compact_journal(self, history_path: Path) -> None:
        """Rewrite the journal as its last line alone, once the history is on disk; best effort."""
        try:
            if self.durable:
                files.sync(history_path)
            path = self._journal_path
            data = self._journal_last
            atomic_write_bytes(path, data) if self.durable else files.plain_write(path, data)
        except OSError:
            return  # the long journal is still valid; the next commit tries again
        self._journal_size, self._journal_lines = len(data), 1

    def _sync_folder(self) -> None:
        if self.durable:
            fsync_folder(self.folder)

    def close(self) -> None:
        """Nothing is held between calls: the lock is taken per load and per commit."""
