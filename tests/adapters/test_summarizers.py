"""The ready-made summarizers, with the real SDKs against the strict API doubles."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from windowkeeper import SummaryRequest, TokenUsage
from windowkeeper.adapters.summarizers import (
    anthropic_async_summarizer,
    anthropic_summarizer,
    openai_async_summarizer,
    openai_summarizer,
)
from windowkeeper.session._ledger import build_ledger
from windowkeeper.session._summary import summary_instruction

from ..doubles import AnthropicDouble, OpenAIDouble
from ..strategies import TR, A, T, U

SUMMARY = "1. Primary Request and Intent: add pagination."
TRACE = "cline-native-gcp-refactor-redacted"


def folded_turns() -> list[dict[str, Any]]:
    """A middle of a history as a session folds it: it opens with an assistant turn, has
    parallel calls, thinking, an image, storage-only keys (``ts``) and a call left unanswered."""
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
    }
    return [
        {
            "role": "assistant",
            "ts": 1,
            "content": [
                {"type": "thinking", "thinking": "plan", "signature": "c2lnbmF0dXJl"},
                T("Reading both files."),
                {"type": "tool_use", "id": "a", "name": "read_file", "input": {"path": "a.py"}},
                {"type": "tool_use", "id": "b", "name": "read_file", "input": {"path": "b.py"}},
            ],
        },
        U([TR("a", "def a(): ..."), TR("b", [T("def b(): ..."), image]), T("use cursors")]),
        A([{"type": "tool_use", "id": "c", "name": "write_to_file", "input": {"path": "a.py"}}]),
        U("why did you stop?"),
        A("Waiting for the tests."),
    ]


def request_for(messages: list[dict[str, Any]], previous: str | None = None) -> SummaryRequest:
    return SummaryRequest(
        messages=tuple(messages),
        previous_summary=previous,
        instruction=summary_instruction(previous),
        ledger=build_ledger([U("Add pagination."), *messages]),
    )


class Recorder:
    """A script that answers ``reply`` and keeps every body it was sent."""

    def __init__(self, reply: str = SUMMARY) -> None:
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any], turn: int) -> str:
        self.bodies.append(body)
        return self.reply


def last_text(message: dict[str, Any]) -> str:
    content = message["content"]
    return content if isinstance(content, str) else content[-1]["text"]


MakeAnthropic = Callable[..., AnthropicDouble]
MakeOpenAI = Callable[..., OpenAIDouble]


class TestAnthropic:
    def test_sync(self, make_anthropic_double: MakeAnthropic) -> None:
        """The folded turns and the instruction make one accepted request; the text comes back."""
        script = Recorder()
        api = make_anthropic_double(window=200_000, script=script)
        request = request_for(folded_turns(), previous="earlier summary")
        with api.client() as client:
            summarize = anthropic_summarizer(client, "claude-haiku-4-5", max_tokens=1_000)
            assert summarize.last_usage is None
            assert summarize(request) == SUMMARY
        api.assert_no_rejections()
        (body,) = script.bodies
        assert body["max_tokens"] == 1_000
        assert "tools" not in body
        assert last_text(body["messages"][-1]) == request.instruction
        assert "earlier summary" in json.dumps(body["messages"][0])
        assert isinstance(summarize.last_usage, TokenUsage)
        assert summarize.last_usage.tokens_in == api.input_tokens(body)
        assert summarize.last_usage.tokens_out > 0

    def test_async(self, make_anthropic_double: MakeAnthropic) -> None:
        """The async summarizer sends the same request, awaited."""
        script = Recorder()
        api = make_anthropic_double(window=200_000, script=script)

        async def main() -> str:
            async with api.async_client() as client:
                summarize = anthropic_async_summarizer(
                    client, "claude-haiku-4-5", system="Be brief."
                )
                text = await summarize(request_for(folded_turns()))
                assert summarize.last_usage is not None
                return text

        assert asyncio.run(main()) == SUMMARY
        api.assert_no_rejections()
        assert script.bodies[0]["system"] == "Be brief."

    def test_an_error_is_raised_as_the_sdk_raised_it(
        self, make_anthropic_double: MakeAnthropic
    ) -> None:
        """A request the API refuses (here: over the window) raises the SDK's error; no usage."""
        api = make_anthropic_double(window=50, script=Recorder())
        with api.client() as client:
            summarize = anthropic_summarizer(client, "claude-haiku-4-5")
            with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
                summarize(request_for(folded_turns()))
        assert summarize.last_usage is None

    def test_an_empty_reply_is_empty_text(self, make_anthropic_double: MakeAnthropic) -> None:
        """A reply without text gives "" (the session then compacts with the ledger alone)."""
        api = make_anthropic_double(window=200_000, script=Recorder(reply=""))
        with api.client() as client:
            assert (
                anthropic_summarizer(client, "claude-haiku-4-5")(request_for(folded_turns())) == ""
            )
        api.assert_no_rejections()


TOOLS = (
    {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
)
PREVIOUS = (
    U("Add pagination."),
    A([{"type": "tool_use", "id": "r1", "name": "read_file", "input": {"path": "api.py"}}]),
    U([TR("r1", "def api(): ...")]),
)


def shared_request() -> SummaryRequest:
    """A request that carries the conversation's previous request, system prompt and tools."""
    return SummaryRequest(
        messages=PREVIOUS[1:],
        previous_summary=None,
        instruction=summary_instruction(None),
        ledger=build_ledger(list(PREVIOUS)),
        prefix=PREVIOUS,
        system="You are a coding agent.",
        tools=TOOLS,
    )


class TestSharedPrefix:
    """Given the previous request, the call is that request plus the instruction, with the
    conversation's system prompt and tools: what the provider has cached for the conversation."""

    def test_anthropic(self, make_anthropic_double: MakeAnthropic) -> None:
        script = Recorder()
        api = make_anthropic_double(window=200_000, script=script)
        request = shared_request()
        with api.client() as client:
            summarize = anthropic_summarizer(client, "claude-sonnet-4-5", system="Be brief.")
            assert summarize(request) == SUMMARY
        api.assert_no_rejections()
        (body,) = script.bodies
        assert body["system"] == "You are a coding agent."  # the conversation's, not its own
        assert body["tools"] == list(TOOLS)
        assert body["messages"][:2] == [PREVIOUS[0], PREVIOUS[1]]
        assert body["messages"][2]["content"] == [
            TR("r1", "def api(): ..."),
            T(request.instruction),
        ]

    def test_openai(self, make_openai_double: MakeOpenAI) -> None:
        script = Recorder()
        api = make_openai_double(window=200_000, script=script)
        openai_tools = (
            {
                "type": "function",
                "function": {"name": "read_file", "parameters": {"type": "object"}},
            },
        )
        request = replace(shared_request(), tools=openai_tools)
        with api.client() as client:
            assert openai_summarizer(client, "gpt-4.1")(request) == SUMMARY
        api.assert_no_rejections()
        (body,) = script.bodies
        assert body["messages"][0] == {"role": "system", "content": "You are a coding agent."}
        assert body["tools"] == list(openai_tools)
        assert body["messages"][2]["tool_calls"][0]["id"] == "r1"
        assert last_text(body["messages"][-1]) == request.instruction

    def test_the_text_form_when_asked(self, make_anthropic_double: MakeAnthropic) -> None:
        """``shared_prefix=False`` (a model that shares no cache): the folded messages as text,
        the summarizer's own system prompt, no tools."""
        script = Recorder()
        api = make_anthropic_double(window=200_000, script=script)
        with api.client() as client:
            summarize = anthropic_summarizer(
                client, "claude-haiku-4-5", system="Be brief.", shared_prefix=False
            )
            assert summarize(shared_request()) == SUMMARY
        (body,) = script.bodies
        assert body["system"] == "Be brief."
        assert "tools" not in body
        kinds = {block["type"] for message in body["messages"] for block in message["content"]}
        assert kinds == {"text"}


class TestOpenAI:
    def test_sync(self, make_openai_double: MakeOpenAI) -> None:
        """Chat Completions: converted messages, accepted, the text and the usage come back."""
        script = Recorder()
        api = make_openai_double(window=200_000, script=script)
        request = request_for(folded_turns())
        with api.client() as client:
            summarize = openai_summarizer(client, "gpt-4.1-mini", system="Be brief.")
            assert summarize(request) == SUMMARY
        api.assert_no_rejections()
        (body,) = script.bodies
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert body["max_completion_tokens"] == 2_048
        assert last_text(body["messages"][-1]) == request.instruction
        assert summarize.last_usage is not None
        assert (
            summarize.last_usage.tokens_in + summarize.last_usage.cache_reads
            == api.input_tokens(body)
        )

    def test_async(self, make_openai_double: MakeOpenAI) -> None:
        """The async summarizer, awaited."""
        api = make_openai_double(window=200_000, script=Recorder())

        async def main() -> str:
            async with api.async_client() as client:
                return await openai_async_summarizer(client, "gpt-4.1-mini")(
                    request_for(folded_turns())
                )

        assert asyncio.run(main()) == SUMMARY
        api.assert_no_rejections()

    def test_an_error_is_raised_as_the_sdk_raised_it(self, make_openai_double: MakeOpenAI) -> None:
        """A refused request raises the SDK's error."""
        api = make_openai_double(window=50, script=Recorder())
        with api.client() as client:
            summarize = openai_summarizer(client, "gpt-4.1-mini")
            with pytest.raises(openai.BadRequestError):
                summarize(request_for(folded_turns()))
        assert summarize.last_usage is None


def test_the_real_trace(
    corpus: Path, make_anthropic_double: MakeAnthropic, make_openai_double: MakeOpenAI
) -> None:
    """Folding the middle of the 443-message trace: both doubles accept the summary requests."""
    path = corpus / TRACE / "api_conversation_history.json"
    if not path.is_file():
        pytest.skip(f"{TRACE} not in the corpus")
    history = json.loads(path.read_text("utf-8"))
    request = SummaryRequest(
        messages=tuple(history[2:301]),
        previous_summary=None,
        instruction=summary_instruction(None),
        ledger=build_ledger(history, 301),
    )
    anthropic_api = make_anthropic_double(window=400_000, script=Recorder())
    openai_api = make_openai_double(window=400_000, script=Recorder())
    with anthropic_api.client() as a_client, openai_api.client() as o_client:
        assert anthropic_summarizer(a_client, "claude-haiku-4-5")(request) == SUMMARY
        assert openai_summarizer(o_client, "gpt-4.1-mini")(request) == SUMMARY
    anthropic_api.assert_no_rejections()
    openai_api.assert_no_rejections()
