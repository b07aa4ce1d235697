"""Duplicate file reads: detection, replacement, the savings ratio, and the decisions built on them.

Cases 8-11 restate Cline's own tests (reference test cases); the stored texts are those the
reference records from running the original.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    ClineReadDetector,
    ContextManager,
    EditType,
    Message,
    OverwriteStore,
    ReadScan,
    Sighting,
    TokenUsage,
    compact_conversation_for_context_window,
)
from windowkeeper.core._cline_text import (
    EDIT_TOOLS,
    Header,
    final_content,
    mention_notice,
    mentions,
    parse_header,
)
from windowkeeper.core._file_reads import savings_ratio
from windowkeeper.core._messages import block_text
from windowkeeper.core._notices import DUPLICATE_READ_NOTICE, RESULT_MISSING, TRUNCATION_NOTICE

from ..builders import TR, TU, A, T, U, read_result

NOTICE = DUPLICATE_READ_NOTICE
NOW = 1_700_000_000_000


def stored(manager: ContextManager, index: int, block: int = 0) -> str | None:
    """The effective stored text of a block."""
    return manager.store.effective_text(index, block)


ENV = "<environment_details>\n# Visual Studio Code Visible Files\ntest.txt\n\n# Current Mode\nACT MODE\n</environment_details>"
SAVED = "The content was successfully saved to test.txt.\n\nHere is the full, updated content of the file that was saved:\n\n"


def final(path: str, body: str) -> str:
    return f'<final_file_content path="{path}">\n{body}\n\n</final_file_content>'


def final_replaced(path: str) -> str:
    return f'<final_file_content path="{path}"> {NOTICE} </final_file_content>'


class TestApplyContextOptimizations:
    """Cline's cases 8-11: which copies are replaced, and what the store then holds."""

    def case_8(self) -> list[Message]:
        return [
            U("Initial task"),
            A("Response"),
            U([T(f"[write_to_file for 'test.txt'] Result:\n{SAVED}{final('test.txt', 'test')}"), T(ENV)]),
            A("Response"),
            U([T(f"[replace_in_file for 'test.txt'] Result:\n{SAVED}{final('test.txt', 'test 2')}"), T(ENV)]),
            A("Response"),
            U(
                [
                    T("[TASK RESUMPTION] This task was interrupted just now. The conversation may have been incomplete."),
                    T(
                        "New message to respond to:\n<user_message>\n'test.txt' (see below for file content) tell me whats in this file\n</user_message>\n\n"
                        '<file_content path="test.txt">\ntest 2\n\n</file_content>'
                    ),
                ]
            ),
        ]  # fmt: skip

    def test_case_8_write_replace_and_mention(self) -> None:
        """Edits and a later mention of one file: both edit results are replaced, the mention kept."""
        history = self.case_8()
        manager = ContextManager()
        assert manager.apply_context_optimizations(history, 2, NOW) == (True, {2, 4})
        assert manager.store.message_indices() == [2, 4]
        for index, body in ((2, "test"), (4, "test 2")):
            original = history[index]["content"][0]["text"]
            assert manager.store.edit_type(index) == EditType.ALTER_FILE_TOOL
            [update] = manager.store.updates(index, 0)
            assert update.timestamp == NOW
            assert update.metadata == []
            assert update.text == original.replace(
                final("test.txt", body), final_replaced("test.txt")
            )
        assert 6 not in manager.store

    def test_case_8_leaves_the_history_alone(self) -> None:
        """The replacements live in the store; the history is not modified."""
        history = self.case_8()
        before = copy.deepcopy(history)
        ContextManager().apply_context_optimizations(history, 2, NOW)
        assert history == before

    def test_case_9_no_duplicates(self) -> None:
        """Two different files, one copy each: nothing to replace."""
        history = [
            U("Initial task"),
            A("Response"),
            U([T(f"[write_to_file for 'test.txt'] Result:\n{final('test.txt', 'test')}")]),
            A("Response"),
            U(
                [
                    T(
                        f"[write_to_file for 'other.txt'] Result:\n{final('other.txt', 'other content')}"
                    )
                ]
            ),
        ]
        manager = ContextManager()
        assert manager.apply_context_optimizations(history, 2, NOW) == (False, set())
        assert len(manager.store) == 0

    def test_case_10_nothing_after_start(self) -> None:
        """Only the first pair: nothing is scanned."""
        manager = ContextManager()
        assert manager.apply_context_optimizations([U("Initial task"), A("Response")], 2, NOW) == (
            False,
            set(),
        )

    P = "/Users/toshi/Desktop/cline_testing_repo/test2.txt"
    ENV2 = "<environment_details>\n# Current Mode\nACT MODE\n</environment_details>"
    MENTION_2 = (
        "[plan_mode_respond] Result:\n<user_message>\n'test2.txt' (see below for file content)\n</user_message>\n\n"
        f'<file_content path="{P}">\ntest\n\n</file_content>'
    )

    def case_11(self) -> list[Message]:
        path, env = self.P, self.ENV2
        return [
            U("Initial task"),
            A([TU("toolu_001", "plan_mode_respond")]),
            U([TR("toolu_001", [T(self.MENTION_2)])]),
            A([TU("toolu_002", "write_to_file")]),
            U([TR("toolu_002", [T(f"[write_to_file for '{path}'] Result:\nThe content was successfully saved.\n\n{final(path, 'test')}")]), T(env)]),
            A([TU("toolu_003", "text")]),
            U([T("[TASK RESUMPTION] This task was interrupted just now. The conversation may have been incomplete."), T("New message to respond to with plan_mode_respond tool")]),
            A([TU("toolu_004", "replace_in_file")]),
            U([TR("toolu_004", [T(f"[replace_in_file for '{path}'] Result:\nThe content was successfully saved.\n\n{final(path, 'test2')}")]), T(env)]),
        ]  # fmt: skip

    def test_case_11_native_tool_calling(self) -> None:
        """Native tool results: the mention inside a tool_result and the first edit are replaced."""
        history = self.case_11()
        manager = ContextManager()
        assert manager.apply_context_optimizations(history, 2, NOW) == (True, {2, 4})
        assert manager.store.edit_type(2) == EditType.FILE_MENTION
        [mention] = manager.store.updates(2, 0)
        head = self.MENTION_2[: self.MENTION_2.index("<file_content")]
        assert mention.text == f'{head}<file_content path="{self.P}">{NOTICE}</file_content>'
        assert mention.metadata == [[self.P], [self.P]]
        edit = history[4]["content"][0]["content"][0]["text"]
        assert manager.store.edit_type(4) == EditType.ALTER_FILE_TOOL
        assert stored(manager, 4) == edit.replace(final(self.P, "test"), final_replaced(self.P))
        assert 8 not in manager.store

    def test_case_11_as_sent(self) -> None:
        """Sent, the edits land inside the tool_results, and message 6 answers toolu_003."""
        history = self.case_11()
        manager = ContextManager()
        manager.apply_context_optimizations(history, 2, NOW)
        sent = manager.get_truncated_messages(history, None)
        assert block_text(sent[2]["content"][0]) == stored(manager, 2)
        assert block_text(sent[4]["content"][0]) == stored(manager, 4)
        assert sent[6]["content"][0] == TR("toolu_003", RESULT_MISSING)
        assert sent[6]["content"][1:] == history[6]["content"]
        assert sent[8] is history[8]


class TestMentionsOverRounds:
    """A text mentioning several files is replaced one file at a time, round after round."""

    @staticmethod
    def mention(path: str, body: str) -> str:
        return f'<file_content path="{path}">{body}</file_content>'

    def test_second_round_continues_from_the_first(self) -> None:
        """Round two edits round one's text; each update records the files replaced so far."""
        text = f"see {self.mention('a.txt', 'AAAA')}{self.mention('b.txt', 'BBBB')}"
        history = [U("task"), A("ok"), U([T("hdr"), T(text)]), A("ok"), read_result("a.txt", "A2")]
        manager = ContextManager()
        assert manager.apply_context_optimizations(history, 2, 10) == (True, {2})
        only_a = f"see {self.mention('a.txt', NOTICE)}{self.mention('b.txt', 'BBBB')}"
        assert stored(manager, 2, 1) == only_a
        assert manager.store.edit_type(2) == EditType.FILE_MENTION
        history += [A("ok"), read_result("b.txt", "B2")]
        assert manager.apply_context_optimizations(history, 2, 20) == (True, {2})
        first, second = manager.store.updates(2, 1)
        assert second.text == f"see {self.mention('a.txt', NOTICE)}{self.mention('b.txt', NOTICE)}"
        assert second.metadata == [["a.txt", "b.txt"], ["a.txt", "b.txt"]]
        assert first.metadata == [["a.txt"], ["a.txt", "b.txt"]]  # a snapshot (deliberate fix 2)
        assert manager.apply_context_optimizations(history, 2, 30) == (False, set())


def b7_history(body: str = 200 * "y") -> list[Message]:
    """The worked example of reference 7.3 / B7."""
    return [
        U([T("task-12chars")]),
        A([T("ok")]),
        read_result("f", body),
        A([T("a3")]),
        read_result("f", body),
        A([T("a5")]),
    ]


class TestSavingsRatio:
    """The share of sent characters a round of replacements saved, counted as JavaScript counts."""

    def test_worked_example(self) -> None:
        """Total 474, saved 47 (228 -> 181 characters): ratio 0.09916, under 30%."""
        history = b7_history()
        manager = ContextManager()
        changed, altered = manager.apply_context_optimizations(history, 2, NOW)
        assert (changed, altered) == (True, {2})
        assert stored(manager, 2) == f"[read_file for 'f'] Result:\n{NOTICE}"
        assert len(history[2]["content"][0]["text"]) == 228
        assert len(stored(manager, 2) or "") == 181
        ratio = savings_ratio(history, manager.store, None, altered)
        assert ratio == 47 / 474
        assert round(ratio, 5) == 0.09916

    def test_worked_example_in_memory(self) -> None:
        """The in-memory optimization reports the change and that truncation is still needed."""
        history = b7_history()
        optimization = ContextManager().attempt_file_read_optimization_in_memory(history, None, NOW)
        assert optimization.any_context_updates
        assert optimization.need_to_truncate
        assert block_text(optimization.optimized_history[2]["content"][0]) == (
            f"[read_file for 'f'] Result:\n{NOTICE}"
        )

    def test_counts_utf16_code_units(self) -> None:
        """An emoji counts 2, as in JavaScript: 100 emoji weigh what 200 ASCII letters weigh."""
        history = b7_history(100 * "\N{GRINNING FACE}")
        manager = ContextManager()
        _, altered = manager.apply_context_optimizations(history, 2, NOW)
        assert savings_ratio(history, manager.store, None, altered) == 47 / 474

    def test_string_content_counts_zero(self) -> None:
        """Only list content is counted; string messages add nothing."""
        history = b7_history()
        history[0] = U("a long task text that would change the ratio if it were counted")
        manager = ContextManager()
        _, altered = manager.apply_context_optimizations(history, 2, NOW)
        assert savings_ratio(history, manager.store, None, altered) == 47 / (474 - 12)

    def test_nothing_counted_is_zero(self) -> None:
        """No characters at all gives 0, not a division error."""
        assert savings_ratio([U(""), A("")], OverwriteStore(), None, set()) == 0.0


class TestClineText:
    """The grammar of Cline's texts around file contents, shared by both detectors."""

    def test_a_header_starts_the_text(self) -> None:
        """The tool, the quoted path and the whole header are read from the start of the text."""
        text = "[read_file for 'src/a b.py'] Result:\nbody"
        assert parse_header(text) == Header("read_file", "src/a b.py", text[:-5])
        assert parse_header(f"x{text}") is None

    def test_a_tool_name_ends_at_javascript_white_space(self) -> None:
        """JavaScript's \\s (with U+FEFF, without U+0085) cannot appear in the tool's name."""
        assert parse_header("[read\ufefffile for 'a'] Result:") is None
        assert parse_header("[read\x85file for 'a'] Result:") == Header(
            "read\x85file", "a", "[read\x85file for 'a'] Result:"
        )

    def test_final_content_is_the_first_element(self) -> None:
        """Groups 1 and 2 are the opening and the closing tags of the first element."""
        text = f"saved\n{final('a.py', 'one')}\n{final('b.py', 'two')}"
        match = final_content(text)
        assert match is not None
        assert (match.group(1), match.group(2)) == (
            '<final_file_content path="a.py">',
            "</final_file_content>",
        )
        assert "two" not in match.group(0)

    def test_mentions_in_order(self) -> None:
        """Every mention is found, with its path and its contents."""
        text = (
            '<file_content path="a">1</file_content> and <file_content path="b">2\n</file_content>'
        )
        assert [(m.group(1), m.group(2)) for m in mentions(text)] == [("a", "1"), ("b", "2\n")]

    def test_a_mention_notice_keeps_the_path(self) -> None:
        """The replaced mention is the same element with the notice as its contents."""
        replaced = mention_notice("a.py", NOTICE)
        assert [(m.group(1), m.group(2)) for m in mentions(replaced)] == [("a.py", NOTICE)]

    def test_the_edit_tools(self) -> None:
        """The two tools whose results carry the saved file."""
        assert frozenset({"write_to_file", "replace_in_file"}) == EDIT_TOOLS


class TestJavaScriptReplace:
    """A mention is replaced with JavaScript's String.replace, so ``$`` patterns in paths expand."""

    @staticmethod
    def replaced(path: str) -> str | None:
        mention = f'<file_content path="{path}">OLD</file_content>'
        history = [
            U("task"),
            A("ok"),
            U([T(f"see {mention} end")]),
            A("ok"),
            U([T(f'again <file_content path="{path}">NEW</file_content>')]),
        ]
        manager = ContextManager()
        assert manager.apply_context_optimizations(history, 2, NOW) == (True, {2})
        return stored(manager, 2)

    def test_plain_path(self) -> None:
        """Without ``$`` the mention is simply replaced by the notice."""
        assert (
            self.replaced("a.txt") == f'see <file_content path="a.txt">{NOTICE}</file_content> end'
        )

    @pytest.mark.parametrize(
        ("path", "shown"),
        [
            pytest.param("a$$b", "a$b", id="dollar-dollar"),
            pytest.param("a$&b", 'a<file_content path="a$&b">OLD</file_content>b', id="match"),
            pytest.param("a$`b", "asee b", id="before"),
            pytest.param("a$'b", "a endb", id="after"),
            pytest.param("a$1b", "a$1b", id="group-literal"),
            pytest.param("a$", "a$", id="trailing"),
        ],
    )
    def test_dollar_patterns(self, path: str, shown: str) -> None:
        """``$$``, ``$&``, ``$``` and ``$'`` are expanded; anything else stays literal."""
        assert (
            self.replaced(path) == f'see <file_content path="{shown}">{NOTICE}</file_content> end'
        )


class MarkerDetector:
    """A detector of its own: ``READ <path>`` text blocks are copies of ``<path>``."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    def scan(self, history: Sequence[Message], start_index: int, store: OverwriteStore) -> ReadScan:
        self.calls.append(start_index)
        scan = ReadScan()
        for index in range(start_index, len(history)):
            if index in store:
                continue
            content = history[index]["content"]
            text = block_text(content[0]) if isinstance(content, list) and content else None
            if text and text.startswith("READ "):
                path = text.split()[1]
                sighting = Sighting(index, EditType.READ_FILE_TOOL, "", f"READ {path} (stale)", 0)
                scan.add(path, sighting)
        return scan


class TestReplaceableDetector:
    """Detection is a part: the manager uses whatever ReadDetector it is given."""

    def history(self) -> list[Message]:
        return [
            U([T("task")]),
            A([T("ok")]),
            U([T("READ a.py " + 300 * "x")]),
            A([T("ok")]),
            U([T(f"[read_file for 'a.py'] Result:\n{300 * 'x'}")]),
            A([T("ok")]),
            U([T("READ a.py " + 300 * "z")]),
        ]

    def test_custom_detector_is_used(self) -> None:
        """Its sightings are replaced; the original's headers mean nothing to it."""
        detector = MarkerDetector()
        manager = ContextManager(detector=detector)
        assert manager.detector is detector
        assert manager.apply_context_optimizations(self.history(), 2, NOW) == (True, {2})
        assert detector.calls == [2]
        sent = manager.get_truncated_messages(self.history(), None)
        assert block_text(sent[2]["content"][0]) == "READ a.py (stale)"
        assert sent[4]["content"] == self.history()[4]["content"]

    def test_custom_detector_drives_the_decision(self) -> None:
        """The per-request entry point finds duplicates through it too."""
        detector = MarkerDetector()
        manager = ContextManager(detector=detector)
        result = manager.get_new_context_messages_and_metadata(
            self.history(),
            usage=TokenUsage(tokens_in=99_000),
            timestamp=NOW,
            context_window=128_000,
        )
        assert detector.calls == [2]
        assert not result.updated_deleted_range  # the saving is well over 30%
        assert block_text(result.truncated_history[2]["content"][0]) == "READ a.py (stale)"

    def test_default_is_the_original(self) -> None:
        """Without one, the original's detector is used."""
        assert isinstance(ContextManager().detector, ClineReadDetector)


def conversation(n: int) -> list[Message]:
    """``n`` messages with list content: the task, then assistant and user in turn."""
    return [
        (U if index % 2 == 0 else A)([T("Initial task" if index == 0 else f"Message {index}")])
        for index in range(n)
    ]


def with_big_duplicate(n: int = 9) -> list[Message]:
    """A conversation whose messages 2 and 4 hold the same large file."""
    history = conversation(n)
    history[2] = read_result("big.py", 5000 * "b")
    history[4] = read_result("big.py", 5000 * "c")
    return history


def saved_file(task_dir: Path) -> str | None:
    path = task_dir / "context_history.json"
    return path.read_text(encoding="utf-8") if path.exists() else None


class TestGetNewContextMessagesAndMetadata:
    """The per-request decision (reference 5.5), on a 128 000 window (limit 98 000)."""

    WINDOW = 128_000

    def call(
        self,
        manager: ContextManager,
        history: list[Message],
        tokens: int | None,
        task_dir: Path | None = None,
        deleted_range: tuple[int, int] | None = None,
        *,
        use_auto_condense: bool = False,
    ) -> Any:
        return manager.get_new_context_messages_and_metadata(
            history,
            usage=None if tokens is None else TokenUsage(tokens_in=tokens),
            timestamp=NOW,
            context_window=self.WINDOW,
            deleted_range=deleted_range,
            task_dir=task_dir,
            use_auto_condense=use_auto_condense,
        )

    @pytest.mark.parametrize("tokens", [None, 0, 97_999])
    def test_under_the_limit_nothing_happens(self, tmp_path: Path, tokens: int | None) -> None:
        """No previous request, or one under the limit: no edit, no range, nothing saved."""
        history = with_big_duplicate()
        manager = ContextManager()
        result = self.call(manager, history, tokens, tmp_path)
        assert result.deleted_range is None
        assert not result.updated_deleted_range
        assert result.truncated_history == history
        assert len(manager.store) == 0
        assert saved_file(tmp_path) is None

    def test_under_the_limit_keeps_the_range(self) -> None:
        """An existing range is applied as it is."""
        history = conversation(11)
        manager = ContextManager()
        result = self.call(manager, history, 1_000, deleted_range=(2, 5))
        assert result.deleted_range == (2, 5)
        assert not result.updated_deleted_range
        assert result.truncated_history == [history[0], history[1], *history[6:]]

    def test_enough_savings_avoid_truncation(self, tmp_path: Path) -> None:
        """Over the limit, replacing duplicates saved at least 30%: no truncation, the store is saved."""
        history = with_big_duplicate()
        manager = ContextManager()
        result = self.call(manager, history, 98_000, tmp_path)
        assert result.deleted_range is None
        assert not result.updated_deleted_range
        assert manager.store.message_indices() == [2]
        assert stored(manager, 2) == f"[read_file for 'big.py'] Result:\n{NOTICE}"
        assert manager.store.updates(2, 0)[0].timestamp == NOW
        assert 1 not in manager.store  # no truncation notice
        assert saved_file(tmp_path) == manager.context_history_json()
        assert block_text(result.truncated_history[2]["content"][0]) == stored(manager, 2)

    def test_over_the_limit_truncates_half(self, tmp_path: Path) -> None:
        """No duplicates: the notice goes on message 1 and the range keeps half."""
        history = conversation(21)
        manager = ContextManager()
        result = self.call(manager, history, 98_000, tmp_path)
        assert result.deleted_range == manager.get_next_truncation_range(history, None, "half")
        assert result.deleted_range == (2, 9)
        assert result.updated_deleted_range
        assert manager.store.message_indices() == [1]
        assert manager.store.edit_type(1) == EditType.UNDEFINED
        assert manager.store.updates(1, 0)[0].timestamp == NOW
        assert stored(manager, 1) == TRUNCATION_NOTICE
        assert 0 not in manager.store  # the task text is not replaced on this path
        assert saved_file(tmp_path) == manager.context_history_json()
        sent = result.truncated_history
        assert sent[0] is history[0]
        assert sent[1]["content"] == [T(TRUNCATION_NOTICE)]
        assert sent[2:] == history[10:]

    def test_small_savings_still_truncate(self, tmp_path: Path) -> None:
        """The worked example saves under 30%: duplicates are replaced and the range grows too."""
        history = [*b7_history(), U([T("next")])]
        manager = ContextManager()
        result = self.call(manager, history, 150_000, tmp_path)
        assert result.updated_deleted_range
        assert result.deleted_range == manager.get_next_truncation_range(history, None, "half")
        assert manager.store.message_indices() == [2, 1]
        assert saved_file(tmp_path) == manager.context_history_json()

    def test_the_range_grows_from_the_previous_one(self) -> None:
        """A second truncation extends the range it is given."""
        history = conversation(21)
        manager = ContextManager()
        first = self.call(manager, history, 98_000)
        second = self.call(manager, history, 98_000, deleted_range=first.deleted_range)
        assert second.deleted_range == (2, 13)
        assert manager.store.updates(1, 0)[0].timestamp == NOW  # the notice is set only once
        assert len(manager.store.updates(1, 0)) == 1

    @pytest.mark.parametrize(
        ("tokens", "keep"),
        [
            pytest.param(196_000, "half", id="half-at-exactly-twice"),
            pytest.param(196_001, "quarter", id="quarter-above-twice"),
            pytest.param(500_000, "quarter", id="quarter-far-above"),
        ],
    )
    def test_quarter_when_half_the_total_is_over(self, tokens: int, keep: str) -> None:
        """keep is a quarter when total / 2 is strictly over the limit."""
        history = conversation(21)
        manager = ContextManager()
        result = self.call(manager, history, tokens)
        assert result.deleted_range == manager.get_next_truncation_range(history, None, keep)

    def test_quarter_range(self) -> None:
        """The quarter range of 21 messages hides 14."""
        result = self.call(ContextManager(), conversation(21), 200_000)
        assert result.deleted_range == (2, 15)

    def test_auto_condense_skips_the_decision(self, tmp_path: Path) -> None:
        """With auto-condense the summary flow decides; this only builds what is sent."""
        history = with_big_duplicate(21)
        manager = ContextManager()
        result = self.call(manager, history, 500_000, tmp_path, (2, 3), use_auto_condense=True)
        assert result.deleted_range == (2, 3)
        assert not result.updated_deleted_range
        assert len(manager.store) == 0
        assert saved_file(tmp_path) is None
        assert result.truncated_history == [history[0], history[1], *history[4:]]

    def test_history_is_not_modified(self) -> None:
        """Nothing given is modified, whatever is decided."""
        history = with_big_duplicate(21)
        before = json.dumps(history)
        self.call(ContextManager(), history, 500_000)
        assert json.dumps(history) == before


class TestCompactConversationForContextWindow:
    """The sub-agent's in-memory compaction (reference 8.5)."""

    def test_one_user_message_compacts_nothing(self) -> None:
        """Cline's case 52: nothing to replace and the quarter range is empty, so nothing changes."""
        history = [U("Do the task")]
        result = compact_conversation_for_context_window(
            ContextManager(), history, None, timestamp=NOW
        )
        assert result.history == history
        assert result.deleted_range is None
        assert not result.did_compact

    def test_without_duplicates_a_quarter_is_kept(self) -> None:
        """Nothing to replace: the range grows by a quarter keep."""
        history = conversation(21)
        manager = ContextManager()
        result = compact_conversation_for_context_window(manager, history, None, timestamp=NOW)
        assert result.did_compact
        assert result.deleted_range == (2, 15)
        assert result.history == history
        assert len(manager.store) == 0  # no notice: the sub-agent path sets none

    def test_enough_savings_hide_nothing(self) -> None:
        """Duplicates saving 30% or more: the altered copy is kept, the range is unchanged."""
        history = with_big_duplicate()
        before = copy.deepcopy(history)
        result = compact_conversation_for_context_window(
            ContextManager(), history, None, timestamp=NOW
        )
        assert result.did_compact
        assert result.deleted_range is None
        assert (
            block_text(result.history[2]["content"][0])
            == f"[read_file for 'big.py'] Result:\n{NOTICE}"
        )
        assert history == before

    def test_small_savings_also_truncate(self) -> None:
        """Duplicates saving under 30%: the altered copy and a quarter range."""
        history = b7_history()
        result = compact_conversation_for_context_window(
            ContextManager(), history, None, timestamp=NOW
        )
        assert result.did_compact
        assert result.deleted_range == (2, 3)
        assert (
            block_text(result.history[2]["content"][0]) == f"[read_file for 'f'] Result:\n{NOTICE}"
        )

    def test_a_range_that_cannot_grow_is_kept(self) -> None:
        """When the quarter range equals the current one nothing is compacted."""
        history = conversation(6)
        result = compact_conversation_for_context_window(
            ContextManager(), history, (2, 3), timestamp=NOW
        )
        assert result.deleted_range == (2, 3)
        assert not result.did_compact
