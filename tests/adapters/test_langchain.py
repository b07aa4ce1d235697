"""WindowkeeperMiddleware in LangChain v1 agents (create_agent), with a scripted tool-calling model.

The model asks for ``read_file`` a number of times after each user message (each result is
several KB), then answers; every request it gets is checked: LangChain messages with every tool
call answered by its tool message, valid Anthropic requests once converted, and within the
window by the session's estimate and by an independent count.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.config import get_config

from windowkeeper import ConfigurationError, DistrustedUsageWarning, Prepared, validate_messages
from windowkeeper.adapters.langchain import WindowkeeperMiddleware, from_langchain
from windowkeeper.core._notices import TRUNCATION_NOTICE
from windowkeeper.session._greeting import OPENING_TEXT

SYSTEM = "You are a careful coding agent. Read the files you need, then answer."
WINDOW = 20_000
_STEP = re.compile(r"step (\d+)/(\d+)")


def file_text(path: str, step: int, steps: int) -> str:
    """A tool result of about 4 KB whose first line says which step it answers."""
    lines = [f"step {step}/{steps}: {path}"]
    lines += [
        f"{path}:{n:03d}  def function_{n}(value): return value * {n}  # {step}" for n in range(60)
    ]
    return "\n".join(lines)


@tool
def read_file(path: str, step: int, steps: int) -> str:
    """Read a text file of the project."""
    return file_text(path, step, steps)


class ScriptedToolModel(GenericFakeChatModel):
    """After each user message, asks for ``steps`` file reads one at a time, then answers.

    It reports usage as a provider would (a third of the input read from the cache), and hands
    every request to ``probe`` before answering.
    """

    steps: int = 30
    probe: Any = None
    usage_share: float = 1.0  # below 1: a backend that under-reports

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedToolModel:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.probe is not None:
            self.probe(list(messages))
        last = messages[-1]
        match = _STEP.match(last.content) if isinstance(last, ToolMessage) else None
        step = int(match[1]) + 1 if match else 1
        size = (len(json.dumps(from_langchain(messages))) + len(SYSTEM)) * self.usage_share
        usage = {
            "input_tokens": int(size / 3.2),
            "output_tokens": 40,
            "total_tokens": int(size / 3.2) + 40,
            "input_token_details": {"cache_read": int(size / 9.6)},
        }
        if step <= self.steps:
            message = AIMessage(
                content=f"Reading part {step}.",
                tool_calls=[
                    {
                        "name": "read_file",
                        "args": {"path": f"src/part_{step}.py", "step": step, "steps": self.steps},
                        "id": f"call_{step}_{len(messages)}",
                        "type": "tool_call",
                    }
                ],
                usage_metadata=usage,  # type: ignore[arg-type]
            )
        else:
            message = AIMessage(content="All parts read.", usage_metadata=usage)  # type: ignore[arg-type]
        return ChatResult(generations=[ChatGeneration(message=message)])


def check_request(messages: Sequence[BaseMessage], prepared: Prepared | None) -> None:
    """What the model got: LangChain messages, paired tool calls, valid and within the window."""
    assert all(isinstance(message, BaseMessage) for message in messages)
    assert isinstance(messages[0], SystemMessage)
    assert isinstance(messages[1], HumanMessage)
    waiting: set[str] = set()
    for message in messages[1:]:
        if isinstance(message, ToolMessage):
            assert message.tool_call_id in waiting, "a tool message answers no pending call"
            waiting.discard(message.tool_call_id)
            continue
        assert not waiting, f"tool calls {waiting} unanswered before a {message.type} message"
        if isinstance(message, AIMessage):
            waiting = {call["id"] for call in message.tool_calls if call["id"]}
    assert not waiting
    converted = from_langchain(messages)
    assert validate_messages(converted) == []
    assert prepared is not None
    assert prepared.estimated_tokens <= prepared.max_allowed_size
    independent = (len(json.dumps(converted)) + len(SYSTEM)) / 3.5
    assert independent < WINDOW


class Recorder:
    """Checks and keeps every request the model gets, with the session's decision for it."""

    def __init__(self, middleware: WindowkeeperMiddleware) -> None:
        self.middleware = middleware
        self.requests: list[tuple[str | None, list[BaseMessage], Prepared | None]] = []

    def __call__(self, messages: list[BaseMessage]) -> None:
        thread = get_config().get("configurable", {}).get("thread_id")
        prepared = self.middleware.last_prepared(thread)
        check_request(messages, prepared)
        self.requests.append((thread, messages, prepared))


def build(
    middleware: WindowkeeperMiddleware,
    *,
    steps: int = 30,
    checkpointer: InMemorySaver | None = None,
    usage_share: float = 1.0,
    model_class: type[ScriptedToolModel] = ScriptedToolModel,
) -> tuple[Any, Recorder]:
    recorder = Recorder(middleware)
    model = model_class(messages=iter(()), steps=steps, probe=recorder, usage_share=usage_share)
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=[middleware],
        checkpointer=checkpointer if checkpointer is not None else InMemorySaver(),
    )
    return agent, recorder


def config(thread: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}, "recursion_limit": 500}


def check_full_state(messages: Sequence[BaseMessage], steps: int) -> None:
    """The graph state keeps every message, unmasked and unclipped: the window is a view."""
    results = [message for message in messages if isinstance(message, ToolMessage)]
    assert len(results) == steps
    for step, result in enumerate(results, start=1):
        assert result.content == file_text(f"src/part_{step}.py", step, steps)
    assert isinstance(messages[-1], AIMessage)
    assert messages[-1].content == "All parts read."


@pytest.mark.parametrize(
    "options",
    [{}, {"mask_keep_recent": None}],
    ids=["masking-first", "hiding-turns"],
)
def test_a_long_run_stays_in_the_window(options: dict[str, Any]) -> None:
    middleware = WindowkeeperMiddleware(context_window=WINDOW, **options)
    agent, recorder = build(middleware, steps=32)
    state = agent.invoke({"messages": [HumanMessage("Summarize every part.")]}, config("t"))

    check_full_state(state["messages"], 32)
    assert len(recorder.requests) == 33
    assert len(state["messages"]) == 1 + 2 * 32 + 1
    # The full history would not fit: the session must have shrunk the later requests.
    full = (len(json.dumps(from_langchain(state["messages"][:-1]))) + len(SYSTEM)) / 3.5
    assert full > WINDOW
    session = middleware.session("t")
    assert len(session.history) == len(state["messages"]) - 1
    if options:
        assert session.deleted_range is not None
        sent = recorder.requests[-1][1]
        assert len(sent) < len(state["messages"])
    # Unchanged messages are the framework's own objects (the task, the newest result).
    last_sent = recorder.requests[-1][1]
    assert last_sent[1] is not None
    assert last_sent[1].content == "Summarize every part."
    newest = [m for m in state["messages"] if isinstance(m, ToolMessage)][-1]
    assert last_sent[-1].id == newest.id
    assert last_sent[-1].content == newest.content


def test_a_backend_that_under_reports_usage_stays_in_the_window() -> None:
    """Usage at 2 % of the truth is distrusted: no request goes over the window."""
    middleware = WindowkeeperMiddleware(context_window=WINDOW)
    agent, recorder = build(middleware, steps=32, usage_share=0.02)
    with pytest.warns(DistrustedUsageWarning):
        agent.invoke({"messages": [HumanMessage("Summarize every part.")]}, config("low"))
    assert len(recorder.requests) == 33  # each checked by check_request: none over the window
    prepared = middleware.last_prepared("low")
    assert prepared is not None
    assert any(action.step == "usage-distrusted" for action in prepared.actions)


def test_a_conversation_that_opens_with_a_greeting_is_sent() -> None:
    """A chat app's greeting first: the model gets the placeholder user turn, then the greeting
    and the task (kept in every request, never noticed over); the state holds neither."""
    middleware = WindowkeeperMiddleware(context_window=WINDOW, mask_keep_recent=None)
    agent, recorder = build(middleware, steps=32)
    hello = AIMessage("Hello! Which parts shall I summarize?")
    state = agent.invoke(
        {"messages": [hello, HumanMessage("Summarize every part.")]}, config("greeted")
    )
    assert len(recorder.requests) == 33  # each checked by check_request (a human message first)
    for _, sent, prepared in recorder.requests:
        assert prepared is not None
        assert sent[1].content == OPENING_TEXT
        assert isinstance(sent[2], AIMessage)
        assert hello.content in sent[2].text
        assert "Summarize every part." in sent[3].text
        assert (TRUNCATION_NOTICE in sent[2].text) is (prepared.deleted_range is not None)
        assert TRUNCATION_NOTICE not in sent[3].text
    assert middleware.session("greeted").deleted_range is not None
    assert recorder.requests[0][1][2] is state["messages"][0]  # the very object, unchanged
    assert [m.content for m in state["messages"][:2]] == [hello.content, "Summarize every part."]
    assert all(OPENING_TEXT not in str(m.content) for m in state["messages"])
    assert middleware.session("greeted").history[0]["role"] == "assistant"


def test_threads_have_their_own_sessions() -> None:
    middleware = WindowkeeperMiddleware(context_window=WINDOW)
    agent, recorder = build(middleware, steps=6)
    first = agent.invoke({"messages": [HumanMessage("Task A")]}, config("a"))
    second = agent.invoke({"messages": [HumanMessage("Task B")]}, config("b"))
    again = agent.invoke({"messages": [HumanMessage("More of task A")]}, config("a"))

    assert sorted(middleware.conversation_ids) == ["a", "b"]
    a, b = middleware.session("a"), middleware.session("b")
    assert a is not b
    assert a.history[0]["content"] == "Task A"
    assert b.history[0]["content"] == "Task B"
    assert len(b.history) == len(second["messages"]) - 1
    assert len(a.history) == len(again["messages"]) - 1 > len(first["messages"])
    # The second task of thread a extended its session: nothing was cut or started over.
    synced = middleware.last_synced("a")
    assert synced is not None
    assert synced.dropped == 0
    assert not synced.restarted
    assert {thread for thread, _, _ in recorder.requests} == {"a", "b"}


def test_without_a_thread_id_one_default_session() -> None:
    middleware = WindowkeeperMiddleware(context_window=WINDOW, default_conversation_id="solo")
    recorder = Recorder(middleware)
    model = ScriptedToolModel(messages=iter(()), steps=4, probe=recorder)
    agent = create_agent(model, tools=[read_file], system_prompt=SYSTEM, middleware=[middleware])
    state = agent.invoke({"messages": [HumanMessage("Task")]})
    assert middleware.conversation_ids == ["solo"]
    assert len(middleware.session("solo").history) == len(state["messages"]) - 1


def test_async_runs_and_concurrent_threads() -> None:
    middleware = WindowkeeperMiddleware(context_window=WINDOW)
    agent, recorder = build(middleware, steps=30)

    async def run() -> list[dict[str, Any]]:
        return await asyncio.gather(
            agent.ainvoke({"messages": [HumanMessage("Async task one")]}, config("one")),
            agent.ainvoke({"messages": [HumanMessage("Async task two")]}, config("two")),
        )

    one, two = asyncio.run(run())
    check_full_state(one["messages"], 30)
    check_full_state(two["messages"], 30)
    assert len(recorder.requests) == 62
    assert middleware.session("one").history[0]["content"] == "Async task one"
    assert middleware.session("two").history[0]["content"] == "Async task two"


def test_a_new_agent_resumes_the_thread_from_its_task_folder(tmp_path: Path) -> None:
    checkpointer = InMemorySaver()
    first = WindowkeeperMiddleware(context_window=WINDOW, task_root=tmp_path, mask_keep_recent=None)
    agent, _ = build(first, steps=24, checkpointer=checkpointer)
    state = agent.invoke({"messages": [HumanMessage("First task")]}, config("job/7"))
    before = first.session("job/7")
    assert before.deleted_range is not None  # there is a decision to resume
    first.close()
    folders = list(tmp_path.iterdir())
    assert len(folders) == 1
    assert folders[0].name.startswith("job_7-")

    second = WindowkeeperMiddleware(
        context_window=WINDOW, task_root=tmp_path, mask_keep_recent=None
    )
    resumed = second.session("job/7")
    assert resumed.history == before.history
    assert resumed.deleted_range == before.deleted_range

    agent, recorder = build(second, steps=5, checkpointer=checkpointer)
    more = agent.invoke({"messages": [HumanMessage("Second task")]}, config("job/7"))
    synced = second.last_synced("job/7")
    assert synced is not None
    assert synced.dropped == 0
    assert not synced.restarted
    assert len(more["messages"]) == len(state["messages"]) + 1 + 2 * 5 + 1
    assert len(recorder.requests) == 6
    assert len(second.session("job/7").history) == len(more["messages"]) - 1


class ReusesCallIds(ScriptedToolModel):
    """Gives every tool call the same id, as some providers do."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager, **kwargs)
        message = result.generations[0].message
        assert isinstance(message, AIMessage)
        if message.tool_calls:
            calls = [{**message.tool_calls[0], "id": "call_0"}]
            message = message.model_copy(update={"tool_calls": calls})
        return ChatResult(generations=[ChatGeneration(message=message)])


def test_reused_tool_call_ids_are_renamed_in_the_view() -> None:
    middleware = WindowkeeperMiddleware(context_window=WINDOW)
    recorder = Recorder(middleware)
    model = ReusesCallIds(messages=iter(()), steps=8, probe=recorder)
    agent = create_agent(
        model,
        tools=[read_file],
        system_prompt=SYSTEM,
        middleware=[middleware],
        checkpointer=InMemorySaver(),
    )
    state = agent.invoke({"messages": [HumanMessage("Task")]}, config("ids"))
    assert len(recorder.requests) == 9  # each checked: ids unique and paired in every request
    sent = recorder.requests[-1][1]
    ids = [call["id"] for m in sent if isinstance(m, AIMessage) for call in m.tool_calls]
    assert len(ids) == len(set(ids)) == 8
    stored = [
        call["id"] for m in state["messages"] if isinstance(m, AIMessage) for call in m.tool_calls
    ]
    assert set(stored) == {"call_0"}  # the state keeps what the model said


def test_changed_messages_are_copies_and_opaque_blocks_stay() -> None:
    """A direct call: a result too large for its share is clipped in a copy; others are shared."""
    middleware = WindowkeeperMiddleware(
        context_window=WINDOW, max_output_tokens=1_000, shrink_target=1.0
    )
    thinking = {"type": "thinking", "thinking": "Let me look.", "signature": "c2ln"}
    first_answer = AIMessage(
        content=[
            thinking,
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a.py"}},
        ],
        tool_calls=[
            {"name": "read_file", "args": {"path": "a.py"}, "id": "t1", "type": "tool_call"}
        ],
        id="answer-1",
    )
    huge = ToolMessage(content="x = 1\n" * 5_000, tool_call_id="t1", id="result-1")
    messages: list[Any] = [HumanMessage("Look at a.py", id="task"), first_answer, huge]
    seen: list[list[Any]] = []

    def handler(request: ModelRequest[Any]) -> ModelResponse[Any]:
        seen.append(list(request.messages))
        return ModelResponse(result=[AIMessage(content="Done.")])

    request = ModelRequest(model=ScriptedToolModel(messages=iter(())), messages=messages)
    middleware.wrap_model_call(request, handler)
    sent = seen[0]
    assert sent[0] is messages[0]
    assert sent[1] is first_answer
    assert isinstance(sent[2], ToolMessage)
    assert sent[2] is not huge
    assert sent[2].id == "result-1"
    assert sent[2].tool_call_id == "t1"
    assert len(sent[2].content) < len(huge.content)
    assert request.messages[2] is huge  # the request itself is not changed
    assert middleware.last_prepared() is not None
    assert middleware.last_prepared().clipped  # type: ignore[union-attr]


def test_conversion_rules() -> None:
    image = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
    messages = [
        SystemMessage("leading system text"),
        HumanMessage(content=[{"type": "text", "text": "What is here?"}, image]),
        AIMessage(
            content=[
                {"type": "reasoning", "reasoning": "hm"},
                {"type": "tool_use", "id": "c1", "name": "look", "input": {}},
            ],
            tool_calls=[{"name": "look", "args": {"n": (1, 2)}, "id": "c1", "type": "tool_call"}],
            invalid_tool_calls=[
                {
                    "name": "bad",
                    "args": "{not json",
                    "id": "c2",
                    "error": "x",
                    "type": "invalid_tool_call",
                }
            ],
        ),
        ToolMessage(content="seen", tool_call_id="c1"),
        ToolMessage(content="bad arguments", tool_call_id="c2", status="error"),
        SystemMessage("a mid-conversation note"),
        HumanMessage("Thanks."),
    ]
    converted = from_langchain(messages)
    assert converted == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is here?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "c1", "name": "look", "input": {"n": [1, 2]}},
                {
                    "type": "tool_use",
                    "id": "c2",
                    "name": "bad",
                    "input": {"arguments": "{not json"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "seen"},
                {
                    "type": "tool_result",
                    "tool_use_id": "c2",
                    "content": "bad arguments",
                    "is_error": True,
                },
                {"type": "text", "text": "Thanks."},
            ],
        },
    ]
    assert validate_messages(converted) == []


def test_arguments_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="at most one"):
        WindowkeeperMiddleware(task_root=tmp_path, store_factory=lambda key: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(ConfigurationError, match="set by the adapter"):
        WindowkeeperMiddleware(task_dir=tmp_path)
    with pytest.raises(ConfigurationError, match="session_factory"):
        WindowkeeperMiddleware(counter=object())


def test_importing_windowkeeper_imports_no_framework() -> None:
    code = (
        "import sys, windowkeeper, windowkeeper.adapters\n"
        "bad = [m for m in ('langchain', 'langchain_core', 'langgraph', 'pydantic_ai') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parent)


def docs_example(heading: str) -> str:
    """The first Python block after ``heading`` in docs/adapters.md."""
    text = (Path(__file__).parents[2] / "docs" / "adapters.md").read_text()
    section = text.split(heading, 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


class ReadsThreeFiles(GenericFakeChatModel):
    """Reads three files after each user message, then answers (for the docs example)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ReadsThreeFiles:
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        assert validate_messages(from_langchain(messages)) == []
        done = 0
        for message in reversed(messages):
            if isinstance(message, HumanMessage):
                break
            done += isinstance(message, ToolMessage)
        usage = {"input_tokens": 1_000, "output_tokens": 20, "total_tokens": 1_020}
        if done < 3:
            call = {"name": "read_file", "args": {"path": f"api/{done}.py"}, "id": f"r{done}"}
            message = AIMessage(content="", tool_calls=[call], usage_metadata=usage)  # type: ignore[arg-type, list-item]
        else:
            message = AIMessage(content="Pagination added.", usage_metadata=usage)  # type: ignore[arg-type]
        return ChatResult(generations=[ChatGeneration(message=message)])


def test_the_docs_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    code = docs_example("## LangChain v1")
    line = 'MODEL = "anthropic:claude-sonnet-4-5"\n'
    assert line in code
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {
        "__name__": "docs_example",
        "fake_model": ReadsThreeFiles(messages=iter(())),
    }
    exec(compile(code.replace(line, "MODEL = fake_model\n"), "docs/adapters.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert "Pagination added." in out
    assert "8 messages in the thread" in out
    assert (tmp_path / "tasks" / "pagination").is_dir()


class SendsLargeAnswers(ScriptedToolModel):
    """A chat model that sends ``max_tokens`` with every request, as langchain-anthropic does."""

    max_tokens: int = 6_000


def test_the_reserve_is_what_the_wrapped_model_sends() -> None:
    """A smaller max_output_tokens does not shrink the reserve below the model's max_tokens."""
    middleware = WindowkeeperMiddleware(
        context_window=WINDOW, max_output_tokens=1_000, shrink_target=1.0
    )
    agent, recorder = build(middleware, steps=24, model_class=SendsLargeAnswers)
    agent.invoke({"messages": [HumanMessage("Summarize every part.")]}, config("big"))
    sizes = [
        (len(json.dumps(from_langchain(messages))) + len(SYSTEM)) / 3.0
        for _thread, messages, _prepared in recorder.requests
    ]
    assert len(sizes) == 25
    assert all(size + 6_000 < WINDOW for size in sizes)  # prompt + what the model may answer
    prepared = middleware.last_prepared("big")
    assert prepared is not None
    assert prepared.estimated_tokens >= 6_000


@pytest.mark.parametrize("keyword", ["conversation_id_from", "thread_key"])
def test_a_function_names_the_conversation(keyword: str) -> None:
    """``conversation_id_from(request)`` replaces the thread rule (``thread_key``, its older
    name, still works with a DeprecationWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        middleware = WindowkeeperMiddleware(
            context_window=WINDOW, **{keyword: lambda request: "chosen"}
        )
    seen: list[list[BaseMessage]] = []
    model = ScriptedToolModel(messages=iter(()), steps=3, probe=seen.append)
    agent = create_agent(model, tools=[read_file], system_prompt=SYSTEM, middleware=[middleware])
    agent.invoke({"messages": [HumanMessage("Task")]}, config("thread-1"))
    assert middleware.conversation_ids == ["chosen"]
    assert seen
    assert middleware.last_prepared("chosen") is not None
    deprecations = [str(w.message) for w in caught if w.category is DeprecationWarning]
    expected = ["thread_key is deprecated: use conversation_id_from"]
    assert deprecations == (expected if keyword == "thread_key" else [])
