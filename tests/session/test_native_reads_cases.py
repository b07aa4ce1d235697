"""NativeReadDetector, case by case: which copy is the latest, which older ones are replaced and
with what, where a copy is found, and a used detector after its messages changed."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import EditType, NativeReadDetector, OverwriteStore

from ..builders import TR, TU, A, T, U

BODY = "x" * 400
HEADER = "[read_file for 'a.py'] Result:"


def notice(path: str) -> str:
    return (
        f"[windowkeeper: an older copy of '{path}' was removed here to save context; a newer"
        " copy of the file appears further down in this conversation.]"
    )


def found(history: list[dict[str, Any]], start: int = 2) -> dict[str, list[Any]]:
    """Per path: (message, block, update kind, replacement) of each copy a fresh detector finds."""
    return sightings(NativeReadDetector(), history, start)


def sightings(
    detector: NativeReadDetector, history: list[dict[str, Any]], start: int = 2
) -> dict[str, list[Any]]:
    scan = detector.scan(history, start, OverwriteStore())
    return {
        path: [(s.message_index, s.block_index, s.kind, s.replacement) for s in seen]
        for path, seen in scan.reads.items()
    }


def reads(*calls: tuple[str, str, str]) -> dict[str, Any]:
    """An assistant message of Read calls: (id, tool, path)."""
    return A([TU(call, tool, file_path=path) for call, tool, path in calls])


class TestWhichCopies:
    def test_the_latest_is_by_message_then_block(self) -> None:
        """An older copy in a later block of an earlier message is still the older one."""
        history = [
            U("t"),
            reads(("o", "Read", "o.py"), ("a", "Read", "a.py")),
            U([TR("o", BODY), TR("a", BODY)]),
            reads(("b", "Read", "a.py")),
            U([TR("b", BODY)]),
        ]
        assert found(history) == {
            "o.py": [(2, 0, "content", "")],
            "a.py": [(2, 1, "content", notice("a.py")), (4, 0, "content", "")],
        }

    def test_every_older_copy_is_replaced(self) -> None:
        """Two copies in one message and a third later: both older ones get the notice."""
        history = [
            U("t"),
            reads(("a", "Read", "a.py"), ("b", "Read", "a.py")),
            U([TR("a", BODY), TR("b", BODY)]),
            reads(("c", "Read", "a.py")),
            U([TR("c", BODY)]),
        ]
        assert found(history)["a.py"] == [
            (2, 0, "content", notice("a.py")),
            (2, 1, "content", notice("a.py")),
            (4, 0, "content", ""),
        ]

    @pytest.mark.parametrize(("size", "replaced"), [(142, False), (143, True)])
    def test_a_copy_as_long_as_its_notice_stays(self, size: int, replaced: bool) -> None:
        """The notice for a.txt is 142 characters: a copy of that length stays, one longer goes."""
        assert len(notice("a.txt")) == 142
        history = [
            U("t"),
            A([TU("a", "read_file", path="a.txt")]),
            U([TR("a", "y" * size)]),
            A([TU("b", "read_file", path="a.txt")]),
            U([TR("b", "y" * size)]),
        ]
        older = [(2, 0, "content", notice("a.txt"))] if replaced else []
        assert found(history) == {"a.txt": [*older, (4, 0, "content", "")]}

    def test_the_first_string_path_of_the_keys(self) -> None:
        """A key whose value is not a string is passed over for the next one."""
        history = [U("t"), A([TU("a", "read_file", path=5, file_path="a.py")]), U([TR("a", BODY)])]
        assert found(history) == {"a.py": [(2, 0, "content", "")]}


class TestWhereCopiesAre:
    def test_message_zero_is_scanned_from_zero(self) -> None:
        """A scan from message 0 finds a Cline read in message 0 (text blocks: "text" updates)."""
        history = [U([T(f"{HEADER}\n{BODY}")]), A("ok"), U([T(f"{HEADER}\n{BODY}")])]
        assert found(history, start=0) == {
            "a.py": [(0, 0, "text", f"{HEADER}\n{notice('a.py')}"), (2, 0, "text", "")]
        }

    def test_an_assistant_quoting_a_header_holds_no_copy(self) -> None:
        """Only user messages carry results: a header in the assistant's text is no read."""
        history = [U("t"), A([T(f"{HEADER}\n{BODY}")]), U([T(f"{HEADER}\n{BODY}")])]
        assert found(history, start=0) == {"a.py": [(2, 0, "text", "")]}

    def test_clines_older_layout(self) -> None:
        """A header alone has the contents in the next block, which is the copy; a header alone
        in the last block has none."""
        history = [
            U("t"),
            A("a"),
            U([T("intro"), T(HEADER), T(BODY), T("extra")]),
            A("b"),
            U([T(HEADER), T(BODY)]),
            A("c"),
            U([T(HEADER)]),
        ]
        assert found(history) == {"a.py": [(2, 2, "text", notice("a.py")), (4, 1, "text", "")]}

    def test_an_edit_result_keeps_its_tags(self) -> None:
        """An older saved file of an edit result: the text around the element stays, the
        contents become the notice; a string tool_result's update is of its "content"."""
        result = (
            "[write_to_file for 'w.py'] Result:\nSaved.\n"
            f'<final_file_content path="w.py">\n{BODY}\n</final_file_content>\nDone.'
        )
        history = [U("t"), A("a"), U([T(result)]), A([TU("z", "x")]), U([TR("z", result)])]
        scan = NativeReadDetector().scan(history, 2, OverwriteStore())
        older, latest = scan.reads["w.py"]
        assert (older.edit_type, older.block_index, older.kind) == (
            EditType.ALTER_FILE_TOOL,
            0,
            "text",
        )
        assert older.replacement == (
            "[write_to_file for 'w.py'] Result:\nSaved.\n"
            f'<final_file_content path="w.py"> {notice("w.py")} </final_file_content>\nDone.'
        )
        assert (latest.message_index, latest.kind, latest.replacement) == (4, "content", "")

    def test_a_header_in_a_result_list_is_a_text_update(self) -> None:
        """A Cline header as the first text of a tool_result's list: its update is of the text."""
        history = [
            U("t"),
            A([TU("z", "x")]),
            U([TR("z", [T(f"{HEADER}\n{BODY}")])]),
            A([TU("y", "x")]),
            U([TR("y", [T(f"{HEADER}\n{BODY}")])]),
        ]
        assert found(history) == {
            "a.py": [(2, 0, "text", f"{HEADER}\n{notice('a.py')}"), (4, 0, "text", "")]
        }

    def test_mentions_in_a_message_the_store_changed(self) -> None:
        """File mentions of a message whose mentions were partly replaced: the paths already
        replaced are not found again, the others are; a message changed another way is skipped."""
        mention = (
            f'<file_content path="a.py">{BODY}</file_content> and '
            f'<file_content path="b.py">{BODY}</file_content>'
        )
        history = [U("t"), A("a"), U([T(mention)]), A("b"), U([T(mention)])]
        store = OverwriteStore()
        store.record(
            2, EditType.FILE_MENTION, 0, [1_000, "text", ["x"], [["a.py"], ["a.py", "b.py"]]]
        )
        scan = NativeReadDetector().scan(history, 2, store)
        assert scan.mention_paths == {2: ["a.py", "b.py"], 4: ["a.py", "b.py"]}
        assert {path: [s.message_index for s in seen] for path, seen in scan.reads.items()} == {
            "a.py": [4],
            "b.py": [2, 4],
        }
        other = OverwriteStore()
        other.record(2, EditType.READ_FILE_TOOL, 0, [1_000, "text", ["x"], []])
        assert NativeReadDetector().scan(history, 2, other).mention_paths == {4: ["a.py", "b.py"]}


class TestAUsedDetector:
    """The detector remembers the copies of each message; a change of the call before a result,
    or of where the message stands, is seen."""

    @pytest.mark.parametrize("before", [0, 1])
    def test_a_changed_call_before_the_result(self, before: int) -> None:
        """The call a result answers is replaced (at index 0 or further on): the path is new."""
        history: list[dict[str, Any]] = [U("t")][:before]
        history += [A([TU("a", "Read", file_path="a.py")]), U([TR("a", BODY)])]
        detector = NativeReadDetector()
        assert sightings(detector, history, 0) == {"a.py": [(before + 1, 0, "content", "")]}
        history[before] = A([TU("a", "Read", file_path="b.py")])
        assert sightings(detector, history, 0) == {"b.py": [(before + 1, 0, "content", "")]}

    def test_a_message_at_another_index(self) -> None:
        """The same messages two places earlier are found at their new indices."""
        history = [
            U("t"),
            A("a"),
            U("b"),
            reads(("a", "Read", "a.py")),
            U([TR("a", BODY)]),
            reads(("b", "Read", "a.py")),
            U([TR("b", BODY)]),
        ]
        detector = NativeReadDetector()
        sightings(detector, history)
        shifted = [history[0], *history[3:]]
        assert sightings(detector, shifted, 0) == found(shifted, 0)
        assert [entry[0] for entry in found(shifted, 0)["a.py"]] == [2, 4]


class TestRooCodeReads:
    """Roo Code and Kilo Code read through ``read_file`` with a ``files`` list (native calls) or
    announce a read of one file by a header of their own (XML tools)."""

    ENV = "<environment_details>\nnow\n</environment_details>"

    def test_a_files_list_of_one_file_is_a_read_of_it(self) -> None:
        """The older result's first text (the file) becomes the notice; its other text (the
        environment details Roo appends) is a block of its own and is not part of the copy."""
        history = [
            U("t"),
            A([TU("a", "read_file", files=[{"path": "src/x.ts"}])]),
            U([TR("a", [T(f"File: src/x.ts\n{BODY}"), T(self.ENV)])]),
            A([TU("b", "read_file", files=[{"path": "./src/x.ts"}])]),
            U([TR("b", [T(f"File: src/x.ts\n{BODY}"), T(self.ENV)])]),
        ]
        assert found(history) == {
            "src/x.ts": [(2, 0, "text", notice("src/x.ts")), (4, 0, "text", "")]
        }

    @pytest.mark.parametrize(
        "files",
        [
            [{"path": "a.ts"}, {"path": "b.ts"}],  # one text holds both: no single path names it
            [{"line_ranges": ["1-9"]}],
            [],
            "a.ts",
        ],
    )
    def test_other_files_lists_are_no_read(self, files: Any) -> None:
        history = [
            U("t"),
            A([TU("a", "read_file", files=files)]),
            U([TR("a", [T(f"File: a.ts\n{BODY}")])]),
            A([TU("b", "read_file", files=files)]),
            U([TR("b", [T(f"File: a.ts\n{BODY}")])]),
        ]
        assert found(history) == {}

    def test_the_xml_header_of_one_file(self) -> None:
        """The header is a block alone and the contents are the next block (``<files>``): that
        block is the copy, as in Cline's older layout. A header of several files is no read."""
        header = "[read_file for 'plans/p.md'. Reading multiple files at once saves turns.] Result:"
        contents = f"<files>\n<file><path>plans/p.md</path>\n<content>{BODY}</content>\n</file>"
        several = f"<files>\n<file><path>a.ts</path>\n<content>{BODY}</content>\n</file>"
        history = [
            U("t"),
            A("a"),
            U([T(header), T(contents + "\n</files>"), T(self.ENV)]),
            A("b"),
            U([T("[read_file for 2 files] Result:"), T(several), T(self.ENV)]),
            A("c"),
            U([T(header), T(contents + "\n</files>"), T(self.ENV)]),
        ]
        assert found(history) == {
            "plans/p.md": [(2, 1, "text", notice("plans/p.md")), (6, 1, "text", "")]
        }


class TestPartsOfAFile:
    """A read of part of a file (an offset, a line range, ``sed -n A,Bp``) is a copy only of that
    part: a later read of another part, or of the whole file, says nothing of the lines it
    lacks, so it replaces nothing; the same part read again does, and its notice names it."""

    def test_the_same_part_again_is_a_copy_other_parts_are_not(self) -> None:
        history = [
            U("t"),
            A([TU("a", "Read", file_path="a.py", offset=1, limit=80)]),
            U([TR("a", BODY)]),
            A([TU("b", "Read", file_path="a.py", offset=81, limit=80)]),
            U([TR("b", BODY)]),
            A([TU("c", "Read", file_path="a.py")]),
            U([TR("c", BODY)]),
            A([TU("d", "Read", file_path="a.py", limit=80, offset=1)]),
            U([TR("d", BODY)]),
        ]
        part = (
            "[windowkeeper: an older copy of 'a.py' (limit=80, offset=1) was removed here to save"
            " context; a newer copy of that same part appears further down in this conversation.]"
        )
        assert found(history) == {
            "a.py (limit=80, offset=1)": [(2, 0, "content", part), (8, 0, "content", "")],
            "a.py (limit=80, offset=81)": [(4, 0, "content", "")],
            "a.py": [(6, 0, "content", "")],
        }

    def test_a_whole_file_read_is_not_replaced_by_a_part(self) -> None:
        history = [
            U("t"),
            A([TU("a", "str_replace_editor", command="view", path="/r/a.py")]),
            U([TR("a", BODY)]),
            A([TU("b", "str_replace_editor", command="view", path="/r/a.py", view_range=[1, 9])]),
            U([TR("b", BODY)]),
        ]
        assert found(history) == {
            "/r/a.py": [(2, 0, "content", "")],
            "/r/a.py (view_range=[1,9])": [(4, 0, "content", "")],
        }

    def test_inputs_that_do_not_change_what_is_read(self) -> None:
        """Cline's ``task_progress`` checklist and OpenHands' ``security_risk`` ride along with a
        read; they differ from call to call and the copies are still the same text."""
        history = [
            U("t"),
            A([TU("a", "read_file", path="a.py", task_progress="- [ ] one")]),
            U([TR("a", BODY)]),
            A([TU("b", "read_file", path="a.py", task_progress="- [x] one", security_risk="LOW")]),
            U([TR("b", BODY)]),
        ]
        assert found(history) == {
            "a.py": [(2, 0, "content", notice("a.py")), (4, 0, "content", "")]
        }

    @pytest.mark.parametrize(
        ("older", "newer", "replaced"),
        [
            ("sed -n 1,80p a.py", "sed -n 81,160p a.py", False),
            ("sed -n 1,80p a.py", "sed -n '1,80p' ./a.py", True),
            ("head -n 50 a.py", "cat a.py", False),
            ("cat a.py", "nl -ba a.py", True),
        ],
    )
    def test_through_the_shell(self, older: str, newer: str, replaced: bool) -> None:
        history = [
            U("t"),
            A([TU("a", "Bash", command=older)]),
            U([TR("a", BODY)]),
            A([TU("b", "Bash", command=newer)]),
            U([TR("b", BODY)]),
        ]
        replacements = [s[3] for seen in found(history).values() for s in seen]
        assert sorted(bool(r) for r in replacements) == (
            [False, True] if replaced else [False, False]
        )


def test_roo_xml_reads_of_other_lines_are_other_parts() -> None:
    """Roo Code names the lines a read shows (``<content lines="1-50">``): a read of lines
    51-100 replaces no copy of lines 1-50; the same lines shown again are a copy of them."""
    header = "[read_file for 'p.md'. Reading multiple files at once saves turns.] Result:"

    def shown(lines: str) -> str:
        return f'<files>\n<file><path>p.md</path>\n<content lines="{lines}">{BODY}</content>\n</file>\n</files>'

    history = [
        U("t"),
        A("a"),
        U([T(header), T(shown("1-50"))]),
        A("b"),
        U([T(header), T(shown("51-100"))]),
        A("c"),
        U([T(header), T(shown("1-50"))]),
    ]
    part = (
        "[windowkeeper: an older copy of 'p.md' (lines=1-50) was removed here to save context;"
        " a newer copy of that same part appears further down in this conversation.]"
    )
    assert found(history) == {
        "p.md (lines=1-50)": [(2, 1, "text", part), (6, 1, "text", "")],
        "p.md (lines=51-100)": [(4, 1, "text", "")],
    }
