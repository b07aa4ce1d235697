"""What an image costs in tokens, read from the header of its base64 data.

Anthropic documents an image's cost as ``width * height / 750`` tokens after the long edge is
scaled down to 1568 px, and at most about 1,600 tokens (images are resized to about 1.15
megapixels). The size is read from the PNG, GIF, WebP or JPEG header, so nothing is decoded
beyond the first bytes (or, for a JPEG, past the metadata that precedes its frame header).
"""

from __future__ import annotations

import binascii
import math
from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_IMAGE_TOKENS", "image_dimensions", "image_tokens"]

MAX_IMAGE_TOKENS = 1600
"""Anthropic's documented cost of the largest image (resized to at most 1.15 megapixels)."""

_PIXELS_PER_TOKEN = 750
_MAX_EDGE = 1568
_HEADER_B64_CHARS = 65_536  # base64 decoded to find a JPEG's frame header (EXIF comes first)


def image_dimensions(data: str) -> tuple[int, int] | None:
    """(width, height) from the header of a base64 PNG, JPEG, GIF or WebP image, or None."""
    raw = _b64_head(data, 64)
    if raw is None or raw[:2] != b"\xff\xd8":
        return None if raw is None else _header_size(raw)
    for chars in (_HEADER_B64_CHARS, len(data)):  # a JPEG: its frame header follows metadata
        raw = _b64_head(data, chars)
        size = None if raw is None else _jpeg_size(raw)
        if size is not None or chars >= len(data):
            return size
    return None


def _b64_head(data: str, chars: int) -> bytes | None:
    head = data[:chars]
    if len(head) < len(data):
        head = head[: len(head) - len(head) % 4]
    try:
        # base64.b64decode(head) exactly (ASCII only, non-alphabet characters skipped), without
        # importing base64 for one call.
        return binascii.a2b_base64(head.encode("ascii"))
    except (binascii.Error, ValueError):
        return None


def _header_size(raw: bytes) -> tuple[int, int] | None:
    if raw[:8] == b"\x89PNG\r\n\x1a\n" and len(raw) >= 24:
        return int.from_bytes(raw[16:20], "big"), int.from_bytes(raw[20:24], "big")
    if raw[:6] in (b"GIF87a", b"GIF89a") and len(raw) >= 10:
        return int.from_bytes(raw[6:8], "little"), int.from_bytes(raw[8:10], "little")
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP" and len(raw) >= 30:
        chunk = raw[12:16]
        if chunk == b"VP8 ":
            width = int.from_bytes(raw[26:28], "little") & 0x3FFF
            return width, int.from_bytes(raw[28:30], "little") & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(raw[21:25], "little")
            return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
        if chunk == b"VP8X":
            width = int.from_bytes(raw[24:27], "little") + 1
            return width, int.from_bytes(raw[27:30], "little") + 1
        return None
    return None


_JPEG_FRAME_MARKERS = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg_size(raw: bytes) -> tuple[int, int] | None:
    position = 2
    while position + 9 <= len(raw):
        if raw[position] != 0xFF:
            return None
        marker = raw[position + 1]
        if marker == 0xFF:  # fill byte
            position += 1
            continue
        if marker in _JPEG_FRAME_MARKERS:
            height = int.from_bytes(raw[position + 5 : position + 7], "big")
            return int.from_bytes(raw[position + 7 : position + 9], "big"), height
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # markers without a length
            position += 2
            continue
        position += 2 + int.from_bytes(raw[position + 2 : position + 4], "big")
    return None


def image_tokens(block: Mapping[str, Any], *, max_tokens: int = MAX_IMAGE_TOKENS) -> int:
    """Documented cost of an ``image`` block (or an OpenAI ``image_url`` block with a data URL).

    ``width * height / 750``, after scaling the long edge down to 1568 px, and at most
    ``max_tokens``: the provider scales images down to about 1.15 megapixels, which the docs put
    at about 1,600 tokens. ``max_tokens`` when the size cannot be read from the data (a URL or
    file source, an unknown format).
    """
    data: Any = None
    source = block.get("source")
    if isinstance(source, Mapping) and source.get("type") == "base64":
        data = source.get("data")
    image_url = block.get("image_url")
    url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        data = url.partition(",")[2]
    size = image_dimensions(data) if isinstance(data, str) else None
    if size is None or size[0] <= 0 or size[1] <= 0:
        return max_tokens
    width, height = float(size[0]), float(size[1])
    scale = min(1.0, _MAX_EDGE / max(width, height))
    return min(max_tokens, math.ceil(width * height * scale * scale / _PIXELS_PER_TOKEN))
