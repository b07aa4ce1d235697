"""Compaction by summary: the request for a summary, and the text that replaces folded turns.

Two shapes of the same request (:class:`SummaryRequest`):

- **in-band, cache-aligned**: ``body`` is the request the session would send anyway, with
  :func:`summary_instruction` appended to its last user message (:func:`with_instruction`); the
  provider reads the whole cached prefix and the reply is the summary;
- **out-of-band**: a :data:`Summarizer` (or :data:`AsyncSummarizer`) gets the ``messages`` to
  fold and returns the summary. When the session has sent a request before, the request also
  carries it (``prefix``, with its ``system`` and ``tools``), and :func:`summary_messages` is
  that request unchanged with the instruction as a last text block of its final user turn: a
  summarizer that sends it, with the same system prompt and tools, to the conversation's model
  is served from the provider's prompt cache (Anthropic and OpenAI cache by prefix: tools,
  system, then the messages in order), so the summary call pays cache reads for what the
  conversation already paid to write. Without a prefix (or with ``shared_prefix=False``, e.g.
  for a cheaper model that shares no cache), :func:`summary_messages` is a small conversation
  any provider accepts (the folded messages, tool calls and results as text, roles
  alternating, the instruction last). The ready-made summarizers of
  :mod:`windowkeeper.adapters.summarizers` send it.

Once turns are folded, :func:`continuation` is the text placed right after messages 0-1: the
summary, checked against the :class:`~windowkeeper.session._ledger.Ledger` (what it dropped of
the task, the files edited and the latest instruction is added back), then the ledger itself.
Without a summary the ledger alone stands in: never worse than truncation. The wording is
windowkeeper's own; only the sections follow the original. Nothing here modifies an argument.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import MalformedMessageError
from ..core._condense import SUMMARY_SECTIONS
from ..core._messages import Message, SystemPrompt
from ._clipping import clip_text
from ._ledger import LEDGER_HEADING, Ledger, clip, missing_must_keep, render_ledger

__all__ = [
    "RESULT_CHARS",
    "AsyncSummarizer",
    "Summarizer",
    "SummaryRequest",
    "checked_summary",
    "continuation",
    "shared_prefix_messages",
    "shortest_continuation",
    "summary_instruction",
    "summary_messages",
    "summary_of",
    "with_instruction",
]

_SECTION_ASKS = (
    "what the user asked for and why, every goal and constraint they set; quote the task's"
    " opening words exactly",
    "the technologies, conventions, interfaces and decisions the work depends on",
    "every file read, created or changed, by its exact path: what it is for, what changed in"
    " it, and the code (signatures, snippets) that still matters",
    "errors met, their causes and fixes, and what is still unresolved",
    "everything asked for that is not done yet",
    "how the request changed over the conversation, each change with the user's own words in"
    " quotation marks, ending with the latest instruction quoted exactly",
    "precisely what was being done when this summary was asked for: files, functions, commands",
    "the next step, only if it follows from the latest instruction; otherwise say there is none",
    "the paths of the files that must be read again before going on, one per line",
)


def summary_instruction(previous_summary: str | None) -> str:
    """What asks the model for a summary of the conversation, in plain text, by sections.

    The sections follow the original's (:data:`~windowkeeper.core._condense.SUMMARY_SECTIONS`).
    With a ``previous_summary`` (a rolling compaction), the model is told that the conversation
    opens with a summary of its earlier part and to fold it in; its text is not repeated here,
    since the request already carries it.
    """
    sections = "".join(
        f"{number}. {title}: {ask}.\n"
        for number, (title, ask) in enumerate(zip(SUMMARY_SECTIONS, _SECTION_ASKS, strict=True), 1)
    )
    earlier = (
        "The conversation begins with a summary of its own earlier part, written at a previous"
        " compaction. Fold it into the new summary: keep all of it that still matters, update"
        " what has changed since, and drop nothing the user asked for.\n"
        if previous_summary
        else ""
    )
    return (
        "[windowkeeper: context compaction] The conversation is about to be shortened to fit"
        " the context window. Pause the work and reply with a summary of the whole conversation"
        " so far, complete enough to carry on from it without the messages it replaces.\n"
        f"{earlier}"
        "Reply with the summary as plain text only: call no tools and do no other work in this"
        " reply. Use these numbered sections:\n"
        f"{sections}"
        "Be specific: exact paths, names, commands and values, not descriptions of them."
    )


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What a summarizer gets.

    ``messages``: the messages to fold, in the Anthropic shape (as the history holds them:
    they may start with an assistant message and carry tool calls); ``previous_summary``: what
    stood for the turns before them since an earlier fold, that fold's whole continuation (the
    model's summary when it had one, and the ledger), so that a summary written after a fold
    without one still learns of those turns; None before the first fold; ``instruction``: the
    request for a summary
    (:func:`summary_instruction`); ``ledger``: the state of work of the history up to the end
    of ``messages``; ``body``: the cache-aligned alternative, the request as it would be sent
    with the instruction appended to its last user message.

    ``prefix``, ``system`` and ``tools``: the request the session sent before this one, as it
    built it (messages in the Anthropic shape, before any wire conversion), with the system
    prompt and tools it was prepared with; empty when there is none (the first request of a
    session, after a rollback or a reload). It holds every folded message, as the model last
    saw it. :func:`summary_messages` sends it with the instruction appended, so the summary call
    shares the conversation's cached prefix.
    """

    messages: tuple[Message, ...]
    previous_summary: str | None
    instruction: str
    ledger: Ledger
    body: tuple[Message, ...] = ()
    prefix: tuple[Message, ...] = ()
    system: SystemPrompt | None = None
    tools: tuple[Mapping[str, Any], ...] | None = None


Summarizer = Callable[[SummaryRequest], str]
"""Returns the summary text for a request. An exception, or empty text, means "no summary":
the session then compacts with the ledger alone."""

AsyncSummarizer = Callable[[SummaryRequest], Awaitable[str]]
"""The awaitable form of :data:`Summarizer`, for ``aprepare``."""


# -- in-band: the instruction on the request itself -------------------------------------------


def _has_tool_calls(message: Message) -> bool:
    content = message.get("content")
    if isinstance(content, list) and any(
        isinstance(block, dict) and block.get("type") == "tool_use" for block in content
    ):
        return True
    return bool(message.get("tool_calls"))  # the OpenAI shape


def with_instruction(messages: Sequence[Message], instruction: str) -> list[Message]:
    """A copy of ``messages`` with ``instruction`` as a last text block of the last user message.

    The rule for the end of the conversation:

    - a last ``user`` message gets the text block appended (string content becomes a text block
      first; empty string content is dropped);
    - after a last ``assistant`` message without tool calls, or an OpenAI ``tool``/``system``
      message, a new user message holding the instruction is added: roles still alternate;
    - a last assistant message with tool calls (``tool_use`` blocks or OpenAI ``tool_calls``)
      needs its results before any other user text, so it is refused with
      :class:`~windowkeeper.MalformedMessageError`; so is a message that is not a dict.

    Works on both the Anthropic and the OpenAI Chat Completions shapes. Only the changed last
    message is new; the others are shared, and nothing given is modified.
    """
    output = list(messages)
    block = {"type": "text", "text": instruction}
    if not output:
        return [{"role": "user", "content": [block]}]
    last = output[-1]
    where = f"messages[{len(output) - 1}]"
    if not isinstance(last, dict):
        raise MalformedMessageError(where, f"expected a message dict, got {type(last).__name__}")
    role = last.get("role")
    if role == "user":
        content = last.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}] if content else []
        elif isinstance(content, list):
            blocks = list(content)
        else:
            raise MalformedMessageError(f"{where}.content", "expected a string or a list")
        output[-1] = {**last, "content": [*blocks, block]}
        return output
    if role == "assistant" and _has_tool_calls(last):
        raise MalformedMessageError(
            where, "ends with tool calls: their results must come before the summary instruction"
        )
    output.append({"role": "user", "content": [block]})
    return output


# -- out-of-band: a conversation any provider accepts -----------------------------------------

RESULT_CHARS = 8_000
""":func:`summary_messages` keeps this many characters of each tool result and tool input."""

_PREFACE = (
    "Below is part of a conversation between a user and an AI coding assistant, with its tool"
    " calls and results written out as text. It will be removed from the assistant's context"
    " and replaced by your summary."
)


def _block_text(block: Any, limit: int | None) -> str | None:
    """A block written out as text for a summarizer, or None for what is left out."""
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text":
        text = block.get("text")
        return text if isinstance(text, str) and text.strip() else None
    if kind == "tool_use":
        try:
            arguments = json.dumps(block.get("input"), ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            arguments = str(block.get("input"))
        return f"[tool call {block.get('name')}: {_cut(arguments, limit)}]"
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            parts = [_block_text(item, limit) for item in content]
            content = "\n".join(part for part in parts if part)
        text = content if isinstance(content, str) else ""
        error = " (error)" if block.get("is_error") else ""
        return f"[tool result{error}: {_cut(text, limit) or '(empty)'}]"
    if kind in ("image", "document"):
        return f"[{kind}]"
    return None  # thinking and provider-specific blocks: not for a summary


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more characters]"


def shared_prefix_messages(request: SummaryRequest) -> list[Message] | None:
    """``request.prefix`` with the instruction as a last text block of its final user turn
    (:func:`with_instruction`), or None when the request has no prefix or it ends with tool
    calls (their results would have to come first).

    Everything before the instruction is the request the conversation sent last, unchanged:
    sent with ``request.system`` and ``request.tools`` to the same model, it is read from the
    provider's prompt cache.
    """
    if not request.prefix:
        return None
    try:
        return with_instruction(request.prefix, request.instruction)
    except MalformedMessageError:
        return None


def summary_messages(
    request: SummaryRequest,
    *,
    result_chars: int | None = RESULT_CHARS,
    shared_prefix: bool = True,
) -> list[Message]:
    """The messages of an out-of-band summary call for ``request``.

    With ``shared_prefix`` (the default) and a request that carries the previous request
    (``prefix``), :func:`shared_prefix_messages`: that request unchanged plus the instruction,
    to be sent with ``request.system`` and ``request.tools`` so the provider's cache serves it.
    Otherwise (no prefix, one ending with tool calls, or ``shared_prefix=False``) the text-only
    form, valid anywhere and needing no tool definitions:

    A first user message introduces the conversation (and carries the previous summary, if
    any); the folded messages follow with tool calls and results written out as text (each cut
    to ``result_chars``; None keeps them whole), thinking and unknown blocks left out, runs of
    one role joined; the instruction ends the last user message. Roles alternate, the first is
    a user message, no content is empty, and no tool block is left to pair.
    """
    if shared_prefix:
        shared = shared_prefix_messages(request)
        if shared is not None:
            return shared
    preface = _PREFACE
    if request.previous_summary:
        preface += (
            "\n\nSummary of the conversation before this part, written at a previous"
            f" compaction:\n{request.previous_summary}"
        )
    turns: list[tuple[str, list[str]]] = [("user", [preface])]
    for message in request.messages:
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant"):
            continue
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts = [text for block in blocks or [] if (text := _block_text(block, result_chars))]
        if not texts:
            continue
        if turns[-1][0] == role:
            turns[-1][1].extend(texts)
        else:
            turns.append((role, texts))
    if turns[-1][0] == "user":
        turns[-1][1].append(request.instruction)
    else:
        turns.append(("user", [request.instruction]))
    return [
        {"role": role, "content": [{"type": "text", "text": text} for text in texts]}
        for role, texts in turns
    ]


# -- the text that replaces the folded turns ---------------------------------------------------

_REINSTATED_CHARS = 300
_INSTRUCTION_CHARS = 8_000  # the latest instruction comes back verbatim up to this
_LATEST = "latest user instruction"  # its label in the ledger's must-keep items


def checked_summary(summary: str, ledger: Ledger) -> str:
    """``summary`` with the must-keep items it lacks added at its end (it when none is missing).

    The items are the task, the files edited and the latest user instruction, looked for as
    :func:`~windowkeeper.session._ledger.missing_items` does; the task and the instruction are
    added clipped (the ledger that follows a continuation has them whole). Keeping them in the
    summary's own text means a later compaction that folds this summary keeps them too.
    """
    summary = summary.strip()
    missing = missing_must_keep(summary, ledger)
    if not missing:
        return summary
    lines = [
        f"- {label}: {clip_text(item.strip(), _INSTRUCTION_CHARS) if label == _LATEST else clip(item, _REINSTATED_CHARS)}"
        for label, item in missing
    ]
    return f"{summary}\n\nAdded from the ledger (missing from the summary above):\n" + "\n".join(
        lines
    )


_SUMMARIZED = (
    "[windowkeeper: earlier turns of this conversation were replaced by the summary below,"
    " followed by the state of work computed from the full history. Go on with the work"
    " from there.]"
)
_REMOVED = (
    "[windowkeeper: earlier turns of this conversation were removed to fit the context"
    " window. No summary of them is available; the state of work below was computed"
    " from the full history.]"
)
_CUT_SHORT = "[windowkeeper: earlier turns removed; the state of work, cut to fit:]"
"""The notice of a continuation cut below its must-keep lines."""
_CUT_NOTICE = 100  # room for the notice clip_text puts where it cut
_MIN_SUMMARY_CHARS = 200  # below this, a clipped summary says too little to be worth its notice
# Ledger lines that may go, in this order, when a continuation must fit a budget: the oldest
# commands, then the oldest earlier instructions, then the reads and the last statement. The
# task, the latest instruction and the files edited always stay.
_DROPPABLE = ("- `", "- ", "Files read: ", "Last statement of the assistant: ")


def continuation(summary: str | None, ledger: Ledger, *, max_chars: int | None = None) -> str:
    """The text placed right after messages 0-1 once earlier turns are folded.

    With a summary: a line saying the earlier conversation was summarized, the checked summary
    (:func:`checked_summary`), then the rendered ledger. With ``summary`` None or blank (no
    summarizer, an empty reply, an error): a line saying the earlier turns were removed, then
    the ledger alone. The ledger names the task without quoting it: the continuation follows
    messages 0-1, which every request sends whole (nothing clips them). With ``max_chars``, the text is made to fit: the ledger's oldest
    entries go first, then the summary keeps its head and tail, and only then is the whole
    text cut: the must-keep lines (latest instruction, files edited, todo state) under a short
    notice, their head and tail kept.
    """
    ledger_text = render_ledger(ledger, task=False)  # the first message, above, holds it
    text_of_summary = checked_summary(summary, ledger) if summary and summary.strip() else None
    if max_chars is None:
        return _joined(text_of_summary, ledger_text)
    ledger_text = _shortened_ledger(ledger_text, max_chars - len(_joined(text_of_summary, "")))
    if text_of_summary is not None:
        room = max_chars - len(_joined("", ledger_text))
        room -= _CUT_NOTICE  # clip_text's notice comes on top of what it keeps
        text_of_summary = clip_text(text_of_summary, room) if room >= _MIN_SUMMARY_CHARS else None
    text = _joined(text_of_summary, ledger_text)
    if len(text) <= max_chars:
        return text
    # Below its must-keep lines, the text is cut as a whole: the must-keep lines go first,
    # under a short notice, so what its head keeps is the latest instruction, not the notices.
    essentials = ledger_text.split("\n")[2:]  # after the heading and the task's line
    return clip_text("\n".join([_CUT_SHORT, *essentials]), max(max_chars - _CUT_NOTICE, 0))


def shortest_continuation(ledger: Ledger) -> int:
    """The length of the shortest ledger-only :func:`continuation` of ``ledger`` that drops no
    must-keep line (only the droppable ones: commands, reads, earlier instructions, intent)."""
    return len(_joined(None, _shortened_ledger(render_ledger(ledger, task=False), 0)))


def _joined(summary: str | None, ledger_text: str) -> str:
    if summary is None:
        return f"{_REMOVED}\n\n{ledger_text}"
    return f"{_SUMMARIZED}\n\n{summary}\n\n{ledger_text}"


def _shortened_ledger(text: str, max_chars: int) -> str:
    """``text`` (a rendered ledger) without its droppable lines, oldest first, until it fits.

    A dropped list item takes its indented continuation lines with it.
    """
    if len(text) <= max_chars:
        return text
    lines: list[str | None] = list(text.split("\n"))
    size = len(text)
    for prefix in _DROPPABLE:
        for position in range(2, len(lines)):  # the heading and the task stay
            line = lines[position]
            if size <= max_chars:
                break
            if line is None or not line.startswith(prefix):
                continue
            end = position + 1
            while end < len(lines) and (lines[end] or "").startswith("  "):
                end += 1
            for gone in range(position, end):
                size -= len(lines[gone] or "") + 1
                lines[gone] = None
    kept = [line for line in lines if line is not None]
    return "\n".join(
        line
        for position, line in enumerate(kept)
        if not (line.startswith(_LIST_HEADINGS) and not _has_items(kept, position + 1))
    )


# The headings of the ledger's lists: one left with no item under it says nothing, and goes.
_LIST_HEADINGS = (
    "User instructions after the task",
    "Commands run (",
    "Tool calls still waiting",
    "(",
)


def _has_items(lines: Sequence[str], position: int) -> bool:
    """Whether list items (``- ...``) follow at ``position``, past any ``(...)`` note."""
    while position < len(lines) and lines[position].startswith("("):
        position += 1
    return position < len(lines) and lines[position].startswith("- ")


def summary_of(text: str) -> str | None:
    """The summary a :func:`continuation` carries, or None for a ledger-only one.

    So a fold can be redone over more turns with the same summary and a fresh ledger, without
    asking for a new summary.
    """
    if not text.startswith("[windowkeeper: earlier turns of this conversation were replaced"):
        return None
    body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
    summary, _, _ = body.rpartition("\n\n" + LEDGER_HEADING)
    return summary.strip() or None
