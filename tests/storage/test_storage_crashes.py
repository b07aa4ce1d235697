"""A task folder survives a crash at any write: it reloads as a state some commit produced.

A forked child runs a session (appends, prepares that mask and truncate, usage, a rollback) on a
task folder and is SIGKILLed at the N-th write of a commit, through the store's ``before_write``
hook: before the write, or in the middle of it (a torn write: half of the bytes, then death).
Nothing depends on scheduling: the session's clock is a counter, so the child makes exactly the
writes the parent counted, and every crash point is reached. Before each commit the child logs
the state that commit makes, and after it that the commit returned. The parent then reloads the
folder: what loads must be the last returned commit or the one that was under way, and the
session built on it must send a valid request.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import random
import signal
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ContextSession, TaskFolderStore, validate_messages
from windowkeeper.storage import Commit, Snapshot

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

TORN = {"history", "journal"}  # steps that write in place, where a torn write is possible


def digest(history: list[Any], state: Any, store: str | None) -> str:
    text = json.dumps([history, state, store], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class Recording:
    """A SessionStore around a folder store that logs what each commit makes."""

    def __init__(self, inner: TaskFolderStore, log: Path) -> None:
        self.inner = inner
        self.log = log
        self.history: list[Any] = []
        self.store: str | None = None

    @property
    def name(self) -> str:
        return self.inner.name

    def load(self) -> Snapshot | None:
        return self.inner.load()

    def commit(self, commit: Commit) -> int:
        history = self.history[: commit.keep] + list(commit.append)
        store = commit.store_json if commit.store_json is not None else self.store
        made = digest(history, commit.state, store)
        self._write(f"pending {made}\n")
        version = self.inner.commit(commit)
        self.history, self.store = history, store
        self._write(f"done {made}\n")
        return version

    def _write(self, line: str) -> None:
        with self.log.open("a") as handle:
            handle.write(line)

    def close(self) -> None:
        self.inner.close()


def new_session(store: Any) -> ContextSession:
    """The workload's session: a small window, and a clock that ticks once per call."""
    ticks = itertools.count(1_760_000_000_000, 1_000)
    return ContextSession(20_000, store=store, mask_keep_recent=1, clock=lambda: next(ticks))


def workload(session: ContextSession) -> None:
    """About 40 commits: tool turns with large outputs in a small window, usage, a rollback."""
    session.append({"role": "user", "content": "Task: refactor the service."})
    checkpoint = None
    for turn in range(14):
        call = {
            "type": "tool_use",
            "id": f"t{turn}",
            "name": "run",
            "input": {"cmd": f"job {turn}"},
        }
        session.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"step {turn}"}, call]}
        )
        output = f"output {turn} " + "z" * (2_500 + 300 * (turn % 4))
        session.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": output}],
            }
        )
        prepared = session.prepare(max_output_tokens=1_000)
        session.record_usage({"input_tokens": prepared.estimated_tokens, "output_tokens": 40})
        if turn == 4:
            checkpoint = session.checkpoint()
        if turn == 9 and checkpoint is not None:
            session.rollback(checkpoint)


def run_child(folder: Path, log: Path, crash_at: int, torn: bool) -> int:
    """Run the workload in a forked child SIGKILLed at write ``crash_at``; its exit status."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            inner = TaskFolderStore(folder)
            steps = {"n": 0}

            def before_write(step: str) -> None:
                steps["n"] += 1
                if steps["n"] != crash_at:
                    return
                if torn and step in TORN:
                    name = (
                        "api_conversation_history.json"
                        if step == "history"
                        else "windowkeeper_session.jsonl"
                    )
                    with (folder / name).open("r+b") as handle:
                        handle.seek(0, os.SEEK_END)
                        if step == "history":  # in place, over the closing bracket
                            handle.seek(max(handle.tell() - 1, 0))
                        handle.write(b',{"role":"assistant","content":[{"ty')
                        handle.flush()
                os.kill(os.getpid(), signal.SIGKILL)

            inner.before_write = before_write
            workload(new_session(Recording(inner, log)))
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def count_writes(tmp_path: Path) -> int:
    counted = {"n": 0}
    inner = TaskFolderStore(tmp_path / "count")
    inner.before_write = lambda step: counted.__setitem__("n", counted["n"] + 1)
    workload(new_session(inner))
    return counted["n"]


def test_every_crash_reloads_a_committed_state(tmp_path: Path) -> None:
    """Crash points spread over the whole run, each reloads consistently and sends validly."""
    total = count_writes(tmp_path)
    rng = random.Random(20261201)
    points = sorted(rng.sample(range(1, total + 1), min(total, 60)))
    checked = 0
    for crash_at in points:
        for torn in (False, True):
            folder = tmp_path / f"crash-{crash_at}-{torn}"
            log = tmp_path / f"crash-{crash_at}-{torn}.log"
            assert run_child(folder, log, crash_at, torn) == -signal.SIGKILL  # killed, not done
            lines = log.read_text().split("\n") if log.exists() else []
            allowed = set()
            done = [line.split()[1] for line in lines if line.startswith("done")]
            pending = [line.split()[1] for line in lines if line.startswith("pending")]
            if done:
                allowed.add(done[-1])
            if len(pending) > len(done):
                allowed.add(pending[-1])
            snapshot = TaskFolderStore(folder).load()
            if snapshot is None:
                assert not done  # nothing had been committed
                continue
            assert digest(snapshot.history, snapshot.state, snapshot.store_json) in allowed, (
                crash_at,
                torn,
            )
            session = ContextSession(20_000, task_dir=folder)
            history = json.loads((folder / "api_conversation_history.json").read_text())
            assert history == session.history  # what Cline reads is the same history
            if session.history[-1]["role"] == "user":
                assert validate_messages(session.prepare(max_output_tokens=1_000).messages) == []
            checked += 1
    assert checked >= 100
