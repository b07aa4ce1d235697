"""The draft a shrink step works on, and what it refuses: each rule of :class:`Draft` pinned.

A step changes a request only through the draft's methods, and each checks what it is asked:
a hidden range keeps its start and ends later, within the history; one fold a request; a clip
is tighter than the last of its block; edits name a message of the history. These rows build a
draft by hand (a measure that counts the messages sent) and try each bound.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import Clip, ConfigurationError, OverwriteStore, StepError
from windowkeeper.session import Fold, SessionState
from windowkeeper.session.steps import (
    Action,
    ClipLargeBlocks,
    Draft,
    MaskOldOutputs,
    newest_turn,
    run_steps,
)

USER, ASSISTANT = {"role": "user", "content": "u"}, {"role": "assistant", "content": "a"}
HISTORY = [USER, ASSISTANT, USER, ASSISTANT, USER, ASSISTANT, USER]  # 7 messages


class _Draft:
    """A draft of :data:`HISTORY` whose measure is 10 a message sent (and counts its calls)."""

    def __init__(
        self,
        state: SessionState | None = None,
        messages: list[dict[str, Any]] = HISTORY,
        history: list[dict[str, Any]] = HISTORY,
        **options: Any,
    ) -> None:
        self.renders = 0
        self.store = OverwriteStore()
        state = state or SessionState()
        self.draft = Draft(
            history=history,
            state=state,
            store=self.store,
            view_of=self._view,
            measure=self._measure,
            replace_reads=lambda view, start, now: set(),
            view=list(history),
            messages=list(messages),
            **{"estimate": 70, "now": 5, "limit": 100, "target": 80, **options},
        )

    def _view(self, state: SessionState) -> list[dict[str, Any]]:
        self.renders += 1
        return [*HISTORY, {"role": "user", "content": f"view {self.renders}"}]

    @staticmethod
    def _measure(view: list[Any], state: SessionState) -> tuple[list[Any], int]:
        hidden = state.deleted_range
        sent = [m for i, m in enumerate(view) if hidden is None or not hidden[0] <= i <= hidden[1]]
        return sent, 10 * len(sent)


@pytest.mark.parametrize(
    ("roles", "turn"),
    [
        ("u", range(1, 1)),
        ("ua", range(2, 2)),
        ("uau", range(2, 3)),  # the first pair is never part of it
        ("uuu", range(2, 3)),
        ("uauu", range(2, 4)),
        ("uauau", range(4, 5)),
        ("uauauu", range(4, 6)),
        ("uaua", range(4, 4)),  # ends with an answer: no newest turn
    ],
)
def test_the_newest_turn_is_the_user_messages_after_the_last_answer(
    roles: str, turn: range
) -> None:
    history = [USER if role == "u" else ASSISTANT for role in roles]
    assert newest_turn(history) == turn


class TestHiding:
    @pytest.mark.parametrize("end", [2, 3, 6])
    def test_a_first_range_starts_at_two_and_leaves_the_last_message(self, end: int) -> None:
        made = _Draft()
        made.draft.hide((2, end))
        assert made.draft.state == SessionState(deleted_range=(2, end), generation=1)
        assert made.draft.deleted_range == (2, end)

    @pytest.mark.parametrize(
        ("current", "asked"),
        [
            (None, (1, 4)),  # message 1 is never hidden
            (None, (2, 1)),  # a range that hides nothing
            (None, (2, 7)),  # the last message must stay
            ((2, 4), (3, 5)),  # the start moved
            ((2, 4), (2, 4)),  # no later end
            ((2, 4), (2, 3)),
            ((2, 4), (2, 7)),
        ],
    )
    def test_what_is_refused(self, current: tuple[int, int] | None, asked: tuple[int, int]) -> None:
        made = _Draft(SessionState(deleted_range=current))
        with pytest.raises(StepError) as raised:
            made.draft.hide(asked)
        assert str(raised.value) == (
            f"a step hid {asked} over {current} in a history of 7 messages: a new range keeps"
            " its start and ends later"
        )
        assert made.draft.deleted_range == current

    def test_a_range_grows_from_the_current_one(self) -> None:
        made = _Draft(SessionState(deleted_range=(2, 3), generation=4))
        made.draft.hide((2, 5))
        assert (made.draft.deleted_range, made.draft.state.generation) == ((2, 5), 5)


class TestFolding:
    def test_one_fold_a_request(self) -> None:
        made = _Draft(may_fold=True)
        draft = made.draft
        assert (draft.may_fold, draft.folded_now, draft.continuation, draft.previous_summary) == (
            True,
            False,
            None,
            None,
        )
        draft.fold((2, 4), "the text", "the summary")
        assert draft.state.compaction.fold == Fold(4, "the text", "the summary")
        assert draft.deleted_range == (2, 4)
        assert (draft.folded_now, draft.continuation, draft.previous_summary) == (
            True,
            "the text",
            "the summary",
        )
        with pytest.raises(StepError, match=r"^a step folded turns twice in one request$"):
            draft.fold((2, 5), "again")

    def test_a_draft_may_not_fold_unless_told(self) -> None:
        assert not _Draft().draft.may_fold


class TestClipping:
    @pytest.mark.parametrize("index", [0, 6])
    def test_a_clip_of_a_message_of_the_history_is_taken(self, index: int) -> None:
        made = _Draft()
        made.draft.clip(Clip(index, 0, 500))
        assert made.draft.clips == (Clip(index, 0, 500),)

    @pytest.mark.parametrize("index", [-1, 7])
    def test_a_clip_past_the_history_is_refused(self, index: int) -> None:
        with pytest.raises(
            StepError, match=f"^a step clipped message {index}, not in the history$"
        ):
            _Draft().draft.clip(Clip(index, 0, 500))

    def test_a_block_is_clipped_again_only_tighter(self) -> None:
        made = _Draft(SessionState(clips=(Clip(4, 0, 500), Clip(4, 1, 900))))
        with pytest.raises(
            StepError, match=r"re-clipped \(4, 0\) to 500, not tighter than \[500\]"
        ):
            made.draft.clip(Clip(4, 0, 500))
        made.draft.clip(Clip(4, 0, 499))
        assert made.draft.clips == (Clip(4, 1, 900), Clip(4, 0, 499))  # the other clip stays
        made.draft.clip(Clip(4, 1, 899))  # another block: its own clip decides, not (4, 0)'s
        assert made.draft.clips == (Clip(4, 0, 499), Clip(4, 1, 899))
        made.draft.clip(Clip(5, 0, 2_000))  # a block never clipped: any size
        assert made.draft.clips[-1] == Clip(5, 0, 2_000)

    def test_clips_in_a_row_count_the_latest_blocks_run(self) -> None:
        draft = _Draft().draft
        assert draft.clips_in_a_row(4, 0) == 0
        draft.clip(Clip(4, 0, 900))
        draft.clip(Clip(4, 0, 800))
        assert (draft.clips_in_a_row(4, 0), draft.clips_in_a_row(4, 1)) == (2, 0)
        draft.clip(Clip(4, 1, 900))
        assert (draft.clips_in_a_row(4, 0), draft.clips_in_a_row(4, 1)) == (0, 1)
        draft.clip(Clip(4, 0, 700))
        assert draft.clips_in_a_row(4, 0) == 1  # a new run


class TestMeasuring:
    def test_a_clip_makes_the_view_render_again_on_refresh(self) -> None:
        made = _Draft()
        draft = made.draft
        draft.hide((2, 3))
        draft.refresh()
        assert made.renders == 0  # hiding leaves the view as it is
        assert (draft.estimate, draft.messages) == (50, [*HISTORY[:2], *HISTORY[4:]])
        draft.clip(Clip(6, 0, 500))
        draft.refresh()
        draft.refresh()
        assert made.renders == 1  # once, for the clip
        assert draft.view[-1] == {"role": "user", "content": "view 1"}
        assert draft.estimate == 60

    def test_size_with_measures_another_state_and_changes_nothing(self) -> None:
        draft = _Draft().draft
        assert draft.size_with(SessionState(deleted_range=(2, 5))) == 30
        assert (draft.estimate, draft.deleted_range) == (70, None)

    def test_the_fingerprint_changes_with_each_kind_of_change(self) -> None:
        draft = _Draft().draft
        prints = [draft.fingerprint()]
        draft.hide((2, 3))
        prints.append(draft.fingerprint())
        draft.clip(Clip(6, 0, 500))
        prints.append(draft.fingerprint())
        draft.replace_text(6, 0, "shorter")
        prints.append(draft.fingerprint())
        draft.refresh()
        prints.append(draft.fingerprint())
        assert len(set(prints)) == len(prints)


@pytest.mark.parametrize("index", [0, 6])
def test_an_edit_of_a_message_of_the_history_is_recorded(index: int) -> None:
    made = _Draft()
    made.draft.replace_text(index, 0, "new text")
    assert made.store.effective_text(index, 0) == "new text"


@pytest.mark.parametrize("index", [-1, 7])
def test_an_edit_past_the_history_is_refused(index: int) -> None:
    with pytest.raises(StepError, match=f"^a step edited message {index}, not in the history$"):
        _Draft().draft.replace_text(index, 0, "new text")


class _Clipper:
    """A step that clips message 6 tighter each round, by ``cut`` characters (0: no change)."""

    def __init__(self, name: str, *, repeats: bool = True, goal: str = "target", cut: int = 1):
        self.name, self.repeats, self.goal, self.cut = name, repeats, goal, cut
        self.calls = 0

    def apply(self, draft: Draft) -> Action | None:
        self.calls += 1
        if self.cut == 0:
            return Action(self.name)
        draft.clip(Clip(6, 0, 10_000 - self.calls * self.cut))
        return Action(self.name, clips=draft.clips)


class _Shrinker:
    """A step that hides one more message each round, 10 tokens each."""

    name = "shrink"
    repeats = True

    def __init__(self) -> None:
        self.calls = 0

    def apply(self, draft: Draft) -> Action | None:
        self.calls += 1
        end = 1 + self.calls
        if end >= len(draft.history) - 1:
            return None
        draft.hide((2, end))
        return Action(self.name, deleted_range=(2, end))


class TestTheRunner:
    """:func:`run_steps` over the hand-measured draft: 70 tokens, target 80, limit 100."""

    @pytest.mark.parametrize(("target", "calls"), [(70, 0), (69, 1), (49, 3)])
    def test_a_step_runs_while_the_request_is_over_its_target(
        self, target: int, calls: int
    ) -> None:
        made = _Draft(target=target)
        step = _Shrinker()
        actions = run_steps([step], made.draft)
        assert step.calls == calls
        assert [(a.tokens_before, a.tokens_after) for a in actions] == [
            (70 - 10 * n, 60 - 10 * n) for n in range(calls)
        ]

    def test_a_last_resort_works_down_to_the_limit_only(self) -> None:
        made = _Draft(target=40)
        made.draft.limit = 60
        step = _Shrinker()
        step.goal = "limit"  # type: ignore[attr-defined]
        run_steps([step], made.draft)
        assert (step.calls, made.draft.estimate) == (1, 60)

    def test_a_step_that_does_not_repeat_runs_once(self) -> None:
        made = _Draft(target=10)
        step = _Shrinker()
        step.repeats = False  # type: ignore[misc]
        [action] = run_steps([step], made.draft)
        assert (step.calls, action.deleted_range) == (1, (2, 2))

    def test_an_action_that_changes_nothing_is_a_bug_in_its_step(self) -> None:
        with pytest.raises(StepError) as raised:
            run_steps([_Clipper("idle", cut=0)], _Draft(target=10).draft)
        assert str(raised.value) == (
            "step 'idle' reported Action(step='idle', messages=(), deleted_range=None, clips=(),"
            " tokens_before=None, tokens_after=None, usage=None, reason=None) but changed"
            " nothing in the request"
        )

    @pytest.mark.parametrize(
        ("messages", "bound"),
        [
            (HISTORY, 16 + 4 * (7 + 7)),  # a block a message of text
            ([{"role": "user", "content": [{"type": "text", "text": "a"}] * 3}], 16 + 4 * (3 + 1)),
            ([], 16),
        ],
    )
    def test_a_step_that_never_stops_is_stopped(
        self, messages: list[dict[str, Any]], bound: int
    ) -> None:
        step = _Clipper("forever")
        with pytest.raises(StepError, match=f"^step 'forever' did not stop after {bound} rounds$"):
            run_steps([step], _Draft(messages=messages, target=-(10**9)).draft)
        assert step.calls == bound


def _result(size: int, call: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": call, "content": "r" * size}]
    return {"role": "user", "content": content}


def _calling(call: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call, "name": "R", "input": {}}],
    }


# an older result of 3,000 characters (message 4), the newest turn's of 5,000 and 2,000 (6-7)
CLIPPED = [
    USER,
    ASSISTANT,
    USER,
    _calling("a"),
    _result(3_000, "a"),
    _calling("b"),
    _result(5_000, "b"),
    {"role": "user", "content": [{"type": "text", "text": "t" * 2_000}]},
]


class TestClipLargeBlocks:
    """A request 10 tokens over its limit: 41 characters to cut (four a token, plus one)."""

    @staticmethod
    def _clips(rounds: int, state: SessionState | None = None) -> list[Clip]:
        draft = _Draft(state, history=CLIPPED, estimate=110, limit=100).draft
        step = ClipLargeBlocks()
        made = []
        for _ in range(rounds):
            action = step.apply(draft)
            assert action is not None
            assert action.step == "clip-blocks"
            [clip] = action.clips
            assert action.messages == (clip.message_index,)
            made.append(clip)
        return made

    def test_the_newest_turns_largest_block_first_then_cuts_double_from_the_third(self) -> None:
        assert self._clips(5) == [
            Clip(6, 0, 4_959),
            Clip(6, 0, 4_918),  # the second in a row: the excess again
            Clip(6, 0, 4_790),  # the third: at least 64 << 1
            Clip(6, 0, 4_534),  # 64 << 2
            Clip(6, 0, 4_022),
        ]

    def test_a_block_cut_to_the_minimum_gives_way_to_the_next(self) -> None:
        state = SessionState(clips=(Clip(6, 0, 1_000),))
        assert self._clips(2, state) == [Clip(7, 0, 1_959), Clip(7, 0, 1_918)]

    def test_older_blocks_are_cut_once_the_newest_turn_is_at_the_minimum(self) -> None:
        state = SessionState(clips=(Clip(6, 0, 1_000), Clip(7, 0, 1_000)))
        assert self._clips(1, state) == [Clip(4, 0, 2_959)]

    def test_nothing_left_to_cut_ends_the_step(self) -> None:
        state = SessionState(clips=(Clip(4, 0, 1_000), Clip(6, 0, 1_000), Clip(7, 0, 1_000)))
        draft = _Draft(state, history=CLIPPED, estimate=110, limit=100).draft
        assert ClipLargeBlocks().apply(draft) is None

    def test_hidden_messages_are_never_cut(self) -> None:
        state = SessionState(deleted_range=(2, 4), clips=(Clip(6, 0, 1_000), Clip(7, 0, 1_000)))
        draft = _Draft(state, history=CLIPPED, estimate=110, limit=100).draft
        assert ClipLargeBlocks().apply(draft) is None

    def test_a_cut_never_goes_below_the_minimum(self) -> None:
        draft = _Draft(history=CLIPPED, estimate=10_000, limit=100).draft
        action = ClipLargeBlocks().apply(draft)
        assert action is not None
        assert action.clips == (Clip(6, 0, 1_000),)


class TestMaskOldOutputs:
    @pytest.mark.parametrize("keep", [-1, True, 1.5, "2", None])
    def test_keep_recent_must_be_a_count(self, keep: Any) -> None:
        with pytest.raises(ConfigurationError) as raised:
            MaskOldOutputs(keep)
        assert str(raised.value) == f"keep_recent must be a non-negative int, got {keep!r}"

    @pytest.mark.parametrize("keep", [0, 1, 5])
    def test_a_count_is_taken(self, keep: int) -> None:
        assert MaskOldOutputs(keep).keep_recent == keep

    def test_by_default_the_last_two_outputs_stay_and_it_runs_once(self) -> None:
        assert MaskOldOutputs().keep_recent == 2
        assert not MaskOldOutputs.repeats

    def test_nothing_to_mask_passes(self) -> None:
        assert MaskOldOutputs(0).apply(_Draft().draft) is None  # no tool outputs at all

    def test_the_outputs_before_the_kept_ones_are_masked(self) -> None:
        made = _Draft(history=CLIPPED)
        action = MaskOldOutputs(0).apply(made.draft)
        assert action == Action("mask-outputs", messages=(4,))  # 6-7 are the newest turn
        assert made.store.has_update(4, 0)
        assert not made.store.has_update(6, 0)
