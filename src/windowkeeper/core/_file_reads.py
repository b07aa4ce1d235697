"""Duplicate file contents: find every copy of a file in the visible history, keep the latest.

Detection is a replaceable part (:class:`ReadDetector`); :class:`ClineReadDetector` is the
original's. Replacement (:func:`apply_read_replacements`) records, for every copy but the last of
each path, an update in the overwrite store; the history itself is never touched. The savings ratio
(:func:`savings_ratio`) decides whether that was enough to avoid truncation.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, Protocol

from .._record import field, record
from ._cline_text import (
    EDIT_TOOLS,
    READ_TOOL,
    final_content,
    mention_notice,
    mentions,
    parse_header,
)
from ._messages import Message, block_text, utf16_len
from ._notices import DUPLICATE_READ_NOTICE
from ._overwrites import CONTENT, TEXT, EditType, OverwriteStore, Update, text_update
from ._truncation import DeletedRange, visible_start

__all__ = [
    "SAVINGS_THRESHOLD",
    "ClineReadDetector",
    "ReadDetector",
    "ReadScan",
    "Sighting",
    "apply_read_replacements",
    "replaced_paths",
    "savings_ratio",
    "scan_mentions",
]

SAVINGS_THRESHOLD = 0.3
"""Truncate anyway when replacing duplicates saved less than this share of the characters."""

_MENTION_BLOCKS = 3  # mentions are looked for in content blocks 0, 1 and 2 only


@record(frozen=True, slots=True)
class Sighting:
    """One copy of a file's contents, and what replaces it when it is not the latest."""

    message_index: int
    edit_type: EditType
    search_text: str  # for mentions: the text to replace inside the block; else ""
    replacement: str  # for mentions: the replacement of search_text; else the whole new text
    block_index: int
    kind: str = TEXT  # the update kind recorded: the original's "text", or "content"


@record(slots=True)
class ReadScan:
    """What a detector found: copies per path in sighting order, and mentioned paths per message."""

    reads: dict[str, list[Sighting]] = field(default_factory=dict)
    mention_paths: dict[int, list[str]] = field(default_factory=dict)

    def add(self, path: str, sighting: Sighting) -> None:
        """Record a sighting of ``path``."""
        self.reads.setdefault(path, []).append(sighting)

    def duplicates(self) -> int:
        """How many copies would be replaced (all but the latest of each path)."""
        return sum(len(sightings) - 1 for sightings in self.reads.values())


class ReadDetector(Protocol):
    """Finds copies of file contents in ``history[start_index:]``.

    A detector reads the store to skip what earlier rounds already replaced; it never writes it.
    """

    def scan(self, history: Sequence[Message], start_index: int, store: OverwriteStore) -> ReadScan:
        """Return every sighting, per path, in the order the original would apply them."""
        ...


class ClineReadDetector:
    """The original's detector: Cline's ``[tool for 'path'] Result:`` headers and file mentions.

    Looks only at the first block of each user message for tool headers (``read_file``,
    ``write_to_file``, ``replace_in_file``), and at blocks 0-2 for ``<file_content path=...>``
    mentions.
    """

    def scan(self, history: Sequence[Message], start_index: int, store: OverwriteStore) -> ReadScan:
        """The original's ``getPossibleDuplicateFileReads``."""
        result = ReadScan()
        for index in range(max(start_index, 0), len(history)):
            already_replaced: list[Any] = []
            if index in store:
                if store.edit_type(index) != EditType.FILE_MENTION:
                    continue
                replaced = replaced_paths(store.first_block_latest(index))
                if replaced is None:
                    continue
                already_replaced = replaced
            message = history[index]
            content = message.get("content")
            if message.get("role") != "user" or not isinstance(content, list) or not content:
                continue
            first_text = block_text(content[0])
            if first_text is None:
                continue  # the original looks no further when block 0 has no text
            if not _scan_tool_header(result, index, content, first_text):
                scan_mentions(result, index, content, already_replaced)
        return result


def replaced_paths(latest: Update | None) -> list[Any] | None:
    """Paths a mention message already had replaced (``latest`` its block 0 update), or None when
    all of them were (or the update is not a mention's ``[replaced, all]`` record)."""
    metadata = latest.metadata if latest is not None else None
    if (
        not isinstance(metadata, list)
        or len(metadata) < 2
        or not isinstance(metadata[0], list)
        or not isinstance(metadata[1], list)
    ):
        return None  # the original would fail on such an update; treat the message as done
    if len(metadata[0]) == len(metadata[1]):
        return None
    return metadata[0]


def _scan_tool_header(result: ReadScan, index: int, content: list[Any], text: str) -> bool:
    """Record a read or edit result in block 0; True when a "normal read" was found."""
    first = content[0]
    parsed = parse_header(text)
    if parsed is None:
        return False
    tool, path, header = parsed
    block_index = 1 if text == header else 0
    if tool == READ_TOOL:
        replacement = (
            DUPLICATE_READ_NOTICE if block_index == 1 else f"{header}\n{DUPLICATE_READ_NOTICE}"
        )
        result.add(path, Sighting(index, EditType.READ_FILE_TOOL, "", replacement, block_index))
        return True
    if tool not in EDIT_TOOLS:
        return False
    if first.get("type") == "tool_result" or block_index == 0:
        edited: str | None = text
    elif len(content) > 1 and isinstance(content[1], dict) and content[1].get("type") == "text":
        edited = content[1].get("text") or None
    else:
        edited = None
    if not isinstance(edited, str):
        return False
    final = final_content(edited)
    if final is not None:
        replacement = (
            f"{edited[: final.start()]}{final.group(1)} {DUPLICATE_READ_NOTICE} "
            f"{final.group(2)}{edited[final.end() :]}"
        )
        result.add(path, Sighting(index, EditType.ALTER_FILE_TOOL, "", replacement, block_index))
    return True  # a denied edit (no final content) still counts as a read, as in the original


def scan_mentions(
    result: ReadScan,
    index: int,
    content: list[Any],
    already_replaced: list[Any],
    *,
    blocks: int = _MENTION_BLOCKS,
    key: Callable[[str], str] = str,
) -> None:
    """Record the file mentions of message ``index``, as the original finds them.

    Only the first of ``content[:blocks]`` that holds a mention counts; every mention in it is
    listed in ``result.mention_paths`` (by ``key(path)``) and recorded as a sighting unless its
    key is in ``already_replaced``.
    """
    for position in range(min(len(content), blocks)):
        text = block_text(content[position])
        if text is None:
            continue
        matches = list(mentions(text))
        if not matches:
            continue
        paths: list[str] = []
        for match in matches:
            raw = match.group(1)
            path = key(raw)
            paths.append(path)
            if path not in already_replaced:
                replacement = mention_notice(raw, DUPLICATE_READ_NOTICE)
                sighting = Sighting(
                    index, EditType.FILE_MENTION, match.group(0), replacement, position
                )
                result.add(path, sighting)
        result.mention_paths[index] = paths
        return


@cache
def _js_dollar() -> re.Pattern[str]:
    return re.compile(r"\$([$&`'])")


def _js_replace_first(text: str, search: str, replacement: str) -> str:
    """``text.replace(search, replacement)`` with JavaScript's string semantics.

    Only the first occurrence is replaced, and ``$$``, ``$&``, ``$``` and ``$'`` in the
    replacement are expanded (reachable through file paths containing ``$``).
    """
    at = text.find(search)
    if at < 0:
        return text
    end = at + len(search)

    def expand(match: re.Match[str]) -> str:
        code = match.group(1)
        if code == "$":
            return "$"
        if code == "&":
            return search
        if code == "`":
            return text[:at]
        return text[end:]

    if "$" in replacement:
        replacement = _js_dollar().sub(expand, replacement)
    return text[:at] + replacement + text[end:]


class _MentionWork:
    """A mention message's text as replacements go, and the paths replaced in it so far.

    A plain class, not a dataclass: that would cost start-up time for a record nobody compares.
    """

    __slots__ = ("block_index", "replaced", "text")

    def __init__(self, block_index: int, text: str, replaced: list[Any]) -> None:
        self.block_index = block_index
        self.text = text
        self.replaced = replaced


def apply_read_replacements(
    store: OverwriteStore, history: Sequence[Message], scan: ReadScan, timestamp: int
) -> tuple[bool, set[int]]:
    """Record a replacement for every sighting but the last of each path (``applyFileReadContextHistoryUpdates``).

    Returns whether anything was recorded and the set of message indices altered. File-mention
    replacements are gathered per message and recorded once, with metadata
    ``[replaced_paths, all_paths]`` as a snapshot (deliberate fix 2: the original shares one list
    between a block's updates, so rolling back leaves a list that names later replacements).
    """
    changed = False
    altered: set[int] = set()
    mentions: dict[int, _MentionWork] = {}
    for path, sightings in scan.reads.items():
        if len(sightings) < 2:
            continue
        for sighting in sightings[:-1]:
            changed = True
            index = sighting.message_index
            altered.add(index)
            if sighting.edit_type != EditType.FILE_MENTION:
                update = text_update(timestamp, sighting.replacement, kind=sighting.kind)
                store.record(index, sighting.edit_type, sighting.block_index, update)
                continue
            work = mentions.get(index)
            if work is None:
                work = mentions[index] = _mention_start(store, history, sighting)
            if sighting.search_text and work.text:
                work.text = _js_replace_first(work.text, sighting.search_text, sighting.replacement)
                work.replaced.append(path)
    for index, work in mentions.items():
        paths = scan.mention_paths.get(index)
        if paths is None:
            continue
        metadata = [list(work.replaced), list(paths)]
        store.record(
            index,
            EditType.FILE_MENTION,
            work.block_index,
            text_update(timestamp, work.text, metadata),
        )
    return changed, altered


def _mention_start(
    store: OverwriteStore, history: Sequence[Message], sighting: Sighting
) -> _MentionWork:
    """The working text and replaced-path list of a mention message, from its last update if any."""
    index, block_index = sighting.message_index, sighting.block_index
    latest = store.latest(index, block_index)
    if latest is not None:
        metadata = latest.metadata
        replaced = metadata[0] if isinstance(metadata, list) and metadata else []
        text = latest.text or ""
        return _MentionWork(block_index, text, list(replaced) if isinstance(replaced, list) else [])
    content = history[index].get("content")
    block = content[block_index] if isinstance(content, list) else None
    return _MentionWork(block_index, block_text(block) or "", [])


def savings_ratio(
    history: Sequence[Message],
    store: OverwriteStore,
    deleted_range: DeletedRange | None,
    altered: set[int],
) -> float:
    """Share of the sent characters that this round's replacements saved (``calculateContextOptimizationMetrics``).

    Counted over messages 0-1 and the visible rest, in UTF-16 code units: text of list-content
    blocks (string content counts 0) and the data of base64 images. A block altered this round
    counts its previous length and saves the difference to its new length.
    """
    total = 0
    saved = 0
    start = visible_start(deleted_range)
    for lo, hi in ((0, 2), (start, len(history))):
        for index in range(max(lo, 0), min(hi, len(history))):
            block_total, block_saved = _count_message(history[index], index, store, altered)
            total += block_total
            saved += block_saved
    return saved / total if total else 0.0


def _count_message(
    message: Message, index: int, store: OverwriteStore, altered: set[int]
) -> tuple[int, int]:
    content = message.get("content")
    if not isinstance(content, list):
        return 0, 0
    total = 0
    saved = 0
    has_entry = index in store
    for block_index, block in enumerate(content):
        text = block_text(block)
        if text is None and has_entry:
            text = _replaced_content(block, store.latest(index, block_index))
        if text is not None:
            updates = store.updates(index, block_index) if has_entry else []
            if not updates:
                total += utf16_len(text)
            elif index in altered:
                before = _update_length(updates[-2]) if len(updates) >= 2 else utf16_len(text)
                total += before
                saved += before - _update_length(updates[-1])
            else:
                total += _update_length(updates[-1])
        elif isinstance(block, dict) and block.get("type") == "image":
            source = block.get("source")
            if isinstance(source, dict) and source.get("type") == "base64":
                data = source.get("data")
                if isinstance(data, str):
                    total += len(data)
    return total, saved


def _replaced_content(block: Any, latest: Update | None) -> str | None:
    """The string content of a tool_result that a "content" update replaced (only those count:
    the original never counts string contents)."""
    if latest is None or latest.kind != CONTENT or not isinstance(block, dict):
        return None
    content = block.get("content")
    return content if block.get("type") == "tool_result" and isinstance(content, str) else None


def _update_length(update: Update) -> int:
    # The original measures the stored text whatever the update's kind.
    content = update.content
    text = content[0] if isinstance(content, list) and content else None
    return utf16_len(text) if isinstance(text, str) else 0
