"""Tool pairing: the original's repair (made pure) and the provider-rule validator."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from windowkeeper import (
    ContextManager,
    Violation,
    ensure_tool_results_follow_tool_use,
    validate_messages,
)
from windowkeeper.core._notices import RESULT_MISSING
from windowkeeper.core._pairing import RepairMemo, results_follow_tool_use_keeping_text
from windowkeeper.rules import (
    EMPTY_CONTENT,
    FIRST_NOT_USER,
    MALFORMED,
    SAME_ROLE_TWICE,
    TOOL_RESULT_UNKNOWN,
    TOOL_USE_UNANSWERED,
)

from ..strategies import TR, TU, A, T, U

Message = dict[str, Any]


def _repair_after(calls: Message, following: Message) -> Message:
    """The repaired form of ``following`` when it answers ``calls``."""
    return ensure_tool_results_follow_tool_use([U("task"), calls, following])[2]


class TestEnsureToolResultsFollowToolUse:
    """The original's ensureToolResultsFollowToolUse, returning a repaired copy."""

    def test_results_are_reordered_before_other_blocks(self) -> None:
        """B3: text before the results and results out of order come back in tool_use order."""
        repaired = _repair_after(A([TU("a"), TU("b")]), U([T("x"), TR("b"), TR("a")]))
        assert repaired["content"] == [TR("a"), TR("b"), T("x")]

    def test_unknown_ids_are_dropped(self) -> None:
        """B3: a result for an id the assistant did not call is dropped."""
        repaired = _repair_after(A([TU("a")]), U([TR("a"), TR("zz")]))
        assert repaired["content"] == [TR("a")]

    def test_missing_results_get_placeholders(self) -> None:
        """B3: an unanswered call gets a "result missing" result at its place in the order."""
        repaired = _repair_after(A([TU("a"), TU("b")]), U([TR("a"), T("y")]))
        assert repaired["content"] == [TR("a"), TR("b", RESULT_MISSING), T("y")]

    def test_string_content_is_replaced_by_placeholders(self) -> None:
        """B3: a string answer becomes placeholders only, in a copy of the message."""
        following = U("plain")
        repaired = _repair_after(A([TU("a")]), following)
        assert repaired == U([TR("a", RESULT_MISSING)])
        assert following == U("plain")

    def test_complete_answers_are_returned_as_the_same_object(self) -> None:
        """B3: results in order followed by text need no repair; the message is not copied."""
        following = U([TR("a"), TR("b"), T("z")])
        assert _repair_after(A([TU("a"), TU("b")]), following) is following

    def test_trailing_tool_use_is_unchanged(self) -> None:
        """B3: a tool_use in the last message is not answered by anything."""
        messages = [U("task"), A("ok"), U("go"), A([TU("a")])]
        result = ensure_tool_results_follow_tool_use(messages)
        assert result == messages
        assert all(out is given for out, given in zip(result, messages, strict=True))

    def test_duplicate_results_in_order_are_left_alone(self) -> None:
        """Two results for the same id in first position trigger no repair, as in the original."""
        following = U([TR("a", "1"), TR("a", "2")])
        assert _repair_after(A([TU("a")]), following) is following

    def test_duplicate_results_collapse_to_the_last_when_repaired(self) -> None:
        """When a repair happens, a repeated id keeps only its last result."""
        repaired = _repair_after(
            A([TU("a"), TU("b")]), U([TR("a", "1"), T("x"), TR("a", "2"), TR("b")])
        )
        assert repaired["content"] == [TR("a", "2"), TR("b"), T("x")]

    def test_tool_use_without_id_is_ignored(self) -> None:
        """A tool_use with no id expects no result."""
        no_id = {"type": "tool_use", "name": "list_files", "input": {}}
        following = U([TR("b")])
        assert _repair_after(A([no_id, TU("b")]), following) is following
        plain = U("plain")
        assert _repair_after(A([no_id]), plain) is plain

    def test_tool_result_without_id_is_kept_with_the_other_blocks(self) -> None:
        """A tool_result without tool_use_id is carried after the ordered results."""
        anonymous = {"type": "tool_result", "content": "?"}
        repaired = _repair_after(A([TU("a")]), U([anonymous, TR("a")]))
        assert repaired["content"] == [TR("a"), anonymous]

    def test_tool_use_followed_by_an_assistant_is_unchanged(self) -> None:
        """A tool_use followed by another assistant message is not repaired (not handled)."""
        messages = [U("task"), A([TU("a")]), A("more"), U("go")]
        assert ensure_tool_results_follow_tool_use(messages) == messages

    def test_results_after_a_message_without_tool_use_are_kept(self) -> None:
        """Results after a message that called nothing are not touched (not handled)."""
        messages = [U("task"), A("ok"), U([TR("zz"), T("x")])]
        assert ensure_tool_results_follow_tool_use(messages) == messages

    def test_input_list_and_messages_are_not_modified(self) -> None:
        """The repair returns a new list and leaves every given message as it was."""
        messages = [U("task"), A([TU("a"), TU("b")]), U([T("x"), TR("b")]), A([TU("c")]), U("s")]
        before = copy.deepcopy(messages)
        result = ensure_tool_results_follow_tool_use(messages)
        assert messages == before
        assert result is not messages
        assert result[2] is not messages[2]
        assert result[4] == U([TR("c", RESULT_MISSING)])

    def test_empty_list(self) -> None:
        """Nothing in, nothing out."""
        assert ensure_tool_results_follow_tool_use([]) == []

    def test_non_dict_entries_are_passed_through(self) -> None:
        """Entries that are not messages are not repaired, and do not crash the repair."""
        junk: list[Any] = [None, "text", 5, A([TU("a")]), U("plain")]
        result = ensure_tool_results_follow_tool_use(junk)
        assert result[:4] == junk[:4]
        assert result[4] == U([TR("a", RESULT_MISSING)])


def _rules(messages: list[Any]) -> list[tuple[str, str]]:
    return [(violation.path, violation.rule) for violation in validate_messages(messages)]


class TestValidateMessages:
    """Every provider rule reported with its path."""

    def test_clean_conversation_has_no_violation(self) -> None:
        """A well-formed conversation with tool calls reports nothing."""
        messages = [
            U([T("task"), {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]),
            A([{"type": "thinking", "thinking": "hm", "signature": "c2ln"}, TU("a"), TU("b")]),
            U([TR("a"), TR("b", [T("x")]), T("more")]),
            A("done"),
            U("thanks"),
        ]
        assert validate_messages(messages) == []

    def test_empty_request(self) -> None:
        """A request with no message is reported at the list itself."""
        assert _rules([]) == [("messages", EMPTY_CONTENT)]

    def test_first_message_must_be_user(self) -> None:
        """An assistant message first is reported at messages[0]."""
        assert _rules([A("hi"), U("yo")]) == [("messages[0]", FIRST_NOT_USER)]

    def test_roles_must_alternate(self) -> None:
        """Two user messages in a row are reported at the second."""
        assert _rules([U("a"), U("b")]) == [("messages[1]", SAME_ROLE_TWICE)]

    def test_unanswered_tool_use(self) -> None:
        """A call without a result in the next message is reported at that message."""
        violations = validate_messages([U("t"), A([TU("a"), TU("b")]), U([TR("a"), T("x")])])
        assert [(v.path, v.rule) for v in violations] == [("messages[2]", TOOL_USE_UNANSWERED)]
        assert "b" in violations[0].detail

    def test_tool_use_answered_by_an_assistant(self) -> None:
        """A call followed by an assistant message is unanswered (and the roles repeat)."""
        assert _rules([U("t"), A([TU("a")]), A("x")]) == [
            ("messages[2]", SAME_ROLE_TWICE),
            ("messages[2]", TOOL_USE_UNANSWERED),
        ]

    def test_request_ending_with_a_tool_use(self) -> None:
        """A request whose last message calls a tool is reported at that message."""
        assert _rules([U("t"), A([TU("a")])]) == [("messages[1]", TOOL_USE_UNANSWERED)]

    def test_unknown_tool_result(self) -> None:
        """A result for an id the previous message did not call is reported at its block."""
        messages = [U("t"), A([TU("a")]), U([TR("a"), TR("zz")]), A("ok"), U([T("x"), TR("a")])]
        assert _rules(messages) == [
            ("messages[2].content[1]", TOOL_RESULT_UNKNOWN),
            ("messages[4].content[1]", TOOL_RESULT_UNKNOWN),
        ]

    @pytest.mark.parametrize(
        ("message", "path"),
        [
            (U(""), "messages[2].content"),
            (U([]), "messages[2].content"),
            (U([T("ok"), T("")]), "messages[2].content[1]"),
        ],
    )
    def test_empty_content(self, message: Message, path: str) -> None:
        """Empty string content, an empty block list and an empty text block are reported."""
        assert _rules([U("t"), A("a"), message]) == [(path, EMPTY_CONTENT)]

    @pytest.mark.parametrize(
        ("message", "path"),
        [
            (None, "messages[2]"),
            ({"role": "system", "content": "x"}, "messages[2]"),
            ({"role": "user", "content": 5}, "messages[2].content"),
            (U([T("ok"), {"text": "no type"}]), "messages[2].content[1]"),
            (U([T("ok"), "bare string"]), "messages[2].content[1]"),
        ],
    )
    def test_malformed_shapes_are_reported_not_raised(self, message: Any, path: str) -> None:
        """Shapes no provider accepts are reported with their path instead of raising."""
        assert (path, MALFORMED) in _rules([U("t"), A("a"), message])

    def test_list_name_is_used_in_paths(self) -> None:
        """The name given for the list prefixes every path."""
        violations = validate_messages([A("x")], "request")
        assert [violation.path for violation in violations] == ["request[0]"]

    def test_violation_reads_as_path_rule_detail(self) -> None:
        """A violation's text is "path: rule: detail"."""
        violation = Violation("messages[3].content[1]", TOOL_RESULT_UNKNOWN, "why")
        assert str(violation) == "messages[3].content[1]: tool-result-unknown: why"

    def test_repair_output_validates(self) -> None:
        """What the repair returns for a broken pairing no longer breaks the pairing rules."""
        messages = [U("t"), A([TU("a"), TU("b")]), U([T("x"), TR("b"), TR("zz")])]
        assert {rule for _, rule in _rules(messages)} == {TOOL_USE_UNANSWERED, TOOL_RESULT_UNKNOWN}
        assert validate_messages(ensure_tool_results_follow_tool_use(messages)) == []


class TestThinkingRules:
    def _rules(self, content: list[dict[str, Any]], role: str = "assistant") -> list[str]:
        messages: list[dict[str, Any]] = [{"role": "user", "content": "task"}]
        if role == "user":
            messages = [{"role": "user", "content": content}]
        else:
            messages.append({"role": "assistant", "content": content})
        return [v.rule for v in validate_messages(messages)]

    def test_signed_thinking_first_is_clean(self) -> None:
        """Thinking, then text: what the API expects."""
        blocks = [
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
            {"type": "redacted_thinking", "data": "abc"},
            {"type": "text", "text": "answer"},
        ]
        assert self._rules(blocks) == []

    def test_thinking_after_text(self) -> None:
        """A thinking block after a text block is reported."""
        blocks = [
            {"type": "text", "text": "answer"},
            {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        ]
        assert self._rules(blocks) == ["thinking-not-first"]

    def test_unsigned_thinking(self) -> None:
        """Thinking without its signature (or redacted thinking without data) is reported."""
        blocks = [{"type": "thinking", "thinking": "hmm"}, {"type": "redacted_thinking"}]
        assert self._rules(blocks) == ["thinking-unsigned", "thinking-unsigned"]

    def test_thinking_in_a_user_message(self) -> None:
        """Only assistant messages carry thinking."""
        blocks = [{"type": "thinking", "thinking": "hmm", "signature": "s"}]
        assert self._rules(blocks, role="user") == ["thinking-in-user"]


WORDS = "Switch the database to PostgreSQL 14."


class TestKeepingText:
    """The session's repair: a string-content user message keeps its words after the results."""

    def test_the_original_drops_the_words(self) -> None:
        """The faithful repair replaces a string content by the placeholders (as recorded)."""
        repaired = _repair_after(A([TU("a")]), U(WORDS))
        assert repaired["content"] == [TR("a", RESULT_MISSING)]

    @pytest.mark.parametrize(
        ("following", "expected"),
        [
            (U(WORDS), [TR("a", RESULT_MISSING), T(WORDS)]),
            (U(""), [TR("a", RESULT_MISSING)]),
            (U([T(WORDS)]), [TR("a", RESULT_MISSING), T(WORDS)]),
            (U([TR("a")]), None),  # already answered: left as it is
        ],
    )
    def test_keeping_text(self, following: Message, expected: list[Any] | None) -> None:
        """Placeholders first, then the user's text; a well-answered message is unchanged."""
        history = [U("task"), A([TU("a")]), following]
        before = copy.deepcopy(history)
        repaired = results_follow_tool_use_keeping_text(history)
        assert history == before
        if expected is None:
            assert repaired[2] is following
        else:
            assert repaired[2]["content"] == expected

    def test_the_memo_agrees(self) -> None:
        """RepairMemo(keep_text=True) gives what the function gives, and reuses its copies."""
        history = [U("task"), A([TU("a")]), U(WORDS), A("ok")]
        memo = RepairMemo(keep_text=True)
        first = memo.repair(history)
        assert first == results_follow_tool_use_keeping_text(history)
        assert memo.repair([*history, U("more")])[2] is first[2]
        assert RepairMemo().repair(history) == ensure_tool_results_follow_tool_use(history)

    def test_the_manager_keeps_the_words_after_the_cut(self) -> None:
        """With keep_user_text, the first message after the hidden range keeps its words and
        the request is valid; the default manager stays faithful."""
        history = [
            U("Build the service."),
            A([TU("a1", "bash", command="ls")]),
            U([TR("a1", "x")]),
            A("Step 1 is done."),
            U(WORDS),
            A([TU("a2", "bash", command="ls")]),
            U([TR("a2", "y")]),
        ]
        kept = ContextManager(keep_user_text=True).get_truncated_messages(history, (2, 3))
        assert kept[2]["content"] == [TR("a1", RESULT_MISSING), T(WORDS)]
        assert validate_messages(kept) == []
        faithful = ContextManager().get_truncated_messages(history, (2, 3))
        assert faithful[2]["content"] == [TR("a1", RESULT_MISSING)]
