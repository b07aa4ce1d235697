"""Persistence: atomic saves, failures that never raise, corrupt files set aside, crash safety.

The crash test forks writers and SIGKILLs them at random moments (200 times); the
concurrency test runs two writers on one folder while the test reads it. Both need ``fork``.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import random
import signal
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ContextManager, EditType, LoadStatus, OverwriteStore
from windowkeeper.core._overwrites import text_update
from windowkeeper.storage import atomic_write_text, load_store

FILE = "context_history.json"
CRASH_ITERATIONS = 200
CAP = 120  # the crash writer starts over after this many updates

needs_fork = pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"
)


def a_store(count: int, tag: str = "w") -> OverwriteStore:
    """The store a writer has after its first ``count`` updates (deterministic)."""
    store = OverwriteStore()
    for k in range(count):
        update = text_update(1_000 + k, f"{tag}{k} " + "ü😀 file contents " * 60, [])
        store.record(2 + k % 11, EditType.READ_FILE_TOOL, k % 3, update)
    return store


def manager_with(store: OverwriteStore) -> ContextManager:
    manager = ContextManager()
    manager.store = store
    return manager


def leftovers(folder: Path) -> list[Path]:
    return sorted(folder.glob(f".{FILE}.*.tmp"))


class TestAtomicSave:
    """A save replaces the whole file at once."""

    def test_writes_exactly_the_json(self, tmp_path: Path) -> None:
        """The file holds the store's JSON as UTF-8, with no temporary file left."""
        store = a_store(3)
        assert manager_with(store).save_context_history(tmp_path)
        assert (tmp_path / FILE).read_bytes() == store.to_json().encode("utf-8")
        assert not leftovers(tmp_path)

    def test_replaces_rather_than_rewrites(self, tmp_path: Path) -> None:
        """The new file is a new inode renamed over the old one, so a reader holds one or the other."""
        assert manager_with(a_store(1)).save_context_history(tmp_path)
        with (tmp_path / FILE).open("rb") as reader:
            assert manager_with(a_store(2)).save_context_history(tmp_path)
            assert reader.read() == a_store(1).to_json().encode("utf-8")
        assert (tmp_path / FILE).read_bytes() == a_store(2).to_json().encode("utf-8")

    @pytest.mark.parametrize(("folder", "expected"), [(0o700, 0o600), (0o755, 0o644)])
    def test_a_new_file_follows_the_folder(
        self, tmp_path: Path, folder: int, expected: int
    ) -> None:
        """A new file gets the folder's read and write bits: private in a private folder."""
        tmp_path.chmod(folder)
        atomic_write_text(tmp_path / FILE, "[]")
        assert stat.S_IMODE((tmp_path / FILE).stat().st_mode) == expected

    def test_a_replaced_file_keeps_its_mode(self, tmp_path: Path) -> None:
        """Replacing a file the user restricted to 0600 in a 0755 folder keeps it 0600."""
        tmp_path.chmod(0o755)
        (tmp_path / FILE).write_text("[]")
        (tmp_path / FILE).chmod(0o600)
        atomic_write_text(tmp_path / FILE, "[1]")
        assert stat.S_IMODE((tmp_path / FILE).stat().st_mode) == 0o600

    def test_a_link_is_replaced_not_followed(self, tmp_path: Path) -> None:
        """A symlink at the target is replaced by the file; what it pointed to is untouched."""
        outside = tmp_path / "outside.json"
        outside.write_text("keep")
        folder = tmp_path / "task"
        folder.mkdir()
        (folder / FILE).symlink_to(outside)
        atomic_write_text(folder / FILE, "[]")
        assert outside.read_text() == "keep"
        assert not (folder / FILE).is_symlink()

    def test_a_failed_write_keeps_the_previous_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A disk error mid-save returns False, logs, and leaves the old file and no temporary."""
        assert manager_with(a_store(2)).save_context_history(tmp_path)

        def full(descriptor: int) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "fsync", full)
        with caplog.at_level(logging.ERROR, logger="windowkeeper"):
            assert manager_with(a_store(5)).save_context_history(tmp_path) is False
        assert "No space left on device" in caplog.text
        assert (tmp_path / FILE).read_bytes() == a_store(2).to_json().encode("utf-8")
        assert not leftovers(tmp_path)


class TestSaveFailures:
    """Saving never raises on I/O errors: it logs and returns False, as the original swallows them."""

    def test_folder_that_is_a_file(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        """The task folder path names a file: False, logged, and that file untouched."""
        blocker = tmp_path / "task"
        blocker.write_text("previous contents", encoding="utf-8")
        manager = manager_with(a_store(2))
        with caplog.at_level(logging.ERROR, logger="windowkeeper"):
            assert manager.save_context_history(blocker) is False
        assert [record.name for record in caplog.records] == ["windowkeeper"]
        assert str(blocker / FILE) in caplog.text
        assert blocker.read_text(encoding="utf-8") == "previous contents"

    def test_a_missing_folder(self, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
        """A folder that does not exist is not created; the save fails quietly."""
        with caplog.at_level(logging.ERROR, logger="windowkeeper"):
            assert manager_with(a_store(1)).save_context_history(tmp_path / "gone") is False
        assert not (tmp_path / "gone").exists()
        assert caplog.records

    def test_the_target_is_a_folder(self, tmp_path: Path) -> None:
        """``context_history.json`` being a folder fails the save and leaves the folder."""
        (tmp_path / FILE).mkdir()
        (tmp_path / FILE / "keep").write_text("x", encoding="utf-8")
        assert manager_with(a_store(1)).save_context_history(tmp_path) is False
        assert (tmp_path / FILE / "keep").read_text(encoding="utf-8") == "x"
        assert not leftovers(tmp_path)

    def test_operations_that_save_do_not_raise(self, tmp_path: Path) -> None:
        """Rollback and the notice trigger save through the same quiet path."""
        blocker = tmp_path / "task"
        blocker.write_text("", encoding="utf-8")
        manager = manager_with(a_store(2))
        manager.truncate_context_history(0, blocker)
        history = [{"role": "user", "content": [{"type": "text", "text": "t"}]}]
        manager.trigger_apply_standard_context_truncation_notice_change(5, blocker, history)
        assert manager.store.message_indices() == [1, 0]


class TestLoad:
    """``initialize_context_history`` reports what it found and never loses a file."""

    def test_missing_file(self, tmp_path: Path) -> None:
        """No file: an empty store, reported MISSING, nothing logged."""
        manager = manager_with(a_store(2))
        report = manager.initialize_context_history(tmp_path)
        assert report.status is LoadStatus.MISSING
        assert report.ok
        assert report.path == tmp_path / FILE
        assert len(manager.store) == 0
        assert manager.last_load == report

    def test_loaded_file(self, tmp_path: Path) -> None:
        """A good file loads, reported LOADED."""
        (tmp_path / FILE).write_text(a_store(4).to_json(), encoding="utf-8")
        manager = ContextManager()
        report = manager.initialize_context_history(tmp_path)
        assert report.status is LoadStatus.LOADED
        assert report.ok
        assert manager.store == a_store(4)

    def test_corrupt_file_is_set_aside_and_reported(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An unusable file gives an empty store, is logged with the reason, and moved aside."""
        broken = b'[[2,[2,[[0,[[1,"text",["half a fi'
        (tmp_path / FILE).write_bytes(broken)
        manager = manager_with(a_store(2))
        with caplog.at_level(logging.WARNING, logger="windowkeeper"):
            report = manager.initialize_context_history(tmp_path)
        assert report.status is LoadStatus.CORRUPT
        assert not report.ok
        assert report.reason.startswith("not JSON")
        assert report.set_aside is not None
        assert report.set_aside.name.startswith(f"{FILE}.corrupt-")
        assert report.set_aside.read_bytes() == broken
        assert not (tmp_path / FILE).exists()
        assert len(manager.store) == 0
        assert report.reason in caplog.text
        assert str(report.set_aside) in caplog.text

        assert manager_with(a_store(3)).save_context_history(tmp_path)
        assert report.set_aside.read_bytes() == broken
        assert (tmp_path / FILE).read_bytes() == a_store(3).to_json().encode("utf-8")

    def test_layout_errors_name_the_place(self, tmp_path: Path) -> None:
        """A valid JSON file in the wrong layout is corrupt too, and the reason says where."""
        (tmp_path / FILE).write_text("[[1,[0,[[0,[]],7]]]]", encoding="utf-8")
        report = ContextManager().initialize_context_history(tmp_path)
        assert report.status is LoadStatus.CORRUPT
        assert report.reason.startswith("[0][1][1][1]: ")

    def test_a_second_corrupt_file_never_replaces_the_first(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Two corrupt loads in the same millisecond keep both files."""
        monkeypatch.setattr(time, "time_ns", lambda: 1_700_000_000_000_000_000)
        asides = []
        for text in ("{", "42"):
            (tmp_path / FILE).write_text(text, encoding="utf-8")
            report = ContextManager().initialize_context_history(tmp_path)
            assert report.set_aside is not None
            asides.append(report.set_aside)
        assert asides[0] != asides[1]
        assert [path.read_text(encoding="utf-8") for path in asides] == ["{", "42"]

    def test_unreadable_file_is_reported_not_moved(self, tmp_path: Path) -> None:
        """A file that cannot be read (here: a folder) gives UNREADABLE and stays where it is."""
        (tmp_path / FILE).mkdir()
        report = ContextManager().initialize_context_history(tmp_path)
        assert report.status is LoadStatus.UNREADABLE
        assert report.set_aside is None
        assert (tmp_path / FILE).is_dir()

    def test_invalid_utf8_reads_as_replacement_characters(self, tmp_path: Path) -> None:
        """Bytes that are not UTF-8 decode to U+FFFD, as node's readFile does."""
        (tmp_path / FILE).write_bytes(b'[[1,[0,[[0,[[1,"text",["a\xffb"],[]]]]]]]]')
        manager = ContextManager()
        assert manager.initialize_context_history(tmp_path).status is LoadStatus.LOADED
        assert manager.store.effective_text(1, 0) == "a\ufffdb"

    def test_stale_temporary_files_are_removed(self, tmp_path: Path) -> None:
        """Leftovers of killed writers go once an hour old; a fresh one may be a live writer's."""
        old = tmp_path / f".{FILE}.0123456789ab.tmp"
        fresh = tmp_path / f".{FILE}.ba9876543210.tmp"
        other = tmp_path / ".other.json.0123456789ab.tmp"
        for path in (old, fresh, other):
            path.write_text("[", encoding="utf-8")
        two_hours_ago = time.time() - 7200
        os.utime(old, (two_hours_ago, two_hours_ago))
        os.utime(other, (two_hours_ago, two_hours_ago))
        load_store(tmp_path)
        assert not old.exists()
        assert fresh.exists()
        assert other.exists()


# -- crash safety ---------------------------------------------------------------------------------


def _die_at(calls: int, stage: str) -> None:
    """In a forked writer: SIGKILL this process at the ``calls``-th write, at ``stage`` of it.

    ``"written"``: the temporary file holds the data, not yet renamed (it is left behind);
    ``"renaming"``: just before the rename; ``"renamed"``: just after it, before the folder's
    fsync. The crash point is chosen by the parent, never by scheduling.
    """
    count = {"n": 0}
    real_fsync, real_replace = os.fsync, os.replace

    def kill() -> None:
        os.kill(os.getpid(), signal.SIGKILL)

    def fsync(descriptor: int) -> None:
        real_fsync(descriptor)
        if stage == "written" and stat.S_ISREG(os.fstat(descriptor).st_mode):
            count["n"] += 1
            if count["n"] == calls:
                kill()

    def replace(source: Any, target: Any) -> None:
        if stage != "written":
            count["n"] += 1
            if count["n"] == calls and stage == "renaming":
                kill()
        real_replace(source, target)
        if stage == "renamed" and count["n"] == calls:
            kill()

    os.fsync = fsync  # type: ignore[assignment]
    os.replace = replace  # type: ignore[assignment]


def _crash_writer(folder: str, calls: int, stage: str) -> None:
    """Resume from the saved store and keep growing it, saving after every update, until killed."""
    _die_at(calls, stage)
    manager = ContextManager()
    report = manager.initialize_context_history(folder)
    if not report.ok:
        os._exit(3)
    count = sum(len(block.updates) for entry in manager.store.entries() for block in entry.blocks)
    while True:
        if count >= CAP:
            manager.truncate_context_history(0, folder)  # back to the empty store, saved
            count = 0
        k = count
        update = text_update(1_000 + k, f"w{k} " + "ü😀 file contents " * 60, [])
        manager.store.record(2 + k % 11, EditType.READ_FILE_TOOL, k % 3, update)
        manager.save_context_history(folder)
        count += 1


def _concurrent_writer(folder: str, tag: str, saves: int) -> None:
    manager = ContextManager()
    for k in range(saves):
        update = text_update(1_000 + k, f"{tag}{k} " + "ü😀 file contents " * 60, [])
        manager.store.record(2 + k % 11, EditType.READ_FILE_TOOL, k % 3, update)
        if not manager.save_context_history(folder):
            os._exit(4)
    os._exit(0)


@needs_fork
class TestCrashSafety:
    """Whatever moment a writer dies at, the file on disk is a whole store it meant to write."""

    def test_sigkill_at_chosen_moments(self, tmp_path: Path) -> None:
        """200 writers killed inside their N-th write: the file always loads as one of their stores."""
        expected = {a_store(count).to_json(): count for count in range(CAP + 1)}
        context = multiprocessing.get_context("fork")
        chance = random.Random(20240611)
        seen: set[int] = set()
        stages = ("written", "renaming", "renamed")
        for iteration in range(CRASH_ITERATIONS):
            stage = stages[iteration % 3]
            calls = chance.randint(1, 40)
            writer = context.Process(
                target=_crash_writer, args=(str(tmp_path), calls, stage), daemon=True
            )
            writer.start()
            writer.join(30)
            assert writer.exitcode == -signal.SIGKILL, f"the writer was not killed ({stage})"
            path = tmp_path / FILE
            if not path.exists():
                continue  # killed inside its first save
            text = path.read_bytes().decode("utf-8")
            store = OverwriteStore.from_json(text)  # raises if the file were torn
            assert text in expected
            assert store == a_store(expected[text])
            seen.add(expected[text])
        assert not list(tmp_path.glob(f"{FILE}.corrupt-*"))
        assert len(seen) > 20, f"the writers got too little done: {sorted(seen)}"
        # Kills after the data was written and before the rename leave the temporary file.
        assert leftovers(tmp_path)

    def test_two_writers_on_one_folder(self, tmp_path: Path) -> None:
        """Two processes with their own manager save into one folder: every read is a whole store."""
        saves = 150
        possible: dict[str, str] = {}
        for tag in ("a", "b"):
            store = OverwriteStore()
            for k in range(saves):
                update = text_update(1_000 + k, f"{tag}{k} " + "ü😀 file contents " * 60, [])
                store.record(2 + k % 11, EditType.READ_FILE_TOOL, k % 3, update)
                possible[store.to_json()] = tag
        context = multiprocessing.get_context("fork")
        writers = [
            context.Process(target=_concurrent_writer, args=(str(tmp_path), tag, saves))
            for tag in ("a", "b")
        ]
        for writer in writers:
            writer.start()
        reads = {"a": 0, "b": 0}
        while any(writer.is_alive() for writer in writers):
            text = _read_store_text(tmp_path)  # raises if a file were torn
            if text is not None:
                reads[possible[text]] += 1
            report = ContextManager().initialize_context_history(tmp_path)
            assert report.status in (LoadStatus.LOADED, LoadStatus.MISSING), report
        for writer in writers:
            writer.join(10)
            assert writer.exitcode == 0
        final = (tmp_path / FILE).read_text(encoding="utf-8")
        assert final in possible
        assert sum(reads.values()) > 0
        assert not list(tmp_path.glob(f"{FILE}.corrupt-*"))
        assert not leftovers(tmp_path)


def _read_store_text(folder: Path) -> str | None:
    try:
        text = (folder / FILE).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    OverwriteStore.from_json(text)
    return text
