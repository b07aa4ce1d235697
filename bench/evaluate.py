"""Evaluate windowkeeper against the original and its peers on real traces, in one run.

Run with ``make bench`` (which installs the bench-only extra, langchain-core, first) or
``.venv/bin/python bench/evaluate.py``. It replays every trace of ``../shared/corpus/raw`` (the
traces missing there are skipped) and the demo conversation under cline, windowkeeper, LangChain's
``trim_messages`` and observation masking, and the compaction policies (cline's auto-condense,
windowkeeper's compaction in three shapes, LangChain's ``SummarizationMiddleware``; see
``bench/_compaction_report.py``) at three windows, with compaction's figures on every trace at
every window (``bench/_compaction_traces.py``); chooses the compaction defaults on part of the
corpus and reports them on the rest (``bench/_tuning.py``); times each policy's per-request call
on the 443-message trace and on a generated 5,000-message session; and writes
``docs/benchmarks.md`` and ``docs/bench-*.png``. The traces are read where they are, never
copied. Options: ``--docs DIR`` writes elsewhere; ``--rounds N`` sets the timing replays per
window on the 443-message trace (default 5); ``--messages N`` sizes the generated session
(default 5,000; 0 skips it); ``--no-tune`` skips the procedure that chooses the compaction
defaults on part of the corpus and reports them on the rest (``bench/_tuning.py``, a few
minutes).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

from _evaluation import HEADLINE, Evaluation, Growth
from _generated import generated_session
from _plots import plot_all
from _report import format_report
from _runner import (
    CLINE,
    CLINE_RECORDED,
    LAST_TOKENS,
    MASKING,
    POLICIES,
    WINDOWKEEPER,
    Case,
    Run,
    WindowChoice,
    load_cases,
    make_case,
    run,
    windows_for,
)
from _traces import ROOT
from _tuning import tune
from windowkeeper import context_window_info

GROWTH_WINDOW = 200_000
TIMED = (CLINE, WINDOWKEEPER, LAST_TOKENS, MASKING)


def machine() -> str:
    """The machine class: cores, architecture, OS, CPU model, Python."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = os.cpu_count() or 0
    cpu = f" ({model})" if model else ""
    return (
        f"a {cores}-core {platform.machine()} {platform.system()} machine{cpu},"
        f" Python {platform.python_version()}"
    )


Runs = dict[tuple[str, int, str], Run]
Samples = dict[tuple[int, str], list[float]]


def replay_all(cases: list[Case], log: bool = True) -> tuple[dict[str, list[WindowChoice]], Runs]:
    """Every case at its windows under every policy (recorded usage only where there is some)."""
    windows: dict[str, list[WindowChoice]] = {}
    runs: Runs = {}
    for case in cases:
        windows[case.name] = windows_for(case)
        for choice in windows[case.name]:
            for policy in POLICIES:
                if policy == CLINE_RECORDED and not case.has_recorded_usage:
                    continue
                runs[case.name, choice.nominal, policy] = run(case, choice, policy)
        if log:
            print(f"  replayed {case.name}", file=sys.stderr)
    return windows, runs


def time_headline(
    case: Case, choices: list[WindowChoice], runs: Runs, rounds: int
) -> tuple[Samples, Samples]:
    """Per-request times on the headline trace: the measured replay plus ``rounds - 1`` more."""
    timing: Samples = {}
    parts: Samples = {}
    for choice in choices:
        for policy in TIMED:
            first = runs[case.name, choice.nominal, policy]
            extra = [run(case, choice, policy, measure=False) for _ in range(max(0, rounds - 1))]
            timing[choice.nominal, policy] = first.totals.times_ms + [
                ms for other in extra for ms in other.totals.times_ms
            ]
            for other in (first, *extra):
                for name, samples in other.parts_ms.items():
                    parts.setdefault((choice.nominal, name), []).extend(samples)
    return timing, parts


def time_growth(messages: int) -> Growth:
    """Per-turn times of every policy on the generated session, by history length."""
    case = make_case(f"generated-{messages}", "bench/_generated.py", generated_session(messages))
    choice = WindowChoice(GROWTH_WINDOW, context_window_info(GROWTH_WINDOW), False)
    growth = Growth(messages=len(case.history), window=GROWTH_WINDOW)
    lengths = tuple(n for n in growth.lengths if n <= messages) or (messages,)
    if lengths[-1] < messages:
        lengths = (*lengths, messages)
    growth.lengths = lengths
    for policy in TIMED:
        result = run(case, choice, policy, measure=False)
        growth.times[policy] = list(zip(result.totals.lengths, result.totals.times_ms, strict=True))
        if policy == WINDOWKEEPER:
            growth.original_in_session = list(
                zip(result.totals.lengths, result.parts_ms["original algorithm"], strict=True)
            )
        print(f"  timed {policy} on the generated session", file=sys.stderr)
    return growth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=ROOT / "docs")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument(
        "--no-tune",
        dest="tune",
        action="store_false",
        help="skip the procedure that chooses the compaction defaults (bench/_tuning.py)",
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cases = load_cases()
    print(f"evaluating {len(cases)} conversations", file=sys.stderr)
    windows, runs = replay_all(cases)
    headline = next((case for case in cases if case.name == HEADLINE), None)
    timing: Samples = {}
    parts: Samples = {}
    if headline is not None:
        timing, parts = time_headline(headline, windows[headline.name], runs, args.rounds)
        print("  timed the 443-message trace", file=sys.stderr)
    growth = time_growth(args.messages) if args.messages > 0 else None
    tuning = tune(cases, windows, runs) if args.tune else None
    evaluation = Evaluation(
        machine=machine(),
        command="make bench",
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d"),
        cases=cases,
        windows=windows,
        runs=runs,
        timing=timing,
        timing_parts=parts,
        timing_rounds=args.rounds,
        growth=growth,
        tuning=tuning,
    )
    args.docs.mkdir(parents=True, exist_ok=True)
    plots = plot_all(evaluation, args.docs)
    evaluation.seconds = time.perf_counter() - started
    report = args.docs / "benchmarks.md"
    report.write_text(format_report(evaluation, plots), encoding="utf-8")
    print(f"wrote {report} and {len(plots)} plots in {evaluation.seconds:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
