"""OpenAI Responses input items <-> Anthropic shape: the laws, each decision, validation, wire."""

from __future__ import annotations

import copy
import typing
from typing import Any, Literal, Union, get_args, get_origin

import pytest
import typing_extensions
from hypothesis import assume, given
from hypothesis import strategies as st

from windowkeeper import ContextManager, MalformedMessageError, Repair, Violation, validate_messages
from windowkeeper.core._notices import RESULT_MISSING
from windowkeeper.formats._wire import EMPTY_MESSAGE_NOTICE
from windowkeeper.formats.openai import AnthropicConversation
from windowkeeper.formats.responses import (
    NOTE_KEYS,
    RESPONSES_ITEM_KEYS,
    RESPONSES_MESSAGE_KEYS,
    RESPONSES_PART_KEYS,
    from_anthropic,
    responses_item,
    responses_wire,
    to_anthropic,
    validate_responses,
)
from windowkeeper.rules import (
    DUPLICATE_TOOL_USE_ID,
    MALFORMED,
    TOOL_RESULT_UNKNOWN,
    TOOL_USE_UNANSWERED,
)

from ..doubles._server import check_shape
from .responses_strategies import (
    anthropic_conversations,
    broken_responses_inputs,
    responses_inputs,
)

Item = dict[str, Any]
PAIRING_RULES = {TOOL_USE_UNANSWERED, TOOL_RESULT_UNKNOWN, DUPLICATE_TOOL_USE_ID}
CARRIED = {"reasoning", "compaction"}


def call(call_id: str, arguments: Any = '{"command":"ls"}', **keys: Any) -> Item:
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": "bash",
        "arguments": arguments,
        **keys,
    }


def output(call_id: str, content: Any = "ok", **keys: Any) -> Item:
    return {"type": "function_call_output", "call_id": call_id, "output": content, **keys}


def custom(call_id: str, text: str = "*** Begin Patch") -> Item:
    return {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": text}


def custom_output(call_id: str, content: Any = "done") -> Item:
    return {"type": "custom_tool_call_output", "call_id": call_id, "output": content}


def reasoning(number: int) -> Item:
    return {"type": "reasoning", "id": f"rs_{number}", "summary": [], "encrypted_content": "gAAA"}


def use(call_id: str, tool_input: Any = None, **keys: Any) -> Item:
    return {
        "type": "tool_use",
        "id": call_id,
        "name": "bash",
        "input": {"command": "ls"} if tool_input is None else tool_input,
        **keys,
    }


def result(call_id: str, content: Any = "ok", **keys: Any) -> Item:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, **keys}


def text(value: str, **keys: Any) -> Item:
    return {"type": "text", "text": value, **keys}


def reply(value: str) -> Item:
    """An assistant message as Codex sends one back."""
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": value}],
    }


TURN = [
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "List and patch."},
    reasoning(1),
    call("c1", id="fc_1", status="completed"),
    reasoning(2),
    custom("c2"),
    output("c1", [{"type": "input_text", "text": "a.py"}]),
    custom_output("c2"),
    {"role": "user", "content": "Now explain."},
    reply("Patched."),
]


json_items = st.lists(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=3),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(
                st.sampled_from(
                    ("type", "role", "content", "call_id", "output", "summary", "image_url", "text")
                ),
                inner,
                max_size=4,
            )
        ),
        max_leaves=8,
    ),
    max_size=5,
)
"""Arbitrary JSON values where input items are expected, with the keys that matter."""


def _is_carried(item: Item) -> bool:
    return item.get("type") in CARRIED or item.get("role") in {"system", "developer"}


class TestLaws:
    """The round-trip laws and what converted conversations satisfy."""

    @given(responses_inputs())
    def test_round_trip(self, items: list[Item]) -> None:
        """A canonical input list comes back equal from its Anthropic form."""
        assert from_anthropic(to_anthropic(items).messages) == items

    @given(broken_responses_inputs())
    def test_round_trip_of_broken_inputs(self, items: list[Item]) -> None:
        """Deleting, repeating and swapping items keeps the law: it does not need validity."""
        assume(not all(_is_carried(item) for item in items))
        assert from_anthropic(to_anthropic(items).messages) == items

    @given(anthropic_conversations())
    def test_reverse_round_trip(self, messages: list[Item]) -> None:
        """A note-free Anthropic conversation in the reverse law's subset comes back equal."""
        converted = to_anthropic(from_anthropic(messages))
        assert converted.messages == messages
        assert converted.system is None

    @given(responses_inputs())
    def test_inputs_are_not_modified(self, items: list[Item]) -> None:
        """Neither direction modifies what it is given."""
        before = copy.deepcopy(items)
        converted = to_anthropic(items)
        assert items == before
        anthropic = copy.deepcopy(converted.messages)
        from_anthropic(converted.messages)
        assert converted.messages == anthropic

    @given(responses_inputs())
    def test_system_joins_every_system_and_developer_message(self, items: list[Item]) -> None:
        """``system`` is the text of every system and developer message, in order."""
        texts = []
        for item in items:
            if item.get("role") in {"system", "developer"}:
                content = item["content"]
                parts = [content] if isinstance(content, str) else [p["text"] for p in content]
                texts.append("\n\n".join(parts))
        assert to_anthropic(items).system == ("\n\n".join(texts) if texts else None)

    @given(responses_inputs())
    def test_valid_input_converts_to_a_valid_request(self, items: list[Item]) -> None:
        """A generated input passes validate_responses, and its Anthropic form validate_messages."""
        assert validate_responses(items) == []
        assert validate_messages(to_anthropic(items).messages) == []

    @given(anthropic_conversations())
    def test_valid_anthropic_converts_to_a_valid_input(self, messages: list[Item]) -> None:
        """A valid Anthropic request becomes a valid Responses input."""
        assume(validate_messages(messages) == [])
        assert validate_responses(from_anthropic(messages)) == []

    @given(broken_responses_inputs())
    def test_each_message_carries_its_own_items(self, items: list[Item]) -> None:
        """Converted one by one, the messages give the items back in order.

        So hiding a message hides exactly its items, and a reasoning item lands in the message
        of the model item right after it: it travels with the call or message it precedes.
        """
        assume(not all(_is_carried(item) for item in items))
        messages = to_anthropic(items).messages
        slices = [from_anthropic([message]) for message in messages]
        assert [item for piece in slices for item in piece] == items
        owner = [index for index, piece in enumerate(slices) for _ in piece]
        for position, item in enumerate(items[:-1]):
            following = items[position + 1]
            model = following.get("type") in {"function_call", "custom_tool_call"} or (
                following.get("role") == "assistant"
            )
            if item.get("type") == "reasoning" and model:
                assert owner[position] == owner[position + 1]

    @given(responses_inputs(max_turns=8), st.data())
    def test_truncated_conversation_is_a_valid_input(
        self, items: list[Item], data: st.DataObject
    ) -> None:
        """Truncated in Anthropic shape, pairs hidden together, it converts back valid.

        ``k`` is an assistant message with 3 <= k <= len - 2, so a user message follows the
        hidden range 2..k; the truncation repairs the pairing of what is left (a placeholder
        result for calls of message 1, orphan results made text), and the placeholders for
        custom calls come back as custom outputs.
        """
        converted = to_anthropic(items).messages
        ends = [k for k in range(3, len(converted) - 1) if converted[k]["role"] == "assistant"]
        assume(ends)
        k = data.draw(st.sampled_from(ends))
        truncated = ContextManager().get_truncated_messages(converted, (2, k))
        assert validate_messages(truncated) == []
        assert validate_responses(from_anthropic(truncated)) == []


class TestToAnthropic:
    """What each Responses construct becomes."""

    def test_a_turn(self) -> None:
        """Calls with reasoning make one assistant message; outputs and the user text one user."""
        converted = to_anthropic(TURN)
        assert converted == AnthropicConversation(
            system="Be brief.",
            messages=[
                {
                    "role": "user",
                    "content": "List and patch.",
                    "responses_before": [{"role": "developer", "content": "Be brief."}],
                },
                {
                    "role": "assistant",
                    "content": [
                        use("c1", status="completed", responses_item_id="fc_1"),
                        {
                            "type": "tool_use",
                            "id": "c2",
                            "name": "apply_patch",
                            "input": {"input": "*** Begin Patch"},
                            "responses_custom": True,
                            "responses_before": [reasoning(2)],
                        },
                    ],
                    "responses_before": [reasoning(1)],
                },
                {
                    "role": "user",
                    "content": [
                        result("c1", [text("a.py")]),
                        result("c2", "done", responses_custom=True),
                        text("Now explain.", responses_string=True),
                    ],
                },
                {"role": "assistant", "content": [text("Patched.")]},
            ],
        )
        assert from_anthropic(converted.messages) == TURN

    def test_outputs_may_come_in_any_order(self) -> None:
        """Parallel calls' outputs make one message, in their order, with the user text after."""
        items = [
            {"role": "user", "content": "go"},
            call("a"),
            call("b"),
            output("b"),
            output("a"),
            {"role": "user", "content": [{"type": "input_text", "text": "and?"}]},
        ]
        converted = to_anthropic(items).messages
        assert converted[2] == {"role": "user", "content": [result("b"), result("a"), text("and?")]}
        assert from_anthropic(converted) == items

    def test_outputs_without_a_user_message(self) -> None:
        """Outputs followed by the model's next items make a user message of results only."""
        items = [{"role": "user", "content": "go"}, call("a"), output("a"), reply("Done.")]
        converted = to_anthropic(items).messages
        assert converted[2] == {"role": "user", "content": [result("a")]}
        assert converted[3] == {"role": "assistant", "content": [text("Done.")]}
        assert from_anthropic(converted) == items

    def test_an_empty_user_message_after_outputs_is_not_merged(self) -> None:
        """A user message with empty content keeps its own message, so it comes back."""
        items = [
            {"role": "user", "content": "go"},
            call("a"),
            output("a"),
            {"role": "user", "content": ""},
        ]
        assert len(to_anthropic(items).messages) == 4
        assert from_anthropic(to_anthropic(items).messages) == items

    def test_carried_items_are_noted_where_they_stood(self) -> None:
        """Carried items ride on the message or block of the item after them, or at the end."""
        compaction = {"type": "compaction", "encrypted_content": "enc", "id": "cmp_1"}
        late = {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": "Wrap up."}],
        }
        items = [
            compaction,
            {"role": "user", "content": "go"},
            call("a"),
            call("b"),
            output("a"),
            {"role": "developer", "content": "Mind b."},
            output("b"),
            {"role": "developer", "content": "Now the user."},
            {"role": "user", "content": [{"type": "input_text", "text": "and?"}]},
            reply("ok"),
            late,
        ]
        converted = to_anthropic(items)
        assert converted.system == "Mind b.\n\nNow the user.\n\nWrap up."
        first, _, results, answer = converted.messages
        assert first["responses_before"] == [compaction]
        assert results["content"][1]["responses_before"] == [items[5]]
        assert results["content"][2]["responses_before"] == [items[7]]
        assert answer["responses_after"] == [late]
        assert from_anthropic(converted.messages) == items

    def test_a_developer_message_does_not_split_a_run(self) -> None:
        """Items between the model's items ride on the next block; the run stays one message."""
        items = [
            {"role": "user", "content": "go"},
            call("a"),
            {"role": "developer", "content": "x"},
            call("b"),
        ]
        converted = to_anthropic(items).messages
        assert len(converted) == 2
        assert converted[1]["content"][1]["responses_before"] == [items[2]]
        assert from_anthropic(converted) == items

    def test_assistant_message_forms(self) -> None:
        """Each form of an assistant message comes back; only the plain ones carry no note."""
        parts = [
            {"type": "output_text", "text": "a", "annotations": []},
            {"type": "refusal", "refusal": "no"},
        ]
        output_item = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "phase": "commentary",
            "content": parts,
        }
        items = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "alone"},
            {"role": "user", "content": "more"},
            output_item,
            reply("plain"),
            reply("plain again"),
            call("c"),
            reply("after a call"),
            {"role": "assistant", "content": "easy"},
            {"type": "message", "role": "assistant", "content": "typed"},
        ]
        converted = to_anthropic(items).messages
        assert converted[1] == {"role": "assistant", "content": "alone"}
        blocks = converted[3]["content"]
        envelope = {key: value for key, value in output_item.items() if key != "content"}
        assert blocks[0] == text("a", annotations=[], responses_message=envelope)
        assert blocks[1] == {"type": "refusal", "refusal": "no"}
        assert blocks[2] == text(
            "plain", responses_message={"type": "message", "role": "assistant"}
        )
        assert blocks[3] == text(
            "plain again", responses_message={"type": "message", "role": "assistant"}
        )
        assert blocks[5] == text("after a call")
        assert blocks[6] == text(
            "easy", responses_string=True, responses_message={"role": "assistant"}
        )
        assert blocks[7]["responses_message"] == {"type": "message", "role": "assistant"}
        assert from_anthropic(converted) == items

    def test_images_and_files(self) -> None:
        """Image URLs become image blocks (``detail`` kept); file ids and files pass through."""
        parts = [
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "high"},
            {"type": "input_image", "image_url": "https://example.com/a.png"},
            {"type": "input_image", "image_url": "data:text/plain,hi"},
            {"type": "input_image", "file_id": "file-1", "detail": "auto"},
            {"type": "input_file", "file_id": "file-2"},
        ]
        converted = to_anthropic([{"role": "user", "content": parts}]).messages
        assert converted[0]["content"] == [
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                "detail": "high",
            },
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "image", "source": {"type": "url", "url": "data:text/plain,hi"}},
            parts[3],
            parts[4],
        ]
        assert from_anthropic(converted) == [{"role": "user", "content": parts}]

    @pytest.mark.parametrize(
        ("arguments", "tool_input", "noted"),
        [
            ('{"command":"ls"}', {"command": "ls"}, False),
            ('{"command":"ü"}', {"command": "ü"}, False),
            ('{"command": "ls"}', {"command": "ls"}, True),
            ('{"a":1,"a":2}', {"a": 2}, True),
            ('{"command": "ls"', {}, True),
            ("[1, 2]", {}, True),
            ("", {}, True),
            ('{"a":NaN}', {}, True),
            ('{"a":1e400}', {}, True),
        ],
    )
    def test_arguments(self, arguments: str, tool_input: Any, noted: bool) -> None:
        """Arguments are parsed; the raw string is noted when the input does not print back to it."""
        items = [{"role": "user", "content": "go"}, call("c1", arguments), output("c1")]
        block = to_anthropic(items).messages[1]["content"][0]
        assert block["input"] == tool_input
        assert block.get("responses_arguments") == (arguments if noted else None)
        assert from_anthropic(to_anthropic(items).messages) == items

    def test_output_types_are_kept_for_any_call_id(self) -> None:
        """A function_call_output for a custom call's id is noted, so it comes back as it was."""
        items = [{"role": "user", "content": "go"}, custom("c1"), output("c1"), custom_output("c9")]
        converted = to_anthropic(items).messages
        assert converted[2]["content"][0]["responses_custom"] is False
        assert converted[2]["content"][1]["responses_custom"] is True
        assert from_anthropic(converted) == items

    def test_unknown_keys_travel(self) -> None:
        """Keys the conversion does not translate ride on the dict the item or part becomes."""
        items = [
            {
                "type": "message",
                "role": "user",
                "content": "go",
                "id": "msg_u",
                "status": "completed",
            },
            call("c1", namespace="tools", caller={"type": "direct"}),
            output(
                "c1",
                [
                    {
                        "type": "input_text",
                        "text": "x",
                        "prompt_cache_breakpoint": {"mode": "explicit"},
                    }
                ],
            ),
        ]
        converted = to_anthropic(items).messages
        assert converted[0] == {
            "role": "user",
            "content": "go",
            "type": "message",
            "id": "msg_u",
            "status": "completed",
        }
        assert converted[1]["content"][0]["namespace"] == "tools"
        assert converted[2]["content"][0]["content"][0]["prompt_cache_breakpoint"] == {
            "mode": "explicit"
        }
        assert from_anthropic(converted) == items

    def test_consecutive_user_messages_stay_separate(self) -> None:
        """Two user messages in a row stay two messages; validate_messages reports them."""
        items = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        converted = to_anthropic(items).messages
        assert converted == items
        assert [v.rule for v in validate_messages(converted)] == ["same-role-twice"]

    def test_no_items(self) -> None:
        """No items give no system and no messages."""
        assert to_anthropic([]) == AnthropicConversation(None, [])

    def test_note_keys(self) -> None:
        """NOTE_KEYS names every key the conversion adds."""
        assert {
            "responses_before",
            "responses_after",
            "responses_message",
            "responses_string",
            "responses_item_id",
            "responses_arguments",
            "responses_custom",
        } == NOTE_KEYS


class TestFromAnthropic:
    """What Anthropic constructs without notes become (histories windowkeeper changed)."""

    def test_interleaved_text_and_tool_use(self) -> None:
        """Each run of text blocks is one message item; tool_use blocks are function calls."""
        content = [text("a"), use("x"), text("b"), text("c")]
        back = from_anthropic([{"role": "assistant", "content": content}])
        assert back == [
            reply("a"),
            call("x"),
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "b"},
                    {"type": "output_text", "text": "c"},
                ],
            },
        ]

    def test_string_content(self) -> None:
        """String content becomes an easy input message of its role."""
        back = from_anthropic(
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        )
        assert back == [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
        ]

    def test_tool_result_details(self) -> None:
        """``is_error`` stays on the output; a missing content becomes ``""``."""
        content = [result("a", is_error=True), {"type": "tool_result", "tool_use_id": "b"}]
        assert from_anthropic([{"role": "user", "content": content}]) == [
            output("a", is_error=True),
            output("b", ""),
        ]

    def test_keys_of_a_results_only_message_go_to_each_output(self) -> None:
        """A message of tool_results only has no user message, so its keys go on each output."""
        back = from_anthropic([{"role": "user", "content": [result("a"), result("b")], "ts": 5}])
        assert [item["ts"] for item in back] == [5, 5]

    def test_placeholders_for_custom_calls_are_custom_outputs(self) -> None:
        """A note-free tool_result for a custom call's id comes back as a custom output."""
        items = [{"role": "user", "content": "go"}, custom("c1"), call("c2")]
        messages = [
            *to_anthropic(items).messages,
            {
                "role": "user",
                "content": [result("c1", RESULT_MISSING), result("c2", RESULT_MISSING)],
            },
        ]
        back = from_anthropic(messages)
        assert back[-2:] == [custom_output("c1", RESULT_MISSING), output("c2", RESULT_MISSING)]
        assert validate_responses(back) == []

    def test_changed_input_wins_over_the_noted_arguments(self) -> None:
        """When the input was edited after conversion, the arguments are printed from it."""
        block = use("c1", {"command": "pwd"}, responses_arguments='{"command": "ls"}')
        back = from_anthropic([{"role": "assistant", "content": [block]}])
        assert back[0]["arguments"] == '{"command":"pwd"}'

    def test_edited_custom_input(self) -> None:
        """A custom call's input other than ``{"input": <str>}`` is sent as its JSON text."""
        block = use("c1", {"input": 3}, responses_custom=True)
        back = from_anthropic([{"role": "assistant", "content": [block]}])
        assert back[0]["input"] == '{"input":3}'

    def test_system_parameter(self) -> None:
        """``system`` becomes the first message, as a string or as input_text parts."""
        messages = [{"role": "user", "content": "hi"}]
        assert from_anthropic(messages, system="Be brief.")[0] == {
            "role": "system",
            "content": "Be brief.",
        }
        blocks = [text("Be brief.")]
        assert from_anthropic(messages, system=blocks)[0] == {
            "role": "system",
            "content": [{"type": "input_text", "text": "Be brief."}],
        }

    def test_other_blocks_pass_through(self) -> None:
        """Blocks of other types are carried as parts, for the wire shape to judge."""
        thinking = {"type": "thinking", "thinking": "hm", "signature": "c2ln"}
        back = from_anthropic([{"role": "assistant", "content": [thinking, use("a")]}])
        assert back[0] == {"type": "message", "role": "assistant", "content": [thinking]}

    @pytest.mark.parametrize(
        ("message", "path"),
        [
            ({"role": "user", "content": [use("a")]}, "messages[0].content[0]"),
            ({"role": "assistant", "content": [result("a")]}, "messages[0].content[0]"),
            (
                {"role": "user", "content": [{"type": "image", "source": {"type": "file"}}]},
                "messages[0].content[0].source",
            ),
            ({"role": "assistant", "content": [use("a", [1])]}, "messages[0].content[0].input"),
            (
                {"role": "assistant", "content": [use("a", {"x": float("nan")})]},
                "messages[0].content[0].input",
            ),
            (
                {"role": "user", "content": "x", "responses_before": 3},
                "messages[0].responses_before",
            ),
            ({"role": "system", "content": "x"}, "messages[0].role"),
        ],
    )
    def test_malformed_anthropic_input(self, message: Item, path: str) -> None:
        """from_anthropic names the place."""
        with pytest.raises(MalformedMessageError) as caught:
            from_anthropic([message])
        assert caught.value.path == path


class TestErrors:
    """Input outside the supported subset raises MalformedMessageError naming the place."""

    @pytest.mark.parametrize(
        ("item", "path"),
        [
            ({"type": "item_reference", "id": "ws_1"}, "input[1].type"),
            ({"content": "x"}, "input[1].type"),
            ({"role": "tool", "content": "x"}, "input[1].role"),
            ({"type": "function_call", "name": "a", "arguments": "{}"}, "input[1].call_id"),
            (call("c1", {}), "input[1].arguments"),
            ({**call("c1"), "name": None}, "input[1].name"),
            ({**call("c1"), "input": {}}, "input[1].input"),
            ({**custom("c1"), "input": {"a": 1}}, "input[1].input"),
            ({"type": "function_call_output", "call_id": "c1"}, "input[1].output"),
            (output("c1", 3), "input[1].output"),
            (output("c1", [{"type": "output_text", "text": "x"}]), "input[1].output[0].type"),
            (
                {"role": "user", "content": [{"type": "output_text", "text": "x"}]},
                "input[1].content[0].type",
            ),
            (
                {"role": "user", "content": [{"type": "text", "text": "x"}]},
                "input[1].content[0].type",
            ),
            ({"role": "user", "content": ["x"]}, "input[1].content[0]"),
            (
                {"role": "user", "content": [{"type": "input_text", "text": 3}]},
                "input[1].content[0].text",
            ),
            (
                {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]},
                "input[1].content[0].type",
            ),
            ({"role": "assistant", "content": []}, "input[1].content"),
            ({"role": "assistant"}, "input[1].content"),
            ({"role": "user", "content": 3}, "input[1].content"),
            (
                {"role": "developer", "content": [{"type": "input_image", "image_url": "x"}]},
                "input[1].content[0]",
            ),
            ({"role": "user", "content": "x", "responses_before": []}, "input[1].responses_before"),
            ({**call("c1"), "responses_custom": True}, "input[1].responses_custom"),
            ("hello", "input[1]"),
            ({"type": ["message"], "role": "user", "content": "x"}, "input[1].type"),
            ({"role": ["user"], "content": "x"}, "input[1].role"),
        ],
    )
    def test_malformed_responses_input(self, item: Any, path: str) -> None:
        """The error's path names the offending value."""
        with pytest.raises(MalformedMessageError) as caught:
            to_anthropic([{"role": "user", "content": "go"}, item])
        assert caught.value.path == path

    @given(json_items)
    def test_what_is_accepted_comes_back(self, items: list[Any]) -> None:
        """Whatever it is given, to_anthropic raises MalformedMessageError or converts it
        losslessly (the canonical lists are all it accepts, but for carried items only)."""
        try:
            converted = to_anthropic(items)
        except MalformedMessageError:
            return
        if converted.messages:
            assert from_anthropic(converted.messages) == items

    def test_not_a_list(self) -> None:
        """A non-list is refused with the list's name."""
        with pytest.raises(MalformedMessageError, match=r"^history: "):
            to_anthropic("hi", name="history")


class TestValidateResponses:
    """validate_responses: the Responses API's pairing rules and the supported shapes."""

    def test_a_valid_input(self) -> None:
        """A turn with reasoning, parallel and custom calls passes."""
        assert validate_responses(TURN) == []

    def test_outputs_are_paired_by_call_id_not_position(self) -> None:
        """Other items may stand between a call and its output; the Anthropic form is stricter."""
        items = [
            {"role": "user", "content": "go"},
            call("a"),
            {"role": "developer", "content": "note"},
            {"role": "user", "content": "still there?"},
            output("a"),
        ]
        assert validate_responses(items) == []
        rules = [v.rule for v in validate_messages(to_anthropic(items).messages)]
        assert TOOL_USE_UNANSWERED in rules

    def test_unanswered_call(self) -> None:
        """A call no output answers is named by its place, in item order."""
        items = [{"role": "user", "content": "go"}, call("a"), call("b"), output("a"), reply("x")]
        assert validate_responses(items) == [
            Violation("input[2]", TOOL_USE_UNANSWERED, "no function_call_output answers 'b'")
        ]

    def test_outputs_answering_nothing(self) -> None:
        """An output before its call, a second one, and one of the other type answer nothing."""
        items = [
            {"role": "user", "content": "go"},
            output("a"),
            call("a"),
            output("a"),
            output("a"),
            custom("b"),
            output("b"),
        ]
        assert validate_responses(items) == [
            Violation("input[1]", TOOL_RESULT_UNKNOWN, "no call with call_id 'a' before it"),
            Violation("input[4]", TOOL_RESULT_UNKNOWN, "'a' is answered a second time"),
            Violation("input[5]", TOOL_USE_UNANSWERED, "no custom_tool_call_output answers 'b'"),
            Violation(
                "input[6]", TOOL_RESULT_UNKNOWN, "'b' is a custom_tool_call, not a function_call"
            ),
        ]

    def test_duplicate_call_ids(self) -> None:
        """Two calls with one call_id are reported at the second."""
        items = [{"role": "user", "content": "go"}, call("a"), custom("a"), output("a")]
        assert validate_responses(items) == [
            Violation(
                "input[2].call_id",
                DUPLICATE_TOOL_USE_ID,
                "call_id 'a' is already used at input[1]",
            )
        ]

    def test_malformed(self) -> None:
        """Unknown types and roles, wrong content and parts, and missing fields are reported."""
        items = [
            {"type": "item_reference", "id": "x"},
            {"role": "tool", "content": "x"},
            {"role": "user", "content": None},
            {"role": "user", "content": [{"type": "output_text", "text": "x"}, "y"]},
            {"role": "assistant", "content": [{"type": "input_text", "text": "x"}]},
            {"type": "function_call", "name": "a", "arguments": "{}"},
            {"type": "function_call", "call_id": "c", "name": "a", "arguments": {}},
            {"type": "custom_tool_call", "call_id": "d", "name": "a"},
            output("c", [{"type": "refusal", "refusal": "no"}]),
            {"type": "reasoning", "id": "rs_1"},
            {"type": "compaction"},
            3,
            custom_output("d", None),
        ]
        assert [(v.path, v.rule) for v in validate_responses(items)] == [
            ("input[0].type", MALFORMED),
            ("input[1].role", MALFORMED),
            ("input[2].content", MALFORMED),
            ("input[3].content[0]", MALFORMED),
            ("input[3].content[1]", MALFORMED),
            ("input[4].content[0]", MALFORMED),
            ("input[5].call_id", MALFORMED),
            ("input[6].arguments", MALFORMED),
            ("input[7].input", MALFORMED),
            ("input[8].output[0]", MALFORMED),
            ("input[9].summary", MALFORMED),
            ("input[10].encrypted_content", MALFORMED),
            ("input[11]", MALFORMED),
            ("input[12].output", MALFORMED),
        ]
        assert validate_responses("x") == [
            Violation("input", MALFORMED, "not a list of input items")
        ]

    @given(json_items)
    def test_never_raises(self, items: list[Any]) -> None:
        """Whatever it is given, it reports."""
        assert isinstance(validate_responses(items), list)

    @given(broken_responses_inputs())
    def test_pairing_is_found_where_it_breaks(self, items: list[Item]) -> None:
        """A broken input with no pairing violation has every call answered after it, once."""
        if any(v.rule in PAIRING_RULES for v in validate_responses(items)):
            return
        calls = [
            item["call_id"]
            for item in items
            if item.get("type") in {"function_call", "custom_tool_call"}
        ]
        outputs = [item["call_id"] for item in items if str(item.get("type")).endswith("_output")]
        assert sorted(calls) == sorted(outputs)
        assert len(set(calls)) == len(calls)


# -- the wire shape --------------------------------------------------------------------------

_WRAPPERS = {
    typing.Required,
    typing.NotRequired,
    typing_extensions.Required,
    typing_extensions.NotRequired,
}


def _unwrap(hint: Any) -> Any:
    while get_origin(hint) in _WRAPPERS:
        hint = get_args(hint)[0]
    return hint


def _literals(hint: Any) -> set[Any]:
    hint = _unwrap(hint)
    if get_origin(hint) is Literal:
        return set(get_args(hint))
    if get_origin(hint) is Union:
        return {value for member in get_args(hint) for value in _literals(member)}
    return set()


def _sdk_item_keys() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """From the SDK's ``ResponseInputItemParam``: type -> keys, and message role -> keys."""
    from openai.types.responses import ResponseInputItemParam

    by_type: dict[str, set[str]] = {}
    by_role: dict[str, set[str]] = {}
    for member in get_args(ResponseInputItemParam):
        hints = typing.get_type_hints(member, include_extras=True)
        for kind in _literals(hints["type"]):
            by_type.setdefault(kind, set()).update(hints)
            if kind == "message":
                for role in _literals(hints["role"]):
                    by_role.setdefault(role, set()).update(hints)
    return by_type, by_role


def _sdk_part_keys() -> dict[str, set[str]]:
    """Part type -> the keys every SDK type of that part defines (message and output parts)."""
    from openai.types import responses

    members = {
        "input_text": (responses.ResponseInputTextParam, responses.ResponseInputTextContentParam),
        "input_image": (
            responses.ResponseInputImageParam,
            responses.ResponseInputImageContentParam,
        ),
        "input_file": (responses.ResponseInputFileParam, responses.ResponseInputFileContentParam),
        "output_text": (responses.ResponseOutputTextParam,),
        "refusal": (responses.ResponseOutputRefusalParam,),
    }
    keys = {}
    for kind, types in members.items():
        sets = [set(typing.get_type_hints(member)) for member in types]
        keys[kind] = set.intersection(*sets)
    return keys


def _sdk_violations(items: list[Item]) -> list[str]:
    """Keys of ``items`` and their parts that the SDK's types do not define."""
    by_type, by_role = _sdk_item_keys()
    parts = _sdk_part_keys()
    found = []
    for index, item in enumerate(items):
        kind = item.get("type", "message")
        allowed = by_role[item["role"]] if kind == "message" else by_type[kind]
        found += [f"[{index}].{key}" for key in item if key not in allowed]
        content = item.get("content") if kind == "message" else item.get("output")
        for position, part in enumerate(content if isinstance(content, list) else []):
            known = parts.get(part.get("type"), set())
            found += [f"[{index}][{position}].{key}" for key in part if key not in known]
    return found


class TestWire:
    """responses_wire keeps what the Responses API takes, checked against the SDK's own types."""

    def test_key_tables_are_in_the_sdk(self) -> None:
        """Every key the tables keep is defined by the SDK's request types for that type."""
        by_type, by_role = _sdk_item_keys()
        for kind, keys in RESPONSES_ITEM_KEYS.items():
            assert keys <= by_type[kind], kind
        for role, keys in RESPONSES_MESSAGE_KEYS.items():
            assert keys <= by_role[role], role
        for kind, keys in RESPONSES_PART_KEYS.items():
            assert keys <= _sdk_part_keys()[kind], kind

    @given(anthropic_conversations())
    def test_converted_histories_use_sdk_keys_only(self, messages: list[Item]) -> None:
        """What from_anthropic makes of a plain history needs no repair and has SDK keys only."""
        items = from_anthropic(messages)
        shaped, repairs = responses_wire(items)
        assert repairs == []
        # is_error has no place in a Responses output: it travels in the history only
        assert shaped == [
            {key: v for key, v in item.items() if key != "is_error"} for item in items
        ]
        assert _sdk_violations(shaped) == []

    @given(responses_inputs())
    def test_generated_inputs_pass_unchanged(self, items: list[Item]) -> None:
        """A canonical input of SDK-defined keys comes through the wire shape as it is."""
        assert _sdk_violations(items) == []
        assert responses_wire(from_anthropic(to_anthropic(items).messages)) == (items, [])

    @given(responses_inputs())
    def test_the_sdk_request_types_accept_the_wire_shape(self, items: list[Item]) -> None:
        """The SDK's request types, read by the API doubles, accept each item.

        Two documented gaps remain, where the SDK types are stricter than the API: an
        ``input_image`` may leave out ``detail`` (the API defaults it to ``auto``), and an
        assistant message with parts sent back without its ``id`` and ``status`` (as Codex
        does; or without ``type``), or whose parts have no ``annotations``, matches no SDK
        type; it is checked against ``ResponseOutputMessageParam`` for everything else.
        """
        from openai.types.responses import ResponseInputItemParam, ResponseOutputMessageParam

        shaped, _ = responses_wire(items)
        for item in shaped:
            if item.get("role") == "assistant" and isinstance(item["content"], list):
                issues = check_shape(item, ResponseOutputMessageParam)
                lenient = {("id",), ("status",), ("type",), ("annotations",)}
            else:
                issues = check_shape(item, ResponseInputItemParam)
                lenient = {("detail",)}
            strict = [
                issue
                for issue in issues
                if issue.kind != "missing" or tuple(issue.path[-1:]) not in lenient
            ]
            assert strict == [], item

    def test_unknown_keys_are_dropped(self) -> None:
        """Notes, storage keys and None values are left out; parts keep their own keys."""
        items = [
            {"role": "user", "content": [{"type": "input_text", "text": "go", "ts": 1}], "ts": 1},
            {**call("a"), "status": None, "responses_custom": False},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "s", "extra": 1}],
                "encrypted_content": None,
            },
            output("a", "done"),
        ]
        assert responses_wire(items) == (
            [
                {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
                call("a"),
                {
                    "type": "reasoning",
                    "id": "rs_1",
                    "summary": [{"type": "summary_text", "text": "s"}],
                },
                output("a", "done"),
            ],
            [],
        )

    def test_what_the_api_does_not_take_is_dropped_and_reported(self) -> None:
        """Unknown items and parts are dropped; a list emptied so gets the notice."""
        items = [
            {"type": "item_reference", "id": "ws_1"},
            {"role": "tool", "content": "x"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
            {
                "role": "user",
                "content": [
                    {"type": "output_text", "text": "x"},
                    {"type": "input_text", "text": "y"},
                ],
            },
            output("a", [{"type": "image", "source": {}}]),
            "junk",
        ]
        shaped, repairs = responses_wire(items, name="history")
        assert shaped == [
            {
                "role": "assistant",
                "content": [{"type": "output_text", "text": EMPTY_MESSAGE_NOTICE}],
            },
            {"role": "user", "content": [{"type": "input_text", "text": "y"}]},
            output("a", EMPTY_MESSAGE_NOTICE),
        ]
        assert repairs == [
            Repair("history[0]", "dropped: item type 'item_reference' is not supported"),
            Repair("history[1]", "dropped: a message with role 'tool'"),
            Repair(
                "history[2].content[0]",
                "dropped: a 'thinking' part cannot be in an assistant message",
            ),
            Repair("history[2].content", "empty: replaced by a notice"),
            Repair(
                "history[3].content[0]", "dropped: a 'output_text' part cannot be in a user message"
            ),
            Repair("history[4].output[0]", "dropped: a 'image' part cannot be in a tool output"),
            Repair("history[4].output", "empty: replaced by a notice"),
            Repair("history[5]", "dropped: not an input item"),
        ]

    @given(json_items)
    def test_never_raises(self, items: list[Any]) -> None:
        """Whatever it is given, the wire shape drops what it cannot send and reports it."""
        shaped, repairs = responses_wire(items)
        assert len(shaped) <= len(items)
        assert all(isinstance(repair, Repair) for repair in repairs)

    def test_shaping_copies(self) -> None:
        """Items, content lists and parts are new objects: changing them changes nothing sent."""
        item = {"role": "user", "content": [{"type": "input_text", "text": "go"}]}
        repairs: list[Repair] = []
        shaped = responses_item(item, "input[0]", repairs)
        assert shaped == item
        assert shaped is not None
        assert shaped is not item
        assert shaped["content"] is not item["content"]
        assert shaped["content"][0] is not item["content"][0]
        assert repairs == []
