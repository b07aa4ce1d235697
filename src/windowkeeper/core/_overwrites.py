"""The timestamped overwrite store: every content edit, kept apart from the history.

The store maps a message index (into the full history) to an entry: an edit type, fixed when the
entry is created, and a map from block index to the list of updates of that block, oldest first.
An update is ``[timestamp, "text", [new_text], metadata]``; the last update of a block is the
effective one. Rolling back to a checkpoint drops every update newer than its timestamp.

Both maps keep insertion order, because the original's JSON (``context_history.json``) lists
them in that order::

    [[messageIndex,[editType,[[blockIndex,[[ts,"text",[text],metadata],...]],...]]],...]

Updates are kept as the JSON values they are, so a file written by the original, whatever odd
values it holds, serializes back byte for byte. Loading follows the original's loader exactly:
what it rebuilds its maps from loads, what makes it throw (and so start empty) raises
:class:`CorruptStoreError` naming the place.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from .._errors import CorruptStoreError
from ._javascript import MAX_EXACT_INT, UNDEFINED, OpaqueKey, loads, map_key, normalize
from ._messages import Message
from ._notices import TRUNCATION_NOTICE
from ._store_json import (
    COUNT,
    EXOTIC,
    FILLED,
    KIND,
    MASK_BITS,
    REVISION,
    TEXT_AT,
    StoredEntry,
    count_key,
    is_after,
    parse_entries,
    parsed_blocks,
    stored_entry,
)
from ._updates import (
    CONTENT,
    INPUT,
    TEXT,
    Block,
    EditType,
    Entry,
    Update,
    freeze,
    text_update,
    thaw,
)
from ._updates import clone as _clone

if TYPE_CHECKING:
    from ._messages import JSONValue

__all__ = [
    "CONTENT",
    "INPUT",
    "TEXT",
    "Block",
    "CorruptStoreError",
    "EditType",
    "Entry",
    "OverwriteStore",
    "Update",
    "add_truncation_notice",
    "text_update",
]


class OverwriteStore:
    """Message index -> (edit type, block index -> [update, ...]), in insertion order.

    Not thread-safe; one store per task. Values handed out are copies or immutable views, and
    values taken in are copied, so the store changes only through its methods. Two stores are
    equal when they serialize to the same text.

    Each entry is kept as the text the original writes for it (``[messageIndex,[editType,
    blocks]]``) in a tuple of plain values (see :data:`StoredEntry`): the masks of a long task's
    hidden history, thousands of entries written once and then only serialized, hold no
    container for a generation-2 collection to visit (CPython stops tracking a tuple of
    strings and numbers), take about half the memory of nested lists, serialize by a
    join and are shared by a copy. Reading an entry parses its text (an entry has a few blocks
    of a few updates); the last one read is remembered, since readers ask about one message
    several times in a row, and while a journal is open every entry recorded or read (a shrink
    records a batch of masks, then renders them).
    """

    __slots__ = ("_counts", "_entries", "_epoch", "_journal", "_parsed", "_positions", "_revision")

    def __init__(self) -> None:
        self._entries: dict[Any, StoredEntry] = {}
        # The entries' keys that can be a message's index (ints >= 0), ascending: rendering
        # looks up the visible range by bisection instead of visiting every entry.
        self._positions: list[int] = []
        self._revision = 0
        self._epoch = 0  # changes when many entries may have changed at once (see epoch)
        # While a journal is open: (message key, its entry before the record, None if none)
        self._journal: list[tuple[Any, StoredEntry | None]] | None = None
        self._counts: dict[Any, int] | None = {}  # updates per edit type; None: count again
        # message key -> (its entry, parsed): the entry read last, every one while journaling
        self._parsed: dict[Any, tuple[StoredEntry, dict[Any, Any]]] = {}

    @property
    def revision(self) -> int:
        """A number that changes whenever the store does (for callers that cache its effects)."""
        return self._revision

    @property
    def epoch(self) -> int:
        """A number that changes when any entry may have changed other than by :meth:`record`
        (a rollback, an undone journal, a clear); between such changes, an entry's
        :meth:`entry_revision` tells whether it changed."""
        return self._epoch

    def entry_revision(self, message_index: JSONValue) -> int:
        """The :attr:`revision` at which a message's entry last got an update (-1: no entry).

        Lets a cache of one message's edited copy survive edits of other messages.
        """
        entry = self._entries.get(_lookup(message_index))
        return -1 if entry is None else entry[REVISION]

    # -- reading ---------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, message_index: object) -> bool:
        return _lookup(message_index) in self._entries

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, OverwriteStore):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"OverwriteStore({self.to_json()})"

    def message_indices(self) -> list[JSONValue]:
        """The edited message indices, in insertion order."""
        return [_plain(key) for key in self._entries]

    def indices_between(self, start: int, stop: int) -> list[int]:
        """The edited message indices ``start <= index < stop``, ascending.

        Only integer keys can match a message (the original looks entries up by number). Costs
        the size of the answer, not of the store, so rendering the visible part of a long
        history does not visit the entries of its hidden part.
        """
        positions = self._positions
        return positions[bisect_left(positions, start) : bisect_left(positions, stop)]

    def update_count(self, edit_types: Collection[JSONValue] | None = None) -> int:
        """How many updates the store holds, in entries of ``edit_types`` (all when None).

        Counts without copying or parsing anything, unlike :meth:`entries`.
        """
        counts = self._counts
        if counts is None:
            counts = {}
            for entry in self._entries.values():
                key = count_key(entry[KIND])
                counts[key] = counts.get(key, 0) + entry[COUNT]
            self._counts = counts
        if edit_types is None:
            return sum(counts.values())
        wanted = {count_key(freeze(kind)) for kind in edit_types}
        return sum(count for kind, count in counts.items() if kind in wanted)

    def entries(self) -> Iterator[Entry]:
        """Every entry as a typed value, in insertion order (what the JSON lists, in that order).

        A block whose updates a loaded file gave as something other than a list has no updates.
        """
        for key, entry in self._entries.items():
            blocks = tuple(
                Block(_plain(block_key), _typed(updates))
                for block_key, updates in parsed_blocks(entry).items()
            )
            yield Entry(_plain(key), thaw(entry[KIND]), blocks)

    def edit_type(self, message_index: int) -> JSONValue:
        """The edit type of a message's entry, or None when it has none."""
        entry = self._entries.get(_lookup(message_index))
        return None if entry is None else thaw(entry[KIND])

    def effective_updates(self, message_index: int) -> list[tuple[Any, Any]]:
        """``(block index, effective update)`` of each block with updates, in insertion order:
        the store's own raw values, to read at once, never to keep or change."""
        blocks = self._blocks(_lookup(message_index))
        return [
            (key, updates[-1])
            for key, updates in blocks.items()
            if type(updates) is list and updates
        ]

    def block_updates(self, message_index: int) -> Iterator[tuple[Any, list[Any]]]:
        """``(block index, updates)`` of a message, in insertion order; updates are raw JSON.

        The lists are copies. A key JavaScript keeps apart from numbers (``true``, an array)
        comes as an opaque key that equals no index; updates that are not a list come as ``[]``.
        """
        entry = self._entries.get(_lookup(message_index))
        if entry is not None:
            for block_key, updates in parsed_blocks(entry).items():  # freshly parsed: the caller's
                yield block_key, updates if isinstance(updates, list) else []

    def updates(self, message_index: int, block_index: int) -> list[Update]:
        """Every update of a block, oldest first."""
        return list(_typed(self._raw_updates(message_index, block_index)))

    def latest(self, message_index: int, block_index: int) -> Update | None:
        """The effective (last) update of a block, or None."""
        raw = self._raw_updates(message_index, block_index)
        return Update.of(raw[-1]) if raw else None

    def has_update(self, message_index: int, block_index: int) -> bool:
        """Whether a block has an update (what :meth:`latest` tells, without copying it)."""
        entry = self._entries.get(_lookup(message_index))
        if entry is None:
            return False
        block, filled = _lookup(block_index), entry[FILLED]
        if isinstance(filled, int):
            return type(block) is int and 0 <= block < MASK_BITS and bool(filled >> block & 1)
        return block in filled

    def effective_text(self, message_index: int, block_index: int) -> str | None:
        """The text a block shows after its effective update, or None when it has none."""
        latest = self.latest(message_index, block_index)
        return None if latest is None else latest.text

    def first_block_latest(self, message_index: int) -> Update | None:
        """The last update of the message's first-inserted block (how the original reads mentions)."""
        blocks = self._blocks(_lookup(message_index))
        for updates in blocks.values():
            return Update.of(updates[-1]) if isinstance(updates, list) and updates else None
        return None

    def _raw_updates(self, message_index: Any, block_index: Any) -> list[Any]:
        """A block's updates as the store holds them (to read, not to hand out)."""
        updates = self._blocks(_lookup(message_index)).get(_lookup(block_index))
        return updates if isinstance(updates, list) else []

    def _blocks(self, message_key: Any) -> dict[Any, Any]:
        """The block map of a message's entry, parsed (to read, not to hand out; {} if none)."""
        entry = self._entries.get(message_key)
        if entry is None:
            return {}
        known = self._parsed.get(message_key)
        if known is not None and known[0] is entry:
            return known[1]
        blocks = parsed_blocks(entry)
        self._remember(message_key, entry, blocks)
        return blocks

    def _remember(self, message_key: Any, entry: StoredEntry, blocks: dict[Any, Any]) -> None:
        """Keep ``entry`` parsed: alone, or beside the others read while a journal is open."""
        if self._journal is None:
            self._parsed.clear()
        self._parsed[message_key] = (entry, blocks)

    # -- writing ---------------------------------------------------------------------------

    def record(
        self,
        message_index: JSONValue,
        edit_type: JSONValue,
        block_index: JSONValue,
        update: JSONValue,
    ) -> None:
        """Append a copy of ``update`` to a block, creating the entry with ``edit_type`` if new.

        An existing entry keeps the edit type it was created with, as in the original. Raises
        ``TypeError`` when an argument is not a JSON value.
        """
        value, exotic = normalize(update)
        message_key, odd_message = _record_key(message_index)
        block_key, odd_block = _record_key(block_index)
        entry = self._entries.get(message_key)
        if entry is None:
            normalized, odd_kind = normalize(edit_type)
            kind, count, blocks = freeze(normalized), 0, {}
            exotic = exotic or odd_kind or odd_message
            if _is_position(message_key):
                insort(self._positions, message_key)
        else:
            kind, count, blocks = entry[KIND], entry[COUNT], dict(self._blocks(message_key))
            exotic = exotic or entry[EXOTIC]
        self._revision += 1
        if self._journal is not None:
            self._journal.append((message_key, entry))
        updates = blocks.get(block_key)
        # A fresh list: the parsed map of the entry read last may hold the old one.
        blocks[block_key] = [*updates, value] if isinstance(updates, list) else [value]
        entry = stored_entry(
            message_key,
            kind,
            blocks,
            revision=self._revision,
            count=count + 1,
            exotic=exotic or odd_block,
        )
        self._entries[message_key] = entry
        self._remember(message_key, entry, blocks)
        if self._counts is not None:
            key = count_key(kind)
            self._counts[key] = self._counts.get(key, 0) + 1

    def open_journal(self) -> None:
        """Start remembering each :meth:`record`, so that :meth:`undo_journal` can take it back.

        For callers that must leave the store as it was when a step fails half-way (the
        session's ``prepare`` when nothing fits). Costs nothing per update but a tuple.
        """
        self._journal = []

    def close_journal(self) -> None:
        """Keep what was recorded since :meth:`open_journal`, and stop remembering."""
        self._journal = None
        self._parsed.clear()

    def undo_journal(self) -> None:
        """Take back every :meth:`record` since :meth:`open_journal`, newest first, and stop."""
        journal, self._journal = self._journal or [], None
        self._parsed.clear()
        self._revision += 1
        self._epoch += 1
        self._counts = None
        for message_key, before in reversed(journal):
            if before is None:
                del self._entries[message_key]
                if _is_position(message_key):
                    positions = self._positions
                    del positions[bisect_left(positions, message_key)]
            else:  # as it was, at a new revision: no cache keyed on the old one is fooled
                self._entries[message_key] = (before[0], self._revision, *before[2:])

    def rollback(self, timestamp: float) -> None:
        """Drop every update newer than ``timestamp`` (updates at ``timestamp`` stay).

        As in the original: each block is cut from its end while its last update is newer
        (assuming time order; comparison by JavaScript's ``>``), a block is removed when the cut
        leaves it empty (a block that was already empty stays), and a message is removed when it
        is left with no blocks (also when it had none). Updates that are not a list are kept.
        """
        self._revision += 1
        self._epoch += 1
        self._counts = None
        for message_key, entry in list(self._entries.items()):
            blocks = parsed_blocks(entry)
            cut = 0
            for block_key in list(blocks):
                updates = blocks[block_key]
                if not isinstance(updates, list):
                    continue
                keep = len(updates)
                while keep > 0 and is_after(updates[keep - 1], timestamp):
                    keep -= 1
                if keep < len(updates):
                    cut += len(updates) - keep
                    del updates[keep:]
                    if keep == 0:
                        del blocks[block_key]
            if not blocks:
                del self._entries[message_key]
            elif cut:
                kind, revision, count = entry[KIND], entry[REVISION], entry[COUNT] - cut
                self._entries[message_key] = stored_entry(
                    message_key, kind, blocks, revision=revision, count=count, exotic=entry[EXOTIC]
                )
        self._index()

    def clear(self) -> None:
        """Forget every update."""
        self._revision += 1
        self._epoch += 1
        self._counts = None
        self._entries.clear()
        self._positions = []

    def _index(self) -> None:
        """Rebuild :attr:`_positions` from the entries (after a change to many of them)."""
        self._positions = sorted(key for key in self._entries if _is_position(key))

    def copy(self) -> OverwriteStore:
        """An independent copy (the entries are immutable values, so it shares them)."""
        twin = OverwriteStore()
        twin._entries = dict(self._entries)
        twin._positions = list(self._positions)
        twin._counts = None
        return twin

    # -- the original's JSON ---------------------------------------------------------------

    def to_json_value(self) -> list[JSONValue]:
        """The store as the nested lists of ``context_history.json`` (fresh lists, safe to keep)."""
        value, _ = loads(self.to_json())
        return value  # type: ignore[no-any-return]

    def to_json(self) -> str:
        """The exact text the original writes: ``JSON.stringify`` of its maps as pair lists."""
        return "[" + ",".join([entry[TEXT_AT] for entry in self._entries.values()]) + "]"

    @classmethod
    def from_json(cls, text: str) -> OverwriteStore:
        """Load ``context_history.json`` text; raise :class:`CorruptStoreError` if unusable."""
        try:
            value, exotic = loads(text)
        except RecursionError:
            raise CorruptStoreError("JSON nested too deeply") from None
        except ValueError as error:
            raise CorruptStoreError(f"not JSON: {error}") from None
        return cls._build(value, exotic)

    @classmethod
    def from_json_value(cls, value: JSONValue) -> OverwriteStore:
        """Build a store from parsed JSON (copied), as the original's loader reads it.

        The loader destructures each item as ``[messageIndex, [editType, pairs]]`` and rebuilds
        the block map with ``new Map(pairs)``: a repeated key keeps its first position and takes
        the later value, extra elements are ignored, missing ones read as undefined (written back
        as ``null``), and missing or null ``pairs`` give an empty map. Whatever makes that throw
        raises :class:`CorruptStoreError` naming the place, as the original then starts empty.
        """
        try:
            normalized, exotic = normalize(value)
        except TypeError as error:
            raise CorruptStoreError(f"not a JSON value: {error}") from None
        return cls._build(normalized, exotic)

    @classmethod
    def _build(cls, value: Any, exotic: bool) -> OverwriteStore:
        store = cls()
        entries, odd = parse_entries(value)
        exotic = exotic or odd  # then every entry is read and written on the exact slow path
        for key, edit_type, blocks in entries:
            count = sum(len(updates) for updates in blocks.values() if isinstance(updates, list))
            store._entries[key] = stored_entry(
                key, freeze(edit_type), blocks, revision=0, count=count, exotic=exotic
            )
        store._counts = None
        store._index()
        return store


def _record_key(index: Any) -> tuple[Any, bool]:
    if (
        type(index) is int and -MAX_EXACT_INT <= index <= MAX_EXACT_INT
    ):  # normalize keeps it: its own key
        return index, False
    value, odd_value = normalize(index)  # refuses what JSON cannot hold; 2.0 becomes 2
    key, odd_key = map_key(value)
    return key, odd_value or odd_key


def _lookup(index: Any) -> Any:
    """The dict key an index is found under (``True`` must not find ``1``; a list finds nothing)."""
    if type(index) is int:  # a message or block index: its own key
        return index
    key, _ = map_key(index)
    return key


def _is_position(key: Any) -> bool:
    """Whether an entry's key can be a message's index (an int, not a bool, not negative)."""
    return type(key) is int and key >= 0


def _plain(key: Any) -> Any:
    if isinstance(key, OpaqueKey):
        return _clone(key.value)
    return None if key is UNDEFINED else key


def _typed(updates: Any) -> tuple[Update, ...]:
    return tuple(Update.of(raw) for raw in updates) if isinstance(updates, list) else ()


def add_truncation_notice(
    store: OverwriteStore, timestamp: int, history: Sequence[Message] = ()
) -> bool:
    """The original's truncation notice on message 1 (its block 0), unless message 1 has an entry.

    True when it was added. Shared by the original's truncation and the session's hiding step.
    Never over a user message: when ``history[1]`` is the user's task (a conversation opened
    by an assistant greeting) nothing is recorded, since the notice would replace the task's
    text (a deliberate fix; Cline's message 1 is always its first answer).
    """
    if 1 in store or (len(history) > 1 and history[1].get("role") != "assistant"):
        return False
    store.record(1, EditType.UNDEFINED, 0, text_update(timestamp, TRUNCATION_NOTICE))
    return True
