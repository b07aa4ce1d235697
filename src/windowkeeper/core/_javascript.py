"""JSON values as JavaScript reads, compares and writes them, for byte-exact ``context_history.json``.

The original stores ``JSON.parse`` output and writes ``JSON.stringify`` output. Python's ``json``
agrees with them except in a few places, all handled here:

- numbers: JavaScript has only doubles. An integer is kept as ``int`` while it is exact in a double
  (``|n| <= 2**53``); ``2.0`` reads as ``2`` and ``-0`` as ``0``; anything else is a ``float``,
  written with JavaScript's ``Number#toString`` (``1e-7``, ``1e+21``, ``1152921504606847000``),
  non-finite ones as ``null``. ``NaN`` and ``Infinity`` literals are not JSON.
- strings: a lone surrogate is written ``\\udXXX``; Python would write the raw code point.
- objects: integer-like keys come first in ascending order, then the others in creation order.
- map keys: JavaScript keeps ``true`` apart from ``1``, and every array or object key apart from
  every other; such keys are wrapped in :class:`OpaqueKey` so a Python dict keeps them apart too.

:func:`dumps` takes the fast path (``json.dumps``) unless the caller says the value holds floats or
opaque keys (``exotic``).
"""

from __future__ import annotations

import json
import math
import re
from functools import cache
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

__all__ = [
    "MAX_EXACT_INT",
    "UNDEFINED",
    "OpaqueKey",
    "dumps",
    "loads",
    "map_key",
    "normalize",
    "number_to_string",
    "to_number",
]

MAX_EXACT_INT = 2**53
"""Every integer of at most this size is a JavaScript number exactly (2**53, one past
``Number.MAX_SAFE_INTEGER``): such an int is its own JSON value and map key."""
_INDEX_LIMIT = 2**32 - 1  # array-index property keys are below this
# StringToNumber: JavaScript's white space and line terminators are trimmed first.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_RADIX = {"x": 16, "o": 8, "b": 2}
_RADIX_DIGITS = {16: "[0-9a-fA-F]+", 8: "[0-7]+", 2: "[01]+"}


# The patterns are compiled on first use: importing windowkeeper compiles none of them.
@cache
def _lone_surrogate() -> re.Pattern[str]:
    return re.compile("[\ud800-\udfff]")


@cache
def _decimal() -> re.Pattern[str]:
    return re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")


@cache
def _radix_digits(radix: int) -> re.Pattern[str]:
    return re.compile(_RADIX_DIGITS[radix])


def _is_index_key(key: str) -> bool:
    """Whether ``key`` is an array-index property key: ``0`` or digits without a leading zero."""
    return (
        key.isascii()
        and key.isdigit()
        and (key[0] != "0" or key == "0")
        and int(key) < _INDEX_LIMIT
    )


class _Undefined:
    """JavaScript's ``undefined`` as a map key (a missing element of a destructured pair)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED = _Undefined()


class OpaqueKey:
    """A map key JavaScript keeps apart from every Python-equal key.

    A boolean key equals only the same boolean (not ``1`` or ``0``); an array or object key equals
    only itself, as JavaScript compares objects by identity.
    """

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        if isinstance(self.value, bool) and isinstance(other, OpaqueKey):
            return other.value is self.value
        return other is self

    def __hash__(self) -> int:
        return hash(("bool", self.value)) if isinstance(self.value, bool) else id(self)

    def __repr__(self) -> str:
        return f"OpaqueKey({self.value!r})"


def map_key(value: Any) -> tuple[Any, bool]:
    """``value`` as a Python dict key with JavaScript ``Map`` equality, and whether it is exotic."""
    if type(value) is int:  # a message or block index: by far the most common key
        return value, False
    if value is UNDEFINED or isinstance(value, bool | list | dict):
        return (value if value is UNDEFINED else OpaqueKey(value)), True
    return value, isinstance(value, float)


def loads(text: str) -> tuple[Any, bool]:
    """``JSON.parse(text)``; returns the value and whether it holds floats. Raises ``ValueError``."""
    exotic = False

    def parse_float(literal: str) -> int | float:
        nonlocal exotic
        number = float(literal)
        if number.is_integer() and -MAX_EXACT_INT <= number <= MAX_EXACT_INT:
            return int(number)
        exotic = True
        return number

    def parse_int(literal: str) -> int | float:
        # Python would keep every digit (and refuses more than 4300); JavaScript rounds to a double.
        nonlocal exotic
        if len(literal) <= 15:  # at most 15 digits: below 2**53, exact either way
            return int(literal)
        number = float(literal)
        if -MAX_EXACT_INT <= number <= MAX_EXACT_INT:
            return int(number)
        exotic = True
        return number

    value = json.loads(
        text,
        parse_float=parse_float,
        parse_int=parse_int,
        parse_constant=_reject,
        object_pairs_hook=_js_object,
    )
    return value, exotic


def _reject(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _js_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A parsed object with JavaScript's property order (last value wins, first position kept)."""
    indices: dict[str, Any] = {}
    others: dict[str, Any] = {}
    for key, value in pairs:
        if _is_index_key(key):
            indices[key] = value
        else:
            others[key] = value
    if not indices:
        return others
    return {**dict(sorted(indices.items(), key=lambda item: int(item[0]))), **others}


def normalize(value: Any) -> tuple[Any, bool]:
    """A fresh copy of a JSON-like value as JavaScript would hold it, and whether it holds floats.

    Tuples become lists; a dict is reordered as a JavaScript object. Raises ``TypeError`` for a
    value JSON cannot hold.
    """
    exotic = [False]
    return _normalize(value, exotic), exotic[0]


def _normalize(value: Any, exotic: list[bool]) -> Any:
    kind = type(value)  # exact types first: every edit recorded in a store passes through here
    if kind is str:
        return value
    if kind is int and -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
        return value
    if kind is list:  # a string item is its own value: no call for it
        return [item if type(item) is str else _normalize(item, exotic) for item in value]
    if isinstance(value, str) or value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        if -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            return int(value)
        exotic[0] = True
        return float(value)
    if isinstance(value, float):
        if value.is_integer() and -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            return int(value)
        exotic[0] = True
        return value
    if isinstance(value, list | tuple):
        return [_normalize(item, exotic) for item in value]
    if isinstance(value, dict):
        pairs = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"object keys must be strings, got {type(key).__name__}")
            pairs.append((key, _normalize(item, exotic)))
        return _js_object(pairs)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
# The C encoder ``_ENCODER.encode`` builds on every call, made once (every store record pays
# that build otherwise, more than the encoding itself); without the cycle check, as what the
# store dumps went through :func:`normalize` first, which a cycle makes fail.
_C_ENCODE = (
    c_make_encoder(None, _ENCODER.default, encode_basestring, None, ":", ",", False, False, True)
    if c_make_encoder is not None
    else None
)


def _compact(value: Any) -> str:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` of an acyclic value."""
    if _C_ENCODE is None or isinstance(value, str):
        return _ENCODER.encode(value)
    return "".join(_C_ENCODE(value, 0))


def dumps(value: Any, *, exotic: bool) -> str:
    """``JSON.stringify(value)``: compact, non-ASCII raw, lone surrogates escaped."""
    if exotic:
        parts: list[str] = []
        _write(value, parts)
        text = "".join(parts)
    else:
        text = _compact(value)
    if not text.isascii():
        # Encoding fails exactly when a lone surrogate is there, and is faster than a search.
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _lone_surrogate().sub(lambda match: f"\\u{ord(match.group()):04x}", text)
    return text


def _write(value: Any, parts: list[str]) -> None:
    if isinstance(value, OpaqueKey):
        value = value.value
    if value is UNDEFINED or value is None:
        parts.append("null")
    elif isinstance(value, bool):
        parts.append("true" if value else "false")
    elif isinstance(value, int | float):
        parts.append(number_to_string(value) if math.isfinite(value) else "null")
    elif isinstance(value, str):
        parts.append(json.dumps(value, ensure_ascii=False))
    elif isinstance(value, list | tuple):
        parts.append("[")
        for position, item in enumerate(value):
            if position:
                parts.append(",")
            _write(item, parts)
        parts.append("]")
    elif isinstance(value, dict):
        parts.append("{")
        for position, (key, item) in enumerate(value.items()):
            if position:
                parts.append(",")
            parts.append(json.dumps(key, ensure_ascii=False))
            parts.append(":")
            _write(item, parts)
        parts.append("}")
    else:
        raise TypeError(f"{type(value).__name__} is not a JSON value")


def number_to_string(value: float) -> str:
    """JavaScript's ``Number#toString()`` of a finite number (shortest round-trip digits)."""
    if value == 0:
        return "0"
    if value < 0:
        return "-" + number_to_string(-value)
    if isinstance(value, int) and value <= MAX_EXACT_INT:
        return str(value)
    mantissa, _, exponent = repr(float(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    # value = 0.<whole><fraction> * 10**point, before stripping leading zeros
    point = len(whole) + (int(exponent) if exponent else 0)
    point -= len(whole + fraction) - len((whole + fraction).lstrip("0"))
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        return digits + "0" * (n - k)
    if 0 < n <= 21:
        return f"{digits[:n]}.{digits[n:]}"
    if -6 < n <= 0:
        return "0." + "0" * -n + digits
    sign = "+" if n - 1 >= 0 else "-"
    head = digits if k == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{head}e{sign}{abs(n - 1)}"


def to_number(value: Any) -> float:
    """JavaScript's ``ToNumber`` of a JSON value, as ``x > timestamp`` applies it (NaN if none)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return _string_to_number(value)
    if isinstance(value, list):
        return _string_to_number(_array_to_string(value))
    return math.nan  # undefined, objects


def _array_to_string(value: list[Any]) -> str:
    return ",".join(_element_to_string(item) for item in value)


def _element_to_string(item: Any) -> str:
    if item is None or item is UNDEFINED:
        return ""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int | float):
        return number_to_string(item) if math.isfinite(item) else _non_finite(item)
    if isinstance(item, str):
        return item
    if isinstance(item, list):
        return _array_to_string(item)
    return "[object Object]"


def _non_finite(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    return "Infinity" if value > 0 else "-Infinity"


def _string_to_number(text: str) -> float:
    text = text.strip(_JS_SPACE)
    if not text:
        return 0.0
    if len(text) > 2 and text[0] == "0" and text[1].lower() in _RADIX:
        radix = _RADIX[text[1].lower()]
        body = text[2:]
        return float(int(body, radix)) if _radix_digits(radix).fullmatch(body) else math.nan
    if _decimal().fullmatch(text):
        return float(text.replace("Infinity", "inf"))
    return math.nan
