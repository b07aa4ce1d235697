"""The steady path's quick checks agree with the full ones they stand in front of.

Each quick check (no paths, no copies) decides whether the full check, which names the place of
a fault, has to run: they must agree on every value, or a fault slips in unnamed.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import windowkeeper.session._admission as admission
from windowkeeper import ContextSession
from windowkeeper._errors import MalformedMessageError
from windowkeeper.core._incremental import shared_prefix
from windowkeeper.core._inputs import MAX_DEPTH, _plain_json, _refuse_json, check_json_value
from windowkeeper.formats._wire import EMPTIED, Repair, anthropic_emptied, anthropic_message
from windowkeeper.session._admission import _holds_nul, _refuse_nul
from windowkeeper.session._anchors import is_prefix
from windowkeeper.session._tokens import CalibratedEstimator

_TEXT = st.text(alphabet=st.sampled_from(["a", " ", "\x00", "\ud800", "é", "\n"]), max_size=4)
_LEAF = (
    _TEXT
    | st.integers(-(2**20), 2**20)
    | st.just(2**14000)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
    | st.just(b"x")
    | st.just(("t",))
)
_KEY = _TEXT | st.integers(0, 3)
_VALUE = st.recursive(
    _LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEY, inner, max_size=3),
    max_leaves=12,
)


def _refused(check: Any, value: Any) -> bool:
    try:
        check(value, "v")
    except MalformedMessageError:
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(_VALUE)
def test_the_quick_json_check_passes_what_the_full_walk_passes(value: Any) -> None:
    assert _plain_json(value) is not _refused(_refuse_json, value)


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("depth", "refused"), [(MAX_DEPTH, False), (MAX_DEPTH + 1, True)])
def test_the_quick_json_check_keeps_the_depth_limit(depth: int, refused: bool) -> None:
    """A list at depth MAX_DEPTH (the root is at 0) is refused, one level less is not."""
    assert _plain_json(_nested(depth)) is not refused
    assert _refused(check_json_value, _nested(depth)) is refused


def test_the_full_walk_still_names_the_place() -> None:
    with pytest.raises(MalformedMessageError, match=r"v\.content\[1\]\.ratio"):
        check_json_value({"content": [{}, {"ratio": math.nan}]}, "v")


_JSON_VALUE = st.recursive(
    _TEXT | st.integers() | st.none(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUE)
def test_the_quick_nul_check_finds_what_the_full_walk_refuses(value: Any) -> None:
    assert _holds_nul(value) is _refused(_refuse_nul, value)


_BLOCK = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _TEXT | st.none() | st.just(3)}),
    st.fixed_dictionaries({"type": st.sampled_from(["thinking", "redacted_thinking"])}),
    st.fixed_dictionaries(
        {"type": st.just("tool_result"), "tool_use_id": st.just("t"), "content": st.just([])}
    ),
    st.fixed_dictionaries({"type": st.sampled_from(["tool_use", "image", "nonsense", 7])}),
    st.just("not a block"),
)
_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": _TEXT | st.lists(_BLOCK, max_size=3) | st.none(),
    }
)


@settings(max_examples=400, deadline=None)
@given(_MESSAGE)
def test_emptied_says_what_the_shaping_reports(message: dict[str, Any]) -> None:
    repairs: list[Repair] = []
    anthropic_message(message, "m", repairs)
    assert anthropic_emptied(message) is any(r.detail == EMPTIED for r in repairs)


_POOL = [{"n": 1}, {"n": 1}, {"n": 2}, {"n": 3}]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(range(4)), max_size=6), st.lists(st.sampled_from(range(4)), max_size=6)
)
def test_prefix_checks_match_their_definitions(old: list[int], new: list[int]) -> None:
    """``is_prefix`` by equality (identity first), ``shared_prefix`` by identity only."""
    before = tuple(_POOL[i] for i in old)
    after = [_POOL[i] for i in new]
    expected = len(after) >= len(before) and all(
        a == b for a, b in zip(before, after, strict=False)
    )
    assert is_prefix(before, after) is expected
    same = next(
        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a is not b),
        min(len(old), len(new)),
    )
    assert shared_prefix(before, after) == same


def test_the_same_system_and_tools_are_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent sends one system prompt and tool list on every request: walked on the first."""
    walked: list[str] = []
    real = admission.check_json_value

    def counted(value: Any, path: str) -> None:
        walked.append(path)
        real(value, path)

    monkeypatch.setattr(admission, "check_json_value", counted)
    session = ContextSession(200_000)
    session.append({"role": "user", "content": "task"})
    system = [{"type": "text", "text": "You are careful."}]
    tools = [{"name": "read", "input_schema": {"type": "object"}}]
    session.prepare(system=system, tools=tools)
    session.prepare(system=system, tools=tools)
    assert walked == ["system", "tools[0]"]
    session.prepare(system="another prompt", tools=tools)
    assert walked == ["system", "tools[0]", "system"]
    with pytest.raises(MalformedMessageError, match=r"tools\[1\]"):
        session.prepare(system="another prompt", tools=[*tools, {"name": "x\x00"}])
    with pytest.raises(MalformedMessageError, match=r"tools\[1\]"):  # refused again, not let in
        session.prepare(system="another prompt", tools=[*tools, {"name": "x\x00"}])


_TEXTS = st.lists(st.text(max_size=40), min_size=2, max_size=8)


@settings(max_examples=100, deadline=None)
@given(_TEXTS, st.integers(1, 7), st.integers(1, 5_000))
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
