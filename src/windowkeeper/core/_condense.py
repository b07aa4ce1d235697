"""The original's summarizing paths: auto-condense (``summarize_task``) and ``/smol`` (``condense``).

Auto-condense is on only for a "next-gen" model (:func:`is_next_gen_model_family`). In a task,
when the previous request reached the limit (:func:`task_compact_threshold`, the plain
``max_allowed_size``), the next user message carries a request for a summary
(:func:`with_summary_request`) and nothing is truncated. The model answers with a
``summarize_task`` call; its handler hides everything after the first pair up to the message
before that user message (:func:`summary_range`, keep "none"), sets the truncation notice and
replaces the task text (the manager does that), and answers the call with the continuation
(:func:`summary_result`). The request after it hides the user message and the call as well
(:func:`bumped_range`, +2), so the continuation is the first message after the kept pair. A
sub-agent instead truncates, earlier: at :func:`subagent_compact_threshold`.

``/smol`` is the same move chosen by the user: keep "lastTwo" when the history ends with an
assistant message, else "none" (:func:`condense_range`), and :data:`CONDENSE_RESULT` as the result.

The texts sent to the model (:data:`SUMMARY_INSTRUCTION`, :func:`continuation_text`,
:data:`CONDENSE_RESULT`) are windowkeeper's own words; only their structure follows the original.
Pure: no I/O, no clock; no argument is modified.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from ._javascript import _JS_SPACE
from ._messages import Message
from ._truncation import DeletedRange, Keep, next_range
from ._window import ContextWindowInfo

__all__ = [
    "AUTO_CONDENSE_FRACTION",
    "CONDENSE_RESULT",
    "SUMMARY_INSTRUCTION",
    "SUMMARY_RESULT_HEADER",
    "SUMMARY_SECTIONS",
    "SUMMARY_TOOL",
    "bumped_range",
    "condense_keep",
    "condense_range",
    "continuation_text",
    "is_claude_4_plus_model_family",
    "is_next_gen_model_family",
    "subagent_compact_threshold",
    "summary_call",
    "summary_range",
    "summary_result",
    "summary_would_fold_a_summary",
    "task_compact_threshold",
    "with_summary_request",
]

AUTO_CONDENSE_FRACTION = 0.75
"""The share of the window at which a sub-agent with auto-condense compacts."""

SUMMARY_TOOL = "summarize_task"
"""The tool the model calls to hand in its summary."""

SUMMARY_RESULT_HEADER = f"[{SUMMARY_TOOL}] Result:"
"""How Cline heads a tool's result, here the summary's."""

SUMMARY_SECTIONS = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Problem Solving",
    "Pending Tasks",
    "Task Evolution",
    "Current Work",
    "Next Step",
    "Required Files",
)
"""The sections the original asks a summary to have, in its order (the ninth lists files to
read again)."""

_SECTION_NOTES = (
    "every request and goal the user stated, with enough detail to act on them",
    "the technologies, libraries, conventions and design decisions that matter for the work",
    "each file read, edited or created, why it matters, and the code that still matters",
    "what went wrong, how it was fixed, and what is still being investigated",
    "what the user asked for that is not done yet",
    "how the task changed over the conversation, quoting the user's own words for each change",
    "exactly what was in progress just before this request, naming files and code",
    "the one next step, only if it follows directly from the user's latest request",
    "one path per line, the files that must be read again to go on",
)

SUMMARY_INSTRUCTION = (
    f'<explicit_instructions type="{SUMMARY_TOOL}">\n'
    "The context window is almost full. Stop the current work and write a thorough summary of"
    " the whole conversation, so the work can go on from it alone once the history is gone.\n"
    "Go through the conversation in order first: what the user asked, what you did about it,"
    " the decisions taken, and the exact file names, signatures and edits involved. Then write"
    " the summary with these numbered sections:\n"
    + "".join(
        f"{number}. {title}: {note}.\n"
        for number, (title, note) in enumerate(
            zip(SUMMARY_SECTIONS, _SECTION_NOTES, strict=True), 1
        )
    )
    + f"Answer with the {SUMMARY_TOOL} tool only, the summary as its context parameter. If the"
    " task is already complete, use attempt_completion instead.\n"
    "</explicit_instructions>"
)
"""windowkeeper's wording of the original's request for a summary (its sections, its tool)."""

CONDENSE_RESULT = (
    "The user accepted the summary of the conversation you wrote; the conversation before it"
    " has been removed, and the summary is now your record of it.\n"
    '<explicit_instructions type="condense_response">Reply only by asking the user what to work'
    " on next. Do not resume any work on your own, propose edits or read files. You may refer to"
    " what the summary says, and to nothing beyond it. Keep the reply short.</explicit_instructions>"
)
"""windowkeeper's wording of the original's ``/smol`` (condense) tool result."""


def continuation_text(summary: str) -> str:
    """The text that answers a ``summarize_task`` call: the summary, framed for going on.

    windowkeeper's wording of the original's continuation prompt.
    """
    return (
        "The earlier part of this conversation no longer fits the context window, so it was"
        " replaced by the summary below, written just before it was removed:\n"
        f"{summary}\n\n"
        "Carry on with the last task you were given, from where the summary leaves off, without"
        " asking the user anything first."
    )


# -- which models condense ---------------------------------------------------------------------

# The original's pattern, with its digit class kept to ASCII as in JavaScript.
_CLAUDE_VERSION = re.compile(r"[-_ ]([0-9](?:\.[05])?)[-_ ]?")
_CLAUDE_NAMES = ("sonnet", "opus", "haiku")
_NEXT_GEN_PARTS = (
    "gemini-2.5",
    "grok-4",
    "gpt-5",
    "gpt5",
    "gpt-oss",
    "gpt_oss",
    "minimax",
    "gemini3",
    "gemini-3",
    "kimi-k2",
    "kimi-k3",
    "deepseek-chat",
    "deepseek-reasoner",
    "laguna",
)


def _normalize(model_id: str) -> str:
    # JavaScript's trim(): its whitespace set, not Python's.
    return model_id.strip(_JS_SPACE).lower()


def is_claude_4_plus_model_family(model_id: str) -> bool:
    """The original's ``isClaude4PlusModelFamily``: Claude 4 or later.

    The aliases "sonnet" and "opus" count. Otherwise the id must look like Anthropic's (name a
    Claude family: sonnet, opus or haiku; every id of the original's table does) and the first
    separator-digit match (``-4-``, ``_4.5``, `` 4``) must read as 4 or more. Only one digit is
    read, so "claude-sonnet-10" reads as 1, and a digit without a separator before it
    ("sonnet4") does not count.
    """
    normalized = _normalize(model_id)
    if normalized in ("sonnet", "opus"):
        return True
    if not any(name in normalized for name in _CLAUDE_NAMES):
        return False
    match = _CLAUDE_VERSION.search(normalized)
    return match is not None and float(match.group(1)) >= 4


def is_next_gen_model_family(model_id: str) -> bool:
    """The original's ``isNextGenModelFamily``: does this model get auto-condense?

    True for Claude 4+ (:func:`is_claude_4_plus_model_family`), and for an id (trimmed,
    lower-cased) containing "gemini-2.5", "grok-4", "gpt-5"/"gpt5", "gpt-oss"/"gpt_oss",
    "minimax", "gemini3"/"gemini-3", "kimi-k2"/"kimi-k3", "deepseek-chat"/"deepseek-reasoner"
    or "laguna", or both "deepseek" and "3.2" but not "speciale".
    """
    normalized = _normalize(model_id)
    if is_claude_4_plus_model_family(normalized):
        return True
    if any(part in normalized for part in _NEXT_GEN_PARTS):
        return True
    return "deepseek" in normalized and "3.2" in normalized and "speciale" not in normalized


# -- when -------------------------------------------------------------------------------------


def task_compact_threshold(info: ContextWindowInfo) -> float:
    """The size at which a task asks for a summary: ``max_allowed_size`` (may be fractional).

    The task calls the original's ``shouldCompactContextWindow`` without a percentage, so the
    0.75 share plays no part there.
    """
    return info.max_allowed_size


def subagent_compact_threshold(
    info: ContextWindowInfo, *, auto_condense: bool = True, model_id: str = ""
) -> float:
    """The size at which a sub-agent compacts before its next request.

    With auto-condense on and a next-gen model: ``min(floor(window * 0.75), max_allowed_size)``;
    otherwise ``max_allowed_size``. An empty ``model_id`` means the model is taken as next-gen.
    """
    if auto_condense and (not model_id or is_next_gen_model_family(model_id)):
        return min(math.floor(info.context_window * AUTO_CONDENSE_FRACTION), info.max_allowed_size)
    return info.max_allowed_size


def summary_would_fold_a_summary(
    history: Sequence[Any], deleted_range: DeletedRange | None
) -> bool:
    """Whether a summary now would mostly fold the previous one (so the task asks for none).

    True when a range exists and at most two messages follow it, counted before the new user
    message is appended.
    """
    return deleted_range is not None and len(history) - deleted_range[1] - 1 <= 2


# -- the moves --------------------------------------------------------------------------------


def with_summary_request(message: Message, instruction: str = SUMMARY_INSTRUCTION) -> Message:
    """A copy of the user ``message`` with ``instruction`` appended as a last text block.

    String content becomes one text block first. ``message`` itself is not changed.
    """
    content = message.get("content")
    blocks: list[Any] = (
        list(content)
        if isinstance(content, list)
        else [{"type": "text", "text": content}]
        if isinstance(content, str) and content
        else []
    )
    return {**message, "content": [*blocks, {"type": "text", "text": instruction}]}


def summary_range(history: Sequence[Any], deleted_range: DeletedRange | None) -> DeletedRange:
    """The range the ``summarize_task`` handler sets: keep "none".

    ``history`` ends with the user message that asked for the summary (the call is not in it
    yet), so the assistant-ending step keeps that message visible.
    """
    return next_range(history, deleted_range, Keep.NONE)


def bumped_range(history: Sequence[Any], deleted_range: DeletedRange | None) -> DeletedRange | None:
    """The range on the request after a summary: two more messages hidden, when they exist.

    Those are the user message that asked for the summary and the ``summarize_task`` call.
    ``history`` is as it stands before the call's result is appended. Without a range, or when
    the end would pass the last message, the range is returned unchanged.
    """
    if deleted_range is None or deleted_range[1] + 2 > len(history) - 1:
        return deleted_range
    return (deleted_range[0], deleted_range[1] + 2)


def summary_call(summary: str, tool_id: str, *, native: bool = True) -> Message:
    """The assistant message handing in ``summary``: a ``summarize_task`` call.

    Native tool calling gives a tool_use block (input ``context``); otherwise the call is written
    in the text as Cline's XML tool calls are.
    """
    if native:
        call = {
            "type": "tool_use",
            "id": tool_id,
            "name": SUMMARY_TOOL,
            "input": {"context": summary},
        }
        return {"role": "assistant", "content": [call]}
    text = f"<{SUMMARY_TOOL}>\n<context>\n{summary}\n</context>\n</{SUMMARY_TOOL}>"
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def summary_result(summary: str, tool_id: str, *, native: bool = True) -> Message:
    """The user message answering the call: the continuation as the tool's result.

    Native: a tool_result for ``tool_id`` whose one text block is the header and the
    continuation. Otherwise two text blocks, the header and the continuation. As the first
    message after the hidden range, a native result is an orphan and the original drops it:
    the summary then never reaches the model (recorded by running the original).
    """
    text = continuation_text(summary)
    if native:
        inner = [{"type": "text", "text": f"{SUMMARY_RESULT_HEADER}\n{text}"}]
        result = {"type": "tool_result", "tool_use_id": tool_id, "content": inner}
        return {"role": "user", "content": [result]}
    blocks = [{"type": "text", "text": SUMMARY_RESULT_HEADER}, {"type": "text", "text": text}]
    return {"role": "user", "content": blocks}


def condense_keep(history: Sequence[Any]) -> Keep:
    """What ``/smol`` keeps: the last two messages when the history ends with an assistant
    message, else none."""
    last = history[-1] if history else None
    if isinstance(last, dict) and last.get("role") == "assistant":
        return Keep.LAST_TWO
    return Keep.NONE


def condense_range(history: Sequence[Any], deleted_range: DeletedRange | None) -> DeletedRange:
    """The range ``/smol`` sets when the user accepts the summary without feedback."""
    return next_range(history, deleted_range, condense_keep(history))
