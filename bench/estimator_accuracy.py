"""How close the token estimator gets to the provider's counts on the real traces.

Run with ``.venv/bin/python bench/estimator_accuracy.py``. Replays each trace request by request:
``count()`` before the request is observed, then ``observe()`` with the provider-reported input
size. Prints, per trace, the requests scored, the p50 and p95 absolute relative error, the share
of requests underestimated by more than 2 %, and the median cost of ``count()`` per call.
Numbers go into the docs and closing notes, never into test assertions.

Where the truth comes from (the traces sit in ``../shared/corpus/raw``, see its SOURCES.md):

- Cline task folders (``ui_messages.json``): each ``api_req_started`` entry holds ``tokensIn``,
  ``cacheWrites`` and ``cacheReads``; their sum is the request's real input size. An entry with
  ``conversationHistoryIndex`` *c* sent ``api_conversation_history[: c + 2]`` and its answer is
  message *c + 2* (its ``metrics`` repeat the entry's output tokens and cache total), so the
  first request (*c* = -1) sent the task message alone.
- The history-only GCP trace: the ``metrics.tokens.prompt`` of assistant message *i* is the size
  of the request that produced it, which sent ``history[:i]`` until Cline first truncated the
  conversation. A request whose prompt count is below the previous one's is a truncation: which
  messages it sent is not recorded, so it is not scored; it still re-anchors the estimator
  (observed with the full history prefix standing in for what was sent), and the requests after
  it, which only append messages, are scored. Assistant messages without a prompt count are not
  requests we can score or observe.

The first ``WARMUP`` requests of a trace are not scored: the system prompt and tool definitions
are not in the files, so the first observation has to absorb them.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from windowkeeper.session._tokens import CalibratedEstimator

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("WINDOWKEEPER_SHARED") or ROOT.parent / "shared") / "corpus" / "raw"
CLINE_TRACES = ("cline-native-unity-task1", "cline-native-unity-task2")
GCP_TRACE = "cline-native-gcp-refactor-redacted"
WARMUP = 3


@dataclass(frozen=True)
class Request:
    """One recorded request: what it sent, its true input size, and whether to score it."""

    messages: list[dict[str, Any]]
    truth: int
    scored: bool


@dataclass(frozen=True)
class Score:
    """The outcome of one replay."""

    requests: int
    p50: float
    p95: float
    under_2pct: float
    count_ms: float
    errors: list[float]


def cline_requests(folder: Path) -> Iterator[Request]:
    """The requests of a Cline task folder, in order, with their reported input sizes."""
    history = json.loads((folder / "api_conversation_history.json").read_text(encoding="utf-8"))
    ui = json.loads((folder / "ui_messages.json").read_text(encoding="utf-8"))
    for entry in ui:
        if entry.get("say") != "api_req_started":
            continue
        info = json.loads(entry.get("text") or "{}")
        if info.get("tokensIn") is None:
            continue  # a request that failed before usage came back
        truth = sum(int(info.get(key) or 0) for key in ("tokensIn", "cacheWrites", "cacheReads"))
        yield Request(history[: entry["conversationHistoryIndex"] + 2], truth, scored=True)


def gcp_requests(path: Path) -> Iterator[Request]:
    """The requests of the history-only GCP trace; truncation requests are not scored."""
    history = json.loads(path.read_text(encoding="utf-8"))
    previous = 0
    for index, message in enumerate(history):
        metrics = message.get("metrics") if message.get("role") == "assistant" else None
        prompt = ((metrics or {}).get("tokens") or {}).get("prompt")
        if not prompt:
            continue
        yield Request(history[:index], prompt, scored=prompt >= previous)
        previous = prompt


def replay(requests: Iterator[Request], estimator: CalibratedEstimator | None = None) -> Score:
    """count() then observe() for every request; errors are (estimate - truth) / truth."""
    estimator = estimator or CalibratedEstimator()
    errors: list[float] = []
    timings: list[float] = []
    for position, request in enumerate(requests):
        started = time.perf_counter()
        estimate = estimator.count(request.messages)
        timings.append(time.perf_counter() - started)
        if request.scored and position >= WARMUP:
            errors.append((estimate - request.truth) / request.truth)
        estimator.observe(request.messages, reported_input_tokens=request.truth)
    return summarize(errors, timings)


def summarize(errors: list[float], timings: list[float]) -> Score:
    absolute = sorted(abs(error) for error in errors)
    p95 = absolute[min(len(absolute) - 1, int(0.95 * len(absolute)))] if absolute else 0.0
    return Score(
        requests=len(errors),
        p50=statistics.median(absolute) if absolute else 0.0,
        p95=p95,
        under_2pct=sum(error < -0.02 for error in errors) / len(errors) if errors else 0.0,
        count_ms=statistics.median(timings) * 1000 if timings else 0.0,
        errors=errors,
    )


def traces(corpus: Path = CORPUS) -> dict[str, Iterator[Request]]:
    """Every trace present under ``corpus``, by name."""
    found: dict[str, Iterator[Request]] = {}
    for name in CLINE_TRACES:
        if (corpus / name / "ui_messages.json").is_file():
            found[name] = cline_requests(corpus / name)
    if (corpus / GCP_TRACE / "api_conversation_history.json").is_file():
        found[GCP_TRACE] = gcp_requests(corpus / GCP_TRACE / "api_conversation_history.json")
    return found


def anchored_cost_ms(corpus: Path = CORPUS, runs: int = 2000) -> float | None:
    """Median cost of an anchored count() on the 443-message trace with one new message.

    The first 442 messages were observed; the 443rd (39 K characters of text and a PNG image)
    is a fresh copy on every call, so each call measures it anew, as in a real turn.
    """
    path = corpus / GCP_TRACE / "api_conversation_history.json"
    if not path.is_file():
        return None
    history = json.loads(path.read_text(encoding="utf-8"))
    estimator = CalibratedEstimator()
    estimator.observe(history[:-1], reported_input_tokens=100_000)
    samples = []
    for _ in range(runs):
        messages = [*history[:-1], dict(history[-1])]  # a fresh list and a new message each turn
        started = time.perf_counter()
        estimator.count(messages)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def format_score(name: str, score: Score) -> str:
    return (
        f"{name:<38} scored {score.requests:4d}   p50 {score.p50:6.2%}   p95 {score.p95:6.2%}"
        f"   under>2% {score.under_2pct:6.2%}   count() {score.count_ms:7.4f} ms"
    )


def main() -> int:
    found = traces()
    if not found:
        print(f"no traces under {CORPUS}; nothing to do")
        return 0
    print(f"Python {sys.version.split()[0]}; first {WARMUP} requests of each trace not scored")
    for name, requests in found.items():
        print(format_score(name, replay(requests)))
    cost = anchored_cost_ms()
    if cost is not None:
        print(f"{'count(), 442 observed + 1 new message':<38} median {cost:.4f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
