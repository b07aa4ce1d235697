"""Messages and blocks: shape checks with paths, UTF-16 lengths, block text getters and setters."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from windowkeeper import ContextManager, MalformedMessageError, WindowkeeperError
from windowkeeper.core._messages import (
    block_text,
    check_history,
    check_message,
    utf16_len,
    with_block_text,
)

from ..strategies import TR, TU, A, T, U, create_messages

IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}


def _history_with(message: Any) -> list[Any]:
    """Seven fine messages, then ``message`` at index 7."""
    return [*create_messages(7), message]


class TestCheckHistory:
    """Malformed input is rejected with the path of the offending value."""

    @pytest.mark.parametrize(
        ("message", "path"),
        [
            (None, "history[7]"),
            ("just text", "history[7]"),
            ({"role": "system", "content": "x"}, "history[7].role"),
            ({"content": "x"}, "history[7].role"),
            ({"role": "user", "content": 5}, "history[7].content"),
            ({"role": "user"}, "history[7].content"),
            ({"role": "user", "content": [T("a"), T("b"), "bare"]}, "history[7].content[2]"),
            ({"role": "user", "content": [T("a"), T("b"), {"text": "x"}]}, "history[7].content[2]"),
            ({"role": "user", "content": [T("a"), T("b"), {"type": 3}]}, "history[7].content[2]"),
        ],
        ids=[
            "none",
            "string",
            "unknown-role",
            "no-role",
            "int-content",
            "no-content",
            "bare-block",
            "block-without-type",
            "non-string-type",
        ],
    )
    def test_error_names_the_path(self, message: Any, path: str) -> None:
        """The error's path points at the bad value and its text starts with that path."""
        with pytest.raises(MalformedMessageError) as raised:
            check_history(_history_with(message))
        assert raised.value.path == path
        assert str(raised.value).startswith(f"{path}: ")
        assert raised.value.problem

    @pytest.mark.parametrize("history", [None, "text", b"bytes", {"role": "user"}, 5])
    def test_history_must_be_a_list(self, history: Any) -> None:
        """Something that is not a list of messages is rejected at the list's name."""
        with pytest.raises(MalformedMessageError) as raised:
            check_history(history)
        assert raised.value.path == "history"

    def test_name_prefixes_the_path(self) -> None:
        """The list's name given by the caller starts the path."""
        with pytest.raises(MalformedMessageError, match=r"^conversation\[1\]\.role: "):
            check_history([U("t"), {"role": "bot", "content": ""}], "conversation")

    def test_check_message_uses_the_given_path(self) -> None:
        """A single message is checked under the path it is given."""
        with pytest.raises(MalformedMessageError) as raised:
            check_message(U([T("a"), 7]), "messages[3]")
        assert raised.value.path == "messages[3].content[1]"

    def test_error_is_a_value_error_and_ours(self) -> None:
        """MalformedMessageError can be caught as ValueError or as WindowkeeperError."""
        with pytest.raises(ValueError, match=r"history\[0\]"):
            check_history([None])
        assert issubclass(MalformedMessageError, WindowkeeperError)

    def test_manager_checks_what_it_is_given(self) -> None:
        """A public call on a malformed history raises with the path before doing anything."""
        history = _history_with({"role": "user", "content": [T("a"), T("b"), {"text": "x"}]})
        with pytest.raises(MalformedMessageError, match=r"history\[7\]\.content\[2\]"):
            ContextManager().get_truncated_messages(history, None)

    @pytest.mark.parametrize(
        "history",
        [
            [U("a"), U("b"), A("c"), A("d")],
            [A("assistant first"), U("then user")],
            [U(""), A([])],
            [U("t"), A([{"type": "tool_use", "name": "x", "input": {}}])],
            [U([{"type": "mystery", "payload": [1, 2]}]), A("x")],
            [{"role": "user", "content": "t", "ts": 1, "id": "m0", "modelInfo": {}}],
            [],
        ],
        ids=[
            "repeated-roles",
            "assistant-first",
            "empty-content",
            "tool-use-without-id",
            "unknown-block-type",
            "extra-keys",
            "empty-history",
        ],
    )
    def test_odd_but_accepted_inputs_do_not_raise(self, history: list[Any]) -> None:
        """Inputs the original accepts pass the check and a public call."""
        check_history(history)
        ContextManager().get_truncated_messages(history, None)


class TestUtf16Len:
    """Lengths as JavaScript's String.length counts them."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("", 0),
            ("abc", 3),
            ("é", 1),
            ("日本語", 3),
            ("🙂", 2),
            ("a🚀b", 4),
            ("👩\u200d💻", 5),
        ],
    )
    def test_astral_characters_count_two(self, text: str, expected: int) -> None:
        """Characters outside the Basic Multilingual Plane count two units, others one."""
        assert utf16_len(text) == expected


class TestBlockText:
    """The editable text of a block."""

    @pytest.mark.parametrize(
        ("block", "expected"),
        [
            (T("hello"), "hello"),
            (TR("x", [T("inner"), IMAGE]), "inner"),
            ({"type": "text", "text": "", "extra": 1}, None),
            ({"type": "text"}, None),
            ({"type": "text", "text": 5}, None),
            (TR("x", "string content"), None),
            (TR("x", [IMAGE, T("after")]), None),
            (TR("x", []), None),
            (TR("x", [T("")]), None),
            (IMAGE, None),
            (TU("x"), None),
            ({"type": "thinking", "thinking": "hm", "signature": "c2ln"}, None),
            ("not a block", None),
        ],
        ids=[
            "text",
            "tool-result-list",
            "empty-text",
            "no-text",
            "non-string-text",
            "tool-result-string",
            "tool-result-image-first",
            "tool-result-empty",
            "tool-result-empty-text",
            "image",
            "tool-use",
            "thinking",
            "non-dict",
        ],
    )
    def test_block_text(self, block: Any, expected: str | None) -> None:
        """Only text blocks and list tool_results starting with text have editable text."""
        assert block_text(block) == expected


class TestWithBlockText:
    """Setting a block's editable text, copy-on-write."""

    def test_text_block_is_copied_with_the_new_text(self) -> None:
        """A text block comes back as a copy with the new text and its other keys."""
        block = {"type": "text", "text": "old", "signature": "s"}
        result = with_block_text(block, "new")
        assert result == {"type": "text", "text": "new", "signature": "s"}
        assert block == {"type": "text", "text": "old", "signature": "s"}

    def test_tool_result_inner_text_is_replaced(self) -> None:
        """A list tool_result gets its first inner text replaced; later blocks are shared."""
        block = TR("x", [T("old"), IMAGE])
        before = copy.deepcopy(block)
        result = with_block_text(block, "new")
        assert result == TR("x", [T("new"), IMAGE])
        assert result["content"][1] is block["content"][1]
        assert block == before

    @pytest.mark.parametrize(
        "block",
        [TR("x", "string"), TR("x", [IMAGE]), IMAGE, TU("x"), "not a block"],
        ids=["tool-result-string", "tool-result-image", "image", "tool-use", "non-dict"],
    )
    def test_blocks_without_editable_text_come_back_unchanged(self, block: Any) -> None:
        """A block with nothing to edit is returned itself, not a copy."""
        assert with_block_text(block, "new") is block

    def test_empty_text_block_is_still_editable(self) -> None:
        """A text block with empty text is set even though its getter reports no text."""
        assert with_block_text(T(""), "new") == T("new")
