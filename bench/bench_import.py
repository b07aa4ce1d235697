"""Start-up cost: ``import windowkeeper``, the session's import, the first ``prepare()`` and
``windowkeeper --help``, each in a fresh interpreter.

Run with ``.venv/bin/python bench/bench_import.py`` (``--runs N``, 15 by default). Each command
runs ``N`` times in its own subprocess, interleaved with the others so that a busy machine slows
them alike; the table gives the wall-clock median and p95 in milliseconds, the median above
``python -c pass`` (the interpreter's own start-up), and the child's CPU time (user + system)
above ``python -c pass``, median and p95: CPU time moves less than wall time when other work
shares the machine.

Two numbers say whether start-up is fast, and neither can hide the other: the import alone
(``import ContextSession``), and the import with the first ``prepare()`` of a small history
(``first prepare``: three messages, in memory; ``first prepare, folder``: the README's
``ContextSession(model=..., task_dir=...)``, which also reads the model table and writes the
folder). Work taken out of the import and done on the first request shows in the second.

``--baseline SRC`` runs the windowkeeper commands a second time against another source tree
(a ``src`` folder, e.g. ``git archive`` of an older commit), interleaved with these, so that a
before/after comparison sees the same load; its rows are marked ``(baseline)``.

Bytecode: an installed package carries its compiled ``.pyc`` files, so the first table is measured
with bytecode cached (in a private ``PYTHONPYCACHEPREFIX``, written by one warm-up run, so the
checkout gets no ``__pycache__``). When the environment sets ``PYTHONDONTWRITEBYTECODE``, as a
development shell may, every start compiles the sources again; the second table shows that cost.

The goals (issues 16 and 21) are ``import windowkeeper`` and ``from windowkeeper import
ContextSession`` <= 40 ms and ``windowkeeper --help`` <= 150 ms above ``python -c pass``, with
bytecode cached. Numbers go into the docs, never into tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

RUNS = 15
GOALS = {
    "import windowkeeper": 40.0,
    "windowkeeper.ContextSession": 40.0,
    "import ContextSession": 40.0,
    "windowkeeper --help": 150.0,
}
"""Milliseconds above ``python -c pass`` that each command should stay within."""


# Three messages of the README's loop: the task, a read, its result.
_HISTORY = """[
    {"role": "user", "content": "Add pagination to the API."},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Reading the handler first."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "api.py"}}]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def list_items():\\n    ..."}]},
]"""
_TOOLS = """[{"name": "read_file", "description": "Read a file.",
    "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]"""
FIRST_PREPARE = f"""
from windowkeeper import ContextSession
session = ContextSession(context_window=200_000)
session.extend({_HISTORY})
session.prepare(system="You are a coding agent.", tools={_TOOLS}, max_output_tokens=8_192)
"""
"""The first request of a small history, in memory."""

FIRST_PREPARE_FOLDER = f"""
import sys
from windowkeeper import ContextSession
session = ContextSession(model="claude-sonnet-4-5", task_dir=sys.argv[1])
session.extend({_HISTORY})
session.prepare(system="You are a coding agent.", tools={_TOOLS}, max_output_tokens=8_192)
"""
"""The README's first request: the model table is read and the task folder (new) written."""

FOLDER = "{folder}"
"""Replaced by a new empty folder in each run of a command holding it."""


def commands() -> dict[str, list[str]]:
    """The measured commands by name; ``windowkeeper --help`` through the installed script."""
    script = Path(sys.executable).with_name("windowkeeper")
    help_command = (
        [str(script), "--help"]
        if script.exists()
        else [sys.executable, "-m", "windowkeeper", "--help"]
    )
    python = sys.executable
    return {
        "python -c pass": [python, "-c", "pass"],
        "import windowkeeper": [python, "-c", "import windowkeeper"],
        "windowkeeper.ContextSession": [
            python,
            "-c",
            "import windowkeeper; windowkeeper.ContextSession",
        ],
        "import ContextSession": [python, "-c", "from windowkeeper import ContextSession"],
        "first prepare": [python, "-c", FIRST_PREPARE],
        "first prepare, folder": [python, "-c", FIRST_PREPARE_FOLDER, FOLDER],
        "windowkeeper --help": help_command,
    }


class Samples(NamedTuple):
    """Sorted milliseconds of one command: wall clock, and CPU time (user + system) of the child."""

    wall: list[float]
    cpu: list[float]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(argv: Sequence[str], env: Mapping[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU milliseconds of one run of ``argv``; raises if it fails.

    A :data:`FOLDER` argument becomes a new empty folder, removed after the run.
    """
    with tempfile.TemporaryDirectory(prefix="windowkeeper-task-") as folder:
        argv = [folder if arg == FOLDER else arg for arg in argv]
        cpu = _children_cpu()
        started = time.perf_counter()
        subprocess.run(argv, env=dict(env), check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        return wall * 1000, (_children_cpu() - cpu) * 1000


def with_baseline(named: Mapping[str, Sequence[str]], source: str) -> dict[str, Command]:
    """``named`` as commands, each windowkeeper one also run against the source tree ``source``."""
    found: dict[str, Command] = {}
    for name, argv in named.items():
        found[name] = Command(argv, {})
        if name != "python -c pass" and not name.startswith("windowkeeper --"):
            found[f"{name} (baseline)"] = Command(argv, {"PYTHONPATH": source})
    return found


class Command(NamedTuple):
    """A measured command and the variables it adds to the environment."""

    argv: Sequence[str]
    env: Mapping[str, str]


def measure(named: Mapping[str, Command], env: Mapping[str, str], runs: int) -> dict[str, Samples]:
    """``runs`` samples of every command; one unmeasured warm-up run of each first."""
    for command in named.values():
        run_once(command.argv, {**env, **command.env})
    samples: dict[str, Samples] = {name: Samples([], []) for name in named}
    for _ in range(runs):
        for name, command in named.items():
            wall, cpu = run_once(command.argv, {**env, **command.env})
            samples[name].wall.append(wall)
            samples[name].cpu.append(cpu)
    return {name: Samples(sorted(s.wall), sorted(s.cpu)) for name, s in samples.items()}


def p95(samples: Sequence[float]) -> float:
    """The 95th percentile of sorted ``samples`` (nearest rank)."""
    return samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def format_table(title: str, samples: Mapping[str, Samples]) -> str:
    """A table: wall-clock median and p95, the median above ``python -c pass``, its goal, and
    the CPU time above ``python -c pass`` (median and p95)."""
    base = samples["python -c pass"]
    base_wall, base_cpu = statistics.median(base.wall), statistics.median(base.cpu)
    width = max(len(name) for name in samples)
    lines = [
        title,
        f"  {'command':<{width}} {'median':>9} {'p95':>9} {'above pass':>11} {'goal':>9}"
        f" {'CPU above pass':>15} {'CPU p95':>9}",
    ]
    for name, values in samples.items():
        median = statistics.median(values.wall)
        above = cpu = cpu_p95 = goal = ""
        if values is not base:
            above = f"{median - base_wall:.1f} ms"
            cpu = f"{statistics.median(values.cpu) - base_cpu:.1f} ms"
            cpu_p95 = f"{p95(values.cpu) - base_cpu:.1f} ms"
        if name in GOALS:
            goal = f"<= {GOALS[name]:.0f} ms"
        lines.append(
            f"  {name:<{width}} {median:6.1f} ms {p95(values.wall):6.1f} ms {above:>11}"
            f" {goal:>9} {cpu:>15} {cpu_p95:>9}"
        )
    return "\n".join(lines)


def cached_env(prefix: str) -> dict[str, str]:
    """This environment with bytecode written to and read from ``prefix``."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = prefix
    return env


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="samples per command")
    parser.add_argument(
        "--baseline", metavar="SRC", help="a source tree to run the same commands against"
    )
    parser.add_argument(
        "--only", nargs="*", metavar="NAME", help="measure only these commands (and python -c pass)"
    )
    args = parser.parse_args(argv)
    named = {
        name: argv
        for name, argv in commands().items()
        if not args.only or name in args.only or name == "python -c pass"
    }
    measured = (
        with_baseline(named, str(Path(args.baseline).resolve()))
        if args.baseline
        else {name: Command(argv, {}) for name, argv in named.items()}
    )
    version = sys.version.split()[0]
    print(f"{args.runs} fresh interpreters per command, {os.cpu_count()} CPUs, Python {version}")
    with tempfile.TemporaryDirectory(prefix="windowkeeper-pyc-") as prefix:
        print(format_table("bytecode cached", measure(measured, cached_env(prefix), args.runs)))
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        env = dict(os.environ)
        env.pop("PYTHONPYCACHEPREFIX", None)
        title = "compiled at every start (PYTHONDONTWRITEBYTECODE is set here)"
        print(format_table(title, measure(measured, env, args.runs)))


if __name__ == "__main__":
    main()
