"""The token estimator: what it counts, how it anchors and calibrates, and what it refuses."""

from __future__ import annotations

import base64
import copy
import re
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import (
    CalibratedEstimator,
    ConfigurationError,
    MalformedMessageError,
    TokenCounter,
)
from windowkeeper.session._tokens import (
    MAX_IMAGE_TOKENS,
    _is_prefix,
    image_dimensions,
    image_tokens,
)

from ..builders import assistant, image_block, user

PROSE = (
    "The context manager decides, before every request, which messages of the history are sent. "
    "It keeps the first task message and the first answer, hides one range of older turns, and "
    "replaces older copies of a file that was read again by a short notice, so that the request "
    "stays inside the model's window while the conversation remains valid for the provider. "
) * 8
CODE = (
    '''
def get_next_truncation_range(history, deleted_range, keep):
    """The range to hide next, extending the previous one."""
    start = 2
    if keep == "none":
        remove = max(len(history) - start, 0)
    elif keep == "lastTwo":
        remove = max(len(history) - start - 2, 0)
    else:
        remove = (len(history) - start) // (4 if keep == "quarter" else 2)
    end = start + remove - 1
    if end > 0 and history[end]["role"] != "assistant":
        end -= 1
    return (start, end)
'''
    * 6
)


def filler(size: int, seed: int = 0) -> str:
    """``size`` characters of plain English-like text, different per seed."""
    words = f"alpha{seed} beta gamma delta epsilon zeta eta theta iota kappa lambda mu "
    return (words * (size // len(words) + 1))[:size]


def conversation(turns: int, size: int = 4000) -> list[dict[str, Any]]:
    messages = [user(filler(size, 0))]
    for turn in range(1, turns):
        messages.append(assistant([{"type": "text", "text": filler(size // 4, turn)}]))
        messages.append(user([{"type": "text", "text": filler(size, turn)}]))
    return messages


def replay_with_ratio(
    estimator: CalibratedEstimator,
    messages: list[dict[str, Any]],
    *,
    bytes_per_token: float,
    hidden: int = 5000,
    step: int = 2,
) -> None:
    """Observe growing prefixes whose reported size is ``hidden`` + their bytes / ratio."""
    for end in range(1, len(messages) + 1, step):
        sent = messages[:end]
        truth = hidden + round(sum(len(str(m["content"])) for m in sent) / bytes_per_token)
        estimator.observe(sent, reported_input_tokens=truth)


# ------------------------------------------------------------------------------ image fixtures


def png(width: int, height: int) -> str:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    ihdr = struct.pack(">I", len(header)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return base64.b64encode(b"\x89PNG\r\n\x1a\n" + ihdr + b"\x00" * 64).decode()


def gif(width: int, height: int) -> str:
    return base64.b64encode(b"GIF89a" + struct.pack("<HH", width, height) + b"\x00" * 32).decode()


def jpeg(width: int, height: int, *, exif_bytes: int = 16) -> str:
    app1 = b"\xff\xe1" + struct.pack(">H", exif_bytes + 2) + b"\x00" * exif_bytes
    sof0 = b"\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + b"\x00" * 9
    return base64.b64encode(b"\xff\xd8" + app1 + sof0 + b"\xff\xd9").decode()


def webp_vp8x(width: int, height: int) -> str:
    payload = b"VP8X" + struct.pack("<I", 10) + b"\x00" * 4
    payload += (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return base64.b64encode(
        b"RIFF" + struct.pack("<I", 4 + len(payload)) + b"WEBP" + payload
    ).decode()


def webp_vp8l(width: int, height: int) -> str:
    bits = (width - 1) | ((height - 1) << 14)
    payload = b"VP8L" + struct.pack("<I", 5) + b"\x2f" + struct.pack("<I", bits) + b"\x00" * 8
    return base64.b64encode(
        b"RIFF" + struct.pack("<I", 4 + len(payload)) + b"WEBP" + payload
    ).decode()


def webp_vp8(width: int, height: int) -> str:
    frame = b"\x00" * 3 + b"\x9d\x01\x2a" + struct.pack("<HH", width, height) + b"\x00" * 8
    payload = b"VP8 " + struct.pack("<I", len(frame)) + frame
    return base64.b64encode(
        b"RIFF" + struct.pack("<I", 4 + len(payload)) + b"WEBP" + payload
    ).decode()


# ------------------------------------------------------------------------------------- tests


class TestConservativeStart:
    """Before any observation the estimate errs on the high side."""

    @pytest.mark.parametrize("text", [PROSE, CODE], ids=["prose", "code"])
    def test_plain_text_is_overestimated(self, text: str) -> None:
        """English prose and code get at least one token per 4 characters (and per 3.3)."""
        estimate = CalibratedEstimator().count([user(text)])
        assert estimate >= len(text) / 4
        assert estimate >= len(text) / 3.3

    def test_non_ascii_counts_by_utf8_bytes(self) -> None:
        """CJK text is not undercounted: each character weighs its three UTF-8 bytes."""
        text = "文脈ウィンドウに会話を収める。" * 50
        assert CalibratedEstimator().count([user(text)]) >= len(text)

    def test_empty_request_costs_nothing(self) -> None:
        """No messages, no system prompt, no tools: zero."""
        assert CalibratedEstimator().count([]) == 0

    def test_a_lower_ratio_is_more_conservative(self) -> None:
        """The starting chars_per_token sets the estimate before observations."""
        messages = [user(PROSE)]
        assert CalibratedEstimator(chars_per_token=2.0).count(messages) > CalibratedEstimator(
            chars_per_token=4.0
        ).count(messages)


class TestWhatIsCounted:
    """Every part of a request that the provider reads adds to the estimate."""

    def test_system_prompt_string_and_blocks(self) -> None:
        """A system prompt, as a string or as text blocks, is counted."""
        base = CalibratedEstimator().count([user("hi")])
        as_string = CalibratedEstimator().count([user("hi")], system=PROSE)
        as_blocks = CalibratedEstimator().count(
            [user("hi")], system=[{"type": "text", "text": PROSE}]
        )
        assert as_string > base + len(PROSE) / 4
        assert as_blocks >= as_string

    def test_tools_are_counted_as_json(self) -> None:
        """Tool definitions add their JSON size."""
        tool = {
            "name": "read_file",
            "description": PROSE,
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        base = CalibratedEstimator().count([user("hi")])
        assert CalibratedEstimator().count([user("hi")], tools=[tool]) > base + len(PROSE) / 4

    def test_tool_use_input_and_tool_result_content(self) -> None:
        """A tool_use's JSON input and a tool_result's content (string or blocks) count."""
        call = assistant(
            [{"type": "tool_use", "id": "toolu_1", "name": "write", "input": {"text": PROSE}}]
        )
        as_string = user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": PROSE}])
        as_blocks = user(
            [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": PROSE}],
                }
            ]
        )
        estimator = CalibratedEstimator()
        empty = estimator.count([user("go"), assistant("ok")])
        assert estimator.count([user("go"), call]) > empty + len(PROSE) / 4
        assert estimator.count([user("go"), assistant("ok"), as_string]) > empty + len(PROSE) / 4
        assert estimator.count([user("go"), assistant("ok"), as_blocks]) > empty + len(PROSE) / 4

    def test_thinking_is_counted_until_learned_otherwise(self) -> None:
        """By default thinking text counts in full; "ignore" leaves it out; signatures never count."""
        thinking = assistant([{"type": "thinking", "thinking": PROSE, "signature": "x" * 5000}])
        bare = assistant([{"type": "thinking", "thinking": "", "signature": "x" * 5000}])
        learn = CalibratedEstimator().count([user("go"), thinking])
        ignore = CalibratedEstimator(thinking="ignore").count([user("go"), thinking])
        assert learn > ignore + len(PROSE) / 4
        assert ignore == CalibratedEstimator().count([user("go"), bare])
        assert ignore < 5000 / 4

    def test_unknown_blocks_count_as_json(self) -> None:
        """A block of a type we do not know is counted as its JSON."""
        block = {"type": "document", "source": {"type": "text", "data": PROSE}}
        base = CalibratedEstimator().count([user("hi")])
        assert CalibratedEstimator().count([user([block])]) > base + len(PROSE) / 4

    def test_message_metadata_is_not_counted(self) -> None:
        """Keys the API never sees (ts, metrics, modelInfo) do not add tokens."""
        plain = assistant("answer")
        annotated = {**plain, "ts": 1, "metrics": {"tokens": {"prompt": 10}}, "modelInfo": PROSE}
        estimator = CalibratedEstimator()
        assert estimator.count([user("q"), annotated]) == estimator.count([user("q"), plain])


class TestImages:
    """Images cost width * height / 750 tokens, read from their header, capped at 1,600."""

    @pytest.mark.parametrize(
        ("encode", "media_type"),
        [
            (png, "image/png"),
            (gif, "image/gif"),
            (jpeg, "image/jpeg"),
            (webp_vp8x, "image/webp"),
            (webp_vp8l, "image/webp"),
            (webp_vp8, "image/webp"),
        ],
        ids=["png", "gif", "jpeg", "webp-vp8x", "webp-vp8l", "webp-vp8"],
    )
    def test_size_from_header(self, encode: Any, media_type: str) -> None:
        """A 600 x 400 image reads as such and costs 320 tokens."""
        data = encode(600, 400)
        assert image_dimensions(data) == (600, 400)
        assert image_tokens(image_block(data, media_type)) == 320

    def test_jpeg_frame_after_large_metadata(self) -> None:
        """A JPEG whose EXIF segment runs past the first chunk decoded is still read."""
        assert image_dimensions(jpeg(800, 600, exif_bytes=60_000)) == (800, 600)

    def test_large_images_are_capped(self) -> None:
        """An image the provider scales down costs at most 1,600 tokens."""
        assert image_tokens(image_block(png(4000, 3000))) == MAX_IMAGE_TOKENS
        assert image_tokens(image_block(png(1092, 1092))) == 1590

    def test_long_edge_is_scaled_to_1568(self) -> None:
        """A 3136 x 200 strip is scaled to 1568 x 100 first: 210 tokens."""
        assert image_tokens(image_block(png(3136, 200))) == 210

    @pytest.mark.parametrize(
        "block",
        [
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            image_block(base64.b64encode(b"not an image at all, just bytes").decode()),
            image_block("%%% not base64 %%%"),
            {"type": "image"},
        ],
        ids=["url", "unknown-format", "bad-base64", "no-source"],
    )
    def test_unknown_size_costs_the_maximum(self, block: dict[str, Any]) -> None:
        """When the size cannot be read, the image costs the conservative 1,600 tokens."""
        assert image_tokens(block) == MAX_IMAGE_TOKENS

    def test_openai_data_url(self) -> None:
        """An OpenAI image_url block with a data URL is read too."""
        block = {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + png(750, 100)},
        }
        assert image_tokens(block) == 100

    def test_image_cost_is_added_to_the_estimate(self) -> None:
        """An image adds its cost, at top level or inside a tool_result, unscaled by the ratio."""
        estimator = CalibratedEstimator()
        with_text = estimator.count([user([{"type": "text", "text": "see"}])])
        with_image = estimator.count(
            [user([{"type": "text", "text": "see"}, image_block(png(750, 1000))])]
        )
        assert 1000 <= with_image - with_text <= 1010
        nested = user(
            [{"type": "tool_result", "tool_use_id": "t", "content": [image_block(png(750, 1000))]}]
        )
        assert estimator.count([nested]) >= 1000

    def test_image_data_is_not_counted_as_text(self) -> None:
        """Megabytes of base64 do not turn into a million text tokens."""
        data = png(1000, 1000) + "A" * 2_000_000
        estimate = CalibratedEstimator().count([user([image_block(data)])])
        assert estimate < 2 * MAX_IMAGE_TOKENS


class TestAnchoring:
    """When the last observed request starts the new one, its reported size is the base."""

    def test_same_request_is_its_reported_size(self) -> None:
        """Counting exactly the observed request gives back what the provider reported."""
        messages = conversation(5)
        estimator = CalibratedEstimator()
        estimator.observe(messages, reported_input_tokens=42_000)
        assert estimator.count(messages) == 42_000

    def test_added_messages_are_estimated_on_top(self) -> None:
        """New messages add their padded estimate to the reported size, system prompt unseen."""
        messages = conversation(5)
        estimator = CalibratedEstimator()
        estimator.observe(messages[:3], reported_input_tokens=42_000)
        added = CalibratedEstimator().count(messages[3:])
        assert estimator.count(messages) == 42_000 + added

    def test_equal_copies_anchor_too(self) -> None:
        """A history reloaded from disk (equal, not the same objects) still anchors."""
        messages = conversation(5)
        estimator = CalibratedEstimator()
        estimator.observe(messages, reported_input_tokens=42_000)
        reloaded = [*copy.deepcopy(messages), assistant("more")]
        assert 42_000 < estimator.count(reloaded) < 42_100

    def test_system_and_tools_change_is_added(self) -> None:
        """A system prompt added since the anchor adds its own estimate."""
        messages = conversation(3)
        estimator = CalibratedEstimator()
        estimator.observe(messages, reported_input_tokens=10_000)
        grown = estimator.count(messages, system=PROSE)
        assert grown >= 10_000 + len(PROSE) / 4
        estimator.observe(messages, system=PROSE, reported_input_tokens=11_000)
        assert estimator.count(messages) < 11_000  # the prompt was removed again

    def test_calibrates_from_the_deltas(self) -> None:
        """Observations at 4 bytes per token move the ratio there; estimates follow, padded."""
        messages = conversation(41)
        estimator = CalibratedEstimator()
        replay_with_ratio(estimator, messages[:79], bytes_per_token=4.0)
        assert 3.7 < estimator.chars_per_token < 4.3
        truth = 5000 + round(sum(len(str(m["content"])) for m in messages) / 4.0)
        assert truth <= estimator.count(messages) <= truth * 1.02

    def test_learns_that_thinking_is_not_counted(self) -> None:
        """A provider that strips earlier thinking drives the thinking weight to 0."""
        estimator = CalibratedEstimator()
        sent: list[dict[str, Any]] = [user(filler(3000))]
        reported = 4000
        estimator.observe(sent, reported_input_tokens=reported)
        for turn in range(1, 8):
            answer = assistant(
                [
                    {"type": "thinking", "thinking": filler(3000, turn), "signature": "s"},
                    {"type": "text", "text": filler(300, turn)},
                ]
            )
            sent = [*sent, answer, user(filler(1200, turn))]
            reported += round((300 + 1200) / 3.5)
            estimator.observe(sent, reported_input_tokens=reported)
        assert estimator.thinking_weight < 0.2

    def test_keeps_thinking_when_it_is_counted(self) -> None:
        """A provider that counts thinking keeps the weight near 1."""
        estimator = CalibratedEstimator()
        sent: list[dict[str, Any]] = [user(filler(3000))]
        reported = 4000
        estimator.observe(sent, reported_input_tokens=reported)
        for turn in range(1, 8):
            answer = assistant([{"type": "thinking", "thinking": filler(3000, turn)}])
            sent = [*sent, answer, user(filler(1200, turn))]
            reported += round((3000 + 1200) / 3.5)
            estimator.observe(sent, reported_input_tokens=reported)
        assert estimator.thinking_weight > 0.8

    def test_anchored_count_measures_only_new_messages(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After observing 443 messages, counting one more measures one message."""
        from windowkeeper.session import _tokens as tokens

        messages = conversation(222)[:443]
        estimator = CalibratedEstimator()
        estimator.observe(messages[:-1], reported_input_tokens=100_000)
        measured: list[int] = []
        original = tokens._message_units

        def spy(message: Any, path: str, max_image_tokens: int) -> Any:
            measured.append(1)
            return original(message, path, max_image_tokens)

        monkeypatch.setattr(tokens, "_message_units", spy)
        estimator.count(list(messages))
        estimator.count(list(messages))
        assert len(measured) == 1


class TestFallback:
    """When the new request does not extend the last observed one, the ratio estimates it all."""

    def test_truncated_history_falls_back_to_the_ratio(self) -> None:
        """A Cline-style truncation (first two kept, a range hidden) is estimated from scratch,
        with the hidden part of the last observation (an unseen system prompt) carried over."""
        messages = conversation(31)
        estimator = CalibratedEstimator()
        replay_with_ratio(estimator, messages, bytes_per_token=3.5, hidden=6000)
        truncated = messages[:2] + messages[31:]
        truth = 6000 + round(sum(len(str(m["content"])) for m in truncated) / 3.5)
        estimate = estimator.count(truncated)
        assert truth <= estimate <= truth * 1.15

    def test_non_prefix_observation_does_not_calibrate(self) -> None:
        """Observing a request that is not an extension re-anchors without moving the ratio."""
        messages = conversation(11)
        estimator = CalibratedEstimator()
        estimator.observe(messages, reported_input_tokens=30_000)
        ratio = estimator.chars_per_token
        estimator.observe(messages[:2] + messages[7:], reported_input_tokens=1)
        assert estimator.chars_per_token == ratio
        assert estimator.count(messages[:2] + messages[7:]) == 1

    def test_before_any_observation_system_and_tools_are_all_there_is(self) -> None:
        """Without observations nothing is carried over: the estimate is the ratio's."""
        messages = conversation(3)
        estimator = CalibratedEstimator()
        assert estimator.count(messages) == CalibratedEstimator().count(copy.deepcopy(messages))


class TestInputsAreNotMutated:
    """count() and observe() only read what they are given."""

    def test_nothing_given_changes(self) -> None:
        """Messages of every block type, the system prompt and the tools come back unchanged."""
        messages = [
            user([{"type": "text", "text": PROSE}, image_block(png(100, 100))]),
            assistant(
                [
                    {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                    {"type": "redacted_thinking", "data": "abc"},
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a.py"}},
                ]
            ),
            user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": CODE}],
                    },
                    {"type": "mystery", "payload": [1, 2, 3]},
                ]
            ),
        ]
        system = [{"type": "text", "text": "be brief", "cache_control": {"type": "ephemeral"}}]
        tools = [{"name": "read", "input_schema": {"type": "object"}}]
        before = copy.deepcopy((messages, system, tools))
        estimator = CalibratedEstimator()
        estimator.count(messages, system=system, tools=tools)
        estimator.observe(messages[:1], system=system, tools=tools, reported_input_tokens=900)
        estimator.observe(messages, system=system, tools=tools, reported_input_tokens=2000)
        estimator.count(messages[:2], system=system, tools=tools)
        assert (messages, system, tools) == before

    def test_the_list_may_change_after_observing(self) -> None:
        """The caller's list is not kept: appending to it later does not move the anchor."""
        messages = conversation(3)
        estimator = CalibratedEstimator()
        estimator.observe(messages, reported_input_tokens=5000)
        messages.append(assistant("later"))
        assert estimator.count(messages[:-1]) == 5000


class TestBadInput:
    """Wrong messages raise MalformedMessageError, wrong arguments ConfigurationError; both say where."""

    @pytest.mark.parametrize(
        ("messages", "path"),
        [
            ("not a list", "messages"),
            ([user("ok"), "not a message"], "messages[1]"),
            ([{"role": "system", "content": "x"}], "messages[0].role"),
            ([user(42)], "messages[0].content"),
            ([user([{"type": "text", "text": 42}])], "messages[0].content[0].text"),
            ([user(["bare string block"])], "messages[0].content[0]"),
            (
                [user([{"type": "tool_result", "tool_use_id": "t", "content": 3}])],
                "messages[0].content[0].content",
            ),
        ],
    )
    def test_malformed_messages(self, messages: Any, path: str) -> None:
        """The error names the offending value's path."""
        with pytest.raises(MalformedMessageError) as caught:
            CalibratedEstimator().count(messages)
        assert caught.value.path == path

    @pytest.mark.parametrize(
        ("keywords", "fragment"),
        [
            ({"system": 42}, "system"),
            ({"system": [42]}, "system[0]"),
            ({"tools": "read_file"}, "tools"),
            ({"tools": ["read_file"]}, "tools[0]"),
        ],
    )
    def test_bad_system_or_tools(self, keywords: dict[str, Any], fragment: str) -> None:
        """A system prompt or tool list of the wrong type raises ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match=re.escape(fragment)) as caught:
            CalibratedEstimator().count([user("hi")], **keywords)
        assert isinstance(caught.value, TypeError)  # what callers caught before

    @pytest.mark.parametrize("reported", ["1000", 1000.0, True, None])
    def test_reported_tokens_must_be_an_int(self, reported: Any) -> None:
        """reported_input_tokens must be an int."""
        with pytest.raises(ConfigurationError, match="reported_input_tokens"):
            CalibratedEstimator().observe([user("hi")], reported_input_tokens=reported)

    def test_reported_tokens_must_not_be_negative(self) -> None:
        """A negative size is a ConfigurationError (a ValueError)."""
        with pytest.raises(ConfigurationError, match="reported_input_tokens"):
            CalibratedEstimator().observe([user("hi")], reported_input_tokens=-1)

    @pytest.mark.parametrize(
        "keywords",
        [
            {"chars_per_token": 0},
            {"chars_per_token": float("nan")},
            {"chars_per_token": "3"},
            {"chars_per_token": None},
            {"safety_margin": -0.1},
            {"safety_margin": 0.9},
            {"safety_margin": "0.1"},
            {"thinking": "sometimes"},
            {"max_image_tokens": -1},
            {"max_image_tokens": 1600.0},
            {"max_image_tokens": True},
            {"max_image_tokens": "1600"},
        ],
    )
    def test_bad_settings(self, keywords: dict[str, Any]) -> None:
        """Settings of the wrong type or out of range are refused at construction, by name."""
        (name,) = keywords
        with pytest.raises(ConfigurationError, match=f"^{name} "):
            CalibratedEstimator(**keywords)

    def test_settings_errors_are_the_builtins_callers_expect(self) -> None:
        """A value out of range is a ValueError, a value of the wrong type a TypeError."""
        with pytest.raises(ValueError, match="chars_per_token"):
            CalibratedEstimator(chars_per_token=0)
        with pytest.raises(TypeError, match="chars_per_token"):
            CalibratedEstimator(chars_per_token=None)  # type: ignore[arg-type]

    def test_restore_takes_only_its_snapshots(self) -> None:
        """Anything but a snapshot() of an estimator is refused, naming the argument."""
        with pytest.raises(ConfigurationError, match=r"^snapshot: "):
            CalibratedEstimator().restore(object())

    def test_a_failed_observe_changes_nothing(self) -> None:
        """A malformed request leaves the anchor where it was."""
        estimator = CalibratedEstimator()
        messages = conversation(3)
        estimator.observe(messages, reported_input_tokens=7000)
        with pytest.raises(MalformedMessageError):
            estimator.observe([*messages, user(None)], reported_input_tokens=9000)
        assert estimator.count(messages) == 7000


def test_is_a_token_counter() -> None:
    """CalibratedEstimator satisfies the TokenCounter protocol."""
    counter: TokenCounter = CalibratedEstimator()
    counter.observe([user("hi")], reported_input_tokens=10)
    assert counter.count([user("hi")]) == 10


class TestStateValue:
    def test_round_trip_through_json_estimates_alike(self) -> None:
        """state_value -> JSON -> load_state: the same estimates, anchored ones included."""
        import json as _json

        learnt = CalibratedEstimator()
        history: list[dict[str, object]] = [{"role": "user", "content": "task " + "t" * 900}]
        for turn in range(5):
            learnt.observe(history, reported_input_tokens=300 + 400 * turn)
            history = [
                *history,
                {"role": "assistant", "content": "a" * 700},
                {"role": "user", "content": "u" * 600},
            ]
        restored = CalibratedEstimator()
        restored.load_state(_json.loads(_json.dumps(learnt.state_value())))
        copy_of_history = _json.loads(_json.dumps(history))  # equal, not the same objects
        assert restored.count(copy_of_history) == learnt.count(history)
        assert restored.chars_per_token == learnt.chars_per_token
        other = [{"role": "user", "content": "something else entirely"}]
        assert restored.count(other) == learnt.count(other)

    @pytest.mark.parametrize(
        "bad",
        [
            {"version": 2},
            {"version": 1, "ratio": [1, 2], "margin": 0.1, "errors": []},
            {"version": 1, "ratio": [0, 1, 1, 1, 1, 1], "margin": 0.1, "errors": []},
            {"version": 1, "ratio": [1, 1, 1, 1, 1, 1], "margin": 0.1, "errors": [[1]]},
        ],
    )
    def test_an_unreadable_value_raises_value_error(self, bad: dict[str, object]) -> None:
        with pytest.raises(ValueError, match="calibration"):
            CalibratedEstimator().load_state(bad)


_POOL = [{"n": 1}, {"n": 1}, {"n": 2}, {"n": 3}]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=6), st.lists(st.integers(0, 3), max_size=6))
def test_the_anchor_starts_a_request_by_equality(old: list[int], new: list[int]) -> None:
    """The anchor check compares by identity first, then by value (an equal copy counts)."""
    before = tuple(_POOL[i] for i in old)
    after = [_POOL[i] for i in new]
    expected = len(after) >= len(before) and all(
        a == b for a, b in zip(before, after, strict=False)
    )
    assert _is_prefix(before, after) is expected


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.text(max_size=40), min_size=2, max_size=8),
    st.integers(1, 7),
    st.integers(1, 5_000),
)
def test_the_least_tokens_of_an_anchored_request_sum_as_a_whole_count(
    texts: list[str], observed: int, reported: int
) -> None:
    """After a report, the floor of a request that extends it adds the new messages to the
    anchor's totals: the same floor as summing every message again."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": text or "."}
        for i, text in enumerate(texts)
    ]
    estimator = CalibratedEstimator()
    estimator.observe(messages[: min(observed, len(messages))], reported_input_tokens=reported)
    anchored = estimator.least_tokens(messages)
    whole = CalibratedEstimator()
    whole.restore(estimator.snapshot())  # the same calibration, no anchor to add to
    whole._anchor = None
    assert anchored == whole.least_tokens(messages)


_EDITS = st.lists(
    st.one_of(
        st.tuples(st.just("replace"), st.integers(0, 30), st.text(max_size=30)),
        st.tuples(st.just("hide"), st.integers(0, 30), st.integers(0, 6)),
        st.tuples(st.just("append"), st.integers(0, 3), st.text(max_size=30)),
        st.tuples(st.just("fresh"), st.integers(0, 0), st.text(max_size=30)),
    ),
    max_size=25,
)


def _message(position: int, text: str) -> dict[str, Any]:
    if position % 3 == 2:
        return assistant(
            [
                {"type": "text", "text": text or "."},
                {"type": "tool_use", "id": f"t{position}", "name": "read", "input": {"p": text}},
            ]
        )
    return user(text or "?")


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(max_size=30), min_size=2, max_size=12), _EDITS)
def test_a_request_edited_in_place_counts_as_counted_afresh(
    texts: list[str], edits: list[tuple[str, int, Any]]
) -> None:
    """Requests that replace, hide or append messages of the one counted before (as a shrink's
    steps do) count the same in one estimator as each counted by a fresh one, and the lists
    and messages counted are left as they were."""
    estimator = CalibratedEstimator()
    request = [_message(i, text) for i, text in enumerate(texts)]
    for kind, at, value in [("append", 0, ""), *edits]:
        request = list(request)
        if kind == "replace" and request:
            request[at % len(request)] = _message(at, value)
        elif kind == "hide" and len(request) > 2:
            start = 1 + at % (len(request) - 1)
            del request[start : start + value]
        elif kind == "append":
            request += [_message(len(request) + i, value) for i in range(at)]
        elif kind == "fresh":
            request = [_message(i, value) for i in range(len(request))]
        before = copy.deepcopy(request)
        assert estimator.count(request) == CalibratedEstimator().count(request)
        assert request == before
