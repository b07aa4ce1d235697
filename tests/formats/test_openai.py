"""OpenAI Chat Completions <-> Anthropic shape: the round-trip laws, validity, and each decision."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from windowkeeper import (
    ContextManager,
    MalformedMessageError,
    Violation,
    WindowkeeperError,
    validate_messages,
)
from windowkeeper.formats import (
    NOTE_KEYS,
    AnthropicConversation,
    from_anthropic,
    to_anthropic,
    validate_openai,
)
from windowkeeper.rules import TOOL_RESULT_UNKNOWN, TOOL_USE_UNANSWERED

from .strategies import (
    anthropic_conversations,
    broken_openai_conversations,
    openai_conversations,
)

Message = dict[str, Any]
PAIRING_RULES = {TOOL_USE_UNANSWERED, TOOL_RESULT_UNKNOWN}


def call(call_id: str, name: str = "bash", arguments: str = '{"command":"ls"}') -> Message:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def tool(call_id: str, content: Any = "ok") -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def use(call_id: str, tool_input: Any = None, name: str = "bash") -> Message:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": name,
        "input": {"command": "ls"} if tool_input is None else tool_input,
    }


def result(call_id: str, content: Any = "ok") -> Message:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content}


PARALLEL = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "List and read."},
    {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2", "read_file")]},
    tool("c2", "file text"),
    tool("c1", [{"type": "text", "text": "a.py"}]),
    {"role": "user", "content": "Now fix it."},
    {"role": "assistant", "content": "Done."},
]


class TestLaws:
    """The round-trip laws and what converted conversations satisfy."""

    @given(openai_conversations())
    def test_round_trip(self, messages: list[Message]) -> None:
        """A canonical OpenAI conversation comes back equal from its Anthropic form."""
        assert from_anthropic(to_anthropic(messages).messages) == messages

    @given(anthropic_conversations())
    def test_reverse_round_trip(self, messages: list[Message]) -> None:
        """An Anthropic conversation in the reverse law's subset comes back equal, without notes."""
        converted = to_anthropic(from_anthropic(messages))
        assert converted.messages == messages
        assert converted.system is None

    @given(openai_conversations())
    def test_inputs_are_not_modified(self, messages: list[Message]) -> None:
        """Neither direction modifies what it is given."""
        before = copy.deepcopy(messages)
        converted = to_anthropic(messages)
        assert messages == before
        anthropic = copy.deepcopy(converted.messages)
        from_anthropic(converted.messages)
        assert converted.messages == anthropic

    @given(openai_conversations())
    def test_system_joins_every_system_and_developer_message(self, messages: list[Message]) -> None:
        """``system`` is the text of every system and developer message, in order."""
        texts = []
        for message in messages:
            if message["role"] in {"system", "developer"}:
                content = message["content"]
                parts = [content] if isinstance(content, str) else [p["text"] for p in content]
                texts.append("\n\n".join(parts))
        assert to_anthropic(messages).system == ("\n\n".join(texts) if texts else None)

    @given(openai_conversations())
    def test_valid_openai_converts_to_a_valid_request(self, messages: list[Message]) -> None:
        """A generated conversation passes validate_openai, and its Anthropic form validate_messages."""
        assert validate_openai(messages) == []
        assert validate_messages(to_anthropic(messages).messages) == []

    @given(broken_openai_conversations())
    def test_valid_pairing_stays_valid(self, messages: list[Message]) -> None:
        """When the OpenAI pairing is valid, the Anthropic form has no pairing violation."""
        assume(validate_openai(messages) == [])
        violations = validate_messages(to_anthropic(messages).messages)
        assert [v for v in violations if v.rule in PAIRING_RULES] == []

    @given(openai_conversations(max_turns=8), st.data())
    def test_truncated_conversation_is_a_valid_openai_request(
        self, messages: list[Message], data: st.DataObject
    ) -> None:
        """Truncated in Anthropic shape up to an assistant message, it converts back valid.

        Precondition: the Anthropic form is a valid request (so message 0 is the user task,
        message 1 an assistant message, roles alternate), and ``k`` is an assistant message
        with 3 <= k <= len - 2, so a user message follows the hidden range.
        """
        converted = to_anthropic(messages).messages
        assert validate_messages(converted) == []
        ends = [k for k in range(3, len(converted) - 1) if converted[k]["role"] == "assistant"]
        assume(ends)
        k = data.draw(st.sampled_from(ends))
        truncated = ContextManager().get_truncated_messages(converted, (2, k))
        assert validate_openai(from_anthropic(truncated)) == []


class TestToAnthropic:
    """What each OpenAI construct becomes."""

    def test_parallel_tool_results_merge_with_the_next_user_message(self) -> None:
        """Consecutive tool messages and the user message after them make one user message."""
        converted = to_anthropic(PARALLEL)
        assert converted == AnthropicConversation(
            system="Be brief.",
            messages=[
                {
                    "role": "user",
                    "content": "List and read.",
                    "openai_system": [{"role": "system", "content": "Be brief."}],
                },
                {"role": "assistant", "content": [use("c1"), use("c2", name="read_file")]},
                {
                    "role": "user",
                    "content": [
                        result("c2", "file text"),
                        result("c1", [{"type": "text", "text": "a.py"}]),
                        {"type": "text", "text": "Now fix it."},
                    ],
                },
                {"role": "assistant", "content": "Done."},
            ],
        )
        assert from_anthropic(converted.messages) == PARALLEL

    def test_tool_results_without_a_user_message(self) -> None:
        """Tool messages followed by an assistant message make a user message of results only."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "Running.", "tool_calls": [call("c1")]},
            tool("c1"),
            {"role": "assistant", "content": "Done."},
        ]
        converted = to_anthropic(messages).messages
        assert converted[1]["content"] == [{"type": "text", "text": "Running."}, use("c1")]
        assert converted[2] == {"role": "user", "content": [result("c1")]}
        assert from_anthropic(converted) == messages

    def test_system_messages_are_noted_where_they_stood(self) -> None:
        """Mid-conversation and trailing system or developer messages ride on their neighbours."""
        developer = {"role": "developer", "content": [{"type": "text", "text": "Use tools."}]}
        late = {"role": "system", "content": "Wrap up.", "name": "ops"}
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
            tool("c1"),
            developer,
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": "ok"},
            late,
        ]
        converted = to_anthropic(messages)
        assert converted.system == "Use tools.\n\nWrap up."
        assert converted.messages[2]["openai_system"] == [developer]
        assert converted.messages[3]["openai_system_after"] == [late]
        assert from_anthropic(converted.messages) == messages

    def test_images(self) -> None:
        """A base64 data URL becomes a base64 source, another URL a url source; detail is kept."""
        messages = [
            {
                "role": "user",
                "content": [
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {
                        "type": "image_url",
                        "image_url": {"url": "https://example.com/a.png", "detail": "high"},
                    },
                    {"type": "image_url", "image_url": {"url": "data:text/plain,hi"}},
                ],
            }
        ]
        assert to_anthropic(messages).messages[0]["content"] == [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
            },
            {
                "type": "image",
                "source": {"type": "url", "url": "https://example.com/a.png", "detail": "high"},
            },
            {"type": "image", "source": {"type": "url", "url": "data:text/plain,hi"}},
        ]
        assert from_anthropic(to_anthropic(messages).messages) == messages

    @pytest.mark.parametrize(
        ("arguments", "tool_input", "noted"),
        [
            ('{"command":"ls"}', {"command": "ls"}, False),
            ('{"command": "ls"}', {"command": "ls"}, True),
            ('{"a":1,"a":2}', {"a": 2}, True),
            ('{"command": "ls"', {}, True),
            ("[1, 2]", {}, True),
            ("", {}, True),
        ],
    )
    def test_arguments(self, arguments: str, tool_input: Any, noted: bool) -> None:
        """Arguments are parsed; the raw string is noted when the input does not print back to it."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1", arguments=arguments)]},
            tool("c1"),
        ]
        block = to_anthropic(messages).messages[1]["content"][0]
        assert block["input"] == tool_input
        assert block.get("openai_arguments") == (arguments if noted else None)
        assert from_anthropic(to_anthropic(messages).messages) == messages

    def test_changed_input_wins_over_the_noted_arguments(self) -> None:
        """When the input was edited after conversion, the arguments are printed from it."""
        block = {**use("c1", {"command": "pwd"}), "openai_arguments": '{"command": "ls"}'}
        back = from_anthropic([{"role": "assistant", "content": [block]}])
        assert back[0]["tool_calls"][0]["function"]["arguments"] == '{"command":"pwd"}'

    def test_unknown_keys_travel(self) -> None:
        """``name``, ``refusal`` and tool message keys come back where they were."""
        messages = [
            {"role": "user", "content": "go", "name": "alice"},
            {
                "role": "assistant",
                "content": None,
                "refusal": None,
                "tool_calls": [{**call("c1"), "index": 0}],
            },
            {**tool("c1"), "name": "bash"},
        ]
        converted = to_anthropic(messages).messages
        assert converted[0]["name"] == "alice"
        assert converted[1]["refusal"] is None
        assert converted[1]["content"][0]["index"] == 0
        assert converted[2]["content"][0]["name"] == "bash"
        assert from_anthropic(converted) == messages

    def test_consecutive_user_messages_stay_separate(self) -> None:
        """Two user messages in a row stay two messages; validate_messages reports them."""
        messages = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        converted = to_anthropic(messages).messages
        assert converted == messages
        assert [v.rule for v in validate_messages(converted)] == ["same-role-twice"]

    def test_an_empty_user_message_after_tools_is_not_merged(self) -> None:
        """A user message with empty content keeps its own message, so it comes back."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
            tool("c1"),
            {"role": "user", "content": ""},
        ]
        assert len(to_anthropic(messages).messages) == 4
        assert from_anthropic(to_anthropic(messages).messages) == messages

    def test_no_messages(self) -> None:
        """No messages give no system and no messages."""
        assert to_anthropic([]) == AnthropicConversation(None, [])

    def test_note_keys(self) -> None:
        """NOTE_KEYS names every key the conversion adds."""
        assert {"openai_system", "openai_system_after", "openai_arguments"} == NOTE_KEYS


class TestFromAnthropic:
    """What each Anthropic construct becomes, where it is not the inverse of to_anthropic."""

    def test_system_parameter(self) -> None:
        """``system`` becomes the first message, as a string or as text parts."""
        messages = [{"role": "user", "content": "hi"}]
        assert from_anthropic(messages, system="Be brief.")[0] == {
            "role": "system",
            "content": "Be brief.",
        }
        blocks = [{"type": "text", "text": "Be brief."}]
        assert from_anthropic(messages, system=blocks)[0] == {"role": "system", "content": blocks}

    def test_interleaved_text_and_tool_use(self) -> None:
        """Text after a tool_use joins the content; calls keep their order."""
        content = [use("a"), {"type": "text", "text": "x"}, use("b")]
        back = from_anthropic([{"role": "assistant", "content": content}])
        assert back[0]["content"] == "x"
        assert [c["id"] for c in back[0]["tool_calls"]] == ["a", "b"]

    def test_tool_result_details(self) -> None:
        """``is_error`` stays on the tool message; a missing content becomes ``""``."""
        content = [{**result("a"), "is_error": True}, {"type": "tool_result", "tool_use_id": "b"}]
        back = from_anthropic([{"role": "user", "content": content}])
        assert back == [
            {"role": "tool", "tool_call_id": "a", "content": "ok", "is_error": True},
            {"role": "tool", "tool_call_id": "b", "content": ""},
        ]

    def test_keys_of_a_results_only_message_go_to_each_tool_message(self) -> None:
        """A message of tool_results only has no user message, so its keys go on each tool message."""
        back = from_anthropic([{"role": "user", "content": [result("a"), result("b")], "ts": 5}])
        assert [message["ts"] for message in back] == [5, 5]

    def test_thinking_blocks_pass_through(self) -> None:
        """Blocks of other types are carried as they are."""
        thinking = {"type": "thinking", "thinking": "hm", "signature": "c2ln"}
        back = from_anthropic([{"role": "assistant", "content": [thinking, use("a")]}])
        assert back[0]["content"] == [thinking]


class TestErrors:
    """Input outside the supported subset raises MalformedMessageError naming the place."""

    @pytest.mark.parametrize(
        ("message", "path"),
        [
            ({"role": "function", "content": "x"}, "messages[1].role"),
            ({"role": "assistant", "content": None, "tool_calls": {}}, "messages[1].tool_calls"),
            (
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"type": "function", "function": {"name": "a", "arguments": ""}}
                    ],
                },
                "messages[1].tool_calls[0].id",
            ),
            (
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        call("c1"),
                        {**call("c2"), "function": {"name": "a", "arguments": {}}},
                    ],
                },
                "messages[1].tool_calls[1].function.arguments",
            ),
            (
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{**call("c1"), "type": "custom"}],
                },
                "messages[1].tool_calls[0].type",
            ),
            ({"role": "user", "content": [{"type": "tool_result"}]}, "messages[1].content[0].type"),
            (
                {"role": "user", "content": [{"type": "image_url"}]},
                "messages[1].content[0].image_url",
            ),
            (
                {"role": "user", "content": [{"type": "text", "text": 3}]},
                "messages[1].content[0].text",
            ),
            ({"role": "user", "content": 3}, "messages[1].content"),
            ({"role": "user"}, "messages[1].content"),
            ({"role": "tool", "content": "x"}, "messages[1].tool_call_id"),
            ({"role": "system", "content": [{"type": "image_url"}]}, "messages[1].content[0]"),
            ({"role": "user", "content": "x", "openai_system": []}, "messages[1].openai_system"),
            ("hello", "messages[1]"),
        ],
    )
    def test_malformed_openai_input(self, message: Any, path: str) -> None:
        """The error's path names the offending value."""
        with pytest.raises(MalformedMessageError) as caught:
            to_anthropic([{"role": "user", "content": "go"}, message])
        assert caught.value.path == path
        assert isinstance(caught.value, ValueError)
        assert isinstance(caught.value, WindowkeeperError)

    def test_not_a_list(self) -> None:
        """A non-list is refused with the list's name."""
        with pytest.raises(MalformedMessageError, match=r"^history: "):
            to_anthropic("hi", name="history")

    @pytest.mark.parametrize(
        ("message", "path"),
        [
            ({"role": "user", "content": [use("a")]}, "messages[0].content[0]"),
            ({"role": "assistant", "content": [result("a")]}, "messages[0].content[0]"),
            (
                {"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]},
                "messages[0].content[0].source",
            ),
            (
                {"role": "assistant", "content": [use("a", tool_input=[1])]},
                "messages[0].content[0].input",
            ),
            ({"role": "system", "content": "x"}, "messages[0].role"),
        ],
    )
    def test_malformed_anthropic_input(self, message: Message, path: str) -> None:
        """from_anthropic names the place too."""
        with pytest.raises(MalformedMessageError) as caught:
            from_anthropic([message])
        assert caught.value.path == path


class TestValidateOpenai:
    """validate_openai: the OpenAI API's tool pairing rules."""

    def test_a_valid_conversation(self) -> None:
        """Parallel calls answered in any order pass."""
        assert validate_openai(PARALLEL) == []

    def test_unanswered_call(self) -> None:
        """A call without a tool message before the next message is named by its place."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
            tool("c1"),
            {"role": "user", "content": "next"},
        ]
        assert validate_openai(messages) == [
            Violation(
                "messages[1].tool_calls[1]",
                TOOL_USE_UNANSWERED,
                "no tool message answers 'c2' before messages[3]",
            )
        ]

    def test_tool_message_answering_nothing(self) -> None:
        """A tool message that answers no call of the assistant right before it is reported."""
        messages = [{"role": "user", "content": "go"}, tool("c9")]
        assert [(v.path, v.rule) for v in validate_openai(messages)] == [
            ("messages[1]", TOOL_RESULT_UNKNOWN)
        ]

    def test_system_message_inside_the_tool_messages(self) -> None:
        """A system message ends the run of tool messages: the rest answer nothing."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c2")]},
            tool("c1"),
            {"role": "system", "content": "note"},
            tool("c2"),
        ]
        assert [(v.path, v.rule) for v in validate_openai(messages)] == [
            ("messages[1].tool_calls[1]", TOOL_USE_UNANSWERED),
            ("messages[4]", TOOL_RESULT_UNKNOWN),
        ]

    def test_answered_twice_and_ending_unanswered(self) -> None:
        """A second answer and a conversation ending before its calls are answered are reported."""
        messages = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1")]},
            tool("c1"),
            tool("c1"),
            {"role": "assistant", "content": None, "tool_calls": [call("c2")]},
        ]
        assert validate_openai(messages) == [
            Violation(
                "messages[3]", TOOL_RESULT_UNKNOWN, "tool message for 'c1' answers a second time"
            ),
            Violation(
                "messages[4].tool_calls[0]",
                TOOL_USE_UNANSWERED,
                "the request ends before 'c2' is answered",
            ),
        ]

    def test_malformed(self) -> None:
        """Unknown roles, tool_calls that are not a list, and missing or repeated ids are reported."""
        messages = [
            {"role": "function", "content": "x"},
            {"role": "assistant", "content": None, "tool_calls": "c1"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1"), call("c1"), {}]},
            tool("c1"),
            {"role": "tool", "content": "x"},
        ]
        assert [(v.path, v.rule) for v in validate_openai(messages)] == [
            ("messages[0]", "malformed"),
            ("messages[1].tool_calls", "malformed"),
            ("messages[2].tool_calls[1].id", "malformed"),
            ("messages[2].tool_calls[2].id", "malformed"),
            ("messages[4].tool_call_id", "malformed"),
        ]
        assert validate_openai("x") == [
            Violation("messages", "malformed", "not a list of messages")
        ]
