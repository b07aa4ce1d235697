"""Roo Code Markdown task exports, read back into messages."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import TaskFolderError, validate_messages
from windowkeeper.transcripts.roo import looks_like_roo, parse_roo, read_roo

FIXTURE = Path(__file__).parent / "fixtures" / "roo_export.md"
CORPUS_EXPORT = "roo-markdown-export/roo_task_export_courseLLM.md"
BENCH_PARSER = Path(__file__).resolve().parents[2] / "bench" / "_roo.py"


def _bench_loader() -> Callable[[Path], list[dict[str, Any]]]:
    """bench/_roo.py's load_roo_export, imported from its file (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_roo", BENCH_PARSER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    loader: Callable[[Path], list[dict[str, Any]]] = module.load_roo_export
    return loader


def _text(text: str) -> dict[str, str]:
    return {"type": "text", "text": text}


class TestFixture:
    """The hand-written export in fixtures/roo_export.md."""

    def test_turns(self) -> None:
        """Five turns, first the user's, as Cline stores XML-tool conversations."""
        transcript = read_roo(FIXTURE)
        assert transcript.format == "roo"
        assert [m["role"] for m in transcript.messages] == ["user", "assistant"] * 2 + ["user"]
        assert validate_messages(list(transcript.messages)) == []

    def test_user_blocks(self) -> None:
        """A tool result turn is the call's tool_result (header and output), then the details."""
        transcript = read_roo(FIXTURE)
        task, result = transcript.messages[0]["content"], transcript.messages[2]["content"]
        assert task[0] == _text("<task>\nSummarise notes.md in one sentence.\n</task>")
        assert task[1]["text"].startswith("<environment_details>")
        assert result[0]["type"] == "tool_result"
        assert result[0]["tool_use_id"] == "roo-1"
        assert result[0]["content"].startswith("[read_file for 'notes.md'] Result:\n<files>")
        assert result[1]["text"].startswith("<environment_details>")
        assert transcript.messages[4]["content"] == [_text("Thanks, that is all.")]

    def test_xml_call_is_a_tool_use(self) -> None:
        """An answered XML call is a tool_use after the turn's text, its path an input."""
        content = read_roo(FIXTURE).messages[1]["content"]
        assert content == [
            _text("I'll read the file first."),
            {"type": "tool_use", "id": "roo-1", "name": "read_file", "input": {"path": "notes.md"}},
        ]

    def test_unanswered_call_stays_text(self) -> None:
        """attempt_completion answered by the user's words, not a result, is text."""
        content = read_roo(FIXTURE).messages[3]["content"]
        assert content[0]["text"].startswith("<attempt_completion>")
        assert len(content) == 1

    def test_text_mode_is_clines_shape(self) -> None:
        """tool_calls="text" keeps calls in the text, as Cline stores XML-tool conversations."""
        transcript = read_roo(FIXTURE, tool_calls="text")
        result = transcript.messages[2]["content"]
        assert result[0] == _text("[read_file for 'notes.md'] Result:")
        assert result[1]["text"].startswith("<files>")
        content = transcript.messages[1]["content"]
        assert content[0]["text"].startswith("I'll read the file first.\n\n<read_file>")

    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            (
                "<args>\n<file>\n<path>a.md</path>\n<line_range>1-50</line_range>\n</file>\n</args>",
                {"path": "a.md", "line_range": "1-50"},
            ),
            (
                "<args>\n<file>\n<path>a.md</path>\n</file>\n<file>\n<path>b.md</path>\n</file>\n</args>",
                {"paths": ["a.md", "b.md"]},
            ),
        ],
    )
    def test_read_file_inputs(self, body: str, expected: dict[str, Any]) -> None:
        """read_file's files become a path (and line range), or the list of paths."""
        text = (
            f"**User:**\n\ngo\n\n---\n\n**Assistant:**\n\n<read_file>\n{body}\n</read_file>"
            "\n\n---\n\n**User:**\n\n[read_file for 'a.md'. Reading multiple files at once is"
            " more efficient.] Result:\nA"
        )
        call = parse_roo(text).messages[1]["content"][0]
        assert {key: call["input"][key] for key in expected} == expected

    def test_model_and_nothing_invented(self) -> None:
        """The model is the last the environment details name; no usage, system or tools."""
        transcript = read_roo(FIXTURE)
        assert transcript.model == "claude-sonnet-4.5"
        assert transcript.requests == ()
        assert transcript.system is None
        assert transcript.tools is None
        assert transcript.unknown == ()

    def test_windows_line_endings(self) -> None:
        """CRLF exports read like LF ones."""
        text = FIXTURE.read_text(encoding="utf-8")
        assert parse_roo(text.replace("\n", "\r\n")).messages == parse_roo(text).messages


class TestBenchParser:
    """The package parser is bench/_roo.py's, promoted."""

    def test_same_messages_as_the_bench(self, corpus: Path) -> None:
        """On the real export of the corpus both give the same 79 messages."""
        load_roo_export = _bench_loader()
        path = corpus / CORPUS_EXPORT
        transcript = read_roo(path, tool_calls="text")
        assert list(transcript.messages) == load_roo_export(path)
        assert len(transcript.messages) == 79
        assert validate_messages(list(transcript.messages)) == []

    def test_same_messages_on_the_fixture(self) -> None:
        """The fixture reads the same through both."""
        assert list(read_roo(FIXTURE, tool_calls="text").messages) == _bench_loader()(FIXTURE)


class TestDetection:
    """looks_like_roo."""

    def test_exports(self) -> None:
        """A text that opens with a **User:** turn is an export."""
        assert looks_like_roo("**User:**\n\nHi")
        assert looks_like_roo("\ufeff\n**User:**\n\nHi")

    def test_other_texts(self) -> None:
        """Other Markdown is not."""
        assert not looks_like_roo("# Notes\n\n**User:**")
        assert not looks_like_roo("")


class TestErrors:
    """Bad input names the file and the line."""

    def test_text_without_a_first_turn(self) -> None:
        """A text that does not open with a turn header names the line it starts on."""
        with pytest.raises(TaskFolderError, match=r"export\.md:1: a turn does not start"):
            parse_roo("Hello\n\n**User:**\n\nHi", name="export.md")
        with pytest.raises(TaskFolderError, match=r"<string>:3: a turn does not start"):
            parse_roo("\n\n**Nobody:**\n\nHi")

    def test_separator_without_a_header_is_text(self) -> None:
        """A --- line not followed by a turn header stays in the turn it is in."""
        text = "**User:**\n\nHi\n\n---\n\nstill the user\n\n---\n\n**Assistant:**\nHello"
        messages = parse_roo(text).messages
        assert len(messages) == 2
        assert messages[0]["content"] == [_text("Hi\n\n---\n\nstill the user")]

    def test_missing_file(self, tmp_path: Path) -> None:
        """A missing export raises TaskFolderError naming it."""
        with pytest.raises(TaskFolderError, match=r"absent\.md"):
            read_roo(tmp_path / "absent.md")
