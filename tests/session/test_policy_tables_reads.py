"""Reads the duplicate-read detector finds in Cline's older layout: a header block, then the body.

``[read_file for 'a.py'] Result:`` alone in a text block announces that the next block holds
the file; the sighting is that next block. Each row is a history and the sightings found, as
(message, block) pairs.
"""

from __future__ import annotations

from typing import Any

import pytest

from windowkeeper import NativeReadDetector, OverwriteStore

BODY = "def main():\n    return 42\n" * 40


def _read(*blocks: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text} for text in blocks]}


HEADER = "[read_file for 'a.py'] Result:"
OPENING = [{"role": "user", "content": "task"}, {"role": "assistant", "content": "ok"}]
AGAIN = {"role": "assistant", "content": "again"}


@pytest.mark.parametrize(
    ("history", "sightings", "duplicates"),
    [
        ([*OPENING, _read(HEADER, BODY), AGAIN, _read(HEADER, BODY)], [(2, 1), (4, 1)], 1),
        ([*OPENING, _read("note", HEADER, BODY), AGAIN, _read(HEADER, BODY)], [(2, 2), (4, 1)], 1),
        ([*OPENING, _read(HEADER), AGAIN, _read(HEADER, BODY)], [(4, 1)], 0),  # no body after it
    ],
)
def test_a_header_block_announces_the_next_one(
    history: list[dict[str, Any]], sightings: list[tuple[int, int]], duplicates: int
) -> None:
    scan = NativeReadDetector().scan(history, 2, OverwriteStore())
    assert [(s.message_index, s.block_index) for s in scan.reads.get("a.py", [])] == sightings
    assert scan.duplicates() == duplicates
