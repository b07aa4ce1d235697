"""Start-up cost: ``import windowkeeper``, the session's import and ``windowkeeper --help``, each in
a fresh interpreter.

Run with ``.venv/bin/python bench/bench_import.py`` (``--runs N``, 15 by default). Each command
runs ``N`` times in its own subprocess, interleaved with the others so that a busy machine slows
them alike; the table gives the wall-clock median and p95 in milliseconds and, for the
windowkeeper commands, the median above ``python -c pass`` (the interpreter's own start-up).

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
    "import ContextSession": 40.0,
    "windowkeeper --help": 150.0,
}
"""Milliseconds above ``python -c pass`` that each command should stay within."""


def commands() -> dict[str, list[str]]:
    """The measured commands by name; ``windowkeeper --help`` through the installed script."""
    script = Path(sys.executable).with_name("windowkeeper")
    help_command = (
        [str(script), "--help"]
        if script.exists()
        else [sys.executable, "-m", "windowkeeper", "--help"]
    )
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import windowkeeper": [sys.executable, "-c", "import windowkeeper"],
        "import ContextSession": [sys.executable, "-c", "from windowkeeper import ContextSession"],
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

    CPU time moves less than wall time when other work shares the machine.
    """
    cpu = _children_cpu()
    started = time.perf_counter()
    subprocess.run(argv, env=dict(env), check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    return wall * 1000, (_children_cpu() - cpu) * 1000


def measure(
    named: Mapping[str, Sequence[str]], env: Mapping[str, str], runs: int
) -> dict[str, Samples]:
    """``runs`` samples of every command; one unmeasured warm-up run of each first."""
    for argv in named.values():
        run_once(argv, env)
    samples: dict[str, Samples] = {name: Samples([], []) for name in named}
    for _ in range(runs):
        for name, argv in named.items():
            wall, cpu = run_once(argv, env)
            samples[name].wall.append(wall)
            samples[name].cpu.append(cpu)
    return {name: Samples(sorted(s.wall), sorted(s.cpu)) for name, s in samples.items()}


def p95(samples: Sequence[float]) -> float:
    """The 95th percentile of sorted ``samples`` (nearest rank)."""
    return samples[min(len(samples) - 1, int(len(samples) * 0.95))]


def format_table(title: str, samples: Mapping[str, Samples]) -> str:
    """A small table: wall-clock median and p95, the median above ``python -c pass``, CPU median."""
    base = samples["python -c pass"]
    lines = [
        title,
        f"  {'command':<21} {'median':>9} {'p95':>9} {'above pass':>11} {'goal':>9}"
        f" {'CPU above pass':>15}",
    ]
    for name, values in samples.items():
        median = statistics.median(values.wall)
        above = cpu = goal = ""
        if values is not base:
            above = f"{median - statistics.median(base.wall):.1f} ms"
            cpu = f"{statistics.median(values.cpu) - statistics.median(base.cpu):.1f} ms"
        if name in GOALS:
            goal = f"<= {GOALS[name]:.0f} ms"
        lines.append(
            f"  {name:<21} {median:6.1f} ms {p95(values.wall):6.1f} ms {above:>11} {goal:>9}"
            f" {cpu:>15}"
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
    args = parser.parse_args(argv)
    named = commands()
    version = sys.version.split()[0]
    print(f"{args.runs} fresh interpreters per command, {os.cpu_count()} CPUs, Python {version}")
    with tempfile.TemporaryDirectory(prefix="windowkeeper-pyc-") as prefix:
        print(format_table("bytecode cached", measure(named, cached_env(prefix), args.runs)))
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        env = dict(os.environ)
        env.pop("PYTHONPYCACHEPREFIX", None)
        title = "compiled at every start (PYTHONDONTWRITEBYTECODE is set here)"
        print(format_table(title, measure(named, env, args.runs)))


if __name__ == "__main__":
    main()
