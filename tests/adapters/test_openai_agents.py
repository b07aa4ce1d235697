"""WindowkeeperInputFilter in OpenAI Agents SDK runs, with the SDK's scripted model.

The model asks for ``read_file`` a number of times after each user prompt (each result is
several KB), then answers; every request it gets is checked: plain Responses input items that
pass ``validate_responses`` (every function_call answered), exactly what the session prepared,
and within the window by the session's estimate and by an independent count.
"""

from __future__ import annotations

import asyncio
import contextvars
import copy
import json
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, RunResult, SQLiteSession, function_tool, trace
from agents.items import ModelResponse
from agents.lifecycle import RunHooks
from agents.run_config import CallModelData, ModelInputData
from agents.run_context import RunContextWrapper
from agents.testing import ModelCall, ModelStep, ScriptedModel, assistant_message, function_call
from agents.tracing import setup as tracing_setup
from agents.tracing.provider import DefaultTraceProvider
from agents.usage import RequestUsage, Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from windowkeeper import (
    ConfigurationError,
    ContextSession,
    DistrustedUsageWarning,
    MalformedMessageError,
    Prepared,
)
from windowkeeper.adapters.openai_agents import (
    WindowkeeperInputFilter,
    WindowkeeperRunHooks,
    _response_usage,
)
from windowkeeper.core._notices import TRUNCATION_NOTICE
from windowkeeper.formats.responses import validate_responses
from windowkeeper.session._greeting import OPENING_TEXT

INSTRUCTIONS = "You are a careful coding agent. Read the files you need, then answer."
WINDOW = 12_000


@pytest.fixture(autouse=True)
def _quiet_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tracing on (the group id lives in the run's trace) but exported nowhere: a trace provider
    of the test's own, without processors."""
    provider = DefaultTraceProvider()
    provider.set_disabled(False)
    monkeypatch.setattr(tracing_setup, "GLOBAL_TRACE_PROVIDER", provider)


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


@function_tool
def read_file(path: str, step: int, steps: int) -> str:
    """Read a text file of the project."""
    return file_text(path, step, steps)


TOOL_JSON = json.dumps(read_file.params_json_schema)


def usage_for(size: int, share: float = 1.0) -> Usage:
    """What a provider might report for a request of ``size`` characters (``share`` of it)."""
    tokens = int(size / 3.2 * share)
    return Usage(
        requests=1,
        input_tokens=tokens,
        output_tokens=40,
        total_tokens=tokens + 40,
        input_tokens_details=InputTokensDetails(cached_tokens=tokens // 3, cache_write_tokens=0),
        output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
    )


def check_request(items: Sequence[Any], instructions: str | None, prepared: Prepared) -> None:
    """What the model got: valid Responses input, every call answered, within the window."""
    assert all(type(item) is dict for item in items)
    assert validate_responses(items) == []
    calls = {item["call_id"] for item in items if item.get("type") == "function_call"}
    outputs = {item["call_id"] for item in items if item.get("type") == "function_call_output"}
    assert calls == outputs
    assert instructions == INSTRUCTIONS
    assert prepared.estimated_tokens <= prepared.max_allowed_size
    independent = (len(json.dumps(items)) + len(INSTRUCTIONS) + len(TOOL_JSON)) / 3.5
    assert independent < WINDOW


class Script:
    """The model: ``steps`` reads after each user prompt, then an answer; checks each request."""

    def __init__(
        self, windowkeeper: WindowkeeperInputFilter, steps: int, usage_share: float = 1.0
    ) -> None:
        self.windowkeeper = windowkeeper
        self.steps = steps
        self.usage_share = usage_share  # below 1: a backend that under-reports
        self.requests: list[tuple[str, list[Any]]] = []

    def model(self) -> ScriptedModel:
        return ScriptedModel([ModelStep.respond(self) for _ in range(200)])

    def __call__(self, call: ModelCall) -> ModelStep:
        items = list(call.input)
        keys = [
            key
            for key in self.windowkeeper.conversation_ids
            if (prepared := self.windowkeeper.last_prepared(key)) is not None
            and prepared.messages == items
        ]
        assert keys, "the model got something the session did not prepare"
        prepared = self.windowkeeper.last_prepared(keys[0])
        assert prepared is not None
        check_request(items, call.system_instructions, prepared)
        self.requests.append((keys[0], items))
        last = items[-1]
        step = 1
        if last.get("type") == "function_call_output":
            step = int(last["output"].split(" ", 2)[1].split("/")[0]) + 1
        usage = usage_for(len(json.dumps(items)) + len(INSTRUCTIONS), self.usage_share)
        if step > self.steps:
            return ModelStep(output=[assistant_message("All parts read.")], usage=usage)
        arguments = {"path": f"src/part_{step}.py", "step": step, "steps": self.steps}
        call_id = f"call_{step}_{len(items)}"
        return ModelStep(
            output=[function_call("read_file", arguments, call_id=call_id)], usage=usage
        )


def build(
    windowkeeper: WindowkeeperInputFilter, steps: int, usage_share: float = 1.0
) -> tuple[Agent[Any], Script]:
    script = Script(windowkeeper, steps, usage_share)
    agent: Agent[Any] = Agent(
        name="reader", instructions=INSTRUCTIONS, model=script.model(), tools=[read_file]
    )
    return agent, script


def run(
    agent: Agent[Any],
    task: str | list[Any],
    windowkeeper: WindowkeeperInputFilter,
    *,
    hooks: RunHooks[Any] | None = None,
    context: Any = None,
    session: Any = None,
    **config: Any,
) -> RunResult:
    config.setdefault("tracing_disabled", True)
    return Runner.run_sync(
        agent,
        task,
        context=context,
        session=session,
        run_config=RunConfig(call_model_input_filter=windowkeeper, **config),
        hooks=hooks if hooks is not None else windowkeeper.hooks,
        max_turns=200,
    )


class Recording(RunHooks[Any]):
    """Run hooks of the application's own, which hand each response to the filter."""

    def __init__(self, windowkeeper: WindowkeeperInputFilter) -> None:
        self.windowkeeper = windowkeeper
        self.recorded: list[bool] = []

    async def on_llm_end(
        self, context: RunContextWrapper[Any], agent: Agent[Any], response: ModelResponse
    ) -> None:
        self.recorded.append(self.windowkeeper.record_response(response))


def check_full_history(items: Sequence[Any], steps: int, start: int = 0) -> None:
    """The run's history keeps every item, unmasked and unclipped: the window is a view."""
    outputs = [item for item in items[start:] if item.get("type") == "function_call_output"]
    assert len(outputs) == steps
    for step, item in enumerate(outputs, start=1):
        assert item["output"] == file_text(f"src/part_{step}.py", step, steps)
    assert items[-1]["role"] == "assistant"
    assert items[-1]["content"][0]["text"] == "All parts read."


@pytest.mark.parametrize(
    "options", [{}, {"mask_keep_recent": None}], ids=["masking-first", "hiding-turns"]
)
def test_a_long_run_stays_in_the_window(options: dict[str, Any]) -> None:
    windowkeeper = WindowkeeperInputFilter(WINDOW, **options)
    agent, script = build(windowkeeper, steps=32)
    hooks = Recording(windowkeeper)
    result = run(agent, "Summarize every part.", windowkeeper, hooks=hooks)

    history = result.to_input_list()
    check_full_history(history, 32)
    assert len(history) == 1 + 2 * 32 + 1
    assert len(script.requests) == 33
    assert hooks.recorded == [True] * 33  # every response's usage went to its request
    full = (len(json.dumps(history[:-1])) + len(INSTRUCTIONS)) / 3.5
    assert full > WINDOW  # the whole history would not fit
    assert windowkeeper.conversation_ids == ["default"]
    session = windowkeeper.session()
    assert session.history == history[:-1]
    last_sent = script.requests[-1][1]
    assert last_sent[0] == history[0]  # the task
    assert last_sent[-1] == history[-2]  # the newest output, unchanged
    sent_outputs = [item for item in last_sent if item.get("type") == "function_call_output"]
    if options:
        assert session.deleted_range is not None
        assert len(last_sent) < len(history) - 1
    else:  # older outputs masked in what is sent, never in the history
        assert any(item not in history for item in sent_outputs)
    prepared = windowkeeper.last_prepared()
    assert prepared is not None
    assert prepared.messages == last_sent


def test_a_conversation_that_opens_with_a_greeting_is_sent() -> None:
    """A chat app's greeting first: the Responses API takes an assistant message first, so the
    items go as they are (no placeholder), the greeting and the task in every request."""
    windowkeeper = WindowkeeperInputFilter(WINDOW, mask_keep_recent=None)
    agent, script = build(windowkeeper, steps=32)
    hello = {"role": "assistant", "content": "Hello! Which parts shall I summarize?"}
    result = run(agent, [hello, {"role": "user", "content": "Summarize every part."}], windowkeeper)
    assert len(script.requests) == 33  # each checked by check_request
    for _, items in script.requests:
        assert items[0]["role"] == "assistant"
        assert "Hello! Which parts shall I summarize?" in json.dumps(items[0])
        assert items[1]["role"] == "user"
        assert "Summarize every part." in json.dumps(items[1])
        assert TRUNCATION_NOTICE not in json.dumps(items[1])
        assert OPENING_TEXT not in json.dumps(items)
    assert windowkeeper.session().deleted_range is not None
    assert TRUNCATION_NOTICE in json.dumps(script.requests[-1][1][0])
    history = result.to_input_list()
    assert history[0] == hello
    assert OPENING_TEXT not in json.dumps(history)


def test_a_backend_that_under_reports_usage_stays_in_the_window() -> None:
    """Usage at 2 % of the truth is distrusted: no request goes over the window."""
    windowkeeper = WindowkeeperInputFilter(WINDOW)
    agent, script = build(windowkeeper, steps=32, usage_share=0.02)
    with pytest.warns(DistrustedUsageWarning):
        run(agent, "Summarize every part.", windowkeeper)
    assert len(script.requests) == 33  # each checked by check_request: none over the window
    prepared = windowkeeper.last_prepared()
    assert prepared is not None
    assert any(action.step == "usage-distrusted" for action in prepared.actions)


def test_concurrent_streamed_conversations_keyed_by_context() -> None:
    windowkeeper = WindowkeeperInputFilter(
        WINDOW, conversation_id_from=lambda data: data.context["chat"]
    )
    agent, script = build(windowkeeper, steps=30)
    hooks = Recording(windowkeeper)

    async def one(chat: str, task: str) -> list[Any]:
        result = Runner.run_streamed(
            agent,
            task,
            context={"chat": chat},
            run_config=RunConfig(call_model_input_filter=windowkeeper, tracing_disabled=True),
            hooks=hooks,
            max_turns=200,
        )
        async for _ in result.stream_events():
            pass
        return result.to_input_list()

    async def both() -> list[list[Any]]:
        return await asyncio.gather(one("one", "Async task one"), one("two", "Async task two"))

    first, second = asyncio.run(both())
    check_full_history(first, 30)
    check_full_history(second, 30)
    assert sorted(windowkeeper.conversation_ids) == ["one", "two"]
    assert windowkeeper.session("one").history == first[:-1]
    assert windowkeeper.session("two").history == second[:-1]
    assert [key for key, _ in script.requests].count("one") == 31
    assert [key for key, _ in script.requests].count("two") == 31
    assert hooks.recorded == [True] * 62  # each run's usage went to its own conversation


def test_conversations_are_keyed_by_the_group_id() -> None:
    windowkeeper = WindowkeeperInputFilter(WINDOW)
    agent, script = build(windowkeeper, steps=5)
    traced = {"tracing_disabled": False}
    first = run(agent, "Task A", windowkeeper, group_id="a", **traced)
    second = run(agent, "Task B", windowkeeper, group_id="b", **traced)
    more = [*first.to_input_list(), {"role": "user", "content": "More of task A"}]
    with trace("one call", group_id="a"):  # what the continued run's first call does
        windowkeeper(call_data(agent, more))
    synced = windowkeeper.last_synced("a")
    assert synced is not None
    assert (synced.kept, synced.appended) == (len(first.to_input_list()) - 1, 2)
    again = run(agent, more, windowkeeper, group_id="a", **traced)

    a, b = windowkeeper.session("a"), windowkeeper.session("b")
    assert a is not b
    assert a.history[0]["content"] == "Task A"
    assert b.history[0]["content"] == "Task B"
    assert b.history == second.to_input_list()[:-1]
    assert a.history == again.to_input_list()[:-1]
    check_full_history(again.to_input_list(), 5, start=len(more))
    synced = windowkeeper.last_synced("a")
    assert synced is not None
    assert synced.dropped == 0
    assert not synced.restarted
    assert {key for key, _ in script.requests} == {"a", "b"}

    with trace("workflow", group_id="c"):  # an enclosing trace names the conversation too
        run(agent, "Task C", windowkeeper, **traced)
    run(agent, "Task D", windowkeeper, group_id="d")  # tracing off: the group id is not seen
    assert sorted(windowkeeper.conversation_ids) == ["a", "b", "c", "default"]
    assert windowkeeper.session("default").history[0]["content"] == "Task D"


def test_an_sdk_session_continues_the_conversation() -> None:
    windowkeeper = WindowkeeperInputFilter(WINDOW, conversation_id_from=lambda data: "chat")
    agent, script = build(windowkeeper, steps=3)
    memory = SQLiteSession("chat")
    try:
        run(agent, "First question", windowkeeper, session=memory)
        known = len(windowkeeper.session("chat").history)
        run(agent, "Second question", windowkeeper, session=memory)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            loop = asyncio.get_event_loop()  # run_sync's loop, which the session is bound to
        stored = loop.run_until_complete(memory.get_items())
    finally:
        memory.close()
    synced = windowkeeper.last_synced("chat")
    assert synced is not None
    assert synced.kept >= known
    assert not synced.restarted
    assert windowkeeper.session("chat").history == stored[:-1]
    assert len(script.requests) == 8


def test_a_new_filter_resumes_the_conversation_from_its_task_folder(tmp_path: Path) -> None:
    options: dict[str, Any] = {"mask_keep_recent": None}
    first = WindowkeeperInputFilter(
        WINDOW, task_root=tmp_path, conversation_id_from=lambda data: "conv 1", **options
    )
    agent, _ = build(first, steps=24)
    result = run(agent, "First task", first)
    before = first.session("conv 1")
    assert before.deleted_range is not None  # there is a decision to resume
    first.close()
    assert len(list(tmp_path.iterdir())) == 1  # one folder, named after the key

    # The history as an application stores it: JSON, read back into new objects.
    history = json.loads(json.dumps(result.to_input_list()))
    second = WindowkeeperInputFilter(
        WINDOW, task_root=tmp_path, conversation_id_from=lambda data: "conv 1", **options
    )
    resumed = second.session("conv 1")
    assert resumed.history == before.history
    assert resumed.deleted_range == before.deleted_range

    agent, script = build(second, steps=5)
    task = [*history, {"role": "user", "content": "Second task"}]
    second(call_data(agent, task))  # what the next run's first call does
    synced = second.last_synced("conv 1")
    assert synced is not None
    assert (synced.kept, synced.appended, synced.dropped) == (len(before.history), 2, 0)
    assert second.last_prepared("conv 1") is not None
    more = run(agent, task, second)
    synced = second.last_synced("conv 1")
    assert synced is not None
    assert synced.dropped == 0
    assert not synced.restarted
    assert len(script.requests) == 6
    assert len(more.to_input_list()) == len(history) + 1 + 2 * 5 + 1
    assert second.conversation_ids == ["conv 1"]
    second.close()


def call_data(agent: Agent[Any], items: list[Any]) -> CallModelData[Any]:
    return CallModelData(
        model_data=ModelInputData(input=items, instructions=INSTRUCTIONS), agent=agent, context=None
    )


def sdk_items() -> list[Any]:
    return [
        {"role": "developer", "content": "Answer in French. " * 200},
        {"role": "user", "content": "Look at a."},
        ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="Looking.", annotations=[])],
        ),
        ResponseFunctionToolCall(
            type="function_call",
            call_id="c1",
            name="read_file",
            arguments='{"path":"a"}',
            id="fc_1",
        ),
        {"type": "function_call_output", "call_id": "c1", "output": "the text of a"},
    ]


def test_items_system_prompt_and_schemas() -> None:
    helper: Agent[Any] = Agent(name="helper", instructions="Help.")
    agent: Agent[Any] = Agent(
        name="main", instructions=INSTRUCTIONS, tools=[read_file], handoffs=[helper]
    )
    windowkeeper = WindowkeeperInputFilter(WINDOW, max_output_tokens=500)
    items = sdk_items()
    kept = copy.deepcopy(items)
    output = windowkeeper(call_data(agent, items))

    assert isinstance(output, ModelInputData)
    assert output.instructions == INSTRUCTIONS
    assert items == kept  # the run's items are not changed
    assert all(isinstance(item, dict) for item in output.input)
    assert validate_responses(output.input) == []
    assert output.input[0] == {"role": "developer", "content": "Answer in French. " * 200}
    assert output.input[2]["content"][0]["text"] == "Looking."
    assert output.input[3]["call_id"] == "c1"
    assert output.input[3]["arguments"] == '{"path":"a"}'
    full = windowkeeper.last_prepared()
    assert full is not None

    # The same input again: nothing new for the session.
    windowkeeper(call_data(agent, items))
    synced = windowkeeper.last_synced()
    assert synced is not None
    assert (synced.kept, synced.appended, synced.dropped) == (len(items), 0, 0)

    # The estimate counts the developer text, the tools and handoffs and the reserve.
    bare: Agent[Any] = Agent(name="bare", instructions=INSTRUCTIONS)
    smaller = WindowkeeperInputFilter(WINDOW)
    smaller(call_data(bare, sdk_items()[1:]))
    small = smaller.last_prepared()
    assert small is not None
    developer_tokens = len("Answer in French. " * 200) // 4
    assert full.estimated_tokens > small.estimated_tokens + 500 + developer_tokens

    with pytest.raises(MalformedMessageError, match="type"):
        windowkeeper(call_data(agent, [*items, {"type": "item_reference", "id": "ws_1"}]))
    search = {"type": "web_search_call", "id": "ws_1", "status": "completed"}
    carried = windowkeeper(call_data(agent, [*items, search, {"role": "user", "content": "ok"}]))
    assert search in carried.input  # a hosted tool's item: sent back as it came


def test_usage_goes_to_the_request_it_answers() -> None:
    agent: Agent[Any] = Agent(name="main", instructions=INSTRUCTIONS)
    windowkeeper = WindowkeeperInputFilter(WINDOW)
    items: list[Any] = [{"role": "user", "content": "Hello."}]
    response = ModelResponse(output=[], usage=usage_for(3_000), response_id="r1")
    assert windowkeeper.hooks is windowkeeper.hooks
    assert isinstance(windowkeeper.hooks, WindowkeeperRunHooks)
    assert not windowkeeper.record_response(response)  # no request prepared in this run

    run_one = contextvars.copy_context()  # the context of one run's task
    run_one.run(windowkeeper, call_data(agent, items))
    assert run_one.run(windowkeeper.record_response, response)
    assert not run_one.run(windowkeeper.record_response, response)  # once
    assert not WindowkeeperInputFilter(WINDOW).record_response(response)

    run_one.run(windowkeeper, call_data(agent, items))
    run_two = contextvars.copy_context()
    run_two.run(windowkeeper, call_data(agent, items))  # the conversation prepared again since
    assert not run_one.run(windowkeeper.record_response, response)
    assert run_two.run(windowkeeper.record_response, response)

    counted = _response_usage(response)
    assert counted is not None
    assert (counted.tokens_in, counted.tokens_out, counted.cache_reads) == (625, 40, 312)
    summed = Usage(requests=2, input_tokens=900, output_tokens=10, total_tokens=910)
    assert _response_usage(ModelResponse(output=[], usage=summed, response_id="r2")) is None
    details = InputTokensDetails(cached_tokens=100, cache_write_tokens=50)
    reasoning = OutputTokensDetails(reasoning_tokens=0)
    retried = Usage(
        requests=2,
        input_tokens=800,
        output_tokens=30,
        total_tokens=830,
        request_usage_entries=[
            RequestUsage(
                0, 0, 0, InputTokensDetails(cached_tokens=0, cache_write_tokens=0), reasoning
            ),
            RequestUsage(800, 30, 830, details, reasoning),
        ],
    )
    counted = _response_usage(ModelResponse(output=[], usage=retried, response_id="r3"))
    assert counted is not None
    assert (counted.tokens_in, counted.cache_reads, counted.cache_writes) == (650, 100, 50)
    nothing = ModelResponse(output=[], usage=Usage(), response_id="r4")
    assert _response_usage(nothing) is None


def test_arguments_are_checked(tmp_path: Path) -> None:
    agent: Agent[Any] = Agent(name="main", instructions=INSTRUCTIONS)
    items: list[Any] = [{"role": "user", "content": "Hello."}]
    with pytest.raises(ConfigurationError, match="at most one"):
        WindowkeeperInputFilter(task_root=tmp_path, store_factory=lambda key: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(ConfigurationError, match="set by the adapter"):
        WindowkeeperInputFilter(format="openai")
    with pytest.raises(ConfigurationError, match="max_output_tokens"):
        WindowkeeperInputFilter(max_output_tokens=-1)
    with pytest.raises(ConfigurationError, match="conversation_id_from must be callable"):
        WindowkeeperInputFilter(conversation_id_from="chat")  # type: ignore[arg-type]
    wrong_key = WindowkeeperInputFilter(WINDOW, conversation_id_from=lambda data: 7)  # type: ignore[arg-type, return-value]
    with pytest.raises(ConfigurationError, match="conversation_id_from must return"):
        wrong_key(call_data(agent, items))
    anthropic = WindowkeeperInputFilter(session_factory=lambda key: ContextSession(WINDOW))
    with pytest.raises(ConfigurationError, match="format='responses'"):
        anthropic(call_data(agent, items))
    made = WindowkeeperInputFilter(
        session_factory=lambda key: ContextSession(WINDOW, format="responses")
    )
    assert made(call_data(agent, items)).input == items
    assert made.conversation_ids == ["default"]
    made.forget("default")
    assert made.conversation_ids == []


def docs_example(heading: str) -> str:
    """The first Python block after ``heading`` in docs/adapters.md."""
    text = (Path(__file__).parents[2] / "docs" / "adapters.md").read_text()
    section = text.split(heading, 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def reads_three_files(call: ModelCall) -> ModelStep:
    """Reads three files after each user prompt, then answers (for the docs example)."""
    assert validate_responses(call.input) == []
    done = 0
    for item in reversed(call.input):
        if item.get("role") == "user":
            break
        done += item.get("type") == "function_call"
    usage = usage_for(3_200)
    if done < 3:
        call_id = f"r{len(call.input)}"
        step = function_call("read_file", {"path": f"api/{done}.py"}, call_id=call_id)
        return ModelStep(output=[step], usage=usage)
    return ModelStep(output=[assistant_message("Done.")], usage=usage)


def test_the_docs_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    code = docs_example("## OpenAI Agents SDK")
    line = 'MODEL = "gpt-4.1"\n'
    assert line in code
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {
        "__name__": "docs_example",
        "fake_model": ScriptedModel([ModelStep.respond(reads_three_files) for _ in range(8)]),
    }
    exec(compile(code.replace(line, "MODEL = fake_model\n"), "docs/adapters.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert out.count("Done.") == 2
    assert "16 items in the conversation" in out
    assert (tmp_path / "tasks" / "pagination").is_dir()
    namespace["windowkeeper"].close()
