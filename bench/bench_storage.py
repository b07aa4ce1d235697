"""Storage that scales: per-turn persistence cost, crash safety under SIGKILL, two writers, a fleet.

Run with ``.venv/bin/python bench/bench_storage.py`` (``make bench`` runs it after the evaluation);
``--quick`` is a smoke check in well under a minute. It prints every table and writes
``docs/storage.md`` (``--quick`` and ``--only PART`` write no docs unless ``--docs DIR`` is
given). Four measurements:

1. **Per turn.** A session of the generated coding session (:mod:`_generated`: a tool_use and a
   tool_result of a few KB per turn) at histories of 1k, 5k and 20k messages, for each backend:
   the task folder (durable and not), SQLite (durable and not), PostgreSQL (fsync on and off:
   two servers started here) and no store. The history is built with one ``extend``; then 10
   turns warm up and 200 are timed, a turn being ``extend`` (2 messages) + ``prepare`` +
   ``record_usage`` in a 200k window; all the sessions take their timed turns in rotation, so
   a change of the disk's speed reaches them alike. Reported per turn: the session's time, the
   time its commits took (a wrapper around the store), the bytes written (``wchar`` of
   ``/proc/<pid>/io``: this process, or the server's processes for PostgreSQL), PostgreSQL's
   WAL, and the growth of what is stored; then the exponent of a log-log fit of the medians
   against the history length.
2. **Crash safety.** A child process runs a session (appends, prepares that truncate and mask in
   a 20k window, usage, checkpoints and rollbacks) and is SIGKILLed after a random delay; the
   next child resumes the same task (ten kills a lane, then a new task). Before each commit the
   child logs the digest of the state it makes, after it that the commit returned. Each reload
   must be the last returned commit or the one under way, with the files (history, store) what
   the journal says, and the next request valid (:func:`windowkeeper.validate_messages`).
3. **Two writers retrying.** Two processes on one task, each appending its messages and on
   :class:`~windowkeeper.ConcurrentUpdateError` reloading and retrying (:mod:`_retry`), on every
   backend: acknowledged messages per second, conflicts, and none lost, twice or out of order.
4. **Fleet.** 8 worker processes share 200 tasks in one PostgreSQL database: each picks a task
   (20 % of the time one another worker is on), does 1-4 turns, and on
   :class:`~windowkeeper.ConcurrentUpdateError` reopens the task and retries. Every commit is
   logged; at the end each task's versions must form one chain, the stored history must be
   exactly what the acknowledged commits built (no acknowledged message lost, none twice, none
   out of order), and every refused commit must have raised.

Numbers go into the docs, never into test assertions.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import math
import multiprocessing
import os
import platform
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _generated import generated_session
from _postgres import Cluster, PostgresUnavailableError
from _retry import measure_retry, retry_rows
from _storage_workers import (
    CRASH_WINDOW,
    FLEET_WINDOW,
    Timed,
    crash_child,
    fleet_worker,
    message_key,
    open_store,
    snapshot_digest,
)
from windowkeeper import ContextSession, validate_messages
from windowkeeper.storage import ReadOnlyStore, SessionStore, SQLiteStore, TaskFolderStore

ROOT = Path(__file__).resolve().parent.parent
TURN_WINDOW = 200_000


@dataclass(frozen=True)
class Settings:
    lengths: tuple[int, ...]
    turns: int
    warm_up: int
    kills: dict[str, int]
    lane: int
    max_delay: float
    workers: int
    tasks: int
    fleet_turns: int
    retry_messages: int = 200


FULL = Settings(
    lengths=(1_000, 5_000, 20_000),
    turns=200,
    warm_up=10,
    kills={"folder": 100, "folder-fast": 100, "sqlite": 50, "postgres": 50},
    lane=10,
    max_delay=0.5,
    workers=8,
    tasks=200,
    fleet_turns=600,
)
QUICK = Settings(
    lengths=(200, 1_000),
    turns=12,
    warm_up=2,
    kills={"folder": 6, "folder-fast": 6, "sqlite": 3, "postgres": 3},
    lane=3,
    max_delay=0.3,
    workers=8,
    tasks=200,
    fleet_turns=12,
    retry_messages=20,
)


# -- numbers ----------------------------------------------------------------------------------


def median(samples: list[float]) -> float:
    return statistics.median(samples) if samples else math.nan


def p95(samples: list[float]) -> float:
    """The 95th percentile as bench/_timing.py takes it: the sample at index ⌊0.95 n⌋."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


def exponent(points: list[tuple[int, float]]) -> float:
    """The slope of a least-squares fit of log(value) against log(length)."""
    usable = [(math.log(x), math.log(y)) for x, y in points if y > 0]
    if len(usable) < 2:
        return math.nan
    mean_x = statistics.fmean(x for x, _ in usable)
    mean_y = statistics.fmean(y for _, y in usable)
    spread = sum((x - mean_x) ** 2 for x, _ in usable)
    return sum((x - mean_x) * (y - mean_y) for x, y in usable) / spread


def ms(value: float) -> str:
    if math.isnan(value):
        return "—"
    return f"{value:.2f}" if value < 100 else f"{value:.0f}"


def size(value: float) -> str:
    if math.isnan(value):
        return "—"
    if value < 1024:
        return f"{value:.0f} B"
    if value < 1024**2:
        return f"{value / 1024:.1f} KiB"
    return f"{value / 1024**2:.2f} MiB"


def table(header: list[str], rows: list[list[str]], right: int = 1) -> list[str]:
    """A markdown table; columns from ``right`` on are right-aligned."""
    align = ["---" if i < right else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


# -- 1. per-turn cost -------------------------------------------------------------------------


def _io(pid: str = "self") -> int:
    """The bytes a process has passed to ``write`` calls so far (``wchar``), 0 when unknown.

    Not ``write_bytes``: that counts page-cache folios as they are dirtied, and on this kernel a
    folio can be 256 KiB, so rewriting one 8 KiB WAL page counts 256 KiB.
    """
    try:
        with open(f"/proc/{pid}/io") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key == "wchar":
                    return int(value)
    except (OSError, ValueError):
        pass
    return 0


def _folder_size(folder: Path) -> int:
    return sum(entry.stat().st_size for entry in folder.iterdir() if entry.is_file())


@dataclass
class Backend:
    """How one backend of measurement 1 is opened, measured and removed."""

    key: str
    label: str
    open: Callable[[str], SessionStore | None]  # run id -> the store (None: no persistence)
    written: Callable[[], tuple[int, int]]  # (bytes passed to write calls, WAL bytes) so far
    stored: Callable[[str], int]  # run id -> bytes held
    remove: Callable[[str], None]
    settle: Callable[[str], None] = lambda run: None  # checkpoint what the build left


def _local_written() -> tuple[int, int]:
    return _io(), 0


def backends(tmp: Path, clusters: dict[bool, Cluster]) -> list[Backend]:
    def folder(durable: bool) -> Backend:
        key = "folder" if durable else "folder-fast"
        return Backend(
            key,
            f"task folder, durable={durable}",
            lambda run: TaskFolderStore(tmp / f"{key}-{run}", durable=durable),
            _local_written,
            lambda run: _folder_size(tmp / f"{key}-{run}"),
            lambda run: shutil.rmtree(tmp / f"{key}-{run}", ignore_errors=True),
        )

    def sqlite(durable: bool) -> Backend:
        key = "sqlite" if durable else "sqlite-fast"

        def path(run: str) -> Path:
            return tmp / f"{key}-{run}.db"

        def stored(run: str) -> int:
            return sum(
                Path(f"{path(run)}{suffix}").stat().st_size
                for suffix in ("", "-wal")
                if Path(f"{path(run)}{suffix}").exists()
            )

        def remove(run: str) -> None:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path(run)}{suffix}").unlink(missing_ok=True)

        def settle(run: str) -> None:
            connection = sqlite3.connect(path(run))
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection.close()

        synchronous = "FULL" if durable else "NORMAL"
        return Backend(
            key,
            f"SQLite, durable={durable} (WAL, synchronous={synchronous})",
            lambda run: SQLiteStore(path(run), "task", durable=durable),
            _local_written,
            stored,
            remove,
            settle=settle,
        )

    found: list[Backend] = [
        Backend(
            "none",
            "no store (the session alone)",
            lambda run: None,
            lambda: (0, 0),
            lambda run: 0,
            lambda run: None,
        ),
        folder(True),
        folder(False),
        sqlite(True),
        sqlite(False),
    ]
    found += [
        _postgres_backend(cluster, fsync) for fsync, cluster in sorted(clusters.items())[::-1]
    ]
    return found


def _postgres_backend(cluster: Cluster, fsync: bool) -> Backend:
    from windowkeeper.storage.postgres import PostgresStore

    key = "postgres" if fsync else "postgres-fast"
    observers: dict[str, Any] = {}  # run -> a connection to its database, for sizes and WAL

    def database(run: str) -> str:
        return f"{key.replace('-', '_')}_{run}"

    def open_store(run: str) -> SessionStore:
        conninfo = cluster.create_database(database(run))
        observers[run] = cluster.connect(database(run))
        return PostgresStore(conninfo, "task")

    def server_pids() -> list[str]:
        """The postmaster's children (backends, WAL writer, checkpointer, ...)."""
        try:
            postmaster = (cluster.data / "postmaster.pid").read_text().split()[0]
        except OSError:
            return []
        children = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat") as handle:
                        fields = handle.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if fields[1] == postmaster:
                    children.append(entry)
        return children

    def written() -> tuple[int, int]:
        wchar = sum(_io(pid) for pid in server_pids())
        observer = next(iter(observers.values()))  # the WAL is the cluster's
        row = observer.execute(
            "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')"
        ).fetchone()
        return wchar, int(row[0])

    def stored(run: str) -> int:
        row = (
            observers[run]
            .execute(
                "SELECT pg_total_relation_size('wk_messages') + pg_total_relation_size('wk_tasks')"
            )
            .fetchone()
        )
        return int(row[0])

    def remove(run: str) -> None:
        connection = observers.pop(run, None)
        if connection is not None:
            connection.close()
        cluster.drop_database(database(run))

    return Backend(
        key,
        f"PostgreSQL {cluster.version.split()[0]}, fsync={'on' if fsync else 'off'}",
        open_store,
        written,
        stored,
        remove,
        settle=lambda run: observers[run].execute("CHECKPOINT"),
    )


@dataclass
class TurnRun:
    backend: str
    label: str
    length: int
    turn_ms: list[float] = field(default_factory=list)
    commit_ms: list[float] = field(default_factory=list)
    written: list[float] = field(default_factory=list)
    wal: list[float] = field(default_factory=list)
    stored_per_turn: float = 0.0
    payload_per_turn: float = 0.0
    store_json: int = 0  # bytes of the overwrite store's JSON after the timed turns
    store_turns: int = 0  # timed turns whose commits carried the store
    build_s: float = 0.0


def _payload(messages: list[dict[str, Any]]) -> int:
    return sum(
        len(json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode()) for m in messages
    )


class _Lane:
    """One backend at one history length: its session, store and samples."""

    def __init__(self, backend: Backend, length: int, history: list[dict[str, Any]]) -> None:
        self.backend = backend
        self.result = TurnRun(backend.key, backend.label, length)
        self.run = str(length)
        self.history = history
        inner = backend.open(self.run)
        self.store = Timed(inner) if inner is not None else None
        started = time.perf_counter()
        self.session = ContextSession(TURN_WINDOW, store=self.store)
        self.session.extend(history[: length + 1])  # the task, then call/result pairs
        self.prepare()
        self.result.build_s = time.perf_counter() - started
        self.position = length + 1
        self.stored_before = 0
        self.payload = 0

    def prepare(self) -> None:
        prepared = self.session.prepare(max_output_tokens=8_192)
        self.session.record_usage({"input_tokens": prepared.estimated_tokens, "output_tokens": 400})

    def turn(self, *, timed: bool) -> None:
        pair = self.history[self.position : self.position + 2]
        self.position += 2
        if not timed:
            self.session.extend(pair)
            self.prepare()
            return
        result, store = self.result, self.store
        self.payload += _payload(pair)
        before = self.backend.written()
        committed = store.seconds if store is not None else 0.0
        stores = store.stores if store is not None else 0
        started = time.perf_counter()
        self.session.extend(pair)
        self.prepare()
        elapsed = time.perf_counter() - started
        after = self.backend.written()
        result.turn_ms.append(elapsed * 1000)
        if store is not None:
            result.commit_ms.append((store.seconds - committed) * 1000)
            result.store_turns += store.stores > stores
        result.written.append(after[0] - before[0])
        result.wal.append(after[1] - before[1])

    def finish(self, turns: int) -> TurnRun:
        self.backend.settle(self.run)
        self.result.stored_per_turn = (self.backend.stored(self.run) - self.stored_before) / turns
        self.result.payload_per_turn = self.payload / turns
        self.result.store_json = len(self.session.manager.context_history_json().encode())
        self.session.close()
        self.backend.remove(self.run)
        return self.result


def measure_turns(
    tmp: Path, clusters: dict[bool, Cluster], settings: Settings
) -> tuple[list[TurnRun], float]:
    """Every backend at each length, their timed turns interleaved (see the module docstring).

    All the sessions (every backend at every length) are open together and take their timed
    turns in rotation (turn k of each, the first one rotating), so a change of the disk's speed
    during the run reaches every backend and length alike. The messages are shared by the sessions; the
    objects built are frozen out of the garbage collector (``gc.freeze``), so that one session's
    turns do not pay for scanning the others'.
    """
    longest = max(settings.lengths) + 1 + 2 * (settings.warm_up + settings.turns)
    history = generated_session(longest)
    lanes = []
    for length in settings.lengths:
        for backend in backends(tmp, clusters):
            lane = _Lane(backend, length, history)
            for _ in range(settings.warm_up):
                lane.turn(timed=False)
            backend.settle(lane.run)  # what the build left is on disk before the timed turns
            lane.stored_before = backend.stored(lane.run)
            lanes.append(lane)
        print(f"  built {length:,} messages in every backend", file=sys.stderr)
    os.sync()
    gc.collect()
    gc.freeze()
    for number in range(settings.turns):
        shift = number % len(lanes)
        for lane in lanes[shift:] + lanes[:shift]:
            lane.turn(timed=True)
    gc.unfreeze()
    runs = []
    for lane in lanes:
        result = lane.finish(settings.turns)
        runs.append(result)
        persistence = f", commits {ms(median(result.commit_ms))} ms" if result.commit_ms else ""
        print(
            f"  {result.label:<46} {result.length:>6} messages: turn"
            f" {ms(median(result.turn_ms))} ms{persistence} (built in {result.build_s:.1f} s)",
            file=sys.stderr,
        )
    del lanes
    gc.collect()
    payload = statistics.fmean(run.payload_per_turn for run in runs)
    return runs, payload


def turns_report(runs: list[TurnRun], payload: float, settings: Settings) -> list[str]:
    shares = [run.store_turns / len(run.turn_ms) for run in runs if run.commit_ms]
    low, high = (min(shares), max(shares)) if shares else (0.0, 0.0)
    share = f"{low:.0%}" if f"{low:.0%}" == f"{high:.0%}" else f"{low:.0%}-{high:.0%}"
    rows = []
    alone = {run.length: median(run.turn_ms) for run in runs if run.backend == "none"}
    for run in runs:
        persisted = bool(run.commit_ms)
        is_pg = run.backend.startswith("postgres")
        ratio = median(run.turn_ms) / alone[run.length] if run.length in alone else math.nan
        rows.append(
            [
                run.label,
                f"{run.length:,}",
                ms(median(run.turn_ms)),
                f"{ratio:.1f}x" if persisted and math.isfinite(ratio) else "—",
                ms(p95(run.turn_ms)),
                ms(median(run.commit_ms)) if persisted else "—",
                ms(p95(run.commit_ms)) if persisted else "—",
                size(median(run.written)) if persisted else "—",
                size(p95(run.written)) if persisted else "—",
                size(median(run.wal)) if is_pg else "—",
                size(run.stored_per_turn) if persisted else "—",
                size(run.store_json),
            ]
        )
    lines = [
        f"Per turn (`extend` of 2 messages + `prepare` + `record_usage` of the request's own"
        f" estimate, window {TURN_WINDOW:,}), {settings.turns} timed turns after"
        f" {settings.warm_up} of warm-up;"
        f" the two messages of a turn average {size(payload)} of JSON.",
        "",
        *table(
            [
                "backend",
                "history",
                "turn median ms",
                "x no store",
                "turn p95 ms",
                "commits median ms",
                "commits p95 ms",
                "written median",
                "written p95",
                "WAL median",
                "stored growth",
                "store JSON",
            ],
            rows,
            right=1,
        ),
        "",
        "- *turn*: the session's wall time for the turn, persistence included; the *no store* row"
        " is the same session without persistence; *x no store*: the turn's median over that"
        " row's median at the same history.",
        "- *commits*: the time spent inside the store's `commit` during the turn (3 commits);"
        " building the commits (serializing the whole overwrite store when it changed: in"
        f" {share} of the timed turns) is part of *turn* only."
        " *store JSON*: the size of that store after the timed turns.",
        "- *written*: bytes passed to `write` calls per turn (`wchar` of `/proc/<pid>/io`) by this"
        " process, or for PostgreSQL by all the server's processes (backend, WAL writer,"
        " checkpointer, ...), a whole 8 KiB WAL page at each commit; *WAL*: PostgreSQL's WAL"
        " generated per turn;"
        " *stored growth*: what the files or tables grew by per turn (SQLite and PostgreSQL"
        " checkpointed before and after the timed turns).",
        "- All the sessions (every backend at every length) are open together and take their"
        " timed turns in rotation (turn k of each, the first one rotating), so a change of the"
        " disk's speed during the run reaches them alike; the messages are shared and what the build made is"
        " frozen out of the garbage collector (`gc.freeze`), so a session does not pay for"
        " scanning the others'. Before the timed turns the build is checkpointed (SQLite,"
        " PostgreSQL) and `os.sync()` flushes it, so its writeback does not land in them.",
    ]
    lengths = sorted({run.length for run in runs})
    rows = []
    by_backend: dict[str, list[TurnRun]] = defaultdict(list)
    for run in runs:
        by_backend[run.label].append(run)
    for label, group in by_backend.items():
        persisted = bool(group[0].commit_ms)
        turn = exponent([(run.length, median(run.turn_ms)) for run in group])
        commits = exponent([(run.length, median(run.commit_ms)) for run in group])
        written = exponent([(run.length, median(run.written)) for run in group])
        rows.append(
            [
                label,
                f"{turn:+.2f}",
                f"{commits:+.2f}" if persisted else "—",
                f"{written:+.2f}" if persisted else "—",
            ]
        )
    lines += [
        "",
        f"Growth exponent k of per-turn cost ∝ history^k: least-squares fit of log(median) against"
        f" log(history) over {', '.join(f'{n:,}' for n in lengths)} messages"
        " (0: independent of the history; 1: proportional to it).",
        "",
        *table(["backend", "turn", "commits", "written"], rows),
    ]
    return lines


# -- 2. crash safety --------------------------------------------------------------------------


@dataclass
class CrashResult:
    backend: str
    label: str
    kills: int = 0
    mid_commit: int = 0
    during_open: int = 0
    commits_done: int = 0
    reloads_checked: int = 0
    requests_checked: int = 0
    violating_kills: int = 0
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _wait_for_backend_exit(cluster: Cluster, application: str) -> None:
    """Until the server has ended the killed child's connection (its COMMIT may still land)."""
    for _ in range(400):
        count = cluster.scalar(
            f"SELECT count(*) FROM pg_stat_activity WHERE application_name = '{application}'"
        )
        if count == 0:
            return
        time.sleep(0.01)
    raise RuntimeError(f"the server kept {application}'s connection after its death")


def _check_reload(
    spec: dict[str, Any], allowed: set[str | None], check: Path, result: CrashResult
) -> tuple[str | None, list[str], bool]:
    """Reload the lane as the next session would: the digest loaded, the problems, loaded?"""
    problems: list[str] = []
    violation = problems.append

    if spec["backend"].startswith("folder"):
        shutil.rmtree(check, ignore_errors=True)
        if Path(spec["where"]).exists():  # the child after this one repairs the original
            shutil.copytree(spec["where"], check)
        else:  # killed before it made the folder
            check.mkdir()

        def make() -> SessionStore:
            return TaskFolderStore(check, durable=spec["durable"])

        def session_store() -> SessionStore:
            return TaskFolderStore(check, durable=spec["durable"])
    else:

        def make() -> SessionStore:
            return open_store(spec)

        def session_store() -> SessionStore:
            return ReadOnlyStore(open_store(spec))

    try:
        store = make()
        snapshot = store.load()
        store.close()
    except Exception as error:
        violation(f"reload failed: {type(error).__name__}: {error}"[:400])
        return None, problems, False
    digest = snapshot_digest(snapshot)
    result.reloads_checked += 1
    if digest not in allowed:
        violation("reloaded a state no commit produced (neither the last done nor the pending one)")
    if snapshot is None:
        return digest, problems, True
    history = snapshot.history
    state = snapshot.state or {}
    if state.get("history_length") != len(history):
        violation(f"state says {state.get('history_length')} messages, history has {len(history)}")
    if spec["backend"].startswith("folder"):
        raw = json.loads((check / "api_conversation_history.json").read_text())
        if raw != history:
            violation("api_conversation_history.json is not the reloaded history")
        store_file = check / "context_history.json"
        on_disk = store_file.read_text() if store_file.exists() else None
        if on_disk != snapshot.store_json:
            violation("context_history.json is not the committed store")
    try:
        session = ContextSession(CRASH_WINDOW, store=session_store(), mask_keep_recent=1)
        if session.history != history:
            violation("the reopened session's history is not the reloaded one")
        last = session.history[-1]
        if last["role"] == "assistant":  # answer the pending calls, as the agent loop would
            calls = [b["id"] for b in last["content"] if b.get("type") == "tool_use"]
            session.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": call, "content": "done"}
                        for call in calls
                    ],
                }
            )
        prepared = session.prepare(max_output_tokens=1_000)
        problems = validate_messages(prepared.messages)
        if problems:
            violation(f"the next request is invalid: {problems[:2]}")
        result.requests_checked += 1
        session.close()
    except Exception as error:
        violation(f"the next session failed: {type(error).__name__}: {error}"[:400])
    return digest, problems, True


def crash_lanes(
    key: str, kills: int, tmp: Path, cluster: Cluster | None, *, settings: Settings, seed: int
) -> CrashResult:
    labels = {
        "folder": "task folder, durable=True",
        "folder-fast": "task folder, durable=False",
        "sqlite": "SQLite, durable=True",
        "postgres": "PostgreSQL, fsync=on",
    }
    result = CrashResult(key, labels[key])
    rng = random.Random(seed)
    conninfo = cluster.create_database("crash") if key == "postgres" and cluster else ""
    started = time.perf_counter()
    spec: dict[str, Any] = {}
    base: str | None = None
    lane, in_lane, broken = -1, settings.lane, False
    for kill in range(kills):
        if in_lane >= settings.lane or broken:  # a new lane: a fresh task
            lane, in_lane, broken = lane + 1, 0, False
            backend = "postgres" if key == "postgres" else key.split("-", maxsplit=1)[0]
            where = {
                "folder": str(tmp / f"crash-{key}-{lane}"),
                "sqlite": str(tmp / "crash.db"),
                "postgres": conninfo,
            }[backend]
            spec = {
                "backend": backend,
                "where": where,
                "task": f"lane-{lane}",
                "durable": key != "folder-fast",
            }
            base = None
        in_lane += 1
        child_seed = rng.randrange(10**9)
        log = tmp / f"crash-{key}-{kill}.log"
        error = tmp / f"crash-{key}-{kill}.error"
        application = f"crash-{key}-{kill}"
        child_spec = {**spec, "seed": child_seed, "log": str(log), "error": str(error)}
        if spec["backend"] == "postgres":
            child_spec["where"] = f"{conninfo} application_name={application}"
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: runs until killed
            try:
                crash_child(child_spec)
            finally:
                os._exit(1)
        # one kill in six within 20 ms: while the child opens the task (and repairs it)
        early = rng.random() < 1 / 6
        time.sleep(rng.uniform(0.0, 0.02 if early else settings.max_delay))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        result.kills += 1
        problems = []
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            detail = error.read_text().strip().splitlines() if error.exists() else [str(status)]
            problems.append(f"the child ended by itself ({detail[-1][:300]})")
        if spec["backend"] == "postgres" and cluster is not None:
            _wait_for_backend_exit(cluster, application)
        lines = log.read_text().splitlines() if log.exists() else []
        pending = [line.split()[1] for line in lines if line.startswith("pending")]
        done = [line.split()[1] for line in lines if line.startswith("done")]
        result.commits_done += len(done)
        allowed: set[str | None] = {done[-1] if done else base}
        if "ready" not in lines:
            result.during_open += 1
            phase = "killed while opening the task"
        elif len(pending) > len(done):
            allowed.add(pending[-1])
            result.mid_commit += 1
            phase = f"killed inside commit {len(pending)}"
        else:
            phase = f"killed after commit {len(done)}"
        base, found, loaded = _check_reload(spec, allowed, tmp / "crash-check", result)
        problems += found
        if problems:
            result.violating_kills += 1
            result.violations.append(
                f"kill {kill} ({result.label}, lane {lane}, {phase}): " + "; ".join(problems)
            )
        broken = not loaded  # a task that cannot be reopened ends its lane
        log.unlink(missing_ok=True)
    result.seconds = time.perf_counter() - started
    if key == "postgres" and cluster is not None:
        cluster.drop_database("crash")
    return result


def measure_crashes(tmp: Path, cluster: Cluster | None, settings: Settings) -> list[CrashResult]:
    results = []
    for offset, (key, kills) in enumerate(settings.kills.items()):
        if key == "postgres" and cluster is None:
            continue
        result = crash_lanes(key, kills, tmp, cluster, settings=settings, seed=20260301 + offset)
        results.append(result)
        print(
            f"  {result.label:<28} {result.kills} kills, {result.mid_commit} mid-commit,"
            f" {result.violating_kills} violations ({result.seconds:.0f} s)",
            file=sys.stderr,
        )
        for text in result.violations[:5]:
            print(f"    {text}", file=sys.stderr)
    return results


def crash_report(results: list[CrashResult], settings: Settings) -> list[str]:
    rows = [
        [
            result.label,
            str(result.kills),
            str(result.mid_commit),
            str(result.during_open),
            str(result.commits_done),
            str(result.reloads_checked),
            str(result.requests_checked),
            f"**{result.violating_kills}**",
        ]
        for result in results
    ]
    total = sum(result.kills for result in results)
    lines = [
        f"{total} SIGKILLs, each after a random delay of 0-{settings.max_delay:g} s (one in six"
        " within 20 ms) into a child"
        f" session (window {CRASH_WINDOW:,}, outputs of 2-9 KB and one in ten of 24 KB, clipped on"
        " arrival; masking and truncation; a checkpoint and a rollback now and then); lanes of"
        f" {settings.lane} kills on one task, each child resuming (and repairing) what the previous"
        " one left.",
        "",
        *table(
            [
                "backend",
                "kills",
                "mid-commit",
                "while opening",
                "commits before the kills",
                "reloads checked",
                "next requests checked",
                "violations",
            ],
            rows,
        ),
        "",
        "- *mid-commit*: the kill landed between the child's `pending` and `done` lines, inside"
        " the store's `commit`; *while opening*: before the session had loaded (for the folder,"
        " during its repair of the previous kill).",
        "- *violations*: kills after which something below failed; a task that cannot be"
        " reloaded ends its lane (the next kill starts a new task), so one fault counts once.",
        "- A reload passes when its history, store and state are byte for byte the state of the"
        " last commit that returned or of the one under way; for the folder, when"
        " `api_conversation_history.json` and `context_history.json` are that history and store"
        " (what Cline reads); when the state's length is the history's; and when a session opened"
        " on it (the pending tool calls answered) prepares a request that"
        " `validate_messages` accepts.",
    ]
    for result in results:
        lines += [f"- violation: {text}" for text in result.violations[:10]]
    return lines


# -- 3. fleet ---------------------------------------------------------------------------------


@dataclass
class FleetResult:
    workers: int
    tasks: int
    seconds: float = 0.0
    turns: int = 0
    commits: int = 0
    conflicts: int = 0
    conflicts_by_step: dict[str, int] = field(default_factory=dict)
    shared_visits: int = 0
    visits: int = 0
    commit_ms: list[float] = field(default_factory=list)
    refused_ms: list[float] = field(default_factory=list)
    turn_ms: list[float] = field(default_factory=list)
    acked_messages: int = 0
    lost: int = 0
    out_of_order: int = 0
    duplicated: int = 0
    unacknowledged: int = 0
    chain_breaks: int = 0
    silent_conflicts: int = 0
    spurious_conflicts: int = 0
    unreported: int = 0
    errors: list[str] = field(default_factory=list)
    invalid_requests: int = 0
    stored_messages: int = 0


def measure_fleet(cluster: Cluster, tmp: Path, settings: Settings) -> FleetResult:
    from windowkeeper.storage.postgres import PostgresStore

    result = FleetResult(settings.workers, settings.tasks)
    conninfo = cluster.create_database("fleet")
    schema = PostgresStore(conninfo, "schema")
    schema.load()  # creates the tables before the workers start
    schema.close()  # no connection is open when the workers fork
    # fork: the workers run the code this process imported, even if the tree changes meanwhile
    context = multiprocessing.get_context("fork")
    current = context.Array("i", [-1] * settings.workers, lock=False)
    barrier = context.Barrier(settings.workers + 1)
    outputs = [tmp / f"fleet-{index}.json" for index in range(settings.workers)]
    processes = [
        context.Process(
            target=fleet_worker,
            kwargs={
                "index": index,
                "conninfo": conninfo,
                "tasks": settings.tasks,
                "turns": settings.fleet_turns,
                "current": current,
                "start": barrier,
                "out": str(outputs[index]),
                "seed": 9_000 + index,
            },
        )
        for index in range(settings.workers)
    ]
    for process in processes:
        process.start()
    barrier.wait()  # every worker has connected
    started = time.perf_counter()
    for process in processes:
        process.join()
    result.seconds = time.perf_counter() - started
    reports = []
    for index, (process, output) in enumerate(zip(processes, outputs, strict=True)):
        if process.exitcode != 0 or not output.exists():
            result.errors.append(f"worker {index} exited with {process.exitcode}")
            continue
        reports.append(json.loads(output.read_text()))
    _verify_fleet(conninfo, reports, result)
    cluster.drop_database("fleet")
    return result


def _verify_fleet(conninfo: str, reports: list[dict[str, Any]], result: FleetResult) -> None:
    import psycopg

    from windowkeeper.storage.postgres import PostgresStore

    commits: dict[str, list[list[Any]]] = defaultdict(list)
    refused: dict[str, list[int]] = defaultdict(list)  # per task: the bases refused
    acked: dict[str, list[list[str]]] = defaultdict(list)  # per task: per worker, in order
    for report in reports:
        result.turns += report["turns"]
        result.visits += report["visits"]
        result.shared_visits += report["shared_visits"]
        result.turn_ms += report["turn_ms"]
        result.errors += report["errors"]
        for step, count in report["conflicts"].items():
            result.conflicts_by_step[step] = result.conflicts_by_step.get(step, 0) + count
        mine: dict[str, list[str]] = defaultdict(list)
        for task, keys in report["acked"]:
            mine[task] += keys
            result.acked_messages += len(keys)
        for task, keys in mine.items():
            acked[task].append(keys)
        for task, base, version, keep, keys, latency in report["commits"]:
            if version < 0:
                result.refused_ms.append(latency)
                refused[task].append(base)
            else:
                result.commit_ms.append(latency)
                commits[task].append([base, version, keep, keys])
    result.conflicts = sum(result.conflicts_by_step.values())
    result.commits = len(result.commit_ms)
    # every refused attempt raised (was counted by a worker), and nothing else was refused
    result.unreported = abs(len(result.refused_ms) - result.conflicts)
    with psycopg.connect(conninfo, autocommit=True) as connection:
        tasks = [row[0] for row in connection.execute("SELECT task_id FROM wk_tasks").fetchall()]
        for task in sorted(tasks):
            if task == "schema":
                continue
            snapshot = PostgresStore(connection=connection, task_id=task).load()
            assert snapshot is not None
            stored = [message_key(message) for message in snapshot.history]
            result.stored_messages += len(stored)
            chain = sorted(commits[task], key=lambda entry: entry[1])
            versions = [entry[1] for entry in chain]
            bases = [entry[0] for entry in chain]
            if versions != list(range(1, len(chain) + 1)) or versions[-1:] != [snapshot.version]:
                result.chain_breaks += 1
            if len(set(bases)) != len(bases):  # two commits acknowledged on one base: one lost
                result.silent_conflicts += len(bases) - len(set(bases))
            # a refused commit is right only when another commit was acknowledged on its base
            result.spurious_conflicts += sum(base not in set(bases) for base in refused[task])
            rebuilt: list[str] = []
            for _base, _version, keep, keys in chain:
                rebuilt = rebuilt[:keep] + keys
            if rebuilt != stored:
                result.chain_breaks += 1
            position = {key: index for index, key in enumerate(stored)}
            result.duplicated += len(stored) - len(position)
            everything = set()
            for keys in acked[task]:
                everything.update(keys)
                last = -1
                for key in keys:
                    if key not in position:
                        result.lost += 1
                    elif position[key] < last:
                        result.out_of_order += 1
                    else:
                        last = position[key]
            result.unacknowledged += len(set(stored) - everything)
            session = ContextSession(
                FLEET_WINDOW,
                store=ReadOnlyStore(PostgresStore(connection=connection, task_id=task)),
            )
            if session.history[-1]["role"] == "user":
                if validate_messages(session.prepare(max_output_tokens=2_000).messages):
                    result.invalid_requests += 1
            else:
                result.invalid_requests += 1  # a task always ends with a user message here
        result.tasks = len(tasks) - 1


def fleet_report(result: FleetResult, settings: Settings) -> list[str]:
    per_second = result.turns / result.seconds if result.seconds else math.nan
    rows = [
        [
            "workers × tasks",
            f"{result.workers} × {settings.tasks} ({result.tasks} touched), one database",
        ],
        ["turns (each 3 commits)", f"{result.turns:,}"],
        ["wall time", f"{result.seconds:.1f} s"],
        [
            "throughput",
            f"**{per_second:.0f} turns/s** ({result.commits / result.seconds:.0f} commits/s)",
        ],
        [
            "commit latency (acknowledged)",
            f"median {ms(median(result.commit_ms))} ms, **p95 {ms(p95(result.commit_ms))} ms**",
        ],
        [
            "commit latency (refused)",
            f"median {ms(median(result.refused_ms))} ms, p95 {ms(p95(result.refused_ms))} ms",
        ],
        [
            "turn latency (retries included)",
            f"median {ms(median(result.turn_ms))} ms, p95 {ms(p95(result.turn_ms))} ms",
        ],
        [
            "task visits (on a task another worker was on)",
            f"{result.visits:,} ({result.shared_visits:,})",
        ],
        [
            "conflicts (ConcurrentUpdateError)",
            f"{result.conflicts:,}: "
            + ", ".join(f"{step} {count}" for step, count in result.conflicts_by_step.items()),
        ],
        [
            "acknowledged messages / stored",
            f"{result.acked_messages:,} / {result.stored_messages:,}",
        ],
        ["lost acknowledged messages", f"**{result.lost}**"],
        ["out of order / stored twice", f"{result.out_of_order} / {result.duplicated}"],
        ["stored but never acknowledged", str(result.unacknowledged)],
        ["version chains broken", str(result.chain_breaks)],
        ["commits acknowledged on one base (silent overwrite)", str(result.silent_conflicts)],
        ["refused commits not reported", str(result.unreported)],
        ["refused commits no other commit superseded", str(result.spurious_conflicts)],
        ["tasks whose next request is invalid", str(result.invalid_requests)],
        ["other errors", str(len(result.errors))],
    ]
    lines = [
        f"{result.workers} worker processes (forked), one connection each, on one PostgreSQL"
        f" database (fsync=on); {settings.fleet_turns} turns a worker; a visit opens a"
        " `ContextSession` with a `PostgresStore` on the task (the worker's connection shared),"
        f" does 1-4 turns (window {FLEET_WINDOW:,}; one result in twenty of 24 KB), and on"
        " `ConcurrentUpdateError` reopens the task and retries the step (after a refused"
        " `record_usage`, from `prepare`) after a jittered pause growing from 2 ms to at most"
        " 100 ms.",
        "",
        *table(["", "value"], rows, right=2),
        "",
        "- *lost*: a message whose `extend` returned to a worker but is not in the final history;"
        " *out of order*: a worker's acknowledged messages on a task stored in another order.",
        "- *version chains*: each task's acknowledged commits must have versions 1, 2, ... with no"
        " gap, the last the stored version, and replaying them (keep, then append) must give"
        " exactly the stored history.",
    ]
    lines += [f"- error: {text}" for text in result.errors[:10]]
    return lines


# -- the report -------------------------------------------------------------------------------


def retry_report(tmp: Path, cluster: Cluster | None, settings: Settings) -> list[str]:
    """The conflict-retry loop (:mod:`_retry`) on each backend."""
    count = settings.retry_messages
    makers: list[tuple[str, Callable[[], SessionStore]]] = [
        ("task folder, durable=True", lambda: TaskFolderStore(tmp / "retry-folder")),
        (
            "task folder, durable=False",
            lambda: TaskFolderStore(tmp / "retry-folder-fast", durable=False),
        ),
        ("SQLite, durable=True", lambda: SQLiteStore(tmp / "retry.db", "race")),
    ]
    if cluster is not None:
        from windowkeeper.storage.postgres import PostgresStore

        conninfo = cluster.create_database("wk_retry")
        makers.append(("PostgreSQL, fsync=on", lambda: PostgresStore(conninfo, "race")))
    results = [measure_retry(label, make, count) for label, make in makers]
    return [
        f"Two forked processes on one task, {count} messages each (about 0.4 KiB), both starting"
        " together; each appends a message, then prepares a request and records its usage (window"
        f" {TURN_WINDOW:,}), and on `ConcurrentUpdateError` calls `session.reload()` and retries"
        " that step. The parent then reloads the task: every acknowledged message must be"
        " stored once, each writer's in its own order.",
        "",
        *table(
            [
                "backend",
                "acknowledged",
                "seconds",
                "messages/s",
                "conflicts",
                "lost",
                "twice",
                "out of order",
            ],
            retry_rows(results),
        ),
    ]


def machine(tmp: Path) -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    filesystem = ""
    try:
        best = ""
        for line in Path("/proc/mounts").read_text().splitlines():
            device, point, kind = line.split()[:3]
            if str(tmp.resolve()).startswith(point) and len(point) >= len(best):
                best, filesystem = point, f"{kind} on {device}"
    except OSError:
        pass
    cpu = f" ({model})" if model else ""
    return (
        f"a {os.cpu_count()}-core {platform.machine()} {platform.system()}"
        f" {platform.release()} machine{cpu}, Python {platform.python_version()},"
        f" files and the database on {filesystem or 'an unknown filesystem'}"
    )


def revision() -> str:
    """The commit measured, and whether src/ differed from it when the run started."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "an unknown revision"
    return f"commit {commit}" + (" with uncommitted changes in src/" if dirty else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke check (writes no docs)")
    parser.add_argument("--docs", type=Path, help="where storage.md goes (default: docs/)")
    parser.add_argument("--tmp", type=Path, help="where the stores go (default: a temporary dir)")
    parser.add_argument(
        "--only",
        choices=("turns", "crash", "fleet", "retry"),
        action="append",
        help="run only these",
    )
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else FULL
    parts = set(args.only or ("turns", "crash", "fleet", "retry"))
    partial = args.quick or bool(args.only)  # writes docs/storage.md only when asked to
    docs = args.docs if args.docs is not None else (None if partial else ROOT / "docs")
    tmp = Path(tempfile.mkdtemp(prefix="wk-bench-storage-", dir=args.tmp))
    started = time.perf_counter()
    measured = revision()
    cluster: Cluster | None = None
    notes: list[str] = []
    try:
        try:
            cluster = Cluster().start()
            print(f"PostgreSQL {cluster.version} on {cluster.socket}", file=sys.stderr)
        except PostgresUnavailableError as error:
            notes.append(f"PostgreSQL was not measured: {error}")
            print(notes[-1], file=sys.stderr)
        sections: list[str] = []
        if "turns" in parts:
            print("1. per-turn cost", file=sys.stderr)
            clusters = {True: cluster} if cluster is not None else {}
            if cluster is not None:
                clusters[False] = Cluster(fsync=False).start()
            try:
                runs, payload = measure_turns(tmp, clusters, settings)
            finally:
                if False in clusters:
                    clusters[False].stop()
            sections += [
                "",
                "## 1. Per-turn persistence cost",
                "",
                *turns_report(runs, payload, settings),
            ]
        if "crash" in parts:
            print("2. crash safety", file=sys.stderr)
            crashes = measure_crashes(tmp, cluster, settings)
            sections += [
                "",
                "## 2. Crash safety under SIGKILL",
                "",
                *crash_report(crashes, settings),
            ]
        if "retry" in parts:
            print("3. conflict-retry loop", file=sys.stderr)
            sections += [
                "",
                "## 3. Two writers retrying",
                "",
                *retry_report(tmp, cluster, settings),
            ]
        if "fleet" in parts and cluster is not None:
            print("4. fleet", file=sys.stderr)
            fleet = measure_fleet(cluster, tmp, settings)
            sections += [
                "",
                "## 4. A fleet on one PostgreSQL database",
                "",
                *fleet_report(fleet, settings),
            ]
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    seconds = time.perf_counter() - started
    command = ".venv/bin/python bench/bench_storage.py" + (" --quick" if args.quick else "")
    if args.only:
        command += "".join(f" --only {part}" for part in args.only)
    header = [
        "# Storage: per-turn cost, crash safety, a fleet",
        "",
        "Generated by `bench/bench_storage.py` (do not edit by hand): "
        f"`{command}`, {datetime.datetime.now(datetime.UTC).strftime('%Y-%m-%d')},"
        f" {seconds:.0f} s, {measured}, on {machine(tmp.parent)}"
        + (
            f"; PostgreSQL {cluster.version}, started by the bench on a Unix socket"
            if cluster
            else ""
        )
        + ".",
        *(["", *notes] if notes else []),
    ]
    text = "\n".join([*header, *sections]) + "\n"
    print(text)
    if docs is not None:
        docs.mkdir(parents=True, exist_ok=True)
        (docs / "storage.md").write_text(text, encoding="utf-8")
        print(f"wrote {docs / 'storage.md'} in {seconds:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
