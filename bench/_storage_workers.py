"""What the storage bench runs in its child processes, and the store wrappers it measures with.

- :func:`turn_pair`: one agent turn (an assistant ``tool_use`` and its ``tool_result``, a few KB)
  with ids of its own, from the generated coding session of :mod:`_generated`;
- :class:`Timed`: a store that adds up the time its commits take;
- :class:`Recording`: a store that logs, before each commit, the digest of the state it will
  make (``pending``) and after it that the commit returned (``done``), as the deterministic crash
  test's wrapper does; :func:`state_digest` is the digest the parent recomputes on reload;
- :func:`crash_child`: a session doing appends, prepares that truncate and mask in a small
  window, usage, checkpoints and rollbacks, forever (until the parent kills it);
- :func:`fleet_worker`: one worker of the fleet (a process of its own).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import time
import traceback
from pathlib import Path
from typing import Any

from _generated import generated_session
from windowkeeper import ConcurrentUpdateError, ContextSession
from windowkeeper.storage import Commit, SessionStore, Snapshot

__all__ = [
    "CRASH_WINDOW",
    "FLEET_WINDOW",
    "Recording",
    "Timed",
    "crash_child",
    "fleet_worker",
    "message_digest",
    "message_key",
    "provider_tokens",
    "state_digest",
    "task_message",
    "turn_pair",
]

CRASH_WINDOW = 20_000  # tokens: a tool turn of a few KB fills it in a dozen turns
FLEET_WINDOW = 32_000
_PAIRS = 300
_ATTEMPTS = 200  # a fleet turn's tries before it gives up (reported as an error)
_SHARED = 0.2  # the share of visits to a task another worker is on
_base: list[dict[str, Any]] = []


def turn_pair(number: int, tag: str, *, big: bool = False) -> list[dict[str, Any]]:
    """Turn ``number`` of the generated session (read, edit, search, test), ids ``toolu_<tag>_<n>``.

    ``big`` makes the result about 24 KB (a long test log), more than a small window's share,
    so the session clips it on arrival.
    """
    if not _base:
        _base.extend(generated_session(2 * _PAIRS + 1))
    call, result = _base[1 + 2 * (number % _PAIRS)], _base[2 + 2 * (number % _PAIRS)]
    call_id = f"toolu_{tag}_{number}"
    content = [
        {**block, "id": call_id} if block["type"] == "tool_use" else block
        for block in call["content"]
    ]
    inner = result["content"][0]["content"]
    if big:
        log = "".join(f"tests/test_big.py::test_{row} ok ({number})\n" for row in range(600))
        inner = [{"type": "text", "text": inner[0]["text"] + "\n" + log}]
    return [
        {"role": "assistant", "content": content},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": inner}],
        },
    ]


def provider_tokens(messages: list[dict[str, Any]]) -> int:
    """The input tokens a provider reports for ``messages``: a stand-in tokenizer, one token per
    4 characters of their JSON, independent of the session's own estimate (which it calibrates)."""
    return len(json.dumps(messages, ensure_ascii=False)) // 4 + 50


def task_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": f"<task>\n{text}\n</task>"}]}


def message_key(message: dict[str, Any]) -> str:
    """A message's identity in the fleet: its call id, its result's, or the task's text."""
    for block in message.get("content") or []:
        if block.get("type") == "tool_use":
            return f"call:{block['id']}"
        if block.get("type") == "tool_result":
            return f"result:{block['tool_use_id']}"
    return f"text:{json.dumps(message['content'], sort_keys=True)[:120]}"


# -- store wrappers ----------------------------------------------------------------------------


class Timed:
    """A store that adds up the seconds its commits take (``seconds``, ``commits``, ``stores``)."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.commits = 0
        self.stores = 0  # commits that carried the overwrite store

    @property
    def name(self) -> str:
        return self.inner.name

    def load(self) -> Snapshot | None:
        return self.inner.load()

    def commit(self, commit: Commit) -> int:
        started = time.perf_counter()
        try:
            return self.inner.commit(commit)
        finally:
            self.seconds += time.perf_counter() - started
            self.commits += 1
            self.stores += commit.store_json is not None

    def close(self) -> None:
        self.inner.close()


def message_digest(message: Any) -> str:
    text = json.dumps(message, sort_keys=True, ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def state_digest(message_digests: list[str], state: Any, store_json: str | None) -> str:
    """The digest of a stored state: its history (by message digests), its state and store."""
    text = json.dumps([message_digests, state, store_json], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot_digest(snapshot: Snapshot | None) -> str | None:
    if snapshot is None:
        return None
    digests = [message_digest(message) for message in snapshot.history]
    return state_digest(digests, snapshot.state, snapshot.store_json)


class Recording:
    """A store that logs ``pending <digest>`` before each commit and ``done <digest>`` after.

    The digest is of the state the commit makes (history, state, store); the log is written with
    one ``write`` on a descriptor opened ``O_APPEND``, so a kill leaves whole lines.
    """

    def __init__(self, inner: SessionStore, log: Path) -> None:
        self.inner = inner
        self.digests: list[str] = []
        self.store: str | None = None
        self._log = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)

    @property
    def name(self) -> str:
        return self.inner.name

    def note(self, line: str) -> None:
        os.write(self._log, line.encode() + b"\n")

    def load(self) -> Snapshot | None:
        snapshot = self.inner.load()
        if snapshot is not None:
            self.digests = [message_digest(message) for message in snapshot.history]
            self.store = snapshot.store_json
        return snapshot

    def commit(self, commit: Commit) -> int:
        digests = self.digests[: commit.keep] + [message_digest(m) for m in commit.append]
        store = commit.store_json if commit.store_json is not None else self.store
        made = state_digest(digests, commit.state, store)
        self.note(f"pending {made}")
        version = self.inner.commit(commit)
        self.digests, self.store = digests, store
        self.note(f"done {made}")
        return version

    def close(self) -> None:
        self.inner.close()
        with contextlib.suppress(OSError):
            os.close(self._log)


# -- the crash child ---------------------------------------------------------------------------


def open_store(spec: dict[str, Any]) -> SessionStore:
    """The backend a crash lane runs on: ``spec["backend"]`` is folder, sqlite or postgres."""
    backend = spec["backend"]
    if backend == "folder":
        from windowkeeper.storage import TaskFolderStore

        return TaskFolderStore(spec["where"], durable=spec["durable"])
    if backend == "sqlite":
        from windowkeeper.storage import SQLiteStore

        return SQLiteStore(spec["where"], spec["task"], durable=spec["durable"])
    from windowkeeper.storage.postgres import PostgresStore

    return PostgresStore(spec["where"], spec["task"])


def crash_child(spec: dict[str, Any]) -> None:
    """Run a session on the lane's task until killed; never returns (exits 1 on an error)."""
    try:
        rng = random.Random(spec["seed"])
        recording = Recording(open_store(spec), Path(spec["log"]))
        session = ContextSession(CRASH_WINDOW, store=recording, mask_keep_recent=1)
        recording.note("ready")
        if not session.history:
            session.append(task_message("Refactor pkg and keep the tests green."))
        checkpoint = None
        number = int(spec["seed"]) % 1000 * 1000
        while True:
            last = session.history[-1]
            if last["role"] == "user":
                prepared = session.prepare(max_output_tokens=1_000)
                reported = provider_tokens(prepared.messages)
                session.record_usage({"input_tokens": reported, "output_tokens": 40})
                number += 1
                session.append(turn_pair(number, f"c{spec['seed']}")[0])
            else:
                call = next(b for b in last["content"] if b["type"] == "tool_use")
                number_of_call = int(call["id"].rsplit("_", 1)[1])
                pair = turn_pair(number_of_call, call["id"].split("_")[1], big=rng.random() < 0.1)
                session.append(pair[1])
                roll = rng.random()
                if checkpoint is None and roll < 0.08:
                    checkpoint = session.checkpoint()
                elif checkpoint is not None and roll < 0.12:
                    session.rollback(checkpoint)
                    checkpoint = None
    except BaseException:
        with contextlib.suppress(OSError):
            Path(spec["error"]).write_text(traceback.format_exc())
        os._exit(1)


# -- the fleet worker --------------------------------------------------------------------------


class _Logged:
    """A PostgresStore that logs every commit attempt: its task, base, result and latency."""

    def __init__(self, inner: SessionStore, task: str, log: list[list[Any]]) -> None:
        self.inner = inner
        self.task = task
        self.log = log

    @property
    def name(self) -> str:
        return self.inner.name

    def load(self) -> Snapshot | None:
        return self.inner.load()

    def commit(self, commit: Commit) -> int:
        started = time.perf_counter()
        keys = [message_key(dict(message)) for message in commit.append]
        try:
            version = self.inner.commit(commit)
        except ConcurrentUpdateError:
            ms = (time.perf_counter() - started) * 1000
            self.log.append([self.task, commit.base_version, -1, commit.keep, keys, ms])
            raise
        ms = (time.perf_counter() - started) * 1000
        self.log.append([self.task, commit.base_version, version, commit.keep, keys, ms])
        return version

    def close(self) -> None:
        self.inner.close()


def fleet_worker(
    *,
    index: int,
    conninfo: str,
    tasks: int,
    turns: int,
    current: Any,
    start: Any,
    out: str,
    seed: int,
) -> None:
    """Do ``turns`` turns over tasks ``0..tasks-1``; write what happened to ``out`` (JSON)."""
    import psycopg

    from windowkeeper.storage.postgres import PostgresStore

    rng = random.Random(seed)
    connection = psycopg.connect(conninfo, autocommit=True, application_name=f"fleet-{index}")
    commits: list[list[Any]] = []
    acked: list[list[Any]] = []  # [task, [keys]] of every extend/append that returned
    turn_ms: list[float] = []
    conflicts = {"extend": 0, "prepare": 0, "usage": 0, "task": 0}
    errors: list[str] = []
    visits = 0
    shared_visits = 0

    def open_task(task: str) -> ContextSession:
        store = PostgresStore(connection=connection, task_id=task, create_schema=False)
        return ContextSession(FLEET_WINDOW, store=_Logged(store, task, commits))

    def ensure_started(task: str) -> ContextSession:
        while True:
            session = open_task(task)
            if session.history:
                return session
            message = task_message(f"task {task}: opened by worker {index}")
            try:
                session.append(message)
            except ConcurrentUpdateError:
                conflicts["task"] += 1
                continue
            acked.append([task, [message_key(message)]])
            return session

    start.wait()
    done = 0
    number = 0
    while done < turns:
        others = [value for i, value in enumerate(current) if i != index and value >= 0]
        if others and rng.random() < _SHARED:
            task_number = rng.choice(others)
            shared_visits += 1
        else:
            task_number = rng.randrange(tasks)
        current[index] = task_number
        visits += 1
        task = f"task-{task_number:03d}"
        session = ensure_started(task)
        for _ in range(min(rng.randint(1, 4), turns - done)):
            number += 1
            pair = turn_pair(number, f"w{index}", big=rng.random() < 0.05)
            stage = "extend"
            started = time.perf_counter()
            for attempt in range(_ATTEMPTS):
                if attempt:  # a jittered, growing pause: the worker on the task finishes its turn
                    time.sleep(rng.uniform(0, min(0.1, 0.001 * 2**attempt)))
                try:
                    if stage == "extend":
                        session.extend(pair)
                        acked.append([task, [message_key(m) for m in pair]])
                        stage = "prepare"
                    if stage == "prepare":
                        prepared = session.prepare(max_output_tokens=2_000)
                        stage = "usage"
                    if stage == "usage":
                        session.record_usage(
                            {
                                "input_tokens": provider_tokens(prepared.messages),
                                "output_tokens": 60,
                            }
                        )
                        stage = "done"
                        break
                except ConcurrentUpdateError:
                    conflicts[stage] += 1
                    session = ensure_started(task)  # reopen: the other worker's state
                    if stage == "usage":
                        stage = "prepare"  # the usage belongs to a request of the old session
                except Exception as error:  # reported, never hidden
                    errors.append(f"{task}: {type(error).__name__}: {error}"[:300])
                    session = ensure_started(task)
            if stage != "done":
                errors.append(f"{task}: turn {number} gave up after {_ATTEMPTS} attempts")
            turn_ms.append((time.perf_counter() - started) * 1000)
            done += 1
        current[index] = -1
    connection.close()
    Path(out).write_text(
        json.dumps(
            {
                "worker": index,
                "turns": done,
                "visits": visits,
                "shared_visits": shared_visits,
                "commits": commits,
                "acked": acked,
                "turn_ms": turn_ms,
                "conflicts": conflicts,
                "errors": errors,
            }
        )
    )
