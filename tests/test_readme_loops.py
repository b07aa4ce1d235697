"""The README's agent loops, run verbatim with the real SDKs against the strict API doubles.

The code blocks are read from README.md, so the documentation cannot drift from what works. Each
loop runs 40+ requests in a folder of generated source files, at windows of 20k, 40k and 200k
tokens, sync and async, is killed at random points and run again on the same task folder until
the task is done, then run once more (which must send nothing). Every request must be accepted
by the double, which checks the provider's rules and the window by its own token count.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import windowkeeper
from windowkeeper import ContextSession
from windowkeeper.session._summary import summary_instruction

from .doubles import AnthropicDouble, ApiDouble, OpenAIDouble, Reply, ToolCall

README = Path(__file__).resolve().parent.parent / "README.md"
TURNS = 44  # requests that ask for tools before the final answer
PATHS = [f"src/module_{n}.py" for n in range(12)]


def readme_block(marker: str) -> str:
    """The README's python code block that contains ``marker``."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    found = [block for block in blocks if marker in block]
    assert len(found) == 1, f"expected one README block with {marker!r}, found {len(found)}"
    return found[0]


ANTHROPIC_LOOP = readme_block("client = anthropic.Anthropic()")
OPENAI_LOOP = readme_block("client = openai.OpenAI()")
COMPACTING_LOOP = readme_block('summarize="in-band"')


def as_async(code: str, call: str) -> str:
    """The README's statement made code: the same loop with the async client, awaited."""
    code = code.replace("anthropic.Anthropic()", "anthropic.AsyncAnthropic()")
    code = code.replace("openai.OpenAI()", "openai.AsyncOpenAI()")
    assert call in code
    code = code.replace(f"reply = {call}", f"reply = await {call}")
    body = textwrap.indent(code, "        ")
    closing = '    finally:\n        if "client" in locals():\n            await client.close()\n'
    return f"async def main():\n    try:\n{body}\n{closing}"


def write_project(root: Path) -> None:
    """Source files of growing sizes (1-9 KB), which the scripted agent reads and re-reads."""
    for number, path in enumerate(PATHS):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        lines = [
            f"def handler_{number}_{i}(request):\n    return page(request, {i})\n"
            for i in range(25 * (number % 9 + 1))
        ]
        target.write_text("".join(lines))


class Agent:
    """The model: 1-3 parallel reads per turn for TURNS requests, then a final answer."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)

    def __call__(self, body: dict[str, Any], turn: int) -> Reply:
        if turn >= TURNS:
            return Reply(text="Pagination is in place and the tests pass.")
        calls = tuple(
            ToolCall("read_file", {"path": self.random.choice(PATHS)})
            for _ in range(self.random.randint(1, 3))
        )
        return Reply(text=f"Turn {turn}: reading.", tool_calls=calls)


class SummarizingAgent(Agent):
    """The model as above, which writes a summary when the last user message asks for one."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.summaries = 0
        self.asked = summary_instruction(None).splitlines()[0]

    def __call__(self, body: dict[str, Any], turn: int) -> Reply:
        if self.asked in json.dumps(body["messages"][-1]):
            self.summaries += 1
            return Reply(text=f"Summary {self.summaries}: reading the modules for pagination.")
        return super().__call__(body, turn - self.summaries)


class Killed(BaseException):
    """The process "dies" here: raised from inside a session call, caught by the test."""


def dying_session(rng: random.Random, deaths: list[str], *, dies: bool) -> type[ContextSession]:
    """ContextSession dying once at a random call (before or after it), when it ``dies``."""
    kill_at = rng.randint(1, 60) if dies else -1
    calls = {"n": 0}

    def lethal(name: str) -> Callable[..., Any]:
        method = getattr(ContextSession, name)

        def call(self: ContextSession, *args: Any, **kwargs: Any) -> Any:
            calls["n"] += 1
            if calls["n"] == kill_at and rng.random() < 0.5:
                deaths.append(f"before {name}")
                raise Killed
            result = method(self, *args, **kwargs)
            if calls["n"] == kill_at:
                deaths.append(f"after {name}")
                raise Killed
            return result

        return call

    return type(
        "DyingSession",
        (ContextSession,),
        {name: lethal(name) for name in ("append", "extend", "prepare", "record_usage")},
    )


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    write_project(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run_until_done(
    code: str,
    api: ApiDouble,
    window: int,
    monkeypatch: pytest.MonkeyPatch,
    *,
    asynchronous: bool,
    seed: int,
) -> list[str]:
    """Run the loop, killed at three random points, then to its end; the deaths."""
    rng = random.Random(seed)
    deaths: list[str] = []
    for run in range(4):
        session_class = dying_session(rng, deaths, dies=run < 3)

        def windowed(*args: Any, _cls: type[ContextSession] = session_class, **kwargs: Any) -> Any:
            kwargs.pop("model", None)
            return _cls(*args, context_window=window, **kwargs)

        monkeypatch.setattr(windowkeeper, "ContextSession", windowed)
        namespace: dict[str, Any] = {"__name__": "readme_loop"}
        try:
            exec(compile(code, str(README), "exec"), namespace)  # the README's own code
            if asynchronous:
                asyncio.run(namespace["main"]())
        except Killed:
            continue
        finally:
            client = namespace.get("client")
            if client is not None and not asynchronous:
                client.close()
        return deaths
    raise AssertionError(f"the loop never finished: {deaths}")


def check_the_task(api: ApiDouble, folder: Path, window: int) -> None:
    assert api.rejections == [], api.rejections[:1]
    accepted = len(api.accepted)
    assert accepted >= TURNS + 1
    history = json.loads((folder / "api_conversation_history.json").read_text())
    final = history[-1]
    assert final["role"] == "assistant"
    assert "Pagination is in place" in json.dumps(final)
    if window <= 40_000:  # a long task in a small window: the session had to shrink it
        assert any(len(exchange.body["messages"]) < len(history) for exchange in api.accepted)


CASES = [
    pytest.param(
        window, asynchronous, id=f"{window // 1000}k-{'async' if asynchronous else 'sync'}"
    )
    for window in (20_000, 40_000, 200_000)
    for asynchronous in (False, True)
]


@pytest.mark.parametrize(("window", "asynchronous"), CASES)
def test_the_anthropic_loop(
    window: int, asynchronous: bool, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's Anthropic loop: every request accepted, the task finished across deaths."""
    code = as_async(ANTHROPIC_LOOP, "client.messages.create(") if asynchronous else ANTHROPIC_LOOP
    with AnthropicDouble(window=window, script=Agent(window)) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        run_until_done(code, api, window, monkeypatch, asynchronous=asynchronous, seed=window)
        check_the_task(api, workdir / "tasks" / "1234", window)
        sent = len(api.exchanges)
        run_until_done(code, api, window, monkeypatch, asynchronous=asynchronous, seed=1)
        assert len(api.exchanges) == sent  # done: a run on the same folder sends nothing


@pytest.mark.parametrize(("window", "asynchronous"), CASES)
def test_the_openai_loop(
    window: int, asynchronous: bool, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's OpenAI loop (SYSTEM and run_tool from the Anthropic one), likewise."""
    prelude = ANTHROPIC_LOOP.split("client = anthropic.Anthropic()")[0]
    loop = prelude + OPENAI_LOOP
    code = as_async(loop, "client.chat.completions.create(") if asynchronous else loop
    with OpenAIDouble(window=window, script=Agent(window)) as api:
        monkeypatch.setenv("OPENAI_BASE_URL", api.url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        run_until_done(code, api, window, monkeypatch, asynchronous=asynchronous, seed=window + 1)
        check_the_task(api, workdir / "tasks" / "5678", window)
        sent = len(api.exchanges)
        run_until_done(code, api, window, monkeypatch, asynchronous=asynchronous, seed=2)
        assert len(api.exchanges) == sent


@pytest.mark.parametrize("window", [20_000, 40_000])
def test_the_compacting_loop(window: int, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's loop with in-band compaction: summaries asked, folded, every request taken."""
    prelude = ANTHROPIC_LOOP.split("session = ContextSession(")[0]
    agent = SummarizingAgent(window)
    with AnthropicDouble(window=window, script=agent) as api:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", api.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        run_until_done(
            prelude + COMPACTING_LOOP, api, window, monkeypatch, asynchronous=False, seed=window + 7
        )
        check_the_task(api, workdir / "tasks" / "4321", window)
        if window < 40_000:  # results of up to 3k tokens a turn can leap past the band
            return
        assert agent.summaries >= 1
        asked = [e for e in api.accepted if agent.asked in json.dumps(e.body["messages"][-1])]
        folded = [
            e
            for e in api.accepted
            if len(e.body["messages"]) > 2 and "Summary 1:" in json.dumps(e.body["messages"][2])
        ]
        assert asked
        assert folded, "a summary must reach the requests after it"
        history = json.loads(
            (workdir / "tasks" / "4321" / "api_conversation_history.json").read_text()
        )
        summaries = [m for m in history if "Summary 1:" in json.dumps(m.get("content"))]
        sent_alone = [e for e in api.accepted for m in e.body["messages"] if m in summaries]
        assert sent_alone == []  # the reply itself is never sent again


def test_the_storage_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's SQLite example runs as written and persists."""
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, Any] = {}
    exec(compile(readme_block("SQLiteStore("), str(README), "exec"), namespace)
    session = namespace["session"]
    session.append({"role": "user", "content": "task"})
    session.close()
    assert (tmp_path / "agents.db").exists()


MANAGER_BLOCK = "manager = ContextManager()"


@pytest.mark.parametrize("cache", ["always", "never"])
def test_the_context_manager_snippet_with_caching(
    cache: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's ContextManager loop, 30 turns at a 200k window, prompt caching on or off:
    the usage it records counts the cache, so it truncates in time and no request is refused."""
    import anthropic

    code = readme_block(MANAGER_BLOCK)
    output = "x = 1  # a line of a large tool output\n" * 600  # about 7,000 tokens a turn
    with AnthropicDouble(window=200_000, script=lambda body, turn: "Noted.", cache=cache) as api:
        client = anthropic.Anthropic(base_url=api.url, api_key="test")
        namespace: dict[str, Any] = {
            "__name__": "readme_manager",
            "client": client,
            "MODEL": "claude-sonnet-4-5",
            "previous_request_ms": 0,
        }
        history: list[dict[str, Any]] = [{"role": "user", "content": "Read the logs. " + output}]

        def agent_loop() -> Any:
            for turn in range(30):
                yield turn
                reply = namespace["reply"]
                history.append({"role": "assistant", "content": reply.content[0].text})
                history.append({"role": "user", "content": f"Part {turn}:\n{output}"})
                namespace["previous_request_ms"] = turn + 1

        namespace["history"] = history
        namespace["agent_loop"] = agent_loop
        try:
            exec(compile(code, str(README), "exec"), namespace)
        finally:
            client.close()
        assert api.rejections == [], api.rejections[:1]
        assert len(api.accepted) == 30
        assert namespace["deleted_range"] is not None  # it had to truncate
