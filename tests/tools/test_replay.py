"""Replaying a history request by request: the policies, the usage sources, the records, loading traces."""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    Message,
    TaskFolderError,
    TokenUsage,
    TraceError,
    context_window_info,
    validate_messages,
)
from windowkeeper.cline import ApiRequest, ClineTask
from windowkeeper.core._notices import DUPLICATE_READ_NOTICE
from windowkeeper.tools._demo import DEMO_WINDOW, demo_conversation
from windowkeeper.tools._inspection import inspect_trace
from windowkeeper.tools._preview import next_request
from windowkeeper.tools._replay import (
    ClinePolicy,
    Replay,
    Replayer,
    Ruler,
    Sent,
    UsageSource,
    WindowkeeperPolicy,
    replay,
    request_points,
)
from windowkeeper.tools._trace import Trace, TraceFormat, detect_format, load_trace

from ..traces import (
    TASK,
    api_req_started,
    cline_folder,
    conversation,
    openai_messages,
    swe_agent_trajectory,
    write_json,
)

WINDOW = 64_000  # limit 37,000
UNIQUE = tuple(f"src/module_{n}.py" for n in range(40))  # no file read twice


def long_conversation() -> list[Message]:
    """30 turns of 9,000-character reads of distinct files: about 90,000 tokens in all."""
    return conversation(30, chars=9_000, paths=UNIQUE)


def recorded(history: Sequence[Message]) -> tuple[ApiRequest, ...]:
    """The requests a history records in ``metrics.tokens``, as a history-only folder gives them."""
    return ClineTask(path=Path("."), history=tuple(history)).requests


class TestRequestPoints:
    """Where the requests of a history are."""

    def test_one_request_before_each_assistant_message(self) -> None:
        """Each request sends the history up to an assistant message, that message excluded."""
        history = conversation(3)
        assert request_points(history) == [1, 3, 5, 7]

    def test_a_leading_assistant_message_makes_no_request(self) -> None:
        """Nothing comes before a first assistant message, so nothing is sent for it."""
        history = [{"role": "assistant", "content": "hi"}, *conversation(1)]
        assert request_points(history) == [2, 4]

    def test_one_request_before_a_run_of_assistant_messages(self) -> None:
        """A response exported one message per block is one request, asked before its first piece."""
        call = {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a"}}
        result = {"type": "tool_result", "tool_use_id": "t1", "content": "A"}
        history = [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "text", "text": "Reading."}]},
            {"role": "assistant", "content": [call]},
            {"role": "user", "content": [result]},
            {"role": "assistant", "content": "done"},
        ]
        assert request_points(history) == [1, 4]


class TestClineRecorded:
    """The original's decisions, driven by the usage the trace recorded."""

    def test_truncates_only_after_a_request_that_reached_the_limit(self) -> None:
        """The request after the first one recorded at or over 37,000 tokens truncates."""
        paths = tuple(f"src/{n}.py" for n in range(12))  # no repeated read to replace instead
        history = conversation(12, paths=paths, prompt_step=4_000)  # turn 10 records 40,100
        result = replay(history, window=WINDOW, requests=recorded(history))
        truncated = [record.index for record in result.requests if record.truncated]
        reached = {
            index + 2
            for index, message in enumerate(history)
            if message["role"] == "assistant" and message["metrics"]["tokens"]["prompt"] >= 36_900
        }
        assert truncated
        assert set(truncated) <= reached
        assert truncated[0] == 21  # the request after assistant message 19 (40,100 tokens)

    def test_every_request_has_its_record(self) -> None:
        """Records follow the requests, with the recorded size of each."""
        history = conversation(4, prompt_step=1_000)
        result = replay(history, window=WINDOW, requests=recorded(history))
        assert [r.index for r in result.requests] == [1, 3, 5, 7, 9]
        assert [r.reported_tokens for r in result.requests] == [1_100, 2_100, 3_100, 4_100, 5_100]
        assert not any(r.truncated or r.overflow for r in result.requests)

    def test_no_recorded_usage_means_no_decision(self) -> None:
        """As in the original, a request without a previous usage never truncates."""
        history = conversation(20, chars=20_000)
        result = replay(history, window=WINDOW, usage="recorded")
        assert result.summary.truncations == 0
        assert result.summary.overflows > 0
        assert all(record.reported_tokens is None for record in result.requests)

    def test_matches_the_manager_called_by_hand(self) -> None:
        """The cline policy is the ContextManager, called as Cline calls it."""
        history = conversation(12, prompt_step=4_000)
        result = replay(history, window=WINDOW, requests=recorded(history))
        policy = ClinePolicy(WINDOW)
        for record in result.requests:
            previous = history[record.index - 2] if record.index >= 3 else None
            tokens = previous["metrics"]["tokens"] if previous else None
            usage = TokenUsage(tokens["prompt"], tokens["completion"]) if tokens else None
            sent = policy.send(history[: record.index], usage=usage, timestamp=record.index)
            assert sent.deleted_range == record.deleted_range
            assert Ruler().count(sent.messages) == record.estimated_tokens


class TestEstimated:
    """Decisions driven by the estimate of what the policy sent."""

    def test_truncates_when_the_estimate_reaches_the_limit(self) -> None:
        """Without recorded usage, the estimated size of the previous request decides."""
        history = long_conversation()
        result = replay(history, window=WINDOW, usage="estimated")
        assert result.summary.truncations >= 2
        limit = context_window_info(WINDOW).max_allowed_size
        for previous, record in zip(result.requests, result.requests[1:], strict=False):
            if record.truncated:
                assert previous.estimated_tokens >= limit * 0.95  # the answer's tokens add the rest

    def test_is_deterministic(self) -> None:
        """Two replays of the same history give the same records."""
        history = long_conversation()
        first = replay(history, window=WINDOW, usage="estimated", policy="windowkeeper")
        second = replay(history, window=WINDOW, usage="estimated", policy="windowkeeper")
        assert first == second


class TestWindowkeeperPolicy:
    """The session policy: pre-flight keeps every request within the limit."""

    def test_no_request_exceeds_the_limit_by_the_ruler(self) -> None:
        """Even when one tool result is large, the estimate of every request stays under the limit."""
        history = long_conversation()
        history[42]["content"][0]["content"][0]["text"] += "x" * 150_000  # about 50,000 tokens
        limit = context_window_info(WINDOW).max_allowed_size
        for usage in ("recorded", "estimated"):
            result = replay(history, window=WINDOW, policy="windowkeeper", usage=usage)
            assert result.summary.overflows == 0
            assert all(record.estimated_tokens <= limit for record in result.requests)
        cline = replay(history, window=WINDOW, policy="cline", usage="estimated")
        assert cline.summary.overflows > 0

    def test_a_request_nothing_can_shrink_is_an_overflow(self) -> None:
        """When even the task alone exceeds the window, the session's estimate is recorded as an overflow."""
        history = conversation(3)
        history[0] = {"role": "user", "content": [{"type": "text", "text": "x" * 30_000}]}
        result = replay(history, window=5_000, policy="windowkeeper", usage="estimated")
        assert result.summary.overflows == result.summary.requests == 4
        assert all(record.estimated_tokens > 5_000 for record in result.requests)

    def test_requests_keep_tool_calls_paired(self) -> None:
        """What the session sends keeps every tool_use answered."""
        history = long_conversation()
        policy = WindowkeeperPolicy(WINDOW, counter=Ruler())
        for length in request_points(history):
            sent = policy.send(history[:length], usage=None, timestamp=length)
            assert validate_messages(sent.messages) == []


class TestRecords:
    """The documented JSON form and the summary."""

    def test_json_schema(self) -> None:
        """Exactly the documented keys and types."""
        history = conversation(12, prompt_step=4_000)
        value = replay(history, window=WINDOW, requests=recorded(history)).to_json()
        assert list(value) == ["policy", "window", "requests", "summary"]
        assert value["policy"] == "cline"
        assert value["window"] == {"context_window": WINDOW, "limit": 37_000}
        for item in value["requests"]:
            assert set(item) == {
                "index",
                "deleted_range",
                "truncated",
                "replaced_reads",
                "estimated_tokens",
                "reported_tokens",
                "overflow",
            }
            assert item["deleted_range"] is None or len(item["deleted_range"]) == 2
        assert set(value["summary"]) == {
            "requests",
            "truncations",
            "overflows",
            "estimated_tokens_sent",
            "replaced_reads",
        }
        assert json.loads(json.dumps(value)) == value

    def test_summary_adds_up(self) -> None:
        """The summary is the total of the records."""
        result = replay(long_conversation(), window=WINDOW, usage="estimated")
        summary = result.summary
        assert summary.requests == len(result.requests)
        assert summary.truncations == sum(r.truncated for r in result.requests)
        assert summary.estimated_tokens_sent == sum(r.estimated_tokens for r in result.requests)
        assert result.largest_request == max(r.estimated_tokens for r in result.requests)

    def test_replaced_reads_are_counted_at_their_request(self) -> None:
        """Duplicate reads replaced by the original count once, at the request that replaced them."""
        history = conversation(30, chars=9_000, paths=("src/a.py", "src/b.py"))
        result = replay(history, window=WINDOW, usage="estimated")
        assert result.summary.replaced_reads > 0
        first = next(r for r in result.requests if r.replaced_reads)
        policy = ClinePolicy(WINDOW)
        replayer = Replayer(history, window=WINDOW, policy=policy, usage="estimated")
        for length in request_points(history):
            sent, _ = replayer.request(length)
            if length == first.index:
                notices = json.dumps(sent.messages).count(DUPLICATE_READ_NOTICE[:40])
                assert notices >= first.replaced_reads
                break


class TestPolicies:
    """Any object with ``name`` and ``send`` replays through the same loop."""

    def test_a_custom_policy(self) -> None:
        """A policy that always sends everything overflows and never truncates."""

        class SendEverything:
            name = "everything"

            def send(
                self, history: Sequence[Message], *, usage: TokenUsage | None, timestamp: int
            ) -> Sent:
                return Sent(list(history), None, False, 0)

        history = conversation(20, chars=20_000)
        result = replay(history, window=WINDOW, policy=SendEverything(), usage="estimated")
        assert result.policy == "everything"
        assert result.summary.truncations == 0
        assert result.summary.overflows > 0

    def test_unknown_names_are_refused(self) -> None:
        """A policy or usage name that does not exist raises ValueError."""
        with pytest.raises(ValueError, match="nope"):
            replay(conversation(1), window=WINDOW, policy="nope")
        with pytest.raises(ValueError, match="nope"):
            replay(conversation(1), window=WINDOW, usage="nope")

    def test_nothing_given_is_modified(self) -> None:
        """The history and its messages come out as they went in."""
        history = conversation(30, chars=9_000, paths=("a", "b"))
        before = copy.deepcopy(history)
        for policy in ("cline", "windowkeeper"):
            replay(history, window=WINDOW, policy=policy, usage=UsageSource.ESTIMATED)
        assert history == before


class TestRuler:
    """The measure every replay uses."""

    def test_never_learns(self) -> None:
        """Observing a reported size changes no later count."""
        messages = conversation(3)
        ruler = Ruler()
        before = ruler.count(messages)
        ruler.observe(messages, reported_input_tokens=before * 10)
        assert ruler.count(messages) == before


class TestRecordedLookup:
    """Which recorded request gives the usage and the reported size."""

    def test_a_retry_counts_once_and_the_last_one_wins(self) -> None:
        """Two requests announced at the same index: the later one is the request's record."""
        history = conversation(2)
        requests = (
            ApiRequest(TokenUsage(10), 1, -1),
            ApiRequest(TokenUsage(20), 2, 1),
            ApiRequest(TokenUsage(30), 3, 1),
            ApiRequest(TokenUsage(40), 4, 3),
        )
        result = replay(history, window=WINDOW, requests=requests)
        assert [r.reported_tokens for r in result.requests] == [10, 30, 40]


class TestNextRequest:
    """What ``view`` and ``check`` look at."""

    def test_resumes_from_the_stored_range(self, tmp_path: Path) -> None:
        """A Cline folder's stored deleted range is applied to the next request."""
        history = conversation(6)
        ui = [api_req_started(100 + index, index - 2, 1_000) for index in request_points(history)]
        ui[-1]["conversationHistoryDeletedRange"] = [2, 5]
        trace = load_trace(cline_folder(tmp_path / "task", history, ui_messages=ui))
        request = next_request(trace, window=WINDOW)
        assert request.deleted_range == (2, 5)
        assert request.messages[3] == history[7]
        assert request.history_index(3) == 7
        assert request.awaiting_reply
        assert request.violations() == []

    def test_replays_where_nothing_was_stored(self, tmp_path: Path) -> None:
        """Without a stored range, the policy replays the trace first."""
        history = long_conversation()
        trace = load_trace(write_json(tmp_path / "h.json", history))
        whole = Ruler().count(history)
        assert whole > WINDOW
        for policy in ("cline", "windowkeeper"):
            request = next_request(trace, window=WINDOW, policy=policy)
            # The original truncates; the session may mask old outputs instead.
            assert policy == "windowkeeper" or request.deleted_range is not None
            assert request.estimated_tokens < WINDOW

    def test_shapes_strip_keys_the_api_does_not_take(self, tmp_path: Path) -> None:
        """Anthropic and OpenAI bodies carry role and content only."""
        history = conversation(2, prompt_step=1_000)
        trace = load_trace(write_json(tmp_path / "h.json", history))
        request = next_request(trace, window=WINDOW)
        anthropic = request.as_anthropic()
        assert all(set(m) == {"role", "content"} for m in anthropic["messages"])
        openai = request.as_openai()["messages"]
        assert [m["role"] for m in openai][:3] == ["user", "assistant", "tool"]
        assert not any("metrics" in m for m in openai)


class TestLoadTrace:
    """Every input the command accepts, detected and loaded."""

    def test_formats_are_detected(self, tmp_path: Path) -> None:
        """A folder, an Anthropic list, an object with messages, OpenAI messages, a .traj file."""
        folder = cline_folder(tmp_path / "task", conversation(1))
        cases = {
            folder: TraceFormat.CLINE,
            folder / "api_conversation_history.json": TraceFormat.CLINE,
            write_json(tmp_path / "a.json", conversation(1)): TraceFormat.ANTHROPIC,
            write_json(tmp_path / "m.json", {"messages": conversation(1)}): TraceFormat.ANTHROPIC,
            write_json(tmp_path / "o.json", openai_messages()): TraceFormat.OPENAI,
            write_json(tmp_path / "s.traj", swe_agent_trajectory()): TraceFormat.SWE_AGENT,
            write_json(tmp_path / "s.json", swe_agent_trajectory()): TraceFormat.SWE_AGENT,
        }
        for path, expected in cases.items():
            assert detect_format(path) is expected, path
            assert load_trace(path).format is expected

    def test_openai_messages_are_converted(self, tmp_path: Path) -> None:
        """The tool message becomes a tool_result; the system prompt is kept apart."""
        trace = load_trace(write_json(tmp_path / "o.json", openai_messages()))
        assert trace.system == "You are a careful coding agent."
        assert [m["role"] for m in trace.history] == ["user", "assistant", "user", "assistant"]
        assert trace.history[2]["content"][0]["type"] == "tool_result"

    def test_a_format_can_be_forced(self, tmp_path: Path) -> None:
        """``format`` skips detection."""
        path = write_json(tmp_path / "plain.json", [{"role": "user", "content": "hi"}])
        assert load_trace(path, "openai").format is TraceFormat.OPENAI
        with pytest.raises(TraceError, match="unknown format"):
            load_trace(path, "yaml")

    def test_recorded_usage_comes_from_metrics(self, tmp_path: Path) -> None:
        """Assistant ``metrics.tokens`` in a message file give recorded requests."""
        trace = load_trace(write_json(tmp_path / "h.json", conversation(2, prompt_step=500)))
        assert trace.has_recorded_usage
        assert [r.usage.total if r.usage else None for r in trace.requests] == [600, 1100, 1600]

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("{not json", "not JSON"),
            ("[]", "holds no messages"),
            ('{"a": 1}', "expected a list of messages"),
            ('[{"role": "robot", "content": "x"}]', r"messages\[0\]\.role"),
            (
                json.dumps([{"role": "assistant", "content": "x", "metrics": {"tokens": 3}}]),
                r"messages\[0\]\.metrics\.tokens",
            ),
        ],
    )
    def test_errors_name_the_file_and_the_place(
        self, tmp_path: Path, text: str, message: str
    ) -> None:
        """A bad file raises one error that names the file and, where it can, the JSON path."""
        path = tmp_path / "bad.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(TraceError, match=message) as caught:
            load_trace(path)
        assert str(path) in str(caught.value)

    def test_a_folder_without_history_is_refused(self, tmp_path: Path) -> None:
        """A folder is read as a Cline task, which needs its history file."""
        with pytest.raises(TaskFolderError, match=r"api_conversation_history\.json"):
            load_trace(tmp_path)

    def test_a_missing_path_is_refused(self, tmp_path: Path) -> None:
        """A path that does not exist is named."""
        with pytest.raises(TraceError, match="no such file"):
            load_trace(tmp_path / "nope.json")


class TestInspection:
    """What ``inspect`` counts."""

    def test_counts(self, tmp_path: Path) -> None:
        """Roles, tool calls, reads and repeats, recorded usage, violations."""
        history = conversation(4, paths=("a.py", "b.py"), prompt_step=1_000)
        found = inspect_trace(load_trace(write_json(tmp_path / "h.json", history)))
        assert found.roles == {"user": 5, "assistant": 5}
        assert found.tool_calls == {"read_file": 4}
        assert found.repeated_reads == {"a.py": 2, "b.py": 2}
        assert (found.usage.minimum, found.usage.median, found.usage.maximum) == (
            1_100,
            3_100,
            5_100,
        )
        assert found.violations == ()
        assert found.to_json()["file_reads"] == {
            "copies": 4,
            "files": 2,
            "repeated": {"a.py": 2, "b.py": 2},
        }


class TestDemo:
    """The bundled demo conversation."""

    def test_is_deterministic_and_valid(self) -> None:
        """Built the same every time, tool calls paired, the task first."""
        history = demo_conversation()
        assert history == demo_conversation()
        assert history[0]["content"][0]["text"].startswith("<task>")
        assert validate_messages(history) == []
        assert TASK not in json.dumps(history)  # its own task, not a test fixture's

    def test_truncates_twice_and_rereads_files(self) -> None:
        """At the demo's window the original truncates at least twice; both replace reads.

        The session masks old outputs before it truncates, so it needs no truncation here and
        still sends fewer tokens, none of its requests over the window.
        """
        results: list[Replay] = [
            replay(demo_conversation(), window=DEMO_WINDOW, policy=policy, usage="estimated")
            for policy in ("cline", "windowkeeper")
        ]
        for result in results:
            assert result.summary.replaced_reads > 0
        cline, windowkeeper = results
        assert cline.summary.truncations >= 2
        assert windowkeeper.summary.estimated_tokens_sent < cline.summary.estimated_tokens_sent
        assert cline.summary.overflows >= 1
        assert windowkeeper.summary.overflows == 0


class TestNextRequestReplays:
    """check and view: the original's policy replays every request, the session asks one."""

    def test_the_session_asks_once_the_original_replays(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The original's range grows request by request, so its next request needs them all
        (asking only the last gave a request 3.5x the window where the replay fits); the
        session decides from the next request alone, unless every request is asked for."""
        from windowkeeper.tools import _preview

        history = conversation(20)
        trace = Trace(Path("t.json"), TraceFormat.ANTHROPIC, tuple(history))
        asked: list[int] = []
        original = _preview.Replayer.request

        def counted(self: Any, length: int) -> Any:
            asked.append(length)
            return original(self, length)

        monkeypatch.setattr(_preview.Replayer, "request", counted)
        _preview.next_request(trace, window=WINDOW)
        assert asked == [*request_points(history), len(history)]
        asked.clear()
        _preview.next_request(trace, window=WINDOW, policy="windowkeeper")
        assert asked == [len(history)]
        asked.clear()
        _preview.next_request(trace, window=WINDOW, policy="windowkeeper", replay=True)
        assert asked == [*request_points(history), len(history)]
