"""Runs the shrink steps in order, re-measuring after each batch, with a guarantee that it ends."""

from __future__ import annotations

from collections.abc import Sequence

from ..._errors import StepError
from ..._record import replace
from ._protocol import Action, Draft, Step

__all__ = ["goal_of", "run_steps"]


def _round_limit(draft: Draft) -> int:
    """More rounds than any honest repeating step can take: one per block sent, four times over.

    Steps change only what is sent (and a clip tightens a block of it), so the bound is taken
    over the request, not the whole history: a long hidden history costs nothing here.
    """
    blocks = sum(
        len(content) if isinstance(content := message.get("content"), list) else 1
        for message in draft.messages
    )
    return 16 + 4 * (blocks + len(draft.messages))


def goal_of(step: Step, draft: Draft) -> float:
    """The size ``step`` works down to: the limit for a last resort, else the shrink target."""
    return draft.limit if getattr(step, "goal", "target") == "limit" else draft.target


def run_steps(steps: Sequence[Step], draft: Draft) -> list[Action]:
    """Apply each step's batches to ``draft`` while it is over the step's goal; what they did.

    A step that does not repeat is called once. One that repeats is called until it returns
    None or the request reaches its goal (:func:`goal_of`). An action that changes neither the
    range, the clips, the store nor the estimate is a bug in its step, and so is a step that
    never stops: both raise :class:`StepError` instead of looping.
    """
    actions: list[Action] = []
    limit = _round_limit(draft)
    for step in steps:
        goal = goal_of(step, draft)
        for _round in range(limit):
            if draft.estimate <= goal:
                break
            before, tokens = draft.fingerprint(), draft.estimate
            action = step.apply(draft)
            if action is None:
                break
            draft.refresh()
            if draft.fingerprint() == before:
                raise StepError(
                    f"step {step.name!r} reported {action} but changed nothing in the request"
                )
            actions.append(replace(action, tokens_before=tokens, tokens_after=draft.estimate))
            if not step.repeats:
                break
        else:
            raise StepError(f"step {step.name!r} did not stop after {limit} rounds")
    return actions
