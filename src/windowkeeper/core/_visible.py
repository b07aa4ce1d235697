"""What is sent: the first pair, the visible rest, the store's overwrites applied, pairing repaired.

This is the original's ``getTruncatedMessages`` with three deliberate fixes: the visible rest never
starts before message 2 (fix 4), an overwrite lands on the block it was recorded for even after
orphan tool_results were removed from the message (fix 3), and a message emptied by that removal
says so instead of being sent empty (fix 6).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ._incremental import Seen
from ._messages import Message, with_block_content, with_block_text
from ._notices import STRIPPED_RESULTS_NOTICE
from ._overwrites import CONTENT, INPUT, TEXT, OverwriteStore
from ._pairing import RepairMemo, ensure_tool_results_follow_tool_use
from ._truncation import FIRST_KEPT, DeletedRange, visible_start

__all__ = ["OverwriteMemo", "truncated_messages"]


class OverwriteMemo:
    """Remembers the edited copy of each message while the message and its store entry are unchanged.

    Messages are treated as values (see :class:`windowkeeper.core._pairing.RepairMemo`); the store is
    compared by identity and :attr:`OverwriteStore.epoch`, each message's entry by
    :meth:`OverwriteStore.entry_revision`, so an edit of some messages (a shrink masking old
    outputs) copies those again, not every edited message. Reusing the copies keeps what is
    sent identical between requests, object for object. Copies of messages that went into the
    hidden range are forgotten: they can never be sent again. Not thread-safe; one per manager.
    """

    __slots__ = (
        "_copies",
        "_epoch",
        "_firsts",
        "_floor",
        "_last",
        "_notice",
        "_store",
    )

    def __init__(self) -> None:
        self._copies: dict[int, tuple[Message, int, Message]] = {}
        self._firsts: dict[int, tuple[Message, int, tuple[Message, bool]]] = {}
        # the last call's start, store revision, history seen, output and stripped flag
        self._last: tuple[int, int, Seen, list[Message], bool] | None = None
        self._store: OverwriteStore | None = None
        self._epoch = -1
        self._floor = FIRST_KEPT  # no copy is kept for a message from here to the visible start
        self._notice: tuple[Message, Message] | None = None

    def _current(self, store: OverwriteStore) -> None:
        if self._store is not store or self._epoch != store.epoch:
            self._copies = {}
            self._firsts = {}
            self._last = None
            self._store = store
            self._epoch = store.epoch

    def _forget_below(self, start: int) -> None:
        """Drop the copies of messages hidden now (``FIRST_KEPT <= index < start``)."""
        floor = max(self._floor, FIRST_KEPT)
        if start > floor:
            copies, firsts = self._copies, self._firsts
            if start - floor <= len(copies) + len(firsts):
                for index in range(floor, start):
                    copies.pop(index, None)
                    firsts.pop(index, None)
            else:
                self._copies = {
                    index: known
                    for index, known in copies.items()
                    if index < FIRST_KEPT or index >= start
                }
                self._firsts = {index: known for index, known in firsts.items() if index >= start}
        self._floor = start

    def visible(
        self, history: Sequence[Message], start: int, store: OverwriteStore
    ) -> tuple[list[Message], bool]:
        """:func:`_visible`, redoing only what changed since the last call.

        When ``history`` extends the last call's and the range starts at or after the last
        start, the last output is reused: cut to the new start, patched where the store's
        entries changed since (a shrink's masks, a hidden range grown by a step), extended by
        the new messages. Otherwise every message sent is visited again.
        """
        self._current(store)
        last = self._last
        if last is not None:
            made_at, seen = last[0], last[2]
            done = seen.length
            if made_at <= start < done <= len(history) and seen.prefix(history) == done:
                output, stripped = self._reused(history, start, store, last)
                seen.remember(history)
                self._last = (start, store.revision, seen, output, stripped)
                return list(output), stripped
        self._forget_below(start)
        output, stripped = _visible(history, start, store, self)
        seen = Seen()
        seen.remember(history)
        self._last = (start, store.revision, seen, output, stripped)
        return list(output), stripped

    def _reused(
        self,
        history: Sequence[Message],
        start: int,
        store: OverwriteStore,
        last: tuple[int, int, Seen, list[Message], bool],
    ) -> tuple[list[Message], bool]:
        """The last output brought up to date (see :meth:`visible`); what :func:`_visible` gives."""
        old_start, revision, seen, output, stripped = last
        done = seen.length
        moved = start != old_start
        if moved:  # the range grew: the messages now hidden leave the output
            self._forget_below(start)
            del output[FIRST_KEPT : FIRST_KEPT + start - old_start]
        if revision != store.revision:  # entries changed: copy those messages again
            changed = store.indices_between(0, FIRST_KEPT)
            changed += store.indices_between(start, done)
            for index in changed:
                if store.entry_revision(index) <= revision:
                    continue
                position = index if index < FIRST_KEPT else index - start + FIRST_KEPT
                if position == FIRST_KEPT and start > FIRST_KEPT:
                    moved = True  # the first message after the range: done below
                    continue
                output[position] = self.edited(history[index], store, index)
        if moved and start > FIRST_KEPT:
            output[FIRST_KEPT], stripped = self.first_visible(history[start], store, start)
        output += [
            self.edited(message, store, index) if index in store else message
            for index, message in enumerate(history[done:], done)
        ]
        return output, stripped

    def stripped_notice(self, message: Message) -> Message:
        """``message`` (emptied by stripping its results) with the notice, the same copy each time."""
        known = self._notice
        if known is None or known[0] is not message:
            known = self._notice = (message, _with_notice(message))
        return known[1]

    def first_visible(
        self, message: Message, store: OverwriteStore, index: int
    ) -> tuple[Message, bool]:
        """:func:`_first_visible`, remembered while the message and its entry are unchanged."""
        self._current(store)
        revision = store.entry_revision(index)
        known = self._firsts.get(index)
        if known is not None and known[0] is message and known[1] == revision:
            return known[2]
        result = _first_visible(message, store, index)
        self._firsts[index] = (message, revision, result)
        return result

    def edited(self, message: Message, store: OverwriteStore, index: int) -> Message:
        """``message`` with the store's edits for ``index`` applied (a copy)."""
        self._current(store)
        revision = store.entry_revision(index)
        known = self._copies.get(index)
        if known is not None and known[0] is message and known[1] == revision:
            return known[2]
        edited = _with_overwrites(message, store, index, None)
        self._copies[index] = (message, revision, edited)
        return edited


def truncated_messages(
    history: Sequence[Message],
    deleted_range: DeletedRange | None,
    store: OverwriteStore,
    repairs: RepairMemo | None = None,
    edits: OverwriteMemo | None = None,
) -> list[Message]:
    """The messages to send for ``history`` with ``deleted_range`` hidden and ``store`` applied.

    ``repairs`` remembers pairing repairs between calls (an agent loop's requests overlap).
    """
    if len(history) <= 1:
        return list(history)
    start = max(visible_start(deleted_range), FIRST_KEPT)
    if edits is not None:
        output, stripped = edits.visible(history, start, store)
    else:
        output, stripped = _visible(history, start, store, None)
    output = (
        repairs.repair(output)
        if repairs is not None
        else ensure_tool_results_follow_tool_use(output)
    )
    if stripped and output[2].get("content") == []:
        output[2] = (
            edits.stripped_notice(output[2]) if edits is not None else _with_notice(output[2])
        )
    return output


def _with_notice(message: Message) -> Message:
    return {**message, "content": [{"type": "text", "text": STRIPPED_RESULTS_NOTICE}]}


def _visible(
    history: Sequence[Message], start: int, store: OverwriteStore, edits: OverwriteMemo | None
) -> tuple[list[Message], bool]:
    """Messages 0-1 and the rest from ``start``, orphans removed and edits applied (no repair).

    Also says whether the first message after the hidden range lost tool_results.
    """
    output: list[Message] = [history[0], history[1], *history[start:]]
    stripped = False
    first_hidden = start > FIRST_KEPT and len(output) > FIRST_KEPT
    if first_hidden:
        if edits is not None:
            output[2], stripped = edits.first_visible(output[2], store, start)
        else:
            output[2], stripped = _first_visible(output[2], store, start)
    if store:
        # Visit the edited messages of the part sent rather than every message or entry. The
        # original looks entries up by number, so only integer indices can match a message.
        sent = store.indices_between(0, FIRST_KEPT)
        if start < len(history):
            sent += store.indices_between(start, len(history))
        for index in sent:
            position = index if index < FIRST_KEPT else index - start + FIRST_KEPT
            if position == FIRST_KEPT and first_hidden:
                continue  # done above, with the orphan removal
            message = output[position]
            if edits is not None:
                output[position] = edits.edited(message, store, index)
            else:
                output[position] = _with_overwrites(message, store, index, None)
    return output, stripped


def _first_visible(message: Message, store: OverwriteStore, index: int) -> tuple[Message, bool]:
    """The first message after the hidden range, as sent, and whether tool_results were removed.

    Its tool_results answer calls in the hidden range, so they are removed (the provider would
    reject them as orphans); the store's edits then land on the blocks they were recorded for
    (deliberate fix 3).
    """
    stripped = _without_tool_results(message)
    if stripped is None:
        edited = _with_overwrites(message, store, index, None) if index in store else message
        return edited, False
    without, positions = stripped
    if index in store:
        without = _with_overwrites(without, store, index, positions)
    return without, True


def _without_tool_results(message: Message) -> tuple[Message, dict[int, int]] | None:
    """A user message with its tool_result blocks removed, and where the other blocks moved.

    None when the message is not a user message with list content holding a tool_result. Their
    tool_use sits in the hidden range, so the provider would reject them as orphans.
    """
    content = message.get("content")
    if message.get("role") != "user" or not isinstance(content, list):
        return None
    if not any(_is_tool_result(block) for block in content):
        return None
    kept: list[Any] = []
    positions: dict[int, int] = {}
    for old, block in enumerate(content):
        if not _is_tool_result(block):
            positions[old] = len(kept)
            kept.append(block)
    return {**message, "content": kept}, positions


def _is_tool_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


def _with_input(block: Any, text: str) -> Any:
    """A copy of a tool_use block with the input stored as JSON text; other blocks unchanged."""
    if not isinstance(block, dict) or block.get("type") != "tool_use":
        return block
    try:
        tool_input = json.loads(text)
    except ValueError:
        return block
    return {**block, "input": tool_input}


_SETTERS = {CONTENT: with_block_content, INPUT: _with_input}


def _with_overwrites(
    message: Message, store: OverwriteStore, index: int, positions: dict[int, int] | None
) -> Message:
    """A copy of ``message`` with the effective update of each stored block applied."""
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    new_content: list[Any] | None = None
    for block_index, update in store.effective_updates(index):
        kind, text = _effective(update)
        if text is None:
            continue
        target = block_index if positions is None else positions.get(block_index)
        if (
            not isinstance(target, int)
            or isinstance(target, bool)
            or not 0 <= target < len(content)
        ):
            continue
        current = new_content if new_content is not None else content
        setter = _SETTERS.get(kind, with_block_text)
        block = setter(current[target], text)
        if block is not current[target]:
            if new_content is None:
                new_content = list(content)
            new_content[target] = block
    return {**message, "content": new_content if new_content is not None else list(content)}


def _effective(raw: Any) -> tuple[Any, str | None]:
    """The kind of a stored update and the text it puts in its block (as
    :attr:`Update.new_text` of ``Update.of(raw)``), read without copying the update."""
    if not isinstance(raw, list) or len(raw) < 3:
        return (raw[1] if isinstance(raw, list) and len(raw) > 1 else None), None
    kind, content = raw[1], raw[2]
    if kind in _KINDS and isinstance(content, list) and content and isinstance(content[0], str):
        return kind, content[0]
    return kind, None


_KINDS = (TEXT, CONTENT, INPUT)
