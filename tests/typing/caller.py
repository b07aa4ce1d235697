"""A typed caller: windowkeeper's public entry points fed with the SDKs' own TypedDicts.

Checked by ``mypy --strict tests/typing/`` (in ``make test``); tests/test_typing.py also runs
the functions that need no client, so every value here is one windowkeeper really accepts.
``assert_type`` pins what comes back, so an output that degraded to ``Any`` fails the check.

A session's ``Prepared.messages`` are plain dicts (``list[dict[str, Any]]``), which mypy does not
take where an SDK wants its TypedDicts: those calls cast, as a typed user has to.
"""

from __future__ import annotations

from typing import Any, assert_type, cast

import anthropic
import openai
from anthropic.types import MessageParam, TextBlockParam, ToolParam, Usage
from openai.types import CompletionUsage
from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam
from openai.types.responses import FunctionToolParam, ResponseInputItemParam, ResponseUsage
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from windowkeeper import (
    ContextManager,
    ContextResult,
    ContextSession,
    FileReadOptimization,
    Prepared,
    Synced,
    TokenUsage,
    Violation,
    formats,
    usage_from_sdk,
    validate_messages,
)
from windowkeeper.formats import AnthropicConversation, responses

MODEL = "claude-sonnet-4-5"
SYSTEM: list[TextBlockParam] = [
    {
        "type": "text",
        "text": "You are a careful coding agent.",
        "cache_control": {"type": "ephemeral"},
    }
]
TOOLS: list[ToolParam] = [
    {
        "name": "read_file",
        "description": "Read a text file of the project.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
OPENAI_TOOLS: list[ChatCompletionToolParam] = [
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}
]
RESPONSES_TOOLS: list[FunctionToolParam] = [
    {"type": "function", "name": "read_file", "parameters": {"type": "object"}, "strict": False}
]


def anthropic_history() -> list[MessageParam]:
    """A task, a tool call and its result, as Anthropic's TypedDicts."""
    return [
        {"role": "user", "content": "Add pagination to the API."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Reading the handler."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "read_file",
                    "input": {"path": "a.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def a(): ..."}
            ],
        },
    ]


def openai_history() -> list[ChatCompletionMessageParam]:
    """The same conversation as Chat Completions message params, with a system message."""
    return [
        {"role": "system", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Add pagination to the API."},
        {
            "role": "assistant",
            "content": "Reading the handler.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.py"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "def a(): ..."},
    ]


def responses_history() -> list[ResponseInputItemParam]:
    """The same conversation as Responses input items."""
    return [
        {"role": "developer", "content": "You are a careful coding agent."},
        {"role": "user", "content": "Add pagination to the API."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "read_file",
            "arguments": '{"path": "a.py"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "def a(): ..."},
    ]


def anthropic_usage() -> Usage:
    """Usage as the Anthropic SDK returns it (``reply.usage``)."""
    return Usage(
        input_tokens=1_200,
        output_tokens=80,
        cache_creation_input_tokens=0,
        cache_read_input_tokens=0,
    )


def anthropic_session() -> Prepared:
    """A session in Anthropic's format fed with MessageParams, a TextBlockParam system prompt."""
    history = anthropic_history()
    session = ContextSession(context_window=200_000)
    session.append(history[0])
    session.extend(history[1:])
    synced = session.sync([*history, {"role": "assistant", "content": "Done."}])
    assert_type(synced, Synced)
    prepared = session.prepare(system=SYSTEM, tools=TOOLS, max_output_tokens=1_024)
    session.record_usage(anthropic_usage())
    session.record_usage({"input_tokens": 1_300, "output_tokens": 90})
    session.record_usage(TokenUsage(tokens_in=1_300, tokens_out=90))
    session.prepare(system="You are a careful coding agent.")
    assert_type(prepared.messages, list[dict[str, Any]])
    return prepared


def anthropic_turn(client: anthropic.Anthropic, session: ContextSession) -> None:
    """One turn of an agent loop with the real client: prepare, send, record, append the reply."""
    prepared = session.prepare(system=SYSTEM, tools=TOOLS, max_output_tokens=1_024)
    reply = client.messages.create(
        model=MODEL,
        max_tokens=1_024,
        system=SYSTEM,
        tools=TOOLS,
        messages=cast("list[MessageParam]", prepared.messages),
    )
    session.record_usage(reply.usage)
    session.append(reply)  # the SDK's Message object


def openai_session() -> Prepared:
    """A session in OpenAI's format fed with ChatCompletionMessageParams and CompletionUsage."""
    history = openai_history()
    session = ContextSession(context_window=128_000, format="openai")
    session.append(history[0])
    session.extend(history[1:])
    session.sync(history)
    prepared = session.prepare(tools=OPENAI_TOOLS)
    session.record_usage(CompletionUsage(prompt_tokens=900, completion_tokens=40, total_tokens=940))
    return prepared


def openai_turn(client: openai.OpenAI, session: ContextSession) -> None:
    """One Chat Completions turn; ``reply.usage`` is optional in the SDK, so it is checked."""
    prepared = session.prepare(tools=OPENAI_TOOLS, max_output_tokens=1_024)
    reply = client.chat.completions.create(
        model="gpt-4o",
        messages=cast("list[ChatCompletionMessageParam]", prepared.messages),
        tools=OPENAI_TOOLS,
    )
    if reply.usage is not None:
        session.record_usage(reply.usage)
    session.append(reply)  # the ChatCompletion: its first choice's message


def responses_session() -> Prepared:
    """A session in the Responses format fed with input item params and ResponseUsage."""
    history = responses_history()
    session = ContextSession(context_window=128_000, format="responses")
    session.extend(history)
    session.sync(history)
    prepared = session.prepare(tools=RESPONSES_TOOLS)
    session.record_usage(
        ResponseUsage(
            input_tokens=900,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens=40,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
            total_tokens=940,
        )
    )
    return prepared


def responses_turn(client: openai.OpenAI, session: ContextSession) -> None:
    """One Responses turn: the output items (SDK objects) are appended as they are."""
    prepared = session.prepare(tools=RESPONSES_TOOLS)
    response = client.responses.create(
        model="gpt-5",
        input=cast("list[ResponseInputItemParam]", prepared.messages),
        tools=RESPONSES_TOOLS,
    )
    if response.usage is not None:
        session.record_usage(response.usage)
    session.extend(response.output)


def manager_calls() -> list[MessageParam]:
    """The original's ContextManager on MessageParams: what it sends keeps their type."""
    history = anthropic_history()
    manager = ContextManager()
    result = manager.get_new_context_messages_and_metadata(
        history,
        usage=TokenUsage(tokens_in=190_000, tokens_out=500),
        timestamp=1_700_000_000_000,
        context_window=200_000,
    )
    assert_type(result, ContextResult[MessageParam])
    sent = manager.get_truncated_messages(history, result.deleted_range)
    assert_type(sent, list[MessageParam])
    manager.get_next_truncation_range(history, None, "half")
    changed, altered = manager.apply_context_optimizations(history, 2, 1_700_000_000_001)
    assert_type((changed, altered), tuple[bool, set[int]])
    optimization = manager.attempt_file_read_optimization_in_memory(
        history, None, 1_700_000_000_002
    )
    assert_type(optimization, FileReadOptimization[MessageParam])
    manager.trigger_apply_standard_context_truncation_notice_change(
        1_700_000_000_003, None, history
    )
    manager.should_compact_context_window(TokenUsage(tokens_in=10), 200_000)
    return result.truncated_history  # sendable as it is: client.messages.create(messages=...)


def checks_and_formats() -> tuple[list[Violation], AnthropicConversation]:
    """validate_messages, the usage reader and the format converters on SDK TypedDicts."""
    violations = validate_messages(anthropic_history())
    usage = usage_from_sdk(anthropic_usage())
    assert_type(usage, TokenUsage)
    chat = formats.from_anthropic(anthropic_history(), system=SYSTEM)
    back = formats.to_anthropic(openai_history())
    formats.validate_openai(openai_history())
    items = responses.from_anthropic(anthropic_history(), system="Be careful.")
    responses.to_anthropic(responses_history())
    responses.validate_responses(responses_history())
    assert_type(chat, list[dict[str, Any]])
    assert_type(items, list[dict[str, Any]])
    return violations, back
