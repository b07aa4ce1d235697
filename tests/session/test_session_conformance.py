"""The session behaves as the original whenever its pre-flight has nothing to do.

Replays the public conformance sessions through :class:`ContextSession` with a counter that
never sees a request over the limit, so only the original's usage-driven decision runs. Ranges,
sent messages and the stored JSON must equal what the original produced, except where the
session deliberately differs: the truncation notice is moved where the model sees it, only the
fields the provider's API defines are sent (:mod:`windowkeeper.formats._wire`), and usage
reported before a truncation does not truncate a second time (the replay of a vector stops there).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import ClineReadDetector, ContextSession, Repair, TokenUsage
from windowkeeper.formats._wire import EMPTIED, anthropic_emptied, anthropic_message, anthropic_wire
from windowkeeper.session._session import finish_request

from ..cline.test_conformance import ALL_VECTORS, _expand, _resolve
from ..counters import RuleCounter

SESSIONS = [v for v in ALL_VECTORS if v["kind"] == "session" and not v["tags"]]
# Ops that read the manager without changing it; everything else ends the comparable prefix.
_READ_ONLY = {
    "get_next_truncation_range",
    "get_truncated_messages",
    "should_compact_context_window",
    "context_history_json",
    "window_info",
}

pytestmark = pytest.mark.skipif(not SESSIONS, reason="no conformance vectors")


class SilentCounter(RuleCounter):
    """Estimates every request at zero tokens, so the pre-flight never acts."""

    def __init__(self) -> None:
        super().__init__(lambda messages, system, tools: 0)


def replay(vector: dict[str, Any]) -> int:
    """Replay a session vector's comparable prefix; return how many requests were compared."""
    clock = {"now": 0}
    session: ContextSession | None = None
    history: list[Any] = []
    last_file = ""
    compared = 0
    for number, step in enumerate(vector["steps"]):
        where = f"{vector['id']} step {number}"
        op = step["op"]
        if op == "append":
            messages = copy.deepcopy(step["messages"])
            history.extend(messages)
            if session is not None:
                session.extend(messages)
            continue
        if op in _READ_ONLY:
            continue
        if op == "trigger_apply_standard_context_truncation_notice_change" and session is not None:
            # Cline's summarize and condense flows: the caller hides history through the manager.
            session.manager.trigger_apply_standard_context_truncation_notice_change(
                step["timestamp"], None, session.history
            )
            if step.get("context_history") is not None:
                last_file = _resolve(step["context_history"], last_file)
            continue
        if op != "get_new_context_messages_and_metadata" or step["use_auto_condense"]:
            break
        if session is None:
            session = ContextSession(
                step["context_window"],
                counter=SilentCounter(),
                detector=ClineReadDetector(),
                place_results=False,
                max_result_share=None,
                clock=lambda: clock["now"],
            )
            session.extend(history)
        session.window = step["context_window"]
        wanted = step["deleted_range"]
        if wanted != (list(session.deleted_range) if session.deleted_range else None):
            session.deleted_range = None if wanted is None else (wanted[0], wanted[1])
        clock["now"] = step["timestamp"]
        if step["usage"] is not None:
            session.record_usage(TokenUsage(**step["usage"]), timestamp=step["timestamp"])
        prepared = session.prepare()
        expect = step["expect"]
        if prepared.ignored_stale_usage and expect["updated_deleted_range"]:
            break  # the original truncates again on usage from before its last truncation
        got_range = list(prepared.deleted_range) if prepared.deleted_range else None
        assert got_range == expect["deleted_range"], f"{where}: range"
        expected_messages = _expand(expect["truncated_history"], history, vector["pool"])
        expected_messages = finish_request(expected_messages, session.manager.store)
        expected_messages = anthropic_wire(expected_messages)  # only API fields are sent
        assert json.loads(json.dumps(prepared.messages)) == json.loads(
            json.dumps(expected_messages)
        ), f"{where}: messages"
        if step.get("context_history") is not None:
            last_file = _resolve(step["context_history"], last_file)
        if last_file:
            assert session.manager.context_history_json() == last_file, f"{where}: store"
        compared += 1
    return compared


@pytest.mark.parametrize("vector", SESSIONS, ids=[v["id"] for v in SESSIONS])
def test_session_matches_the_original(vector: dict[str, Any]) -> None:
    """Every comparable request of the vector matches the original's."""
    replay(vector)


def test_most_requests_are_compared() -> None:
    """The comparison covers the bulk of the recorded requests, not a trivial prefix."""
    total = sum(replay(vector) for vector in SESSIONS)
    requests = sum(
        1
        for vector in SESSIONS
        for step in vector["steps"]
        if step["op"] == "get_new_context_messages_and_metadata"
    )
    # Measured: 1,758 of the 3,564 recorded requests; the rest follow auto-condense, a resume, a
    # rollback or an in-memory optimization, which this replay does not drive through a session.
    assert total >= 1_700, f"only {total} of {requests} requests compared"


_TEXT = st.text(alphabet=st.sampled_from(["a", " ", "\n"]), max_size=3)
_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _TEXT | st.none() | st.just(3)}),
    st.fixed_dictionaries({"type": st.sampled_from(["thinking", "redacted_thinking"])}),
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": st.just("t"), "content": st.just([])}
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["tool_use", "image", "nonsense", 7])}),
    st.just("not a block"),
)
_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": _TEXT | st.lists(_BLOCK, max_size=3) | st.none(),
    }
)


@settings(max_examples=400, deadline=None)
@given(_MESSAGE)
def test_the_estimate_knows_which_messages_the_wire_fills(message: dict[str, Any]) -> None:
    """The estimate counts the empty-message notice for exactly the messages the wire gives it
    (the estimate asks a predicate, the wire shapes a copy: they must agree)."""
    repairs: list[Repair] = []
    anthropic_message(message, "m", repairs)
    assert anthropic_emptied(message) is any(r.detail == EMPTIED for r in repairs)
