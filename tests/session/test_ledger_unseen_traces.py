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
        "+const keys = Object.keys(a).map((k) => k.toLowerCase())",
        "+const pathy = keys.some((k) => ['path', 'file'].includes(k))",
        "+export const isEdit = (ev: any) => ev.type === 'FunctionCall'",
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
