"""What a session lets in, pinned at each bound: timestamps, hidden ranges, checkpoints, NUL
characters, thinking signatures and the opening of a conversation.

Every refusal names the argument (or the path of the offending value); what is accepted at a
bound is kept exactly as given.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from windowkeeper import (
    Checkpoint,
    ConfigurationError,
    ContextSession,
    InvalidRangeError,
    InvalidUsageError,
    MalformedMessageError,
    TokenUsage,
)
from windowkeeper.session import SessionState

WINDOW = 16_000


def session_of(length: int) -> ContextSession:
    session = ContextSession(WINDOW)
    for index in range(length):
        session.append({"role": "user" if index % 2 == 0 else "assistant", "content": f"m{index}"})
    return session


# ------------------------------------------------------------------------------ timestamps


@pytest.mark.parametrize("timestamp", [0, 1, 10**15 - 1])
def test_a_timestamp_in_range_is_kept(timestamp: int) -> None:
    session = session_of(1)
    session.record_usage(TokenUsage(tokens_in=10), timestamp=timestamp)
    assert session.state.usage_timestamp == timestamp


@pytest.mark.parametrize(
    ("timestamp", "hint"),
    [
        (-1, ""),
        (10**15, " (milliseconds, not nanoseconds?)"),
        (1_733_000_000_000_000_000, " (milliseconds, not nanoseconds?)"),  # nanoseconds
        (True, ""),
        (1.5, ""),
        (1e16, ""),
        ("x", ""),
    ],
)
def test_a_timestamp_out_of_range_is_refused(timestamp: Any, hint: str) -> None:
    session = session_of(1)
    message = (
        "timestamp must be milliseconds since the epoch, an integer from 0 to below 10**15"
        f"{hint}, got {timestamp!r:.40}"
    )
    with pytest.raises(ConfigurationError, match=f"^{re.escape(message)}$"):
        session.record_usage(TokenUsage(tokens_in=10), timestamp=timestamp)
    assert session.state.usage is None


# ---------------------------------------------------------------------------- hidden ranges


@pytest.mark.parametrize("hidden", [(0, 0), (0, 4), (1, 4), (4, 4), None])
def test_a_range_that_leaves_the_last_message_visible_is_kept(hidden: Any) -> None:
    session = session_of(6)
    session.deleted_range = hidden
    assert session.deleted_range == hidden


@pytest.mark.parametrize(
    ("hidden", "message"),
    [
        ((1, 5), "would hide the last message of the history's 6"),
        ((1, 6), "reaches past the history's 6 messages"),
        ((1, 7), "reaches past the history's 6 messages"),
        ((-1, 3), "indices must be >= 0"),
        ((1, 10**15), "indices must be >= 0"),
    ],
)
def test_a_range_that_hides_the_last_message_or_more_is_refused(hidden: Any, message: str) -> None:
    session = session_of(6)
    with pytest.raises(InvalidRangeError, match=re.escape(message)):
        session.deleted_range = hidden
    assert session.deleted_range is None


# ------------------------------------------------------------------------------ checkpoints


def _checkpoint(session: ContextSession, **changes: Any) -> Checkpoint:
    taken = session.checkpoint()
    fields = {
        "history_length": taken.history_length,
        "state": taken.state,
        "store_json": taken.store_json,
        "timestamp": taken.timestamp,
        "counter_state": taken.counter_state,
        **changes,
    }
    return Checkpoint(**fields)


@pytest.mark.parametrize(
    "changes",
    [
        {"history_length": 0},
        {"history_length": 4},
        {"timestamp": 0},
        {"state": SessionState(usage=TokenUsage(tokens_in=10**15 - 1, cache_reads=0))},
        {"state": SessionState(usage=TokenUsage(tokens_out=10**15 - 1, cache_writes=10**15 - 1))},
        {"state": SessionState(usage_timestamp=10**15 - 1)},
        {"state": SessionState(deleted_range=(1, 2))},
    ],
)
def test_a_checkpoint_within_bounds_is_rolled_back_to(changes: dict[str, Any]) -> None:
    session = session_of(4)
    checkpoint = _checkpoint(session, **changes)
    session.rollback(checkpoint)
    assert len(session.history) == checkpoint.history_length
    assert session.state.usage == checkpoint.state.usage
    assert session.deleted_range == checkpoint.state.deleted_range


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        (
            {"history_length": -1},
            ConfigurationError,
            "checkpoint.history_length must be an integer >= 0",
        ),
        (
            {"history_length": True},
            ConfigurationError,
            "checkpoint.history_length must be an integer >= 0",
        ),
        (
            {"history_length": 1.0},
            ConfigurationError,
            "checkpoint.history_length must be an integer >= 0",
        ),
        (
            {"history_length": 5},
            ConfigurationError,
            "checkpoint holds 5 messages, the history only 4",
        ),
        ({"state": None}, ConfigurationError, "checkpoint.state must be a SessionState"),
        (
            {"store_json": None},
            ConfigurationError,
            "checkpoint.store_json must be the store's JSON",
        ),
        ({"timestamp": -1}, ConfigurationError, "checkpoint.timestamp must be milliseconds"),
        (
            {"state": SessionState(usage_timestamp=10**15)},
            ConfigurationError,
            "checkpoint.state.usage_timestamp must be milliseconds",
        ),
        (
            {"state": SessionState(usage=(1, 2))},
            ConfigurationError,
            "checkpoint.state.usage must be a TokenUsage",
        ),
        (
            {"state": SessionState(usage=TokenUsage(tokens_in=10**15))},
            InvalidUsageError,
            "checkpoint.state.usage.tokens_in is 1,000,000,000,000,000 tokens, more than can be"
            " stored (at most 999,999,999,999,999)",
        ),
        (
            {"state": SessionState(usage=TokenUsage(cache_reads=10**15))},
            InvalidUsageError,
            "checkpoint.state.usage.cache_reads is 1,000,000,000,000,000 tokens",
        ),
        (
            {"state": SessionState(usage=TokenUsage(tokens_out=-1))},
            InvalidUsageError,
            "checkpoint.state.usage.tokens_out must be a non-negative integer, got -1",
        ),
        (
            {"state": SessionState(usage=TokenUsage(cache_writes=True))},
            InvalidUsageError,
            "checkpoint.state.usage.cache_writes must be a non-negative integer, got True",
        ),
        (
            {"state": SessionState(usage=TokenUsage(tokens_in=1.0))},  # type: ignore[arg-type]
            InvalidUsageError,
            "checkpoint.state.usage.tokens_in must be a non-negative integer, got 1.0",
        ),
        (
            {"state": SessionState(deleted_range=(1, 3))},
            InvalidRangeError,
            "checkpoint.state.deleted_range (1, 3) would hide the last message",
        ),
    ],
)
def test_a_checkpoint_out_of_bounds_is_refused(
    changes: dict[str, Any], error: type[Exception], message: str
) -> None:
    session = session_of(4)
    checkpoint = _checkpoint(session, **changes)
    with pytest.raises(error, match=f"^{re.escape(message)}"):
        session.rollback(checkpoint)
    assert len(session.history) == 4


def test_a_rollback_takes_only_a_checkpoint() -> None:
    with pytest.raises(ConfigurationError, match=r"^rollback takes a Checkpoint from checkpoint"):
        session_of(2).rollback((2, None))  # type: ignore[arg-type]


# ------------------------------------------------------------------------- text and thinking


def _thinking(**block: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", **block},
            {"type": "text", "text": "ok"},
        ],
    }


@pytest.mark.parametrize(
    ("message", "path"),
    [
        ({"role": "assistant", "content": "a\x00b"}, "history[3].content"),
        (
            {"role": "assistant", "content": [{"type": "text", "text": "ab\x00"}]},
            "history[3].content[0].text",
        ),
        (
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "t", "name": "x", "input": {"a": ["", "\x00"]}}
                ],
            },
            "history[3].content[0].input.a[1]",
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {"a b": "\x00"}}],
            },
            "history[3].content[0].input['a b']",
        ),
        (_thinking(), "history[3].content[0].signature"),
        (_thinking(signature=""), "history[3].content[0].signature"),
        (_thinking(signature=5), "history[3].content[0].signature"),
    ],
)
def test_what_no_provider_or_backend_takes_is_refused_with_its_path(
    message: dict[str, Any], path: str
) -> None:
    session = session_of(2)
    with pytest.raises(MalformedMessageError, match=f"^{re.escape(path)}: "):
        session.extend([{"role": "user", "content": "fine"}, message])
    assert len(session.history) == 2


def test_a_nul_in_a_key_is_refused() -> None:
    session = session_of(3)
    message = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {"a\x00": 1}}],
    }
    with pytest.raises(
        MalformedMessageError, match=r"^history\[3\]\.content\[0\]\.input: a key holds a NUL"
    ):
        session.append(message)


def test_the_nul_is_located_in_its_text() -> None:
    session = session_of(3)
    with pytest.raises(MalformedMessageError, match=r"NUL character \(at 2\)"):
        session.append({"role": "assistant", "content": "ab\x00"})


@pytest.mark.parametrize(
    "message",
    [
        _thinking(signature="sig"),
        {"role": "assistant", "content": [{"type": "text", "text": "no thinking here"}]},
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "xyz"}]},
        {"role": "assistant", "content": "plain \x01 text"},
    ],
)
def test_what_a_provider_takes_is_kept_as_given(message: dict[str, Any]) -> None:
    session = session_of(3)
    session.append(message)
    assert session.history[-1] is message


@pytest.mark.parametrize(
    ("request_", "path"),
    [
        ({"system": "a\x00"}, "system"),
        ({"system": [{"type": "text", "text": "\x00"}]}, "system[0].text"),
        ({"tools": [{"name": "a"}, {"name": "b", "description": "\x00"}]}, "tools[1].description"),
    ],
)
def test_a_system_prompt_or_tool_with_a_nul_is_refused(request_: dict[str, Any], path: str) -> None:
    session = session_of(1)
    with pytest.raises(MalformedMessageError, match=f"^{re.escape(path)}: "):
        session.prepare(**request_)


def test_the_same_system_prompt_and_tools_are_let_in_again() -> None:
    session = session_of(1)
    system, tools = [{"type": "text", "text": "be brief"}], [{"name": "a"}]
    first = session.prepare(system=system, tools=tools)
    assert session.prepare(system=system, tools=tools).messages == first.messages
    with pytest.raises(MalformedMessageError, match=r"^tools\[1\]"):
        session.prepare(system=system, tools=[*tools, {"name": "\x00"}])
    with pytest.raises(MalformedMessageError, match=r"^system\[1\]"):
        session.prepare(system=[*system, {"type": "text", "text": "\x00"}], tools=tools)


# ------------------------------------------------------------------------------- the opening


@pytest.mark.parametrize(
    "opening",
    [
        [{"role": "assistant", "content": "Hello! What shall we do?"}],
        [{"role": "assistant", "content": "Hello!"}, {"role": "user", "content": "Fix it."}],
        [{"role": "user", "content": "Fix it."}, {"role": "assistant", "content": "On it."}],
        [
            {"role": "assistant", "content": "Hello!"},
            {"role": "user", "content": "Fix it."},
            {"role": "assistant", "content": "On it."},
        ],
    ],
)
def test_a_conversation_opens_with_the_task_or_one_greeting(opening: list[dict[str, Any]]) -> None:
    session = ContextSession(WINDOW)
    session.extend(opening)
    assert session.history == opening


@pytest.mark.parametrize("split", [0, 1])
def test_two_greetings_are_refused(split: int) -> None:
    session = ContextSession(WINDOW)
    opening = [
        {"role": "assistant", "content": "Hello!"},
        {"role": "assistant", "content": "Anyone there?"},
        {"role": "user", "content": "Fix it."},
    ]
    session.extend(opening[:split])
    with pytest.raises(MalformedMessageError, match=r"^history\[1\]\.role: "):
        session.extend(opening[split:])
    assert session.history == opening[:split]
