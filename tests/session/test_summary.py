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
    shared_prefix_messages,
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


PREVIOUS = (
    U("Add pagination."),
    A([tool_use("a")]),
    U([TR("a", "def api(): ...")]),
)


def _with_prefix(prefix: tuple[dict[str, Any], ...]) -> SummaryRequest:
    return SummaryRequest(
        messages=prefix[1:],
        previous_summary=None,
        instruction="sum up",
        ledger=Ledger(),
        prefix=prefix,
        system="You are a coding agent.",
        tools=({"name": "read_file", "input_schema": {"type": "object"}},),
    )


class TestSharedPrefix:
    """The summary call that shares the conversation's cache: the previous request, unchanged,
    the instruction at the end of its final user turn."""

    def test_the_previous_request_then_the_instruction(self) -> None:
        request = _with_prefix(PREVIOUS)
        messages = summary_messages(request)
        assert messages == [
            PREVIOUS[0],
            PREVIOUS[1],
            U([TR("a", "def api(): ..."), T("sum up")]),
        ]
        assert messages[:2] == list(PREVIOUS[:2])  # shared, not copied: nothing was changed
        assert messages[0] is PREVIOUS[0]
        assert PREVIOUS[2] == U([TR("a", "def api(): ...")])  # the given request is unchanged
        assert shared_prefix_messages(request) == messages

    def test_the_text_form_stays_available(self) -> None:
        """``shared_prefix=False`` gives the text-only form of the folded messages."""
        request = _with_prefix(PREVIOUS)
        without = replace(request, prefix=(), system=None, tools=None)
        assert summary_messages(request, shared_prefix=False) == summary_messages(without)
        kinds = {
            block["type"]
            for message in summary_messages(request, shared_prefix=False)
            for block in message["content"]
        }
        assert kinds == {"text"}

    @pytest.mark.parametrize(
        ("prefix", "shared"),
        [
            ((), None),  # no previous request: the text form
            ((U("Add pagination."), A([tool_use("a")])), None),  # ends with a call: no
            (
                (U("Add pagination."), A("Done.")),
                [U("Add pagination."), A("Done."), U([T("sum up")])],
            ),
        ],
    )
    def test_when_the_prefix_can_be_shared(
        self, prefix: tuple[dict[str, Any], ...], shared: list[dict[str, Any]] | None
    ) -> None:
        assert shared_prefix_messages(_with_prefix(prefix)) == shared


class TestShortenedLedger:
    def test_a_list_that_lost_every_item_loses_its_heading(self) -> None:
        """A budget that drops every command drops "Commands run" too: a heading over nothing
        says nothing and costs tokens on every request."""
        ledger = Ledger(task="Fix it.", commands=("ls -F", "pytest -x"), files_edited=("a.py",))
        whole = continuation(None, ledger)
        assert "Commands run (oldest first):\n- `ls -F`\n- `pytest -x`" in whole
        short = continuation(None, ledger, max_chars=len(whole) - 20)
        assert "Commands run" not in short
        assert "- `" not in short
        assert short.endswith("Files edited: a.py")


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
