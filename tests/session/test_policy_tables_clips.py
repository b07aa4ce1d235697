"""What a custom step may clip: any block of any message of the history, the task included.

The step clips block 0 of one message to 1,000 characters; the request keeps that block's head
and tail around a notice, or the run stops with a :class:`~windowkeeper.StepError` naming a
message that is not in the history.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import Clip, StepError
from windowkeeper.session.steps import Action, Draft

from .policy_tables import session

NOTICE = "\n[... 39,000 characters cut by windowkeeper to fit the context window ...]\n"


class _ClipsOnce:
    name = "clip-one"
    repeats = False

    def __init__(self, index: int) -> None:
        self.index = index

    def apply(self, draft: Draft) -> Action | None:
        clip = Clip(message_index=self.index, block_index=0, kept=1_000)
        draft.clip(clip)
        return Action(self.name, messages=(self.index,), clips=(clip,))


def _history() -> list[dict[str, Any]]:
    task = {"role": "user", "content": [{"type": "text", "text": "t" * 40_000}]}
    return [task, {"role": "assistant", "content": "ok"}, {"role": "user", "content": "go"}]


def test_the_task_itself_can_be_clipped() -> None:
    keeper = session(steps=[_ClipsOnce(0)])
    keeper.extend(_history())
    prepared = keeper.prepare()
    assert [(a.step, a.messages) for a in prepared.actions] == [("clip-one", (0,))]
    assert prepared.messages[0]["content"] == [
        {"type": "text", "text": "t" * 600 + NOTICE + "t" * 400}
    ]
    assert prepared.messages[1:] == _history()[1:]
    assert keeper.state.clips == (Clip(0, 0, 1_000),)


@pytest.mark.parametrize("index", [3, -1])
def test_a_clip_outside_the_history_stops_the_run(index: int) -> None:
    keeper = session(steps=[_ClipsOnce(index)])
    keeper.extend(_history())
    with pytest.raises(StepError) as raised:
        keeper.prepare()
    assert str(raised.value) == f"a step clipped message {index}, not in the history"
    assert keeper.state.clips == ()


class _TightensForever:
    """A faulty step: clips the task one character tighter every round, never done."""

    name = "tighten"
    repeats = True

    def __init__(self) -> None:
        self.kept = 30_000

    def apply(self, draft: Draft) -> Action | None:
        self.kept -= 1
        clip = Clip(message_index=0, block_index=0, kept=self.kept)
        draft.clip(clip)
        return Action(self.name, messages=(0,), clips=(clip,))


def test_a_step_that_never_stops_is_stopped_after_four_rounds_a_block_and_message() -> None:
    """Three messages of one block each: 16 + 4 x (3 blocks + 3 messages) = 40 rounds."""
    step = _TightensForever()
    keeper = session(steps=[step])
    keeper.extend(_history())
    with pytest.raises(StepError) as raised:
        keeper.prepare()
    assert str(raised.value) == "step 'tighten' did not stop after 40 rounds"
    assert step.kept == 30_000 - 40
