"""The default counter's arithmetic pinned on hand-counted requests.

With ``chars_per_token=1`` and ``safety_margin=0`` a :class:`~windowkeeper.CalibratedEstimator`
estimates a request at exactly the bytes it counts (see ``windowkeeper.session._units``: 12 per
message, 12 per block, the text, a tool definition's JSON; images by their area / 750), so each
expected number below is a sum of byte counts written out beside it. The calibration's numbers
follow its documented fit: the starting ratio weighs like 2,000 bytes, each observation makes
the older ones weigh 0.9 times less, and one delta counts for no fewer than 1 / 1.25 of the
tokens the ratio predicts for it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import struct
from typing import Any

import pytest

from windowkeeper import CalibratedEstimator, ConfigurationError, MalformedMessageError


def exact(**keywords: Any) -> CalibratedEstimator:
    """A counter that estimates one token per byte, with no margin."""
    return CalibratedEstimator(chars_per_token=1.0, safety_margin=0.0, **keywords)


def gif(width: int, height: int) -> dict[str, Any]:
    data = base64.b64encode(b"GIF89a" + struct.pack("<HH", width, height) + bytes(6)).decode()
    return {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": data}}


# Hand-counted units (text bytes; thinking bytes; image tokens).
M1 = {"role": "user", "content": "é" * 50}  # 12 + 100 UTF-8 bytes = 112
M2 = {"role": "user", "content": [{"type": "text", "text": "b" * 20}, gif(750, 375)]}
M2_TEXT, M2_IMAGES = 12 + (12 + 20) + 12, 375  # 56 bytes; 750 x 375 px / 750
S1 = [{"type": "text", "text": "s" * 50}, gif(750, 750)]  # 62 + 12 = 74 bytes; 750 tokens
S2 = [{"type": "text", "text": "s" * 80}, gif(1_500, 750)]  # 92 + 12 = 104 bytes; 1,500 tokens
T1 = {"name": "t"}  # 12 + len('{"name":"t"}') = 24
T2 = {"name": "u2"}  # 12 + 13 = 25
THINK = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "t" * 1_000, "signature": "sig"},
        {"type": "text", "text": "ok"},
    ],
}  # 12 + 12 + (12 + 2) = 38 bytes of text, 1,000 of thinking


def test_the_counted_units_of_the_fixtures() -> None:
    """Before any report an exact counter says what each fixture weighs."""
    assert exact().count([M1]) == 112
    assert exact().count([M2]) == M2_TEXT + M2_IMAGES
    assert exact().count([], system=S1) == 74 + 750
    assert exact().count([], system=S2) == 104 + 1_500
    assert exact().count([], tools=[T1, T2]) == 24 + 25
    assert exact().count([THINK]) == 38 + 1_000  # thinking starts counted in full
    assert exact(thinking="ignore").count([THINK]) == 38


def test_a_request_is_the_sum_of_its_messages_system_tools_and_images() -> None:
    assert exact().count([M2], system=S2, tools=[T1]) == (M2_TEXT + 104 + 24) + (375 + 1_500)


def test_an_extended_request_adds_what_changed_since_the_report() -> None:
    """Added messages, and the system prompt's and tools' differences, text and images."""
    counter = exact()
    counter.observe([M1], system=S1, tools=[T1], reported_input_tokens=1_000)
    text = M2_TEXT + (104 - 74) + (24 + 25 - 24)
    images = M2_IMAGES + 1_500 - 750
    assert counter.count([M1, M2], system=S2, tools=[T1, T2]) == 1_000 + text + images
    assert counter.count([M1], system=S1, tools=[T1]) == 1_000
    assert counter.count([M1], system=S1, tools=[]) == 1_000 - 24


def test_an_anchored_estimate_is_never_negative() -> None:
    counter = exact()
    counter.observe([M1], system="s" * 300, reported_input_tokens=100)
    assert counter.count([M1]) == 0  # 100 - 300, floored at 0
    counter.observe([M1], reported_input_tokens=0)
    assert counter.count([M1]) == 0


def test_the_margin_pads_added_text_up_and_removed_text_down() -> None:
    """With a 10 % margin, 56 added bytes are 62 tokens (61.6 rounded up); 100 removed bytes
    take back 90 (the margin errs on the side of a larger estimate both ways)."""
    counter = CalibratedEstimator(chars_per_token=1.0, safety_margin=0.1)
    counter.observe([M1], reported_input_tokens=1_000)
    assert counter.count([M1, M2]) == 1_000 + 62 + M2_IMAGES
    counter.observe([M1], system="x" * 100, reported_input_tokens=1_000)
    assert counter.count([M1]) == 1_000 - 90


def test_a_fraction_of_a_token_padded_past_one_rounds_up_to_two() -> None:
    """0.9 tokens (one byte at 0.9 tokens per byte) with a 20 % margin is 1.08: two tokens."""
    counter = CalibratedEstimator(chars_per_token=1 / 0.9, safety_margin=0.2)
    counter.observe([M1], system="x", reported_input_tokens=100)
    assert counter.count([M1], system="xx") == 102


def test_a_report_of_another_request_teaches_nothing_and_becomes_the_anchor() -> None:
    counter = exact()
    counter.observe([M1], reported_input_tokens=1_000)
    counter.observe([M2], reported_input_tokens=5_000)
    assert counter.chars_per_token == 1.0
    assert counter.margin == 0.0
    assert counter.state_value()["anchor"][:7] == [M2_TEXT, 0, M2_IMAGES, 0, 0, 0, 5_000]
    assert counter.count([M2, M1]) == 5_000 + 112


def test_what_the_report_left_unexplained_is_added_to_other_requests() -> None:
    """A report of 1,000 for 112 + 74 + 24 bytes and 750 image tokens leaves 40 unexplained."""
    counter = exact()
    counter.observe([M1], system=S1, tools=[T1], reported_input_tokens=1_000)
    assert counter.count([M2]) == 40 + M2_TEXT + M2_IMAGES


def test_a_report_below_the_content_leaves_nothing_unexplained() -> None:
    counter = exact()
    counter.observe([M1], system=S1, tools=[T1], reported_input_tokens=900)
    assert counter.count([M2]) == M2_TEXT + M2_IMAGES


def test_the_floor_is_the_text_at_the_ratio() -> None:
    """least_tokens: the text only (no thinking, no images, no margin)."""
    counter = exact()
    counter.observe([M1], reported_input_tokens=1_000)
    assert counter.least_tokens([M2], system=S2, tools=[T1]) == M2_TEXT + 104 + 24
    assert counter.least_tokens([M1, M2], system=S2, tools=[T1]) == 112 + M2_TEXT + 104 + 24
    assert counter.least_tokens([THINK]) == 38


def test_a_delta_calibrates_from_its_text_and_its_tokens_less_its_images() -> None:
    """The second report adds 111 bytes (56 of a message, 30 of system text, 25 of a tool) and
    2,275 - 1,000 - 1,125 image tokens = 150 tokens: the ratio becomes
    (0.9 * 2,000 + 150) / (0.9 * 2,000 + 111) tokens per byte."""
    counter = exact()
    counter.observe([M1], system=S1, tools=[T1], reported_input_tokens=1_000)
    counter.observe([M1, M2], system=S2, tools=[T1, T2], reported_input_tokens=2_275)
    assert counter.chars_per_token == pytest.approx((1_800 + 111) / (1_800 + 150))
    assert counter.margin == 0.3  # 150 / 111 - 1 = 35 % under: the margin's ceiling


def _learnt(first: int, second: int, added: str, **keywords: Any) -> CalibratedEstimator:
    counter = CalibratedEstimator(**keywords)
    counter.observe([M1], reported_input_tokens=first)
    counter.observe([M1], system=added, reported_input_tokens=second)
    return counter


@pytest.mark.parametrize(
    ("added", "tokens", "chars_per_token", "margin"),
    [
        (40, 0, 3.0, 0.1),  # the same report: nothing learnt
        (40, -5, 3.0, 0.1),  # a lower report: nothing learnt
        (1, 1, 1_801 / 601, 0.3),  # one byte, one token: learnt (2.0 under)
        (100, 200, 1_900 / 800, 0.3),  # 0.5 bytes per token: the densest learnt
        (100, 201, 3.0, 0.1),  # denser: not text
        (40, 2, 1_840 / (600 + 40 / 3 / 1.25), 0.1),  # 20 bytes per token: learnt, bounded
        (41, 2, 3.0, 0.1),  # 20.5: not believed
        (300, 120, 2_100 / 720, 0.2),  # 20 % more than predicted: the margin follows
    ],
)
def test_what_one_delta_teaches(
    added: int, tokens: int, chars_per_token: float, margin: float
) -> None:
    """At the default 3 characters per token (600 tokens for the prior's 0.9 * 2,000 bytes), a
    delta of ``added`` bytes reported as ``tokens`` more."""
    counter = _learnt(1_000, 1_000 + tokens, "y" * added)
    assert counter.chars_per_token == pytest.approx(chars_per_token)
    assert counter.margin == pytest.approx(margin)


def test_the_margin_is_the_size_weighted_90th_percentile_of_the_errors() -> None:
    """900 bytes reported exactly, then 100 bytes reported 10 % over: the first holds 90 % of
    the weight, so the 90th percentile is its error, 0."""
    counter = exact()
    counter.observe([M1], reported_input_tokens=1_000)
    counter.observe([M1], system="z" * 900, reported_input_tokens=1_900)
    counter.observe([M1], system="z" * 1_000, reported_input_tokens=2_010)
    assert counter.margin == 0.0
    assert counter.chars_per_token == pytest.approx(2_530 / 2_540)


def test_the_margin_remembers_the_last_20_errors() -> None:
    counter = exact()
    counter.observe([M1], reported_input_tokens=1_000)
    for step in range(1, 23):
        counter.observe([M1], system="z" * (10 * step), reported_input_tokens=1_000 + 10 * step)
    value = counter.state_value()
    assert value["errors"] == [[0.0, 10.0]] * 20
    restored = exact()
    restored.load_state(value)
    with pytest.raises(ValueError, match="at most 20"):
        restored.load_state({**value, "errors": [[0.0, 10.0]] * 21})


def test_thinking_left_out_of_a_report_is_learnt() -> None:
    """A delta of 38 bytes of text and 1,000 of thinking reported as 38 tokens: the thinking's
    least-squares weight is 300**2 / (300**2 + 1,000**2) (the prior counts it in full, like one
    observation of 300 thinking tokens); the ratio learns from 38 + w * 1,000 bytes, counted for
    no less than 1 / 1.25 of their predicted tokens."""
    counter = exact()
    counter.observe([M1], reported_input_tokens=1_000)
    counter.observe([M1, THINK], reported_input_tokens=1_038)
    weight = 90_000 / 1_090_000
    size = 38 + weight * 1_000
    assert counter.thinking_weight == pytest.approx(weight)
    assert counter.chars_per_token == pytest.approx((1_800 + size) / (1_800 + size / 1.25))


@pytest.mark.parametrize(("policy", "weight"), [("count", 1.0), ("ignore", 0.0)])
def test_a_fixed_thinking_policy_is_not_learnt(policy: str, weight: float) -> None:
    counter = exact(thinking=policy)
    counter.observe([M1], reported_input_tokens=1_000)
    counter.observe([M1, THINK], reported_input_tokens=1_038 if weight == 1.0 else 2_038)
    assert counter.thinking_weight == weight


# -------------------------------------------------------------------------- counts in between


A = {"role": "user", "content": "a" * 100}  # 112
B = {
    "role": "assistant",
    "content": [
        {"type": "thinking", "thinking": "t" * 50, "signature": "s"},
        {"type": "text", "text": "b"},
    ],
}  # 12 + 12 + 13 = 37 bytes, 50 of thinking
C = {
    "role": "assistant",
    "content": [{"type": "thinking", "thinking": "u" * 30, "signature": "s"}, gif(750, 750)],
}  # 12 + 12 + 12 = 36 bytes, 30 of thinking, 750 image tokens
D = {"role": "user", "content": "d" * 10}  # 22
E = {"role": "user", "content": "e" * 20}  # 32


def test_counts_that_extend_the_last_count_add_up_as_whole_counts() -> None:
    counter = exact()
    assert counter.count([A]) == 112
    assert counter.count([A, B]) == 112 + 37 + 50
    assert counter.count([A, B, C]) == 112 + 37 + 50 + 36 + 30 + 750
    assert counter.count([A, B, C, D]) == 1_015 + 22
    assert counter.count([A, B, C, E]) == 1_015 + 32
    assert counter.count([B, A]) == 37 + 50 + 112
    assert counter.count([A, B, C, E, D]) == 1_015 + 32 + 22


def test_an_observed_extension_sums_its_totals() -> None:
    """The anchor's totals (what the state keeps) are the sum of both observations' messages."""
    counter = exact()
    counter.observe([A, B], reported_input_tokens=500)
    counter.observe([A, B, C], reported_input_tokens=1_500)
    assert counter.state_value()["anchor"][:7] == [112 + 37 + 36, 50 + 30, 750, 0, 0, 0, 1_500]


# ----------------------------------------------------------------------------- kept state


def _digest(*messages: dict[str, Any]) -> str:
    """The stored digest: sha256 chained over each message's canonical JSON."""
    chain = b""
    for message in messages:
        text = json.dumps(message, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        chain = hashlib.sha256(chain + text.encode()).digest()
    return chain.hex()


FRESH = {
    "version": 1,
    "ratio": [2_000.0, 2_000.0, 1.0, 1.0, 90_000.0, 90_000.0],
    "margin": 0.0,
    "errors": [],
    "anchor": None,
    "first": None,
}


def test_the_state_of_a_fresh_counter() -> None:
    assert exact().state_value() == FRESH
    assert CalibratedEstimator().state_value()["ratio"][1:3] == [2_000 / 3, 1 / 3]


def test_the_state_keeps_the_anchor_by_its_units_and_digest() -> None:
    """[text, thinking, images, system text, system images, tools, reported], then (for the
    last observation) the message count and the digest."""
    counter = exact()
    counter.observe([M1], system=S1, tools=[T1], reported_input_tokens=1_000)
    units = [112, 0, 0, 74, 750, 24, 1_000]
    assert counter.state_value() == {
        **FRESH,
        "anchor": [*units, 1, _digest(M1)],
        "first": units,
    }
    counter.observe([M1, M2], system=S1, tools=[T1], reported_input_tokens=1_500)
    value = counter.state_value()
    assert value["anchor"][7:] == [2, _digest(M1, M2)]
    assert value["first"] == units


def test_an_empty_request_is_kept_and_restored() -> None:
    counter = exact()
    counter.observe([], reported_input_tokens=10)
    value = counter.state_value()
    assert value["anchor"] == [0, 0, 0, 0, 0, 0, 10, 0, hashlib.sha256(b"").hexdigest()]
    restored = exact()
    restored.load_state(value)
    assert restored.state_value() == value
    assert restored.count([]) == 10
    assert restored.count([A]) == 10 + 112


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ([M1, M2], [M1, A]),  # the chain is reused only as far as the same objects go
        ([M1, M2, A], [M1, B, A]),
        ([M1, M2, A], [M1]),
        ([M1], [M1, M2, A]),
        ([M1, M2], [A, M2]),
    ],
)
def test_a_digest_is_the_same_however_it_was_reached(
    before: list[dict[str, Any]], after: list[dict[str, Any]]
) -> None:
    counter = exact()
    counter.observe(before, reported_input_tokens=100)
    assert counter.state_value()["anchor"][8] == _digest(*before)
    counter.observe(after, reported_input_tokens=100)
    assert counter.state_value()["anchor"][8] == _digest(*after)


def _restored(messages: list[dict[str, Any]], reported: int = 1_000) -> CalibratedEstimator:
    counter = exact()
    counter.observe(messages, system=S1, tools=[T1], reported_input_tokens=reported)
    restored = exact()
    restored.load_state(json.loads(json.dumps(counter.state_value())))
    return restored


def test_a_restored_anchor_is_the_same_state_until_a_request_starts_with_it() -> None:
    counter = exact()
    counter.observe([M1, M2], system=S1, tools=[T1], reported_input_tokens=1_000)
    restored = exact()
    restored.load_state(counter.state_value())
    assert restored.state_value() == counter.state_value()


def test_a_restored_anchor_is_recognised_by_value() -> None:
    """The same messages (as new objects, keys in another order) are the reported size; the
    reported size plus what was added when they start a longer request."""
    restored = _restored([M1, A])
    same = [{"content": M1["content"], "role": "user"}, dict(A)]
    assert restored.count(same, system=S1, tools=[T1]) == 1_000
    assert restored.count([*same, D], system=S1, tools=[T1]) == 1_000 + 22


def test_a_restored_anchor_extended_at_once_is_recognised() -> None:
    restored = _restored([M1, A])
    assert restored.count([M1, A, D], system=S1, tools=[T1]) == 1_000 + 22


def test_a_request_shorter_than_a_restored_anchor_is_estimated_afresh() -> None:
    """1,112 reported for 112 + 112 + 74 + 24 bytes and 750 image tokens leaves 40 unexplained."""
    restored = _restored([M1, A], reported=1_112)
    assert restored.count([M1], system=S1, tools=[T1]) == 40 + 112 + 74 + 24 + 750
    assert restored.count([A, M1], system=S1, tools=[T1]) == 40 + 224 + 74 + 24 + 750


def test_a_request_that_differs_from_a_restored_anchor_is_estimated_afresh() -> None:
    restored = _restored([M1, A], reported=1_112)
    assert restored.count([M1, D], system=S1, tools=[T1]) == 40 + 112 + 22 + 74 + 24 + 750


def _state(**changes: Any) -> dict[str, Any]:
    counter = exact()
    counter.observe([M1], reported_input_tokens=1_000)
    counter.observe([M1, A], reported_input_tokens=1_112)
    return {**counter.state_value(), **changes}


def test_a_state_round_trips() -> None:
    value = _state()
    assert len(value["errors"]) == 1
    assert value["first"] == [112, 0, 0, 0, 0, 0, 1_000]
    restored = exact()
    restored.load_state(value)
    assert restored.state_value() == value
    assert restored.count([M1, A, D]) == 1_112 + 22


def _ratio(position: int, number: float) -> dict[str, Any]:
    ratio = list(FRESH["ratio"])
    ratio[position] = number
    return _state(ratio=ratio)


@pytest.mark.parametrize(
    "value",
    [
        _ratio(0, 0.5),  # bytes
        _ratio(1, 0.5),  # tokens
        _ratio(2, 0.5),  # tokens per byte
        _ratio(3, 0.0),  # thinking weight, both ends
        _ratio(3, 1.0),
        _ratio(4, -5.0),  # what the text left unexplained may be negative
        _ratio(5, 0.5),  # the thinking's square sum
        _state(errors=[[0.0, 1.0]] * 20),
        _state(errors=[[-0.5, 0.5], [0.2, 3.0]]),
        _state(errors=[]),
        _state(anchor=None),
        _state(first=None),
        _state(anchor=[0, 0, 0, 0, 0, 0, 0, 0, "0" * 64]),
    ],
)
def test_a_state_within_range_is_taken(value: dict[str, Any]) -> None:
    restored = exact()
    restored.load_state(value)
    assert restored.state_value() == value


@pytest.mark.parametrize(
    ("value", "part"),
    [
        ([], "calibration"),
        ({**FRESH, "version": 2}, "calibration"),
        (_state(version=2), "calibration"),
        (_ratio(0, 0.0), "calibration.ratio"),
        (_ratio(1, 0.0), "calibration.ratio"),
        (_ratio(1, -10.0), "calibration.ratio"),
        (_ratio(2, 0.0), "calibration.ratio"),
        (_ratio(3, -0.01), "calibration.ratio"),
        (_ratio(3, 1.01), "calibration.ratio"),
        (_ratio(5, 0.0), "calibration.ratio"),
        (_state(ratio=[1.0] * 7), "calibration.ratio"),
        (_state(ratio=[1.0, 1.0, 1.0, 1.0, 1.0, True]), "calibration.ratio"),
        (_state(ratio=[1.0, 1.0, 1.0, 1.0, 1.0, float("inf")]), "calibration.ratio"),
        (_state(ratio=[1.0, 1.0, 1.0, 1.0, 1.0, "1"]), "calibration.ratio"),
        (_state(ratio=None), "calibration.ratio"),
        (_state(margin=[0.1]), "calibration.margin"),
        (_state(margin=None), "calibration.margin"),
        (_state(errors=None), "calibration.errors"),
        (_state(errors=[[0.0, 1.0, 2.0]]), "calibration.errors"),
        (_state(errors=[[0.0, 1.0]] * 21), "calibration.errors"),
        (_state(errors=[[0.1, 1.0], [0.2, 0.0]]), "calibration.errors[]"),  # weights are sizes
        (_state(errors=[[0.1, -1.0]]), "calibration.errors[]"),
        (_state(anchor=[1] * 10), "calibration.anchor"),
        (_state(anchor=[1] * 7), "calibration.anchor"),
        (_state(anchor="x"), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, -1, 0, "0" * 64]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, 1.0, 0, "0" * 64]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, True, 0, 0, "0" * 64]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, 0, -1, "0" * 64]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, 0, True, "0" * 64]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, 0, "1", "0" * 64]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, 0, 1, "0" * 63]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, 0, 1, "0" * 65]), "calibration.anchor"),
        (_state(anchor=[0, 0, 0, 0, 0, 0, 0, 1, 64]), "calibration.anchor"),
        (_state(first=[1] * 8), "calibration.first"),
        (_state(first=[1] * 9), "calibration.first"),
        (_state(first=[1, 1, 1, 1, 1, 1, -1]), "calibration.first"),
    ],
)
def test_a_state_out_of_range_is_refused_naming_the_part(value: Any, part: str) -> None:
    restored = exact()
    restored.observe([M1], reported_input_tokens=5)
    before = restored.state_value()
    with pytest.raises(ValueError, match=f"^{re.escape(part)}"):
        restored.load_state(value)
    assert restored.state_value() == before


# ------------------------------------------------------------------------------ arguments


@pytest.mark.parametrize(
    "keywords",
    [
        {"chars_per_token": 0.5},
        {"chars_per_token": 1.0},
        {"safety_margin": 0.0},
        {"safety_margin": 0.3},
        {"max_image_tokens": 0},
        {"max_image_tokens": 1},
    ],
)
def test_settings_at_their_bounds_are_taken(keywords: dict[str, Any]) -> None:
    CalibratedEstimator(**keywords)


@pytest.mark.parametrize(
    "keywords",
    [
        {"chars_per_token": -1.0},
        {"chars_per_token": 0.0},
        {"chars_per_token": float("inf")},
        {"safety_margin": -0.01},
        {"safety_margin": 0.31},
        {"max_image_tokens": False},
        {"max_image_tokens": -1},
        {"chars_per_token": "3"},  # not numbers at all
        {"safety_margin": None},
        {"max_image_tokens": "5"},
    ],
)
def test_settings_out_of_bounds_are_refused(keywords: dict[str, Any]) -> None:
    (name,) = keywords
    with pytest.raises(ConfigurationError, match=f"^{name} "):
        CalibratedEstimator(**keywords)


def test_a_report_of_zero_is_taken_and_a_negative_one_refused() -> None:
    counter = exact()
    counter.observe([M1], reported_input_tokens=0)
    assert counter.count([M1]) == 0
    for bad in (-1, True, 1.0):
        with pytest.raises(ConfigurationError, match=r"^reported_input_tokens"):
            counter.observe([M1], reported_input_tokens=bad)


@pytest.mark.parametrize("messages", ["hello", b"hello", {"role": "user"}, 3])
def test_messages_must_be_a_sequence_of_messages(messages: Any) -> None:
    for call in (exact().count, exact().least_tokens):
        with pytest.raises(MalformedMessageError, match=r"^messages: expected a list"):
            call(messages)


def test_a_tuple_of_messages_is_a_request() -> None:
    assert exact().count((M1, A)) == 224


def test_restoring_a_snapshot_forgets_what_was_learnt_since() -> None:
    counter = exact()
    counter.observe([M1], reported_input_tokens=1_000)
    before = counter.state_value()
    snapshot = counter.snapshot()
    counter.observe([M1], system="z" * 100, reported_input_tokens=1_150)
    assert counter.state_value() != before
    counter.restore(snapshot)
    assert counter.state_value() == before
    assert counter.count([M1]) == 1_000
    with pytest.raises(ConfigurationError, match=r"^snapshot: expected a snapshot\(\)"):
        counter.restore(before)
