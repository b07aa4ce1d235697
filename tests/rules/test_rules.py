"""The provider rules one by one, and the validators as the composition of their rules."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from windowkeeper import validate_messages
from windowkeeper.formats.openai import validate_openai
from windowkeeper.formats.responses import validate_responses
from windowkeeper.rules import Violation, _anthropic, _openai, _responses
from windowkeeper.rules._rule import Found

from ..formats.responses_strategies import broken_responses_inputs, responses_inputs
from ..formats.strategies import broken_openai_conversations, openai_conversations
from ..strategies import TR, TU, A, T, U, conversations

Message = dict[str, Any]

SIGNED = {"type": "thinking", "thinking": "hm", "signature": "sig"}
UNSIGNED = {"type": "thinking", "thinking": "hm"}


def run_alone(rule: Any, walk: Any) -> list[Found]:
    """What ``rule`` finds on its own: its check at each item of ``walk``, then its finish."""
    found = [entry for item in walk for entry in rule.check(item)]
    return found + list(rule.finish(walk.end()))


def composed(rules: tuple[Any, ...], walk_of: Any, items: Any) -> list[Violation]:
    """Every rule run alone, concatenated in rule order and sorted as the rules module says."""
    found = [entry for rule in rules for entry in run_alone(rule, walk_of(items))]
    found.sort(key=lambda entry: entry[:3])  # stable: equal keys keep the rule order
    return [entry[3] for entry in found]


# -- Anthropic -------------------------------------------------------------------------------

ANTHROPIC_CASES: dict[str, tuple[list[Any], list[Message]]] = {
    "Malformed": ([U("task"), "not a message"], [U("task")]),
    "FirstNotUser": ([A("hello")], [U("hello")]),
    "SameRoleTwice": ([U("one"), U("two")], [U("one"), A("two")]),
    "EmptyContent": ([U("")], [U("task")]),
    "DuplicateToolUseId": (
        [U("task"), A([TU("t1"), TU("t1")]), U([TR("t1")])],
        [U("task"), A([TU("t1"), TU("t2")]), U([TR("t1"), TR("t2")])],
    ),
    "ToolUseIdRefused": (
        [U("task"), A([TU("call.1")]), U([TR("call.1")])],
        [U("task"), A([TU("call_1-a")]), U([TR("call_1-a")])],
    ),
    "ToolUseInUser": ([U([T("task"), TU("t1")])], [U("task"), A([TU("t1")]), U([TR("t1")])]),
    "ToolUseUnanswered": (
        [U("task"), A([TU("t1")]), U("go on")],
        [U("task"), A([TU("t1")]), U([TR("t1")])],
    ),
    "ThinkingInUser": ([U([SIGNED, T("task")])], [U("task"), A([SIGNED, T("answer")])]),
    "ThinkingNotFirst": (
        [U("task"), A([T("answer"), SIGNED])],
        [U("task"), A([SIGNED, T("answer")])],
    ),
    "ThinkingUnsigned": (
        [U("task"), A([UNSIGNED, T("answer")])],
        [U("task"), A([SIGNED, T("answer")])],
    ),
    "ToolResultUnknown": ([U([TR("nobody")])], [U("task"), A([TU("t1")]), U([TR("t1")])]),
}


class TestAnthropicRules:
    """Each rule of the Messages API, alone."""

    def test_every_rule_has_a_case(self) -> None:
        """The cases below cover every rule of RULES, each with its own name."""
        assert {type(rule).__name__ for rule in _anthropic.RULES} == set(ANTHROPIC_CASES)
        assert len({rule.name for rule in _anthropic.RULES}) == len(_anthropic.RULES)

    @pytest.mark.parametrize("rule", _anthropic.RULES, ids=lambda rule: type(rule).__name__)
    def test_rule_finds_its_violation(self, rule: Any) -> None:
        """On its minimal violating request a rule reports exactly one violation, of its name."""
        violating, _ = ANTHROPIC_CASES[type(rule).__name__]
        found = run_alone(rule, _anthropic.Turns(violating))
        assert [entry[3].rule for entry in found] == [rule.name]

    @pytest.mark.parametrize("rule", _anthropic.RULES, ids=lambda rule: type(rule).__name__)
    def test_rule_passes_a_valid_request(self, rule: Any) -> None:
        """On a minimal valid request a rule finds nothing, and neither does the validator."""
        _, valid = ANTHROPIC_CASES[type(rule).__name__]
        assert run_alone(rule, _anthropic.Turns(valid)) == []
        assert validate_messages(valid) == []

    def test_request_level_checks(self) -> None:
        """A request that is not a list, or is empty, is reported by finish alone."""
        not_a_list: Any = "text"
        assert [v.rule for v in validate_messages(not_a_list)] == ["malformed"]
        assert [v.rule for v in validate_messages([])] == ["empty-content"]
        assert run_alone(_anthropic.EmptyContent(), _anthropic.Turns("text")) == []

    def test_block_order_interleaves_rules(self) -> None:
        """Within a message, a malformed block and an empty text block come in block order."""
        message = A([T(""), {"type": 3}, T("")])
        paths = [(v.path, v.rule) for v in validate_messages([U("task"), message])]
        assert paths == [
            ("messages[1].content[0]", "empty-content"),
            ("messages[1].content[1]", "malformed"),
            ("messages[1].content[2]", "empty-content"),
        ]

    def test_tool_calls_in_a_user_message(self) -> None:
        """Each tool_use or server_tool_use block of a user message is reported where it is."""
        server_call = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search"}
        message = U([T("task"), TU("t1"), server_call])
        assert [(v.path, v.rule, v.detail) for v in validate_messages([message])] == [
            ("messages[0].content[1]", "tool-use-in-user", "a tool_use block in a user message"),
            (
                "messages[0].content[2]",
                "tool-use-in-user",
                "a server_tool_use block in a user message",
            ),
        ]

    def test_refused_id_characters(self) -> None:
        """Each tool_use whose id holds a character outside ``[a-zA-Z0-9_-]`` is reported where
        it is, naming the first such character; a repeated refused id is reported twice."""
        calls = A([TU("fc:1"), TU("ok_1"), TU("a b"), TU("fc:1")])
        results = U([TR("fc:1"), TR("ok_1"), TR("a b"), TR("fc:1")])
        assert [
            (v.path, v.rule, v.detail) for v in validate_messages([U("t"), calls, results])
        ] == [
            (
                "messages[1].content[0]",
                "tool-use-id-refused",
                "tool_use id 'fc:1' holds ':': only letters, digits, _ and - are accepted",
            ),
            (
                "messages[1].content[2]",
                "tool-use-id-refused",
                "tool_use id 'a b' holds ' ': only letters, digits, _ and - are accepted",
            ),
            (
                "messages[1].content[3]",
                "duplicate-tool-use-id",
                "tool_use id 'fc:1' is already used at messages[1].content[0]",
            ),
            (
                "messages[1].content[3]",
                "tool-use-id-refused",
                "tool_use id 'fc:1' holds ':': only letters, digits, _ and - are accepted",
            ),
        ]

    @pytest.mark.parametrize("tool_use_id", ["toolu_01", "call.1", "fc:1", "é", "a/b", "x y"])
    def test_refused_ids_agree_with_the_double(self, tool_use_id: str) -> None:
        """The validator reports a tool_use id exactly when the strict API double refuses it."""
        from ..doubles import CODING_TOOLS, AnthropicDouble

        call = {"type": "tool_use", "id": tool_use_id, "name": "read_file", "input": {}}
        messages = [U("task"), A([call]), U([TR(tool_use_id)])]
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1_000, "tools": CODING_TOOLS}
        refused = AnthropicDouble(window=100_000).check({**body, "messages": messages})
        rules = [v.rule for v in validate_messages(messages)]
        assert (refused == []) == (rules == []), (refused, rules)
        assert rules in ([], ["tool-use-id-refused"])

    def test_one_block_follows_the_rule_order(self) -> None:
        """An unsigned thinking block after text: not-first, then unsigned (the order of RULES)."""
        found = validate_messages([U("task"), A([T("answer"), UNSIGNED])])
        assert [v.rule for v in found] == ["thinking-not-first", "thinking-unsigned"]


@st.composite
def damaged_conversations(draw: st.DrawFn) -> list[Any]:
    """A well-formed conversation with a few messages or blocks broken, dropped or repeated."""
    messages: list[Any] = draw(conversations())
    breakages = (
        "delete", "repeat", "swap", "junk", "empty", "blank", "unsigned", "late_thinking",
        "reuse_id", "no_id", "user_thinking", "user_tool_use", "orphan", "bad_content",
    )  # fmt: skip
    for _ in range(draw(st.integers(0, 4))):
        index = draw(st.integers(0, len(messages) - 1))
        message = messages[index]
        if not isinstance(message, dict):  # broken before: break it again from a plain message
            message = U("task")
        content = message.get("content")
        blocks = list(content) if isinstance(content, list) else [T(str(content))]
        operation = draw(st.sampled_from(breakages))
        replaced: Any = message
        if operation == "delete" and len(messages) > 1:
            del messages[index]
            continue
        if operation == "repeat":
            messages.insert(index, message)
            continue
        if operation == "swap" and index + 1 < len(messages):
            messages[index], messages[index + 1] = messages[index + 1], message
            continue
        if operation == "junk":
            replaced = draw(st.sampled_from(["junk", None, {"role": "system", "content": "x"}]))
        elif operation == "empty":
            replaced = {**message, "content": draw(st.sampled_from(["", []]))}
        elif operation == "bad_content":
            replaced = {**message, "content": draw(st.sampled_from([3, None, [7], [{"type": 1}]]))}
        elif operation == "blank":
            replaced = {**message, "content": [*blocks, T("")]}
        elif operation == "unsigned":
            replaced = {**message, "content": [UNSIGNED, *blocks]}
        elif operation == "late_thinking":
            replaced = {**message, "content": [*blocks, SIGNED]}
        elif operation == "user_thinking":
            replaced = U([SIGNED, *blocks])
        elif operation == "user_tool_use":
            replaced = U([*blocks, TU(draw(st.sampled_from(["toolu_0000", "toolu_user"])))])
        elif operation == "reuse_id":
            replaced = A([*blocks, TU("toolu_0000")])
        elif operation == "no_id":
            replaced = A(
                [*blocks, {"type": "tool_use", "id": draw(st.sampled_from([None, "", 5]))}]
            )
        elif operation == "orphan":
            replaced = {
                **message,
                "content": [TR(draw(st.sampled_from(["toolu_0000", "x"]))), *blocks],
            }
        messages[index] = replaced
    return messages


class TestAnthropicComposition:
    """validate_messages is its rules, run each alone and put in the documented order."""

    @given(st.one_of(conversations(), damaged_conversations()))
    def test_composition_is_every_rule_in_order(self, messages: list[Any]) -> None:
        """The validator's list equals the union of every rule's finds, sorted as documented."""
        assert validate_messages(messages) == composed(_anthropic.RULES, _anthropic.Turns, messages)

    @given(damaged_conversations())
    def test_each_rule_reports_only_its_name(self, messages: list[Any]) -> None:
        """A rule's violations carry its own name."""
        for rule in _anthropic.RULES:
            found = run_alone(rule, _anthropic.Turns(messages))
            assert {entry[3].rule for entry in found} <= {rule.name}

    @given(conversations(ends_with="user"))
    def test_well_formed_conversations_pass(self, messages: list[Message]) -> None:
        """The strategy's conversations that end with a user message break no rule."""
        assert validate_messages(messages) == []


# -- Chat Completions ------------------------------------------------------------------------


def _call(call_id: str) -> Message:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


_ASKED: list[Message] = [
    {"role": "user", "content": "task"},
    {"role": "assistant", "content": None, "tool_calls": [_call("c1")]},
]
_ANSWERED: list[Message] = [*_ASKED, {"role": "tool", "tool_call_id": "c1", "content": "ok"}]

OPENAI_CASES: dict[str, tuple[list[Message], list[Message]]] = {
    "ToolUseUnanswered": (_ASKED, _ANSWERED),
    "ToolResultUnknown": ([{"role": "tool", "tool_call_id": "c1", "content": "ok"}], _ANSWERED),
    "Malformed": ([{"role": "robot", "content": "beep"}], [{"role": "user", "content": "task"}]),
}


class TestOpenAIRules:
    """Each Chat Completions rule, alone, and validate_openai as their composition."""

    def test_every_rule_has_a_case(self) -> None:
        """The cases cover every rule of RULES."""
        assert {type(rule).__name__ for rule in _openai.RULES} == set(OPENAI_CASES)

    @pytest.mark.parametrize("rule", _openai.RULES, ids=lambda rule: type(rule).__name__)
    def test_rule_finds_its_violation(self, rule: Any) -> None:
        """On its minimal violating request a rule reports exactly one violation, of its name."""
        violating, _ = OPENAI_CASES[type(rule).__name__]
        found = run_alone(rule, _openai.Entries(violating))
        assert [entry[3].rule for entry in found] == [rule.name]

    @pytest.mark.parametrize("rule", _openai.RULES, ids=lambda rule: type(rule).__name__)
    def test_rule_passes_a_valid_request(self, rule: Any) -> None:
        """On a minimal valid request a rule finds nothing, and neither does the validator."""
        _, valid = OPENAI_CASES[type(rule).__name__]
        assert run_alone(rule, _openai.Entries(valid)) == []
        assert validate_openai(valid) == []

    @given(st.one_of(openai_conversations(), broken_openai_conversations()))
    def test_composition_is_every_rule_in_order(self, messages: list[Message]) -> None:
        """validate_openai equals the union of every rule's finds, sorted as documented."""
        assert validate_openai(messages) == composed(_openai.RULES, _openai.Entries, messages)


# -- Responses -------------------------------------------------------------------------------


def _function_call(call_id: str) -> Message:
    return {"type": "function_call", "call_id": call_id, "name": "f", "arguments": "{}"}


def _output(call_id: str) -> Message:
    return {"type": "function_call_output", "call_id": call_id, "output": "ok"}


_PAIR: list[Message] = [{"role": "user", "content": "task"}, _function_call("c1"), _output("c1")]

RESPONSES_CASES: dict[str, tuple[list[Message], list[Message]]] = {
    "Malformed": ([{"type": "bogus"}], [{"role": "user", "content": "task"}]),
    "DuplicateToolUseId": ([_function_call("c1"), _function_call("c1"), _output("c1")], _PAIR),
    "ToolResultUnknown": ([_output("c1")], _PAIR),
    "ToolUseUnanswered": ([_function_call("c1")], _PAIR),
    "TrailingReasoning": (
        [*_PAIR, {"type": "reasoning", "id": "rs_1", "summary": []}],
        [*_PAIR[:1], {"type": "reasoning", "id": "rs_1", "summary": []}, *_PAIR[1:]],
    ),
}


class TestResponsesRules:
    """Each Responses rule, alone, and validate_responses as their composition."""

    def test_every_rule_has_a_case(self) -> None:
        """The cases cover every rule of RULES."""
        assert {type(rule).__name__ for rule in _responses.RULES} == set(RESPONSES_CASES)

    @pytest.mark.parametrize("rule", _responses.RULES, ids=lambda rule: type(rule).__name__)
    def test_rule_finds_its_violation(self, rule: Any) -> None:
        """On its minimal violating input a rule reports exactly one violation, of its name."""
        violating, _ = RESPONSES_CASES[type(rule).__name__]
        found = run_alone(rule, _responses.Items(violating))
        assert [entry[3].rule for entry in found] == [rule.name]

    @pytest.mark.parametrize("rule", _responses.RULES, ids=lambda rule: type(rule).__name__)
    def test_rule_passes_a_valid_input(self, rule: Any) -> None:
        """On a minimal valid input a rule finds nothing, and neither does the validator."""
        _, valid = RESPONSES_CASES[type(rule).__name__]
        assert run_alone(rule, _responses.Items(valid)) == []
        assert validate_responses(valid) == []

    @given(st.one_of(responses_inputs(), broken_responses_inputs()))
    def test_composition_is_every_rule_in_order(self, items: list[Message]) -> None:
        """validate_responses equals the union of every rule's finds, sorted as documented."""
        assert validate_responses(items) == composed(_responses.RULES, _responses.Items, items)


_CALL = {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.py"}}
PLACEMENT_CASES: dict[str, tuple[list[Any], bool]] = {
    "a tool_use in the user's task": ([U([T("task"), _CALL])], False),
    "a tool_use after a result": (
        [U("task"), A([T("reading"), _CALL]), U([TR("toolu_1"), {**_CALL, "id": "toolu_2"}])],
        False,
    ),
    "a tool_use from the assistant, answered": (
        [U("task"), A([T("reading"), _CALL]), U([TR("toolu_1")])],
        True,
    ),
}


class TestAgreesWithTheDouble:
    """Where a tool call may stand, the validator and the strict API double give one verdict."""

    @pytest.mark.parametrize(
        ("messages", "valid"), PLACEMENT_CASES.values(), ids=list(PLACEMENT_CASES)
    )
    def test_same_verdict(self, messages: list[Any], valid: bool) -> None:
        """The double refuses the request exactly when the validator reports a misplaced call."""
        from ..doubles import CODING_TOOLS, AnthropicDouble

        body = {"model": "claude-sonnet-4-5", "max_tokens": 1_000, "tools": CODING_TOOLS}
        refused = AnthropicDouble(window=100_000).check({**body, "messages": messages})
        rules = [v.rule for v in validate_messages(messages)]
        assert (refused == [], rules == []) == (valid, valid), (refused, rules)
        assert ("tool-use-in-user" in rules) == (not valid)
        assert any("blocks can only be in `assistant` messages" in p for p in refused) == (
            not valid
        )
