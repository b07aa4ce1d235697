"""Each shrink step pinned on a small hand-written history: the exact request it sends.

The history is three tool calls whose results (12,000 characters each, 3,000 tokens by the
exact counter) take a 10,000-token window (limit 8,000, target 4,800) over its limit. Each
table row is one step alone, or the default list, and the request it must produce: which
messages, which notices, which clips. A change that keeps every request valid but sends
something else fails here.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import ContextOverflowError, ContextSession
from windowkeeper.core._notices import TRUNCATION_NOTICE  # the original's wording, pinned
from windowkeeper.session.steps import (
    ClipLargeBlocks,
    HideOldTurns,
    MaskOldOutputs,
    ReplaceDuplicateReads,
    Step,
)

from .test_session import Clock, ExactCounter

TASK = {"role": "user", "content": "Fix the bug."}


def _call(call: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": call, "name": name, "input": arguments}],
    }


def _result(call: str, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call, "content": text}],
    }


OUTPUTS = [
    TASK,
    _call("c1", "bash", command="cat a"),
    _result("c1", "a" * 12_000),
    _call("c2", "bash", command="cat b"),
    _result("c2", "b" * 12_000),
    _call("c3", "bash", command="cat c"),
    _result("c3", "c" * 12_000),
]
READS = [
    TASK,
    _call("c1", "read_file", path="a.py"),
    _result("c1", "x = 1\n" * 2_000),
    _call("c2", "read_file", path="a.py"),
    _result("c2", "x = 1\n" * 2_000),
    _call("c3", "read_file", path="a.py"),
    _result("c3", "x = 1\n" * 2_000),
]
MASKED = (
    "[windowkeeper: the output of bash (12,000 characters) was removed to save context;"
    " run the tool again if it is needed.]"
)
OLDER_COPY = (
    "[windowkeeper: an older copy of 'a.py' was removed here to save context; a newer copy of"
    " the file appears further down in this conversation.]"
)
NOTICED_FIRST_ANSWER = {
    "role": "assistant",
    "content": [
        {"type": "text", "text": TRUNCATION_NOTICE},
        {"type": "tool_use", "id": "c1", "name": "bash", "input": {"command": "cat a"}},
    ],
}


def _prepare(history: list[dict[str, Any]], steps: list[Step] | None) -> Any:
    options: dict[str, Any] = {"steps": steps} if steps is not None else {}
    session = ContextSession(
        10_000, counter=ExactCounter(), clock=Clock(), max_result_share=None, **options
    )
    session.extend(history)
    return session.prepare()


def _summary(prepared: Any) -> list[tuple[str, tuple[int, ...], Any]]:
    return [(a.step, a.messages, a.deleted_range) for a in prepared.actions]


def test_masking_blanks_the_oldest_outputs_only() -> None:
    prepared = _prepare(OUTPUTS, [MaskOldOutputs(1)])
    assert _summary(prepared) == [("mask-outputs", (2,), None)]
    assert prepared.messages == [*OUTPUTS[:2], _result("c1", MASKED), *OUTPUTS[3:]]
    assert prepared.estimated_tokens == 6_088  # over the target: masking is one batch


def test_masking_keeps_exactly_keep_recent() -> None:
    prepared = _prepare(OUTPUTS, [MaskOldOutputs(0)])
    masked = [i for i, m in enumerate(prepared.messages) if MASKED in str(m)]
    assert masked == [2, 4]  # the newest turn's output is never masked
    with pytest.raises(ContextOverflowError):  # keep 2: nothing old enough, nothing else runs
        _prepare(OUTPUTS, [MaskOldOutputs(2)])


def test_hiding_takes_the_oldest_turn_and_places_the_notice() -> None:
    prepared = _prepare(OUTPUTS, [HideOldTurns()])
    assert _summary(prepared) == [("hide-turns", (), (2, 3))]
    assert prepared.messages == [
        TASK,
        NOTICED_FIRST_ANSWER,
        _result("c1", "result missing"),
        *OUTPUTS[5:],
    ]
    assert prepared.estimated_tokens == 3_129


def test_clipping_cuts_the_newest_result_just_enough() -> None:
    prepared = _prepare(OUTPUTS, [ClipLargeBlocks()])
    assert [(a.step, a.clips) for a in prepared.actions] == [
        (
            "clip-blocks",
            (ClipLargeBlocks._tighter.__self__ if False else prepared.actions[0].clips),
        ),
        ("clip-blocks", prepared.actions[1].clips),
    ]
    assert [
        (c.message_index, c.block_index, c.kept) for a in prepared.actions for c in a.clips
    ] == [
        (6, 0, 7_767),
        (6, 0, 7_694),
    ]
    assert prepared.messages[:6] == OUTPUTS[:6]  # the older results stay whole
    text = prepared.messages[6]["content"][0]["content"]
    assert text.startswith("c" * 1_000)
    assert text.endswith("c" * 1_000)
    assert "characters cut by windowkeeper" in text
    assert prepared.estimated_tokens == 8_000  # the limit itself: clipping stops as it fits


def test_duplicate_reads_leave_the_newest_copy() -> None:
    prepared = _prepare(READS, [ReplaceDuplicateReads()])
    assert _summary(prepared) == [("duplicate-reads", (2, 4), None)]
    assert prepared.messages == [
        *READS[:2],
        _result("c1", OLDER_COPY),
        READS[3],
        _result("c2", OLDER_COPY),
        *READS[5:],
    ]


def test_the_default_list_runs_in_order_and_stops_at_the_target() -> None:
    """Reads, then masking (nothing old enough with keep 2), then hiding; clipping not needed."""
    prepared = _prepare(OUTPUTS, None)
    assert _summary(prepared) == [("hide-turns", (), (2, 3))]
    assert prepared.messages == [
        TASK,
        NOTICED_FIRST_ANSWER,
        _result("c1", "result missing"),
        *OUTPUTS[5:],
    ]


def test_masking_comes_before_hiding_when_it_is_enough() -> None:
    history = [*OUTPUTS, _call("c4", "bash", command="ls"), _result("c4", "d" * 400)]
    prepared = _prepare(history, None)
    steps = [a.step for a in prepared.actions]
    assert steps[0] == "mask-outputs"
    assert prepared.actions[0].messages == (2,)


class _SparseCounter:
    """Thirty-two characters a token: a cut of four characters a token of excess frees only an
    eighth of the excess, so the step must cut the same block many times."""

    def count(self, messages: Any, *, system: Any = None, tools: Any = None) -> int:
        return sum(len(str(message["content"])) for message in messages) // 32

    def observe(
        self, messages: Any, *, system: Any = None, tools: Any = None, reported_input_tokens: int
    ) -> None:
        pass


def test_clipping_ends_when_cuts_free_less_than_four_characters_a_token() -> None:
    """The same block cut again and again: each cut tighter than the last, the first one what
    the excess asks at four characters a token, and the rounds end within the runner's bound.
    (The hypothesis machine of test_session_machine found a history where the estimate did not
    move for cuts that small, and the runner gave up: from the third cut in a row of one block,
    the cuts double.)"""
    history = [TASK, _call("c1", "bash", command="cat big"), _result("c1", "d" * 800_000)]
    session = ContextSession(
        10_000,
        counter=_SparseCounter(),
        clock=Clock(),
        max_result_share=None,
        steps=[ClipLargeBlocks()],
    )
    session.extend(history)
    prepared = session.prepare()
    kept = [c.kept for a in prepared.actions for c in a.clips]
    assert prepared.estimated_tokens <= 8_000
    assert len(kept) <= 24
    assert kept == sorted(kept, reverse=True)
    excess = prepared.actions[0].tokens_before - 8_000
    assert kept[0] == 800_000 - excess * 4 - 1  # the first cut: what the excess asks
