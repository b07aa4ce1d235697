"""Where a transcript lost a record: the messages on both sides made a valid conversation again.

A reader that goes on past a record its file does not hold (see the Claude Code reader's main
line) may put two assistant messages side by side, or leave a call whose result was in the
lost record unanswered. :func:`across_lost_record` mends that seam, saying what is missing
instead of guessing it, so the transcript's messages keep the provider's rules; a file that
starts after calls it does not hold has their results made text
(:func:`earlier_results_as_text`).
"""

from __future__ import annotations

from ..core._messages import Message
from ._common import text_block

__all__: list[str] = []  # the readers' own

LOST_TURN = "[windowkeeper: the transcript does not hold what was sent here (a record is missing)]"
LOST_RESULT = "[windowkeeper: the result of this call is not in the transcript]"


def across_lost_record(
    previous: Message, role: str, content: str | list[Message]
) -> tuple[Message | None, str | list[Message]]:
    """The message to put between ``previous`` and a ``role`` message of ``content`` that
    follows a lost record (None when none is needed), and that content, mended.

    After an assistant message: an assistant one gets a user message before it that answers
    each of ``previous``'s calls with :data:`LOST_RESULT` and says a record is missing
    (:data:`LOST_TURN`); a user one gets a result for each call it does not answer.
    """
    if previous["role"] != "assistant":
        return None, content
    before = previous["content"]
    calls = (
        [block["id"] for block in before if block.get("type") == "tool_use"]
        if isinstance(before, list)
        else []
    )
    if role == "assistant":
        lost = [_lost_result(call) for call in calls]
        return {"role": "user", "content": [*lost, text_block(LOST_TURN)]}, content
    blocks = [text_block(content)] if isinstance(content, str) else list(content)
    answered = {block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"}
    missing = [_lost_result(call) for call in calls if call not in answered]
    return None, [*missing, *blocks] if missing else content


def _lost_result(call: object) -> Message:
    return {"type": "tool_result", "tool_use_id": call, "content": LOST_RESULT}


def earlier_results_as_text(message: Message) -> Message:
    """The first message with its tool_results, which answer calls made before the file
    begins, as text blocks: a note naming the call, then the result's content."""
    content = message["content"]
    if isinstance(content, str) or not any(b["type"] == "tool_result" for b in content):
        return message
    blocks: list[Message] = []
    for block in content:
        if block["type"] != "tool_result":
            blocks.append(block)
            continue
        note = f"[result of tool call {block['tool_use_id']}, made before this transcript begins]"
        result = block.get("content")
        if isinstance(result, str) and result:
            blocks.append(text_block(f"{note}\n{result}"))
        else:
            blocks.append(text_block(note))
            blocks.extend(result if isinstance(result, list) else [])
    return {**message, "content": blocks}
