"""The default counter's calibration pinned on three messages: what one observation teaches.

:class:`~windowkeeper.CalibratedEstimator` estimates from characters until the provider reports
a request's size; then the observed request is estimated at exactly its report, a request that
extends it at the report plus the estimate of what was added, and any other request at its own
estimate plus what the report left unexplained (system prompt, tools, framing).
"""

from __future__ import annotations

import base64
from typing import Any

import pytest

from windowkeeper import CalibratedEstimator

A = {"role": "user", "content": "a" * 4_000}
B = {"role": "assistant", "content": "b" * 40}
C = {"role": "user", "content": "c" * 2_000}


def test_before_any_report_the_estimate_is_from_characters() -> None:
    counter = CalibratedEstimator()
    assert (counter.count([A, B]), counter.count([A]), counter.count([C])) == (1_491, 1_472, 738)


@pytest.mark.parametrize(
    ("reported", "estimates"),
    [
        (1_500, (1_500, 2_238, 883, 902, 1_617)),
        (3_000, (3_000, 3_738, 2_383, 2_402, 3_117)),
    ],
)
def test_one_report_calibrates_every_later_estimate(
    reported: int, estimates: tuple[int, ...]
) -> None:
    """In order: the observed request (its report), it extended by C (the report plus C's own
    estimate), C alone and C before B (their estimate plus what the report left unexplained),
    and A alone."""
    counter = CalibratedEstimator()
    counter.observe([A, B], reported_input_tokens=reported)
    requests = ([A, B], [A, B, C], [C], [C, B], [A])
    assert tuple(counter.count(request) for request in requests) == estimates


def _image(raw: bytes, media_type: str) -> dict[str, Any]:
    data = base64.b64encode(raw).decode()
    source = {"type": "base64", "media_type": media_type, "data": data}
    return {"role": "user", "content": [{"type": "image", "source": source}]}


_SIZE = (300).to_bytes(2, "little") + (150).to_bytes(2, "little")
_FRAME = b"\x00\x11\x08" + (150).to_bytes(2, "big") + (300).to_bytes(2, "big") + b"\x03" * 8


@pytest.mark.parametrize(
    ("raw", "media_type", "tokens"),
    [
        (b"GIF89a" + _SIZE, "image/gif", 69),  # a 300 x 150 header of exactly ten bytes
        (b"GIF89a" + _SIZE[:3], "image/gif", 1_609),  # one byte short: size unknown
        (b"GIF89a" + bytes(2) + _SIZE[2:], "image/gif", 1_609),  # 0 pixels wide: not a size
        (b"GIF89a" + _SIZE[:2] + bytes(2), "image/gif", 1_609),  # 0 pixels high
        (b"\xff\xd8\xff\xc0" + _FRAME, "image/jpeg", 69),  # baseline frame
        (b"\xff\xd8\xff\xc9" + _FRAME, "image/jpeg", 69),  # arithmetic-coded frame (SOF9)
        (b"\xff\xd8\xff\xff\xc0" + _FRAME, "image/jpeg", 69),  # a fill byte before the marker
        (b"\x00" * 12, "image/png", 1_609),  # no format known: the documented ceiling
    ],
)
def test_an_image_costs_its_area_when_its_header_gives_the_size(
    raw: bytes, media_type: str, tokens: int
) -> None:
    """300 x 150 pixels is 60 tokens (area / 750) plus the block's framing; an image whose
    size cannot be read costs the ceiling, 1,600 tokens."""
    assert CalibratedEstimator().count([_image(raw, media_type)]) == tokens
