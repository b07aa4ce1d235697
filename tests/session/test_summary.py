"""Compaction by summary: the instruction, where it goes, the summary's own request, the continuation."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import Ledger, MalformedMessageError, SummaryRequest, validate_messages
from windowkeeper.core._condense import SUMMARY_SECTIONS
from windowkeeper.session._ledger import LEDGER_HEADING, build_ledger, missing_items
from windowkeeper.session._ledger_text import TASK_ABOVE
from windowkeeper.session._summary import (
    checked_summary,
    continuation,
    summary_instruction,
    summary_messages,
    with_instruction,
)

from ..strategies import TR, A, T, U, conversations

EXAMPLES = settings(max_examples=60)
LEDGER = Ledger(
    task="Add pagination to the API.",
    instructions=("Use cursors, not offsets.",),
    files_edited=("src/api.py", "tests/test_api.py"),
    latest_instruction="Use cursors, not offsets.",
    messages=9,
)


def tool_use(call_id: str, name: str = "read_file") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": {"path": "a.py"}}


class TestInstruction:
    def test_sections_in_order(self) -> None:
        """Every section of the original's structure is asked for, numbered, in its order."""
        text = summary_instruction(None)
        positions = [text.index(f"{n}. {title}:") for n, title in enumerate(SUMMARY_SECTIONS, 1)]
        assert positions == sorted(positions)
        assert len(SUMMARY_SECTIONS) == 9

    def test_plain_text_and_the_users_words(self) -> None:
        """The summary is asked for as plain text, no tools, quoting the user's own words."""
        text = summary_instruction(None)
        assert "call no tools" in text
        assert "user's own words" in text
        assert "summarize_task" not in text

    def test_previous_summary_is_folded_in(self) -> None:
        """With a previous summary the model is told to fold it in; without, nothing is said."""
        assert "Fold it into the new summary" in summary_instruction("1. Primary Request: x")
        assert "previous compaction" not in summary_instruction(None)
        assert "previous compaction" not in summary_instruction("")


class TestWithInstruction:
    @EXAMPLES
    @given(conversations(max_size=16), st.text(min_size=1, max_size=20))
    def test_valid_and_unmutated(self, history: list[dict[str, Any]], instruction: str) -> None:
        """On a valid history it stays valid, only the end changes, and nothing given is touched."""
        before = copy.deepcopy(history)
        last = history[-1]["content"]
        ends_with_calls = history[-1]["role"] == "assistant" and any(
            block["type"] == "tool_use" for block in (last if isinstance(last, list) else [])
        )
        if ends_with_calls:
            with pytest.raises(MalformedMessageError):
                with_instruction(history, instruction)
            return
        output = with_instruction(history, instruction)
        assert history == before
        assert validate_messages(history) == []
        assert validate_messages(output) == []
        assert output[-1]["role"] == "user"
        assert output[-1]["content"][-1] == {"type": "text", "text": instruction}
        assert all(a is b for a, b in zip(history[:-1], output, strict=False))
        assert len(output) == len(history) + (history[-1]["role"] == "assistant")

    def test_string_content_becomes_blocks(self) -> None:
        """A string content becomes a text block, then the instruction follows it."""
        history = [U("task")]
        assert with_instruction(history, "sum up") == [U([T("task"), T("sum up")])]
        assert history == [U("task")]

    def test_after_results(self) -> None:
        """After tool results the instruction is the last block, results first as the API wants."""
        history = [U("task"), A([tool_use("a")]), U([TR("a")])]
        output = with_instruction(history, "sum up")
        assert output[-1]["content"] == [TR("a"), T("sum up")]
        assert validate_messages(output) == []

    def test_after_a_plain_answer(self) -> None:
        """After an assistant message without calls, a new user message holds the instruction."""
        output = with_instruction([U("task"), A("done")], "sum up")
        assert output[-1] == U([T("sum up")])

    def test_openai_shape(self) -> None:
        """After OpenAI tool messages, a new user message; after pending tool_calls, refused."""
        calls = [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
        history: list[dict[str, Any]] = [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": "c", "content": "ok"},
        ]
        assert with_instruction(history, "sum up")[-1] == U([T("sum up")])
        with pytest.raises(MalformedMessageError, match="tool calls"):
            with_instruction(history[:3], "sum up")

    def test_empty(self) -> None:
        """No messages: a user message of the instruction alone."""
        assert with_instruction([], "sum up") == [U([T("sum up")])]


class TestSummaryMessages:
    @EXAMPLES
    @given(conversations(min_size=3, max_size=16), st.integers(0, 16), st.booleans())
    def test_valid_for_any_slice(
        self, history: list[dict[str, Any]], start: int, previous: bool
    ) -> None:
        """Any run of messages becomes a valid text-only conversation ending in the instruction."""
        folded = history[min(start, len(history) - 1) :]
        before = copy.deepcopy(folded)
        request = SummaryRequest(
            messages=tuple(folded),
            previous_summary="earlier summary" if previous else None,
            instruction=summary_instruction("earlier summary" if previous else None),
            ledger=build_ledger(history),
        )
        messages = summary_messages(request)
        assert folded == before
        assert validate_messages(messages) == []
        assert messages[0]["role"] == "user"
        assert messages[-1]["content"][-1]["text"] == request.instruction
        kinds = {block["type"] for message in messages for block in message["content"]}
        assert kinds == {"text"}
        assert ("earlier summary" in messages[0]["content"][0]["text"]) is previous

    def test_tool_blocks_written_out(self) -> None:
        """Calls and results are text; thinking is left out; long results are cut."""
        request = SummaryRequest(
            messages=(
                A(
                    [
                        {"type": "thinking", "thinking": "hmm", "signature": "c2ln"},
                        tool_use("a"),
                    ]
                ),
                U([TR("a", "x" * 50)]),
            ),
            previous_summary=None,
            instruction="sum up",
            ledger=Ledger(),
        )
        messages = summary_messages(request, result_chars=20)
        texts = [block["text"] for message in messages for block in message["content"]]
        assert texts[1] == '[tool call read_file: {"path": "a.py"}]'
        assert texts[2] == f"[tool result: {'x' * 20}… [30 more characters]]"
        assert texts[-1] == "sum up"
        assert not any("hmm" in text for text in texts)


class TestContinuation:
    def test_missing_items_are_added_back(self) -> None:
        """A summary that dropped a file and the latest instruction gets them back, labelled."""
        summary = "1. Primary Request and Intent: Add pagination to the API. Edited src/api.py."
        assert missing_items(summary, LEDGER) == ["tests/test_api.py", "Use cursors, not offsets."]
        checked = checked_summary(summary, LEDGER)
        assert checked.startswith(summary)
        assert "- file edited: tests/test_api.py" in checked
        assert "- latest user instruction: Use cursors, not offsets." in checked
        assert missing_items(checked, LEDGER) == []

    def test_complete_summary_untouched(self) -> None:
        """A summary holding every must-keep item is kept as it is."""
        summary = (
            "Add pagination to the API. Files: src/api.py, tests/test_api.py."
            ' The user said: "Use cursors, not offsets."'
        )
        assert checked_summary(summary, LEDGER) == summary

    def test_summary_then_ledger(self) -> None:
        """The continuation: a notice, the checked summary, then the rendered ledger."""
        text = continuation("The summary.", LEDGER)
        assert text.startswith("[windowkeeper: earlier turns")
        assert text.index("The summary.") < text.index(LEDGER_HEADING)
        assert text.count("tests/test_api.py") == 2  # re-added to the summary, and in the ledger
        assert missing_items(text, LEDGER) == []

    @pytest.mark.parametrize("summary", [None, "", "  \n"])
    def test_ledger_alone_without_a_summary(self, summary: str | None) -> None:
        """No summary (none, empty, blank): the notice and the ledger, every must-keep item in."""
        text = continuation(summary, LEDGER)
        assert "No summary of them is available" in text
        assert LEDGER_HEADING in text
        assert missing_items(text, replace(LEDGER, task="")) == []
        assert TASK_ABOVE in text

    @EXAMPLES
    @given(conversations(max_size=16), st.text(max_size=40))
    def test_always_carries_the_must_keep_items(
        self, history: list[dict[str, Any]], summary: str
    ) -> None:
        """Whatever the summary says, the continuation carries the edits and the instruction,
        and names the task, which the first message (sent before it) holds."""
        ledger = build_ledger(history)
        text = continuation(summary, ledger)
        assert missing_items(text, replace(ledger, task="")) == []
        assert TASK_ABOVE in text
