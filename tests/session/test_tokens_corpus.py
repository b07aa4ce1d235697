"""The token estimator against the provider's own counts on the real Cline traces.

Each trace is replayed request by request: ``count()`` before the request is observed, then
``observe()`` with the reported input size. Targets (issue 5), from the fourth request on: the
95th percentile of the absolute relative error within 5 %, and fewer than 5 % of the requests
underestimated by more than 2 %. ``bench/estimator_accuracy.py`` prints the same numbers; it
documents how the request boundaries were pinned down in the traces.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import CalibratedEstimator

WARMUP = 3  # the system prompt and tools are not in the files: the first observation absorbs them

Request = tuple[list[dict[str, Any]], int, bool]  # messages sent, reported input size, scored


def cline_requests(folder: Path) -> Iterator[Request]:
    """Entry ``api_req_started`` with conversationHistoryIndex c sent history[: c + 2]."""
    history = json.loads((folder / "api_conversation_history.json").read_text(encoding="utf-8"))
    for entry in json.loads((folder / "ui_messages.json").read_text(encoding="utf-8")):
        if entry.get("say") != "api_req_started":
            continue
        info = json.loads(entry.get("text") or "{}")
        if info.get("tokensIn") is None:
            continue
        truth = sum(int(info.get(key) or 0) for key in ("tokensIn", "cacheWrites", "cacheReads"))
        yield history[: entry["conversationHistoryIndex"] + 2], truth, True


def gcp_requests(path: Path) -> Iterator[Request]:
    """Assistant message i's prompt count is the size of the request that sent history[:i];
    a count below the previous one is a Cline truncation (what it sent is unknown): not scored,
    but observed, so the requests after it, which append to it, anchor on it."""
    history = json.loads(path.read_text(encoding="utf-8"))
    previous = 0
    for index, message in enumerate(history):
        metrics = message.get("metrics") if message.get("role") == "assistant" else None
        prompt = ((metrics or {}).get("tokens") or {}).get("prompt")
        if prompt:
            yield history[:index], prompt, prompt >= previous
            previous = prompt


def replay(requests: Iterator[Request]) -> list[float]:
    """Relative errors (estimate - truth) / truth of the scored requests after the warm-up."""
    estimator = CalibratedEstimator()
    errors = []
    for position, (messages, truth, scored) in enumerate(requests):
        estimate = estimator.count(messages)
        if scored and position >= WARMUP:
            errors.append((estimate - truth) / truth)
        estimator.observe(messages, reported_input_tokens=truth)
    return errors


def p95(errors: list[float]) -> float:
    ranked = sorted(abs(error) for error in errors)
    return ranked[min(len(ranked) - 1, int(0.95 * len(ranked)))]


def underestimated_share(errors: list[float]) -> float:
    return sum(error < -0.02 for error in errors) / len(errors)


def _folder(corpus: Path, name: str) -> Path:
    folder = corpus / name
    if not folder.is_dir():
        pytest.skip(f"trace {name} not in the corpus")
    return folder


# Measured (Python 3.11, default settings), p50 / p95 absolute error, share under by > 2 %:
#   cline-native-unity-task1   44 scored   0.23 % / 4.02 %   0.00 %
#   cline-native-unity-task2   33 scored   0.73 % / 2.08 %   0.00 %
@pytest.mark.parametrize(
    ("name", "scored"),
    [("cline-native-unity-task1", 44), ("cline-native-unity-task2", 33)],
)
def test_cline_task_folder_meets_the_targets(corpus: Path, name: str, scored: int) -> None:
    """Every request of a Cline task folder, from the fourth on, is estimated within target."""
    errors = replay(cline_requests(_folder(corpus, name)))
    assert len(errors) == scored
    assert p95(errors) <= 0.05
    assert underestimated_share(errors) < 0.05


# Measured: 208 scored, p50 0.33 %, p95 2.33 %, 0.96 % under by > 2 % (two requests: the first
# after the task was resumed in plan mode, whose unseen system prompt changed, -4.6 %; and the
# one carrying a 222 K-character search result full of box-drawing characters, -6.5 %).
# Not scored: the 9 truncation requests (those that produced assistant messages 81, 133, 193,
# 245, 285, 305, 307, 309, 311), whose sent messages are not recorded, and assistant message
# 147, whose prompt count is 0 (no usage came back).
def test_gcp_history_meets_the_targets(corpus: Path) -> None:
    """The history-only 443-message trace, outside Cline's truncation requests, is within target."""
    path = _folder(corpus, "cline-native-gcp-refactor-redacted") / "api_conversation_history.json"
    errors = replay(gcp_requests(path))
    assert len(errors) == 208
    assert p95(errors) <= 0.05
    assert underestimated_share(errors) < 0.05


def test_truncation_requests_are_the_ones_left_out(corpus: Path) -> None:
    """The GCP requests not scored are exactly those whose prompt count fell."""
    path = _folder(corpus, "cline-native-gcp-refactor-redacted") / "api_conversation_history.json"
    left_out = [len(messages) for messages, _, scored in gcp_requests(path) if not scored]
    assert left_out == [81, 133, 193, 245, 285, 305, 307, 309, 311]
