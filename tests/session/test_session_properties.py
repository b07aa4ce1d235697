"""Laws of the session on random conversations: valid, within the limit, replayable."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import ContextOverflowError, ContextSession, TokenUsage, validate_messages

from ..counters import RuleCounter
from ..strategies import conversations

# Rules the session guarantees for what it sends (empty content and odd shapes are the caller's).
GUARANTEED = {"tool-use-unanswered", "tool-result-unknown", "same-role-twice", "first-not-user"}


class CharCounter(RuleCounter):
    """An exact counter for these tests: a token per four characters of the JSON sent."""

    def __init__(self) -> None:
        super().__init__(
            lambda messages, system, tools: len(json.dumps(list(messages), ensure_ascii=False)) // 4
        )


def turns(history: list[dict[str, Any]]) -> list[int]:
    """History lengths at which a request is made (after each user message)."""
    return [end for end in range(1, len(history) + 1) if history[end - 1]["role"] == "user"]


def prepare_or_overflow(session: ContextSession) -> Any:
    """The prepared request, or "overflow" when the session says nothing can fit (and why)."""
    overflow: ContextOverflowError | None = None
    try:
        return session.prepare()
    except ContextOverflowError as error:
        overflow = error
    assert overflow.estimated_tokens > overflow.limit
    return "overflow"


def play(session: ContextSession, history: list[dict[str, Any]], done: int, upto: int) -> Any:
    """Feed ``history[done:upto]`` request by request; the last prepared request (or None)."""
    prepared = None
    counter = CharCounter()
    for end in turns(history):
        if not done < end <= upto:
            continue
        session.extend(history[done:end])
        done = end
        prepared = prepare_or_overflow(session)
        if prepared == "overflow":
            return prepared
        session.record_usage(TokenUsage(tokens_in=counter.count(prepared.messages), tokens_out=5))
    return prepared


@settings(max_examples=60, deadline=None)
@given(conversations(min_size=3, max_size=16, ends_with="user"), st.integers(600, 2_500))
def test_every_request_is_valid_and_within_the_limit(
    history: list[dict[str, Any]], window: int
) -> None:
    """Turn by turn, every prepared request fits the limit by the counter and keeps the rules."""
    before = json.dumps(history)
    session = ContextSession(window, counter=CharCounter(), clock=iter(range(10**6)).__next__)
    counter = CharCounter()
    done = 0
    for end in turns(history):
        session.extend(history[done:end])
        done = end
        prepared = prepare_or_overflow(session)
        if prepared == "overflow":
            break
        assert counter.count(prepared.messages) <= prepared.max_allowed_size
        broken = [v for v in validate_messages(prepared.messages) if v.rule in GUARANTEED]
        assert broken == []
        session.record_usage(TokenUsage(tokens_in=counter.count(prepared.messages), tokens_out=5))
    assert json.dumps(history) == before


@settings(max_examples=40, deadline=None)
@given(
    conversations(min_size=5, max_size=16, ends_with="user"),
    st.integers(600, 2_500),
    st.integers(0, 100),
)
def test_rollback_then_replay_gives_the_same_request(
    history: list[dict[str, Any]], window: int, cut: int
) -> None:
    """Rolling back to a checkpoint and feeding the same turns again prepares the same request."""
    points = turns(history)
    middle = points[cut % len(points)]
    session = ContextSession(window, counter=CharCounter(), clock=iter(range(10**6)).__next__)
    if play(session, history, 0, middle) == "overflow":
        return
    checkpoint = session.checkpoint()
    first = play(session, history, middle, len(history))
    session.rollback(checkpoint)
    second = play(session, history, middle, len(history))
    if first == "overflow" or first is None:
        assert second == first
        return
    assert second.messages == first.messages
    assert second.deleted_range == first.deleted_range


@settings(max_examples=60, deadline=None)
@given(
    conversations(min_size=3, max_size=16, ends_with="user"),
    st.integers(600, 2_500),
    st.sampled_from([True, "in-band"]),
)
def test_compaction_keeps_every_request_valid_and_within_the_limit(
    history: list[dict[str, Any]], window: int, summarize: Any
) -> None:
    """With compaction on (ledger or in-band), the same law holds (an in-band ask may use half
    the margin between the limit and the window), and the input is untouched."""
    before = json.dumps(history)
    session = ContextSession(
        window,
        counter=CharCounter(),
        clock=iter(range(10**6)).__next__,
        summarize=summarize,
        keep_recent_tokens=100,
    )
    counter = CharCounter()
    done = 0
    for end in turns(history):
        session.extend(history[done:end])
        done = end
        prepared = prepare_or_overflow(session)
        if prepared == "overflow":
            break
        # an in-band ask may go past the limit, by at most half the margin to the window
        limit = prepared.max_allowed_size
        ceiling = limit + (window - limit) / 2 if prepared.summary_requested else limit
        assert counter.count(prepared.messages) <= ceiling
        broken = [v for v in validate_messages(prepared.messages) if v.rule in GUARANTEED]
        assert broken == []
        session.record_usage(TokenUsage(tokens_in=counter.count(prepared.messages), tokens_out=5))
        if prepared.summary_requested:
            session.append({"role": "assistant", "content": "A summary of the work so far."})
            again = prepare_or_overflow(session)
            if again == "overflow":
                break
            assert counter.count(again.messages) <= again.max_allowed_size
            assert [v for v in validate_messages(again.messages) if v.rule in GUARANTEED] == []
    assert json.dumps(history) == before
