"""The ledger: the state of work read from a history without any model."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper.session._ledger import (
    LEDGER_HEADING,
    Ledger,
    LedgerBuilder,
    build_ledger,
    clip,
    missing_items,
    normalized,
    render_ledger,
)
from windowkeeper.session._native_reads import normalize_path

from ..strategies import TR, A, T, U, conversations

TRACE = "cline-native-gcp-refactor-redacted"
EDIT_NAMES = ("write_to_file", "replace_in_file")


def call(call_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


def expected_edits(history: list[dict[str, Any]]) -> set[str]:
    """Edited paths found the plain way: edit calls' ``path`` and Cline's edit headers."""
    found: set[str] = set()
    for index, message in enumerate(history):
        content = message["content"]
        if not isinstance(content, list):
            content = [T(content)]
        for block in content:
            if block["type"] == "tool_use" and block["name"] in EDIT_NAMES:
                found.add(normalize_path(block["input"]["path"]))
            texts = [block.get("text")] if block["type"] == "text" else []
            if block["type"] == "tool_result":
                inner = block.get("content")
                texts = [inner] if isinstance(inner, str) else [b.get("text") for b in inner]
            for text in texts:
                if index and isinstance(text, str) and text.startswith("[write_to_file for '"):
                    found.add(normalize_path(text.split("'")[1]))
    return found


EXAMPLES = settings(max_examples=60)


class TestLaws:
    @EXAMPLES
    @given(conversations(max_size=16))
    def test_never_mutates(self, history: list[dict[str, Any]]) -> None:
        """Building, rendering and checking a ledger leave the history as it was."""
        before = copy.deepcopy(history)
        ledger = build_ledger(history)
        missing_items(render_ledger(ledger), ledger)
        assert history == before

    @EXAMPLES
    @given(conversations(max_size=16), st.integers(0, 16))
    def test_incremental_equals_whole(self, history: list[dict[str, Any]], cut: int) -> None:
        """Feeding a prefix, reading the ledger, then feeding the rest gives the whole's ledger."""
        builder = LedgerBuilder()
        builder.extend(history[:cut])
        early = builder.ledger()
        twin = builder.copy()
        builder.extend(history[cut:])
        assert builder.ledger() == build_ledger(history)
        assert twin.ledger() == early == build_ledger(history, cut)
        assert builder.count == len(history)

    @EXAMPLES
    @given(conversations(max_size=16))
    def test_every_edited_path_appears(self, history: list[dict[str, Any]]) -> None:
        """Every file an edit call or an edit header names is in files_edited and the render."""
        ledger = build_ledger(history)
        edited = {normalize_path(path) for path in ledger.files_edited}
        assert expected_edits(history) <= edited
        assert len(edited) == len(ledger.files_edited)  # one entry per file
        rendered = normalized(render_ledger(ledger))
        assert all(normalized(path) in rendered for path in ledger.files_edited)

    @EXAMPLES
    @given(conversations(max_size=16))
    def test_render_passes_its_own_check(self, history: list[dict[str, Any]]) -> None:
        """A rendered ledger carries every must-keep item of the ledger."""
        ledger = build_ledger(history)
        assert missing_items(render_ledger(ledger), ledger) == []

    @EXAMPLES
    @given(conversations(max_size=16, ends_with="assistant"))
    def test_calls_at_the_end_are_unanswered(self, history: list[dict[str, Any]]) -> None:
        """When the history ends with tool calls, exactly those are waiting for a result."""
        last = history[-1]["content"]
        calls = [b for b in last if b["type"] == "tool_use"] if isinstance(last, list) else []
        assert len(build_ledger(history).unanswered) == len(calls)

    @EXAMPLES
    @given(conversations(max_size=16, ends_with="user"))
    def test_answered_calls_are_not_waiting(self, history: list[dict[str, Any]]) -> None:
        """In a well-formed history ending with the results, no call is waiting."""
        assert build_ledger(history).unanswered == ()


class TestTaskAndInstructions:
    def test_the_task_is_message_zero(self) -> None:
        """The task is message 0's text; later plain user texts are instructions, in order."""
        history = [U("Add pagination."), A("On it."), U("Use cursors."), A("ok"), U("Add tests.")]
        ledger = build_ledger(history)
        assert ledger.task == "Add pagination."
        assert ledger.instructions == ("Use cursors.", "Add tests.")
        assert ledger.latest_instruction == "Add tests."
        assert ledger.intent == "ok"

    def test_cline_task_element_and_boilerplate(self) -> None:
        """Cline's <task> is the task; environment details and reminders are nobody's words."""
        history = [
            U(
                [
                    T("<task>\nFix the login page\n</task>"),
                    T("<environment_details>\nx\n</environment_details>"),
                ]
            ),
            A("Looking."),
            U(
                [
                    T("[TASK RESUMPTION] This task was interrupted."),
                    T("<environment_details>y</environment_details>"),
                ]
            ),
        ]
        ledger = build_ledger(history)
        assert ledger.task == "Fix the login page"
        assert ledger.instructions == ()

    def test_the_users_words_inside_cline_results(self) -> None:
        """<feedback>, <answer> and <user_message> in Cline's texts are instructions."""
        history = [
            U("Deploy it."),
            A([call("a", "ask_followup_question", question="Which project?")]),
            U(
                [
                    T(
                        "[ask_followup_question for 'Which project?'] Result:\n<answer>\nthe new one\n</answer>"
                    )
                ]
            ),
            A([call("b", "attempt_completion", result="done")]),
            U(
                [
                    T("[attempt_completion] Result: Done"),
                    T("The user has provided feedback on the results."),
                    T("<feedback>\nalso update the docs\n</feedback>"),
                ]
            ),
            A("ok"),
            U(
                [
                    T(
                        "New instructions for task continuation:\n<user_message>\nstop here\n</user_message>"
                    )
                ]
            ),
        ]
        ledger = build_ledger(history)
        assert ledger.instructions == ("the new one", "also update the docs", "stop here")

    def test_repeated_instruction_is_latest(self) -> None:
        """An instruction repeated later is listed once, and is the latest."""
        history = [U("task"), A("a"), U("continue"), A("b"), U("fix x"), A("c"), U("continue")]
        ledger = build_ledger(history)
        assert ledger.instructions == ("continue", "fix x")
        assert ledger.latest_instruction == "continue"

    def test_tool_results_are_not_instructions(self) -> None:
        """The content of a tool_result is never taken for the user's words."""
        history = [U("task"), A([call("a", "run_tests")]), U([TR("a", "2 failed")])]
        assert build_ledger(history).instructions == ()

    def test_long_texts_are_clipped(self) -> None:
        """A long task is clipped, and the clip says so."""
        ledger = build_ledger([U("x" * 10_000)])
        assert len(ledger.task) == 2_000
        assert ledger.task.endswith("…")
        assert clip("  short  ", 10) == "short"


class TestFilesAndCommands:
    def test_native_calls(self) -> None:
        """Reads, edits, editor commands, patches and shell reads of the common agents."""
        history = [
            U("task"),
            A(
                [
                    call("1", "Read", file_path="./src/app.py"),
                    call("2", "Edit", file_path="src/app.py", old_string="a", new_string="b"),
                    call("3", "str_replace_editor", command="view", path="/repo/x.py"),
                    call("4", "str_replace_editor", command="str_replace", path="/repo/y.py"),
                    call(
                        "5",
                        "apply_patch",
                        input="*** Begin Patch\n*** Add File: new.py\n+x\n*** End Patch",
                    ),
                    call("6", "shell", command=["bash", "-lc", "cat README.md"]),
                    call("7", "Bash", command="pytest -q"),
                ]
            ),
            U([TR(str(n), "ok") for n in range(1, 8)]),
        ]
        ledger = build_ledger(history)
        assert ledger.files_read == ("./src/app.py", "/repo/x.py", "README.md")
        assert ledger.files_edited == ("src/app.py", "/repo/y.py", "new.py")
        assert ledger.commands == ("cat README.md", "pytest -q")
        assert ledger.unanswered == ()

    def test_cline_text_headers(self) -> None:
        """Cline's result headers name reads, edits and commands, and answer the calls."""
        history = [
            U("task"),
            A(
                [
                    call("1", "read_file", path="a.py"),
                    call("2", "replace_in_file", path="b.py", diff="..."),
                    call("3", "execute_command", command="npm test", requires_approval=False),
                ]
            ),
            U(
                [
                    T("[read_file for 'a.py'] Result:\nprint(1)"),
                    T("[replace_in_file for 'b.py'] Result:\nsaved"),
                    T("[execute_command for 'npm test'] Result:\nok"),
                ]
            ),
            A("Next."),
            U([T("[write_to_file for 'c.py'] Result:\nThe content was saved.")]),
        ]
        ledger = build_ledger(history)
        assert ledger.files_read == ("a.py",)
        assert ledger.files_edited == ("b.py", "c.py")
        assert ledger.commands == ("npm test",)
        assert ledger.unanswered == ()

    def test_unanswered_calls(self) -> None:
        """Calls of the last assistant turn without a result are waiting; answered ones are not."""
        history = [
            U("task"),
            A([call("1", "read_file", path="a.py"), call("2", "read_file", path="b.py")]),
            U([TR("1", "x")]),
        ]
        assert build_ledger(history).unanswered == ("read_file b.py",)
        history.append(A("done"))
        assert build_ledger(history).unanswered == ()

    def test_paths_compare_loosely(self) -> None:
        """A summary naming a Windows path with slashes, in another case, still holds it."""
        ledger = Ledger(task="t", files_edited=("C:\\Repo\\src\\A.py",))
        assert missing_items("task: T. Changed c:/repo/src/a.py.", ledger) == []
        assert missing_items("none at all", ledger) == ["t", "C:\\Repo\\src\\A.py"]
        assert missing_items("t: data.py", Ledger(task="t", files_edited=("a.py",))) == ["a.py"]

    def test_a_long_item_by_its_start(self) -> None:
        """A long task counts as kept when its start is quoted, even cut inside a word."""
        task = "Refactor the storage layer " * 20
        ledger = Ledger(task=task)
        assert missing_items(f"The task: {task[:200]}", ledger) == []
        assert missing_items(f"The task: {task[:100]}", ledger) == [task]


class TestRender:
    def test_heading_and_sections(self) -> None:
        """The render says it is authoritative and lists what the ledger holds."""
        history = [
            U("task"),
            A([T("I will read a.py."), call("1", "read_file", path="a.py")]),
        ]
        text = render_ledger(build_ledger(history))
        assert text.startswith(LEDGER_HEADING)
        assert "authoritative" in text
        assert "Task (verbatim): task" in text
        assert "read_file a.py" in text
        assert "I will read a.py." in text


@pytest.fixture
def trace(corpus: Path) -> list[dict[str, Any]]:
    path = corpus / TRACE / "api_conversation_history.json"
    if not path.is_file():
        pytest.skip(f"{TRACE} not in the corpus")
    history: list[dict[str, Any]] = json.loads(path.read_text("utf-8"))
    return history


def test_the_real_trace(trace: list[dict[str, Any]]) -> None:
    """The 443-message trace: its task, its user's words, the files it edited and read."""
    assert len(trace) == 443
    before = copy.deepcopy(trace)
    builder = LedgerBuilder()
    for message in trace:
        builder.feed(message)
    ledger = builder.ledger()
    assert ledger == build_ledger(trace)
    assert trace == before
    assert ledger.task.startswith("The attached is a technical writeup for this application")
    assert ledger.latest_instruction == "What model are you operating at?"
    assert "Approved - Run Cloud Build deployment" in ledger.instructions
    assert not any(text.startswith("<environment_details>") for text in ledger.instructions)
    assert "c:\\Apps\\MRA04242026\\src\\lib\\gcs-storage.ts" in ledger.files_edited
    assert "src/lib/firebase.ts" in ledger.files_read
    assert len(ledger.files_edited) >= 20
    assert len(ledger.commands) >= 50
    assert [call.split()[0] for call in ledger.unanswered] == ["plan_mode_respond"]
    rendered = render_ledger(ledger)
    assert missing_items(rendered, ledger) == []
    assert len(rendered) < 12_000  # a few thousand tokens, for 443 messages
