"""windowkeeper's duplicate-read detector: every block, native tool calls, shorter notices only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import (
    ClineReadDetector,
    ContextManager,
    EditType,
    NativeReadDetector,
    OverwriteStore,
    validate_messages,
)
from windowkeeper.core._file_reads import savings_ratio
from windowkeeper.session._native_reads import normalize_path

from ..builders import tool_result, tool_use

BODY = "def main():\n    return 42\n" * 40


def native_conversation() -> list[dict[str, Any]]:
    """Claude Code style reads (Read with file_path), string and list results, parallel calls."""
    return [
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": [tool_use("t1", "Read", file_path="./src/app.py")]},
        {"role": "user", "content": [tool_result("t1", BODY)]},
        {
            "role": "assistant",
            "content": [
                tool_use("t2", "Read", file_path="src/util.py"),
                tool_use("t3", "Read", file_path="src/app.py"),
            ],
        },
        {
            "role": "user",
            "content": [
                tool_result("t2", [{"type": "text", "text": BODY}]),
                tool_result("t3", BODY + "#"),
            ],
        },
        {"role": "assistant", "content": [tool_use("t4", "Read", file_path="src/util.py")]},
        {"role": "user", "content": [tool_result("t4", BODY)]},
    ]


class TestNativeReads:
    def test_reads_are_keyed_by_normalized_path(self) -> None:
        """./src/app.py and src/app.py are one file."""
        scan = NativeReadDetector().scan(native_conversation(), 2, OverwriteStore())
        assert set(scan.reads) == {"src/app.py", "src/util.py"}
        assert [s.message_index for s in scan.reads["src/app.py"]] == [2, 4]
        assert [s.block_index for s in scan.reads["src/app.py"]] == [0, 1]

    def test_replacement_keeps_the_tool_result_and_names_the_file(self) -> None:
        """The older copy's tool_result stays, with its id; its content becomes a notice naming
        the file and no message index (an index the model cannot see once the middle is hidden)."""
        history = native_conversation()
        before = json.dumps(history)
        manager = ContextManager(detector=NativeReadDetector())
        changed, altered = manager.apply_context_optimizations(history, 2, 1_000)
        assert changed
        assert altered == {2, 4}
        sent = manager.get_truncated_messages(history, None)
        first = sent[2]["content"][0]
        assert first["tool_use_id"] == "t1"
        assert first["content"] == (
            "[windowkeeper: an older copy of 'src/app.py' was removed here to save context; a newer"
            " copy of the file appears further down in this conversation.]"
        )
        util = sent[4]["content"][0]
        assert util["tool_use_id"] == "t2"
        assert "older copy of 'src/util.py'" in util["content"][0]["text"]
        assert sent[4]["content"][1]["content"] == BODY + "#"  # the latest app.py copy stays
        assert validate_messages(sent) == []
        assert json.dumps(history) == before

    def test_only_copies_longer_than_the_notice_are_replaced(self) -> None:
        """A short read is cheaper than its notice and stays (the original replaces it anyway)."""
        history = [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": [tool_use("t1", "read_file", path="a.txt")]},
            {"role": "user", "content": [tool_result("t1", "tiny")]},
            {"role": "assistant", "content": [tool_use("t2", "read_file", path="a.txt")]},
            {"role": "user", "content": [tool_result("t2", "tiny")]},
        ]
        assert NativeReadDetector().scan(history, 2, OverwriteStore()).duplicates() == 0

    def test_editor_tools_count_only_when_viewing(self) -> None:
        """str_replace_editor is a read with command "view", not with "create"."""
        history = [
            {"role": "user", "content": "task"},
            {
                "role": "assistant",
                "content": [tool_use("t1", "str_replace_editor", command="create", path="/a.py")],
            },
            {"role": "user", "content": [tool_result("t1", BODY)]},
            {
                "role": "assistant",
                "content": [tool_use("t2", "str_replace_editor", command="view", path="/a.py")],
            },
            {"role": "user", "content": [tool_result("t2", BODY)]},
            {
                "role": "assistant",
                "content": [tool_use("t3", "str_replace_editor", command="view", path="/a.py")],
            },
            {"role": "user", "content": [tool_result("t3", BODY)]},
        ]
        scan = NativeReadDetector().scan(history, 2, OverwriteStore())
        assert [s.message_index for s in scan.reads["/a.py"]] == [4, 6]

    def test_cline_headers_in_later_blocks_are_found(self) -> None:
        """Parallel results in one message: the original sees block 0 only, this every block."""
        header = "[read_file for '{}'] Result:\n" + BODY
        history = [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "ok"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": header.format("a.py")},
                    {"type": "text", "text": header.format("b.py")},
                ],
            },
            {"role": "assistant", "content": "again"},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": header.format("b.py")},
                    {"type": "text", "text": header.format("a.py")},
                ],
            },
        ]
        original = ClineReadDetector().scan(history, 2, OverwriteStore())
        native = NativeReadDetector().scan(history, 2, OverwriteStore())
        assert original.duplicates() == 0  # block 0 holds a.py, then b.py
        assert native.duplicates() == 2

    def test_savings_count_replaced_string_results(self) -> None:
        """Replacing a string-content tool_result counts as saved characters."""
        history = native_conversation()
        manager = ContextManager(detector=NativeReadDetector())
        _, altered = manager.apply_context_optimizations(history, 2, 1_000)
        assert savings_ratio(history, manager.store, None, altered) > 0.3

    def test_a_second_round_does_not_replace_twice(self) -> None:
        """Blocks already replaced are not found again."""
        history = native_conversation()
        manager = ContextManager(detector=NativeReadDetector())
        manager.apply_context_optimizations(history, 2, 1_000)
        assert manager.apply_context_optimizations(history, 2, 2_000) == (False, set())

    @pytest.mark.parametrize(
        ("raw", "key"),
        [("./a/b.py", "a/b.py"), ("a\\b.py", "a/b.py"), ("a/./c/../b.py", "a/b.py"), ("/x", "/x")],
    )
    def test_normalize_path(self, raw: str, key: str) -> None:
        """Spellings of one path give one key."""
        assert normalize_path(raw) == key


# Measured with both detectors over each trace from message 2 on; see bench/compare_detectors.py.
CORPUS_DUPLICATES = {
    "cline-native-gcp-refactor-redacted": (22, 30),
    "cline-native-unity-task1": (0, 0),
    "cline-native-unity-task2": (0, 0),
}


@pytest.mark.parametrize("trace", sorted(CORPUS_DUPLICATES))
def test_finds_what_the_original_finds_and_more(corpus: Path, trace: str) -> None:
    """On the real traces, every copy the original finds is found here too, plus more."""
    history = json.loads((corpus / trace / "api_conversation_history.json").read_text("utf-8"))
    original = ClineReadDetector().scan(history, 2, OverwriteStore())
    detector = NativeReadDetector()
    native = detector.scan(history, 2, OverwriteStore())
    assert (original.duplicates(), native.duplicates()) == CORPUS_DUPLICATES[trace]
    found_here = detector.copies(history, 2, OverwriteStore())
    for path, sightings in original.reads.items():
        assert {(s.message_index, s.block_index) for s in sightings} <= set(
            found_here[normalize_path(path)]
        )


class TestShellReads:
    def test_a_file_read_through_the_shell_is_a_read(self) -> None:
        """``cat FILE`` via Bash and ``sed -n`` via Codex's shell count as reads of FILE."""
        body = "def f():\n    return 1\n" * 200

        def turn(tool_id: str, name: str, command: Any) -> list[dict[str, Any]]:
            return [
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tool_id,
                            "name": name,
                            "input": {"command": command},
                        }
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": body}],
                },
            ]

        history = [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "ok"},
            *turn("a", "Bash", "cat src/app.py"),
            *turn("b", "shell", ["bash", "-lc", "nl -ba ./src/app.py"]),
            *turn("c", "Bash", "cat src/app.py | grep f"),
            *turn("d", "Bash", "sed -n 1,400p src/app.py"),  # a part: listed with the file
        ]
        detector = NativeReadDetector()
        assert detector.copies(history, 2, OverwriteStore()) == {
            "src/app.py": [(3, 0), (5, 0), (9, 0)]
        }
        scan = detector.scan(history, 2, OverwriteStore())
        assert {path: len(seen) for path, seen in scan.reads.items()} == {
            "src/app.py": 2,  # the whole file twice: the older copy goes
            "src/app.py (sed -n 1,400p)": 1,  # a part, a copy of its own
        }


# -- the detector remembers the copies it found per message --------------------------------

_PATHS = ["src/app.py", "./src/app.py", "src/util.py"]


def _read_turn(call: str, path: int, listed: bool, tool: str) -> list[dict[str, Any]]:
    body: Any = [{"type": "text", "text": BODY}] if listed else BODY
    return [
        {"role": "assistant", "content": [tool_use(call, tool, file_path=_PATHS[path])]},
        {"role": "user", "content": [tool_result(call, body)]},
    ]


_TURN = st.tuples(st.integers(0, 2), st.booleans(), st.sampled_from(["Read", "Write"]))


def _summary(scan: Any) -> Any:
    return (
        {
            path: [(s.message_index, s.block_index, s.replacement) for s in sightings]
            for path, sightings in scan.reads.items()
        },
        scan.mention_paths,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_TURN, min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 11), _TURN), max_size=4),
    st.integers(0, 4),
)
def test_a_used_detector_scans_as_a_new_one(turns: list[Any], edits: list[Any], start: int) -> None:
    """Between scans, messages are replaced (a user message, or the call before a result), the
    scan starts elsewhere and the store replaces a block: the memo never answers for a message
    whose index, neighbour or value changed."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix it."}]
    for number, turn in enumerate(turns):
        history += _read_turn(f"t{number}", *turn)
    used = NativeReadDetector()
    store = OverwriteStore()
    used.scan(history, start, store)
    for number, (at, turn) in enumerate(edits):
        position = 1 + at % (len(history) - 1)
        history = list(history)
        pair = _read_turn(f"e{number}", *turn)
        history[position] = pair[0] if history[position]["role"] == "assistant" else pair[1]
        if number % 2:  # the store replaces a block: that copy is no longer found
            store.record(position, EditType.READ_FILE_TOOL, 0, [1_000 + number, "text", ["x"], []])
        assert _summary(used.scan(history, start, store)) == _summary(
            NativeReadDetector().scan(history, start, store)
        )
    shifted = [history[0], *history[3:]]  # the same messages at other indices
    assert _summary(used.scan(shifted, 0, store)) == _summary(
        NativeReadDetector().scan(shifted, 0, store)
    )
