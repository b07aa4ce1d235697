"""A :class:`Ledger` as text, and the check that a summary carries what it must.

:func:`render_ledger` gives the text a continuation sends; :func:`must_keep` and
:func:`missing_must_keep` name what every summary must carry (the task, each file edited, the
latest instruction). The ledger itself is computed in :mod:`windowkeeper.session._ledger`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "EARLIER_INSTRUCTION_CHARS",
    "INSTRUCTION_ABOVE",
    "LEDGER_HEADING",
    "TASK_ABOVE",
    "Ledger",
    "clip",
    "head_and_tail",
    "missing_items",
    "missing_must_keep",
    "must_keep",
    "normalized",
    "render_ledger",
]

EARLIER_INSTRUCTION_CHARS = 300
"""In a rendered ledger, the instructions before the latest are shown up to this many characters."""


def clip(text: str, limit: int) -> str:
    """``text`` stripped, cut to at most ``limit`` characters; a cut ends with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)].rstrip() + "…"


def head_and_tail(text: str, limit: int) -> str:
    """``text`` stripped; when longer than ``limit``, its head and its tail (about
    ``limit`` characters in all) around a line saying how many characters were cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    keep = max(limit - 80, 2)
    head, tail = text[: keep - keep // 3], text[len(text) - keep // 3 :]
    cut = len(text) - len(head) - len(tail)
    return f"{head.rstrip()}\n[… {cut:,} characters cut here …]\n{tail.lstrip()}"


@dataclass(frozen=True, slots=True)
class Ledger:
    """The state of work of a history (see the module docstring).

    ``latest_instruction`` is the user's most recent instruction, even when it repeats an
    earlier one (``instructions`` lists each only where first seen); ``messages`` is how many
    messages were read; ``todos`` is the list the latest todo / plan call set; ``last_error``
    describes the last failed call not followed by a success of the same call.
    """

    task: str = ""
    instructions: tuple[str, ...] = ()
    files_read: tuple[str, ...] = ()
    files_edited: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()
    unanswered: tuple[str, ...] = ()
    intent: str | None = None
    latest_instruction: str | None = None
    latest_instruction_at: int | None = None
    """The index of the message the latest instruction was read from, if known."""
    messages: int = 0
    todos: str | None = None
    last_error: str | None = None


LEDGER_HEADING = (
    "## State of work (authoritative: computed by windowkeeper from the full conversation"
    " history, not written by a model)"
)
"""The first line of a rendered ledger."""

_SHOWN_INSTRUCTIONS = 20
_SHOWN_COMMANDS = 20
_SHOWN_READS = 60


def _latest(items: tuple[str, ...], shown: int) -> tuple[list[str], int]:
    return list(items[-shown:]), max(len(items) - shown, 0)


TASK_ABOVE = "Task: the first message of this conversation, above (not repeated here)"
"""The task line of a ledger rendered after messages 0-1, which every request sends whole."""
INSTRUCTION_ABOVE = (
    "Latest user instruction: the second message of this conversation, above (not repeated here)"
)
"""Its latest-instruction line when that instruction is message 1 (a history that opens with
two user messages, as SWE-agent's does)."""


def render_ledger(ledger: Ledger, *, task: bool = True) -> str:
    """The ledger as compact Markdown-like text, under :data:`LEDGER_HEADING`.

    Everything the must-keep check looks for is shown in full (the task, every file edited, the
    latest instruction); the longer lists show their latest entries and say how many are left
    out. ``task=False``: for a text sent right after messages 0-1, which hold them, the task
    and a latest instruction read from message 1 are named (:data:`TASK_ABOVE`,
    :data:`INSTRUCTION_ABOVE`) instead of quoted.
    """
    shown = f"Task (verbatim): {ledger.task or '(no task text)'}" if task else TASK_ABOVE
    lines = [LEDGER_HEADING, shown]
    at = ledger.latest_instruction_at
    above = not task and at is not None and at <= 1  # the latest is message 1, sent above
    listed = tuple(
        text for text in ledger.instructions if not (above and text == ledger.latest_instruction)
    )
    instructions, earlier = _latest(listed, _SHOWN_INSTRUCTIONS)
    if instructions:
        lines.append("User instructions after the task, oldest first (verbatim):")
        if earlier:
            lines.append(f"({earlier} earlier instructions not shown)")
        lines += [f"- {_one_block(clip(text, EARLIER_INSTRUCTION_CHARS))}" for text in instructions]
    if ledger.latest_instruction is not None:
        if above:
            lines.append(INSTRUCTION_ABOVE)
        else:
            lines.append(f"Latest user instruction: {_one_block(ledger.latest_instruction)}")
    lines.append(f"Files edited: {', '.join(ledger.files_edited) or 'none'}")
    if ledger.todos is not None:
        lines.append("Todo / plan list (latest):")
        lines.append(f"  {_one_block(ledger.todos)}")
    if ledger.last_error is not None:
        lines.append(f"Last unresolved error: {_one_block(ledger.last_error)}")
    reads, earlier = _latest(ledger.files_read, _SHOWN_READS)
    if reads:
        more = f" (and {earlier} more)" if earlier else ""
        lines.append(f"Files read: {', '.join(reads)}{more}")
    commands, earlier = _latest(ledger.commands, _SHOWN_COMMANDS)
    if commands:
        more = f", {earlier} earlier not shown" if earlier else ""
        lines.append(f"Commands run (oldest first{more}):")
        lines += [f"- `{' '.join(command.split())}`" for command in commands]
    if ledger.unanswered:
        lines.append("Tool calls still waiting for a result:")
        lines += [f"- {call}" for call in ledger.unanswered]
    if ledger.intent is not None:
        lines.append(f"Last statement of the assistant: {_one_block(ledger.intent)}")
    return "\n".join(lines)


def _one_block(text: str) -> str:
    # Continuation lines indented, so a multi-line text stays one list item.
    return text.replace("\n", "\n  ")


_HEAD_CHARS = 160


def normalized(text: str) -> str:
    """``text`` for comparison: case folded, backslashes as slashes, whitespace collapsed."""
    return " ".join(text.replace("\\", "/").casefold().split())


def must_keep(ledger: Ledger) -> list[tuple[str, str]]:
    """``(label, item)`` for what every summary must carry: the task, each file edited, the
    latest user instruction."""
    items: list[tuple[str, str]] = []
    if ledger.task:
        items.append(("task", ledger.task))
    items += [("file edited", path) for path in ledger.files_edited]
    if ledger.latest_instruction is not None:
        items.append(("latest user instruction", ledger.latest_instruction))
    return items


def _contains(haystack: str, item: str) -> bool:
    """Whether normalized ``haystack`` holds ``item``: whole, or for a long item its first
    :data:`_HEAD_CHARS` characters (a summary quotes the start of a long task, rarely all).

    The match must not run on into a word on either side ("a.py" is not in "data.py").
    """
    needle = normalized(item)
    cut = len(needle) > _HEAD_CHARS
    if cut:
        needle = needle[:_HEAD_CHARS].rstrip()
    if not needle:
        return True
    at = haystack.find(needle)
    while at >= 0:
        end = at + len(needle)
        before = haystack[at - 1] if at else " "
        after = haystack[end] if end < len(haystack) and not cut else " "  # a head goes on
        if not (before.isalnum() and needle[0].isalnum()) and not (
            after.isalnum() and needle[-1].isalnum()
        ):
            return True
        at = haystack.find(needle, at + 1)
    return False


def missing_items(summary: str, ledger: Ledger) -> list[str]:
    """The must-keep items (task, files edited, latest instruction) that ``summary`` lacks.

    Compared after :func:`normalized` on both sides (so ``C:\\src\\a.py`` matches ``c:/src/a.py``
    and line breaks do not matter), never inside a longer word; a long item counts as present
    when its start is.
    """
    return [item for _, item in missing_must_keep(summary, ledger)]


def missing_must_keep(summary: str, ledger: Ledger) -> list[tuple[str, str]]:
    """:func:`missing_items` with the label of each item (as :func:`must_keep` gives them)."""
    haystack = normalized(summary)
    return [(label, item) for label, item in must_keep(ledger) if not _contains(haystack, item)]
