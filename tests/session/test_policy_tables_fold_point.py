"""Where a fold cuts a history with thinking tool loops: outside a loop while such a cut exists.

An assistant message that thinks right after a user message of tool results continues a
thinking tool loop; a request opening there would lose the thinking turn it continues. The
rows give the index :func:`~windowkeeper.session.steps.fold_point` returns with one token to
keep verbatim (any cut holds it): the latest assistant message that opens cleanly, and only
when there is none, the latest one inside a loop.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper.session.steps import fold_point

from .policy_tables import TASK, result


def _assistant(turn: int, *, thinks: bool) -> dict[str, Any]:
    thinking = [{"type": "thinking", "thinking": f"plan {turn}", "signature": "s"}]
    call = {"type": "tool_use", "id": f"t{turn}", "name": "Read", "input": {"file_path": "m.py"}}
    return {"role": "assistant", "content": [*(thinking if thinks else []), call]}


def _view(*thinks: bool) -> list[dict[str, Any]]:
    """The task, then for each flag a call (thinking or not) and its result; a last user text."""
    view: list[dict[str, Any]] = [TASK]
    for turn, flag in enumerate(thinks, 1):
        view += [_assistant(turn, thinks=flag), result(turn, "ok")]
    return [*view[:-1], {"role": "user", "content": "Go on."}]


@pytest.mark.parametrize(
    ("thinks", "point"),
    [
        ((False, False, False, False), 7),  # no loop: the newest answer
        ((False, False, True, True), 3),  # messages 5 and 7 think after results: cut before 3
        ((False, True, False, True), 5),
        ((True, True, True, True), 7),  # every answer continues a loop: the cut is made in one
        ((False, True, True, True), 7),  # the first answer follows the task, not a result
    ],
)
def test_the_cut_opens_outside_a_thinking_loop_where_it_can(
    thinks: tuple[bool, ...], point: int
) -> None:
    assert fold_point(_view(*thinks), 0, 1) == point
