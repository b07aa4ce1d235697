"""What ``view``, ``check`` and ``replay`` say about requests: overflows, the ruler, the JSON."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from windowkeeper import ContextOverflowError, Message
from windowkeeper.cli import cli
from windowkeeper.tools._preview import next_request
from windowkeeper.tools._replay import ClinePolicy, Ruler, Sent, WindowkeeperPolicy, replay
from windowkeeper.tools._trace import load_trace

from ..traces import cline_folder, conversation, write_json

SYSTEM = "You are a careful coding agent. " * 200  # about 6,400 bytes
TOOLS = (
    {
        "name": "read_file",
        "description": "Read a file of the repository. " * 100,
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
)


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(arg) for arg in args], catch_exceptions=True)


def too_big(tmp_path: Path) -> Path:
    """A history whose task message alone is about 10,000 tokens: nothing fits a 5,000 window."""
    history: list[Message] = conversation(3)
    history[0] = {"role": "user", "content": [{"type": "text", "text": "x" * 30_000}]}
    return write_json(tmp_path / "big.json", history)


class TestNothingFits:
    """When the session cannot make the next request fit, view and check say so and exit 1."""

    @pytest.mark.parametrize(
        "command",
        [
            ["view"],
            ["view", "--as", "anthropic"],
            ["view", "--as", "openai"],
            ["check"],
        ],
    )
    def test_one_line_with_the_numbers(self, tmp_path: Path, command: list[str]) -> None:
        """Not "0 of 7 messages", an empty body or an empty-content violation."""
        path = too_big(tmp_path)
        result = run(*command, path, "--window", "5000", "--policy", "windowkeeper")
        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"Error: {path}: the next request cannot fit")
        assert "windowkeeper policy" in line
        assert "over the limit of 4,000 for a 5,000-token window" in line
        estimate = next(word for word in line.split() if word.replace(",", "").isdigit())
        assert int(estimate.replace(",", "")) > 5_000

    def test_the_error_carries_the_numbers(self, tmp_path: Path) -> None:
        """next_request raises ContextOverflowError with the estimate and the limit."""
        trace = load_trace(too_big(tmp_path))
        with pytest.raises(ContextOverflowError, match="cannot fit") as raised:
            next_request(trace, window=5_000, policy="windowkeeper")
        assert raised.value.estimated_tokens > 5_000
        assert raised.value.limit == 4_000

    def test_debug_shows_the_traceback(self, tmp_path: Path) -> None:
        """With --debug the error propagates."""
        result = run(
            "view", too_big(tmp_path), "--window", "5000", "--policy", "windowkeeper", "--debug"
        )
        assert isinstance(result.exception, ContextOverflowError)

    def test_replay_still_reports_the_overflows(self, tmp_path: Path) -> None:
        """A replay records each overflow and carries on: it reports, it does not refuse."""
        path = too_big(tmp_path)
        result = run("replay", path, "--window", "5000", "--policy", "windowkeeper", "--json")
        assert result.exit_code == 0, result.output
        value = json.loads(result.stdout)
        assert value["summary"]["overflows"] == value["summary"]["requests"] == 4
        assert all(record["estimated_tokens"] > 5_000 for record in value["requests"])

    def test_an_empty_request_is_refused_too(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A policy that would send nothing is never shown as a request of 0 messages."""

        def send_nothing(self: ClinePolicy, history: Any, **_: Any) -> Sent:
            return Sent([], None, False, 0)

        monkeypatch.setattr(ClinePolicy, "send", send_nothing)
        path = write_json(tmp_path / "h.json", conversation(2))
        for command in (["view"], ["check"]):
            result = run(*command, path)
            assert result.exit_code == 1, result.output
            (line,) = result.stderr.splitlines()
            assert "the next request cannot fit (cline policy): nothing would be sent" in line
            assert "over the limit of 98,000 for a 128,000-token window" in line

    def test_a_request_that_fits_is_unchanged(self, tmp_path: Path) -> None:
        """The same history at a window it fits: exit 0 and the request."""
        path = too_big(tmp_path)
        assert run("check", path, "--window", "64000", "--policy", "windowkeeper").exit_code == 0
        view = run("view", path, "--window", "64000", "--policy", "windowkeeper")
        assert view.exit_code == 0
        assert " 8 of 8 messages" in view.stdout


class TestTheRulerCountsTheSystemPrompt:
    """Every policy's requests are measured with the system prompt (and tools) they carry."""

    def test_replay_of_a_file_with_a_system_prompt(self, tmp_path: Path) -> None:
        """Each request is larger by the system prompt than the same history without one."""
        history = conversation(4)
        plain = write_json(tmp_path / "plain.json", {"messages": history})
        prompted = write_json(tmp_path / "system.json", {"messages": history, "system": SYSTEM})
        for policy in ("cline", "windowkeeper"):
            options = ["--window", "64000", "--policy", policy, "--json"]
            without = json.loads(run("replay", plain, *options).stdout)["requests"]
            with_system = json.loads(run("replay", prompted, *options).stdout)["requests"]
            ruler = Ruler()
            assert with_system[0]["estimated_tokens"] == ruler.count(history[:1], system=SYSTEM)
            for bare, full in zip(without, with_system, strict=True):
                assert full["estimated_tokens"] > bare["estimated_tokens"] + 1_000

    def test_view_counts_it_too(self, tmp_path: Path) -> None:
        """The header's estimate counts the system prompt, for both policies."""
        history = conversation(2)
        trace = load_trace(write_json(tmp_path / "s.json", {"messages": history, "system": SYSTEM}))
        for policy in ("cline", "windowkeeper"):
            request = next_request(trace, window=64_000, policy=policy)
            assert request.estimated_tokens == Ruler().count(request.messages, system=SYSTEM)

    def test_tools_are_counted_when_the_trace_holds_them(self, tmp_path: Path) -> None:
        """Trace.tools (None by default) is counted by the ruler and the session's pre-flight."""
        history = conversation(2)
        trace = load_trace(write_json(tmp_path / "h.json", history))
        assert trace.tools is None
        with_tools = dataclasses.replace(trace, tools=TOOLS)
        for policy in ("cline", "windowkeeper"):
            request = next_request(with_tools, window=64_000, policy=policy)
            assert request.estimated_tokens == Ruler().count(request.messages, tools=TOOLS)
            bare = next_request(trace, window=64_000, policy=policy)
            assert request.estimated_tokens > bare.estimated_tokens

    def test_replay_counts_tools(self) -> None:
        """replay(tools=...) counts them in every record; the session is given them."""
        history = conversation(3)
        bare = replay(history, window=64_000, usage="estimated")
        full = replay(history, window=64_000, usage="estimated", tools=TOOLS)
        gap = Ruler().count([], tools=TOOLS) - Ruler().count([])
        for without, with_tools in zip(bare.requests, full.requests, strict=True):
            assert with_tools.estimated_tokens - without.estimated_tokens >= gap - 2

    def test_the_session_judges_with_system_and_tools(self) -> None:
        """The windowkeeper policy passes both to prepare(): a request too big with them shrinks."""
        history = conversation(6, chars=3_000, paths=tuple(f"f{n}.py" for n in range(9)))
        tools = ({"name": "big", "description": "d" * 9_000, "input_schema": {}},)
        window = 12_000  # limit 9,600
        counted = WindowkeeperPolicy(window, counter=Ruler(), system=SYSTEM, tools=tools)
        blind = WindowkeeperPolicy(window, counter=Ruler())
        sent = counted.send(history, usage=None, timestamp=1)
        unaware = blind.send(history, usage=None, timestamp=1)
        assert Ruler().count(unaware.messages) < 9_600
        assert Ruler().count(sent.messages, system=SYSTEM, tools=tools) <= 9_600
        assert Ruler().count(sent.messages) < Ruler().count(unaware.messages)


class TestReplayJsonNamesItsPolicy:
    """Each ``replay --json`` line says which policy and window it is about."""

    def test_policy_and_window(self, tmp_path: Path) -> None:
        """One object per policy, each with policy, window (context window and limit)."""
        path = write_json(tmp_path / "h.json", conversation(3))
        result = run(
            "replay",
            path,
            "--window",
            "64000",
            "--policy",
            "cline",
            "--policy",
            "windowkeeper",
            "--json",
        )
        assert result.exit_code == 0, result.output
        objects = [json.loads(line) for line in result.stdout.splitlines()]
        assert [value["policy"] for value in objects] == ["cline", "windowkeeper"]
        for value in objects:
            assert list(value) == ["policy", "window", "requests", "summary"]
            assert value["window"] == {"context_window": 64_000, "limit": 37_000}

    def test_a_fractional_limit(self, tmp_path: Path) -> None:
        """The limit is a number: fractional for some windows, as the original computes it."""
        path = write_json(tmp_path / "h.json", conversation(1))
        value = json.loads(run("replay", path, "--window", "32768", "--json").stdout)
        assert value["window"] == {"context_window": 32_768, "limit": 26_214.4}


class TestViewAnthropicBody:
    """``view --as anthropic`` sends messages with role and content only."""

    @pytest.mark.parametrize("policy", ["cline", "windowkeeper"])
    def test_only_role_and_content(self, tmp_path: Path, policy: str) -> None:
        """Keys Cline stores on messages (ts, metrics, modelInfo, anything else) are left out."""
        history = conversation(3, prompt_step=500)
        for index, message in enumerate(history):
            message.update(ts=1_000 + index, modelInfo={"id": "m"}, id=f"msg_{index}", extra=[1])
        folder = cline_folder(tmp_path / "task", history)
        result = run("view", folder, "--as", "anthropic", "--policy", policy)
        assert result.exit_code == 0, result.output
        body = json.loads(result.stdout)
        assert set(body) <= {"system", "messages"}
        assert body["messages"]
        assert all(set(message) == {"role", "content"} for message in body["messages"])
