"""WindowkeeperCapability in PydanticAI v2 agents, with a scripted FunctionModel.

The model asks for ``read_file`` a number of times after each user prompt (each result is
several KB), then answers; every request it gets is checked: PydanticAI messages with every tool
call answered by its tool return, valid Anthropic requests once converted, and within the
window by the session's estimate and by an independent count.
"""

from __future__ import annotations

import asyncio
import json
import re
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    BinaryContent,
    ImageUrl,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    RetryFeedbackPart,
    RetryInfo,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from windowkeeper import ConfigurationError, DistrustedUsageWarning, Prepared, validate_messages
from windowkeeper.adapters.pydantic_ai import WindowkeeperCapability, from_pydantic_ai
from windowkeeper.core._notices import TRUNCATION_NOTICE
from windowkeeper.session._greeting import OPENING_TEXT

INSTRUCTIONS = "You are a careful coding agent. Read the files you need, then answer."
WINDOW = 20_000
_STEP = re.compile(r"step (\d+)/(\d+)")


@pytest.fixture(autouse=True)
def _close_the_sync_loop() -> Iterator[None]:
    """``run_sync`` leaves its event loop open as the thread's current loop: close it after
    each test, before anything drops it unclosed (a ResourceWarning, an error here)."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
    asyncio.set_event_loop(None)


def file_text(path: str, step: int, steps: int) -> str:
    """A tool result of about 4 KB whose first line says which step it answers."""
    lines = [f"step {step}/{steps}: {path}"]
    lines += [
        f"{path}:{n:03d}  def function_{n}(value): return value * {n}  # {step}" for n in range(60)
    ]
    return "\n".join(lines)


def check_request(messages: Sequence[ModelMessage], prepared: Prepared | None) -> None:
    """What the model got: PydanticAI messages, paired tool calls, valid and within the window."""
    assert all(isinstance(message, ModelRequest | ModelResponse) for message in messages)
    assert isinstance(messages[0], ModelRequest)
    assert isinstance(messages[-1], ModelRequest)
    waiting: set[str] = set()
    for message in messages:
        if isinstance(message, ModelResponse):
            assert not waiting, f"tool calls {waiting} unanswered before a response"
            waiting = {
                part.tool_call_id for part in message.parts if isinstance(part, ToolCallPart)
            }
            continue
        returned = {part.tool_call_id for part in message.parts if isinstance(part, ToolReturnPart)}
        assert returned == waiting, f"returns {returned} do not answer the calls {waiting}"
        waiting = set()
    converted = from_pydantic_ai(messages)
    assert validate_messages(converted) == []
    assert prepared is not None
    assert prepared.estimated_tokens <= prepared.max_allowed_size
    independent = (len(json.dumps(converted)) + len(INSTRUCTIONS)) / 3.5
    assert independent < WINDOW


class Script:
    """The model: ``steps`` reads after each user prompt, then an answer; checks each request."""

    def __init__(
        self,
        capability: WindowkeeperCapability[Any],
        steps: int,
        huge_at: int = 0,
        usage_share: float = 1.0,
    ) -> None:
        self.capability = capability
        self.steps = steps
        self.huge_at = huge_at
        self.usage_share = usage_share  # below 1: a backend that under-reports
        self.requests: list[tuple[str | None, list[ModelMessage]]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        conversation = last.conversation_id
        check_request(messages, self.capability.last_prepared(conversation))
        self.requests.append((conversation, messages))
        assert info.instructions == INSTRUCTIONS
        step = 1
        for part in last.parts:
            if isinstance(part, ToolReturnPart) and isinstance(part.content, str):
                match = _STEP.match(part.content)
                step = int(match[1]) + 1 if match else step
        size = (len(json.dumps(from_pydantic_ai(messages))) + len(INSTRUCTIONS)) * self.usage_share
        usage = RequestUsage(
            input_tokens=int(size / 3.2), output_tokens=40, cache_read_tokens=int(size / 9.6)
        )
        if step > self.steps:
            return ModelResponse(parts=[TextPart("All parts read.")], usage=usage)
        arguments = {"path": f"src/part_{step}.py", "step": step, "steps": self.steps}
        if step == self.huge_at:
            arguments["huge"] = True
        return ModelResponse(
            parts=[
                TextPart(f"Reading part {step}."),
                ToolCallPart("read_file", arguments, tool_call_id=f"call_{step}_{len(messages)}"),
            ],
            usage=usage,
        )


def build(
    capability: WindowkeeperCapability[Any],
    *,
    steps: int = 30,
    huge_at: int = 0,
    usage_share: float = 1.0,
) -> tuple[Agent[None, str], Script]:
    script = Script(capability, steps, huge_at, usage_share)
    agent: Agent[None, str] = Agent(
        FunctionModel(script), instructions=INSTRUCTIONS, capabilities=[capability]
    )

    @agent.tool_plain
    def read_file(path: str, step: int, steps: int, huge: bool = False) -> str:
        """Read a text file of the project."""
        text = file_text(path, step, steps)
        return text * 12 if huge else text

    return agent, script


def check_full_history(messages: Sequence[ModelMessage], steps: int) -> None:
    """The run's history keeps every message, unmasked and unclipped: the window is a view."""
    returns = [
        part
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    assert len(returns) == steps
    for step, part in enumerate(returns, start=1):
        assert part.content == file_text(f"src/part_{step}.py", step, steps)
    last = messages[-1]
    assert isinstance(last, ModelResponse)
    assert last.parts[0] == TextPart("All parts read.")


@pytest.mark.parametrize(
    "options", [{}, {"mask_keep_recent": None}], ids=["masking-first", "hiding-turns"]
)
def test_a_long_run_stays_in_the_window(options: dict[str, Any]) -> None:
    capability: WindowkeeperCapability[Any] = WindowkeeperCapability(
        WINDOW, session_options=options
    )
    agent, script = build(capability, steps=32)
    result = agent.run_sync("Summarize every part.", conversation_id="long")

    messages = result.all_messages()
    check_full_history(messages, 32)
    assert len(messages) == 2 + 2 * 32
    assert len(script.requests) == 33
    full = (len(json.dumps(from_pydantic_ai(messages[:-1]))) + len(INSTRUCTIONS)) / 3.5
    assert full > WINDOW  # the whole history would not fit
    session = capability.session("long")
    assert len(session.history) == len(messages) - 1
    last_sent = script.requests[-1][1]
    assert last_sent[0] is messages[0]  # the task: the run's own object
    assert last_sent[-1] is messages[-2]  # the newest tool return, unchanged
    if options:
        assert session.deleted_range is not None
        assert len(last_sent) < len(messages) - 1


def test_a_backend_that_under_reports_usage_stays_in_the_window() -> None:
    """Usage at 2 % of the truth is distrusted: no request goes over the window."""
    capability: WindowkeeperCapability[Any] = WindowkeeperCapability(WINDOW)
    agent, script = build(capability, steps=32, usage_share=0.02)
    with pytest.warns(DistrustedUsageWarning):
        agent.run_sync("Summarize every part.", conversation_id="low")
    assert len(script.requests) == 33  # each checked by check_request: none over the window
    prepared = capability.last_prepared("low")
    assert prepared is not None
    assert any(action.step == "usage-distrusted" for action in prepared.actions)


def test_a_conversation_that_opens_with_a_greeting_is_sent() -> None:
    """A chat app's greeting first: the model gets the placeholder request, then the greeting
    and the task (kept in every request, never noticed over); the run's history holds neither."""
    capability: WindowkeeperCapability[Any] = WindowkeeperCapability(
        WINDOW, session_options={"mask_keep_recent": None}
    )
    agent, script = build(capability, steps=32)
    hello = ModelResponse(parts=[TextPart("Hello! Which parts shall I summarize?")])
    result = agent.run_sync(
        "Summarize every part.", message_history=[hello], conversation_id="greeted"
    )
    assert len(script.requests) == 33  # each checked by check_request (a request first)
    for _, sent in script.requests:
        opening, greeting, task = sent[:3]
        assert isinstance(opening, ModelRequest)
        assert opening.parts == [UserPromptPart(OPENING_TEXT, timestamp=opening.parts[0].timestamp)]
        assert isinstance(greeting, ModelResponse)
        assert greeting.parts[-1] == hello.parts[0]
        noticed = any(TRUNCATION_NOTICE in str(part.content) for part in greeting.parts)
        assert isinstance(task, ModelRequest)
        assert all(TRUNCATION_NOTICE not in str(part.content) for part in task.parts)
        assert any("Summarize every part." in str(part.content) for part in task.parts)
        if not noticed:
            assert greeting is result.all_messages()[0]  # the very object, unchanged
    prepared = capability.last_prepared("greeted")
    assert prepared is not None
    assert prepared.deleted_range is not None
    assert noticed  # the last request hid turns: the notice is in the greeting's copy
    messages = result.all_messages()
    assert messages[0] is hello
    assert all(
        OPENING_TEXT not in str(getattr(part, "content", ""))
        for message in messages
        for part in message.parts
    )
    assert capability.session("greeted").history[0]["role"] == "assistant"


def test_a_large_result_is_clipped_in_a_copy() -> None:
    capability: WindowkeeperCapability[Any] = WindowkeeperCapability(WINDOW)
    agent, script = build(capability, steps=3, huge_at=2)
    result = agent.run_sync("Read three parts.", conversation_id="clip")
    messages = result.all_messages()
    stored = messages[4]
    assert isinstance(stored, ModelRequest)
    full = stored.parts[0]
    assert isinstance(full, ToolReturnPart)
    assert len(full.content) > 40_000
    sent = script.requests[2][1][-1]
    assert isinstance(sent, ModelRequest)
    assert sent is not stored
    clipped = sent.parts[0]
    assert isinstance(clipped, ToolReturnPart)
    assert clipped.tool_call_id == full.tool_call_id
    assert clipped.tool_name == "read_file"
    assert len(clipped.content) < len(full.content)
    prepared = capability.last_prepared("clip")
    assert prepared is not None


def test_conversations_have_their_own_sessions() -> None:
    capability: WindowkeeperCapability[Any] = WindowkeeperCapability(WINDOW)
    agent, script = build(capability, steps=5)
    first = agent.run_sync("Task A", conversation_id="a")
    second = agent.run_sync("Task B", conversation_id="b")
    again = agent.run_sync("More of task A", message_history=first.all_messages())

    assert sorted(capability.conversation_ids) == ["a", "b"]
    a, b = capability.session("a"), capability.session("b")
    assert a is not b
    assert a.history[0]["content"] == "Task A"
    assert b.history[0]["content"] == "Task B"
    assert len(b.history) == len(second.all_messages()) - 1
    assert len(a.history) == len(again.all_messages()) - 1
    synced = capability.last_synced("a")
    assert synced is not None
    assert synced.dropped == 0
    assert not synced.restarted
    assert {conversation for conversation, _ in script.requests} == {"a", "b"}


def test_async_runs_and_concurrent_conversations() -> None:
    capability: WindowkeeperCapability[Any] = WindowkeeperCapability(WINDOW)
    agent, script = build(capability, steps=30)

    async def run() -> list[Any]:
        return await asyncio.gather(
            agent.run("Async task one", conversation_id="one"),
            agent.run("Async task two", conversation_id="two"),
        )

    one, two = asyncio.run(run())
    check_full_history(one.all_messages(), 30)
    check_full_history(two.all_messages(), 30)
    assert len(script.requests) == 62
    assert capability.session("one").history[0]["content"] == "Async task one"
    assert capability.session("two").history[0]["content"] == "Async task two"


def test_a_new_agent_resumes_the_conversation_from_its_task_folder(tmp_path: Path) -> None:
    options = {"mask_keep_recent": None}
    first: WindowkeeperCapability[Any] = WindowkeeperCapability(
        WINDOW, task_root=tmp_path, session_options=options
    )
    agent, _ = build(first, steps=24)
    result = agent.run_sync("First task", conversation_id="conv 1")
    before = first.session("conv 1")
    assert before.deleted_range is not None  # there is a decision to resume
    first.close()

    # The history as an application stores it: JSON, read back into new objects.
    history = ModelMessagesTypeAdapter.validate_json(
        ModelMessagesTypeAdapter.dump_json(result.all_messages())
    )
    second: WindowkeeperCapability[Any] = WindowkeeperCapability(
        WINDOW, task_root=tmp_path, session_options=options
    )
    resumed = second.session("conv 1")
    assert resumed.history == before.history
    assert resumed.deleted_range == before.deleted_range

    agent, script = build(second, steps=5)
    more = agent.run_sync("Second task", message_history=history)
    synced = second.last_synced("conv 1")
    assert synced is not None
    assert synced.dropped == 0
    assert not synced.restarted
    assert len(script.requests) == 6
    assert len(more.all_messages()) == len(history) + 2 + 2 * 5
    assert second.conversation_ids == ["conv 1"]


def test_conversion_rules() -> None:
    image = BinaryContent(data=b"\x89PNG\r\n\x1a\n", media_type="image/png")
    messages: list[ModelMessage] = [
        ModelRequest(
            parts=[
                SystemPromptPart("system text"),
                UserPromptPart(["What is here?", ImageUrl("https://example.com/a.png"), image]),
            ]
        ),
        ModelResponse(
            parts=[
                ThinkingPart("hm", signature="c2ln", provider_name="anthropic"),
                TextPart("Looking."),
                ToolCallPart("look", '{"n": [1, 2]}', tool_call_id="c1"),
                ToolCallPart("look", {"n": 3}, tool_call_id="c2"),
            ]
        ),
        ModelRequest(
            parts=[
                ToolReturnPart("look", {"seen": True}, tool_call_id="c1"),
                ToolReturnPart("look", "it broke", tool_call_id="c2", outcome="failed"),
                RetryFeedbackPart("answer in JSON", retry=RetryInfo("model_retry")),
            ]
        ),
    ]
    converted = from_pydantic_ai(messages)
    assert converted[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is here?"},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": image.base64},
            },
        ],
    }
    assert converted[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "c1", "name": "look", "input": {"n": [1, 2]}},
            {"type": "tool_use", "id": "c2", "name": "look", "input": {"n": 3}},
        ],
    }
    results = converted[2]["content"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "c1", "content": '{"seen":true}'}
    assert results[1] == {
        "type": "tool_result",
        "tool_use_id": "c2",
        "content": "it broke",
        "is_error": True,
    }
    assert results[2]["type"] == "text"
    assert "answer in JSON" in results[2]["text"]
    assert validate_messages(converted) == []


def test_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="at most one"):
        WindowkeeperCapability(task_root=tmp_path, store_factory=lambda key: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(ConfigurationError, match="set by the adapter"):
        WindowkeeperCapability(session_options={"store": None})
    with pytest.raises(ConfigurationError, match="max_output_tokens"):
        WindowkeeperCapability(max_output_tokens=-1)


def docs_example(heading: str) -> str:
    """The first Python block after ``heading`` in docs/adapters.md."""
    text = (Path(__file__).parents[2] / "docs" / "adapters.md").read_text()
    section = text.split(heading, 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def reads_three_files(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Reads three files after each user prompt, then answers (for the docs example)."""
    assert validate_messages(from_pydantic_ai(messages)) == []
    done = 0
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and any(
            isinstance(part, UserPromptPart) for part in message.parts
        ):
            break
        done += isinstance(message, ModelResponse)
    usage = RequestUsage(input_tokens=1_000, output_tokens=20)
    if done < 3:
        call = ToolCallPart("read_file", {"path": f"api/{done}.py"}, tool_call_id=f"r{done}")
        return ModelResponse(parts=[call], usage=usage)
    return ModelResponse(parts=[TextPart("Done.")], usage=usage)


def test_the_docs_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    code = docs_example("## PydanticAI v2")
    line = 'MODEL = "anthropic:claude-sonnet-4-5"\n'
    assert line in code
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {
        "__name__": "docs_example",
        "fake_model": FunctionModel(reads_three_files),
    }
    exec(compile(code.replace(line, "MODEL = fake_model\n"), "docs/adapters.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert out.count("Done.") == 2
    assert "16 messages in the conversation" in out
    assert (tmp_path / "tasks" / "pagination").is_dir()
