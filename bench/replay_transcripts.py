"""Replay transcripts you have (any format the readers know) and judge every request strictly.

Run with ``.venv/bin/python bench/replay_transcripts.py PATH... [--windows 8000,32000,128000]``.
Nothing is bundled: give it real files (a Claude Code ``.jsonl``, a Codex rollout, a Gemini CLI
recording, an OpenHands folder, a Cline or Roo Code task folder, a SWE-agent ``.traj``, ...).
Each is read as the command line reads it (``load_trace``) and fed to a
``ContextSession`` request by request (one request before each model response), at every
window, in the Anthropic shape and in the OpenAI shape (the transcript converted with
``from_anthropic``), in the default mode, ledger-only compaction (``summarize=True``) and
out-of-band compaction with a fixed summarizer. Every request is judged by the strict API
doubles of ``tests/doubles`` (tools defined from the names called so far), and every request
that folds (in the Anthropic shape) is checked for the state of work as ``bench/evaluate.py``
checks it (the latest user instruction verbatim, every file edited so far, the latest todo
state: ``_frontier``). A row
per file, window, shape and mode; exit 1 when any request raised something other than
``ContextOverflowError``, was rejected, or was refused in a compaction mode where the default
mode sent it, or when a path could not be read (it is named, and the others still run; a fold that lost part of the state of work is reported, not an error: at a small
window the continuation may have to be clipped below it).
"""

from __future__ import annotations

import argparse
import sys
import traceback
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _compaction import FOLDS
from _doubles import StrictDouble, StrictOpenAIDouble
from _frontier import Frontier
from windowkeeper import ContextOverflowError, ContextSession, WindowkeeperError
from windowkeeper.core._messages import Message
from windowkeeper.formats.openai import from_anthropic
from windowkeeper.tools._replay import request_points
from windowkeeper.tools._trace import load_trace

WINDOWS = (8_000, 32_000, 128_000)
SHAPES = ("anthropic", "openai")
MODES = ("default", "ledger", "out-of-band")
_SUMMARY = "Summary of the work so far: what was read, edited and run; the next step is to go on."


@dataclass
class Row:
    """What one replay saw."""

    requests: int = 0
    refused: set[int] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    summaries: int = 0
    folds: int = 0
    carried: list[int] = field(default_factory=lambda: [0, 0, 0])
    """Over the folds: how many carried the latest instruction, every edited file, the todo."""


def replay(history: Sequence[Message], system: Any, window: int, shape: str, mode: str) -> Row:
    """Feed ``history`` (Anthropic-shaped) to a session and judge each request it prepares."""
    row = Row()

    def summarize(request: object) -> str:
        row.summaries += 1
        return _SUMMARY

    messages = list(history) if shape == "anthropic" else from_anthropic(history)
    options: dict[str, Any] = {}
    if mode != "default":
        options["summarize"] = True if mode == "ledger" else summarize
    session = ContextSession(window, format=shape, **options)
    strict = StrictDouble(system, history) if shape == "anthropic" else StrictOpenAIDouble()
    requests = set(request_points(messages))
    frontier = Frontier()
    for index, message in enumerate(messages):
        if index in requests:
            row.requests += 1
            try:
                prepared = session.prepare()
            except ContextOverflowError:
                row.refused.add(index)
            else:
                rejected = strict.problems(prepared.messages)
                if rejected:
                    row.problems.append(f"request before message {index}: {rejected[:3]}")
                if shape == "anthropic" and any(a.step in FOLDS for a in prepared.actions):
                    # read from the history as given; in the OpenAI shape positions differ
                    check = frontier.after_fold(history[:index], prepared.messages)
                    row.folds += 1
                    for position, kept in enumerate((check.instruction, check.files, check.todo)):
                        row.carried[position] += kept
        session.append(message)
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("paths", nargs="+", type=Path, help="transcript files or folders")
    parser.add_argument("--windows", help="comma-separated context windows (default 8k,32k,128k)")
    options = parser.parse_args(argv)
    windows = tuple(int(w) for w in options.windows.split(",")) if options.windows else WINDOWS
    failed = False
    print(
        "| file | window | shape | mode | requests | refused | worse than default |"
        " rejected | summaries | after a fold: instr. / files / todo (folds) |"
    )
    print("| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in options.paths:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the readers' repairs are listed by `inspect`
                trace = load_trace(path)
        except WindowkeeperError as error:
            failed = True
            print(f"| {path.name} | unreadable: {error} |")
            continue
        for window in windows:
            for shape in SHAPES:
                default: set[int] | None = None
                for mode in MODES:
                    try:
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore")
                            row = replay(trace.history, trace.system, window, shape, mode)
                    except Exception:  # a traceback is a finding: report it, go on
                        failed = True
                        print(f"{path} {window} {shape} {mode}: raised")
                        traceback.print_exc()
                        continue
                    default = row.refused if default is None else default
                    worse = len(row.refused - default)
                    failed |= bool(worse or row.problems)
                    print(
                        f"| {path.name} | {window} | {shape} | {mode} | {row.requests}"
                        f" | {len(row.refused)} | {worse} | {len(row.problems)}"
                        f" | {row.summaries} | {_carried(row, shape)} |"
                    )
                    for problem in row.problems[:3]:
                        print(f"  rejected: {problem}")
    return 1 if failed else 0


def _carried(row: Row, shape: str) -> str:
    if shape != "anthropic":
        return "not checked"
    if not row.folds:
        return "–"
    instruction, files, todo = row.carried
    return f"{instruction} / {files} / {todo} ({row.folds})"


if __name__ == "__main__":
    sys.exit(main())
