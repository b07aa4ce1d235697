"""The overwrite store: the original's ``context_history.json`` byte for byte, rollback, laws.

Files here are written by hand in the original's layout (reference section 2.2). Where node is
installed, :class:`TestAgainstJavaScript` also replays odd files through JavaScript's own
``JSON.parse``/``Map``/``JSON.stringify``, set up the way the original's loader, rollback and
saver use them.
"""

from __future__ import annotations

import gc
import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from windowkeeper import ContextManager, CorruptStoreError, EditType, OverwriteStore, Update
from windowkeeper.core._overwrites import Block, Entry, text_update

from ..builders import A, T, U
from ..conftest import examples

TRUNCATION = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal"
    " context window length. The initial user task has been retained for continuity, while"
    " intermediate conversation history has been removed. Keep this in mind as you continue"
    " assisting the user. Pay special attention to the user's latest messages."
)
DUPLICATE = (
    "[[NOTE] This file read has been removed to save space in the context window. Refer to the"
    " latest file read for the most up to date version of this file.]"
)


def mention(path: str, body: str) -> str:
    return f'<file_content path="{path}">\n{body}\n</file_content>'


def roundtrip(text: str) -> str:
    return OverwriteStore.from_json(text).to_json()


# -- files in the original's layout, written by hand ----------------------------------------------

MENTION_TEXT = (
    '[ask] Result:\\n<file_content path=\\"a.txt\\">' + DUPLICATE + "</file_content>\\n"
    '<file_content path=\\"b.txt\\">\\nline one\\nline two\\n</file_content>'
)
# Section 2.2's first example, its elided texts written out.
MENTION_FILE = (
    '[[2,[4,[[0,[[111,"text",["' + MENTION_TEXT + '"],[["a.txt"],["a.txt","b.txt"]]]]]]]],'
    '[1,[0,[[0,[[111,"text",["' + TRUNCATION + '"],[]]]]]]]]'
)
# Section 2.2's second example: the notice trigger at 999 on a fresh store.
NOTICE_FILE = (
    '[[1,[0,[[0,[[999,"text",["' + TRUNCATION + '"],[]]]]]]],'
    '[0,[0,[[0,[[999,"text",["[Continue assisting the user!]"],[]]]]]]]]'
)

ORIGINAL_FILES = {
    "empty": "[]",
    "file mention": MENTION_FILE,
    "notice trigger": NOTICE_FILE,
    "non-ASCII and emoji": (
        '[[6,[2,[[0,[[1760000001000,"text",["Grüße, 日本語のコメント, Привет мир, '
        'ñandú 🇯🇵 👩\u200d💻 \\u001f tab\\there"],[]]]]]]]]'
    ),
    "odd update types": (
        '[[3,[3,[[0,[[10,"image",["x"],[]],[11,"",[],[]],[12,null,null,null],[13],[],'
        '"text",7,{"z":1,"a":[true,false,null]}]]]]]]'
    ),
    "indices beyond the history": '[[99,[0,[[7,[[5,"text",["far"],[]]]]]]],[100000,[2,[[0,[[6,"text",["x"],[]]]]]]]]',
    "empty block maps": '[[3,[2,[]]],[11,[0,[[1,[[1,"text",["r"],[]]]]]]],[0,[4,[]]]]',
    "empty update lists": '[[4,[2,[[0,[]],[1,[[3,"text",["y"],[]]]]]]]]',
    "timestamps out of order": '[[2,[2,[[0,[[300,"text",["c"],[]],[100,"text",["a"],[]],[200,"text",["b"],[]]]]]]]]',
    "odd edit types and keys": '[["2",["4",[["0",[[1,"text",["s"],[]]]]]]],[2.5,[-1,[[null,[]]]]],[-3,[9,[]]]]',
    "every JSON escape": '[[1,[0,[[0,[[1,"text",["\\"\\\\/\\b\\f\\n\\r\\t\\u0000\\u001f\x7f\u2028"],[]]]]]]]]',
    "fractions and exponents": '[[1,[0,[[0,[[1.5,"text",["x"],[[0.1,1e-7,1e+21,123456789012345680000,5e-324]]]]]]]]]',
    "lone surrogates": '[[1,[0,[[0,[[1,"text",["\\ud800 \\udfff 😀"],[]]]]]]]]',
    "objects": '[[1,[0,[[0,[[1,"text",["x"],{"2":1,"10":2,"b":3,"a":4,"4294967295":5}]]]]]]]',
}


class TestOriginalFiles:
    """Files the original wrote load and serialize back to the same bytes."""

    @pytest.mark.parametrize("text", ORIGINAL_FILES.values(), ids=ORIGINAL_FILES.keys())
    def test_round_trip_is_byte_exact(self, text: str) -> None:
        """Loading then serializing gives the file's text back."""
        assert roundtrip(text) == text

    @pytest.mark.parametrize("text", ORIGINAL_FILES.values(), ids=ORIGINAL_FILES.keys())
    def test_load_then_save_writes_the_same_bytes(self, tmp_path: Path, text: str) -> None:
        """Through the manager: initialize, save, and the file on disk is unchanged."""
        data = text.encode("utf-8")
        (tmp_path / "context_history.json").write_bytes(data)
        manager = ContextManager()
        assert manager.initialize_context_history(tmp_path).status == "loaded"
        assert manager.context_history_json() == text
        assert manager.save_context_history(tmp_path)
        assert (tmp_path / "context_history.json").read_bytes() == data

    def test_non_ascii_is_written_raw(self) -> None:
        """Non-ASCII text is UTF-8 in the file, not ``\\u`` escapes, and ``/`` is not escaped."""
        store = OverwriteStore()
        store.record(2, EditType.READ_FILE_TOOL, 0, text_update(1, "ü/😀"))
        assert store.to_json() == '[[2,[2,[[0,[[1,"text",["ü/😀"],[]]]]]]]]'

    def test_lone_surrogates_are_escaped_as_javascript_does(self) -> None:
        """A lone surrogate is written ``\\udXXX`` in lower case, so the file stays valid UTF-8."""
        store = OverwriteStore()
        store.record(2, EditType.READ_FILE_TOOL, 0, text_update(1, "a\ud83d b\ude00"))
        assert store.to_json() == '[[2,[2,[[0,[[1,"text",["a\\ud83d b\\ude00"],[]]]]]]]]'
        store.to_json().encode("utf-8")

    @pytest.mark.parametrize(
        ("text", "written"),
        [
            pytest.param('[[1,[2.0,[[0.0,[[1760000000000.0,"text",["x"],[]]]]]]]]', '[[1,[2,[[0,[[1760000000000,"text",["x"],[]]]]]]]]', id="integral floats"),
            pytest.param('[[-0,[0,[[-0.0,[]]]]]]', '[[0,[0,[[0,[]]]]]]', id="negative zero"),
            pytest.param('[[1,[0,[[0,[[1E2,"t"],[1e-6,"t"],[1.5e300,"t"]]]]]]]', '[[1,[0,[[0,[[100,"t"],[0.000001,"t"],[1.5e+300,"t"]]]]]]]', id="exponents"),
            pytest.param('[[1,[0,[[0,[[12345678901234567890,"t"],[9007199254740993,"t"]]]]]]]', '[[1,[0,[[0,[[12345678901234567000,"t"],[9007199254740992,"t"]]]]]]]', id="beyond 2**53"),
            pytest.param('[[9007199254740993,[0,[]]],[-9007199254740993,[0,[]]],[9007199254740992,[0,[]]]]', "[[9007199254740992,[0,[]]],[-9007199254740992,[0,[]]]]", id="2**53 + 1 is 2**53"),
            pytest.param('[[1,[0,[[0,[[1e400,"t"],[-1e400,"t"]]]]]]]', '[[1,[0,[[0,[[null,"t"],[null,"t"]]]]]]]', id="overflow"),
            pytest.param('  [ [1 , [0,\n[ ] ] ] ]\n', "[[1,[0,[]]]]", id="whitespace"),
            pytest.param('[[1,[0,[]]],[2,[3,[]]],[1,[4,[[0,[]]]]]]', "[[1,[4,[[0,[]]]]],[2,[3,[]]]]", id="repeated message"),
            pytest.param('[[1,[0,[[5,[[1]]],[6,[]],[5,[[2]]]]]]]', "[[1,[0,[[5,[[2]]],[6,[]]]]]]", id="repeated block"),
            pytest.param('[[1,[0,[[0,[{"b":1,"b":2,"a":3}]]]]]]', '[[1,[0,[[0,[{"b":2,"a":3}]]]]]]', id="repeated object key"),
            pytest.param("[[5,[0]]]", "[[5,[0,[]]]]", id="no block list"),
            pytest.param("[[5,[0,null]]]", "[[5,[0,[]]]]", id="null block list"),
            pytest.param('[[5,[0,""]]]', "[[5,[0,[]]]]", id="empty string block list"),
            pytest.param("[[5,[]]]", "[[5,[null,[]]]]", id="no edit type"),
            pytest.param("[[5,[0,[[1,[]]],7],8]]", "[[5,[0,[[1,[]]]]]]", id="extra elements"),
            pytest.param("[[5,[0,[[1],[],[2,null]]]]]", "[[5,[0,[[1,null],[null,null],[2,null]]]]]", id="short pairs"),
            pytest.param('[[5,[0,[{"0":1,"1":[[3]]},{}]]]]', "[[5,[0,[[1,[[3]]],[null,null]]]]]", id="object pairs"),
            pytest.param('["ab",[1,"x"]]', '[["a",["b",[]]],[1,["x",[]]]]', id="strings destructure"),
            pytest.param('[[1,[0,[[0,["\\/\\u007f\\u2028\\u00e9\\uD83D\\uDE00"]]]]]]', '[[1,[0,[[0,["/\x7f\u2028é😀"]]]]]]', id="needless escapes"),
            pytest.param("[[true,[0,[]]],[1,[2,[]]],[true,[3,[]]]]", "[[true,[3,[]]],[1,[2,[]]]]", id="true is not 1"),
            pytest.param("[[[1],[0,[]]],[[1],[2,[]]]]", "[[[1],[0,[]]],[[1],[2,[]]]]", id="array keys never equal"),
        ],
    )  # fmt: skip
    def test_what_the_original_writes_back(self, text: str, written: str) -> None:
        """Files the original loads but would write differently come back as it writes them."""
        assert roundtrip(text) == written


class TestCorruptLayouts:
    """A text the original cannot load raises CorruptStoreError naming the place."""

    @pytest.mark.parametrize(
        ("text", "place"),
        [
            pytest.param("", "not JSON", id="empty file"),
            pytest.param("[[1,[0,[]]]", "not JSON", id="cut short"),
            pytest.param("[NaN]", "not JSON", id="NaN"),
            pytest.param("[Infinity]", "not JSON", id="Infinity"),
            pytest.param("\ufeff[]", "not JSON", id="byte order mark"),
            pytest.param("[1,]", "not JSON", id="trailing comma"),
            pytest.param("42", "top level: expected a list, got a number", id="number"),
            pytest.param("null", "top level: expected a list, got null", id="null"),
            pytest.param('"[]"', "top level: expected a list, got a string", id="string"),
            pytest.param('{"1":[0,[]]}', "top level: expected a list, got an object", id="object"),
            pytest.param("[[1,[0,[]]],5]", "[1]: expected [messageIndex, [editType, blocks]], got a number", id="item number"),
            pytest.param("[null]", "[0]: expected [messageIndex, [editType, blocks]], got null", id="item null"),
            pytest.param('[{"0":1,"1":[0,[]]}]', "[0]: expected [messageIndex, [editType, blocks]], got an object", id="item object"),
            pytest.param("[[1]]", "[0]: expected [messageIndex, [editType, blocks]], got a list of length 1", id="item short"),
            pytest.param("[[]]", "[0]: expected [messageIndex, [editType, blocks]], got a list of length 0", id="item empty"),
            pytest.param("[[1,null]]", "[0][1]: expected [editType, blocks], got null", id="body null"),
            pytest.param('[[1,"xy"]]', "[0][1][1]: expected a list of [blockIndex, updates], got a string", id="body string"),
            pytest.param("[[1,4]]", "[0][1]: expected [editType, blocks], got a number", id="body number"),
            pytest.param("[[1,[0,5]]]", "[0][1][1]: expected a list of [blockIndex, updates], got a number", id="blocks number"),
            pytest.param('[[1,[0,{"0":[]}]]]', "[0][1][1]: expected a list of [blockIndex, updates], got an object", id="blocks object"),
            pytest.param('[[1,[0,"x"]]]', "[0][1][1]: expected a list of [blockIndex, updates], got a string", id="blocks string"),
            pytest.param("[[1,[0,[[0,[]],7]]]]", "[0][1][1][1]: expected [blockIndex, updates], got a number", id="pair number"),
            pytest.param('[[1,[0,["ab"]]]]', "[0][1][1][0]: expected [blockIndex, updates], got a string", id="pair string"),
        ],
    )  # fmt: skip
    def test_names_the_place(self, text: str, place: str) -> None:
        """The error says where the layout breaks."""
        with pytest.raises(CorruptStoreError) as raised:
            OverwriteStore.from_json(text)
        assert str(raised.value).startswith(place)

    def test_is_a_value_error(self) -> None:
        """Callers can catch the builtin they expect."""
        with pytest.raises(ValueError, match="top level"):
            OverwriteStore.from_json_value({"not": "a list"})

    def test_deep_nesting_is_corrupt_not_a_crash(self) -> None:
        """JSON nested beyond Python's recursion limit is reported, not raised as RecursionError."""
        with pytest.raises(CorruptStoreError):
            OverwriteStore.from_json("[" * 100_000 + "]" * 100_000)


class TestRollback:
    """``rollback``/``truncate_context_history``: drop updates newer than a checkpoint."""

    STORE = '[[2,[2,[[0,[[111,"text",["a"],[]]]]]]],[1,[0,[[0,[[111,"text",["n"],[]]]]]]]]'

    def test_an_update_at_the_checkpoint_is_kept(self, tmp_path: Path) -> None:
        """B5: rolling back to 111 keeps updates at 111; to 100 empties the store and writes ``[]``."""
        (tmp_path / "context_history.json").write_text(self.STORE, encoding="utf-8")
        manager = ContextManager()
        manager.initialize_context_history(tmp_path)
        manager.truncate_context_history(111, tmp_path)
        assert (tmp_path / "context_history.json").read_text(encoding="utf-8") == self.STORE
        manager.truncate_context_history(100, tmp_path)
        assert (tmp_path / "context_history.json").read_text(encoding="utf-8") == "[]"

    def test_always_saves(self, tmp_path: Path) -> None:
        """A rollback that changes nothing still writes the file, as the original does."""
        manager = ContextManager()
        manager.truncate_context_history(5, tmp_path)
        assert (tmp_path / "context_history.json").read_text(encoding="utf-8") == "[]"

    def test_without_a_folder_nothing_is_written(self, tmp_path: Path) -> None:
        """``task_dir=None`` keeps the rollback in memory."""
        manager = ContextManager()
        manager.store.record(2, 2, 0, text_update(10, "x"))
        manager.truncate_context_history(5)
        assert len(manager.store) == 0
        assert not list(tmp_path.iterdir())

    def test_cuts_from_the_end_only(self) -> None:
        """Out-of-order updates: the cut stops at the first update not newer, as in the original."""
        store = OverwriteStore.from_json(ORIGINAL_FILES["timestamps out of order"])
        store.rollback(150)
        assert store.to_json() == '[[2,[2,[[0,[[300,"text",["c"],[]],[100,"text",["a"],[]]]]]]]]'

    def test_blocks_and_messages_left_empty_go(self) -> None:
        """A block cut to nothing is removed, then a message with no block left."""
        store = OverwriteStore.from_json(
            '[[4,[2,[[0,[[5,"t"]]],[1,[[9,"t"]]]]]],[6,[3,[[0,[[9,"t"]]]]]]]'
        )
        store.rollback(7)
        assert store.to_json() == '[[4,[2,[[0,[[5,"t"]]]]]]]'

    def test_an_already_empty_block_stays_but_a_message_without_blocks_goes(self) -> None:
        """Only a block the cut emptied is removed; a message with an empty block map always goes."""
        store = OverwriteStore.from_json(ORIGINAL_FILES["empty update lists"])
        store.rollback(0)
        assert store.to_json() == "[[4,[2,[[0,[]]]]]]"
        store = OverwriteStore.from_json(ORIGINAL_FILES["empty block maps"])
        store.rollback(10)
        assert store.to_json() == '[[11,[0,[[1,[[1,"text",["r"],[]]]]]]]]'

    @pytest.mark.parametrize(
        ("stamp", "cut"),
        [
            pytest.param('"200"', True, id="numeric string"),
            pytest.param('" 0x10 "', False, id="hex string"),
            pytest.param('"abc"', False, id="text"),
            pytest.param("true", False, id="true is 1"),
            pytest.param("null", False, id="null is 0"),
            pytest.param("[150]", True, id="one-element list"),
            pytest.param("[1,2]", False, id="two-element list"),
            pytest.param("{}", False, id="object"),
        ],
    )  # fmt: skip
    def test_compares_like_javascript(self, stamp: str, cut: bool) -> None:
        """Timestamps that are not numbers compare as JavaScript's ``>`` converts them."""
        store = OverwriteStore.from_json(f'[[2,[2,[[0,[[0,"t"],[{stamp},"t"]]]]]]]')
        store.rollback(100)
        assert (len(store.updates(2, 0)) == 1) is cut

    def test_updates_that_are_not_lists_are_kept(self) -> None:
        """A block whose updates are not a list is left alone (the original cannot cut it either)."""
        text = '[[2,[2,[[0,{"length":0}],[1,"x"],[2,7]]]]]'
        store = OverwriteStore.from_json(text)
        store.rollback(-1)
        assert store.to_json() == text


class TestNotices:
    """The truncation notice on message 1 and the task replacement on message 0."""

    HISTORY = (U([T("<task>do it</task>"), T("env")]), A([T("ok")]))

    def test_trigger_on_a_fresh_store_writes_the_reference_json(self, tmp_path: Path) -> None:
        """Section 2.2's second example, exactly: message 1's entry comes first."""
        manager = ContextManager()
        manager.trigger_apply_standard_context_truncation_notice_change(999, tmp_path, self.HISTORY)
        assert manager.context_history_json() == NOTICE_FILE
        assert (tmp_path / "context_history.json").read_text(encoding="utf-8") == NOTICE_FILE

    def test_trigger_again_changes_nothing_and_saves_nothing(self, tmp_path: Path) -> None:
        """Both notices are added only while their message has no entry; no change, no save."""
        manager = ContextManager()
        manager.trigger_apply_standard_context_truncation_notice_change(999, None, self.HISTORY)
        manager.trigger_apply_standard_context_truncation_notice_change(
            1000, tmp_path, self.HISTORY
        )
        assert manager.context_history_json() == NOTICE_FILE
        assert not (tmp_path / "context_history.json").exists()

    def test_task_text_is_replaced_only_when_block_0_has_text(self) -> None:
        """A string task or an empty first text block gets the notice on message 1 only."""
        for first in ("plain string task", [T("")], [{"type": "image"}]):
            manager = ContextManager()
            history = [U(first), A("ok")]
            manager.trigger_apply_standard_context_truncation_notice_change(7, None, history)
            assert manager.store.message_indices() == [1]

    def test_an_existing_entry_for_message_1_blocks_the_notice(self) -> None:
        """A file-read edit already recorded on message 1 keeps its place; the notice is not added."""
        manager = ContextManager()
        manager.store.record(1, EditType.READ_FILE_TOOL, 0, text_update(3, "r"))
        manager.trigger_apply_standard_context_truncation_notice_change(9, None, self.HISTORY)
        assert manager.store.latest(1, 0) == Update(3, "text", ["r"], [])
        assert manager.store.effective_text(0, 0) == "[Continue assisting the user!]"


class TestApi:
    """The typed surface of the store."""

    def test_entries_in_insertion_order_as_typed_values(self) -> None:
        """``entries()`` gives every message, block and update in the file's order."""
        store = OverwriteStore.from_json(MENTION_FILE)
        entries = list(store.entries())
        assert [entry.message_index for entry in entries] == [2, 1]
        first = entries[0]
        assert first == Entry(
            2,
            4,
            (
                Block(
                    0,
                    (
                        Update(
                            111,
                            "text",
                            [json.loads('"' + MENTION_TEXT + '"')],
                            [["a.txt"], ["a.txt", "b.txt"]],
                        ),
                    ),
                ),
            ),
        )
        assert entries[1].blocks[0].updates[0].text == TRUNCATION

    def test_entries_show_odd_keys_as_plain_values(self) -> None:
        """Keys the store keeps apart from numbers come out as the JSON values they are."""
        store = OverwriteStore.from_json('[[true,[0,[[[1],[]]]]],[1,[0,[[null,"x"]]]]]')
        entries = list(store.entries())
        assert [entry.message_index for entry in entries] == [True, 1]
        assert entries[0].blocks == (Block([1], ()),)
        assert entries[1].blocks == (Block(None, ()),)
        assert store.message_indices() == [True, 1]
        assert True in store
        assert 1 in store
        assert 0 not in store
        assert [1] not in store

    def test_true_does_not_find_message_1(self) -> None:
        """JavaScript keeps ``true`` and ``1`` apart; so does the store."""
        store = OverwriteStore()
        store.record(1, 0, 0, text_update(1, "x"))
        assert True not in store
        assert store.edit_type(True) is None

    def test_has_update_tells_what_latest_tells(self) -> None:
        """A block has an update exactly when latest() finds one (a non-list value has none)."""
        store = OverwriteStore.from_json('[[2,[2,[[0,[[1,"text",["a"],[]]]],[1,[]],[3,7]]]]]')
        for block in range(5):
            assert store.has_update(2, block) == (store.latest(2, block) is not None)
        assert store.has_update(2, 0)
        assert not store.has_update(2, 1)
        assert not store.has_update(2, 3)
        assert not store.has_update(5, 0)

    def test_what_is_handed_out_is_a_copy(self) -> None:
        """Changing a returned update, list or entry leaves the store unchanged."""
        store = OverwriteStore.from_json(MENTION_FILE)
        before = store.to_json()
        latest = store.latest(2, 0)
        assert latest is not None
        latest.metadata[0].append("changed")
        latest.content[0] = "changed"
        store.updates(2, 0)[0].metadata.clear()
        for _, updates in store.block_updates(2):
            updates.clear()
        next(store.entries()).blocks[0].updates[0].metadata.clear()
        store.to_json_value()[0][0] = 77
        assert store.to_json() == before

    def test_what_is_taken_in_is_copied(self) -> None:
        """Changing an update after recording it leaves the store unchanged."""
        store = OverwriteStore()
        replaced = ["a.txt"]
        update = text_update(10, "x", [replaced, ["a.txt", "b.txt"]])
        store.record(2, EditType.FILE_MENTION, 1, update)
        replaced.append("b.txt")
        update[0] = 99
        assert (
            store.to_json() == '[[2,[4,[[1,[[10,"text",["x"],[["a.txt"],["a.txt","b.txt"]]]]]]]]]'
        )

    def test_edit_type_is_fixed_by_the_first_update(self) -> None:
        """A later update of another type keeps the entry's edit type."""
        store = OverwriteStore()
        store.record(5, EditType.READ_FILE_TOOL, 0, text_update(1, "a"))
        store.record(5, EditType.FILE_MENTION, 1, text_update(2, "b"))
        assert store.edit_type(5) == EditType.READ_FILE_TOOL
        assert store.to_json() == '[[5,[2,[[0,[[1,"text",["a"],[]]]],[1,[[2,"text",["b"],[]]]]]]]]'

    def test_record_refuses_what_json_cannot_hold(self) -> None:
        """A value with no JSON form is refused before it reaches the store."""
        store = OverwriteStore()
        with pytest.raises(TypeError):
            store.record(1, 0, 0, [1, "text", [object()], []])
        with pytest.raises(CorruptStoreError):
            OverwriteStore.from_json_value([[1, [0, [[0, [{1: "x"}]]]]]])
        assert len(store) == 0

    def test_equality_is_identical_json(self) -> None:
        """Stores are equal exactly when they serialize to the same text."""
        one = OverwriteStore.from_json("[[1,[0,[]]],[2,[0,[]]]]")
        assert one == OverwriteStore.from_json("[[1,[0,[]]],[2,[0,[]]]]")
        assert one != OverwriteStore.from_json("[[2,[0,[]]],[1,[0,[]]]]")
        assert OverwriteStore.from_json("[[true,[0,[]]]]") != OverwriteStore.from_json(
            "[[1,[0,[]]]]"
        )
        assert one != "[[1,[0,[]]],[2,[0,[]]]]"

    def test_clear_and_len(self) -> None:
        """``clear`` empties the store, which then writes ``[]``."""
        store = OverwriteStore.from_json(NOTICE_FILE)
        assert len(store) == 2
        store.clear()
        assert len(store) == 0
        assert store.to_json() == "[]"


# -- laws ------------------------------------------------------------------------------------------

TEXT = st.text(
    st.one_of(
        st.characters(codec="utf-8"),
        st.sampled_from('ü日😀\u2028"\\/\n\x00\x7f'),
        st.characters(categories=["Cs"]),
    ),
    max_size=12,
)
PATHS = st.lists(st.sampled_from(["a.txt", "b.txt", "src/ü.py"]), max_size=3, unique=True)
METADATA: st.SearchStrategy[list[Any]] = st.one_of(st.just([]), st.tuples(PATHS, PATHS).map(list))
ODD_NUMBERS = st.sampled_from([0.5, 1e-7, 1e21, 2**60, -3, 2.0])


@st.composite
def recordings(draw: st.DrawFn, *, first: int = 1, last: int = 1000) -> list[tuple[Any, ...]]:
    """Calls of ``record``, timestamps in time order within [first, last]."""
    stamps = sorted(draw(st.lists(st.integers(first, last), max_size=25)))
    calls = []
    for stamp in stamps:
        message = draw(st.one_of(st.integers(0, 12), st.sampled_from([99, 4000])))
        edit_type = draw(st.sampled_from(list(EditType)))
        block = draw(st.integers(0, 3))
        metadata = draw(st.one_of(METADATA, st.lists(ODD_NUMBERS, max_size=2)))
        calls.append((message, edit_type, block, text_update(stamp, draw(TEXT), metadata)))
    return calls


def build(calls: list[tuple[Any, ...]], store: OverwriteStore | None = None) -> OverwriteStore:
    store = OverwriteStore() if store is None else store
    for call in calls:
        store.record(*call)
    return store


class TestLaws:
    """Properties every store keeps."""

    @given(recordings(), st.integers(0, 1001))
    def test_rollback_twice_is_rollback_once(self, calls: list[tuple[Any, ...]], t: int) -> None:
        """Rolling back to the same checkpoint again changes nothing."""
        store = build(calls)
        store.rollback(t)
        once = store.to_json()
        store.rollback(t)
        assert store.to_json() == once

    @given(recordings())
    def test_rollback_before_every_update_empties_the_store(
        self, calls: list[tuple[Any, ...]]
    ) -> None:
        """Nothing recorded at or after the checkpoint survives it."""
        store = build(calls)
        store.rollback(0)
        assert len(store) == 0
        assert store.to_json() == "[]"

    @given(recordings(first=1, last=500), recordings(first=501, last=1000))
    def test_rollback_undoes_later_updates(
        self, before: list[tuple[Any, ...]], after: list[tuple[Any, ...]]
    ) -> None:
        """Recording after t, then rolling back to t, gives back the store as it was at t."""
        store = build(before)
        earlier = store.copy()
        earlier_json = store.to_json()
        build(after, store)
        store.rollback(500)
        assert store == earlier
        assert store.to_json() == earlier_json

    @given(recordings(), recordings())
    def test_copy_is_independent(
        self, calls: list[tuple[Any, ...]], more: list[tuple[Any, ...]]
    ) -> None:
        """Changing a copy, or the original, leaves the other as it was."""
        store = build(calls)
        text = store.to_json()
        twin = store.copy()
        assert twin == store
        build(more, twin)
        twin.rollback(500)  # cuts update lists in place: shared lists would show in ``store``
        assert store.to_json() == text
        twin_text = twin.to_json()
        build(more, store)
        store.rollback(0)
        assert twin.to_json() == twin_text

    @settings(max_examples=examples(40, deep=400), suppress_health_check=[HealthCheck.too_slow])
    @given(recordings())
    def test_load_of_save_is_the_store(self, calls: list[tuple[Any, ...]]) -> None:
        """What is saved loads back equal, and saves again to the same bytes."""
        store = build(calls)
        manager = ContextManager()
        manager.store = store
        with tempfile.TemporaryDirectory() as folder:
            assert manager.save_context_history(folder)
            data = (Path(folder) / "context_history.json").read_bytes()
            loaded = ContextManager()
            assert loaded.initialize_context_history(folder).status == "loaded"
            assert loaded.store == store
            assert loaded.save_context_history(folder)
            assert (Path(folder) / "context_history.json").read_bytes() == data


def indices_by_scan(store: OverwriteStore, start: int, stop: int) -> list[int]:
    """What :meth:`OverwriteStore.indices_between` must answer, found by visiting every entry."""
    return sorted(
        index
        for index in store.message_indices()
        if type(index) is int and index >= 0 and start <= index < stop
    )


class TestIndicesBetween:
    """The store's index of edited messages answers as a scan of every entry would."""

    def test_only_integer_keys_in_the_range_ascending(self) -> None:
        """Odd keys (a float, true, a negative number) are no message's index."""
        store = OverwriteStore.from_json(
            '[[7,[2,[[0,[[1,"text",["a"],[]]]]]]],[1.5,[2,[]]],[true,[2,[]]],[-1,[2,[]]],'
            '[3,[2,[[0,[[1,"text",["b"],[]]]]]]],[12,[2,[[0,[[1,"text",["c"],[]]]]]]]]'
        )
        assert store.indices_between(0, 100) == [3, 7, 12]
        assert store.indices_between(3, 12) == [3, 7]
        assert store.indices_between(8, 12) == []

    @given(
        recordings(first=1, last=500),
        recordings(first=501, last=1000),
        st.integers(0, 1001),
        st.integers(0, 14),
        st.integers(0, 14),
    )
    def test_after_any_change_it_agrees_with_a_scan(
        self,
        before: list[tuple[Any, ...]],
        after: list[tuple[Any, ...]],
        checkpoint: int,
        start: int,
        width: int,
    ) -> None:
        """Recording, undoing a journal, rolling back, copying and loading keep the index true."""
        store = build(before)
        stores = [store]
        assert store.indices_between(start, start + width) == indices_by_scan(
            store, start, start + width
        )
        store.open_journal()
        build(after, store)
        stores.append(store.copy())
        store.undo_journal()
        stores.append(build(after, OverwriteStore.from_json(store.to_json())))
        stores[-1].rollback(checkpoint)
        for each in stores:
            assert each.indices_between(start, start + width) == indices_by_scan(
                each, start, start + width
            )
        store.clear()
        assert store.indices_between(0, 5000) == []


def tracked_objects(root: object) -> int:
    """How many objects a garbage collection visits among those reachable from ``root``."""
    seen: set[int] = set()
    stack = [root]
    tracked = 0
    while stack:
        value = stack.pop()
        if id(value) in seen or isinstance(value, type):
            continue
        seen.add(id(value))
        tracked += gc.is_tracked(value)
        stack.extend(gc.get_referents(value))  # untracked containers are walked too
    return tracked


def masks(count: int) -> OverwriteStore:
    """A store of ``count`` masked reads, one block each, as a long task leaves them."""
    store = OverwriteStore()
    for index in range(2, 2 * count + 2, 2):
        text = f"[an older copy of 'src/m{index}.py' was removed here]"
        store.record(
            index, EditType.READ_FILE_TOOL, 0, text_update(1000 + index, text, kind="content")
        )
    store.record(7, EditType.FILE_MENTION, 0, text_update(5, "x", [["a.txt"], ["a.txt", "b.txt"]]))
    return store


class TestCompactEntries:
    """Entries are plain values: a store's size adds nothing a collection visits."""

    def test_recorded_entries_add_no_tracked_object(self) -> None:
        """A store of 2,000 masks holds as many GC-tracked objects as one of 20."""
        small, large = masks(20), masks(2_000)
        gc.collect()
        assert tracked_objects(large) == tracked_objects(small)

    def test_loaded_and_copied_entries_add_no_tracked_object(self) -> None:
        """So does one loaded from the original's file, and a copy of it."""
        small = OverwriteStore.from_json(masks(20).to_json())
        large = OverwriteStore.from_json(masks(2_000).to_json())
        gc.collect()
        assert tracked_objects(large) == tracked_objects(small)
        assert tracked_objects(large.copy()) == tracked_objects(small.copy())

    def test_has_update_for_blocks_of_any_key(self) -> None:
        """Blocks past the mask's 62 indices, negative, float and string keys are found as well."""
        store = OverwriteStore()
        for block in (0, 61, 62, 10**6, -1, 1.5, "x"):
            store.record(3, EditType.READ_FILE_TOOL, block, text_update(1, "t"))
        store.record(4, EditType.READ_FILE_TOOL, 61, text_update(1, "t"))
        for each in (store, OverwriteStore.from_json(store.to_json())):
            for block in (0, 61, 62, 10**6, -1, 1.5, "x"):
                assert each.has_update(3, block)
            assert [b for b in range(70) if each.has_update(4, b)] == [61]
            for block in (1, 60, 63, -2, 2.5, "y", True, None):
                assert not each.has_update(3, block)

    @given(recordings(first=1, last=500), recordings(first=501, last=1000), st.integers(0, 1001))
    def test_what_an_entry_tells_without_parsing_agrees_with_its_text(
        self, before: list[tuple[Any, ...]], after: list[tuple[Any, ...]], checkpoint: int
    ) -> None:
        """``has_update`` and ``update_count`` agree with the updates themselves after any change."""
        store = build(before)
        store.open_journal()
        build(after, store)
        stores = [store.copy()]
        store.undo_journal()
        stores += [store, build(after, OverwriteStore.from_json(store.to_json()))]
        stores[-1].rollback(checkpoint)
        for each in stores:
            for message in [*range(13), 99, 4000]:
                for block in range(4):
                    assert each.has_update(message, block) == (
                        each.latest(message, block) is not None
                    )
            counted = sum(len(b.updates) for entry in each.entries() for b in entry.blocks)
            assert each.update_count() == counted
            reading = sum(
                len(b.updates) for e in each.entries() if e.edit_type == 2 for b in e.blocks
            )
            assert each.update_count([EditType.READ_FILE_TOOL]) == reading


# -- deliberate fix 2 --------------------------------------------------------------------------------


class TestFix2MentionMetadataSnapshot:
    """Deliberate fix 2: each file-mention update keeps its own replaced-files list."""

    def test_rollback_lets_later_duplicates_be_replaced_again(self, tmp_path: Path) -> None:
        """After a rollback to 15, b.txt in message 2 is replaced again by the next optimization.

        The original (reference appendix B6) builds each mention update's ``metadata[0]`` from the
        previous update's list object and appends to it, so the ts-10 update's list grows to
        ``["a.txt", "b.txt"]`` when b.txt is replaced at ts 20. Rolled back to 15, the surviving
        ts-10 update then claims both files were replaced although its text still holds b.txt;
        every later scan skips the message as done, and b.txt there is never replaced again. Here
        the ts-10 update keeps ``["a.txt"]``, so the next optimization replaces b.txt once more.
        """
        history = [
            U([T("task")]),
            A([T("ok")]),
            U([T("hdr"), T("see " + mention("a.txt", "AAAA") + mention("b.txt", "BBBB"))]),
            A([T("reading a")]),
            U([T("[read_file for 'a.txt'] Result:\nAAAA")]),
        ]
        manager = ContextManager()
        assert manager.apply_context_optimizations(history, 2, 10) == (True, {2})
        history += [A([T("reading b")]), U([T("[read_file for 'b.txt'] Result:\nBBBB")])]
        assert manager.apply_context_optimizations(history, 2, 20) == (True, {2})
        both = [["a.txt", "b.txt"], ["a.txt", "b.txt"]]
        assert [update.metadata for update in manager.store.updates(2, 1)] == [
            [["a.txt"], ["a.txt", "b.txt"]],  # the original shows ``both`` here too
            both,
        ]

        manager.truncate_context_history(15, tmp_path)
        saved = json.loads((tmp_path / "context_history.json").read_text(encoding="utf-8"))
        assert saved[0][1][1][0][1][0][3] == [["a.txt"], ["a.txt", "b.txt"]]
        assert "BBBB" in (manager.store.effective_text(2, 1) or "")

        # The original returns (False, set()) here: message 2 looks fully replaced.
        assert manager.apply_context_optimizations(history, 2, 30) == (True, {2})
        latest = manager.store.latest(2, 1)
        assert latest is not None
        assert latest.metadata == both
        assert "BBBB" not in (latest.text or "")
        assert "AAAA" not in (latest.text or "")


# -- the original's semantics, run in JavaScript ----------------------------------------------------

# The original's loader, rollback and saver as the reference describes them (sections 2.2, 5.9),
# run by JavaScript itself, so JSON.parse, Map, ">" and JSON.stringify are the real ones.
ORACLE = r"""
"use strict";
const readline = require("readline");
function load(text) {
  const value = JSON.parse(text);
  return new Map(value.map(([index, [editType, pairs]]) => [index, [editType, new Map(pairs)]]));
}
function rollback(store, timestamp) {
  for (const [index, [, blocks]] of store) {
    const emptied = [];
    for (const [block, updates] of blocks) {
      let keep = updates.length - 1;
      while (keep >= 0 && updates[keep][0] > timestamp) keep--;
      if (keep < updates.length - 1) {
        updates.length = keep + 1;
        if (updates.length === 0) emptied.push(block);
      }
    }
    for (const block of emptied) blocks.delete(block);
    if (blocks.size === 0) store.delete(index);
  }
}
function save(store) {
  return JSON.stringify(
    Array.from(store.entries()).map(([index, [editType, blocks]]) => [index, [editType, Array.from(blocks.entries())]]),
  );
}
const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { text, timestamp } = JSON.parse(line);
  const answer = {};
  try {
    const store = load(text);
    answer.loaded = save(store);
    try {
      rollback(store, timestamp);
      answer.rolled = save(store);
    } catch (error) {
      answer.rolled = null;
    }
  } catch (error) {
    answer.loaded = null;
  }
  process.stdout.write(JSON.stringify(answer) + "\n");
});
"""

NODE = shutil.which("node")


@pytest.fixture(scope="module")
def javascript() -> Iterator[subprocess.Popen[str]]:
    """One node process answering a line per file."""
    if NODE is None:
        pytest.skip("node is not installed")
    process = subprocess.Popen(
        [NODE, "-e", ORACLE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        encoding="utf-8",
    )
    yield process
    assert process.stdin is not None
    assert process.stdout is not None
    process.stdin.close()
    process.wait(timeout=10)
    process.stdout.close()


SCALARS = st.one_of(
    st.integers(-5, 300),
    st.sampled_from([2**53 + 1, 10**20, 10**22, -(10**25)]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.5, 1e-7, 2.0, -0.0, 1e21, 1.5e300, 5e-324]),
    TEXT,
    st.sampled_from(["200", " 0x1f ", "Infinity", "-5", "", "1e3", "text"]),
    st.booleans(),
    st.none(),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(TEXT | st.sampled_from(["0", "1", "10", "2"]), inner, max_size=3)
    ),
    max_leaves=6,
)
KEYS = st.one_of(
    st.integers(-2, 6), st.sampled_from([2.5, "1", True, None, [1], {}, 2**53 + 1]), JSON_VALUES
)
UPDATE = st.one_of(
    st.tuples(
        st.integers(0, 300),
        st.sampled_from(["text", "image", ""]),
        st.lists(TEXT, max_size=1),
        METADATA,
    ).map(list),
    st.tuples(SCALARS).map(list),
    JSON_VALUES,
)
UPDATES = st.one_of(st.lists(UPDATE, max_size=4), JSON_VALUES)
PAIR = st.one_of(
    st.tuples(KEYS, UPDATES).map(list),
    st.tuples(KEYS).map(list),
    st.builds(lambda key, updates: {"0": key, "1": updates}, KEYS, UPDATES),
    JSON_VALUES,
)
PAIRS = st.one_of(st.lists(PAIR, max_size=3), JSON_VALUES)
BODY = st.one_of(
    st.tuples(st.integers(0, 4), PAIRS).map(list),
    st.tuples(JSON_VALUES).map(list),
    JSON_VALUES,
)
ITEM = st.one_of(st.tuples(KEYS, BODY).map(list), JSON_VALUES)
FILES = st.one_of(st.lists(ITEM, max_size=4), JSON_VALUES).map(
    lambda value: json.dumps(value, ensure_ascii=False)
)
STAMPS = st.one_of(st.integers(-1, 301), st.sampled_from([0.5, 150.5, 1e300]))


@pytest.mark.skipif(NODE is None, reason="node is not installed")
class TestAgainstJavaScript:
    """Odd files load, roll back and save exactly as JavaScript's own primitives do."""

    @settings(max_examples=examples(100, deep=3_000), deadline=None)
    @given(text=FILES | st.sampled_from(list(ORIGINAL_FILES.values())), timestamp=STAMPS)
    def test_same_bytes_as_javascript(
        self, javascript: subprocess.Popen[str], text: str, timestamp: float
    ) -> None:
        """Load, save, roll back and save again give JavaScript's bytes, or both refuse the file."""
        assert javascript.stdin is not None
        assert javascript.stdout is not None
        line = json.dumps({"text": text, "timestamp": timestamp})  # ASCII: surrogates survive
        javascript.stdin.write(line + "\n")
        javascript.stdin.flush()
        expected = json.loads(javascript.stdout.readline())
        try:
            store = OverwriteStore.from_json(text)
        except CorruptStoreError:
            assert expected["loaded"] is None
            return
        assert store.to_json() == expected["loaded"]
        if expected["rolled"] is not None:  # the original throws on updates of null
            store.rollback(timestamp)
            assert store.to_json() == expected["rolled"]
