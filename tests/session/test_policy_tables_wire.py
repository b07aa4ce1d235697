"""Repeated tool_use ids pinned request by request: each later use is renamed, with its result.

The API refuses a request holding two tool_use blocks with one id; some models number calls per
turn (``call_0`` every time). The session sends the second use as ``call_0_2``, the third as
``call_0_3``, renaming the tool_result that answers each, and keeps every rename from one
request to the next, wherever the history was when a request was prepared.
"""

from __future__ import annotations

from typing import Any

from windowkeeper import ContextSession, Repair

from .policy_tables import TASK, session


def _call(turn: int, call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"step {turn}"},
            {
                "type": "tool_use",
                "id": call_id,
                "name": "Read",
                "input": {"file_path": f"m{turn}.py"},
            },
        ],
    }


def _result(call_id: str, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}],
    }


def _renamed(index: int, new: str) -> Repair:
    return Repair(f"history[{index}].content[1].id", f"a tool_use id used before: sent as {new!r}")


SENT = [
    TASK,
    _call(0, "call_0"),
    _result("call_0", "one"),
    _call(1, "call_0_2"),
    _result("call_0_2", "two"),
    _call(2, "call_0_3"),
    _result("call_0_3", "three"),
]


def _two_turns() -> ContextSession:
    keeper = session()
    keeper.extend([TASK, _call(0, "call_0"), _result("call_0", "one")])
    keeper.extend([_call(1, "call_0"), _result("call_0", "two")])
    return keeper


def test_each_later_use_and_its_result_are_renamed() -> None:
    keeper = _two_turns()
    first = keeper.prepare()
    assert first.messages == SENT[:5]
    assert first.repairs == (_renamed(3, "call_0_2"),)
    keeper.extend([_call(2, "call_0"), _result("call_0", "three")])
    second = keeper.prepare()
    assert second.messages == SENT
    assert second.repairs == (_renamed(3, "call_0_2"), _renamed(5, "call_0_3"))


def test_a_request_prepared_between_a_call_and_its_result_keeps_the_rename() -> None:
    """The call is renamed when it arrives; its result, arriving later, answers the new id."""
    keeper = _two_turns()
    keeper.prepare()
    keeper.append(_call(2, "call_0"))
    waiting = keeper.prepare()
    assert waiting.messages[5]["content"][1]["id"] == "call_0_3"
    keeper.append(_result("call_0", "three"))
    answered = keeper.prepare()
    assert answered.messages == SENT
    assert answered.repairs == (_renamed(3, "call_0_2"), _renamed(5, "call_0_3"))


def test_a_users_words_before_the_result_are_merged_after_it() -> None:
    """Two user messages in a row are sent as one, its tool_result first (as the API asks)."""
    keeper = session()
    words = {"role": "user", "content": "wait, also check b.py"}
    keeper.extend([TASK, _call(0, "t0"), words, _result("t0", "x = 1")])
    prepared = keeper.prepare()
    assert prepared.messages[2:] == [
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "t0", "content": "x = 1"},
                {"type": "text", "text": "wait, also check b.py"},
            ],
        }
    ]
    assert prepared.repairs == ()


def test_two_assistant_messages_are_merged_with_the_thinking_first() -> None:
    keeper = session()
    thinking = {"type": "thinking", "thinking": "hm", "signature": "s"}
    keeper.extend([TASK, {"role": "assistant", "content": "Let me look."}])
    keeper.append({"role": "assistant", "content": [thinking, {"type": "text", "text": "ok"}]})
    keeper.append({"role": "user", "content": "go"})
    prepared = keeper.prepare()
    assert prepared.messages[1:] == [
        {
            "role": "assistant",
            "content": [
                thinking,
                {"type": "text", "text": "Let me look."},
                {"type": "text", "text": "ok"},
            ],
        },
        {"role": "user", "content": "go"},
    ]


def test_a_task_started_over_is_merged_afresh() -> None:
    """After a sync that restarts the task, the new history's runs are merged like any other,
    whatever the request before it looked like."""
    keeper = session()
    keeper.extend([TASK, _call(0, "t0"), _result("t0", "one")])
    keeper.prepare()
    task = {"role": "user", "content": "New task: write docs."}
    more = {"role": "user", "content": "Start with the README."}
    restarted = [task, more, {"role": "assistant", "content": "On it."}]
    assert keeper.sync([*restarted, {"role": "user", "content": "go"}]).restarted
    assert keeper.prepare().messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "New task: write docs."},
                {"type": "text", "text": "Start with the README."},
            ],
        },
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": "go"},
    ]


def test_an_openai_history_is_sent_back_in_the_shape_it_came_in() -> None:
    """``format="openai"``: a user's single text block after a tool message comes back as the
    plain string, the tool call's null content stays null; nothing else changes."""
    history = [
        {"role": "user", "content": "Fix the parser."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "user", "content": [{"type": "text", "text": "go on"}]},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]
    keeper = session(format="openai")
    keeper.extend(history)
    sent = keeper.prepare().messages
    assert sent == [*history[:3], {"role": "user", "content": "go on"}, *history[4:]]
