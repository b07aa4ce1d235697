"""The doubles themselves: each rule refuses what it should, a valid conversation passes.

Most rules are shown with ``check(body)`` (no HTTP, fast); the plumbing (the SDKs' error
classes, response parsing, sync and async clients) is shown through the real SDKs.
"""

from __future__ import annotations

import ast
import asyncio
import copy
import json
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import anthropic
import openai
import pytest

from . import (
    CODING_TOOLS,
    IMAGE_TOKENS,
    OPENAI_CODING_TOOLS,
    AnthropicDouble,
    CodingAgent,
    OpenAIDouble,
    Reply,
    TokenCount,
    ToolCall,
    anthropic_api,
    make_anthropic_double,  # noqa: F401 - a fixture, used by name
    openai_api,
)
from ._server import _flatten_union, _is_object_type, _unwrap, digest, object_fields

MODEL = "claude-sonnet-4-5"
AGENT = CodingAgent(turns=3)

# --------------------------------------------------------------------------------------------
# Bodies
# --------------------------------------------------------------------------------------------


def _tool_use(id_: str, path: str = "a.py") -> dict[str, Any]:
    return {"type": "tool_use", "id": id_, "name": "read_file", "input": {"path": path}}


def _result(id_: str, content: str = "text of the file") -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id_, "content": content}


def anthropic_body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A valid request around ``messages`` (a one-turn task when none is given)."""
    body = {
        "model": MODEL,
        "max_tokens": 1_000,
        "system": "You are a careful coding agent.",
        "tools": CODING_TOOLS,
        "messages": list(messages) or [{"role": "user", "content": "Fix the bug."}],
    }
    return {**body, **extra}


TOOL_LOOP = (
    {"role": "user", "content": "Fix the bug."},
    {"role": "assistant", "content": [{"type": "text", "text": "Reading."}, _tool_use("toolu_1")]},
    {"role": "user", "content": [_result("toolu_1"), {"type": "text", "text": "go on"}]},
)


def _with(messages: Sequence[dict[str, Any]], index: int, **changes: Any) -> list[Any]:
    edited = copy.deepcopy(list(messages))
    edited[index] = {**edited[index], **changes}
    return edited


def openai_body(*messages: dict[str, Any], **extra: Any) -> dict[str, Any]:
    body = {
        "model": "gpt-5",
        "tools": OPENAI_CODING_TOOLS,
        "messages": list(messages) or [{"role": "user", "content": "Fix the bug."}],
    }
    return {**body, **extra}


def _call(id_: str) -> dict[str, Any]:
    return {
        "id": id_,
        "type": "function",
        "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
    }


OPENAI_LOOP = (
    {"role": "system", "content": "You are a careful coding agent."},
    {"role": "user", "content": "Fix the bug."},
    {"role": "assistant", "content": None, "tool_calls": [_call("call_1"), _call("call_2")]},
    {"role": "tool", "tool_call_id": "call_2", "content": "b"},
    {"role": "tool", "tool_call_id": "call_1", "content": "a"},
    {"role": "user", "content": "go on"},
)


# --------------------------------------------------------------------------------------------
# Independence and introspection
# --------------------------------------------------------------------------------------------


def test_the_doubles_do_not_import_windowkeeper() -> None:
    for source in Path(__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            else:
                continue
            assert not any(n.split(".")[0] == "windowkeeper" for n in names), source.name


@pytest.mark.parametrize("request_type", [anthropic_api.REQUEST_TYPE, openai_api.REQUEST_TYPE])
def test_every_request_type_the_sdk_defines_is_introspectable(request_type: Any) -> None:
    """Every object type reachable from the request params resolves to named fields."""
    seen: set[Any] = set()
    todo = [request_type]
    while todo:
        tp = _unwrap(todo.pop())
        for member in _flatten_union(tp):
            if _is_object_type(member):
                if member in seen:
                    continue
                seen.add(member)
                fields = object_fields(member)
                assert fields, member
                todo.extend(hint for hint, _ in fields.values())
            else:
                todo.extend(typing.get_args(member))
    assert len(seen) > 20


def test_required_keys_come_from_the_sdk_hints() -> None:
    fields = object_fields(anthropic.types.ToolResultBlockParam)
    assert fields["tool_use_id"][1]
    assert fields["type"][1]
    assert not fields["content"][1]
    assert not fields["is_error"][1]


def test_the_token_count_is_the_documented_rule() -> None:
    count = TokenCount()
    assert count("abcdefg") == 3  # '"abcdefg"' is 9 bytes; ceil(9 / 3.5)
    assert count({"a": "é"}) == 3  # '{"a":"é"}' is 10 bytes (é is 2)
    assert count(None) == 0
    marked = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}
    assert count(marked) == count({"type": "text", "text": "x"})
    image = {"type": "base64", "media_type": "image/png", "data": "A" * 100_000}
    empty = len('{"type":"base64","media_type":"image/png","data":""}')
    assert count(image) == -(-empty * 2 // 7) + IMAGE_TOKENS
    signed = {"type": "thinking", "thinking": "hmm", "signature": "S" * 10_000}
    assert count(signed) == count({"type": "thinking", "thinking": "hmm"})
    assert digest(signed) != digest({**signed, "signature": "T" * 10_000})
    text = {"type": "text", "text": "hmm", "signature": "S" * 70}
    assert count(text) == 33  # 113 bytes: only a thinking block's signature is left out


# --------------------------------------------------------------------------------------------
# Anthropic: rules, without HTTP
# --------------------------------------------------------------------------------------------

ANTHROPIC_REJECTS = {
    "extra field on a message": (
        anthropic_body({"role": "user", "content": "hi", "ts": 1}),
        "messages.0.ts: Extra inputs are not permitted",
    ),
    "extra field on a block": (
        anthropic_body(*_with(TOOL_LOOP, 1, content=[{**_tool_use("toolu_1"), "ts": 1}])),
        "messages.1.content.0.tool_use.ts: Extra inputs are not permitted",
    ),
    "extra top-level field": (anthropic_body(temperature=0.5), "temperature: Extra inputs"),
    "unknown block type": (
        anthropic_body({"role": "user", "content": [{"type": "reasoning", "text": "x"}]}),
        "Input tag 'reasoning' found using 'type' does not match",
    ),
    "missing field": (
        anthropic_body({"role": "user", "content": [{"type": "text"}]}),
        "messages.0.content.0.text.text: Field required",
    ),
    "max_tokens missing": (
        {k: v for k, v in anthropic_body().items() if k != "max_tokens"},
        "max_tokens: Field required",
    ),
    "max_tokens zero": (anthropic_body(max_tokens=0), "max_tokens: Input should be greater"),
    "system not text": (anthropic_body(system=[{"type": "image"}]), "system.0"),
    "no messages": (anthropic_body(messages=[]), "at least one message is required"),
    "first message from the assistant": (
        anthropic_body({"role": "assistant", "content": "hi"}),
        'first message must use the "user" role',
    ),
    "two user messages in a row": (
        anthropic_body({"role": "user", "content": "a"}, {"role": "user", "content": "b"}),
        'found multiple "user" roles in a row',
    ),
    "system message in messages": (
        anthropic_body({"role": "system", "content": "x"}, {"role": "user", "content": "a"}),
        "top-level `system` parameter",
    ),
    "empty string content": (anthropic_body({"role": "user", "content": ""}), "non-empty content"),
    "empty content list": (anthropic_body({"role": "user", "content": []}), "non-empty content"),
    "empty text block": (
        anthropic_body({"role": "user", "content": [{"type": "text", "text": ""}]}),
        "messages.0.content.0: text content blocks must be non-empty",
    ),
    "whitespace text block": (
        anthropic_body({"role": "user", "content": [{"type": "text", "text": " \n"}]}),
        "must contain non-whitespace text",
    ),
    "empty text inside a tool_result": (
        anthropic_body(
            *_with(
                TOOL_LOOP,
                2,
                content=[{**_result("toolu_1"), "content": [{"type": "text", "text": ""}]}],
            )
        ),
        "messages.2.content.0.content.0: text content blocks must be non-empty",
    ),
    "empty system text block": (
        anthropic_body(system=[{"type": "text", "text": ""}]),
        "system.0: text content blocks must be non-empty",
    ),
    "empty prefill": (
        anthropic_body({"role": "user", "content": "a"}, {"role": "assistant", "content": []}),
        "final assistant message (a prefill) must not be empty",
    ),
    "prefill ending in whitespace": (
        anthropic_body({"role": "user", "content": "a"}, {"role": "assistant", "content": "b "}),
        "cannot end with trailing whitespace",
    ),
    "tool_use without its result": (
        anthropic_body(*_with(TOOL_LOOP, 2, content="go on")),
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1",
    ),
    "tool_use left at the end": (
        anthropic_body(*TOOL_LOOP[:2]),
        "`tool_use` ids were found without `tool_result` blocks",
    ),
    "tool_result after text": (
        anthropic_body(
            *_with(TOOL_LOOP, 2, content=[{"type": "text", "text": "x"}, _result("toolu_1")])
        ),
        "`tool_result` blocks must come first",
    ),
    "tool_result answering nothing": (
        anthropic_body(
            *TOOL_LOOP,
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": [_result("toolu_1")]},
        ),
        "messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_1",
    ),
    "two results for one tool_use": (
        anthropic_body(*_with(TOOL_LOOP, 2, content=[_result("toolu_1"), _result("toolu_1")])),
        "Found multiple `tool_result` blocks with id: toolu_1",
    ),
    "duplicate tool_use ids": (
        anthropic_body(
            *TOOL_LOOP,
            {"role": "assistant", "content": [_tool_use("toolu_1")]},
            {"role": "user", "content": [_result("toolu_1")]},
        ),
        "messages.3.content.0: `tool_use` ids must be unique",
    ),
    "tool_use id with a bad character": (
        anthropic_body(
            *_with(
                _with(TOOL_LOOP, 1, content=[_tool_use("toolu 1")]), 2, content=[_result("toolu 1")]
            )
        ),
        "messages.1.content.0.tool_use.id: String should match pattern",
    ),
    "tool_use in a user message": (
        anthropic_body({"role": "user", "content": [_tool_use("toolu_9")]}),
        "`tool_use` blocks can only be in `assistant` messages",
    ),
    "tool blocks without tools": (
        {k: v for k, v in anthropic_body(*TOOL_LOOP).items() if k != "tools"},
        "must define tools",
    ),
    "duplicate tool names": (anthropic_body(tools=CODING_TOOLS * 2), "Tool names must be unique"),
    "tool_choice naming no tool": (
        anthropic_body(tool_choice={"type": "tool", "name": "write_file"}),
        "Tool 'write_file' not found",
    ),
    "five cache breakpoints": (
        anthropic_body(
            system=[
                {"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}}
                for i in range(5)
            ]
        ),
        "A maximum of 4 blocks with cache_control may be provided. Found 5.",
    ),
    "thinking block never issued": (
        anthropic_body(
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "forged"},
                    {"type": "text", "text": "b"},
                ],
            },
            {"role": "user", "content": "c"},
        ),
        "messages.1.content.0: Invalid `signature` in `thinking` block",
    ),
    "redacted thinking never issued": (
        anthropic_body(
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"}]},
            {"role": "user", "content": "c"},
        ),
        "Invalid `data` in `redacted_thinking` block",
    ),
    "stream": (anthropic_body(stream=True), "does not stream"),
    "budget below 1024": (
        anthropic_body(thinking={"type": "enabled", "budget_tokens": 500}),
        "budget_tokens: Input should be greater than or equal to 1024",
    ),
    "budget not below max_tokens": (
        anthropic_body(thinking={"type": "enabled", "budget_tokens": 2_000}, max_tokens=2_000),
        "`max_tokens` must be greater than `thinking.budget_tokens`",
    ),
}


@pytest.mark.parametrize(("body", "expected"), ANTHROPIC_REJECTS.values(), ids=ANTHROPIC_REJECTS)
def test_anthropic_rejects(body: dict[str, Any], expected: str) -> None:
    problems = AnthropicDouble(window=100_000).check(body)
    assert any(expected in p for p in problems), problems


ANTHROPIC_ACCEPTS = {
    "one user message": anthropic_body(),
    "a tool loop, result then text": anthropic_body(*TOOL_LOOP),
    "a prefill": anthropic_body(
        {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}
    ),
    "no system, no tools": {
        "model": MODEL,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "a"}],
    },
    "a system of text blocks with markers": anthropic_body(
        system=[{"type": "text", "text": "s", "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    ),
    "an empty tool_result (allowed)": anthropic_body(
        *_with(TOOL_LOOP, 2, content=[_result("toolu_1", "")])
    ),
    "an image": anthropic_body(
        {
            "role": "user",
            "content": [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
                },
                {"type": "text", "text": "what is this?"},
            ],
        }
    ),
    "dumped SDK response blocks (caller: null, citations: null)": anthropic_body(
        *_with(
            TOOL_LOOP,
            1,
            content=[
                {"type": "text", "text": "Reading.", "citations": None},
                {**_tool_use("toolu_1"), "caller": None, "toolset_name": None},
            ],
        )
    ),
}


@pytest.mark.parametrize("body", ANTHROPIC_ACCEPTS.values(), ids=ANTHROPIC_ACCEPTS)
def test_anthropic_accepts(body: dict[str, Any]) -> None:
    assert AnthropicDouble(window=100_000).check(body) == []


def test_anthropic_thinking_must_be_as_issued_and_first() -> None:
    api = AnthropicDouble(window=100_000)
    issued = api.issue_thinking("Let me think.")
    redacted = api.issue_redacted_thinking()

    def body(*blocks: dict[str, Any]) -> dict[str, Any]:
        return anthropic_body(
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": list(blocks)},
            {"role": "user", "content": "b"},
        )

    text = {"type": "text", "text": "Done."}
    assert api.check(body(issued, redacted, text)) == []
    one_byte_off = {**issued, "thinking": "Let me think!"}
    assert "Invalid `signature`" in api.check(body(one_byte_off, text))[0]
    resigned = {**issued, "signature": issued["signature"][:-2] + "AA"}
    assert "Invalid `signature`" in api.check(body(resigned, text))[0]
    assert "must come first" in api.check(body(text, issued))[0]
    in_user = anthropic_body({"role": "user", "content": [issued, {"type": "text", "text": "x"}]})
    assert "can only be in `assistant` messages" in api.check(in_user)[0]


def test_anthropic_enabled_thinking_needs_thinking_in_the_open_tool_loop() -> None:
    api = AnthropicDouble(window=100_000)
    thinking = {"type": "enabled", "budget_tokens": 1_024}
    bare = anthropic_body(*TOOL_LOOP, thinking=thinking, max_tokens=2_000)
    assert "must start with a thinking block" in api.check(bare)[0]
    messages = _with(TOOL_LOOP, 1, content=[api.issue_thinking("t"), _tool_use("toolu_1")])
    assert api.check(anthropic_body(*messages, thinking=thinking, max_tokens=2_000)) == []


def test_anthropic_window_counts_input_and_max_tokens() -> None:
    api = AnthropicDouble(window=1_000)
    body = anthropic_body(max_tokens=100)
    size = api.input_tokens(body)
    assert api.check(body) == []
    assert api.check({**body, "max_tokens": 1_000 - size}) == []
    over_sum = api.check({**body, "max_tokens": 1_001 - size})
    assert over_sum == [
        f"input length and `max_tokens` exceed context limit: {size} + {1_001 - size} > 1000, "
        "decrease input length or `max_tokens` and try again"
    ]
    big = anthropic_body({"role": "user", "content": "x" * 4_000})
    assert api.check(big) == [f"prompt is too long: {api.input_tokens(big)} tokens > 1000 maximum"]


# --------------------------------------------------------------------------------------------
# Anthropic: through the SDK
# --------------------------------------------------------------------------------------------


def _anthropic_loop(client: anthropic.Anthropic, **extra: Any) -> list[Any]:
    messages: list[Any] = [{"role": "user", "content": "Fix the bug."}]
    replies = []
    for _ in range(6):
        reply = client.messages.create(
            model=MODEL,
            max_tokens=2_000,
            system="You are a careful coding agent.",
            tools=CODING_TOOLS,
            messages=messages,
            **extra,
        )
        replies.append(reply)
        messages.append({"role": "assistant", "content": [b.model_dump() for b in reply.content]})
        if reply.stop_reason != "tool_use":
            return replies
        results = [
            {"type": "tool_result", "tool_use_id": b.id, "content": AGENT.run_tool(b.name, b.input)}
            for b in reply.content
            if b.type == "tool_use"
        ]
        messages.append({"role": "user", "content": results})
    raise AssertionError("the script never ended")


def test_anthropic_tool_loop_is_accepted_and_parses() -> None:
    with AnthropicDouble(window=20_000, script=AGENT) as api, api.client() as client:
        replies = _anthropic_loop(client)
    assert [r.stop_reason for r in replies] == ["tool_use"] * 3 + ["end_turn"]
    calls = [[b.name for b in r.content if b.type == "tool_use"] for r in replies]
    assert calls == [["read_file"], ["read_file", "run_tests"], ["read_file"] * 3, []]
    assert replies[-1].content[0].text == AGENT.final_text
    for reply, exchange in zip(replies, api.exchanges, strict=True):
        assert (reply.type, reply.model, reply.id[:4]) == ("message", MODEL, "msg_")
        assert reply.usage.input_tokens == api.input_tokens(exchange.body)  # no markers: no cache
        assert reply.usage.cache_read_input_tokens == reply.usage.cache_creation_input_tokens == 0
        assert reply.usage.output_tokens > 0
    assert api.counts() == {"requests": 4, "accepted": 4, "rejected": 0}
    api.assert_no_rejections()


def test_anthropic_tool_loop_with_thinking_and_async_client() -> None:
    async def run(api: AnthropicDouble) -> list[Any]:
        async with api.async_client() as client:
            messages: list[Any] = [{"role": "user", "content": "Fix the bug."}]
            replies = []
            while True:
                reply = await client.messages.create(
                    model=MODEL,
                    max_tokens=2_000,
                    thinking={"type": "enabled", "budget_tokens": 1_024},
                    tools=CODING_TOOLS,
                    messages=messages,
                )
                replies.append(reply)
                messages.append({"role": "assistant", "content": reply.content})  # models as-is
                if reply.stop_reason != "tool_use":
                    return replies
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {"type": "tool_result", "tool_use_id": b.id, "content": "ok"}
                            for b in reply.content
                            if b.type == "tool_use"
                        ],
                    }
                )

    with AnthropicDouble(window=20_000, script=CodingAgent(turns=2)) as api:
        replies = asyncio.run(run(api))
    assert all(r.content[0].type == "thinking" for r in replies)
    assert len(replies) == 3
    api.assert_no_rejections()


EXTRA_TS: Any = [{"role": "user", "content": "hi", "ts": 1}]


def test_anthropic_rejection_is_a_bad_request_and_is_recorded() -> None:
    with AnthropicDouble(window=20_000) as api, api.client() as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(
                model=MODEL,
                max_tokens=10,
                messages=EXTRA_TS,
            )
        assert caught.value.status_code == 400
        assert caught.value.body == {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": "messages.0.ts: Extra inputs are not permitted",
            },
        }
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            client.messages.create(
                model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "x" * 80_000}]
            )
    assert api.counts() == {"requests": 2, "accepted": 0, "rejected": 2}
    assert api.rejections[0].reasons == ["messages.0.ts: Extra inputs are not permitted"]
    assert api.rejections[1].problems[0].rule == "context_window"
    with pytest.raises(AssertionError, match="2 request"):
        api.assert_no_rejections()


def test_a_failing_script_is_a_recorded_server_error() -> None:
    def script(body: dict[str, Any], turn: int) -> Reply:
        raise RuntimeError("script bug")

    with (
        AnthropicDouble(window=20_000, script=script) as api,
        api.client() as client,
        pytest.raises(anthropic.InternalServerError),
    ):
        client.messages.create(
            model=MODEL, max_tokens=10, messages=[{"role": "user", "content": "a"}]
        )
    assert api.rejections[0].status == 500
    assert "script bug" in api.rejections[0].reasons[0]


def test_anthropic_modified_thinking_is_rejected_through_the_sdk(
    make_anthropic_double: Any,  # noqa: F811 - the fixture imported above
) -> None:
    api = make_anthropic_double(
        window=20_000, script=lambda body, turn: Reply("ok", thinking="Hmm.")
    )
    with api.client() as client:
        thinking = {"type": "enabled", "budget_tokens": 1_024}
        first = client.messages.create(
            model=MODEL,
            max_tokens=2_000,
            thinking=thinking,
            messages=[{"role": "user", "content": "a"}],
        )
        block = first.content[0].model_dump()
        assert block["type"] == "thinking"
        assert block["signature"]

        def follow_up(thought: dict[str, Any]) -> Any:
            return client.messages.create(
                model=MODEL,
                max_tokens=2_000,
                thinking=thinking,
                messages=[
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": [thought, {"type": "text", "text": "ok"}]},
                    {"role": "user", "content": "b"},
                ],
            )

        follow_up(block)
        with pytest.raises(anthropic.BadRequestError, match="Invalid `signature`"):
            follow_up({**block, "thinking": "Hmm!"})
    assert api.counts()["rejected"] == 1


def test_anthropic_cache_usage_follows_the_markers() -> None:
    marker = {"type": "ephemeral"}

    def turn(messages: list[Any]) -> list[Any]:
        """The messages with a breakpoint on the last block only."""
        out = copy.deepcopy(messages)
        out[-1]["content"][-1]["cache_control"] = marker
        return out

    script = lambda body, turn: Reply("noted")  # noqa: E731
    with AnthropicDouble(window=20_000, script=script) as api, api.client() as client:
        history: list[Any] = [{"role": "user", "content": [{"type": "text", "text": "task " * 50}]}]
        first = client.messages.create(model=MODEL, max_tokens=100, messages=turn(history))
        history += [
            {"role": "assistant", "content": [{"type": "text", "text": "noted"}]},
            {"role": "user", "content": [{"type": "text", "text": "more " * 50}]},
        ]
        second = client.messages.create(model=MODEL, max_tokens=100, messages=turn(history))
        total = api.input_tokens(api.exchanges[1].body)
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens == api.input_tokens(api.exchanges[0].body)
    # the marker moved, yet the first message is the same content: read from the cache
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert (
        second.usage.cache_creation_input_tokens == total - first.usage.cache_creation_input_tokens
    )
    assert second.usage.input_tokens == 0


def test_anthropic_cache_always_and_never() -> None:
    body = anthropic_body()
    longer = anthropic_body(
        {"role": "user", "content": "Fix the bug."},
        {"role": "assistant", "content": "On it."},
        {"role": "user", "content": "Thanks."},
    )
    modes: tuple[tuple[Literal["always", "never"], bool], ...] = (
        ("always", True),
        ("never", False),
    )
    for mode, expected_read in modes:
        api = AnthropicDouble(window=20_000, cache=mode)
        api._answer(body)
        usage = api._answer(longer)["usage"]
        shared = api.input_tokens(body)
        assert usage["cache_read_input_tokens"] == (shared if expected_read else 0)
        total = api.input_tokens(longer)
        assert (
            sum(
                usage[k]
                for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            )
            == total
        )


# --------------------------------------------------------------------------------------------
# OpenAI: rules, without HTTP
# --------------------------------------------------------------------------------------------

OPENAI_REJECTS = {
    "extra field on a message": (
        openai_body({"role": "user", "content": "hi", "ts": 1}),
        "Unknown parameter: 'messages[0].ts'.",
        "unknown_parameter",
    ),
    "extra top-level field": (
        openai_body(thinking={"type": "enabled"}),
        "Unrecognized request argument supplied: thinking",
        None,
    ),
    "a thinking part": (
        openai_body(
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
        ),
        "Invalid value: 'thinking'. Supported values are: 'text' and 'refusal'.",
        "invalid_value",
    ),
    "an Anthropic tool_use block as a part": (
        openai_body({"role": "user", "content": [_tool_use("toolu_1")]}),
        "Invalid value: 'tool_use'.",
        "invalid_value",
    ),
    "an unknown role": (
        openai_body({"role": "robot", "content": "x"}),
        "Invalid value: 'robot'.",
        "invalid_value",
    ),
    "content of the wrong type": (
        openai_body({"role": "user", "content": 7}),
        "Invalid type for 'messages[0].content'",
        "invalid_type",
    ),
    "tool message without its id": (
        openai_body({"role": "tool", "content": "x"}),
        "Missing required parameter: 'messages[0].tool_call_id'.",
        "missing_required_parameter",
    ),
    "no messages": (openai_body(messages=[]), "Invalid 'messages': empty array.", "empty_array"),
    "an empty content array": (
        openai_body({"role": "user", "content": []}),
        "Invalid 'messages[0].content': empty array.",
        "empty_array",
    ),
    "an assistant saying nothing": (
        openai_body({"role": "user", "content": "a"}, {"role": "assistant"}),
        "Invalid value for 'content': expected a string, got null.",
        None,
    ),
    "an unanswered tool call": (
        openai_body(*OPENAI_LOOP[:4], OPENAI_LOOP[5]),
        "The following tool_call_ids did not have response messages: call_1",
        None,
    ),
    "a tool call left at the end": (
        openai_body(*OPENAI_LOOP[:3]),
        "did not have response messages: call_1, call_2",
        None,
    ),
    "a result after another message": (
        openai_body(*OPENAI_LOOP[:4], {"role": "user", "content": "x"}, OPENAI_LOOP[4]),
        "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'",
        None,
    ),
    "a result answering nothing": (
        openai_body(*OPENAI_LOOP[:5], {"role": "tool", "tool_call_id": "call_9", "content": "x"}),
        "must be a response to a preceeding message with 'tool_calls'",
        None,
    ),
    "a call answered twice": (
        openai_body(*OPENAI_LOOP[:5], OPENAI_LOOP[4]),
        "must be a response to a preceeding message with 'tool_calls'",
        None,
    ),
    "duplicate tool call ids": (
        openai_body(
            *OPENAI_LOOP,
            {"role": "assistant", "tool_calls": [_call("call_1")]},
            {"role": "tool", "tool_call_id": "call_1", "content": "again"},
        ),
        "duplicate tool call id 'call_1'",
        "invalid_value",
    ),
    "a bad tool name": (
        openai_body(tools=[{"type": "function", "function": {"name": "read file"}}]),
        "Invalid 'tools[0].function.name': string does not match pattern.",
        "invalid_value",
    ),
    "stream": (openai_body(stream=True), "does not stream", None),
}


@pytest.mark.parametrize(("body", "expected", "code"), OPENAI_REJECTS.values(), ids=OPENAI_REJECTS)
def test_openai_rejects(body: dict[str, Any], expected: str, code: str | None) -> None:
    problems = OpenAIDouble(window=100_000).problems(body)
    assert any(expected in p.message and p.code == code for p in problems), problems


def test_openai_accepts_a_valid_loop_in_any_result_order() -> None:
    api = OpenAIDouble(window=100_000)
    assert api.check(openai_body(*OPENAI_LOOP)) == []
    developer = {"role": "developer", "content": [{"type": "text", "text": "be brief"}]}
    assert api.check(openai_body(developer, *OPENAI_LOOP[1:], max_completion_tokens=100)) == []


def test_openai_window_counts_messages_and_completion() -> None:
    api = OpenAIDouble(window=1_000)
    body = openai_body()
    size = api.input_tokens(body)
    assert api.check({**body, "max_completion_tokens": 1_000 - size}) == []
    [problem] = api.problems({**body, "max_completion_tokens": 1_001 - size})
    assert (problem.code, problem.param) == ("context_length_exceeded", "messages")
    assert (
        f"you requested 1001 tokens ({size} in the messages, {1_001 - size} in the"
        in problem.message
    )
    [problem] = api.problems(openai_body({"role": "user", "content": "x" * 4_000}))
    assert "However, your messages resulted in" in problem.message


# --------------------------------------------------------------------------------------------
# OpenAI: through the SDK
# --------------------------------------------------------------------------------------------


def _openai_messages_after(reply: Any) -> list[dict[str, Any]]:
    message = reply.choices[0].message
    out = [message.model_dump(exclude_none=True)]
    for call in message.tool_calls or []:
        arguments = json.loads(call.function.arguments)
        out.append(
            {
                "role": "tool",
                "tool_call_id": call.id,
                "content": AGENT.run_tool(call.function.name, arguments),
            }
        )
    return out


def test_openai_tool_loop_sync_and_async() -> None:
    start: list[Any] = [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Fix the bug."},
    ]
    with OpenAIDouble(window=20_000, script=AGENT) as api:
        with api.client() as client:
            messages = list(start)
            replies = []
            while True:
                reply = client.chat.completions.create(
                    model="gpt-5", tools=OPENAI_CODING_TOOLS, messages=messages
                )
                replies.append(reply)
                messages += _openai_messages_after(reply)
                if reply.choices[0].finish_reason != "tool_calls":
                    break

        async def run() -> Any:
            async with api.async_client() as client:
                return await client.chat.completions.create(model="gpt-5", messages=start)

        after = asyncio.run(run())
    assert [r.choices[0].finish_reason for r in replies] == ["tool_calls"] * 3 + ["stop"]
    assert [len(r.choices[0].message.tool_calls or []) for r in replies] == [1, 2, 3, 0]
    assert replies[-1].choices[0].message.content == AGENT.final_text
    assert after.choices[0].message.content == AGENT.final_text  # turn 4 of the script
    for reply, exchange in zip(replies, api.exchanges[:4], strict=True):
        assert (reply.object, reply.id[:9]) == ("chat.completion", "chatcmpl-")
        usage = reply.usage
        assert usage is not None
        assert usage.prompt_tokens == api.input_tokens(exchange.body)
        assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    # each request extends the previous one, so all of the previous one is read from the cache
    usages = [r.usage for r in replies if r.usage and r.usage.prompt_tokens_details]
    cached = [u.prompt_tokens_details.cached_tokens for u in usages if u.prompt_tokens_details]
    prompts = [u.prompt_tokens for u in usages]
    assert cached == [0, *prompts[:-1]]
    api.assert_no_rejections()


def test_openai_rejection_is_a_bad_request_with_param_and_code() -> None:
    script = lambda body, turn: Reply(tool_calls=[ToolCall("read_file", {"path": "a.py"})])  # noqa: E731
    with OpenAIDouble(window=2_000, script=script) as api, api.client() as client:
        bad: Any = [
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
        ]
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(model="gpt-5", messages=bad)
        assert caught.value.code == "invalid_value"
        assert caught.value.param == "messages[1].content[0].type"
        with pytest.raises(openai.BadRequestError) as caught:
            client.chat.completions.create(
                model="gpt-5", messages=[{"role": "user", "content": "x" * 9_000}]
            )
        assert caught.value.code == "context_length_exceeded"
        reply = client.chat.completions.create(
            model="gpt-5", tools=OPENAI_CODING_TOOLS, messages=bad[:1]
        )
        assert reply.choices[0].message.content is None
    assert api.counts() == {"requests": 3, "accepted": 1, "rejected": 2}
