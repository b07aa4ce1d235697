"""The task folder's files under a full disk, a read-only folder, a umask, links and root.

A write that fails leaves every file parseable, names the file, and the next commit after space
is freed writes a consistent folder; a power loss that lost history writes is repaired from the
journal (one fsync a commit); a folder this process cannot write opens read-only; new files
honour the umask; links are refused on read; files written as root belong to the folder's owner.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from windowkeeper import ContextSession, SQLiteStore, StorageError
from windowkeeper.cli import cli
from windowkeeper.storage import _folder_files

TASK = {"role": "user", "content": "Add pagination to the API."}
HISTORY = "api_conversation_history.json"
JOURNAL = "windowkeeper_session.jsonl"
ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


def text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": words}]}


def turn(session: ContextSession, index: int, size: int = 200) -> None:
    session.append(text("assistant", f"answer {index} " + "a" * size))
    session.append(text("user", f"result {index} " + "r" * size))
    prepared = session.prepare()
    session.record_usage({"input_tokens": prepared.estimated_tokens, "output_tokens": 7})


def assert_parseable(folder: Path) -> None:
    """What Cline and the loader read: the history is JSON, every journal line is complete."""
    json.loads((folder / HISTORY).read_bytes())
    journal = (folder / JOURNAL).read_bytes()
    assert journal.endswith(b"\n")
    for line in journal.splitlines():
        json.loads(line)
    if (folder / "context_history.json").exists():
        json.loads((folder / "context_history.json").read_bytes())


def same_as_reopened(session: ContextSession, folder: Path) -> None:
    reopened = ContextSession(200_000, task_dir=folder)
    assert reopened.history == session.history
    assert reopened.deleted_range == session.deleted_range


class TestFullDisk:
    @pytest.mark.parametrize("target", [JOURNAL, HISTORY])
    def test_a_write_failing_half_way_is_undone(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
    ) -> None:
        """ENOSPC after half the bytes: StorageError naming the file, nothing of the commit."""
        folder = tmp_path / "t"
        session = ContextSession(200_000, task_dir=folder)
        session.append(TASK)
        for index in range(3):
            turn(session, index)
        real = _folder_files.write_all
        armed = {"on": True}

        def full(descriptor: int, data: bytes) -> None:
            # what a full disk refuses: bytes past the file's last allocated block (putting the
            # closing bracket back over the bytes written is within it)
            name = os.readlink(f"/proc/self/fd/{descriptor}")
            if armed["on"] and name.endswith(target) and len(data) > 1:
                os.write(descriptor, data[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device")
            real(descriptor, data)

        monkeypatch.setattr(_folder_files, "write_all", full)  # every write of the folder
        before = session.history
        with pytest.raises(StorageError, match=target.replace(".", r"\.")):
            session.append(text("assistant", "lost to a full disk"))
        assert session.history == before
        assert_parseable(folder)
        same_as_reopened(session, folder)
        armed["on"] = False  # space freed
        session.append(text("assistant", "written once there is space"))
        assert_parseable(folder)
        same_as_reopened(session, folder)

    @pytest.mark.skipif(not ROOT, reason="mounting a tmpfs needs root")
    def test_a_real_full_disk(self, tmp_path: Path) -> None:
        """A 256 KiB tmpfs filled by the session itself, then space freed, three times over."""
        with tiny_mount(tmp_path / "mnt", "size=256k") as mount:
            folder = mount / "t"
            session = ContextSession(10_000_000, task_dir=folder)
            session.append(TASK)
            ballast = mount / "ballast"
            ballast.write_bytes(b"\0" * 40_000)
            failures = 0
            for index in range(400):
                try:
                    turn(session, index, size=3_000)
                except StorageError as error:
                    failures += 1
                    named = str(mount) in str(error)
                    assert named
                    assert_parseable(folder)
                    same_as_reopened(session, folder)
                    if failures == 3:
                        break
                    ballast.unlink(missing_ok=True)  # free space: the next commit goes through
                    session.reload()
            assert failures == 3
            session.reload()
            same_as_reopened(session, folder)


@contextlib.contextmanager
def tiny_mount(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
        check=False,
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode()[:100]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


class TestPowerLoss:
    def test_lost_history_writes_are_replayed_from_the_journal(self, tmp_path: Path) -> None:
        """The history file as it was three commits ago (its pages never reached the disk)."""
        folder = tmp_path / "t"
        session = ContextSession(200_000, task_dir=folder)
        session.append(TASK)
        turn(session, 0)
        old = (folder / HISTORY).read_bytes()
        for index in range(1, 4):
            turn(session, index)
        (folder / HISTORY).write_bytes(old[:-1] + b',{"role":"assis')  # and a torn write
        same_as_reopened(session, folder)
        assert json.loads((folder / HISTORY).read_bytes()) == session.history

    def test_an_append_commit_syncs_one_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        session = ContextSession(200_000, task_dir=tmp_path / "t")
        session.extend([TASK, text("assistant", "ok")])
        synced: list[str] = []
        real = os.fsync

        def fsync(descriptor: int) -> None:
            synced.append(os.readlink(f"/proc/self/fd/{descriptor}"))
            real(descriptor)

        monkeypatch.setattr(os, "fsync", fsync)
        session.append(text("user", "one more"))
        assert [Path(name).name for name in synced] == [JOURNAL]
        synced.clear()
        session.record_usage({"input_tokens": 50, "output_tokens": 3})  # decisions alone
        assert synced == []  # synced with the next commit of messages
        session.append(text("assistant", "and another"))
        assert [Path(name).name for name in synced] == [JOURNAL]

    def test_a_lost_commit_of_decisions_reloads_the_one_before(self, tmp_path: Path) -> None:
        """A power loss that drops the unsynced last journal line: the previous commit loads."""
        folder = tmp_path / "t"
        session = ContextSession(200_000, task_dir=folder)
        session.extend([TASK, text("assistant", "ok"), text("user", "go on")])
        journal = (folder / JOURNAL).read_bytes()
        session.record_usage({"input_tokens": 50, "output_tokens": 3})
        (folder / JOURNAL).write_bytes(journal)  # the usage's line never reached the disk
        reopened = ContextSession(200_000, task_dir=folder)
        assert reopened.history == session.history
        assert reopened.checkpoint().usage is None


class TestReadOnly:
    def make(self, folder: Path) -> ContextSession:
        session = ContextSession(200_000, task_dir=folder)
        session.append(TASK)
        turn(session, 0)
        session.append(text("assistant", "last answer"))
        session.append(text("user", "next question"))
        return session

    @contextlib.contextmanager
    def read_only(self, tmp_path: Path) -> Iterator[Path]:
        if ROOT:  # root writes anywhere: a read-only mount is what stops it
            with tiny_mount(tmp_path / "mnt", "size=1m") as mount:
                self.make(mount / "t")
                subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
                yield mount / "t"
        else:
            self.make(tmp_path / "t")
            os.chmod(tmp_path / "t", 0o555)
            try:
                yield tmp_path / "t"
            finally:
                os.chmod(tmp_path / "t", 0o755)

    def test_prepare_works_writes_raise_and_the_cli_agrees(self, tmp_path: Path) -> None:
        with self.read_only(tmp_path) as folder:
            files = {path.name: path.read_bytes() for path in folder.iterdir()}
            session = ContextSession(200_000, task_dir=folder)
            prepared = session.prepare()
            session.record_usage({"input_tokens": prepared.estimated_tokens})
            with pytest.raises(StorageError, match="read-only"):
                session.append(text("assistant", "cannot be written"))
            assert {path.name: path.read_bytes() for path in folder.iterdir()} == files
            result = CliRunner().invoke(
                cli,
                [
                    "view",
                    str(folder),
                    "--window",
                    "200000",
                    "--policy",
                    "windowkeeper",
                    "--as",
                    "anthropic",
                ],
            )
            assert result.exit_code == 0, result.output
            assert json.loads(result.output)["messages"] == prepared.messages


class TestFiles:
    @pytest.mark.parametrize(("umask", "expected"), [(0o077, 0o600), (0o022, 0o644)])
    def test_new_files_honour_the_umask(self, tmp_path: Path, umask: int, expected: int) -> None:
        folder = tmp_path / "t"
        folder.mkdir(mode=0o755)
        os.chmod(folder, 0o755)
        previous = os.umask(umask)
        try:
            session = ContextSession(200_000, task_dir=folder)
            session.extend([TASK, text("assistant", "ok")])
            session.prepare()
        finally:
            os.umask(previous)
        for path in folder.iterdir():
            assert path.stat().st_mode & 0o777 == expected, path.name

    def test_a_restricted_folder_is_never_widened(self, tmp_path: Path) -> None:
        folder = tmp_path / "t"
        folder.mkdir()
        os.chmod(folder, 0o700)
        previous = os.umask(0o022)
        try:
            ContextSession(200_000, task_dir=folder).extend([TASK, text("assistant", "ok")])
        finally:
            os.umask(previous)
        assert {path.stat().st_mode & 0o777 for path in folder.iterdir()} == {0o600}

    @pytest.mark.parametrize("name", ["context_history.json", HISTORY, JOURNAL])
    def test_a_link_in_the_folder_is_refused_on_read(self, tmp_path: Path, name: str) -> None:
        folder = tmp_path / "t"
        ContextSession(200_000, task_dir=folder).extend([TASK, text("assistant", "ok")])
        elsewhere = tmp_path / "elsewhere"
        (folder / name).rename(elsewhere)
        (folder / name).symlink_to(elsewhere)
        with pytest.raises((StorageError, ValueError), match="link"):
            ContextSession(200_000, task_dir=folder)

    def test_a_link_at_the_sqlite_path_is_refused(self, tmp_path: Path) -> None:
        real = tmp_path / "real.db"
        ContextSession(200_000, store=SQLiteStore(real, "t")).append(TASK)
        (tmp_path / "link.db").symlink_to(real)
        with pytest.raises(StorageError, match="link"):
            ContextSession(200_000, store=SQLiteStore(tmp_path / "link.db", "t"))

    def test_sqlite_closes_its_connection_when_opening_fails(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        import sqlite3

        (tmp_path / "not.db").write_bytes(b"this is not a database file at all" * 200)
        closed: list[bool] = []
        connect = sqlite3.connect

        class Spy(sqlite3.Connection):
            def close(self) -> None:
                closed.append(True)
                super().close()

        monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, factory=Spy, **k))
        with pytest.raises(StorageError, match="cannot open"):
            SQLiteStore(tmp_path / "not.db", "t").load()
        assert closed == [True]

    @pytest.mark.skipif(not ROOT, reason="changing owners needs root")
    def test_files_written_as_root_belong_to_the_folders_owner(self, tmp_path: Path) -> None:
        folder = tmp_path / "t"
        folder.mkdir()
        os.chown(folder, 4242, 4343)
        session = ContextSession(200_000, task_dir=folder)
        session.extend([TASK, text("assistant", "ok")])
        session.prepare()
        checkpoint = session.checkpoint()
        session.append(text("user", "more"))
        session.rollback(checkpoint)  # a rewrite, through .next and a rename
        for path in folder.iterdir():
            assert (path.stat().st_uid, path.stat().st_gid) == (4242, 4343), path.name


def test_postgres_reconnects_after_its_connection_broke(request: pytest.FixtureRequest) -> None:
    """A connection the server dropped is closed, and the next call opens a new one."""
    from ..postgres import postgres_store_factory

    make = postgres_store_factory(request)
    store = make("t")
    session = ContextSession(200_000, store=store)
    session.append(TASK)
    connection = store._connection  # type: ignore[attr-defined]
    with contextlib.suppress(Exception):
        connection.execute("SELECT pg_terminate_backend(pg_backend_pid())")
    with pytest.raises(StorageError):
        session.append(text("assistant", "while the connection is gone"))
    assert connection.closed
    session.append(text("assistant", "on a new connection"))
    assert store._connection is not connection  # type: ignore[attr-defined]
    with ContextSession(200_000, store=make("t")) as reopened:
        assert reopened.history[-1] == text("assistant", "on a new connection")
    session.close()


@pytest.mark.skipif(not ROOT, reason="changing owners needs root")
def test_a_database_made_as_root_belongs_to_the_folders_owner(tmp_path: Path) -> None:
    folder = tmp_path / "db"
    folder.mkdir()
    os.chown(folder, 4242, 4343)
    with ContextSession(200_000, store=SQLiteStore(folder / "tasks.db", "t")) as session:
        session.append(TASK)
    for path in folder.iterdir():
        assert (path.stat().st_uid, path.stat().st_gid) == (4242, 4343), path.name
