"""A conversation that opens with an assistant greeting (history[0] an assistant message).

It is sent, not refused: in the Anthropic shape after a placeholder user turn (the Messages API
takes only a user message first), in OpenAI's shapes as it is. The greeting and the task are
messages 0-1, never hidden; the placeholder is in each request, counted by its estimate, and
never in the history or the task folder. The long runs go through the real SDKs against the
strict doubles, which judge every request by the providers' rules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    ContextManager,
    ContextSession,
    MalformedMessageError,
    TokenUsage,
    validate_messages,
)
from windowkeeper.core._notices import TRUNCATION_NOTICE
from windowkeeper.formats import validate_openai
from windowkeeper.session._greeting import OPENING, OPENING_TEXT
from windowkeeper.session._ledger import build_ledger

from ..doubles import CODING_TOOLS, OPENAI_CODING_TOOLS, AnthropicDouble, CodingAgent, OpenAIDouble

GREETING = "Hello! I am your coding assistant. What shall we work on today?"
TASK = "Add pagination to the API, then run the tests."
SYSTEM = "You are a careful coding agent."
PATHS = tuple(f"src/module_{n}.py" for n in range(40))


def greeting(shape: str = "anthropic") -> dict[str, Any]:
    if shape == "anthropic":
        return {"role": "assistant", "content": [{"type": "text", "text": GREETING}]}
    return {"role": "assistant", "content": GREETING}


def task(shape: str = "anthropic") -> dict[str, Any]:
    if shape == "anthropic":
        return {"role": "user", "content": [{"type": "text", "text": TASK}]}
    return {"role": "user", "content": TASK}


def texts(message: dict[str, Any]) -> list[str]:
    """The texts of a message in either shape (string content, or text / input_text blocks)."""
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [block["text"] for block in content or () if isinstance(block, dict) and "text" in block]


class TestFirstRequest:
    """What the first request of a greeting-first conversation is, in each shape."""

    def test_anthropic_sends_the_placeholder_then_the_greeting_and_the_task(self) -> None:
        session = ContextSession(context_window=200_000)
        session.extend([greeting(), task()])
        prepared = session.prepare(system=SYSTEM)
        assert prepared.messages == [OPENING, greeting(), task()]
        assert validate_messages(prepared.messages) == []

    def test_openai_chat_sends_the_greeting_first(self) -> None:
        """Chat Completions takes an assistant message first: nothing is added."""
        session = ContextSession(context_window=200_000, format="openai")
        session.extend([{"role": "system", "content": SYSTEM}, greeting("openai"), task("openai")])
        prepared = session.prepare()
        assert [m["role"] for m in prepared.messages] == ["system", "assistant", "user"]
        assert texts(prepared.messages[1]) == [GREETING]
        assert validate_openai(prepared.messages) == []

    def test_responses_sends_the_greeting_first(self) -> None:
        """The Responses API takes an assistant message item first: nothing is added."""
        session = ContextSession(context_window=200_000, format="responses")
        session.extend([greeting("openai"), task("openai")])
        items = session.prepare().messages
        assert [item.get("role") for item in items] == ["assistant", "user"]
        assert OPENING_TEXT not in json.dumps(items)

    def test_the_estimate_counts_the_placeholder(self) -> None:
        """The same as for a history that holds the placeholder itself: what is sent is equal."""
        greeted = ContextSession(context_window=200_000)
        greeted.extend([greeting(), task()])
        spelled_out = ContextSession(context_window=200_000)
        spelled_out.extend([OPENING, greeting(), task()])
        first, second = greeted.prepare(system=SYSTEM), spelled_out.prepare(system=SYSTEM)
        assert first.messages == second.messages
        assert first.estimated_tokens == second.estimated_tokens
        without = ContextSession(context_window=200_000)
        without.extend([task()])
        assert first.estimated_tokens > without.prepare(system=SYSTEM).estimated_tokens

    def test_the_placeholder_is_never_in_the_history_or_the_task_folder(
        self, tmp_path: Path
    ) -> None:
        session = ContextSession(context_window=200_000, task_dir=tmp_path)
        session.extend([greeting(), task()])
        session.prepare()
        assert session.history == [greeting(), task()]
        stored = (tmp_path / "api_conversation_history.json").read_text(encoding="utf-8")
        assert OPENING_TEXT not in stored
        reopened = ContextSession(context_window=200_000, task_dir=tmp_path)
        assert reopened.history == [greeting(), task()]
        assert reopened.prepare().messages == [OPENING, greeting(), task()]

    def test_a_second_assistant_message_before_the_task_is_refused(self) -> None:
        session = ContextSession(context_window=200_000)
        session.append(greeting())
        with pytest.raises(MalformedMessageError, match=r"history\[1\]\.role"):
            session.append(greeting())
        assert session.history == [greeting()]


def anthropic_run(session: ContextSession, api: AnthropicDouble, agent: CodingAgent) -> list[Any]:
    """The README's loop on the Anthropic double: every prepared request, in order."""
    prepared_all = []
    with api.client() as client:
        while True:
            prepared = session.prepare(system=SYSTEM, tools=CODING_TOOLS, max_output_tokens=1_000)
            prepared_all.append(prepared)
            reply = client.messages.create(
                model="claude-sonnet-4-5",
                system=SYSTEM,
                tools=CODING_TOOLS,
                max_tokens=1_000,
                messages=prepared.messages,
            )
            session.record_usage(reply.usage)
            session.append(reply)
            calls = [block for block in reply.content if block.type == "tool_use"]
            if not calls:
                return prepared_all
            session.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": call.id,
                            "content": agent.run_tool(call.name, call.input),
                        }
                        for call in calls
                    ],
                }
            )


def openai_run(session: ContextSession, api: OpenAIDouble, agent: CodingAgent) -> list[Any]:
    """The README's OpenAI loop on the Chat Completions double: every prepared request."""
    prepared_all = []
    with api.client() as client:
        while True:
            prepared = session.prepare(tools=OPENAI_CODING_TOOLS, max_output_tokens=1_000)
            prepared_all.append(prepared)
            reply = client.chat.completions.create(
                model="gpt-4.1",
                messages=prepared.messages,
                tools=OPENAI_CODING_TOOLS,
                max_completion_tokens=1_000,
            )
            session.record_usage(reply.usage)
            session.append(reply)
            calls = reply.choices[0].message.tool_calls or []
            if not calls:
                return prepared_all
            session.extend(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "content": agent.run_tool(
                        call.function.name, json.loads(call.function.arguments)
                    ),
                }
                for call in calls
            )


class TestTheOriginalsNotice:
    """The original's truncation notice is never written over the user's task."""

    def test_the_manager_records_no_notice_over_a_user_message_1(self) -> None:
        history = [greeting(), task()]
        for turn in range(10):
            history += [
                {"role": "assistant", "content": [{"type": "text", "text": f"step {turn}"}]},
                {"role": "user", "content": [{"type": "text", "text": f"more {turn}"}]},
            ]
        manager = ContextManager()
        result = manager.get_new_context_messages_and_metadata(
            history, usage=TokenUsage(tokens_in=200_000), timestamp=1, context_window=200_000
        )
        assert result.updated_deleted_range
        assert manager.context_history_json() == "[]"
        assert result.truncated_history[1] == task()

    def test_a_task_first_history_still_gets_it(self) -> None:
        history = [task(), greeting()] * 10
        manager = ContextManager()
        manager.get_new_context_messages_and_metadata(
            history, usage=TokenUsage(tokens_in=200_000), timestamp=1, context_window=200_000
        )
        assert TRUNCATION_NOTICE in manager.context_history_json()


class TestCompaction:
    """Folding a greeting-first conversation: the ledger's task is the user's, not the greeting."""

    def test_the_ledgers_task_is_message_1(self) -> None:
        ledger = build_ledger([greeting(), task(), greeting(), task()])
        assert ledger.task == TASK
        assert ledger.instructions == (TASK,)

    def test_a_long_run_that_folds(self) -> None:
        agent = CodingAgent(turns=40, paths=PATHS, file_lines=60)
        session = ContextSession(context_window=16_000, summarize=True)
        session.extend([greeting(), task()])
        with AnthropicDouble(window=16_000, script=agent) as api:
            requests = anthropic_run(session, api, agent)
            api.assert_no_rejections()
            bodies = [exchange.body for exchange in api.exchanges]
        assert any(p.deleted_range is not None for p in requests), "nothing was folded"
        for body in bodies:
            messages = body["messages"]
            assert messages[0] == OPENING
            assert texts(messages[1]) == [GREETING]  # a fold's continuation replaces the notice
            assert texts(messages[2])[0] == TASK


class TestLongRuns:
    """40 turns at a 16k window: the middle is hidden, and every request is accepted."""

    def test_anthropic(self, tmp_path: Path) -> None:
        agent = CodingAgent(turns=40, paths=PATHS, file_lines=60)
        session = ContextSession(context_window=16_000, task_dir=tmp_path, mask_keep_recent=None)
        session.extend([greeting(), task()])
        with AnthropicDouble(window=16_000, script=agent) as api:
            requests = anthropic_run(session, api, agent)
            api.assert_no_rejections()
            bodies = [exchange.body for exchange in api.exchanges]
        assert len(requests) == 41
        assert any(p.deleted_range is not None for p in requests), "nothing was hidden"
        for prepared, body in zip(requests, bodies, strict=True):
            messages = body["messages"]
            assert messages[0] == OPENING
            assert texts(messages[1])[-1] == GREETING
            assert TASK in texts(messages[2]), "the task is sent in every request"
            assert TRUNCATION_NOTICE not in texts(messages[2]), "the notice is not the user's"
            hidden = prepared.deleted_range is not None
            assert (TRUNCATION_NOTICE in texts(messages[1])) is hidden
            assert validate_messages(prepared.messages) == []
            assert prepared.estimated_tokens <= prepared.max_allowed_size
        stored = (tmp_path / "api_conversation_history.json").read_text(encoding="utf-8")
        assert OPENING_TEXT not in stored
        assert session.history[:2] == [greeting(), task()]

    def test_openai(self) -> None:
        agent = CodingAgent(turns=40, paths=PATHS, file_lines=60)
        session = ContextSession(context_window=16_000, format="openai", mask_keep_recent=None)
        session.extend([{"role": "system", "content": SYSTEM}, greeting("openai"), task("openai")])
        with OpenAIDouble(window=16_000, script=agent) as api:
            requests = openai_run(session, api, agent)
            api.assert_no_rejections()
            bodies = [exchange.body for exchange in api.exchanges]
        assert len(requests) == 41
        assert any(p.deleted_range is not None for p in requests), "nothing was hidden"
        for prepared, body in zip(requests, bodies, strict=True):
            messages = body["messages"]
            assert [m["role"] for m in messages[:3]] == ["system", "assistant", "user"]
            assert texts(messages[1])[-1] == GREETING
            assert TASK in texts(messages[2])
            assert TRUNCATION_NOTICE not in texts(messages[2])
            assert OPENING_TEXT not in json.dumps(messages)
            hidden = prepared.deleted_range is not None
            assert (TRUNCATION_NOTICE in texts(messages[1])) is hidden
            assert validate_openai(prepared.messages) == []
