"""Ledger readings that real traces outside the corpus got wrong, each from a reduced history.

Every history here is hand-written after the structure of a public session file (never its
text): what the agent recorded, and the one thing the ledger read from it that it should not.
"""

from __future__ import annotations

from typing import Any

from windowkeeper.session._ledger import build_ledger

# A Codex patch whose added TypeScript holds quotes and arrow functions: shell syntax if it
# were read as a command line (">" a redirection, quotes closing and opening words).
PATCH = "\n".join(
    [
        "*** Begin Patch",
        "*** Update File: src/filters.ts",
        "@@",
        "+const labels = rows.map((row) => row.label.trim())",
        "+const known = labels.filter((l) => ['open', 'shut'].includes(l))",
        "+export const isOpen = (row: any) => row.state === 'Open'",
        "*** End Patch",
    ]
)


def _history(command: Any) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Add a filter for edit calls."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "call_1", "name": "shell", "input": {"command": command}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "Done!"}],
        },
    ]


def _edited(command: str) -> list[str]:
    """The files the ledger names as edited after a shell call running ``command``."""
    return list(build_ledger(_history(command)).files_edited)


class TestCodexArgvPatch:
    """Codex's ``["apply_patch", PATCH]`` writes the patched files and nothing else."""

    def test_only_the_patched_file_is_edited(self) -> None:
        """The patch's code is not read as shell redirections: one file edited."""
        ledger = build_ledger(_history(["apply_patch", PATCH]))
        assert ledger.files_edited == ("src/filters.ts",)

    def test_the_same_patch_in_a_heredoc(self) -> None:
        """Given to ``bash -lc`` as a here-document, the same patch edits the same file."""
        script = f"apply_patch <<'PATCH'\n{PATCH}\nPATCH"
        ledger = build_ledger(_history(["bash", "-lc", script]))
        assert ledger.files_edited == ("src/filters.ts",)

    def test_a_script_redirection_still_counts(self) -> None:
        """A real redirection in a ``bash -lc`` script is still an edit."""
        ledger = build_ledger(_history(["bash", "-lc", "echo done > notes.txt"]))
        assert ledger.files_edited == ("notes.txt",)


class TestShellWritesAcrossLines:
    """A quoted word or a continued line spanning line breaks is one command, not several."""

    def test_a_multi_line_sed_script(self) -> None:
        """A BSD ``sed -i ''`` whose quoted script spans lines edits its one file operand."""
        command = "sed -i '' '\n12s/} else {$/} else if err != nil {/\n13d\n' pkg/a_test.go"
        assert _edited(command) == ["pkg/a_test.go"]

    def test_continued_lines(self) -> None:
        """Backslash-continued ``sed -i`` calls chained with ``&&`` edit their files."""
        command = (
            "\\\nsed -i '' 's/if n != 2 {$/if n != 2 { \\/\\/ note/' a_test.go && \\\n"
            "sed -i '' 's/x/y/' b_test.go"
        )
        assert _edited(command) == ["a_test.go", "b_test.go"]

    def test_a_multi_line_python_program(self) -> None:
        """A ``python3 -c`` program's comparisons and comments are not redirections."""
        command = (
            'cat out.jsonl | python3 -c "\nimport json, sys\n# tests that take > 5s\n'
            "for line in sys.stdin:\n    if json.loads(line)['Elapsed'] >= 5.0: print(line)\n\""
        )
        assert _edited(command) == []

    def test_separate_lines_are_separate_commands(self) -> None:
        """Lines outside quotes still end commands: each line's redirection counts."""
        assert _edited("cd build\necho done > log.txt\ntee -a all.txt") == [
            "log.txt",
            "all.txt",
        ]

    def test_bsd_sed_empty_suffix(self) -> None:
        """macOS ``sed -i ''``: the empty word is the backup suffix, not the script."""
        assert _edited("sed -i '' 's/a/b/' x.go y.go") == ["x.go", "y.go"]


def _user_texts(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text} for text in texts]}


class TestClaudeCodeHarnessTexts:
    """Texts Claude Code writes into user messages are not the user's instructions."""

    def _latest(self, *texts: str) -> str | None:
        history = [
            {"role": "user", "content": "Add the flag."},
            {"role": "assistant", "content": [{"type": "text", "text": "Added."}]},
            _user_texts("Now document it."),
            {"role": "assistant", "content": [{"type": "text", "text": "On it."}]},
            _user_texts(*texts),
        ]
        return build_ledger(history).latest_instruction

    def test_a_skill_text(self) -> None:
        """A skill's text ("Base directory for this skill: ...") is the agent's."""
        skill = (
            "Base directory for this skill: /home/dev/.claude/skills/docs\n\n# Docs\nWrite well."
        )
        assert self._latest(skill) == "Now document it."

    def test_a_task_notification(self) -> None:
        """A background task's ``<task-notification>`` is the agent's."""
        notice = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n"
        assert self._latest(notice + "</task-notification>") == "Now document it."

    def test_ide_context_around_the_users_words(self) -> None:
        """``<ide_opened_file>`` and ``<ide_selection>`` are removed; the user's text stays."""
        opened = "<ide_opened_file>The user opened the file a.py in the IDE.</ide_opened_file>"
        selected = "<ide_selection>The user selected lines 3 to 4 of a.py</ide_selection>"
        assert self._latest(opened, selected, "Explain this function.") == "Explain this function."
        assert self._latest(opened + " Explain this too.") == "Explain this too."


class TestCodexHarnessTexts:
    """Texts Codex writes into user messages are not the user's instructions."""

    def test_a_subagent_notification(self) -> None:
        """A sub-agent's ``<subagent_notification>`` (its status as JSON) is the agent's."""
        notice = (
            '<subagent_notification>\n{"agent_path": "a-1", "status": {"completed": "Done:'
            ' two findings."}}\n</subagent_notification>'
        )
        history = [
            {"role": "user", "content": "Review the parser with two helpers."},
            {"role": "assistant", "content": [{"type": "text", "text": "Spawned them."}]},
            _user_texts(notice),
        ]
        ledger = build_ledger(history)
        assert ledger.instructions == ()
        assert ledger.latest_instruction is None
