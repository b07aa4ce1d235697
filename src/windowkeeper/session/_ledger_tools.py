"""Which tool calls read, edit or run what: the ledger's tool tables and call descriptions.

:class:`~windowkeeper.session._ledger.LedgerBuilder` looks a call up here: the tools that change
a file and the input keys naming it (:data:`DEFAULT_EDIT_TOOLS`), the editor tools whose
``command`` says whether they read or write, the patch tools whose input is a patch text; and
the small readers of inputs and results it shares. Nothing here modifies its arguments.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from ._ledger_text import clip

__all__ = [
    "CALL_CHARS",
    "DEFAULT_EDIT_TOOLS",
    "EDITOR_PATH_KEYS",
    "EDITOR_TOOLS",
    "PATCH_WORD",
    "describe",
    "first",
    "result_texts",
    "script",
]

CALL_CHARS = 160
"""An unanswered call is described in up to this many characters."""

DEFAULT_EDIT_TOOLS: Mapping[str, tuple[str, ...]] = {
    "write_to_file": ("path", "absolutePath"),  # Cline
    "replace_in_file": ("path", "absolutePath"),  # Cline
    "Write": ("file_path",),  # Claude Code
    "Edit": ("file_path",),
    "MultiEdit": ("file_path",),
    "NotebookEdit": ("notebook_path",),
    "write_file": ("file_path", "path"),  # Gemini CLI, generic
    "replace": ("file_path", "path"),  # Gemini CLI
    "edit_file": ("target_file", "path", "file_path"),
    "create_file": ("path", "file_path"),
    "apply_diff": ("path",),  # Roo
    "insert_content": ("path",),
    "search_and_replace": ("path",),
    "write": ("filePath", "file_path", "path"),  # OpenCode
    "edit": ("filePath", "file_path", "path"),
    "multiedit": ("filePath", "file_path", "path"),
}
"""Tool name -> the input keys that may hold the path, for tools that change a file."""

# Editor tools whose ``command`` says whether they read or change the file.
EDITOR_TOOLS = frozenset(
    {"str_replace_editor", "str_replace_based_edit_tool", "text_editor", "file_editor"}
)
EDITOR_PATH_KEYS = ("path", "file_path")
# Tools whose input is a patch text (Codex "input", OpenCode "patchText"): the patch names the
# files. A tool counts when its name says "patch"; every string value is read.
PATCH_WORD = "patch"


def result_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def first(tool_input: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def script(argv: list[str]) -> str:
    """A command given as argv, as one line: the script of ``bash -lc SCRIPT``, else joined."""
    if (
        len(argv) == 3
        and argv[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
        and argv[1]
        in (
            "-c",
            "-lc",
        )
    ):
        return argv[2]
    return shlex.join(argv)


def describe(name: Any, what: str | None, tool_input: Any) -> str:
    label = name if isinstance(name, str) else "?"
    if what is None:
        try:
            what = json.dumps(tool_input, ensure_ascii=False, sort_keys=True, default=str)
        except (TypeError, ValueError):
            what = ""
    detail = clip(" ".join(what.split()), CALL_CHARS)
    return f"{label} {detail}".strip()
