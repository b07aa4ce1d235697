"""The persisted session state, read and written through a session's store, field by field.

The state a backend keeps is a JSON object (version 2; windowkeeper 0.1 wrote version 1): a
session opened on a snapshot reads it into :attr:`ContextSession.state`, and its next commit
writes it back. These rows give hand-written stored values and the exact state they load as,
the exact value a commit writes, and every malformed value refused with where it was wrong;
each bound is tried at, below and above it. Then ``sync`` cuts: what a shorter history keeps
of the hidden range, the fold, the ask, the clips and the excluded replies. Last, the window
and the counter's calibration a state carries beside its decisions.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from windowkeeper import Clip, ContextSession, ContextWindowInfo, TaskFolderError, TokenUsage
from windowkeeper.session import CompactionState, Fold, SessionState
from windowkeeper.storage import Snapshot

from ..counters import RuleCounter
from .policy_tables import Held

HISTORY = [
    {"role": "user", "content": f"m{i}"}
    if i % 2 == 0
    else {"role": "assistant", "content": f"a{i}"}
    for i in range(13)
]
FRESH_COMPACTION = {
    "fold": None,
    "folds": 0,
    "poor_folds": 0,
    "folded_at": None,
    "paused_at": None,
    "pending": None,
    "excluded": [],
    "declined": 0,
}


def stored(**changes: Any) -> dict[str, Any]:
    """A version-2 state of a 13-message history that decided nothing, with ``changes``."""
    compaction = changes.pop("compaction", {})
    if isinstance(compaction, dict):
        compaction = {**FRESH_COMPACTION, **compaction}
    return {
        "version": 2,
        "history_length": 13,
        "deleted_range": None,
        "generation": 0,
        "last_timestamp": 0,
        "usage": None,
        "usage_timestamp": 0,
        "usage_generation": -1,
        "clips": [],
        "requests": 0,
        "compaction": compaction,
        **changes,
    }


def opened(state: Any, history: list[dict[str, Any]] = HISTORY) -> tuple[ContextSession, Held]:
    backend = Held(Snapshot(version=4, history=list(history), store_json=None, state=state))
    return ContextSession(10_000, store=backend), backend


def loaded(state: Any) -> SessionState:
    return opened(state)[0].state


class TestAFreshState:
    def test_a_state_that_decided_nothing_loads_as_the_default_value(self) -> None:
        assert loaded(stored()) == SessionState()


class TestHiding:
    def test_hiding_a_range_moves_the_generation_on_by_one(self) -> None:
        state = SessionState(generation=4).hiding((2, 5))
        assert (state.deleted_range, state.generation) == ((2, 5), 5)
        assert SessionState().hiding(None).generation == 1

    def test_with_compaction_changes_only_the_fields_named(self) -> None:
        state = SessionState(requests=3).with_compaction(folds=2, declined=1)
        assert state == SessionState(requests=3, compaction=CompactionState(folds=2, declined=1))


FULL = stored(
    deleted_range=[2, 7],
    generation=3,
    last_timestamp=1_700_000_000_123,
    usage=[10, 2, 3, 4],
    usage_timestamp=1_700_000_000_100,
    usage_generation=2,
    clips=[[9, 0, 500], [12, 1, 40]],
    requests=12,
    compaction={
        "fold": {"end": 7, "text": "the continuation", "summary": "the summary"},
        "folds": 2,
        "poor_folds": 1,
        "folded_at": 11,
        "paused_at": 10,
        "pending": [10, 11],
        "excluded": [8, 9],
        "declined": 1,
    },
)
FULL_STATE = SessionState(
    deleted_range=(2, 7),
    generation=3,
    last_timestamp=1_700_000_000_123,
    usage=TokenUsage(tokens_in=10, tokens_out=2, cache_writes=3, cache_reads=4),
    usage_timestamp=1_700_000_000_100,
    usage_generation=2,
    clips=(Clip(9, 0, 500), Clip(12, 1, 40)),
    requests=12,
    compaction=CompactionState(
        fold=Fold(7, "the continuation", "the summary"),
        folds=2,
        poor_folds=1,
        folded_at=11,
        paused_at=10,
        pending=(10, 11),
        excluded=(8, 9),
        declined=1,
    ),
)


class TestReadingVersionTwo:
    def test_every_field_is_read_into_its_place(self) -> None:
        assert loaded(FULL) == FULL_STATE

    def test_the_next_commit_writes_the_same_value_back(self) -> None:
        session, backend = opened(FULL)
        session.append({"role": "user", "content": "m13"})
        written = backend.commits[-1].state
        assert {key: written[key] for key in FULL} == {**FULL, "history_length": 14}

    @pytest.mark.parametrize(
        ("changes", "state"),
        [
            ({"deleted_range": [2, -1]}, SessionState(deleted_range=(2, -1))),  # the core's empty
            ({"deleted_range": [3, 11]}, SessionState(deleted_range=(3, 11))),
            ({"usage_generation": 0}, SessionState(usage_generation=0)),
            ({"generation": 10**15 - 1}, SessionState(generation=10**15 - 1)),
            # a clip of a message past the history applies to nothing: dropped on load
            ({"clips": [[12, 0, 5], [13, 0, 5]]}, SessionState(clips=(Clip(12, 0, 5),))),
            ({"compaction": {"declined": 0}}, SessionState()),
        ],
    )
    def test_values_at_their_bounds_are_taken(
        self, changes: dict[str, Any], state: SessionState
    ) -> None:
        assert loaded(stored(**changes)) == state

    def test_a_missing_declined_count_is_zero(self) -> None:
        value = stored()
        del value["compaction"]["declined"]
        assert loaded(value).compaction.declined == 0

    def test_a_fold_may_end_where_the_hidden_range_ends(self) -> None:
        fold = {"end": 7, "text": "t", "summary": None}
        state = loaded(stored(deleted_range=[2, 7], compaction={"fold": fold}))
        assert state.compaction.fold == Fold(7, "t", None)


def _refused(value: Any, message: str) -> None:
    with pytest.raises(TaskFolderError, match=message) as raised:
        loaded(value)
    assert "held (session state): unreadable session state: " in str(raised.value)


FOLD = {"end": 7, "text": "t", "summary": None}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["not", "an", "object"], "expected an object, got list"),
        (stored(version=3), "version 3 is not one"),
        (stored(version=0), "version 0 is not one"),
        (stored(usage=[1, 2, 3]), "usage must be null or four counts"),
        (stored(usage=[1, 2, 3, 4, 5]), "usage must be null or four counts"),
        (stored(usage="1,2,3,4"), "usage must be null or four counts"),
        (stored(usage=[1, 2, 3, -4]), "usage must be an integer >= 0"),
        (stored(clips=[[9, 0]]), r"clips\[0\] must be three integers"),
        (stored(clips=[[9, 0, 1, 2]]), r"clips\[0\] must be three integers"),
        (stored(clips=[[1, 0, 1], "9,0,1"]), r"clips\[1\] must be three integers"),
        (stored(clips=[[9, -1, 1]]), r"clips\[0\] must be an integer >= 0"),
        (stored(clips={"9": 1}), "clips: expected a list, got dict"),
        (stored(deleted_range=[2]), "deleted_range must be null or two indices"),
        (stored(deleted_range=[2, 5, 7]), "deleted_range must be null or two indices"),
        (stored(deleted_range="2-5"), "deleted_range must be null or two indices"),
        (stored(deleted_range=[-1, 5]), r"deleted_range\[0\] must be an integer >= 0"),
        (stored(deleted_range=[2, -2]), r"deleted_range\[1\] must be an integer >= -1"),
        (stored(deleted_range=[2, 13]), r"deleted_range \[2, 13\] reaches past the history's 13"),
        (stored(generation=10**15), "generation must be an integer >= 0, got 1000000000000000"),
        (stored(generation=-1), "generation must be an integer >= 0, got -1"),
        (stored(generation=True), "generation must be an integer >= 0, got True"),
        (stored(generation=2.0), "generation must be an integer >= 0, got 2.0"),
        (stored(last_timestamp=None), "last_timestamp must be an integer"),
        (stored(usage_timestamp="0"), "usage_timestamp must be an integer"),
        (stored(usage_generation=-2), "usage_generation must be an integer >= -1"),
        (stored(requests=-1), "requests must be an integer >= 0"),
        (stored(compaction=None), "compaction must be an object, got NoneType"),
        (stored(compaction={"fold": [7, "t"]}), "compaction.fold must be null or an object"),
        (
            stored(deleted_range=[2, 7], compaction={"fold": {"end": 7, "summary": None}}),
            "compaction.fold must carry a text and a summary",
        ),
        (
            stored(deleted_range=[2, 7], compaction={"fold": {**FOLD, "summary": 3}}),
            "compaction.fold must carry a text and a summary",
        ),
        (stored(compaction={"fold": FOLD}), "folded must be null or a range end inside"),
        (
            stored(deleted_range=[2, 6], compaction={"fold": FOLD}),
            "folded must be null or a range end inside",
        ),
        (
            stored(deleted_range=[2, 7], compaction={"fold": {**FOLD, "end": -1}}),
            "the fold's end must be an integer >= 0",
        ),
        (stored(compaction={"folds": -1}), "compaction.folds must be an integer >= 0"),
        (stored(compaction={"poor_folds": -1}), "compaction.poor_folds must be an integer"),
        (stored(compaction={"folded_at": -1}), "compaction.folded_at must be an integer >= 0"),
        (stored(compaction={"paused_at": "3"}), "compaction.paused_at must be an integer"),
        (stored(compaction={"pending": [1]}), "pending must be null or two integers"),
        (stored(compaction={"pending": [1, 2, 3]}), "pending must be null or two integers"),
        (stored(compaction={"pending": "1,2"}), "pending must be null or two integers"),
        (stored(compaction={"pending": [-1, 2]}), r"pending\[0\] must be an integer >= 0"),
        (stored(compaction={"pending": [1, -2]}), r"pending\[1\] must be an integer >= 0"),
        (stored(compaction={"excluded": None}), "compaction.excluded: expected a list"),
        (stored(compaction={"excluded": [-1]}), "compaction.excluded must be an integer >= 0"),
        (stored(compaction={"declined": -1}), "compaction.declined must be an integer >= 0"),
    ],
)
def test_a_malformed_state_is_refused_saying_what_is_wrong(value: Any, message: str) -> None:
    _refused(value, message)


def v1(**extra: Any) -> dict[str, Any]:
    """A state as windowkeeper 0.1 wrote it: no version key needed, compaction at the top."""
    return {
        "history_length": 13,
        "deleted_range": [2, 7],
        "generation": 3,
        "last_timestamp": 5,
        "usage": None,
        "usage_timestamp": 0,
        "usage_generation": -1,
        "clips": [],
        **extra,
    }


class TestReadingVersionOne:
    def test_a_state_without_a_version_is_version_one_with_no_compaction(self) -> None:
        assert loaded(v1()) == SessionState(deleted_range=(2, 7), generation=3, last_timestamp=5)

    def test_its_counters_are_read_from_the_top_level(self) -> None:
        state = loaded(
            v1(
                version=1,
                folds=2,
                poor_folds=1,
                folded_at=0,
                requests=4,
                pending=[6, 12],
                excluded=[3, 5],
            )
        )
        assert state.requests == 4
        assert state.compaction == CompactionState(
            folds=2, poor_folds=1, folded_at=0, pending=(6, 12), excluded=(3, 5)
        )

    @pytest.mark.parametrize(("folded_at", "read"), [(-1, None), (0, 0), (1, 1)])
    def test_a_folded_at_of_minus_one_meant_no_fold_yet(
        self, folded_at: int, read: int | None
    ) -> None:
        assert loaded(v1(folded_at=folded_at)).compaction.folded_at == read

    def test_its_fold_is_a_range_end_and_a_text(self) -> None:
        fold = loaded(v1(folded=[7, "the ledger alone"])).compaction.fold
        assert fold is not None
        assert (fold.end, fold.text) == (7, "the ledger alone")

    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            ({"folded": [7]}, "folded must be null or a range end inside"),
            ({"folded": [7, "t", "x"]}, "folded must be null or a range end inside"),
            ({"folded": [7, 8]}, "folded must be null or a range end inside"),
            ({"folded": "7"}, "folded must be null or a range end inside"),
            ({"folded": [8, "t"]}, "folded must be null or a range end inside"),
            ({"folded_at": -2}, "folded_at must be an integer >= -1"),
            ({"folds": -1}, "folds must be an integer >= 0"),
            ({"requests": -1}, "requests must be an integer >= 0"),
            ({"excluded": 3}, "excluded: expected a list"),
        ],
    )
    def test_its_malformed_keys_are_refused(self, extra: dict[str, Any], message: str) -> None:
        _refused(v1(**extra), message)


CUT_HISTORY = HISTORY[:12]


class TestSyncCuts:
    """``sync`` to the first ``kept`` messages of a 12-message history."""

    @staticmethod
    def _cut(state: dict[str, Any], kept: int) -> SessionState:
        session, _ = opened({**state, "history_length": 12}, CUT_HISTORY)
        session.sync(CUT_HISTORY[:kept])
        return session.state

    @pytest.mark.parametrize(
        ("deleted", "kept", "left"),
        [
            ([2, 7], 10, [2, 7]),  # the last kept message (9) stays visible: unchanged
            ([2, 7], 9, [2, 7]),  # 8 is still visible
            ([2, 7], 8, [2, 5]),  # 7 would be the last: the range stops a pair before it
            ([2, 7], 5, [2, 3]),
            ([2, 7], 4, None),  # (2, 2) would leave turn 0's call beside message 3
            ([2, 7], 3, None),  # nothing left to hide before the last message
            ([3, 7], 5, [3, 3]),
            ([3, 7], 4, None),
            ([2, -1], 1, [2, -1]),  # the core's empty range hides nothing: no cut reaches it
        ],
    )
    def test_the_hidden_range_leaves_the_last_message_visible(
        self, deleted: list[int], kept: int, left: list[int] | None
    ) -> None:
        state = self._cut(stored(deleted_range=deleted, generation=5, usage=[1, 1, 0, 0]), kept)
        assert state.deleted_range == (tuple(left) if left else None)
        assert state.generation == 6
        assert state.usage is None  # it described a longer request

    @pytest.mark.parametrize(("kept", "fold"), [(10, True), (9, True), (8, False)])
    def test_a_fold_goes_once_the_range_no_longer_holds_it(self, kept: int, fold: bool) -> None:
        value = stored(deleted_range=[2, 7], compaction={"fold": FOLD})
        assert (self._cut(value, kept).compaction.fold is not None) is fold

    @pytest.mark.parametrize(("kept", "pending"), [(11, (4, 10)), (10, None)])
    def test_an_ask_made_on_a_longer_history_goes(
        self, kept: int, pending: tuple[int, int] | None
    ) -> None:
        value = stored(compaction={"pending": [4, 10]})
        assert self._cut(value, kept).compaction.pending == pending

    def test_clips_and_excluded_replies_past_the_cut_go(self) -> None:
        value = stored(clips=[[6, 0, 9], [7, 0, 9]], compaction={"excluded": [6, 7]})
        state = self._cut(value, 7)
        assert state.clips == (Clip(6, 0, 9),)
        assert state.compaction.excluded == (6,)


class TestTheStoredWindow:
    """A session opened with no window and no model takes the window stored with its state
    (``[context_window, max_allowed_size]``), else warns and assumes the default one."""

    @staticmethod
    def _window(stored_window: Any) -> tuple[ContextWindowInfo, list[str]]:
        backend = Held(
            Snapshot(version=4, history=HISTORY, state={**stored(), "window": stored_window})
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            keeper = ContextSession(store=backend)
        return keeper.window, [str(warning.message) for warning in caught]

    @pytest.mark.parametrize(
        ("value", "limit"),
        [
            ([20_000, 15_000], 15_000.0),
            ([20_000, 20_000], 20_000.0),  # a limit of the whole window is taken
            ([20_000, 1], 1.0),
            # a limit past the window, or none readable: the window's own limit
            ([20_000, 20_001], 16_000.0),
            ([20_000, 0], 16_000.0),
            ([20_000, True], 16_000.0),
            ([20_000, "x"], 16_000.0),
        ],
    )
    def test_a_stored_window_is_taken(self, value: list[Any], limit: float) -> None:
        window, warned = self._window(value)
        assert (window.context_window, window.max_allowed_size, warned) == (20_000, limit, [])

    @pytest.mark.parametrize(
        "value", [[0, 100], [True, 1], [-5, 1], [2.5, 1], [20_000], [20_000, 1, 2], "x", None]
    )
    def test_an_unreadable_one_is_the_default_with_a_warning(self, value: Any) -> None:
        window, warned = self._window(value)
        assert window.context_window == 128_000
        assert len(warned) == 1
        assert warned[0].startswith("no model and no context_window given")

    def test_a_window_given_wins(self) -> None:
        backend = Held(
            Snapshot(version=4, history=HISTORY, state={**stored(), "window": [20_000, 15_000]})
        )
        assert ContextSession(50_000, store=backend).window.context_window == 50_000


class _Learnt:
    """A counter that says what it learnt and takes it back (``state_value``/``load_state``)."""

    def __init__(self, refuses: bool = False) -> None:
        self.loaded: list[object] = []
        self.refuses = refuses

    def count(self, messages: Any, *, system: Any = None, tools: Any = None) -> int:
        return 10

    def observe(self, *args: Any, **kwargs: Any) -> None:
        return None

    def state_value(self) -> object:
        return {"learnt": 3}

    def load_state(self, value: object) -> None:
        if self.refuses:
            raise ValueError("not mine")
        self.loaded.append(value)


class TestTheStoredCalibration:
    @staticmethod
    def _opened(calibration: Any, counter: Any) -> Held:
        state = {**stored(), "window": [20_000, 15_000]}
        if calibration is not None:
            state["calibration"] = calibration
        backend = Held(Snapshot(version=4, history=HISTORY, state=state))
        ContextSession(store=backend, counter=counter).append({"role": "user", "content": "m13"})
        return backend

    def test_a_counter_gets_back_what_it_learnt_and_writes_it_again(self) -> None:
        counter = _Learnt()
        backend = self._opened({"learnt": 2}, counter)
        assert counter.loaded == [{"learnt": 2}]
        assert backend.commits[-1].state["calibration"] == {"learnt": 3}
        assert backend.commits[-1].state["window"] == [20_000, 15_000.0]

    def test_without_a_stored_calibration_nothing_is_loaded(self) -> None:
        counter = _Learnt()
        self._opened(None, counter)
        assert counter.loaded == []

    def test_a_counter_that_cannot_take_it_back_is_left_as_made(self) -> None:
        backend = self._opened({"learnt": 2}, RuleCounter(lambda m, s, t: 10))
        assert "calibration" not in backend.commits[-1].state

    def test_a_calibration_the_counter_refuses_is_an_unreadable_state(self) -> None:
        with pytest.raises(TaskFolderError) as raised:
            self._opened({"learnt": 2}, _Learnt(refuses=True))
        assert str(raised.value) == "held (session state): unreadable session state: not mine"
