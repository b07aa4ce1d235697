"""The ledger: the state of work read from a history without any model."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import Ledger
from windowkeeper.session._ledger import (
    LEDGER_HEADING,
    LedgerBuilder,
    build_ledger,
    clip,
    missing_items,
    normalized,
    render_ledger,
)
from windowkeeper.session._ledger_text import INSTRUCTION_ABOVE, TASK_ABOVE
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


PATCH = "*** Begin Patch\n*** Update File: app/models/invoice.py\n@@\n-a\n+b\n*** End Patch"


class TestEditsOfEveryAgent:
    """Files edited, as each agent's tool calls name them."""

    @pytest.mark.parametrize(
        ("calls", "edited"),
        [
            (  # Claude Code
                [
                    call("1", "Write", file_path="a.py", content="x"),
                    call("2", "Edit", file_path="b.py", old_string="x", new_string="y"),
                    call("3", "MultiEdit", file_path="c.py", edits=[]),
                    call("4", "Bash", command="echo x > d.txt && sed -i s/a/b/ e.py"),
                ],
                ("a.py", "b.py", "c.py", "d.txt", "e.py"),
            ),
            (  # Codex: a free-form apply_patch, a shell argv, a patch through the shell
                [
                    call("1", "apply_patch", input=PATCH),
                    call("2", "shell", command=["bash", "-lc", "cat <<'EOF' > f.md\nx\nEOF"]),
                    call("3", "shell", command=["apply_patch", PATCH.replace("invoice", "tax")]),
                ],
                ("app/models/invoice.py", "f.md", "app/models/tax.py"),
            ),
            (  # OpenCode
                [
                    call("1", "apply_patch", patchText=PATCH),
                    call("2", "edit", filePath="/w/g.ts", oldString="a", newString="b"),
                    call("3", "write", filePath="/w/h.ts", content="x"),
                ],
                ("app/models/invoice.py", "/w/g.ts", "/w/h.ts"),
            ),
            (  # Gemini CLI
                [
                    call("1", "replace", file_path="/p/i.py", old_string="a", new_string="b"),
                    call("2", "write_file", file_path="/p/j.py", content="x"),
                    call("3", "run_shell_command", command="date | tee k.log"),
                ],
                ("/p/i.py", "/p/j.py", "k.log"),
            ),
            (  # Cline and Roo, native
                [
                    call("1", "write_to_file", absolutePath="/r/l.cs", content="x"),
                    call("2", "replace_in_file", path="m.cs", diff="..."),
                    call("3", "apply_diff", path="n.cs", diff="..."),
                    call("4", "patch", patch="--- a/o.py\n+++ b/o.py\n@@\n-a\n+b\n"),
                ],
                ("/r/l.cs", "m.cs", "n.cs", "o.py"),
            ),
        ],
    )
    def test_native_calls(self, calls: list[dict[str, Any]], edited: tuple[str, ...]) -> None:
        """Edit tools by their path keys, patch texts by their headers, shell writes."""
        history = [U("task"), A(calls), U([TR(c["id"], "ok") for c in calls])]
        assert build_ledger(history).files_edited == edited

    def test_cline_xml_calls(self) -> None:
        """Cline's and Roo's XML tool calls in assistant text: files, commands, the todo list."""
        text = (
            "I will write it.\n<write_to_file>\n<path>src/a.ts</path>\n<content>\n<path>nope</path>\n"
            "</content>\n</write_to_file>\n<execute_command>\n<command>npm test > out.txt</command>\n"
            "</execute_command>\n<apply_diff><args><file><path>b.ts</path><diff>x</diff></file>"
            "<file><path>c.ts</path></file></args></apply_diff>\n"
            "<update_todo_list>\n<todos>\n[x] Read the code\n[-] Write the fix\n</todos>\n</update_todo_list>"
        )
        ledger = build_ledger([U("task"), A(text)])
        assert ledger.files_edited == ("src/a.ts", "out.txt", "b.ts", "c.ts")
        assert ledger.commands == ("npm test > out.txt",)
        assert ledger.todos == "[x] Read the code\n[-] Write the fix"


class TestTodos:
    @pytest.mark.parametrize(
        ("name", "tool_input", "todos"),
        [
            (
                "TodoWrite",
                {
                    "todos": [
                        {"content": "Read", "status": "completed", "activeForm": "Reading"},
                        {"content": "Fix", "status": "in_progress", "activeForm": "Fixing"},
                        {"content": "Test", "status": "pending", "activeForm": "Testing"},
                    ]
                },
                "- [x] Read\n- [-] Fix\n- [ ] Test",
            ),
            (
                "update_plan",
                {"explanation": "x", "plan": [{"step": "Patch", "status": "completed"}]},
                "- [x] Patch",
            ),
            (
                "write_todos",
                {"todos": [{"description": "Port", "status": "cancelled"}]},
                "- [cancelled] Port",
            ),
            ("todowrite", {"todos": []}, "(empty list)"),
            ("update_todo_list", {"todos": "[x] One\n[ ] Two\n"}, "[x] One\n[ ] Two"),
            (
                "read_file",
                {"path": "a", "task_progress": "- [x] Look\n- [ ] Fix"},
                "- [x] Look\n- [ ] Fix",
            ),
        ],
    )
    def test_todo_calls(self, name: str, tool_input: dict[str, Any], todos: str) -> None:
        """Each agent's todo / plan call, and Cline's task_progress, as a checklist."""
        assert build_ledger([U("task"), A([call("1", name, **tool_input)])]).todos == todos

    def test_the_latest_call_wins(self) -> None:
        """The list is the latest call's; a plan-mode answer is no plan."""
        history = [
            U("task"),
            A([call("1", "TodoWrite", todos=[{"content": "A", "status": "pending"}])]),
            U([TR("1")]),
            A([call("2", "TodoWrite", todos=[{"content": "A", "status": "completed"}])]),
            U([TR("2")]),
            A([call("3", "plan_mode_respond", response="Here is my plan")]),
        ]
        assert build_ledger(history).todos == "- [x] A"


class TestErrors:
    def test_the_last_failure_is_kept_until_the_same_call_succeeds(self) -> None:
        """A failed call stays the last error through other successes; its own success clears it."""
        history = [
            U("task"),
            A([call("1", "Bash", command="pytest -q")]),
            U([{**TR("1", "2 failed"), "is_error": True}]),
            A([call("2", "Bash", command="ls")]),
            U([TR("2", "a.py")]),
        ]
        assert build_ledger(history).last_error == "Bash pytest -q: 2 failed"
        history += [A([call("3", "Bash", command="pytest -q")]), U([TR("3", "5 passed")])]
        assert build_ledger(history).last_error is None

    @pytest.mark.parametrize(
        ("result", "failed"),
        [
            ("Exit code: 1\nWall time: 0.2 seconds\nOutput:\nboom", True),
            ('{"output": "ok", "metadata": {"exit_code": 0}}', False),
            ("Command failed with exit code 2.\nOutput:\nnope", True),
            ("[The command completed with exit code 0.]", False),
            ("all good", False),
        ],
    )
    def test_exit_codes(self, result: str, failed: bool) -> None:
        """Exit codes and Cline's failure notice tell a failure without an is_error flag."""
        history = [U("task"), A([call("1", "shell", command="make")]), U([TR("1", result)])]
        assert (build_ledger(history).last_error is not None) is failed

    def test_cline_text_results(self) -> None:
        """Cline's text result of a failed command is an error until the command succeeds."""
        failed = "[execute_command for 'npm test'] Result:\nCommand failed with exit code 1."
        history = [U("task"), A("a"), U([T(failed)])]
        assert build_ledger(history).last_error == (
            "execute_command npm test: Command failed with exit code 1."
        )
        history += [A("b"), U([T("[execute_command for 'npm test'] Result:\nexit code 0")])]
        assert build_ledger(history).last_error is None


class TestInstructionsAfterResults:
    WORDS = "Stop: use PostgreSQL 14, not SQLite."

    @pytest.mark.parametrize(
        "results",
        [
            [TR("1", "ok")],  # a native result (the OpenAI shape joins the next user message)
            [T("[execute_command for 'ls'] Result:\na.py")],  # Cline's text result
            [T("[read_file for 'a.py'] Result:\nprint(1)")],  # a file's contents in the header
        ],
    )
    def test_words_after_a_result(self, results: list[dict[str, Any]]) -> None:
        """A text after the results of the same message is the user's instruction."""
        history = [U("task"), A([call("1", "Bash", command="ls")]), U([*results, T(self.WORDS)])]
        ledger = build_ledger(history)
        assert ledger.instructions == (self.WORDS,)
        assert ledger.latest_instruction == self.WORDS

    def test_clines_older_layout(self) -> None:
        """A text that is only a header has its result in the next text: not instructions."""
        history = [
            U("task"),
            A("a"),
            U([T("[read_file for 'a.py'] Result:"), T("print(1)"), T(self.WORDS)]),
        ]
        assert build_ledger(history).instructions == (self.WORDS,)

    def test_roos_long_header(self) -> None:
        """Roo's header with a sentence inside the brackets is a header, and names the read."""
        header = "[read_file for 'US.md'. Reading multiple files at once is better.] Result:"
        ledger = build_ledger([U("task"), A("a"), U([T(f"{header}\n<files>x</files>")])])
        assert ledger.instructions == ()
        assert ledger.files_read == ("US.md",)


class TestMachinery:
    @pytest.mark.parametrize(
        "text",
        [
            "<system-reminder>\nThe todo list is empty.\n</system-reminder>",
            "This session is being continued from a previous conversation that ran out of"
            " context. The conversation is summarized below: ...",
            "[Request interrupted by user for tool use]",
            "[Request interrupted by user]",
            "<environment_details>\n# Time\n</environment_details>",
            "The user has provided feedback on the results. Consider their input.",
            "Tool [read_file] was not executed because a tool has already been used.",
            "Command failed with exit code 1.\nOutput:\nx",
            "# TODO LIST UPDATE REQUIRED - You MUST include the task_progress parameter",
        ],
    )
    def test_agent_texts_are_not_instructions(self, text: str) -> None:
        """Reminders, continuation notices, interruption markers and Cline's notices."""
        history = [U("task"), A([call("1", "Bash", command="ls")]), U([TR("1"), T(text)])]
        assert build_ledger(history).instructions == ()
        assert build_ledger([U("task"), A("a"), U(text)]).instructions == ()

    def test_a_reminder_inside_the_users_text(self) -> None:
        """An inserted reminder is removed; the user's words around it stay."""
        text = "Fix the bug.\n<system-reminder>\nx\n</system-reminder>\nThen run the tests."
        ledger = build_ledger([U("task"), A("a"), U(text)])
        assert ledger.latest_instruction == "Fix the bug.\n\nThen run the tests."


class TestTextCommands:
    """An agent without native tools that ends its message with a fenced command (SWE-agent,
    mini-swe-agent): the next user message is the command's output, not an instruction."""

    ISSUE = "Solve this issue: the Pixel Representation element should be optional."
    OUTPUT = "Traceback (most recent call last):\n  File 'a.py', line 3\n(Open file: a.py)\nbash-$"

    @pytest.mark.parametrize(
        ("said", "instructions", "latest"),
        [
            # a bare fence, a shell's fence: the harness runs it, the output is no instruction
            ("Let's run it.\n\n```\npython a.py\n```", (ISSUE,), ISSUE),
            ("Run:\n```bash\npython a.py\n```\n", (ISSUE,), ISSUE),
            # a multi-line command (SWE-agent's edit) is one block
            ("Fix:\n```\nedit 1:1\nx = 1\nend_of_edit\n```", (ISSUE,), ISSUE),
            # code shown to the reader, or text after the block: the user answers
            ("Here it is:\n```python\nprint(1)\n```", (ISSUE, OUTPUT), OUTPUT),
            ("```\npython a.py\n```\nTell me what it prints.", (ISSUE, OUTPUT), OUTPUT),
            ("No command here.", (ISSUE, OUTPUT), OUTPUT),
            ("Inline ```ls``` only", (ISSUE, OUTPUT), OUTPUT),
        ],
    )
    def test_what_the_ledger_records(
        self, said: str, instructions: tuple[str, ...], latest: str
    ) -> None:
        """Exactly which user texts are instructions after each kind of assistant text."""
        history = [U("demonstration"), U(self.ISSUE), A(said), U(self.OUTPUT)]
        ledger = build_ledger(history)
        assert ledger.instructions == instructions
        assert ledger.latest_instruction == latest

    def test_only_the_next_message_is_output(self) -> None:
        """After the output, the user's next message (no command before it) is theirs."""
        history = [U("task"), A("Run:\n```\nls\n```"), U(self.OUTPUT), A("Done."), U("Now test.")]
        assert build_ledger(history).instructions == ("Now test.",)

    def test_an_agent_with_native_tools_shows_code(self) -> None:
        """Once the history has a native tool call, fenced blocks are code shown, not run."""
        history = [
            U("task"),
            A([call("1", "Bash", command="ls")]),
            U([TR("1", "a.py")]),
            A("Try this yourself:\n```\npython a.py\n```"),
            U("It printed 3; make it print 4."),
        ]
        assert build_ledger(history).latest_instruction == "It printed 3; make it print 4."

    def test_the_users_tagged_words_in_an_output(self) -> None:
        """Words the harness wraps as the user's are read even in a command's output."""
        history = [U("task"), A("```\nls\n```"), U("a.py\n<feedback>\nUse b.py.\n</feedback>")]
        assert build_ledger(history).latest_instruction == "Use b.py."

    @pytest.mark.parametrize(
        "text", ["OBSERVATION:\nfile a.py", "Observation: 3 files", "EXECUTION RESULT of [cmd]:"]
    )
    def test_observation_texts_are_not_instructions(self, text: str) -> None:
        """A harness's marked observation is its output, whatever came before it."""
        assert build_ledger([U("task"), A("a"), U(text)]).instructions == ()


class TestRenderedAfterTheFirstPair:
    """A ledger sent right after messages 0-1 names what they hold instead of repeating it."""

    ISSUE = "Solve this issue: the Pixel Representation element should be optional."

    def test_task_and_an_instruction_in_message_1_are_named(self) -> None:
        ledger = build_ledger([U("demonstration"), U(self.ISSUE), A("```\nls\n```"), U("a.py")])
        assert ledger.latest_instruction_at == 1
        text = render_ledger(ledger, task=False)
        assert TASK_ABOVE in text
        assert INSTRUCTION_ABOVE in text
        assert self.ISSUE not in text
        assert "demonstration" not in text
        assert self.ISSUE in render_ledger(ledger)

    def test_a_later_instruction_is_quoted(self) -> None:
        ledger = build_ledger([U("task"), A("a"), U(self.ISSUE)])
        assert ledger.latest_instruction_at == 2
        text = render_ledger(ledger, task=False)
        assert f"Latest user instruction: {self.ISSUE}" in text
        assert INSTRUCTION_ABOVE not in text


class TestLongInstruction:
    def test_kept_whole_up_to_8000(self) -> None:
        """An instruction of 8,000 characters is kept verbatim."""
        words = "Fix route /api/v1/item now. " * 285 + "END"
        assert len(words) <= 8_000
        assert build_ledger([U("t"), A("a"), U(words)]).latest_instruction == words.strip()

    def test_head_and_tail_beyond(self) -> None:
        """Beyond 8,000 characters the head and the tail are kept, with the count of the cut."""
        words = "HEAD " + "x" * 20_000 + " TAIL"
        kept = build_ledger([U("t"), A("a"), U(words)]).latest_instruction
        assert kept is not None
        assert kept.startswith("HEAD ")
        assert kept.endswith(" TAIL")
        assert "\n[… 12,090 characters cut here …]\n" in kept
        assert len(kept) <= 8_000


def test_the_rendered_ledger() -> None:
    """The exact render of a small Claude Code history with every section."""
    history = [
        U("Build the billing module."),
        A(
            [
                T("Planning."),
                call("1", "TodoWrite", todos=[{"content": "Models", "status": "in_progress"}]),
                call("2", "apply_patch", patchText=PATCH),
                call("3", "Bash", command="pytest -q > out.txt"),
            ]
        ),
        U(
            [
                TR("1"),
                TR("2"),
                {**TR("3", "1 failed"), "is_error": True},
                T("Use PostgreSQL 14."),
                T("<system-reminder>x</system-reminder>"),
            ]
        ),
    ]
    assert render_ledger(build_ledger(history)) == "\n".join(
        [
            LEDGER_HEADING,
            "Task (verbatim): Build the billing module.",
            "User instructions after the task, oldest first (verbatim):",
            "- Use PostgreSQL 14.",
            "Latest user instruction: Use PostgreSQL 14.",
            "Files edited: app/models/invoice.py, out.txt",
            "Todo / plan list (latest):",
            "  - [-] Models",
            "Last unresolved error: Bash pytest -q > out.txt: 1 failed",
            "Commands run (oldest first):",
            "- `pytest -q > out.txt`",
            "Last statement of the assistant: Planning.",
        ]
    )
