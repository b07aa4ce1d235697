"""The literal texts windowkeeper writes into a conversation (the original's, character for character)."""

from __future__ import annotations

__all__ = [
    "CONTINUE_NOTICE",
    "DUPLICATE_READ_NOTICE",
    "RESULT_MISSING",
    "STRIPPED_RESULTS_NOTICE",
    "TRUNCATION_NOTICE",
]

TRUNCATION_NOTICE = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal"
    " context window length. The initial user task has been retained for continuity, while"
    " intermediate conversation history has been removed. Keep this in mind as you continue"
    " assisting the user. Pay special attention to the user's latest messages."
)
"""Written over text block 0 of message 1 when history is first truncated."""

# The double opening bracket and the single closing one are the original's.
DUPLICATE_READ_NOTICE = (
    "[[NOTE] This file read has been removed to save space in the context window. Refer to the"
    " latest file read for the most up to date version of this file.]"
)
"""Replaces an older copy of a file's contents."""

CONTINUE_NOTICE = "[Continue assisting the user!]"
"""Replaces the task text (block 0 of message 0) on a context-error retry, summary or condense."""

RESULT_MISSING = "result missing"
"""Content of the tool_result added for a tool_use that has none."""

STRIPPED_RESULTS_NOTICE = "[Tool results removed together with the truncated conversation history.]"
"""Deliberate fix 6: what a message emptied by orphan tool_result removal says instead of nothing."""
