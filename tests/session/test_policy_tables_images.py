"""What an image costs, pinned byte by byte: which header bytes give its size, and at what cost.

The cost is Anthropic's documented ``width * height / 750`` tokens (rounded up) after the long
edge is scaled down to 1568 px, capped at ``max_image_tokens``; an image whose size cannot be
read costs the cap. Each case is a small hand-built header, read through the public
:class:`~windowkeeper.CalibratedEstimator`: the cost is a one-image request's estimate less that
of the same request with ``max_image_tokens=0`` (its text framing only).
"""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest

from windowkeeper import CalibratedEstimator

NO_CAP = 10_000  # above every cost below: an unreadable size costs exactly this
CAP = 1_600


def _message(data: str) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/png", "data": data}
    return {"role": "user", "content": [{"type": "image", "source": source}]}


def cost(data: str | bytes, *, cap: int = NO_CAP) -> int:
    """The image tokens of a request holding one image of this base64 ``data`` (or raw bytes)."""
    text = data if isinstance(data, str) else base64.b64encode(data).decode()
    request = [_message(text)]
    framing = CalibratedEstimator(max_image_tokens=0).count(request)
    return CalibratedEstimator(max_image_tokens=cap).count(request) - framing


def png(width: int, height: int, tail: bytes = b"\x08\x02\x00\x00\x00" + bytes(40)) -> bytes:
    """A PNG signature and IHDR chunk: width and height are bytes 16-24, big-endian."""
    return b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\x0dIHDR" + struct.pack(">II", width, height) + tail


def gif(width: int, height: int, tail: bytes = b"\xf7\x00\x00" + bytes(20)) -> bytes:
    """A GIF header: width and height are bytes 6-10, little-endian; then the flags byte."""
    return b"GIF89a" + struct.pack("<HH", width, height) + tail


def vp8x(width: int, height: int, tail: bytes = b"") -> bytes:
    """A WebP VP8X header: width - 1 and height - 1 as 24-bit little-endian at bytes 24-30."""
    chunk = b"VP8X" + struct.pack("<I", 10) + bytes(4)
    chunk += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(chunk) + len(tail)) + b"WEBP" + chunk + tail


def vp8(width: int, height: int) -> bytes:
    """A lossy WebP: a frame tag, the start code, then 14-bit sizes (two scaling bits above)."""
    frame = bytes(3) + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + bytes(10)
    chunk = b"VP8 " + struct.pack("<I", len(frame)) + frame
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def vp8l(width: int, height: int, top: int = 0) -> bytes:
    """A lossless WebP: 14-bit width - 1 and height - 1, then the alpha and version bits."""
    bits = (width - 1) | ((height - 1) << 14) | (top << 28)
    chunk = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits) + b"\xff" * 8
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def sof(marker: int, width: int, height: int) -> bytes:
    """A JPEG frame header (any SOFn): length 17, precision, height, width, components."""
    return bytes([0xFF, marker]) + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)


def jpeg(*segments: bytes) -> bytes:
    return b"\xff\xd8" + b"".join(segments) + b"\xff\xd9"


def segment(marker: int, payload: bytes) -> bytes:
    """A JPEG marker segment with a length (the length counts its own two bytes)."""
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


# The long edge scaled to 1568 px: a square of any size above it costs 1568 * 1568 / 750.
HUGE_SQUARE = 3_279  # ceil(2_458_624 / 750) = ceil(3278.17)
BIG = 0x0100_03E8  # 16_778_216 px: a size whose four bytes are all needed


@pytest.mark.parametrize(
    ("raw", "tokens"),
    [
        (png(751, 750), 751),  # 563_250 px / 750
        (png(750, 751), 751),
        (png(1_568, 1_568), HUGE_SQUARE),  # the long edge at exactly 1568 px: not scaled
        (png(3_136, 3_136), HUGE_SQUARE),  # scaled by one half
        (png(BIG, BIG), HUGE_SQUARE),  # every byte of both 32-bit sizes is read
        (png(1_500, 1), 2),  # one pixel high: ceil(1500 / 750)
        (png(1, 1_500), 2),
        (png(1, 1), 1),
        (png(0, 750), NO_CAP),  # no pixels: the size is not believed
        (png(750, 0), NO_CAP),
        (png(751, 750)[:24], 751),  # cut right after the height: still read
        (png(751, 750)[:23], NO_CAP),  # one byte short of the height
        (gif(771, 771), 793),  # 594_441 px / 750 = 792.6; the flags byte after is not read
        (gif(0x0302, 0x0203), 529),  # 770 x 515 px = 396_550 / 750 = 528.7: both bytes read
        (vp8x(751, 750), 751),  # exactly 30 bytes: the smallest VP8X header read
        (vp8x(751, 750)[:29], NO_CAP),
        (vp8x(751, 750, tail=b"ICCP" + struct.pack("<I", 4) + b"\xff" * 4), 751),
        (vp8x(0x10_0000, 0x10_0000), HUGE_SQUARE),  # 24-bit sizes, all three bytes read
        (vp8(751, 750), 751),
        (vp8(0xC000 | 751, 0x4000 | 750), 751),  # the scaling bits are not part of the size
        (vp8(0x3FFF, 0x3FFF), HUGE_SQUARE),  # the largest 14-bit sizes
        (vp8l(751, 750), 751),
        (vp8l(751, 750, top=0xF), 751),  # the alpha and version bits are not part of it
        (vp8l(0x4000, 0x4000), HUGE_SQUARE),  # the largest: 14 bits of size - 1
    ],
)
def test_png_gif_and_webp_sizes(raw: bytes, tokens: int) -> None:
    assert cost(raw) == tokens


@pytest.mark.parametrize(
    "raw",
    [
        b"BM" + b"\x36\x10\x0e\x00" * 8,  # a BMP: not a format the size is read from
        b"RIFX" + struct.pack(">I", 22) + vp8x(751, 750)[8:],  # big-endian RIFF is not WebP
        b"RIFF" + struct.pack("<I", 22) + b"WAVE" + vp8x(751, 750)[12:],  # a RIFF, not WebP
        b"RIFF" + struct.pack("<I", 22) + b"WEBP" + b"ALPH" + vp8x(751, 750)[16:],  # no VP8 chunk
        b"GIF88a" + struct.pack("<HH", 751, 750) + bytes(8),  # no such GIF version
        b"\x89PNG\r\n\x1a\x00" + png(751, 750)[8:],  # a damaged PNG signature
        jpeg(segment(0xE0, b"JFIF\x00" + bytes(9))),  # a JPEG without a frame header
        b"\xff\xd8\x00\x11" + sof(0xC0, 751, 750),  # a JPEG whose next byte is not a marker
        jpeg(b"\xff\xd9", sof(0xC0, 751, 750)),  # the image ended (EOI) before any frame
    ],
)
def test_an_unreadable_size_costs_the_cap(raw: bytes) -> None:
    assert cost(raw, cap=CAP) == CAP
    assert cost(raw, cap=7) == 7


@pytest.mark.parametrize(
    "raw",
    [
        jpeg(sof(0xC0, 751, 750)),  # baseline
        jpeg(sof(0xC1, 751, 750)),  # extended sequential
        jpeg(sof(0xC2, 751, 750)),  # progressive
        jpeg(sof(0xC5, 751, 750)),  # differential sequential
        jpeg(sof(0xCD, 751, 750)),  # differential, arithmetic coding
        jpeg(sof(0xCF, 751, 750)),  # the last frame marker
        jpeg(segment(0xC4, bytes(30)), sof(0xC0, 751, 750)),  # a Huffman table first
        jpeg(segment(0xCC, bytes(4)), sof(0xC0, 751, 750)),  # arithmetic conditioning first
        jpeg(segment(0xC8, bytes(4)), sof(0xC0, 751, 750)),  # the reserved JPG marker first
        jpeg(segment(0xE1, bytes(300)), sof(0xC0, 751, 750)),  # a length above one byte
        jpeg(b"\xff\xd0", sof(0xC0, 751, 750)),  # a restart marker: no length
        jpeg(b"\xff\xd7", sof(0xC0, 751, 750)),
        jpeg(b"\xff\x01", sof(0xC0, 751, 750)),  # TEM: no length
        jpeg(b"\xff\xff\xff", sof(0xC0, 751, 750)),  # fill bytes
        (b"\xff\xd8" + sof(0xC0, 751, 750))[:11],  # cut right after the width
    ],
)
def test_a_jpeg_size_is_read_from_its_frame_header(raw: bytes) -> None:
    """Every SOFn but C4 (Huffman tables), C8 (reserved) and CC (arithmetic conditioning) is a
    frame header; the segments before it are skipped by their length, the markers without one
    (TEM, RST0-RST7) and fill bytes by their size."""
    assert cost(raw) == 751


def test_a_jpeg_cut_one_byte_before_its_width_ends_costs_the_cap() -> None:
    assert cost((b"\xff\xd8" + sof(0xC0, 751, 750))[:10], cap=CAP) == CAP


def test_a_frame_marker_read_as_a_segment_is_not_a_size() -> None:
    """C4 is a Huffman table, not a frame: its bytes are skipped, the frame after it read."""
    table = segment(0xC4, struct.pack(">BHHB", 8, 100, 100, 3) + bytes(9))
    assert cost(jpeg(table, sof(0xC0, 751, 750))) == 751


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize("extra", [1, 2, 3, 37])
def test_data_cut_short_after_a_png_header_is_still_read(extra: int) -> None:
    """Only the first 64 base64 characters are decoded for a PNG, GIF or WebP: what follows
    may be cut short (its length no longer a multiple of four)."""
    data = _b64(png(751, 750))[:64] + "A" * extra
    assert cost(data) == 751


@pytest.mark.parametrize("length", [65_537, 65_538, 65_539, 70_001])
def test_a_jpeg_cut_short_after_its_frame_header_is_still_read(length: int) -> None:
    """A JPEG's first 65,536 base64 characters are decoded first: a frame header within them
    is read even when the rest is cut short."""
    raw = jpeg(segment(0xE1, bytes(200)), sof(0xC0, 751, 750))
    data = _b64(raw + bytes(-len(raw) % 3))  # no padding: the data goes on after it
    data += "A" * (length - len(data))
    assert cost(data) == 751


def test_a_jpeg_frame_after_the_first_64_kib_is_found_in_the_whole_data() -> None:
    data = _b64(
        jpeg(segment(0xE1, bytes(60_000)), segment(0xE2, bytes(60_000)), sof(0xC0, 751, 750))
    )
    assert len(data) > 65_536
    assert cost(data) == 751


@pytest.mark.parametrize(
    "raw", [gif(751, 750, tail=b""), jpeg(sof(0xC0, 751, 750)), png(751, 750, tail=b"")]
)
def test_base64_with_line_breaks_is_read(raw: bytes) -> None:
    """MIME writes base64 in lines: the line breaks are skipped, not taken as data."""
    encoded = _b64(raw)
    assert len(encoded) < 64
    assert len(encoded) % 4 == 0
    broken = "\n".join(encoded[i : i + 5] for i in range(0, len(encoded), 5))
    assert len(broken) % 4 != 0
    assert cost(broken) == 751


@pytest.mark.parametrize("data", ["QUJDR", "QUJDRA", "%%%%"])
def test_undecodable_data_costs_the_cap(data: str) -> None:
    assert cost(data, cap=CAP) == CAP


@pytest.mark.parametrize(
    ("url", "tokens"),
    [
        ("data:image/png;base64," + _b64(png(751, 750)), 751),
        ("data:image/png;base64" + _b64(png(751, 750)), CAP),  # no comma: no data
        ("https://example.com/a.png", CAP),
        ("https://example.com/a.png?size=" + _b64(png(751, 750)), CAP),
    ],
)
def test_an_openai_image_url_is_read_only_from_a_data_url(url: str, tokens: int) -> None:
    for image_url in ({"url": url}, url):
        request = [{"role": "user", "content": [{"type": "image_url", "image_url": image_url}]}]
        framing = CalibratedEstimator(max_image_tokens=0).count(request)
        assert CalibratedEstimator(max_image_tokens=CAP).count(request) - framing == tokens


@pytest.mark.parametrize(
    ("source", "tokens"),
    [
        ({"type": "base64", "data": _b64(png(751, 750))}, 751),
        ({"type": "url", "url": "https://example.com/a.png", "data": _b64(png(751, 750))}, CAP),
        ({"type": "file", "file_id": "file_1", "data": _b64(png(751, 750))}, CAP),
    ],
)
def test_only_a_base64_source_is_read(source: dict[str, Any], tokens: int) -> None:
    request = [{"role": "user", "content": [{"type": "image", "source": source}]}]
    framing = CalibratedEstimator(max_image_tokens=0).count(request)
    assert CalibratedEstimator(max_image_tokens=CAP).count(request) - framing == tokens


def test_the_default_cap_is_1600_tokens() -> None:
    request = [_message(_b64(png(4_000, 4_000)))]
    framing = CalibratedEstimator(max_image_tokens=0).count(request)
    assert CalibratedEstimator().count(request) - framing == 1_600
