"""Conformance with the original: replay the vectors recorded from Cline's ContextManager.

The vectors are our own recordings of the original and travel with the repository, gzipped, in
``tests/cline/vectors/`` (their README describes the format); ``WINDOWKEEPER_VECTORS`` replays
another file instead (plain or ``.gz``). Vectors tagged with a deliberate fix record the
original's unfixed behaviour and are skipped here; the fixes have tests of their own.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    ContextManager,
    TokenUsage,
    context_window_info,
    ensure_tool_results_follow_tool_use,
)

VECTORS = Path(
    os.environ.get("WINDOWKEEPER_VECTORS")
    or Path(__file__).with_name("vectors") / "vectors-public.jsonl.gz"
)


def _load() -> list[dict[str, Any]]:
    """Every vector of the file; a missing file is an error, never a silent skip."""
    opener = gzip.open if VECTORS.suffix == ".gz" else open
    with opener(VECTORS, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


ALL_VECTORS = _load()
UNTAGGED = [vector for vector in ALL_VECTORS if not vector["tags"]]


def _usage(value: dict[str, int] | None) -> TokenUsage | None:
    return None if value is None else TokenUsage(**value)


def _range(value: list[int] | None) -> tuple[int, int] | None:
    return None if value is None else (value[0], value[1])


def _expand(segments: list[dict[str, Any]], history: list[Any], pool: list[Any]) -> list[Any]:
    """Expand an expected message list (``h`` slices of the history, ``p`` pool entries)."""
    messages: list[Any] = []
    for segment in segments:
        if "h" in segment:
            first, last = segment["h"]
            messages.extend(history[first : last + 1])
            continue
        entry = pool[segment["p"]]
        if "role" in entry:
            messages.append(entry)
            continue
        base = history[entry["d"]]
        content = [base["content"][item] if isinstance(item, int) else item for item in entry["c"]]
        messages.append({**base, "content": content})
    return messages


def _resolve(spec: Any, previous: str) -> str:
    if spec is None:
        return previous
    if isinstance(spec, str):
        return spec
    tail = len(previous) - spec["tail"]
    return previous[: spec["head"]] + spec["mid"] + previous[tail:]


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


class Replay:
    """The state of one vector's replay (see the conformance README)."""

    def __init__(self, vector: dict[str, Any], folder: Path) -> None:
        self.vector = vector
        self.folder = folder
        self.manager = ContextManager()
        self.history: list[Any] = []
        self.last_file = ""
        self.last_store = ""

    def file_text(self) -> str:
        path = self.folder / "context_history.json"
        return path.read_bytes().decode("utf-8") if path.exists() else ""

    def run(self) -> None:
        for number, step in enumerate(self.vector["steps"]):
            where = f"{self.vector['id']} step {number} ({step['op']})"
            if "n" in step:
                assert len(self.history) == step["n"], f"{where}: replay out of step"
            before = json.dumps(self.history)
            actual = self.call(step)
            if step["op"] in ("append", "set_history", "cut"):
                continue
            assert json.dumps(self.history) == before, f"{where}: the history was modified"
            if "expect" in step:
                expected = self.expected(step)
                assert _as_json(actual) == _as_json(expected), f"{where}: output differs"
            if "context_history" in step:
                self.last_file = _resolve(step["context_history"], self.last_file)
                assert self.file_text() == self.last_file, f"{where}: context_history.json differs"
            if "store" in step:
                self.last_store = _resolve(step["store"], self.last_store)
                actual_store = self.manager.context_history_json()
                assert actual_store == self.last_store, f"{where}: store differs"

    def expected(self, step: dict[str, Any]) -> Any:
        expect = step["expect"]
        pool = self.vector["pool"]
        op = step["op"]
        if op in ("get_truncated_messages", "ensure_tool_results_follow_tool_use"):
            return _expand(expect, self.history, pool)
        if op == "attempt_file_read_optimization_in_memory":
            return {
                **expect,
                "optimized_history": _expand(expect["optimized_history"], self.history, pool),
            }
        if op == "get_new_context_messages_and_metadata":
            return {
                **expect,
                "truncated_history": _expand(expect["truncated_history"], self.history, pool),
            }
        return expect

    def call(self, step: dict[str, Any]) -> Any:
        op = step["op"]
        manager = self.manager
        if op == "append":
            self.history.extend(copy.deepcopy(step["messages"]))
        elif op == "set_history":
            self.history = copy.deepcopy(step["messages"])
        elif op == "cut":
            del self.history[step["length"] :]
        elif op == "window_info":
            info = context_window_info(
                step["context_window"],
                model_id=step["model_id"],
                openai_compatible=step["openai_compatible"],
            )
            return {
                "context_window": info.context_window,
                "max_allowed_size": info.max_allowed_size,
            }
        elif op == "should_compact_context_window":
            return manager.should_compact_context_window(
                _usage(step["usage"]), step["context_window"], step["threshold_percentage"]
            )
        elif op == "get_next_truncation_range":
            return list(
                manager.get_next_truncation_range(
                    self.history, _range(step["deleted_range"]), step["keep"]
                )
            )
        elif op == "get_truncated_messages":
            return manager.get_truncated_messages(self.history, _range(step["deleted_range"]))
        elif op == "apply_context_optimizations":
            changed, altered = manager.apply_context_optimizations(
                self.history, step["start_index"], step["timestamp"]
            )
            return {"changed": changed, "altered": sorted(altered)}
        elif op == "attempt_file_read_optimization_in_memory":
            result = manager.attempt_file_read_optimization_in_memory(
                self.history, _range(step["deleted_range"]), step["timestamp"]
            )
            return {
                "any_context_updates": result.any_context_updates,
                "need_to_truncate": result.need_to_truncate,
                "optimized_history": result.optimized_history,
            }
        elif op == "get_new_context_messages_and_metadata":
            outcome = manager.get_new_context_messages_and_metadata(
                self.history,
                usage=_usage(step["usage"]),
                timestamp=step["timestamp"],
                context_window=step["context_window"],
                deleted_range=_range(step["deleted_range"]),
                task_dir=self.folder,
                use_auto_condense=step["use_auto_condense"],
            )
            new_range = outcome.deleted_range
            return {
                "deleted_range": None if new_range is None else list(new_range),
                "updated_deleted_range": outcome.updated_deleted_range,
                "truncated_history": outcome.truncated_history,
            }
        elif op == "trigger_apply_standard_context_truncation_notice_change":
            manager.trigger_apply_standard_context_truncation_notice_change(
                step["timestamp"], self.folder, self.history
            )
        elif op == "truncate_context_history":
            manager.truncate_context_history(step["timestamp"], self.folder)
        elif op == "save_context_history":
            manager.save_context_history(self.folder)
        elif op == "new_manager":
            self.manager = ContextManager()
            if step["load"]:
                self.manager.initialize_context_history(self.folder)
        elif op == "load_store":
            (self.folder / "context_history.json").write_bytes(step["text"].encode("utf-8"))
            self.last_file = step["text"]
            manager.initialize_context_history(self.folder)
        elif op == "context_history_json":
            return manager.context_history_json()
        elif op == "ensure_tool_results_follow_tool_use":
            return ensure_tool_results_follow_tool_use(self.history)
        else:  # pragma: no cover - a new op in the vectors
            pytest.fail(f"unknown op {op!r}")
        return None


@pytest.mark.parametrize("vector", UNTAGGED, ids=[vector["id"] for vector in UNTAGGED])
def test_untagged_vector_matches_the_original(vector: dict[str, Any], tmp_path: Path) -> None:
    """Every step of an untagged vector gives exactly what the original gave."""
    Replay(vector, tmp_path).run()


def test_the_vectors_cover_every_kind() -> None:
    """The file holds the kinds its README promises, so a truncated file is noticed."""
    kinds = {vector["kind"] for vector in ALL_VECTORS}
    assert kinds >= {
        "session",
        "optimize",
        "truncated",
        "range",
        "window_info",
        "pairing",
        "should_compact",
    }
    assert len(UNTAGGED) >= 400
