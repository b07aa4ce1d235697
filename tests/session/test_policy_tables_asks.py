"""What follows an in-band ask, and what the session makes of it, row by row.

The ask is the request of ``test_policy_tables_compaction``'s small history (the task and six
reads of 5,000 characters in a 10,000-token window). The next message decides: a summary is
folded; an empty reply or anything else is declined with a reason, and the ask is made again.
"""

from __future__ import annotations

from typing import Any

import pytest

from .test_policy_tables_compaction import _asked

AGAIN = "asked again later"


@pytest.mark.parametrize(
    ("reply", "summarizing", "reason"),
    [
        (
            {"role": "assistant", "content": "  "},
            True,
            f"an empty reply to the in-band ask: {AGAIN}",
        ),
        ({"role": "assistant", "content": []}, True, f"an empty reply to the in-band ask: {AGAIN}"),
        # the user spoke instead of the model: not a reply at all, so not an empty one
        (
            {"role": "user", "content": "Stop, use m9.py instead."},
            False,
            f"a reply that is not a summary to the in-band ask: {AGAIN}",
        ),
    ],
)
def test_what_is_not_a_summary_is_declined_with_its_reason(
    reply: dict[str, Any], summarizing: bool, reason: str
) -> None:
    keeper, _ = _asked()
    keeper.append(reply)
    assert keeper.summarizing is summarizing
    prepared = keeper.prepare()
    assert [(a.step, a.reason) for a in prepared.actions] == [("summary-declined", reason)]
    assert prepared.summary_requested  # asked again
    assert keeper.state.compaction.declined == 1
