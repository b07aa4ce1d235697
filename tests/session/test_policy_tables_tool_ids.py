"""Repeated tool-use ids in the request, pinned across a history that is cut back and regrown.

A model that numbers its calls per turn reuses ``call_0``; the request renames every later use
(``call_0_2``, ...). When ``sync`` drops messages, the ids they used are free again: the next
request names a call as it would have had the dropped turns never been sent.
"""

from __future__ import annotations

from typing import Any

from windowkeeper import ContextSession

from .policy_tables import TASK, tool_ids


def _call(text: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "call_0", "name": "Read", "input": {"file_path": "a.py"}}
    return {"role": "assistant", "content": [{"type": "text", "text": text}, block]}


RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": "ok"}],
}


def _ids(keeper: ContextSession) -> tuple[list[str], list[str]]:
    """The request's call ids and the ids its results answer, in order."""
    messages = keeper.prepare().messages
    answered = [
        block["tool_use_id"]
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]
    return tool_ids(messages), answered


def test_a_repeated_id_is_renamed_in_the_call_and_its_result() -> None:
    keeper = ContextSession(10_000)
    keeper.extend([TASK, _call("one"), RESULT, _call("two"), RESULT, _call("three"), RESULT])
    renamed = ["call_0", "call_0_2", "call_0_3"]
    assert _ids(keeper) == (renamed, renamed)
    assert keeper.history[3]["content"][1]["id"] == "call_0"  # the history itself is kept


def test_the_ids_of_dropped_turns_are_used_again() -> None:
    keeper = ContextSession(10_000)
    keeper.extend([TASK, _call("one"), RESULT, _call("two"), RESULT])
    assert _ids(keeper) == (["call_0", "call_0_2"], ["call_0", "call_0_2"])
    keeper.sync([TASK, _call("one"), RESULT])  # the second turn is gone
    keeper.extend([_call("three"), RESULT])
    assert _ids(keeper) == (["call_0", "call_0_2"], ["call_0", "call_0_2"])
    keeper.sync([TASK, _call("other"), RESULT])  # every turn after the task replaced
    assert _ids(keeper) == (["call_0"], ["call_0"])
