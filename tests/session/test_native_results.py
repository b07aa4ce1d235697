"""Cline's text-block results sent inside the tool_result blocks of their calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import ContextManager, validate_messages
from windowkeeper.session._native_results import ResultPlacer

from ..strategies import TU, A, T, U


def test_text_results_become_tool_results_in_place() -> None:
    """Each call gets the next text result of its tool, at the same block position."""
    history = [
        U("task"),
        A([TU("a", "read_file"), TU("b", "execute_command")]),
        U(
            [
                T("[read_file for 'x.py'] Result:\nprint(1)"),
                T("[execute_command for 'ls'] Result:\nx.py"),
                T("<environment_details>env</environment_details>"),
            ]
        ),
    ]
    before = json.dumps(history)
    placed = ResultPlacer().place(history)
    assert json.dumps(history) == before
    blocks = placed[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert blocks[0] == {
        "type": "tool_result",
        "tool_use_id": "a",
        "content": [{"type": "text", "text": "[read_file for 'x.py'] Result:\nprint(1)"}],
    }
    assert blocks[1]["tool_use_id"] == "b"
    assert validate_messages(placed) == []


def test_a_call_cline_did_not_run_is_answered_by_its_note() -> None:
    """Cline 3.5x runs one call per response: each other call gets a "was not executed" note
    in text, which answers it, in order; the first call gets its result."""
    skipped = "Tool [read_file] was not executed because another call of this response ran first."
    history = [
        U("task"),
        A([TU("a", "read_file"), TU("b", "read_file"), TU("c", "read_file")]),
        U(
            [
                T("[read_file for 'x.py'] Result:\n1"),
                T(skipped),
                T(skipped),
                T("<environment_details>"),
            ]
        ),
    ]
    blocks = ResultPlacer().place(history)[2]["content"]
    assert [(b["type"], b.get("tool_use_id")) for b in blocks] == [
        ("tool_result", "a"),
        ("tool_result", "b"),
        ("tool_result", "c"),
        ("text", None),
    ]
    assert blocks[1]["content"] == [{"type": "text", "text": skipped}]
    assert validate_messages(ResultPlacer().place(history)) == []


def test_calls_without_a_text_result_are_left_to_the_repair() -> None:
    """A call whose tool has no result text stays unanswered; the repair adds its placeholder."""
    history = [
        U("task"),
        A([TU("a", "read_file"), TU("b", "list_files")]),
        U([T("[read_file for 'x'] Result:\n1")]),
    ]
    placed = ResultPlacer().place(history)
    sent = ContextManager().get_truncated_messages(placed, None)
    assert [b.get("tool_use_id") for b in sent[2]["content"]] == ["a", "b"]
    assert sent[2]["content"][1]["content"] == "result missing"


def test_native_results_are_not_touched() -> None:
    """A message that already answers with tool_result blocks is returned as it is."""
    history: list[Any] = [
        U("task"),
        A([TU("a")]),
        U(
            [
                {"type": "tool_result", "tool_use_id": "a", "content": "ok"},
                T("[read_file for 'x'] Result:"),
            ]
        ),
    ]
    assert ResultPlacer().place(history)[2] is history[2]


def test_the_real_trace_loses_its_placeholders(corpus: Path) -> None:
    """On the 443-message trace the original sends a placeholder for all 231 calls; placed, few."""
    path = corpus / "cline-native-gcp-refactor-redacted" / "api_conversation_history.json"
    history = json.loads(path.read_text("utf-8"))
    manager = ContextManager()

    def placeholders(messages: list[Any]) -> int:
        return sum(
            1
            for message in messages
            if isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result" and block.get("content") == "result missing"
        )

    assert placeholders(manager.get_truncated_messages(history, None)) == 231
    placed = ResultPlacer().place(history)
    # Measured: 8 calls have no result of their own; 7 were interrupted ("[TASK RESUMPTION]") and
    # one question was answered by a plain user message.
    assert placeholders(manager.get_truncated_messages(placed, None)) == 8


def test_remembers_only_the_pairs_it_placed() -> None:
    """Over a growing history, pairs with nothing to place cost no memo entry; a placed pair
    keeps its entry, and the same placed copy comes back on the next call."""
    history: list[Any] = [U("task"), A("plan")]
    for turn in range(50):
        history += [A([TU(f"n{turn}")]), U([{"type": "tool_result", "tool_use_id": f"n{turn}"}])]
    history += [A([TU("t", "read_file")]), U([T("[read_file for 'x'] Result:\n1")])]
    placer = ResultPlacer()
    first = placer.place(history)[-1]
    history.append(A("done"))
    assert placer.place(history)[-2] is first
    assert len(placer._memo._pairs) == 1  # what the memo holds is the point


RESULT = "[read_file for 'x'] Result:\n1"


def placed_result(call_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": [T(text)]}


class TestMatching:
    """Which call a text result answers: the next call of its tool, in order."""

    def test_a_call_of_another_tool_is_passed_over(self) -> None:
        """A result of read_file answers the read_file call, not an earlier list_files call."""
        history = [U("task"), A([TU("a", "list_files"), TU("b", "read_file")]), U([T(RESULT)])]
        assert ResultPlacer().place(history)[2] == U([placed_result("b", RESULT)])

    def test_one_result_answers_one_call(self) -> None:
        """Two read_file calls and one result: the first call gets it, the second none."""
        history = [U("task"), A([TU("a", "read_file"), TU("b", "read_file")]), U([T(RESULT)])]
        assert ResultPlacer().place(history)[2] == U([placed_result("a", RESULT)])

    def test_a_shortened_tool_name(self) -> None:
        """Cline writes "[subagents]" for use_subagents: it is that call's result."""
        history = [U("task"), A([TU("a", "use_subagents")]), U([T("[subagents] Result:\nok")])]
        assert ResultPlacer().place(history)[2] == U(
            [placed_result("a", "[subagents] Result:\nok")]
        )

    def test_calls_without_a_name_or_an_id_and_stray_blocks(self) -> None:
        """A call with no name or no id answers nothing; a block that is not a dict is kept."""
        calls = [
            {"type": "tool_use", "id": "n", "name": None, "input": {}},
            {"type": "tool_use", "name": "read_file", "input": {}},
            TU("b", "read_file"),
        ]
        history = [U("task"), A(calls), U(["junk", T(RESULT)])]
        assert ResultPlacer().place(history)[2] == U(["junk", placed_result("b", RESULT)])


class TestLeftAlone:
    """Messages with nothing to place come back as they are, the very same objects."""

    @pytest.mark.parametrize(
        "history",
        [
            [U("task"), A([TU("a", "list_files")]), U([T(RESULT)])],  # no call of that tool
            [U("task"), {"role": "assistant", "content": None}, U([T(RESULT)])],
            [U("task"), A([TU("a", "read_file")]), {"role": "user", "content": None}],
            [U("task"), A([TU("a", "read_file")]), A([T(RESULT)])],  # not a user message
        ],
    )
    def test_nothing_to_place(self, history: list[Any]) -> None:
        assert ResultPlacer().place(history)[2] is history[2]

    def test_the_list_is_the_placers_own(self) -> None:
        """One list, kept up to date as the history grows."""
        placer = ResultPlacer()
        history = [U("task"), A([TU("a", "read_file")]), U([T(RESULT)])]
        first = placer.place(history)
        history.append(A("ok"))
        assert placer.place(history) is first
        assert first[3] is history[3]
