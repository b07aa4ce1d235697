"""Compaction by summary, case by case: the text-only summary call, the instruction's place,
the summary checked against the ledger, and a continuation made to fit a budget, each pinned
exactly on a small input at and around its limits."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from windowkeeper import Ledger, MalformedMessageError, SummaryRequest
from windowkeeper.session._summary import (
    checked_summary,
    continuation,
    shortest_continuation,
    summary_messages,
    summary_of,
    with_instruction,
)

from ..builders import TR, TU, A, T, U

PREFACE = (
    "Below is part of a conversation between a user and an AI coding assistant, with its tool"
    " calls and results written out as text. It will be removed from the assistant's context"
    " and replaced by your summary."
)


def request(*messages: dict[str, Any]) -> SummaryRequest:
    return SummaryRequest(
        messages=messages, previous_summary=None, instruction="sum up", ledger=Ledger()
    )


def texts(messages: list[dict[str, Any]]) -> list[tuple[str, list[str]]]:
    return [(m["role"], [block["text"] for block in m["content"]]) for m in messages]


class TestSummaryMessages:
    def test_the_text_form_exactly(self) -> None:
        """A first user text joins the preface, blank texts and messages go, a call's input is
        JSON with its characters as they are, an empty result says so, runs of a role join,
        and the instruction follows the last assistant text in a user turn of its own."""
        call = TU("a", "f", q="é")
        messages = summary_messages(
            request(U("hello"), U([T("  ")]), A([T("   ")]), A([call]), U([TR("a", "")]), A("x"))
        )
        assert texts(messages) == [
            ("user", [PREFACE, "hello"]),
            ("assistant", ['[tool call f: {"q": "é"}]']),
            ("user", ["[tool result: (empty)]"]),
            ("assistant", ["x"]),
            ("user", ["sum up"]),
        ]

    def test_the_instruction_ends_a_last_user_turn(self) -> None:
        """When the folded messages end with the user, the instruction is that turn's last text."""
        messages = summary_messages(request(A("a"), U("b"), U("c")))
        assert texts(messages) == [
            ("user", [PREFACE]),
            ("assistant", ["a"]),
            ("user", ["b", "c", "sum up"]),
        ]

    @pytest.mark.parametrize(
        ("size", "chars", "shown"),
        [
            (8_000, 8_000, "y" * 8_000),  # the default limit: whole at it
            (8_001, 8_000, "y" * 8_000 + "… [1 more characters]"),  # cut one over it
            (20, 20, "y" * 20),
            (50, None, "y" * 50),  # no limit
        ],
    )
    def test_results_are_cut_at_result_chars(
        self, size: int, chars: int | None, shown: str
    ) -> None:
        """A result is kept up to ``result_chars`` (8,000 by default), beyond with a count."""
        folded = request(U([TR("a", "y" * size)]))
        messages = (
            summary_messages(folded)
            if chars == 8_000
            else summary_messages(folded, result_chars=chars)
        )
        assert texts(messages)[0][1][1] == f"[tool result: {shown}]"

    def test_a_request_is_a_frozen_value(self) -> None:
        """What a summarizer gets cannot be changed under the session."""
        with pytest.raises(dataclasses.FrozenInstanceError):
            request(U("a")).instruction = "other"  # type: ignore[misc]


class TestWithInstruction:
    def test_after_assistant_text_blocks(self) -> None:
        """An assistant message of text blocks without calls gets a new user message after it."""
        history = [U("task"), A([T("Done.")])]
        assert with_instruction(history, "sum up") == [*history, U([T("sum up")])]

    def test_the_refusal_names_the_message(self) -> None:
        """A history ending with tool calls is refused, naming the last message."""
        with pytest.raises(MalformedMessageError, match=r"messages\[1\]"):
            with_instruction([U("task"), A([TU("a")])], "sum up")


class TestCheckedSummary:
    def test_added_items_are_clipped(self) -> None:
        """A missing task comes back clipped to 300 characters; a missing latest instruction
        up to 8,000, beyond that its head and tail around a notice of the cut."""
        ledger = Ledger(task="t" * 400, latest_instruction="i" * 9_000)
        lines = checked_summary("Nothing kept.", ledger).split("\n")
        assert lines[:4] == [
            "Nothing kept.",
            "",
            "Added from the ledger (missing from the summary above):",
            f"- task: {'t' * 299}…",
        ]
        latest = "\n".join(lines[4:])
        assert latest.startswith(f"- latest user instruction: {'i' * 4_800}\n[... 1,000 characters")
        assert latest.endswith("\n" + "i" * 3_200)

    def test_items_at_the_limits_come_back_whole(self) -> None:
        """A task of 300 characters and an instruction of 8,000 are added as they are."""
        ledger = Ledger(task="t" * 300, latest_instruction="i" * 8_000)
        assert checked_summary("x", ledger).split("\n")[3:] == [
            f"- task: {'t' * 300}",
            f"- latest user instruction: {'i' * 8_000}",
        ]


LEDGER = Ledger(
    task="Fix it.",
    instructions=("one\ntwo", "Use b."),
    commands=("ls -F", "pytest -x"),
    files_edited=("a.py",),
    files_read=("r.py",),
    latest_instruction="Use b.",
    latest_instruction_at=4,
    intent="Done.",
)
WHOLE = continuation(None, LEDGER)


def without(*lines: str) -> str:
    return "\n".join(line for line in WHOLE.split("\n") if line not in lines)


class TestFittedContinuation:
    """A continuation made to fit ``max_chars``: the ledger's droppable lines go oldest first
    (commands, then earlier instructions with their continuation lines, then reads and the last
    statement), a heading left with nothing under it goes too."""

    def test_the_ledger_alone_in_full(self) -> None:
        assert WHOLE.split("\n")[2:] == [
            "## State of work (authoritative: computed by windowkeeper from the full conversation"
            " history, not written by a model)",
            "Task: the first message of this conversation, above (not repeated here)",
            "User instructions after the task, oldest first (verbatim):",
            "- one",
            "  two",
            "- Use b.",
            "Latest user instruction: Use b.",
            "Files edited: a.py",
            "Files read: r.py",
            "Commands run (oldest first):",
            "- `ls -F`",
            "- `pytest -x`",
            "Last statement of the assistant: Done.",
        ]

    def test_at_its_length_nothing_goes(self) -> None:
        assert continuation(None, LEDGER, max_chars=len(WHOLE)) == WHOLE

    @pytest.mark.parametrize("short", [1, 10])
    def test_the_oldest_command_goes_first(self, short: int) -> None:
        """One to ten characters short (the line and its newline): the oldest command only."""
        fitted = continuation(None, LEDGER, max_chars=len(WHOLE) - short)
        assert fitted == without("- `ls -F`")

    def test_an_instruction_goes_with_its_continuation_lines(self) -> None:
        """Past the commands, the oldest earlier instruction goes, both of its lines."""
        fitted = continuation(None, LEDGER, max_chars=len(WHOLE) - 10 - 14 - 12)
        assert fitted == without(
            "Commands run (oldest first):", "- `ls -F`", "- `pytest -x`", "- one", "  two"
        )

    def test_the_shortest(self) -> None:
        """The shortest continuation keeps the must-keep lines only."""
        shortest = without(
            "User instructions after the task, oldest first (verbatim):",
            "- one",
            "  two",
            "- Use b.",
            "Files read: r.py",
            "Commands run (oldest first):",
            "- `ls -F`",
            "- `pytest -x`",
            "Last statement of the assistant: Done.",
        )
        assert shortest_continuation(LEDGER) == len(shortest)
        assert continuation(None, LEDGER, max_chars=len(shortest)) == shortest

    CUT_WHOLE = (
        "[windowkeeper: earlier turns removed; the state of work, cut to fit:]\n"
        "Latest user instruction: Use b.\n"
        "Files edited: a.py"
    )

    def test_below_the_must_keep_lines_they_come_first(self) -> None:
        """Under the shortest continuation the text is cut as a whole: its must-keep lines
        under a short notice, so a 300-character budget still carries the latest instruction
        (the full notices and the ledger's heading go)."""
        assert shortest_continuation(LEDGER) > 300
        assert continuation(None, LEDGER, max_chars=300) == self.CUT_WHOLE

    def test_below_any_text_the_notice_alone(self) -> None:
        """A budget under the cut's own notice keeps nothing of the text but the notice."""
        cut = len(self.CUT_WHOLE)
        assert continuation(None, LEDGER, max_chars=100) == (
            f"\n[... {cut:,} characters cut by windowkeeper to fit the context window ...]\n"
        )

    SUMMARY = "Fix it. a.py Use b. " + "s" * 1_000  # holds every must-keep item

    def _room(self) -> tuple[str, str, int]:
        """The summary's notice, the shortest ledger, and the size of the continuation with an
        empty summary and that ledger."""
        notice = continuation("x", Ledger()).split("\n\n")[0]
        ledger_text = continuation(None, LEDGER, max_chars=shortest_continuation(LEDGER))
        ledger_text = ledger_text.split("\n\n", 1)[1]
        return notice, ledger_text, len(f"{notice}\n\n\n\n{ledger_text}")

    def test_a_summary_clipped_to_200_characters_is_kept(self) -> None:
        """With room for 200 characters of summary (and 100 for the cut's notice), its head and
        tail are kept, then the shortest ledger."""
        notice, ledger_text, empty = self._room()
        fitted = continuation(self.SUMMARY, LEDGER, max_chars=empty + 300)
        assert fitted.startswith(f"{notice}\n\n{self.SUMMARY[:120]}\n[... 820 characters cut")
        assert fitted.endswith(f"{self.SUMMARY[-80:]}\n\n{ledger_text}")
        assert len(fitted) <= empty + 300

    def test_a_summary_with_less_room_is_dropped(self) -> None:
        """One character less and the summary goes: the ledger alone, its own notice first."""
        _, _, empty = self._room()
        fitted = continuation(self.SUMMARY, LEDGER, max_chars=empty + 299)
        assert fitted == continuation(None, LEDGER, max_chars=shortest_continuation(LEDGER))


class TestSummaryOf:
    def test_the_summary_is_read_back(self) -> None:
        """The summary a continuation carries, blank lines inside it included."""
        summary = "Fix it. a.py Use b.\n\nThen the rest."
        assert summary_of(continuation(summary, LEDGER)) == summary
        assert summary_of(continuation(None, LEDGER)) is None
