"""What each part of a request weighs, pinned per block kind on hand-counted inputs.

Through a :class:`~windowkeeper.CalibratedEstimator` at one token per byte with no margin, so an
estimate before any report is exactly the counted bytes (12 per message and per block, plus the
text), the thinking bytes (counted in full until learnt otherwise, none with
``thinking="ignore"``) and the image tokens (area / 750).
"""

from __future__ import annotations

import base64
import re
import struct
from typing import Any

import pytest

from windowkeeper import CalibratedEstimator, ConfigurationError, MalformedMessageError


def count(messages: list[Any], *, thinking: str = "count", **request: Any) -> int:
    counter = CalibratedEstimator(chars_per_token=1.0, safety_margin=0.0, thinking=thinking)  # type: ignore[arg-type]
    return counter.count(messages, **request)


def user(*blocks: Any, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks), **extra}


IMAGE = {
    "type": "image",
    "source": {
        "type": "base64",
        "media_type": "image/gif",
        "data": base64.b64encode(b"GIF89a" + struct.pack("<HH", 750, 2) + bytes(6)).decode(),
    },
}  # 750 x 2 px: 2 tokens
NOTE = [{"type": "reasoning", "id": "rs_1", "summary": []}]  # 41 bytes of JSON
NOTE_BYTES = len('[{"type":"reasoning","id":"rs_1","summary":[]}]')


@pytest.mark.parametrize(
    ("message", "text", "thinking", "images"),
    [
        ({"role": "user", "content": "hi"}, 12 + 2, 0, 0),
        ({"role": "user", "content": "é"}, 12 + 2, 0, 0),  # UTF-8 bytes
        ({"role": "user", "content": ""}, 12, 0, 0),
        (user(), 12, 0, 0),
        (user({"type": "text", "text": "abc"}), 12 + 12 + 3, 0, 0),
        (user({"type": "text"}), 12 + 12, 0, 0),  # no text: nothing but the framing
        (user({"type": "thinking", "thinking": "abcd", "signature": "s" * 99}), 24, 4, 0),
        (user({"type": "redacted_thinking", "data": "abcde"}), 24, 5, 0),
        (user(IMAGE), 24, 0, 2),
        (
            user({"type": "tool_use", "id": "t_1", "name": "read", "input": {"path": "a.py"}}),
            24 + 3 + 4 + len('{"path":"a.py"}'),
            0,
            0,
        ),
        (user({"type": "tool_use", "id": "t_1", "name": "ls"}), 24 + 3 + 2 + 2, 0, 0),  # {}
        (user({"type": "tool_result", "tool_use_id": "t_1", "content": "ok"}), 24 + 3 + 2, 0, 0),
        (user({"type": "tool_result", "tool_use_id": "t_1"}), 24 + 3, 0, 0),
        (
            user(
                {
                    "type": "tool_result",
                    "tool_use_id": "t_1",
                    "content": [
                        {"type": "text", "text": "ab"},
                        IMAGE,
                        {"type": "thinking", "thinking": "xyz", "signature": "s"},
                    ],
                }
            ),
            24 + 3 + (12 + 2) + 12 + 12,
            3,
            2,
        ),
        (
            user({"type": "tool_result", "tool_use_id": "t_1", "content": []}),
            24 + 3,
            0,
            0,
        ),
        # any other block as its JSON (not ASCII-escaped)
        (user({"type": "doc", "x": "é"}), 24 + len('{"type":"doc","x":"é"}'.encode()), 0, 0),
        # the Responses items a message or a block carries
        ({"role": "user", "content": "hi", "responses_before": NOTE}, 14 + NOTE_BYTES, 0, 0),
        ({"role": "user", "content": "hi", "responses_after": NOTE}, 14 + NOTE_BYTES, 0, 0),
        (
            {"role": "user", "content": "hi", "responses_before": NOTE, "responses_after": NOTE},
            14 + 2 * NOTE_BYTES,
            0,
            0,
        ),
        ({"role": "user", "content": "hi", "responses_after": []}, 14, 0, 0),
        (user({"type": "text", "text": "abc", "responses_before": NOTE}), 27 + NOTE_BYTES, 0, 0),
        (user({"type": "text", "text": "abc", "responses_before": []}), 27, 0, 0),
        ({"role": "user", "content": "hi", "ts": 1, "metrics": {"a": 1}}, 14, 0, 0),
    ],
)
def test_what_a_message_weighs(
    message: dict[str, Any], text: int, thinking: int, images: int
) -> None:
    assert count([message]) == text + thinking + images
    assert count([message], thinking="ignore") == text + images


@pytest.mark.parametrize(
    ("system", "units"),
    [
        (None, 0),
        ("", 0),
        ("abc", 3),  # a string prompt is its bytes, no framing
        ("é", 2),
        ([], 0),
        ([{"type": "text", "text": "abc"}], 12 + 3),
        ([{"type": "text", "text": "abc"}, {"type": "text", "text": "de"}], 15 + 14),
        ([{"type": "text", "text": "abc"}, IMAGE], 15 + 12 + 2),
        ([{"type": "thinking", "thinking": "abcd", "signature": "s"}], 12),  # not sent as such
        (({"type": "text", "text": "abc"},), 15),
    ],
)
def test_what_a_system_prompt_weighs(system: Any, units: int) -> None:
    assert count([], system=system) == units
    assert count([{"role": "user", "content": "hi"}], system=system) == 14 + units


@pytest.mark.parametrize(
    ("tools", "units"),
    [
        (None, 0),
        ([], 0),
        ([{"name": "t"}], 12 + len('{"name":"t"}')),
        ([{"name": "t"}, {"name": "é"}], 24 + 12 + len('{"name":"é"}'.encode())),
        (({"name": "t"},), 24),
    ],
)
def test_what_tools_weigh(tools: Any, units: int) -> None:
    assert count([], tools=tools) == units


@pytest.mark.parametrize(
    ("request_", "error", "match"),
    [
        ({"system": 5}, ConfigurationError, r"^system: expected None, a string or a list"),
        ({"system": b"ab"}, ConfigurationError, r"^system: expected None, a string or a list"),
        ({"system": ["x"]}, ConfigurationError, r"^system\[0\]: expected a text block dict"),
        ({"system": [{"type": 3}]}, ConfigurationError, r"^system\[0\]: expected a text block"),
        ({"tools": 5}, ConfigurationError, r"^tools: expected a list of tool definitions"),
        ({"tools": "ab"}, ConfigurationError, r"^tools: expected a list of tool definitions"),
        ({"tools": b"ab"}, ConfigurationError, r"^tools: expected a list of tool definitions"),
        ({"tools": [{}, "x"]}, ConfigurationError, r"^tools\[1\]: expected a tool definition"),
    ],
)
def test_a_bad_system_prompt_or_tool_list_is_refused_by_name(
    request_: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        count([], **request_)


@pytest.mark.parametrize(
    ("block", "path"),
    [
        ({"type": "text", "text": 5}, "messages[0].content[0].text"),
        (
            {"type": "thinking", "thinking": ["x"], "signature": "s"},
            "messages[0].content[0].thinking",
        ),
        ({"type": "tool_use", "id": 1, "name": "x"}, "messages[0].content[0].id"),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": 5},
            "messages[0].content[0].content",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": ["x"]},
            "messages[0].content[0].content[0]",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text"}, {"type": 3}]},
            "messages[0].content[0].content[1]",
        ),
        (
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": 1}]},
            "messages[0].content[0].content[0].text",
        ),
    ],
)
def test_a_malformed_block_is_refused_with_its_path(block: dict[str, Any], path: str) -> None:
    with pytest.raises(MalformedMessageError, match="^" + re.escape(path) + ":"):
        count([user(block)])


def test_a_changed_system_prompt_or_tool_list_is_measured_again() -> None:
    """The counter remeasures what changed, whatever object holds it."""
    counter = CalibratedEstimator(chars_per_token=1.0, safety_margin=0.0)
    blocks = [{"type": "text", "text": "abc"}]
    tools = [{"name": "t"}]
    assert counter.count([], system=blocks, tools=tools) == 15 + 24
    assert (
        counter.count([], system=[*blocks, {"type": "text", "text": "de"}], tools=tools) == 29 + 24
    )
    assert counter.count([], system=blocks[:0], tools=[*tools, {"name": "u"}]) == 48
    assert counter.count([], system="abcd", tools=None) == 4
    assert counter.count([], system="abce") == 4
    assert counter.count([], system="ab") == 2
    assert counter.count([], system=None, tools=tools) == 24
