"""Edges of what a request costs and keeps: image headers at their shortest, the clip floor.

Each row is one small input and the exact number the session computes from it: an image's
tokens from its header (300 x 150 pixels is 69 tokens with the block's framing; an unreadable
header costs the 1,609-token ceiling), the characters an arrival clip keeps, the margin
quantile of the default counter.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest

from windowkeeper import CalibratedEstimator, Clip, ContextOverflowError, MalformedMessageError
from windowkeeper.session._calibration import weighted_quantile

from .policy_tables import TASK, call, result, session


def _image(raw: bytes, media_type: str) -> dict[str, Any]:
    source = {"type": "base64", "media_type": media_type, "data": base64.b64encode(raw).decode()}
    return {"role": "user", "content": [{"type": "image", "source": source}]}


def _le(number: int, size: int) -> bytes:
    return number.to_bytes(size, "little")


PNG = (
    b"\x89PNG\r\n\x1a\n" + bytes(4) + b"IHDR" + (300).to_bytes(4, "big") + (150).to_bytes(4, "big")
)
VP8 = b"RIFF" + _le(100, 4) + b"WEBP" + b"VP8 " + bytes(10) + _le(300, 2) + _le(150, 2)
FRAME = b"\xff\xc0\x00\x11\x08" + (150).to_bytes(2, "big") + (300).to_bytes(2, "big") + b"\x03" * 8


@pytest.mark.parametrize(
    ("raw", "media_type", "tokens"),
    [
        (PNG, "image/png", 69),  # a PNG header of exactly 24 bytes: signature, IHDR, size
        (PNG[:23], "image/png", 1_609),
        (VP8, "image/webp", 69),  # a lossy WebP header of exactly thirty bytes
        (VP8[:29], "image/webp", 1_609),  # one byte short
        (VP8 + b"\x00", "image/webp", 69),
        # markers without a length before the frame header: skipped as two bytes
        (b"\xff\xd8\xff\xd0" + FRAME, "image/jpeg", 69),  # a restart marker
        (b"\xff\xd8\xff\xd7" + FRAME, "image/jpeg", 69),
        (b"\xff\xd8\xff\xd8" + FRAME, "image/jpeg", 69),  # a second start of image
        (b"\xff\xd8\xff\x01" + FRAME, "image/jpeg", 69),  # TEM
        (b"\xff\xd8\xff\xe0\x00\x02" + FRAME, "image/jpeg", 69),  # an empty APP0 segment
    ],
)
def test_an_image_header_at_its_edges(raw: bytes, media_type: str, tokens: int) -> None:
    assert CalibratedEstimator().count([_image(raw, media_type)]) == tokens


def _runs(text: str) -> str:
    """``text`` with each run of five or more equal characters written as <c*n>."""
    return re.sub(r"(.)\1{4,}", lambda match: f"<{match.group(1)}*{len(match.group())}>", text)


@pytest.mark.parametrize(
    ("size", "sent", "clips"),
    [
        # a 200-token budget is below the floor: a result keeps 1,000 characters, 600 + 400
        (
            30_000,
            "<z*600>\n[... 29,000 characters cut by windowkeeper to fit the context window ...]\n"
            "<z*400>",
            (Clip(2, 0, 1_000),),
        ),
        (1_000, "<z*1000>", ()),  # at the floor: never clipped
    ],
)
def test_an_arrival_clip_keeps_at_least_a_thousand_characters(
    size: int, sent: str, clips: tuple[Clip, ...]
) -> None:
    keeper = session(2_000, max_result_share=0.1)
    keeper.extend([TASK, call(0, "bash", command="ls"), result(0, "z" * size)])
    prepared = keeper.prepare()
    assert _runs(prepared.messages[2]["content"][0]["content"]) == sent
    assert keeper.state.clips == clips


@pytest.mark.parametrize(
    ("samples", "value"),
    [
        ([(0.1, 9.0), (0.5, 1.0)], 0.1),  # nine tenths of the weight reached exactly at 0.1
        ([(0.1, 8.0), (0.5, 2.0)], 0.5),
        ([(0.5, 1.0), (0.1, 9.0)], 0.1),  # ranked by value, not by order given
        ([(0.3, 1.0)], 0.3),
    ],
)
def test_the_margin_quantile_is_the_first_value_reaching_its_weight(
    samples: list[tuple[float, float]], value: float
) -> None:
    """The default counter pads by the size-weighted 90th percentile of its recent errors;
    no public call puts a sample's weight exactly on the quantile, so the helper is asked."""
    assert weighted_quantile(samples, 0.9) == value


@pytest.mark.parametrize("mask_keep_recent", [0, 3, None])
def test_a_task_alone_over_the_window_is_an_overflow(mask_keep_recent: int | None) -> None:
    """Nothing can shrink a history of one user message (the steps, masking too, find no old
    turn in it): the error says how small the request can get."""
    keeper = session(2_000, mask_keep_recent=mask_keep_recent)
    keeper.append({"role": "user", "content": "z" * 40_000})
    with pytest.raises(ContextOverflowError) as raised:
        keeper.prepare()
    assert str(raised.value) == (
        "the smallest request this session can send is about 10,006 tokens (including 0"
        " reserved for output), over the limit of 1,600.0 for a 2,000-token window"
    )
    assert keeper.state.clips == ()


def test_a_block_inside_a_result_must_be_a_typed_dict() -> None:
    message = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t", "content": ["x"]}],
    }
    with pytest.raises(MalformedMessageError) as raised:
        CalibratedEstimator().count([message])
    assert str(raised.value) == (
        "messages[0].content[0].content[0]: expected a block dict with a string 'type'"
    )


def test_a_block_of_an_unknown_type_costs_its_json_as_text() -> None:
    block = {"type": "server_tool_use", "id": "s1", "name": "web_search", "input": {"query": "q"}}
    assert CalibratedEstimator().count([{"role": "assistant", "content": [block]}]) == 38
