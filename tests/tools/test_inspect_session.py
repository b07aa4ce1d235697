"""``inspect`` on a folder a ContextSession keeps: the session's own range, a greeting is valid."""

from __future__ import annotations

import json
from pathlib import Path

from windowkeeper import ContextSession
from windowkeeper.tools._inspection import inspect_trace
from windowkeeper.tools._trace import load_trace


def session_folder(root: Path, *, greeting: bool) -> ContextSession:
    session = ContextSession(context_window=16_000, task_dir=root, mask_keep_recent=None)
    if greeting:
        session.append({"role": "assistant", "content": "Hello! What shall we do?"})
    session.append({"role": "user", "content": "Refactor the parser."})
    for turn in range(30):
        session.prepare(max_output_tokens=1_000)
        session.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"t{turn}", "name": "read_file", "input": {}}
                ],
            }
        )
        session.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{turn}", "content": f"{turn} " * 900}
                ],
            }
        )
    session.prepare(max_output_tokens=1_000)
    return session


def test_the_stored_range_is_the_sessions(tmp_path: Path) -> None:
    session = session_folder(tmp_path, greeting=False)
    assert session.deleted_range is not None
    found = inspect_trace(load_trace(tmp_path))
    assert found.deleted_range == session.deleted_range


def test_a_greeting_first_is_no_violation(tmp_path: Path) -> None:
    session = session_folder(tmp_path, greeting=True)
    found = inspect_trace(load_trace(tmp_path))
    assert found.deleted_range == session.deleted_range
    assert found.violations == ()


def test_an_assistant_message_with_no_task_after_it_still_is(tmp_path: Path) -> None:
    """A greeting needs the user's task after it; alone, it is still flagged."""
    history_file = tmp_path / "h.json"
    history_file.write_text('[{"role": "assistant", "content": "hi"}]', encoding="utf-8")
    found = inspect_trace(load_trace(history_file))
    assert [violation.rule for violation in found.violations] == ["first-not-user"]


def test_runs_of_one_role_are_the_sessions_to_merge_in_its_folder(tmp_path: Path) -> None:
    """An in-band summary reply and the answer after it: two assistant messages in a row,
    which the session merges before it sends; in a plain file they are still a fault."""
    history = [
        {"role": "user", "content": "Refactor the parser."},
        {"role": "assistant", "content": "Summary: nothing read yet."},
        {"role": "assistant", "content": "Reading the parser."},
    ]
    session = ContextSession(context_window=16_000, task_dir=tmp_path / "task")
    session.extend(history)
    assert inspect_trace(load_trace(tmp_path / "task")).violations == ()
    plain = tmp_path / "h.json"
    plain.write_text(json.dumps(history), encoding="utf-8")
    found = inspect_trace(load_trace(plain))
    assert [violation.rule for violation in found.violations] == ["same-role-twice"]
