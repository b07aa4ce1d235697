"""What a session accepts: every message is checked when it is appended, so none can poison it.

The faithful core accepts odd shapes as the original does. A session goes further, because
whatever it accepts it must later send and persist: a value that ``prepare()``, the JSON writer or
the provider would refuse has to be refused at ``append``, naming its place, before it is in the
history. Refused here (each with :class:`~windowkeeper.MalformedMessageError` and a path such as
``history[12].content[3].input.ratio``):

- values JSON cannot carry exactly: ``NaN`` and infinities (written as ``NaN``, which Cline and
  every JSON parser refuse), sets, tuples, bytes and other objects, keys that are not strings,
  integers too long to print, strings with lone surrogates (not UTF-8), and nesting deeper than
  :data:`MAX_DEPTH`;
- known blocks whose fields have the wrong type: a ``text`` that is not a string, a ``tool_use``
  without a non-empty string ``id`` and ``name`` or with an ``input`` that is not an object, a
  ``tool_result`` without a string ``tool_use_id`` or with content that is neither a string nor
  a list of blocks, a thinking block without its text.

Blocks of other types are accepted (the history keeps them; :mod:`windowkeeper.formats._wire` leaves them
out of requests and reports it). The walk uses an explicit stack: no recursion, bounded by the
size of the value.
"""

from __future__ import annotations

import math
from typing import Any

from .._errors import MalformedMessageError
from ._messages import check_message

__all__ = ["MAX_DEPTH", "check_json_value", "check_session_message"]

MAX_DEPTH = 100
"""Deepest nesting of lists and objects a message may have (a real one rarely passes 20)."""

_MAX_INT_BITS = 13_000  # about 3,900 digits: Python prints up to 4,300 by default


def _key_path(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{key!r}]"


def _short(path: str) -> str:
    return path if len(path) <= 120 else f"{path[:100]}...{path[-16:]}"


def check_json_value(value: Any, path: str) -> None:
    """Raise :class:`MalformedMessageError` unless ``value`` is plain, finite, UTF-8 JSON."""
    if not _plain_json(value):
        _refuse_json(value, path)


def _plain_json(value: Any) -> bool:
    """Whether :func:`_refuse_json` passes ``value``: the same rules, level by level, without
    the paths only an error needs (an appended message is walked once, on the steady path)."""
    level = [value]
    depth = 0
    while level:
        below: list[Any] = []
        for item in level:
            kind = type(item)
            if kind is str:
                if not item.isascii():
                    try:
                        item.encode("utf-8")
                    except UnicodeEncodeError:
                        return False
            elif kind is dict:
                if depth >= MAX_DEPTH:
                    return False
                for key, child in item.items():
                    if type(key) is not str:
                        return False
                    below.append(child)
            elif kind is list:
                if depth >= MAX_DEPTH:
                    return False
                below += item
            elif kind is float:
                if not math.isfinite(item):
                    return False
            elif kind is int:
                if item.bit_length() > _MAX_INT_BITS:
                    return False
            elif item is not None and kind is not bool:
                return False
        level = below
        depth += 1
    return True


def _refuse_json(value: Any, path: str) -> None:
    """Raise for the first value in ``value`` that is not plain JSON, naming its path."""
    stack: list[tuple[Any, str, int]] = [(value, path, 0)]
    while stack:
        item, where, depth = stack.pop()
        kind = type(item)
        if kind is str:
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError as error:
                    raise MalformedMessageError(
                        where, f"text is not UTF-8 (a lone surrogate at {error.start})"
                    ) from None
        elif kind is dict:
            if depth >= MAX_DEPTH:
                raise MalformedMessageError(
                    _short(where), f"nested more than {MAX_DEPTH} levels deep"
                )
            for key, child in item.items():
                if type(key) is not str:
                    raise MalformedMessageError(
                        where,
                        f"a key of type {type(key).__name__} ({key!r}): JSON keys are strings",
                    )
                stack.append((child, _key_path(where, key), depth + 1))
        elif kind is list:
            if depth >= MAX_DEPTH:
                raise MalformedMessageError(
                    _short(where), f"nested more than {MAX_DEPTH} levels deep"
                )
            stack.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif kind is float:
            if not math.isfinite(item):
                raise MalformedMessageError(where, f"{item!r} is not a JSON number")
        elif kind is int:
            if item.bit_length() > _MAX_INT_BITS:
                raise MalformedMessageError(where, "an integer too long to write as JSON")
        elif item is not None and kind is not bool:
            raise MalformedMessageError(
                where,
                f"a {kind.__name__} is not a JSON value (use lists, objects, strings, numbers)",
            )


def _need_string(block: dict[str, Any], key: str, path: str, *, empty: bool = True) -> None:
    value = block.get(key)
    if not isinstance(value, str) or (not empty and not value):
        wanted = "a string" if empty else "a non-empty string"
        raise MalformedMessageError(f"{path}.{key}", f"expected {wanted}, got {value!r:.60}")


def _check_block(block: dict[str, Any], path: str) -> None:
    kind = block["type"]
    if kind == "text":
        _need_string(block, "text", path)
    elif kind == "tool_use":
        _need_string(block, "id", path, empty=False)
        _need_string(block, "name", path, empty=False)
        if not isinstance(block.get("input"), dict):
            raise MalformedMessageError(f"{path}.input", "expected an object")
    elif kind == "tool_result":
        _need_string(block, "tool_use_id", path, empty=False)
        content = block.get("content", "")
        if isinstance(content, list):
            for position, inner in enumerate(content):
                where = f"{path}.content[{position}]"
                if not isinstance(inner, dict) or not isinstance(inner.get("type"), str):
                    raise MalformedMessageError(where, "block has no string 'type'")
                if inner["type"] == "text":
                    _need_string(inner, "text", where)
        elif not isinstance(content, str):
            raise MalformedMessageError(f"{path}.content", "expected a string or a list of blocks")
    elif kind == "thinking":
        _need_string(block, "thinking", path)
    elif kind == "redacted_thinking":
        _need_string(block, "data", path)


def check_session_message(message: Any, path: str) -> None:
    """Raise :class:`MalformedMessageError` unless a session can keep, send and save ``message``.

    ``message`` is Anthropic-shaped (see the module docstring for what is checked).
    """
    check_message(message, path)
    check_json_value(message, path)
    content = message["content"]
    if isinstance(content, list):
        for position, block in enumerate(content):
            _check_block(block, f"{path}.content[{position}]")
