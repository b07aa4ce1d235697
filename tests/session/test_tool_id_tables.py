"""Repeated tool-use ids renamed in the request, pinned on one hand-made history.

Every later use of an id already used gets the first free ``<id>_<n>`` (n from 2), in the
tool_use and in the results of the next user message, the k-th result of an id answering its
k-th use. The renames are decided as the history grows, so feeding it in pieces, with a request
after each turn, or cutting it back and growing it again, sends the same ids as feeding it whole.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from windowkeeper import ContextSession

from .policy_tables import TASK


def _calls(*ids: str) -> dict[str, Any]:
    blocks = [
        {"type": "tool_use", "id": i, "name": "Read", "input": {"n": n}} for n, i in enumerate(ids)
    ]
    return {"role": "assistant", "content": [{"type": "text", "text": "reading"}, *blocks]}


def _results(*ids: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": i, "content": f"r{n}"} for n, i in enumerate(ids)
        ],
    }


HISTORY = [
    TASK,
    _calls("call_0", "call_1"),
    _results("call_0", "call_1"),
    _calls("call_0", "call_1"),  # both used before
    _results("call_1", "call_0"),  # answered in another order
    {"role": "assistant", "content": "A plain answer."},
    {"role": "user", "content": "Go on."},
    _calls("call_0_2", "call_0"),  # an id a rename took, then call_0 a third time
    _results("call_0_2", "call_0"),
    _calls("x", "x"),  # one id twice in one message
    _results("x", "x"),
]
# (call ids, result ids) of each assistant message with calls and the user message after it
RENAMED = [
    (["call_0", "call_1"], ["call_0", "call_1"]),
    (["call_0_2", "call_1_2"], ["call_0_2", "call_1_2"]),  # the results sent in call order
    (["call_0_2_2", "call_0_3"], ["call_0_2_2", "call_0_3"]),
    (["x", "x_2"], ["x", "x_2"]),
]


def _sent_ids(messages: list[dict[str, Any]]) -> list[tuple[list[str], list[str]]]:
    """(call ids, result ids) of each assistant message with calls and the message after it."""
    return [
        (
            [b["id"] for b in message["content"] if b["type"] == "tool_use"],
            [b["tool_use_id"] for b in following["content"] if b["type"] == "tool_result"],
        )
        for message, following in itertools.pairwise(messages)
        if message["role"] == "assistant" and isinstance(message["content"], list)
    ]


def _prepared(keeper: ContextSession) -> list[tuple[list[str], list[str]]]:
    return _sent_ids(keeper.prepare().messages)


def test_fed_whole() -> None:
    keeper = ContextSession(100_000)
    keeper.extend(HISTORY)
    messages = keeper.prepare().messages
    assert _sent_ids(messages) == RENAMED
    # each result keeps its own call: r0 answered call_1, r1 call_0
    answers = {b["tool_use_id"]: b["content"] for b in messages[4]["content"]}
    assert answers == {"call_1_2": "r0", "call_0_2": "r1"}
    assert keeper.history == HISTORY  # the history itself is never changed


def test_fed_a_turn_at_a_time() -> None:
    keeper = ContextSession(100_000)
    keeper.append(TASK)
    turns = 0
    for end in range(2, len(HISTORY), 2):
        keeper.extend(HISTORY[end - 1 : end + 1])
        turns += isinstance(HISTORY[end - 1]["content"], list)
        assert _prepared(keeper) == RENAMED[:turns]
    assert turns == len(RENAMED)


@pytest.mark.parametrize("kept", [1, 3, 5, 7, 9])
def test_cut_back_and_grown_again(kept: int) -> None:
    keeper = ContextSession(100_000)
    keeper.extend(HISTORY)
    keeper.prepare()
    keeper.sync(HISTORY[:kept])
    keeper.prepare()
    keeper.sync(HISTORY)
    assert _prepared(keeper) == RENAMED


@pytest.mark.parametrize("kept", [3, 5, 7, 9])
def test_a_cut_frees_the_ids_of_the_turns_it_drops(kept: int) -> None:
    """After a cut, the turns that follow are named as if the dropped ones had never been."""
    keeper = ContextSession(100_000)
    keeper.extend(HISTORY)
    keeper.prepare()
    keeper.sync(HISTORY[:kept])
    keeper.extend(HISTORY[9:])  # the last turn, at once after the cut
    whole = ContextSession(100_000)
    whole.extend([*HISTORY[:kept], *HISTORY[9:]])
    assert _prepared(keeper) == _prepared(whole)
    assert _prepared(keeper)[-1] == (["x", "x_2"], ["x", "x_2"])


RENAMES = [
    (3, 1, "call_0_2"),
    (3, 2, "call_1_2"),
    (7, 1, "call_0_2_2"),
    (7, 2, "call_0_3"),
    (9, 2, "x_2"),
]


@pytest.mark.parametrize(
    ("hidden", "reported"),
    [
        (None, RENAMES),
        ((2, 4), RENAMES[2:]),  # the renamed message 3 is not sent: not reported
        ((2, 6), RENAMES[2:]),  # message 7 is the first sent after the range
        ((2, 8), RENAMES[4:]),
    ],
)
def test_each_rename_sent_is_reported_as_a_repair(
    hidden: tuple[int, int] | None, reported: list[tuple[int, int, str]]
) -> None:
    keeper = ContextSession(100_000)
    keeper.extend(HISTORY)
    keeper.deleted_range = hidden
    assert [(r.path, r.detail) for r in keeper.prepare().repairs] == [
        (f"history[{index}].content[{position}].id", f"a tool_use id used before: sent as {new!r}")
        for index, position, new in reported
    ]


def test_a_greeting_that_calls_one_id_twice_is_renamed_too() -> None:
    """Message 0 may be the assistant's (a greeting): its calls are renamed like any other."""
    blocks = [{"type": "tool_use", "id": "x", "name": "Read", "input": {"n": n}} for n in (0, 1)]
    greeting = {"role": "assistant", "content": [{"type": "text", "text": "hi"}, *blocks]}
    keeper = ContextSession(100_000)
    keeper.extend([greeting, _results("x", "x")])
    messages = keeper.prepare().messages
    assert _sent_ids(messages[1:]) == [(["x", "x_2"], ["x", "x_2"])]
    assert [b["content"] for b in messages[2]["content"]] == ["r0", "r1"]


# ids the Messages API refuses (it takes letters, digits, _ and -): an OpenAI-compatible
# server's "functions.<name>:<n>", then an id the rename of the first would give, then a
# refused id seen twice
REFUSED = [
    TASK,
    _calls("functions.read:0", "ok-id_1"),
    _results("functions.read:0", "ok-id_1"),
    _calls("functions_read_0", "a b"),
    _results("a b", "functions_read_0"),
    _calls("a b"),
    _results("a b"),
]


def test_an_id_the_api_refuses_is_sent_with_underscores_in_the_anthropic_shape() -> None:
    keeper = ContextSession(100_000)
    keeper.extend(REFUSED)
    prepared = keeper.prepare()
    assert _sent_ids(prepared.messages) == [
        (["functions_read_0", "ok-id_1"], ["functions_read_0", "ok-id_1"]),
        # the name was taken; the results are sent in call order
        (["functions_read_0_2", "a_b"], ["functions_read_0_2", "a_b"]),
        (["a_b_2"], ["a_b_2"]),
    ]
    refused = "a tool_use id with characters the API refuses: sent as"
    assert [(r.path, r.detail) for r in prepared.repairs] == [
        ("history[1].content[1].id", f"{refused} 'functions_read_0'"),
        ("history[3].content[1].id", "a tool_use id used before: sent as 'functions_read_0_2'"),
        ("history[3].content[2].id", f"{refused} 'a_b'"),
        ("history[5].content[1].id", f"{refused} 'a_b_2'"),
    ]
    assert keeper.history == REFUSED  # the history itself is never changed


def test_the_strict_anthropic_double_takes_the_renamed_ids(anthropic_double: Any) -> None:
    keeper = ContextSession(100_000)
    keeper.extend(REFUSED)
    tools = [{"name": "Read", "description": "Read a file.", "input_schema": {"type": "object"}}]
    with anthropic_double.client() as client:
        client.messages.create(
            model="claude-sonnet-4-5",
            max_tokens=100,
            messages=keeper.prepare().messages,
            tools=tools,
        )
    anthropic_double.assert_no_rejections()


def test_the_openai_shape_keeps_the_ids_its_servers_gave() -> None:
    """OpenAI-compatible servers' models read their ids back: a Chat Completions session sends
    them as given."""
    call = {
        "id": "functions.read:0",
        "type": "function",
        "function": {"name": "read", "arguments": "{}"},
    }
    history = [
        {"role": "user", "content": "Fix the parser."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "functions.read:0", "content": "r0"},
    ]
    keeper = ContextSession(100_000, format="openai")
    keeper.extend(history)
    prepared = keeper.prepare()
    assert prepared.messages == history
    assert prepared.repairs == ()
