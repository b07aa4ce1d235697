"""The ledger, case by case: each clip limit, list limit and branch of the builder, and where a
must-keep item may stand in a summary, pinned on small hand-written histories."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from windowkeeper import Ledger
from windowkeeper.session._ledger import (
    LEDGER_HEADING,
    LedgerBuilder,
    build_ledger,
    clip,
    head_and_tail,
    missing_items,
    render_ledger,
)

from ..builders import TR, A, T, U, image_block


def call(call_id: str, name: str, **tool_input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": tool_input}


class TestBoundaries:
    """Each clip limit, each branch of the builder, pinned on a small history."""

    def test_each_list_is_clipped_at_its_limit(self) -> None:
        """A command is kept to 300 characters, the intent to 600, the todo list to 4,000, an
        error to 600: one character under each, and an ellipsis for the cut."""
        history = [
            U("t"),
            A(
                [
                    T("z" * 700),
                    call("1", "Bash", command="x" * 400),
                    call("2", "update_todo_list", todos="[ ] " + "w" * 5_000),
                ]
            ),
            U([TR("1", "Exit code: 1\n" + "y" * 1_000), TR("2")]),
        ]
        ledger = build_ledger(history)
        assert ledger.commands == ("x" * 299 + "…",)
        assert ledger.intent == "z" * 599 + "…"
        assert ledger.todos == "[ ] " + "w" * 3_995 + "…"
        assert ledger.last_error is not None
        assert len(ledger.last_error) == 600
        assert ledger.last_error.startswith("Bash " + "x" * 400 + ": Exit code: 1 yyy")

    def test_texts_at_the_limits_are_kept_whole(self) -> None:
        """A command of exactly 300 characters and an intent of exactly 600 are not cut."""
        history = [U("t"), A([T("z" * 600), call("1", "Bash", command="x" * 300)])]
        ledger = build_ledger(history)
        assert ledger.commands == ("x" * 300,)
        assert ledger.intent == "z" * 600

    def test_a_copy_keeps_every_list(self) -> None:
        """A builder's copy holds the reads, edits and commands seen before it was made."""
        builder = LedgerBuilder()
        builder.extend(
            [
                U("t"),
                A(
                    [
                        call("1", "read_file", path="a.py"),
                        call("2", "write_to_file", path="b.py", content="x"),
                        call("3", "Bash", command="ls"),
                    ]
                ),
                U([TR("1"), TR("2"), TR("3"), T("go on")]),
            ]
        )
        twin = builder.copy()
        builder.feed(A([call("4", "read_file", path="c.py")]))
        ledger = twin.ledger()
        assert (ledger.files_read, ledger.files_edited) == (("a.py",), ("b.py",))
        assert (ledger.commands, ledger.instructions, ledger.messages) == (("ls",), ("go on",), 3)
        assert builder.ledger().files_read == ("a.py", "c.py")

    def test_a_message_of_another_role_first(self) -> None:
        """No command was issued before a first user message at index 1 after another role: its
        text is the user's instruction, not a command's output, and not the task."""
        ledger = build_ledger([{"role": "system", "content": "sys"}, U("do X")])
        assert (ledger.task, ledger.instructions, ledger.latest_instruction_at) == (
            "",
            ("do X",),
            1,
        )

    def test_the_task_skips_blocks_that_are_not_text(self) -> None:
        """An image or a stray value in message 0 is no part of the task."""
        assert build_ledger([U([image_block(""), "junk", T("Fix this")])]).task == "Fix this"

    def test_a_blank_text_keeps_the_last_statement(self) -> None:
        """A whitespace-only text after a statement does not replace it."""
        assert build_ledger([U("t"), A([T("Plan."), T("   ")])]).intent == "Plan."

    def test_a_header_inside_a_tool_result_answers_nothing_else(self) -> None:
        """A Cline header quoted inside a tool_result does not answer another waiting call."""
        history = [
            U("t"),
            A([call("1", "read_file", path="a.py"), call("2", "read_file", path="b.py")]),
            U([TR("1", "[read_file for 'b.py'] Result:\nx")]),
        ]
        assert build_ledger(history).unanswered == ("read_file b.py",)

    def test_a_text_header_answers_its_call(self) -> None:
        """A Cline result header in a user text answers the waiting call of its tool only."""
        history = [
            U("t"),
            A([call("1", "read_file", path="a.py"), call("2", "execute_command", command="ls")]),
            U([T("[read_file for 'a.py'] Result:\nx")]),
        ]
        assert build_ledger(history).unanswered == ("execute_command ls",)

    def test_a_roo_edit_header_names_the_file(self) -> None:
        """A result header of an edit tool of the default table that Cline lacks (Roo's
        apply_diff) records the edit."""
        history = [U("task"), A("a"), U([T("[apply_diff for 'n.cs'] Result:\nok")])]
        assert build_ledger(history).files_edited == ("n.cs",)

    def test_a_roo_header_keys_its_error_by_the_path(self) -> None:
        """The error of a Roo header with a sentence names the tool and the path only."""
        header = "[read_file for 'US.md'. Reading multiple files at once is better.] Result:"
        history = [U("task"), A("a"), U([T(f"{header}\nCommand failed with exit code 1.")])]
        assert build_ledger(history).last_error == (
            "read_file US.md: Command failed with exit code 1."
        )

    PATCH_WITH_QUOTE = "*** Begin Patch\n*** Add File: it's.py\n+x\n*** End Patch"

    def test_an_argv_patch_is_read_from_the_argv(self) -> None:
        """Codex's ["apply_patch", PATCH]: the path is the patch's, not the quoted line's."""
        history = [
            U("task"),
            A([call("1", "shell", command=["apply_patch", self.PATCH_WITH_QUOTE])]),
            U([TR("1")]),
        ]
        assert build_ledger(history).files_edited == ("it's.py",)

    @pytest.mark.parametrize(
        ("command", "edited"),
        [
            (  # Codex's apply_patch through bash, a heredoc
                [
                    "bash",
                    "-lc",
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.py\n@@\n-a\n+b\n"
                    "*** End Patch\nEOF",
                ],
                ("a.py",),
            ),
            ("git apply <<'EOF'\n--- a/x.py\n+++ b/x.py\n@@\n-a\n+b\nEOF", ("x.py",)),
            (["cat", "a.py"], ()),  # two words, no patch
        ],
    )
    def test_a_patch_in_a_shell_line(self, command: Any, edited: tuple[str, ...]) -> None:
        """A patch text in a shell command (Codex's or a unified diff) names the files."""
        history = [U("task"), A([call("1", "shell", command=command)]), U([TR("1")])]
        assert build_ledger(history).files_edited == edited


class TestTextLimits:
    """The ledger's text: each clip and each list limit at, under and over its bound."""

    def test_clip(self) -> None:
        """A text at the limit is kept; one over keeps limit - 1 characters and an ellipsis."""
        assert clip("abc", 3) == "abc"
        assert clip("abcd", 3) == "ab…"
        assert clip("abcdef", 4) == "abc…"

    def test_head_and_tail(self) -> None:
        """Beyond the limit, two thirds of (limit - 80) from the head and a third from the tail,
        with the exact count of what was cut; at the limit, the text whole."""
        text = "0123456789" * 20
        assert head_and_tail(text, 200) == text
        assert head_and_tail(text, 100) == "01234567890123\n[… 180 characters cut here …]\n456789"
        assert head_and_tail(text, 199) == (
            text[:80] + "\n[… 81 characters cut here …]\n" + text[-39:]
        )

    def test_an_earlier_instruction_is_shown_to_300(self) -> None:
        """An instruction before the latest is shown clipped to 300 characters, the latest whole."""
        early, late = "e" * 400, "l" * 400
        text = render_ledger(Ledger(task="t", instructions=(early, late), latest_instruction=late))
        assert f"- {'e' * 299}…\n- {'l' * 299}…\nLatest user instruction: {late}\n" in text
        short = render_ledger(Ledger(task="t", instructions=("e" * 300,)))
        assert f"- {'e' * 300}\n" in short

    @pytest.mark.parametrize("extra", [0, 1])
    def test_the_lists_show_their_latest(self, extra: int) -> None:
        """20 instructions, 20 commands and 60 reads are shown; beyond, the latest, and a count."""
        ledger = Ledger(
            task="t",
            instructions=tuple(f"i{n}" for n in range(20 + extra)),
            commands=tuple(f"c{n}" for n in range(20 + extra)),
            files_read=tuple(f"r{n}" for n in range(60 + extra)),
        )
        lines = render_ledger(ledger).split("\n")
        instructions = [f"- i{n}" for n in range(extra, 20 + extra)]
        commands = [f"- `c{n}`" for n in range(extra, 20 + extra)]
        reads = ", ".join(f"r{n}" for n in range(extra, 60 + extra))
        assert lines == [
            LEDGER_HEADING,
            "Task (verbatim): t",
            "User instructions after the task, oldest first (verbatim):",
            *(["(1 earlier instructions not shown)"] if extra else []),
            *instructions,
            "Files edited: none",
            f"Files read: {reads}" + (" (and 1 more)" if extra else ""),
            "Commands run (oldest first" + (", 1 earlier not shown" if extra else "") + "):",
            *commands,
        ]

    def test_the_empty_ledger(self) -> None:
        """A builder fed nothing has the empty ledger, rendered with its placeholders; a
        ledger is a frozen value (the builder hands out the same object until the next feed)."""
        ledger = LedgerBuilder().ledger()
        assert (ledger.messages, ledger.task, ledger.instructions) == (0, "", ())
        assert render_ledger(ledger) == "\n".join(
            [LEDGER_HEADING, "Task (verbatim): (no task text)", "Files edited: none"]
        )
        with pytest.raises(dataclasses.FrozenInstanceError):
            ledger.task = "changed"  # type: ignore[misc]


class TestMustKeepMatching:
    """missing_items: where a kept item may sit in a summary, and where it may not."""

    @pytest.mark.parametrize(
        ("summary", "missing"),
        [
            ("a.py was changed", []),  # at the very start
            ("changed a.py", []),  # at the very end
            ("x a.py", []),  # one word before it
            ("edited a.pyc", ["a.py"]),  # runs on into a word after it
            ("see data.py, then a.py", []),  # a later occurrence counts
        ],
    )
    def test_a_path_at_the_edges(self, summary: str, missing: list[str]) -> None:
        """A path counts wherever it stands as a whole word, never inside a longer one."""
        assert missing_items(summary, Ledger(files_edited=("a.py",))) == missing

    def test_an_item_ending_in_punctuation_may_run_on(self) -> None:
        """An item that ends with a full stop is found even when the summary runs on after it."""
        ledger = Ledger(latest_instruction="Use PostgreSQL 14.")
        assert missing_items("latest: use postgresql 14.Next, the schema.", ledger) == []

    def test_a_blank_item_is_never_missing(self) -> None:
        """An item that is only whitespace has nothing to look for."""
        assert missing_items("anything", Ledger(task="  ")) == []

    def test_the_first_160_characters_of_a_long_item(self) -> None:
        """An item over 160 characters counts when its first 160 are quoted, even cut inside a
        word; with 159 it does not."""
        task = "abcdefghij" * 30
        ledger = Ledger(task=task)
        assert missing_items(f"task: {task[:160]}xyz", ledger) == []
        assert missing_items(f"task: {task[:159]}", ledger) == [task]

    def test_an_item_of_160_characters_is_matched_whole(self) -> None:
        """An item of exactly 160 characters must not run on into a word."""
        item = "x" * 160
        assert missing_items(f"task: {item}", Ledger(task=item)) == []
        assert missing_items(f"task: {item}y", Ledger(task=item)) == [item]


class TestCallDetails:
    """How calls are described, joined and read: descriptions, argv lines, result texts."""

    def test_a_waiting_call_is_described_in_160_characters(self) -> None:
        """The detail of a waiting call is clipped to 160 characters."""
        ledger = build_ledger([U("t"), A([call("1", "Bash", command="x" * 200)])])
        assert ledger.unanswered == ("Bash " + "x" * 159 + "…",)

    def test_a_call_without_a_path_is_described_by_its_input(self) -> None:
        """Its input as JSON, keys sorted, non-ASCII characters as they are."""
        history = [U("t"), A([call("1", "ask_followup_question", question="Où ?", options=["a"])])]
        assert build_ledger(history).unanswered == (
            'ask_followup_question {"options": ["a"], "question": "Où ?"}',
        )

    @pytest.mark.parametrize(
        ("command", "line"),
        [
            (["ls", "-la", "src"], "ls -la src"),  # three words, no shell: joined
            (["/bin/zsh", "-c", "make test"], "make test"),  # a shell's script
            (["bash", "-x", "run.sh"], "bash -x run.sh"),  # a shell without -c: joined
        ],
    )
    def test_an_argv_as_a_line(self, command: list[str], line: str) -> None:
        """An argv command is recorded as the line a shell would run."""
        history = [U("t"), A([call("1", "shell", command=command)]), U([TR("1")])]
        assert build_ledger(history).commands == (line,)

    def test_a_result_list_is_read_for_its_texts(self) -> None:
        """A tool_result whose content is a list: its texts tell the failure, images are skipped."""
        history = [
            U("t"),
            A([call("1", "shell", command="make")]),
            U([TR("1", [image_block(""), "junk", T("Exit code: 1")])]),
        ]
        assert build_ledger(history).last_error == "shell make: Exit code: 1"

    @pytest.mark.parametrize(("padding", "failed"), [(1_988, True), (1_989, False)])
    def test_an_exit_code_is_read_in_the_first_2000_characters(
        self, padding: int, failed: bool
    ) -> None:
        """Only the head of a result is searched: an exit code ending past character 2,000 is
        not seen."""
        result = "y" * padding + "exit code: 1"
        history = [U("t"), A([call("1", "shell", command="make")]), U([TR("1", result)])]
        assert (build_ledger(history).last_error is not None) is failed


class TestTodoShapes:
    @pytest.mark.parametrize(
        ("name", "tool_input", "todos"),
        [
            ("update_plan", {"plan": ["  Read  ", 2]}, "- Read\n- 2"),  # plain items
            (  # an item without a text key: its JSON, keys sorted, non-ASCII kept
                "TodoWrite",
                {"todos": [{"status": "completed", "id": "é1", "b": 2}]},
                '- [x] {"b": 2, "id": "é1", "status": "completed"}',
            ),
            ("TodoWrite", {"todos": {"b": "é", "a": 1}}, '{"a": 1, "b": "é"}'),  # not a list
            ("task_tracker", {"task_list": [{"title": "Ship", "status": "done"}]}, "- [x] Ship"),
            ("make_plan", {"steps": ["one"]}, "- one"),  # "plan" and a list key
        ],
    )
    def test_todo_values(self, name: str, tool_input: dict[str, Any], todos: str) -> None:
        """Each shape a todo list's value may take, as text."""
        assert build_ledger([U("task"), A([call("1", name, **tool_input)])]).todos == todos

    def test_a_plan_tool_without_a_list_is_no_todo(self) -> None:
        """A tool named for plans whose input has no list key sets no todo list."""
        assert (
            build_ledger([U("task"), A([call("1", "plan_mode_respond", response="x")])]).todos
            is None
        )


class TestFencedCommands:
    """Which assistant texts end with a command the harness runs (the next user message is
    then its output, not an instruction)."""

    @pytest.mark.parametrize(
        ("said", "command"),
        [
            ("```\nls\n```", True),  # the fence opens the text
            ("```\nls\nok.", False),  # never closed
            ("Run ```ls```", False),  # inline, on one line
            ("Hi\n```", False),  # a closing fence only
            ("text ```\nls\n```", False),  # the opening fence is not at a line's start
            ("x```\nls\n```", False),  # nor one character into the text
            ("```\nls\n````", False),  # four backticks close nothing
            ("Run:\n```console\nls\n```", True),
            ("Run:\n```sh\nls\n```", True),
            # SWE-agent's XML actions: a <command> element that closes the text
            ("Open it.\n<command>\nopen src/a.py 10\n</command>", True),
            ("<command>ls -la</command>\n", True),
            ("<command>\nls\n</command>\nThen we see.", False),  # text follows it
            ("Try <command>ls</command>", False),  # not opened at a line's start
            ("Nothing:\n<command>\n</command>", False),  # empty
            ("a stray </command>", False),  # never opened
        ],
    )
    def test_fences(self, said: str, command: bool) -> None:
        """Only a block that closes the text, fenced by three backticks on their own lines,
        with no info string or a shell's."""
        ledger = build_ledger([U("task"), A(said), U("OUT")])
        assert ledger.instructions == (() if command else ("OUT",))
