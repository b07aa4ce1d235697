"""The read detector remembers the copies it found per message: a scan by a detector that has
seen other histories finds what a new detector finds."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import EditType, NativeReadDetector, OverwriteStore
from windowkeeper.core._file_reads import ReadScan
from windowkeeper.core._updates import text_update

from ..builders import tool_result, tool_use
from .test_native_reads import BODY

_PATHS = ["src/app.py", "./src/app.py", "src/util.py"]


def _turn(call: str, path: int, listed: bool, tool: str) -> list[dict[str, Any]]:
    body: Any = [{"type": "text", "text": BODY}] if listed else BODY
    return [
        {"role": "assistant", "content": [tool_use(call, tool, file_path=_PATHS[path])]},
        {"role": "user", "content": [tool_result(call, body)]},
    ]


_TURN = st.tuples(st.integers(0, 2), st.booleans(), st.sampled_from(["Read", "Write"]))


def _summary(scan: ReadScan) -> Any:
    return (
        {
            path: [(s.message_index, s.block_index, s.replacement) for s in sightings]
            for path, sightings in scan.reads.items()
        },
        scan.mention_paths,
    )


@settings(max_examples=60, deadline=None)
@given(
    st.lists(_TURN, min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 11), _TURN), max_size=4),
    st.integers(0, 4),
)
def test_a_used_detector_scans_as_a_new_one(turns: list[Any], edits: list[Any], start: int) -> None:
    """Between scans, messages are replaced (a user message, or the call before a result), the
    scan starts elsewhere and the store replaces a block: the memo never answers for a message
    whose index, neighbour or value changed."""
    history: list[dict[str, Any]] = [{"role": "user", "content": "Fix it."}]
    for number, turn in enumerate(turns):
        history += _turn(f"t{number}", *turn)
    used = NativeReadDetector()
    store = OverwriteStore()
    used.scan(history, start, store)
    for number, (at, turn) in enumerate(edits):
        position = 1 + at % (len(history) - 1)
        history = list(history)
        pair = _turn(f"e{number}", *turn)
        history[position] = pair[0] if history[position]["role"] == "assistant" else pair[1]
        if number % 2:  # the store replaces a block: that copy is no longer found
            store.record(position, EditType.READ_FILE_TOOL, 0, text_update(1_000 + number, "x", []))
        assert _summary(used.scan(history, start, store)) == _summary(
            NativeReadDetector().scan(history, start, store)
        )
    shifted = [history[0], *history[3:]]  # the same messages at other indices
    assert _summary(used.scan(shifted, 0, store)) == _summary(
        NativeReadDetector().scan(shifted, 0, store)
    )
