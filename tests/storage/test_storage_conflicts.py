"""Nothing acknowledged is lost, whoever else writes: stale sessions, two processes, Cline itself.

A session that lost a conflict stays refused until it reloads; two processes that retry that way
(reload, apply again, commit) lose no acknowledged message on any backend. The task folder sees
every change it did not make before it writes: another windowkeeper writer (also after the
journal was rewritten to the very size a stale writer remembers), and Cline appending to or
rewriting the history.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ConcurrentUpdateError, ContextSession, StorageError, TaskFolderStore
from windowkeeper.storage import Commit, ReadOnlyStore, _folder

from .conftest import Factory

TASK = {"role": "user", "content": "Add pagination to the API."}
STATE = {"version": 1, "note": "the session's decisions"}


def text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": words}]}


class TestStaleSessions:
    def test_a_loser_stays_refused_until_it_reloads(self, backend: Factory) -> None:
        """After ConcurrentUpdateError, prepare and append raise again; reload() lets it go on."""
        ContextSession(200_000, store=backend("t1")).append(TASK)
        winner = ContextSession(200_000, store=backend("t1"))
        loser = ContextSession(200_000, store=backend("t1"))
        winner.append(text("assistant", "winner's answer"))
        with pytest.raises(ConcurrentUpdateError):
            loser.append(text("assistant", "loser's answer"))
        with pytest.raises(ConcurrentUpdateError):
            loser.prepare()
        with pytest.raises(ConcurrentUpdateError):
            loser.append(text("assistant", "loser's answer, retried"))
        with pytest.raises(ConcurrentUpdateError):
            loser.record_usage({"input_tokens": 10, "output_tokens": 1})
        assert loser.history == [TASK]  # nothing of the refused calls was kept
        loser.reload()
        assert loser.history == [TASK, text("assistant", "winner's answer")]
        loser.append(text("user", "loser's message, re-applied"))
        stored = ContextSession(200_000, store=backend("t1")).history
        assert stored == [
            TASK,
            text("assistant", "winner's answer"),
            text("user", "loser's message, re-applied"),
        ]

    def test_reload_gives_what_a_new_session_gives(self, backend: Factory) -> None:
        first = ContextSession(2_000, store=backend("t1"))
        first.append(TASK)
        for turn in range(6):
            first.append(text("assistant", f"answer {turn} " + "x" * 800))
            first.append(text("user", f"result {turn} " + "y" * 800))
            prepared = first.prepare()
            first.record_usage({"input_tokens": prepared.estimated_tokens, "output_tokens": 9})
        other = ContextSession(2_000, store=ReadOnlyStore(backend("t1")))  # commits nothing
        first.reload()
        assert first.history == other.history
        assert first.deleted_range == other.deleted_range
        assert first.prepare().messages == other.prepare().messages

    def test_reload_without_a_store_is_refused(self) -> None:
        with pytest.raises(ValueError, match="reload"):
            ContextSession(200_000).reload()

    def test_the_folder_store_itself_stays_refused(self, tmp_path: Path) -> None:
        """The protocol level: a stale folder store refuses until load(), even at equal sizes."""
        first, second = TaskFolderStore(tmp_path / "t"), TaskFolderStore(tmp_path / "t")
        first.load()
        second.load()
        first.commit(Commit(0, 0, [TASK], STATE, "[]"))
        with pytest.raises(ConcurrentUpdateError):
            second.commit(Commit(0, 0, [TASK], STATE, "[]"))
        with pytest.raises(ConcurrentUpdateError):
            second.commit(Commit(1, 1, [text("assistant", "stale")], STATE))
        loaded = second.load()
        assert loaded is not None
        assert second.commit(Commit(loaded.version, 1, [text("assistant", "fresh")], STATE)) == 2


def _worker(make: Any, task: str, name: str, count: int, channels: Any) -> None:
    """Append ``count`` messages, retrying each refused step as documented; report each ack."""
    acked, start = channels
    session = ContextSession(200_000, store=make(task))
    start.wait()
    conflicts = 0
    for index in range(count):
        message = text("user" if index % 2 else "assistant", f"{name}-{index}")
        while True:
            try:
                session.append(message)
                break
            except ConcurrentUpdateError:
                conflicts += 1
                session.reload()
        acked.put(f"{name}-{index}")
        while True:  # a request and its usage: also retried on the stored state
            try:
                prepared = session.prepare()
                session.record_usage({"input_tokens": prepared.estimated_tokens})
                break
            except ConcurrentUpdateError:
                conflicts += 1
                session.reload()
    acked.put(("conflicts", conflicts))
    session.close()


def test_two_processes_retrying_lose_no_acknowledged_message(backend: Factory) -> None:
    """Two processes on one task, each retrying after every conflict: all acks are stored."""
    ContextSession(200_000, store=backend("race")).append(TASK)
    context = multiprocessing.get_context("fork")
    acked, start = context.Queue(), context.Barrier(2)
    workers = [
        context.Process(target=_worker, args=(backend, "race", name, 40, (acked, start)))
        for name in ("a", "b")
    ]
    for worker in workers:
        worker.start()
    replies: list[Any] = []
    while sum(isinstance(reply, tuple) for reply in replies) < 2:
        replies.append(acked.get(timeout=120))
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    stored = [
        block["text"]
        for message in ContextSession(200_000, store=backend("race")).history[1:]
        for block in message["content"]
    ]
    acknowledged = [reply for reply in replies if isinstance(reply, str)]
    assert len(acknowledged) == 80
    assert sum(reply[1] for reply in replies if isinstance(reply, tuple)) > 0  # they did race
    assert sorted(stored) == sorted(acknowledged)  # none lost, none twice
    for name in ("a", "b"):  # each writer's messages in its own order
        own = [item for item in stored if item.startswith(f"{name}-")]
        assert own == [f"{name}-{index}" for index in range(40)]


class TestForeignWriters:
    def history_path(self, folder: Path) -> Path:
        return folder / "api_conversation_history.json"

    def open_session(self, folder: Path) -> ContextSession:
        session = ContextSession(200_000, task_dir=folder)
        session.extend([TASK, text("assistant", "ok")])
        return session

    def test_cline_appending_is_taken_in_before_the_next_message(self, tmp_path: Path) -> None:
        """Cline rewrites the file (its own layout) with one more message: kept, then ours."""
        session = self.open_session(tmp_path / "t")
        path = self.history_path(tmp_path / "t")
        history = json.loads(path.read_text())
        clines = text("user", "a message Cline appended " + "x" * 300)
        path.write_text(json.dumps([*history, clines], indent=2))
        session.append(text("assistant", "windowkeeper's answer"))
        expected = [
            TASK,
            text("assistant", "ok"),
            clines,
            text("assistant", "windowkeeper's answer"),
        ]
        assert session.history == expected
        assert json.loads(path.read_text()) == expected
        assert ContextSession(200_000, task_dir=tmp_path / "t").history == expected

    def test_a_request_decided_without_clines_message_is_refused(self, tmp_path: Path) -> None:
        """prepare() after Cline appended: refused; after reload() the request includes it."""
        session = self.open_session(tmp_path / "t")
        path = self.history_path(tmp_path / "t")
        clines = text("user", "the user's next message, through Cline")
        path.write_text(json.dumps([*json.loads(path.read_text()), clines]))
        with pytest.raises(ConcurrentUpdateError, match="messages were appended"):
            session.prepare()
        session.reload()
        assert session.prepare().messages[-1] == clines

    def test_a_failure_after_taking_clines_messages_in_needs_a_reload(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        session = self.open_session(tmp_path / "t")
        path = self.history_path(tmp_path / "t")
        clines = text("user", "Cline's message")
        path.write_text(json.dumps([*json.loads(path.read_text()), clines]))
        real = TaskFolderStore._commit
        calls = {"n": 0}

        def failing(store: TaskFolderStore, commit: Commit) -> int:
            calls["n"] += 1
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(TaskFolderStore, "_commit", failing)
        with pytest.raises(StorageError):
            session.append(text("assistant", "ours"))
        monkeypatch.setattr(TaskFolderStore, "_commit", real)
        with pytest.raises(ConcurrentUpdateError):
            session.append(text("assistant", "ours, again"))
        session.reload()
        session.append(text("assistant", "ours, after the reload"))
        expected = [
            TASK,
            text("assistant", "ok"),
            clines,
            text("assistant", "ours, after the reload"),
        ]
        assert json.loads(path.read_text()) == expected
        assert calls["n"] == 1

    def test_cline_appending_in_the_same_layout_is_kept_on_reopen(self, tmp_path: Path) -> None:
        """An append written exactly as windowkeeper writes is Cline's, not a crash leftover."""
        self.open_session(tmp_path / "t")
        path = self.history_path(tmp_path / "t")
        raw = path.read_bytes()
        clines = text("user", "Cline's next message")
        path.write_bytes(raw[:-1] + b"," + _folder.encode_message(clines) + b"]")
        reopened = ContextSession(200_000, task_dir=tmp_path / "t")
        assert reopened.history == [TASK, text("assistant", "ok"), clines]
        reopened.append(text("assistant", "next"))
        assert json.loads(path.read_text())[-2:] == [clines, text("assistant", "next")]

    def test_a_changed_message_is_a_conflict_and_nothing_is_written(self, tmp_path: Path) -> None:
        session = self.open_session(tmp_path / "t")
        path = self.history_path(tmp_path / "t")
        rewritten = json.dumps([TASK, text("assistant", "Cline changed this answer")])
        path.write_text(rewritten)
        with pytest.raises(ConcurrentUpdateError, match="changed by another program"):
            session.append(text("user", "more"))
        assert path.read_text() == rewritten  # never written at a stale offset
        with pytest.raises(ConcurrentUpdateError):
            session.prepare()

    def test_a_rewrite_of_the_same_size_and_tail_is_seen(self, tmp_path: Path) -> None:
        """Only the modification time tells: the file is checked before every write."""
        session = self.open_session(tmp_path / "t")
        path = self.history_path(tmp_path / "t")
        raw = path.read_bytes()
        changed = raw.replace(b"Add pagination", b"Add navigation")
        assert len(changed) == len(raw)
        path.write_bytes(changed)
        status = os.stat(path)
        os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000))
        with pytest.raises(ConcurrentUpdateError):
            session.append(text("user", "more"))
        assert path.read_bytes() == changed

    def test_the_journal_rewritten_to_the_same_size_is_seen(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """No ABA: a journal compacted and grown back to the size a stale writer saw."""
        monkeypatch.setattr(_folder, "_JOURNAL_LIMIT", 2)
        folder = tmp_path / "t"
        writer = TaskFolderStore(folder)
        writer.load()
        version = writer.commit(Commit(0, 0, [TASK], STATE, "[]"))
        version = writer.commit(Commit(version, 1, [text("assistant", "ok")], STATE))
        version = writer.commit(Commit(version, 2, [], STATE))
        journal = folder / "windowkeeper_session.jsonl"
        assert journal.read_bytes().count(b"\n") == 1  # compacted
        stale = TaskFolderStore(folder)
        stale_version = stale.load().version  # type: ignore[union-attr]
        size = journal.stat().st_size
        fresh = TaskFolderStore(folder)
        fresh.load()
        fresh.commit(Commit(version, 2, [], STATE))  # the same line, but for its commit_id
        assert journal.stat().st_size == size
        with pytest.raises(ConcurrentUpdateError):
            stale.commit(Commit(stale_version, 2, [text("user", "stale")], STATE))
        assert TaskFolderStore(folder).load().history == [TASK, text("assistant", "ok")]  # type: ignore[union-attr]
