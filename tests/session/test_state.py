"""The session's state value and its codec: round trips, windowkeeper 0.1's layout, bad values."""

from __future__ import annotations

import json
from typing import Any

import pytest

from windowkeeper import Clip, ContextSession, TaskFolderError, TokenUsage
from windowkeeper.session import CompactionState, Fold, SessionState
from windowkeeper.session._ledger import build_ledger
from windowkeeper.session._state import STATE_VERSION, cut_state, state_from_json, state_to_json
from windowkeeper.session._summary import continuation
from windowkeeper.storage import Snapshot

from .policy_tables import Held, state_v1

FULL = SessionState(
    deleted_range=(2, 7),
    generation=3,
    last_timestamp=1_700_000_000_123,
    usage=TokenUsage(tokens_in=10, tokens_out=2, cache_writes=3, cache_reads=4),
    usage_timestamp=1_700_000_000_100,
    usage_generation=2,
    clips=(Clip(9, 0, 500),),
    requests=12,
    compaction=CompactionState(
        fold=Fold(7, "the continuation", "the summary"),
        folds=2,
        poor_folds=1,
        folded_at=11,
        paused_at=None,
        pending=(10, 11),
        excluded=(8,),
        declined=1,
    ),
)


def test_the_codec_round_trips_every_field() -> None:
    value = state_to_json(FULL, 12)
    assert value["version"] == STATE_VERSION
    assert state_from_json(json.loads(json.dumps(value)), "here", 12) == FULL
    assert state_from_json(state_to_json(SessionState(), 0), "here", 0) == SessionState()


def test_a_first_state_has_made_no_fold_yet() -> None:
    """folded_at is None before any fold, so the first request may ask for a summary."""
    assert SessionState().compaction.folded_at is None


def test_a_state_of_windowkeeper_0_1_without_compaction_loads() -> None:
    state = state_from_json(state_v1(), "here", 12)
    assert state.deleted_range == (2, 7)
    assert state.usage == TokenUsage(10, 2, 3, 4)
    assert state.clips == (Clip(9, 0, 500),)
    assert state.compaction == CompactionState()
    assert state.requests == 0


def test_a_state_of_windowkeeper_0_1_with_a_fold_loads_its_summary_as_data() -> None:
    ledger = build_ledger([{"role": "user", "content": "<task>Port it.</task>"}])
    text = continuation("The parser is ported.", ledger)
    value = state_v1(
        folded=[7, text],
        folds=2,
        poor_folds=1,
        folded_at=-1,
        requests=12,
        pending=None,
        excluded=[8],
    )
    state = state_from_json(value, "here", 12)
    fold = state.compaction.fold
    assert fold is not None
    assert (fold.end, fold.text) == (7, text)
    assert fold.summary is not None
    assert fold.summary.startswith("The parser is ported.")
    assert state.compaction.folded_at is None  # -1 meant "no fold yet"
    assert state.compaction.excluded == (8,)
    assert state.requests == 12


def test_a_task_stored_by_0_1_reopens_and_is_rewritten_in_this_version() -> None:
    history = [
        {"role": "user", "content": f"m{i}"}
        if i % 2 == 0
        else {"role": "assistant", "content": f"a{i}"}
        for i in range(13)
    ]
    backend = Held(Snapshot(version=4, history=history, store_json="[]", state=state_v1()))
    session = ContextSession(10_000, store=backend)
    assert session.deleted_range == (2, 7)
    assert session.state.clips == (Clip(9, 0, 500),)
    session.append({"role": "assistant", "content": "more"})
    written = backend.commits[-1].state
    assert written["version"] == STATE_VERSION
    assert state_from_json(written, "held", 14).deleted_range == (2, 7)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"version": 9}, "version 9"),
        ({"deleted_range": [2, 12]}, "reaches past"),
        ({"deleted_range": [2, 11]}, r"deleted_range \[2, 11\] would hide the last message"),
        (
            {"compaction": {"fold": {"end": 9, "text": "t", "summary": None}}},
            "inside deleted_range",
        ),
        ({"compaction": "x"}, "compaction must be an object"),
        ({"requests": -1}, "requests must be an integer"),
        ({"generation": 10**16}, "generation must be an integer"),
    ],
)
def test_bad_values_are_refused_with_where_they_are(change: dict[str, Any], message: str) -> None:
    value = state_to_json(FULL, 12)
    if "compaction" in change and isinstance(change["compaction"], dict):
        value["compaction"] = {**value["compaction"], **change["compaction"]}
    else:
        value.update(change)
    with pytest.raises(TaskFolderError, match=message) as raised:
        state_from_json(value, "folder/x", 12)
    assert "folder/x" in str(raised.value)


def test_a_cut_drops_the_decisions_past_it() -> None:
    cut = cut_state(FULL, 8)
    assert cut.deleted_range == (2, 5)  # whole pairs: (2, 6) would leave two answers side by side
    assert cut.compaction.fold is None  # the fold reached past the new range
    assert cut.compaction.pending is None  # asked when the history was longer
    assert cut.compaction.excluded == ()
    assert cut.clips == ()
    assert cut.usage is None
    assert cut.generation == FULL.generation + 1
    assert cut_state(FULL, 9).deleted_range == (2, 7)
    assert cut_state(FULL, 6).deleted_range == cut_state(FULL, 5).deleted_range == (2, 3)
    assert cut_state(FULL, 4).deleted_range is None  # (2, 1) is no range
    kept = cut_state(FULL, 12)
    assert kept.deleted_range == (2, 7)
    assert kept.compaction.fold == FULL.compaction.fold
