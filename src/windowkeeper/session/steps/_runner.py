"""Runs the shrink steps in order, re-measuring after each batch, with a guarantee that it ends."""

from __future__ import annotations

from collections.abc import Sequence

from ..._errors import StepError
from ..._record import replace
from ...core._messages import Message
from ._protocol import Action, Draft, Step

__all__ = ["goal_of", "run_steps"]


def _round_limit(messages: Sequence[Message]) -> int:
    """More rounds than any honest repeating step can take: one per block sent, four times over.

    Steps change only what is sent (and a clip tightens a block of it), so the bound is taken
    over the request, not the whole history: a long hidden history costs nothing here.
    """
    blocks = sum(
        len(content) if isinstance(content := message.get("content"), list) else 1
        for message in messages
    )
    return 16 + 4 * (blocks + len(messages))


_FEW_ROUNDS = 16  # no bound is below it: the rounds are counted against the bound only past it


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
    # the bound is over the request as it came, counted only when needed; a snapshot, since the
    # render memo patches its output list in place as the steps change the request
    sent = tuple(draft.messages)
    limit: int | None = None
    for step in steps:
        goal = goal_of(step, draft)
        rounds = 0
        while True:  # at most ``limit`` rounds, each ends in a break, an error or a change
            if rounds >= _FEW_ROUNDS:
                limit = _round_limit(sent) if limit is None else limit
                if rounds >= limit:
                    raise StepError(f"step {step.name!r} did not stop after {limit} rounds")
            if draft.estimate <= goal:
                break
            rounds += 1
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
    return actions
