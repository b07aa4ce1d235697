"""What append lets in, against an oracle written from the rules (not the session's own walk).

An appended message is checked by quick walks that name no place; only a fault sends it
through the walks that say where. Both must refuse exactly what the rules refuse: plain JSON
(strings with no lone surrogate, finite floats, integers short enough to print, string keys,
at most MAX_DEPTH levels of nesting) and no NUL character in any string or key.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from windowkeeper import ContextSession, MalformedMessageError

_DEPTH = 100  # the documented MAX_DEPTH of windowkeeper.core._inputs


def _faulty(value: Any, depth: int = 0) -> bool:
    """The rules, written out: whether a value may not be stored and sent."""
    if type(value) is str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return "\x00" in value
    if type(value) is dict:
        return depth >= _DEPTH or any(
            type(key) is not str or "\x00" in key or _faulty(child, depth + 1)
            for key, child in value.items()
        )
    if type(value) is list:
        return depth >= _DEPTH or any(_faulty(child, depth + 1) for child in value)
    if type(value) is float:
        return not math.isfinite(value)
    if type(value) is int:
        return value.bit_length() > 13_000
    return value is not None and type(value) is not bool


_TEXT = st.text(alphabet=st.sampled_from(["a", " ", "\x00", "\ud800", "é"]), max_size=4)
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
_VALUE = st.recursive(
    _LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(_TEXT | st.integers(0, 3), inner, max_size=3)
    ),
    max_leaves=12,
)


def _refused(extra: Any) -> bool:
    session = ContextSession(200_000)
    # the value rides in a block key no check of the block's own fields looks at
    message = {"role": "user", "content": [{"type": "text", "text": "task", "extra": extra}]}
    try:
        session.append(message)
    except MalformedMessageError:
        assert session.history == []  # refused whole
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(_VALUE)
def test_append_refuses_what_the_rules_refuse(value: Any) -> None:
    assert _refused(value) is _faulty(value, depth=3)  # message, content list, block


def _nested(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("levels", "refused"), [(_DEPTH - 3, False), (_DEPTH - 2, True)])
def test_the_depth_limit_holds(levels: int, refused: bool) -> None:
    """The block sits at depth 2, its value at 3: the deepest list allowed is at depth 99."""
    assert _refused(_nested(levels)) is refused


@pytest.mark.parametrize(
    ("extra", "where"),
    [
        ({"ratio": math.nan}, r"history\[0\]\.content\[0\]\.extra\.ratio"),
        (["ok", "a\x00b"], r"history\[0\]\.content\[0\]\.extra\[1\]"),
        ({"x": "\ud800"}, r"history\[0\]\.content\[0\]\.extra\.x"),
        ({"ok": 1, "a\x00": 1}, r"history\[0\]\.content\[0\]\.extra: a key holds a NUL"),
    ],
)
def test_a_refusal_still_names_the_place(extra: Any, where: str) -> None:
    with pytest.raises(MalformedMessageError, match=where):
        ContextSession(200_000).append(
            {"role": "user", "content": [{"type": "text", "text": "t", "extra": extra}]}
        )


def test_the_same_system_and_tools_are_walked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An agent sends one system prompt and tool list on every request: walked on the first,
    and again only when a new one comes."""
    walked: list[str] = []
    monkeypatch.setattr(
        "windowkeeper.session._admission.check_json_value",
        lambda value, path: walked.append(path),
    )
    session = ContextSession(200_000)
    session.append({"role": "user", "content": "task"})
    system = [{"type": "text", "text": "You are careful."}]
    tools = [{"name": "read", "input_schema": {"type": "object"}}]
    session.prepare(system=system, tools=tools)
    session.prepare(system=system, tools=tools)
    assert walked == ["system", "tools[0]"]
    session.prepare(system="another prompt", tools=tools)
    assert walked == ["system", "tools[0]", "system"]
    faulty = [*tools, {"name": "x\x00"}]
    for _attempt in range(2):  # refused each time: a refused list is not remembered
        with pytest.raises(MalformedMessageError, match=r"tools\[1\]"):
            session.prepare(system="another prompt", tools=faulty)
