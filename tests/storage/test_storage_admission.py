"""Whatever a session commits, it reloads: bad values are refused at the call that brings them.

Each refusal names the argument (or the path of the offending value), leaves the session as it
was, and leaves the backend holding what the last acknowledged call made, on every backend.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import (
    ConfigurationError,
    ContextSession,
    InvalidRangeError,
    InvalidUsageError,
    MalformedMessageError,
    SQLiteStore,
    TaskFolderStore,
    TokenUsage,
    WindowkeeperError,
)

from .conftest import Factory

TASK = {"role": "user", "content": "Add pagination to the API."}


def text(role: str, words: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": words}]}


def started(backend: Factory) -> ContextSession:
    session = ContextSession(200_000, store=backend("t1"))
    session.extend([TASK, text("assistant", "ok"), text("user", "go on")])
    session.prepare()
    return session


def reopened(backend: Factory) -> ContextSession:
    return ContextSession(200_000, store=backend("t1"))


class TestRefusedAtTheDoor:
    """Each bad value: the error names it; the task reopens as the last good call left it."""

    @pytest.mark.parametrize(
        ("call", "error", "named"),
        [
            (
                lambda s: s.record_usage(TokenUsage(1200, 40), timestamp=time.time_ns()),
                ConfigurationError,
                "timestamp must be milliseconds",
            ),
            (
                lambda s: s.record_usage(TokenUsage(1200, 40), timestamp=10**15),
                ConfigurationError,
                "timestamp",
            ),
            (
                lambda s: s.record_usage(TokenUsage(10**15, 40)),
                InvalidUsageError,
                "usage.tokens_in",
            ),
            (
                lambda s: s.record_usage({"input_tokens": 5, "cache_read_input_tokens": 10**16}),
                InvalidUsageError,
                "usage.cache_read_input_tokens",
            ),
            (lambda s: setattr(s, "deleted_range", (-1, 2)), InvalidRangeError, "deleted_range"),
            (lambda s: setattr(s, "deleted_range", (2, 2)), InvalidRangeError, "last message"),
            (
                lambda s: s.append(text("assistant", "a NUL \x00 here")),
                MalformedMessageError,
                r"history\[3\].content\[0\].text",
            ),
            (
                lambda s: s.append(
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]}
                ),
                MalformedMessageError,
                r"history\[3\].content\[0\].signature",
            ),
            (
                lambda s: s.append(text("assistant", "lone \ud800 surrogate")),
                MalformedMessageError,
                r"history\[3\].content\[0\].text",
            ),
            (lambda s: s.prepare(system="a NUL \x00"), MalformedMessageError, "system"),
            (
                lambda s: s.prepare(system=[{"type": "text", "text": "\udfff"}]),
                MalformedMessageError,
                r"system\[0\].text",
            ),
            (
                lambda s: s.prepare(
                    tools=[{"name": "t", "input_schema": {"type": "object", "x": math.nan}}]
                ),
                MalformedMessageError,
                r"tools\[0\].input_schema.x",
            ),
            (
                lambda s: s.prepare(tools=[{"name": "t\x00", "input_schema": {}}]),
                MalformedMessageError,
                r"tools\[0\].name",
            ),
        ],
    )
    def test_a_bad_value_is_refused_and_the_task_reopens(
        self, backend: Factory, call: Any, error: type[Exception], named: str
    ) -> None:
        session = started(backend)
        before = (session.history, session.deleted_range, session.prepare().messages)
        with pytest.raises(error, match=named):
            call(session)
        assert (session.history, session.deleted_range, session.prepare().messages) == before
        again = reopened(backend)
        assert (again.history, again.deleted_range, again.prepare().messages) == before

    def test_a_checkpoint_with_a_negative_length_is_refused(self, backend: Factory) -> None:
        session = started(backend)
        bad = dataclasses.replace(session.checkpoint(), history_length=-1)
        with pytest.raises(ConfigurationError, match=r"checkpoint\.history_length"):
            session.rollback(bad)
        point = session.checkpoint()
        hiding = dataclasses.replace(
            point, state=dataclasses.replace(point.state, deleted_range=(2, 2))
        )
        with pytest.raises(InvalidRangeError, match=r"checkpoint\.state\.deleted_range"):
            session.rollback(hiding)
        assert reopened(backend).history == session.history

    def test_an_empty_task_dir_is_refused(self) -> None:
        with pytest.raises(ConfigurationError, match="non-empty path"):
            ContextSession(200_000, task_dir="")
        with pytest.raises(ConfigurationError):
            TaskFolderStore("")

    def test_a_clock_in_nanoseconds_is_refused(self, tmp_path: Path) -> None:
        session = ContextSession(200_000, task_dir=tmp_path / "t", clock=time.time_ns)
        session.append(TASK)
        with pytest.raises(ConfigurationError, match=r"clock\(\)"):
            session.prepare()
        assert ContextSession(200_000, task_dir=tmp_path / "t").history == [TASK]


# -- the law: any sequence of calls, bad values mixed in, reloads to the last acknowledged state

GOOD = st.sampled_from(["assistant", "user"]).flatmap(
    lambda role: (
        st.text(min_size=1, max_size=30)
        .filter(lambda t: "\x00" not in t)
        .map(lambda words: ("append", text(role, words.encode("utf-8", "replace").decode())))
    )
)
BAD_MESSAGES = st.sampled_from(
    [
        text("assistant", "NUL \x00"),
        text("assistant", "\ud800"),
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "x"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "", "name": "x"}]},
        {"role": "robot", "content": "?"},
    ]
).map(lambda message: ("append", message))
CALLS = st.one_of(
    GOOD,
    BAD_MESSAGES,
    st.just(("prepare", None)),
    st.sampled_from([("prepare", "\x00"), ("prepare", 7)]),
    st.integers(min_value=-5, max_value=10**16).map(lambda n: ("usage", n)),
    st.integers(min_value=-3, max_value=12).flatmap(
        lambda start: st.integers(min_value=-3, max_value=12).map(
            lambda end: ("range", (start, end))
        )
    ),
    st.integers(min_value=-(10**16), max_value=10**19).map(lambda ts: ("timestamp", ts)),
    st.just(("checkpoint", None)),
    st.just(("rollback", None)),
)


def apply(session: ContextSession, call: tuple[str, Any], saved: list[Any]) -> None:
    kind, value = call
    if kind == "append":
        session.append(value)
    elif kind == "prepare":
        session.prepare(system=value)
    elif kind == "usage":
        session.record_usage({"input_tokens": value, "output_tokens": 3})
    elif kind == "range":
        session.deleted_range = value
    elif kind == "timestamp":
        session.record_usage(TokenUsage(100, 3), timestamp=value)
    elif kind == "checkpoint":
        saved.append(session.checkpoint())
    elif saved:
        session.rollback(saved.pop())


def persisted(session: ContextSession) -> Any:
    """What a session persists besides its history, as a checkpoint sees it (the whole state
    value but the clock, which a reopen moves on)."""
    point = session.checkpoint()
    return (
        point.history_length,
        dataclasses.replace(point.state, last_timestamp=0),
        point.store_json,
    )


@pytest.mark.parametrize("kind", ["folder", "sqlite"])
@settings(max_examples=40)
@given(calls=st.lists(CALLS, max_size=25))
def test_any_calls_reload_to_the_last_acknowledged_state(
    kind: str, calls: list[tuple[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """After every call (refused or not) the stored task reopens as the live session holds it."""
    base = tmp_path_factory.mktemp("law")

    def store() -> Any:
        return TaskFolderStore(base / "t") if kind == "folder" else SQLiteStore(base / "t.db", "t")

    session = ContextSession(4_000, store=store(), clock=iter(range(10**12, 10**13, 7)).__next__)
    session.append(TASK)
    saved: list[Any] = []
    for call in calls:
        with contextlib.suppress(WindowkeeperError):  # refused: nothing of it may stay
            apply(session, call, saved)
        with ContextSession(4_000, store=store()) as again:
            assert again.history == session.history, call
            assert persisted(again) == persisted(session), call
    session.close()
