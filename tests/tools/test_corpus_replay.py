"""Replay real Cline tasks turn by turn, with the usage Cline recorded for each request.

Each task folder of the corpus (``../shared/corpus/raw``; skipped when absent) is fed to
``get_new_context_messages_and_metadata`` one request at a time: before each assistant message,
with the history up to it, the recorded usage of the previous request (``api_req_started`` in
``ui_messages.json``, or ``metrics.tokens`` in a history-only folder) and the deleted range
carried forward. Nothing may raise, every request must be valid for the provider's tool pairing,
and the corpus must be left byte for byte as it was.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from windowkeeper import ContextManager, context_window_info, validate_messages
from windowkeeper.cline import API_HISTORY_FILE, ClineTask, load_task
from windowkeeper.rules import TOOL_RESULT_UNKNOWN, TOOL_USE_UNANSWERED

from ..conftest import CORPUS

TASKS = (
    sorted(path.parent.name for path in CORPUS.glob(f"*/{API_HISTORY_FILE}"))
    if CORPUS.is_dir()
    else ["(no corpus)"]
)
PAIRING_RULES = {TOOL_USE_UNANSWERED, TOOL_RESULT_UNKNOWN}


def fingerprint(folder: Path) -> dict[str, str]:
    """SHA-256 of every file of a folder."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.iterdir())
        if path.is_file()
    }


def replay(task: ClineTask, window: int, task_dir: Path) -> int:
    """Replay ``task``; return how many requests truncated the history."""
    manager = ContextManager()
    manager.initialize_context_history(task_dir)
    limit = context_window_info(window).max_allowed_size
    history = list(task.history)
    deleted_range = None
    truncations = 0
    sent: list[dict[str, object]] = []
    for index, message in enumerate(history):
        if message["role"] != "assistant":
            continue
        previous = task.previous_request(index)
        usage = previous.usage if previous is not None else None
        timestamp = previous.ts if previous is not None and previous.ts is not None else 0
        result = manager.get_new_context_messages_and_metadata(
            history[:index],
            usage=usage,
            timestamp=timestamp,
            context_window=window,
            deleted_range=deleted_range,
            task_dir=task_dir,
        )
        if result.updated_deleted_range:
            assert usage is not None
            assert usage.total >= limit, f"request {index}: truncated under the limit"
            truncations += 1
        else:
            assert result.deleted_range == deleted_range
        deleted_range = result.deleted_range
        sent = result.truncated_history
        where = f"request before message {index} (range {deleted_range})"
        assert sent[-1]["role"] == "user", where
        violations = [v for v in validate_messages(sent) if v.rule in PAIRING_RULES]
        assert not violations, f"{where}: {[str(v) for v in violations]}"
    # What was saved gives a resumed task the same request.
    resumed = ContextManager()
    resumed.initialize_context_history(task_dir)
    last = max(i for i, m in enumerate(history) if m["role"] == "assistant")
    assert resumed.get_truncated_messages(history[:last], deleted_range) == sent
    return truncations


@pytest.mark.parametrize("window", [128_000, 64_000])
@pytest.mark.parametrize("name", TASKS)
def test_replay(corpus: Path, tmp_path: Path, name: str, window: int) -> None:
    """Replaying never raises, keeps tool calls paired, and leaves the corpus as it was."""
    folder = corpus / name
    before = fingerprint(folder)
    task = load_task(folder)
    history_text = json.dumps(task.history)
    truncations = replay(task, window, tmp_path)
    assert json.dumps(task.history) == history_text, "the loaded history was modified"
    assert fingerprint(folder) == before, "the corpus was modified"
    largest = max(r.usage.total for r in task.requests if r.usage is not None)
    if largest >= context_window_info(window).max_allowed_size:
        assert truncations > 0
    else:
        assert truncations == 0
