"""ContextSession: the per-turn API that never sends an over-window request."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from windowkeeper import (
    ContextOverflowError,
    ContextSession,
    InvalidUsageError,
    MalformedMessageError,
    TokenUsage,
    validate_messages,
)
from windowkeeper.core._notices import TRUNCATION_NOTICE

from ..counters import RuleCounter


def _text_of(value: Any) -> int:
    """Characters of every string inside a JSON-like value."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return sum(_text_of(item) for item in value)
    if isinstance(value, dict):
        return sum(_text_of(item) for key, item in value.items() if key != "type")
    return 0


def true_tokens(messages: Sequence[Any], system: Any = None, tools: Any = None) -> int:
    """The synthetic "provider" count: 4 characters a token, 5 tokens of overhead a message."""
    return (_text_of(list(messages)) + _text_of(system) + _text_of(tools)) // 4 + 5 * len(messages)


class ExactCounter(RuleCounter):
    """A counter that is exact for the synthetic provider above."""

    def __init__(self) -> None:
        super().__init__(true_tokens)


class Clock:
    """Milliseconds that advance by one second a call."""

    def __init__(self) -> None:
        self.now = 1_700_000_000_000

    def __call__(self) -> int:
        self.now += 1_000
        return self.now


def assistant(turn: int, path: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "text", "text": f"Turn {turn}: reading {path}."},
            {
                "type": "tool_use",
                "id": f"toolu_{turn:03d}",
                "name": "read_file",
                "input": {"path": path},
            },
        ],
    }


def tool_result(turn: int, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": f"toolu_{turn:03d}", "content": text}],
    }


TASK = {
    "role": "user",
    "content": [{"type": "text", "text": "<task>\nRefactor the service.\n</task>"}],
}
FIRST = {
    "role": "assistant",
    "content": [{"type": "text", "text": "I will start by listing the files."}],
}
SYSTEM = "You are a careful coding agent." * 10


def run_loop(session: ContextSession, sizes: Sequence[int], window: int) -> list[Any]:
    """A synthetic agent loop: each turn appends a tool result of the given size."""
    prepared_list = []
    session.append(TASK)
    session.append(FIRST)
    session.append({"role": "user", "content": "Go on."})
    for turn, size in enumerate(sizes, start=1):
        prepared = session.prepare(system=SYSTEM, max_output_tokens=1_000)
        sent = true_tokens(prepared.messages, SYSTEM) + 1_000
        assert sent <= window, f"turn {turn}: {sent} tokens sent to a {window}-token window"
        assert sent <= prepared.max_allowed_size
        pairing = [v for v in validate_messages(prepared.messages) if v.rule.startswith("tool-")]
        assert pairing == []
        prepared_list.append(prepared)
        session.record_usage(
            TokenUsage(tokens_in=true_tokens(prepared.messages, SYSTEM), tokens_out=50)
        )
        session.append(assistant(turn, f"src/file_{turn}.py"))
        session.append(tool_result(turn, f"[output {turn}]\n" + "x" * size))
    return prepared_list


class TestPreflight:
    def test_growing_results_never_exceed_the_window(self) -> None:
        """Tool results grow until one alone exceeds the room left; no request goes over."""
        window = 32_768
        sizes = [2_000 * turn for turn in range(1, 16)] + [140_000]
        session = ContextSession(window, counter=ExactCounter(), clock=Clock())
        prepared = run_loop(session, sizes, window)
        final = session.prepare(system=SYSTEM, max_output_tokens=1_000)
        assert true_tokens(final.messages, SYSTEM) + 1_000 <= final.max_allowed_size
        assert final.clipped, "the 140k-character result alone cannot fit: it must be clipped"
        assert any(p.preflight_acted for p in prepared)
        assert "characters cut by windowkeeper" in json.dumps(final.messages)

    def test_default_estimator_keeps_requests_within_the_window(self) -> None:
        """With the default estimator the same loop stays under the limit by the true count."""
        window = 32_768
        sizes = [1_500 * turn for turn in range(1, 14)]
        session = ContextSession(window, clock=Clock())
        run_loop(session, sizes, window)

    def test_nothing_fits_raises_with_the_numbers(self) -> None:
        """A task message larger than the window cannot be helped."""
        session = ContextSession(8_000, counter=ExactCounter(), clock=Clock())
        session.append({"role": "user", "content": [{"type": "text", "text": "t" * 80_000}]})
        with pytest.raises(ContextOverflowError) as caught:
            session.prepare()
        assert caught.value.estimated_tokens > caught.value.limit
        assert "8,000-token window" in str(caught.value)

    def test_under_the_limit_nothing_is_done(self) -> None:
        """A small conversation is sent as it is."""
        session = ContextSession(128_000, counter=ExactCounter(), clock=Clock())
        session.extend([TASK, FIRST, {"role": "user", "content": "hello"}])
        prepared = session.prepare()
        assert prepared.messages == [TASK, FIRST, {"role": "user", "content": "hello"}]
        assert not prepared.preflight_acted
        assert prepared.deleted_range is None


class TestOriginalDecision:
    def _session(self) -> ContextSession:
        session = ContextSession(64_000, counter=ExactCounter(), clock=Clock())
        session.extend([TASK, FIRST])
        for turn in range(1, 11):
            session.append({"role": "user", "content": f"question {turn}"})
            session.append({"role": "assistant", "content": f"answer {turn}"})
        session.append({"role": "user", "content": "last question"})
        return session

    def test_reported_usage_over_the_limit_truncates_half(self) -> None:
        """As in the original: the previous request's usage over 37 000 hides half the rest."""
        session = self._session()
        session.prepare()
        session.record_usage({"input_tokens": 36_000, "output_tokens": 1_500})
        prepared = session.prepare()
        assert prepared.range_changed
        assert prepared.deleted_range == (2, 11)

    def test_stale_usage_does_not_truncate_twice(self) -> None:
        """A retry reusing the usage of a request sent before the truncation changes nothing."""
        session = self._session()
        session.prepare()
        session.record_usage({"input_tokens": 36_000, "output_tokens": 1_500})
        first = session.prepare()
        retry = session.prepare()
        assert retry.deleted_range == first.deleted_range
        assert not retry.range_changed
        assert retry.ignored_stale_usage

    def test_notice_reaches_the_model_when_block_zero_is_not_text(self) -> None:
        """The original writes the notice over a thinking block and loses it; the session does not."""
        session = ContextSession(64_000, counter=ExactCounter(), clock=Clock())
        first = {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {}},
            ],
        }
        session.extend([TASK, first, tool_result(1, "a.py b.py")])
        for turn in range(2, 12):
            session.append({"role": "assistant", "content": f"answer {turn}"})
            session.append({"role": "user", "content": f"question {turn}"})
        session.prepare()
        session.record_usage({"input_tokens": 50_000, "output_tokens": 10})
        prepared = session.prepare()
        assert prepared.range_changed
        blocks = prepared.messages[1]["content"]
        assert [b["type"] for b in blocks] == ["thinking", "text", "tool_use"]
        assert blocks[1]["text"] == TRUNCATION_NOTICE
        assert session.history[1] is first


class TestResume:
    def test_reopened_folder_prepares_identical_messages(self, tmp_path: Path) -> None:
        """A session saved mid-task and re-opened from its folder prepares the same request."""
        window = 32_768
        sizes = [3_000 * turn for turn in range(1, 10)]
        session = ContextSession(window, task_dir=tmp_path, counter=ExactCounter(), clock=Clock())
        run_loop(session, sizes, window)
        expected = session.prepare(system=SYSTEM, max_output_tokens=1_000)
        reopened = ContextSession(window, task_dir=tmp_path, counter=ExactCounter(), clock=Clock())
        again = reopened.prepare(system=SYSTEM, max_output_tokens=1_000)
        assert again.messages == expected.messages
        assert again.deleted_range == expected.deleted_range
        assert (tmp_path / "context_history.json").exists()


class TestCheckpoints:
    def test_rollback_then_replay_gives_the_same_result(self) -> None:
        """Undoing turns and feeding them again prepares the same request."""
        window = 32_768
        session = ContextSession(window, counter=ExactCounter(), clock=Clock())
        run_loop(session, [4_000] * 4, window)
        checkpoint = session.checkpoint()
        tail = [assistant(50 + n, f"src/extra_{n}.py") for n in range(3)]
        replay_messages: list[Any] = []
        for n, message in enumerate(tail):
            replay_messages += [message, tool_result(50 + n, "y" * 12_000)]

        def play() -> Any:
            prepared = None
            for message in replay_messages:
                session.append(message)
                if message["role"] == "user":
                    prepared = session.prepare(system=SYSTEM)
                    session.record_usage(
                        TokenUsage(tokens_in=true_tokens(prepared.messages, SYSTEM))
                    )
            return prepared

        first = play()
        session.rollback(checkpoint)
        assert len(session.history) == checkpoint.history_length
        second = play()
        assert first is not None
        assert second is not None
        assert second.messages == first.messages
        assert second.deleted_range == first.deleted_range


class TestInput:
    def test_append_checks_the_message(self) -> None:
        """A malformed message is refused with its path."""
        session = ContextSession(128_000)
        session.append(TASK)
        with pytest.raises(MalformedMessageError, match=r"history\[1\]\.role"):
            session.append({"role": "system", "content": "x"})

    def test_record_usage_rejects_unknown_shapes(self) -> None:
        """Usage that is not Anthropic's or OpenAI's raises a clear error."""
        session = ContextSession(128_000)
        with pytest.raises(InvalidUsageError):
            session.record_usage({"tokens": 5})

    def test_duplicate_reads_are_replaced_before_truncating(self) -> None:
        """Over the limit, re-read files give way first (the original's first remedy)."""
        session = ContextSession(16_000, counter=ExactCounter(), clock=Clock())
        session.extend([TASK, FIRST])
        body = "line\n" * 4_000
        for turn in range(1, 4):
            session.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": f"[read_file for 'a.py'] Result:\n{body}"}
                    ],
                }
            )
            session.append({"role": "assistant", "content": f"read {turn}"})
        session.append({"role": "user", "content": "now?"})
        prepared = session.prepare()
        assert prepared.preflight_acted
        assert prepared.replaced_reads == 2
        sent = json.dumps(prepared.messages)
        assert "an older copy of 'a.py' was removed here" in sent
        assert "a newer copy of the file appears further down" in sent


class TestModel:
    def test_model_sets_the_window(self) -> None:
        """A known model id gives its window from the shipped table."""
        session = ContextSession(model="claude-sonnet-4-5-20250929")
        assert session.window.context_window == 200_000
        assert session.window.max_allowed_size == 160_000

    def test_unknown_model_falls_back_with_a_warning(self) -> None:
        """An unknown model gets the original's default window, and says so."""
        from windowkeeper import UnknownModelWarning

        with pytest.warns(UnknownModelWarning, match="no-such-model"):
            session = ContextSession(model="no-such-model")
        assert session.window.context_window == 128_000

    def test_explicit_window_wins(self) -> None:
        """An explicit window is used as given."""
        assert ContextSession(64_000, model="claude-sonnet-4-5").window.context_window == 64_000


def openai_turns(count: int, size: int) -> list[dict[str, Any]]:
    """An OpenAI Chat Completions conversation with parallel tool calls and tool messages."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Refactor the service."},
    ]
    for turn in range(count):
        calls = [
            {
                "id": f"call_{turn}_{n}",
                "type": "function",
                "function": {
                    "name": "read_file",
                    "arguments": json.dumps({"path": f"f{turn}_{n}.py"}),
                },
            }
            for n in range(2)
        ]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [
            {
                "role": "tool",
                "tool_call_id": call["id"],
                "content": f"# {call['id']}\n" + "x" * size,
            }
            for call in calls
        ]
    return messages


class TestOpenAIFormat:
    @pytest.mark.parametrize("masking", [2, None])
    def test_prepares_valid_openai_requests_within_the_window(self, masking: int | None) -> None:
        """An OpenAI-shaped loop gets OpenAI-shaped requests that pass OpenAI's pairing rules,
        whether old outputs are masked or the history is truncated."""
        from windowkeeper.formats import validate_openai

        session = ContextSession(
            16_000,
            counter=ExactCounter(),
            format="openai",
            clock=Clock(),
            mask_keep_recent=masking,
        )
        acted = False
        conversation = openai_turns(12, 6_000)
        session.extend(conversation[:2])
        for message in conversation[2:]:
            session.append(message)
            if message["role"] == "tool" and message["tool_call_id"].endswith("_1"):
                prepared = session.prepare()
                acted = acted or prepared.preflight_acted
                assert validate_openai(prepared.messages) == []
                assert prepared.messages[0] == {
                    "role": "system",
                    "content": "You are a coding agent.",
                }
                assert (
                    true_tokens(
                        session.manager.get_truncated_messages(
                            session._history.messages, prepared.deleted_range
                        )
                    )
                    <= prepared.max_allowed_size
                )
        assert acted
        assert masking is not None or prepared.deleted_range is not None
        assert session.history == conversation

    def test_malformed_openai_message_names_its_place(self) -> None:
        """A bad message is refused at append, with its index in the history."""
        session = ContextSession(16_000, format="openai")
        session.append({"role": "user", "content": "hi"})
        with pytest.raises(MalformedMessageError, match=r"history\[1\]"):
            session.append({"role": "assistant", "tool_calls": "nope"})

    def test_resume_in_openai_format(self, tmp_path: Path) -> None:
        """A re-opened OpenAI session prepares the same request."""
        conversation = openai_turns(6, 6_000)
        session = ContextSession(
            16_000, task_dir=tmp_path, counter=ExactCounter(), format="openai", clock=Clock()
        )
        session.extend(conversation)
        first = session.prepare()
        reopened = ContextSession(
            16_000, task_dir=tmp_path, counter=ExactCounter(), format="openai", clock=Clock()
        )
        assert reopened.history == conversation
        assert reopened.prepare().messages == first.messages

    def test_unknown_format(self) -> None:
        """Only the two documented formats are accepted."""
        with pytest.raises(ValueError, match="format"):
            ContextSession(16_000, format="gemini")  # type: ignore[arg-type]


class TestArrivalClipping:
    def test_an_oversized_result_is_clipped_as_it_arrives(self) -> None:
        """A result larger than its share of the limit is clipped before anything is over."""
        session = ContextSession(128_000, counter=ExactCounter(), clock=Clock())
        session.extend([TASK, assistant(1, "log.txt"), tool_result(1, "z" * 200_000)])
        prepared = session.prepare()
        assert prepared.clipped
        assert not prepared.preflight_acted  # clipped on arrival: the estimate was never over
        assert prepared.deleted_range is None
        kept = prepared.messages[2]["content"][0]["content"]
        assert len(kept) < 80_000
        assert "characters cut by windowkeeper" in kept
        assert session.history[2]["content"][0]["content"] == "z" * 200_000

    def test_off_when_disabled(self) -> None:
        """max_result_share=None sends the result whole while it fits."""
        session = ContextSession(
            128_000, counter=ExactCounter(), clock=Clock(), max_result_share=None
        )
        session.extend([TASK, assistant(1, "log.txt"), tool_result(1, "z" * 200_000)])
        assert not session.prepare().clipped

    def test_share_is_checked(self) -> None:
        """A share outside (0, 1] is refused."""
        with pytest.raises(ValueError, match="max_result_share"):
            ContextSession(128_000, max_result_share=1.5)


def test_sessions_in_threads_share_nothing() -> None:
    """Sessions run side by side in threads give what each gives alone."""
    import threading

    def run(results: dict[int, Any], key: int) -> None:
        session = ContextSession(16_000, counter=ExactCounter(), clock=Clock())
        run_loop(session, [1_500 * (key + turn) for turn in range(1, 10)], 16_000)
        results[key] = session.prepare(system=SYSTEM).messages

    alone: dict[int, Any] = {}
    for key in range(4):
        run(alone, key)
    together: dict[int, Any] = {}
    threads = [threading.Thread(target=run, args=(together, key)) for key in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert together == alone
