"""Every storage backend keeps the same contract: load and one all-or-nothing commit per change.

The same tests run over each backend (a task folder, durable or not, and SQLite; PostgreSQL
when its server binaries are on the machine, see ``tests/postgres.py``), first on the protocol
itself, then through a ContextSession.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    ConcurrentUpdateError,
    ContextSession,
    SQLiteStore,
    TaskFolderStore,
    validate_messages,
)
from windowkeeper.storage import Commit, SessionStore

from .conftest import Factory

TASK = {"role": "user", "content": "Add pagination to the API."}
STATE = {"version": 1, "note": "the session's decisions"}


def message(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


class TestProtocol:
    def test_nothing_stored_loads_as_none(self, backend: Factory) -> None:
        assert backend("t1").load() is None

    def test_a_commit_is_what_loads(self, backend: Factory) -> None:
        store = backend("t1")
        store.load()
        version = store.commit(Commit(0, 0, [TASK, message("assistant", "ok")], STATE, "[]"))
        loaded = backend("t1").load()
        assert loaded is not None
        assert (loaded.version, loaded.history, loaded.state) == (
            version,
            [TASK, message("assistant", "ok")],
            STATE,
        )
        assert loaded.store_json == "[]"

    def test_appends_and_cuts(self, backend: Factory) -> None:
        """``keep`` keeps a prefix; a store of None keeps the last one."""
        store = backend("t1")
        store.load()
        v1 = store.commit(Commit(0, 0, [TASK], STATE, "[]"))
        v2 = store.commit(Commit(v1, 1, [message("assistant", "a"), message("user", "b")], STATE))
        v3 = store.commit(Commit(v2, 2, [message("user", "c")], {"after": "cut"}))
        loaded = backend("t1").load()
        assert loaded is not None
        assert loaded.version == v3 == 3
        assert [m["content"] for m in loaded.history[1:]] == [
            [{"type": "text", "text": "a"}],
            [{"type": "text", "text": "c"}],
        ]
        assert loaded.state == {"after": "cut"}
        assert loaded.store_json == "[]"

    def test_a_stale_commit_is_refused_and_writes_nothing(self, backend: Factory) -> None:
        first, second = backend("t1"), backend("t1")
        first.load()
        second.load()
        first.commit(Commit(0, 0, [TASK], STATE, "[]"))
        with pytest.raises(ConcurrentUpdateError) as caught:
            second.commit(Commit(0, 0, [message("user", "other")], {"lost": True}, "[]"))
        assert (caught.value.expected, caught.value.found) == (0, 1)
        loaded = backend("t1").load()
        assert loaded is not None
        assert loaded.history == [TASK]
        assert loaded.state == STATE

    def test_a_retried_commit_applies_once(self, backend: Factory) -> None:
        """The same commit (same commit_id) sent again after it went through: no duplicate."""
        store = backend("t1")
        store.load()
        commit = Commit(0, 0, [TASK], STATE, "[]")
        assert store.commit(commit) == 1
        assert store.commit(commit) == 1
        loaded = backend("t1").load()
        assert loaded is not None
        assert loaded.history == [TASK]

    def test_tasks_are_apart(self, backend: Factory) -> None:
        one, two = backend("t1"), backend("t2")
        one.load()
        two.load()
        one.commit(Commit(0, 0, [TASK], STATE, "[]"))
        two.commit(Commit(0, 0, [message("user", "other task")], STATE, "[]"))
        loaded = backend("t1").load()
        assert loaded is not None
        assert loaded.history == [TASK]


def read_file_turn(turn: int, size: int) -> list[dict[str, Any]]:
    call = {
        "type": "tool_use",
        "id": f"t{turn}",
        "name": "read_file",
        "input": {"path": f"f{turn % 3}.py"},
    }
    body = f"# file {turn % 3}\n" + "x = 1\n" * size
    return [
        {"role": "assistant", "content": [{"type": "text", "text": f"turn {turn}"}, call]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": body}],
        },
    ]


class TestSessions:
    def test_reopen_gives_the_same_next_request(self, backend: Factory) -> None:
        """A session reopened from the backend sends what the same session kept in memory would."""
        live = ContextSession(20_000, store=backend("t1"))
        memory = ContextSession(20_000)
        for session in (live, memory):
            session.append(TASK)
            for turn in range(12):
                session.extend(read_file_turn(turn, 400))
                prepared = session.prepare(max_output_tokens=2_000)
                session.record_usage(
                    {"input_tokens": prepared.estimated_tokens, "output_tokens": 50}
                )
        live.close()
        reopened = ContextSession(20_000, store=backend("t1"))
        assert reopened.history == memory.history
        assert reopened.deleted_range == memory.deleted_range
        assert (
            reopened.prepare(max_output_tokens=2_000).messages
            == memory.prepare(max_output_tokens=2_000).messages
        )

    def test_a_second_writer_is_refused(self, backend: Factory) -> None:
        first = ContextSession(200_000, store=backend("t1"))
        first.append(TASK)
        second = ContextSession(200_000, store=backend("t1"))
        first.append(message("assistant", "first"))
        with pytest.raises(ConcurrentUpdateError):
            second.append(message("assistant", "second"))
        assert second.history == [TASK]  # refused: nothing changed in memory either
        reopened = ContextSession(200_000, store=backend("t1"))
        assert reopened.history == [TASK, message("assistant", "first")]

    def test_rollback_persists_the_cut(self, backend: Factory) -> None:
        session = ContextSession(200_000, store=backend("t1"))
        session.append(TASK)
        checkpoint = session.checkpoint()
        session.extend(read_file_turn(1, 10))
        session.prepare()
        session.rollback(checkpoint)
        session.extend(read_file_turn(2, 10))
        reopened = ContextSession(200_000, store=backend("t1"))
        assert reopened.history == session.history
        assert validate_messages(reopened.prepare().messages) == []


class TestTaskFolder:
    def test_cline_files_are_valid_after_every_commit(self, tmp_path: Path) -> None:
        session = ContextSession(20_000, task_dir=tmp_path)
        session.append(TASK)
        for turn in range(8):
            session.extend(read_file_turn(turn, 600))
            session.prepare(max_output_tokens=2_000)
            history = json.loads((tmp_path / "api_conversation_history.json").read_text())
            assert history == session.history
            store = (tmp_path / "context_history.json").read_text()
            assert store == session.manager.context_history_json()

    def test_an_append_writes_in_place(self, tmp_path: Path) -> None:
        """The history file is extended, not rewritten: same inode, the old bytes untouched."""
        session = ContextSession(200_000, task_dir=tmp_path)
        session.extend([TASK, *read_file_turn(1, 100)])
        path = tmp_path / "api_conversation_history.json"
        before, inode = path.read_bytes(), path.stat().st_ino
        session.extend(read_file_turn(2, 100))
        assert path.stat().st_ino == inode
        assert path.read_bytes()[: len(before) - 1] == before[:-1]

    def test_a_cut_then_appends_keep_the_offsets_in_place(self, tmp_path: Path) -> None:
        """A commit that cuts the history trims the message offsets in place (no copy of the
        whole list per commit), and the folder then reads back exactly what was committed."""
        from windowkeeper import TaskFolderStore

        store = TaskFolderStore(tmp_path)
        v1 = store.commit(
            Commit(0, 0, [TASK, *(message("assistant", f"m{i}") for i in range(5))], STATE, "[]")
        )
        offsets = store._ends
        v2 = store.commit(Commit(v1, 3, [message("user", "after the cut")], STATE))
        store.commit(Commit(v2, 4, [message("assistant", "next")], STATE))
        assert store._ends is offsets
        assert len(offsets) == 6
        loaded = TaskFolderStore(tmp_path).load()
        assert loaded is not None
        assert loaded.history == [
            TASK,
            message("assistant", "m0"),
            message("assistant", "m1"),
            message("user", "after the cut"),
            message("assistant", "next"),
        ]

    def test_a_history_written_by_cline_is_adopted(self, tmp_path: Path) -> None:
        """A pretty-printed history (another program's layout) is rewritten once, then appended."""
        (tmp_path / "api_conversation_history.json").write_text(json.dumps([TASK], indent=2))
        session = ContextSession(200_000, task_dir=tmp_path)
        session.append(message("assistant", "ok"))
        assert json.loads((tmp_path / "api_conversation_history.json").read_text()) == [
            TASK,
            message("assistant", "ok"),
        ]
        assert ContextSession(200_000, task_dir=tmp_path).history == session.history

    def test_the_state_file_of_version_0_1_is_read(self, tmp_path: Path) -> None:
        (tmp_path / "api_conversation_history.json").write_text(
            json.dumps([TASK, message("assistant", "a"), message("user", "b")])
        )
        state = {
            "version": 1,
            "history_length": 3,
            "deleted_range": [2, 1],
            "generation": 4,
            "last_timestamp": 10,
            "usage": [1, 2, 3, 4],
            "usage_timestamp": 9,
            "usage_generation": 4,
            "clips": [],
        }
        (tmp_path / "windowkeeper_session.json").write_text(json.dumps(state))
        session = ContextSession(200_000, task_dir=tmp_path)
        assert session.deleted_range == (2, 1)

    def test_a_history_changed_by_another_program_is_refused(self, tmp_path: Path) -> None:
        session = ContextSession(200_000, task_dir=tmp_path)
        session.extend([TASK, message("assistant", "a")])
        (tmp_path / "api_conversation_history.json").write_text(json.dumps([TASK]))
        with pytest.raises(Exception, match="changed by another program"):
            ContextSession(200_000, task_dir=tmp_path)

    def test_modes_are_kept_and_nothing_is_left_behind(self, tmp_path: Path) -> None:
        folder = tmp_path / "task"
        folder.mkdir(mode=0o700)
        session = ContextSession(20_000, task_dir=folder)
        session.append(TASK)
        for turn in range(6):
            session.extend(read_file_turn(turn, 800))
            session.prepare(max_output_tokens=2_000)
        checkpoint_free = sorted(path.name for path in folder.iterdir())
        assert checkpoint_free == [
            "api_conversation_history.json",
            "context_history.json",
            "windowkeeper.lock",
            "windowkeeper_session.jsonl",
        ]
        assert {oct(path.stat().st_mode & 0o777) for path in folder.iterdir()} == {"0o600"}


class TestExport:
    def test_a_database_task_becomes_a_cline_folder(self, tmp_path: Path) -> None:
        """windowkeeper export writes the task as a folder a session resumes exactly."""
        from click.testing import CliRunner

        from windowkeeper.cli import cli

        session = ContextSession(20_000, store=SQLiteStore(tmp_path / "tasks.db", "ticket-1"))
        session.append(TASK)
        for turn in range(6):
            session.extend(read_file_turn(turn, 800))
            session.prepare(max_output_tokens=2_000)
        session.close()
        folder = tmp_path / "exported"
        result = CliRunner().invoke(
            cli,
            ["export", str(folder), "--sqlite", str(tmp_path / "tasks.db"), "--task", "ticket-1"],
        )
        assert result.exit_code == 0, result.output
        resumed = ContextSession(20_000, task_dir=folder)
        assert resumed.history == session.history
        assert resumed.deleted_range == session.deleted_range
        assert json.loads((folder / "api_conversation_history.json").read_text()) == session.history
        again = CliRunner().invoke(
            cli,
            ["export", str(folder), "--sqlite", str(tmp_path / "tasks.db"), "--task", "ticket-1"],
        )
        assert again.exit_code == 1
        assert "already holds a task" in again.output


class TestFolderRepair:
    def test_a_crash_inside_the_repair_is_repaired(self, tmp_path: Path) -> None:
        """A torn append, then a repair cut short after its bracket: the next load mends both."""
        store = TaskFolderStore(tmp_path)
        store.load()
        store.commit(Commit(0, 0, [TASK], STATE, "[]"))
        store.commit(Commit(1, 1, [message("assistant", "a")], STATE))
        path = tmp_path / "api_conversation_history.json"
        committed = path.read_bytes()
        with path.open("r+b") as handle:  # a torn append of the next commit
            handle.seek(len(committed) - 1)
            handle.write(b',{"role":"user","content":"par')
        with path.open("r+b") as handle:  # the repair wrote its bracket, then died
            handle.seek(len(committed) - 1)
            handle.write(b"]")
        loaded = TaskFolderStore(tmp_path).load()
        assert loaded is not None
        assert loaded.history == [TASK, message("assistant", "a")]
        assert path.read_bytes() == committed

    def test_a_one_byte_torn_append(self, tmp_path: Path) -> None:
        store = TaskFolderStore(tmp_path)
        store.load()
        store.commit(Commit(0, 0, [TASK], STATE, "[]"))
        path = tmp_path / "api_conversation_history.json"
        committed = path.read_bytes()
        with path.open("r+b") as handle:
            handle.seek(len(committed) - 1)
            handle.write(b",")
        loaded = TaskFolderStore(tmp_path).load()
        assert loaded is not None
        assert path.read_bytes() == committed

    def test_a_commit_before_a_load_reads_first(self, tmp_path: Path) -> None:
        """A commit made before any load still knows what the folder holds: it appends to it."""
        (tmp_path / "api_conversation_history.json").write_text(
            json.dumps([TASK, message("assistant", "a")], indent=2)
        )
        TaskFolderStore(tmp_path).commit(Commit(0, 2, [message("user", "b")], STATE))
        history = json.loads((tmp_path / "api_conversation_history.json").read_text())
        assert history == [TASK, message("assistant", "a"), message("user", "b")]
        TaskFolderStore(tmp_path / "new").commit(Commit(0, 0, [TASK], STATE, "[]"))
        assert (tmp_path / "new" / "api_conversation_history.json").exists()


@pytest.mark.parametrize("kind", ["folder", "sqlite"])
def test_a_commit_keeping_more_than_is_stored_is_our_error(tmp_path: Path, kind: str) -> None:
    """keep beyond the stored history is a ConfigurationError (still a ValueError); nothing is written."""
    from windowkeeper import ConfigurationError

    store: SessionStore = (
        SQLiteStore(tmp_path / "tasks.db", "t1") if kind == "sqlite" else TaskFolderStore(tmp_path)
    )
    store.load()
    store.commit(Commit(0, 0, [TASK], STATE, "[]"))
    with pytest.raises(ConfigurationError, match="commit keeps 5 of 1 stored messages"):
        store.commit(Commit(1, 5, [message("assistant", "ok")], STATE))
    assert isinstance(ConfigurationError("x"), ValueError)
    loaded = store.load()
    assert loaded is not None
    assert (loaded.version, loaded.history) == (1, [TASK])
    store.close()


class TestCalibrationPersists:
    def test_a_reopened_session_estimates_as_the_closed_one(self, backend: Factory) -> None:
        """What the estimator learnt is kept with the state: same ratio, same next estimate."""
        from windowkeeper import CalibratedEstimator, ContextSession, TokenUsage

        stored = ContextSession(20_000, store=backend("t"))
        twin = ContextSession(20_000)  # the same calls, never closed
        learnt = CalibratedEstimator()
        for session in (stored, twin):
            session.append(TASK)
        for turn in range(6):
            for session in (stored, twin):
                prepared = session.prepare(max_output_tokens=500)
                size = sum(len(str(m["content"])) for m in prepared.messages)
                session.record_usage(TokenUsage(tokens_in=int(size / 4.2) + 900, tokens_out=30))
                session.append(message("assistant", f"step {turn} " + "a" * 1_500))
                session.append(message("user", f"more {turn} " + "b" * 1_500))
        stored.close()
        reopened = ContextSession(20_000, store=backend("t"), counter=learnt)
        assert learnt.chars_per_token != 3.0  # not the prior
        expected = twin.prepare(max_output_tokens=500)
        again = reopened.prepare(max_output_tokens=500)
        assert (again.estimated_tokens, again.messages) == (
            expected.estimated_tokens,
            expected.messages,
        )
        reopened.close()
