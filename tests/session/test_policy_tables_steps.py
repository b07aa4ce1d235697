"""Which shell commands count as reading a file, pinned through the duplicate-reads step.

Three calls of the same command return the same 12,000 characters (3,000 tokens each by the
exact counter), over the 8,000-token limit: when the command reads one file, the two older
copies are replaced by a notice and the request fits; when it reads no file (an unknown option,
stdin, two files), nothing is replaced and, with no other step, the session cannot fit it.
"""

from __future__ import annotations

import pytest

from windowkeeper import Clip, ContextOverflowError, Prepared, StepError
from windowkeeper.session.steps import Action, Draft, ReplaceDuplicateReads

from .policy_tables import TASK, actions, call, result, session


def _prepare(command: str) -> Prepared:
    keeper = session(steps=[ReplaceDuplicateReads()])
    keeper.append(TASK)
    for number in range(3):
        keeper.extend([call(number, "bash", command=command), result(number, "x = 1\n" * 2_000)])
    return keeper.prepare()


@pytest.mark.parametrize(
    "command",
    [
        "cat a.py",
        "cat -n a.py",  # a known option
        "cat -- -z",  # after --, "-z" is a file name
    ],
)
def test_a_command_reading_one_file_has_its_older_copies_replaced(command: str) -> None:
    assert actions(_prepare(command)) == [("duplicate-reads", (2, 4), None)]


@pytest.mark.parametrize(
    "command",
    [
        "cat -z",  # an option cat does not know, no file
        "cat -",  # standard input
        "cat a.py b.py",  # two files
        "tail -z a.py",
    ],
)
def test_a_command_reading_no_single_file_is_left_alone(command: str) -> None:
    with pytest.raises(ContextOverflowError):
        _prepare(command)


class _ClipsTheSameTwice:
    """A faulty step: clips message 2's result to 1,000 characters on every round."""

    name = "same-clip"
    repeats = True

    def apply(self, draft: Draft) -> Action | None:
        clip = Clip(message_index=2, block_index=0, kept=1_000)
        draft.clip(clip)
        return Action(self.name, messages=(2,), clips=(clip,))


def test_a_step_that_clips_a_block_again_no_tighter_is_stopped() -> None:
    keeper = session(steps=[_ClipsTheSameTwice()])
    keeper.extend([TASK, call(0, "bash", command="ls"), result(0, "z" * 40_000)])
    keeper.extend([call(1, "bash", command="ls"), result(1, "z" * 40_000)])  # still over after
    with pytest.raises(StepError, match=r"re-clipped \(2, 0\) to 1000, not tighter than \[1000\]"):
        keeper.prepare()
