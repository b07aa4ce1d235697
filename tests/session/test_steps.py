"""The shrink steps as a pipeline: the default order, custom lists, records, and the runner's guards."""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import (
    Clip,
    ConfigurationError,
    ContextSession,
    StepError,
    TokenUsage,
    WindowkeeperError,
    validate_messages,
)
from windowkeeper.session.steps import (
    Action,
    ClipLargeBlocks,
    Draft,
    HideOldTurns,
    MaskOldOutputs,
    ReplaceDuplicateReads,
    SummarizeTurns,
    default_steps,
)

from .test_session import FIRST, SYSTEM, TASK, Clock, ExactCounter, run_loop, true_tokens

WINDOW = 32_768
SIZES = [2_000 * turn for turn in range(1, 16)] + [140_000]
STEP_NAMES = {"duplicate-reads", "mask-outputs", "hide-turns", "clip-blocks"}


def _session(**options: Any) -> ContextSession:
    return ContextSession(WINDOW, counter=ExactCounter(), clock=Clock(), **options)


def _shrinking_actions(prepared: list[Any]) -> list[Action]:
    return [action for p in prepared for action in p.actions if action.step in STEP_NAMES]


class TestDefaultPipeline:
    def test_default_steps_are_todays_order(self) -> None:
        names = [step.name for step in default_steps()]
        assert names == ["duplicate-reads", "mask-outputs", "hide-turns", "clip-blocks"]
        assert [step.name for step in default_steps(None)] == [
            "duplicate-reads",
            "hide-turns",
            "clip-blocks",
        ]

    def test_with_compaction_the_fold_comes_before_masking(self) -> None:
        names = [step.name for step in default_steps(summarize=SummarizeTurns())]
        assert names == [
            "duplicate-reads",
            "summarize",
            "mask-outputs",
            "hide-turns",
            "clip-blocks",
        ]

    def test_an_explicit_default_list_gives_the_same_requests(self) -> None:
        """``steps=default_steps()`` is the session's own default, request for request."""
        implicit = run_loop(_session(), SIZES, WINDOW)
        explicit = run_loop(_session(steps=default_steps()), SIZES, WINDOW)
        assert [p.messages for p in implicit] == [p.messages for p in explicit]
        assert [p.actions for p in implicit] == [p.actions for p in explicit]

    def test_actions_record_each_batch_and_its_effect(self) -> None:
        prepared = run_loop(_session(), SIZES, WINDOW)
        shrinking = _shrinking_actions(prepared)
        assert {action.step for action in shrinking} >= {"mask-outputs", "hide-turns"}
        for action in shrinking:
            assert action.tokens_before is not None
            assert action.tokens_after is not None
            if action.step != "duplicate-reads":
                assert action.tokens_after < action.tokens_before, action
        for p in prepared:
            hid = [a for a in p.actions if a.step == "hide-turns"]
            if hid:
                assert p.range_changed
                assert hid[-1].deleted_range == p.deleted_range
            masked = [a for a in p.actions if a.step == "mask-outputs"]
            assert len(masked) <= 1  # masking runs once a request

    def test_clips_to_fit_are_recorded(self) -> None:
        session = _session()
        run_loop(session, SIZES, WINDOW)
        final = session.prepare(system=SYSTEM, max_output_tokens=1_000)
        clipped = {clip for action in final.actions for clip in action.clips}
        assert clipped == set(final.clipped)
        assert clipped

    def test_replaced_reads_counts_both_paths(self) -> None:
        """``replaced_reads`` is the messages of every read replacement the actions list."""
        prepared = run_loop(_session(), SIZES, WINDOW)
        for p in prepared:
            read_actions = [
                a for a in p.actions if a.step in {"duplicate-reads", "reported-usage-reads"}
            ]
            assert p.replaced_reads == len({i for a in read_actions for i in a.messages})


class TestCustomSteps:
    def test_without_masking_nothing_is_masked(self) -> None:
        steps = [ReplaceDuplicateReads(), HideOldTurns(), ClipLargeBlocks()]
        prepared = run_loop(_session(steps=steps), SIZES, WINDOW)
        assert "mask-outputs" not in {a.step for a in _shrinking_actions(prepared)}
        assert any(p.preflight_acted for p in prepared)

    def test_clipping_alone_keeps_the_loop_in_the_window(self) -> None:
        """With clipping the only remedy, nothing is hidden and every request still fits."""
        session = _session(steps=[ClipLargeBlocks()])
        session.extend([TASK, FIRST, {"role": "user", "content": "Go on."}])
        for turn in range(1, 12):
            prepared = session.prepare(system=SYSTEM, max_output_tokens=1_000)
            assert true_tokens(prepared.messages, SYSTEM) + 1_000 <= prepared.max_allowed_size
            assert not [
                v for v in validate_messages(prepared.messages) if v.rule != "empty-content"
            ]
            assert {a.step for a in prepared.actions} <= {
                "clip-blocks",
                "clip-on-arrival",
                "reported-usage-reads",
            }
            assert prepared.deleted_range is None
            clipped_so_far = len(prepared.clipped)
            used = true_tokens(prepared.messages, SYSTEM)
            session.record_usage(TokenUsage(tokens_in=used, tokens_out=10))
            session.append(
                {"role": "assistant", "content": [{"type": "text", "text": f"turn {turn}"}]}
            )
            session.append({"role": "user", "content": "y" * 20_000})
        assert clipped_so_far  # the last requests needed clips

    def test_mask_keep_recent_is_checked(self) -> None:
        with pytest.raises(ConfigurationError, match="keep_recent"):
            MaskOldOutputs(-1)

    @pytest.mark.parametrize("bad", ["hide", [object()], {"a": 1}, 3])
    def test_bad_steps_are_refused(self, bad: Any) -> None:
        with pytest.raises(ConfigurationError, match="steps"):
            ContextSession(WINDOW, steps=bad)


class _Idle:
    """A step that claims an action and changes nothing: a bug the runner must catch."""

    name = "idle"
    repeats = True

    def apply(self, draft: Draft) -> Action | None:
        return Action(self.name)


class _Endless:
    """A step that edits the store every round and never says it is done."""

    name = "endless"
    repeats = True

    def __init__(self) -> None:
        self.rounds = 0

    def apply(self, draft: Draft) -> Action | None:
        self.rounds += 1
        draft.replace_text(0, 0, f"r{self.rounds}")
        return Action(self.name)


class _Backwards:
    """A step that tries to shrink the hidden range."""

    name = "backwards"
    repeats = False

    def apply(self, draft: Draft) -> Action | None:
        draft.hide((2, 2))
        return Action(self.name)


class _Loosen:
    """A step that clips a block and then un-clips it."""

    name = "loosen"
    repeats = True

    def apply(self, draft: Draft) -> Action | None:
        kept = 500 if not draft.clips else 600
        draft.clip(Clip(3, 0, kept))
        return Action(self.name)


def _over_the_limit(steps: list[Any]) -> ContextSession:
    session = _session(steps=steps, max_result_share=None)
    session.extend([TASK, FIRST])
    for turn in range(6):
        session.append({"role": "user", "content": "z" * 30_000})
        session.append({"role": "assistant", "content": f"reply {turn}"})
    session.append({"role": "user", "content": "last"})
    return session


class TestRunnerGuards:
    def test_an_action_that_changes_nothing_raises(self) -> None:
        session = _over_the_limit([_Idle()])
        with pytest.raises(StepError, match="changed nothing"):
            session.prepare()

    def test_a_step_that_never_stops_raises(self) -> None:
        step = _Endless()
        session = _over_the_limit([step])
        with pytest.raises(StepError, match="did not stop"):
            session.prepare()
        assert step.rounds > 16

    def test_a_range_must_extend(self) -> None:
        session = _over_the_limit([_Backwards()])
        session.deleted_range = (2, 5)  # still over the limit: the runner calls the step
        with pytest.raises(StepError, match="ends later"):
            session.prepare()

    def test_a_clip_must_tighten(self) -> None:
        session = _over_the_limit([_Loosen()])
        with pytest.raises(StepError, match="not tighter"):
            session.prepare()

    def test_a_failed_step_leaves_the_session_as_it_was(self) -> None:
        session = _over_the_limit([_Endless(), _Idle()])
        session.deleted_range = (2, 3)
        before = (session.deleted_range, session.manager.context_history_json())
        with pytest.raises(StepError):
            session.prepare()
        assert (session.deleted_range, session.manager.context_history_json()) == before
        assert issubclass(StepError, WindowkeeperError)


class _Inspect:
    """A step that records what the draft offers it, then passes."""

    name = "inspect"
    repeats = False

    def __init__(self) -> None:
        self.seen: dict[str, object] = {}

    def apply(self, draft: Draft) -> Action | None:
        self.seen = {name: getattr(draft, name) for name in dir(draft) if not name.startswith("_")}
        return None


class _EditOutside:
    """A step that edits a message the history does not have."""

    name = "edit-outside"
    repeats = False

    def apply(self, draft: Draft) -> Action | None:
        draft.replace_text(len(draft.history), 0, "x")
        return Action(self.name)


class TestNarrowDraft:
    """A step gets values and asks the draft for changes: no store, no manager."""

    def test_the_draft_offers_no_store_and_no_manager(self) -> None:
        """Nothing public on the draft is the session's edit log or its manager."""
        from windowkeeper import ContextManager, OverwriteStore

        step = _Inspect()
        _over_the_limit([step, ClipLargeBlocks()]).prepare()
        assert step.seen
        assert "store" not in step.seen
        assert "manager" not in step.seen
        handles = (OverwriteStore, ContextManager)
        assert not [name for name, value in step.seen.items() if isinstance(value, handles)]
        edits = {"replace_duplicate_reads", "mask_old_outputs", "add_truncation_notice"}
        assert edits | {"replace_text", "hide", "fold", "clip"} <= set(step.seen)

    def test_an_edit_outside_the_history_is_refused(self) -> None:
        """``replace_text`` names a message of the history, or the step is at fault."""
        session = _over_the_limit([_EditOutside()])
        with pytest.raises(StepError, match="not in the history"):
            session.prepare()
