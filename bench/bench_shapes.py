"""Per-turn cost of ContextSession.prepare in each message shape: Anthropic, Chat Completions, Responses.

Run with ``.venv/bin/python bench/bench_shapes.py``. The same conversation in each shape: the
443-message real trace (without Cline's storage-only keys) and a generated 5,001-message one; a
request before every model turn, as an agent loop makes them. Prints medians and p95 in ms.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, Literal

from _traces import load_gcp_trace
from windowkeeper import ContextSession
from windowkeeper.formats import from_anthropic, responses

Shape = Literal["anthropic", "openai", "responses"]
_KEYS = {"type", "text", "id", "name", "input", "tool_use_id", "content", "source"}


def plain(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history without Cline's storage-only keys, as an agent would hold it."""
    return [
        {
            "role": message["role"],
            "content": [{k: v for k, v in b.items() if k in _KEYS} for b in message["content"]]
            if isinstance(message["content"], list)
            else message["content"],
        }
        for message in history
    ]


def generated(turns: int) -> list[dict[str, Any]]:
    """A task of ``turns`` read_file calls with outputs of 0.3-6 KB."""
    rng = random.Random(1)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Task: refactor everything."}]
    for turn in range(turns):
        path = f"src/m{rng.randint(0, 300)}.py"
        call = {"type": "tool_use", "id": f"t{turn}", "name": "read_file", "input": {"path": path}}
        output = "x = 1\n" * rng.randint(50, 1000)
        history.append(
            {"role": "assistant", "content": [{"type": "text", "text": f"turn {turn}"}, call]}
        )
        history.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{turn}", "content": output}],
            }
        )
    return history


def _model_item(item: dict[str, Any] | None) -> bool:
    return (
        item is None
        or item.get("type") in ("function_call", "reasoning")
        or item.get("role") == "assistant"
    )


def _request_before(shape: Shape) -> Callable[[list[dict[str, Any]], int], bool]:
    """Whether a request is made after item ``i``: the next one is the model's."""

    def anthropic(messages: list[dict[str, Any]], i: int) -> bool:
        after = messages[i + 1] if i + 1 < len(messages) else None
        return messages[i]["role"] != "assistant" and (
            after is None or after["role"] == "assistant"
        )

    def responses_items(items: list[dict[str, Any]], i: int) -> bool:
        return not _model_item(items[i]) and _model_item(
            items[i + 1] if i + 1 < len(items) else None
        )

    return responses_items if shape == "responses" else anthropic


def per_turn(messages: list[dict[str, Any]], shape: Shape, last: int) -> list[float]:
    """prepare() times in ms for the last ``last`` requests of a session fed ``messages``."""
    session = ContextSession(200_000, format=shape)
    before = _request_before(shape)
    samples = []
    for index, message in enumerate(messages):
        session.append(message)
        if index >= 1 and before(messages, index):
            started = time.perf_counter()
            session.prepare()
            samples.append((time.perf_counter() - started) * 1000)
    return sorted(samples[-last:])


def main() -> int:
    trace = load_gcp_trace()
    conversations = [("generated 5,001 messages", generated(2500))]
    if trace is not None:
        conversations.insert(0, ("443-message trace", plain(trace)))
    for label, history in conversations:
        shapes: dict[Shape, list[dict[str, Any]]] = {
            "anthropic": history,
            "openai": from_anthropic(history),
            "responses": responses.from_anthropic(history),
        }
        base = None
        for shape, messages in shapes.items():
            samples = per_turn(messages, shape, 300)
            median = samples[len(samples) // 2]
            p95 = samples[int(len(samples) * 0.95)]
            base = base or median
            print(
                f"{label:26s} {shape:10s} median {median:.3f} ms  p95 {p95:.3f} ms  {median / base:.2f}x"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
