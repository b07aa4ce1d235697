"""Token estimates of a request before it is sent, calibrated online from provider-reported usage.

The per-turn session API must know whether the next request fits the window *before* sending it,
but no tokenizer ships with the standard library, and Claude's is not public. So the estimator
measures text in UTF-8 bytes (equal to characters for ASCII; it keeps CJK and emoji from being
undercounted) and learns the bytes-per-token ratio from what the provider reports back.

What is counted is in :mod:`windowkeeper.session._units`.

How the estimate is made (:class:`CalibratedEstimator`): when the messages of the last observed
request are a prefix of the new ones (same objects, else equal), the estimate is that request's
reported size plus a margin-padded estimate of what was added (new messages, and any system or
tools difference); this absorbs everything invisible to us (the provider's own framing, a system
prompt the caller did not pass). Otherwise the whole request is estimated from the calibrated
ratio, plus the part of the last observation the ratio could not explain. Each prefix-extending
observation calibrates the ratio from its delta (a decayed ratio of sums; one delta moves it
only a little towards fewer tokens, as an inflated earlier report makes a delta look cheap),
and the margin follows the recent out-of-sample errors of those deltas, so underestimates stay
rare.

Counted messages are remembered by identity, so an anchored count costs time in the new messages
only: treat a message as frozen once it was counted (windowkeeper never edits one in place; edit
a copy). Nothing here mutates its inputs.
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from .._errors import ConfigurationError
from ..core._incremental import replaced_spans
from ..core._messages import JSONValue, Message, SystemPrompt
from ._anchors import Anchor as _Anchor
from ._anchors import Digests as _Digests
from ._anchors import anchor_value as _anchor_value
from ._anchors import is_prefix as _is_prefix
from ._anchors import numbers as _numbers
from ._anchors import read_anchor as _read_anchor
from ._calibration import Calibration as _Calibration
from ._calibration import ThinkingPolicy
from ._calibration import weighted_quantile as _weighted_quantile
from ._images import MAX_IMAGE_TOKENS, image_dimensions, image_tokens
from ._units import NO_UNITS as _NO_UNITS
from ._units import Units as _Units
from ._units import check_sequence as _check_sequence
from ._units import message_units as _message_units
from ._units import parts as _parts
from ._units import same_parts as _same_parts
from ._units import summed as _summed
from ._units import system_units as _system_units
from ._units import tools_units as _tools_units

__all__ = [
    "MAX_IMAGE_TOKENS",
    "CalibratedEstimator",
    "ThinkingPolicy",
    "TokenCounter",
    "image_dimensions",
    "image_tokens",
]

# Calibration: see windowkeeper.session._calibration for the fit's own constants.
_MARGIN_QUANTILE = 0.9
_MARGIN_WINDOW = 20
_MAX_MARGIN = 0.3
_STATE_VERSION = 1
_CALIBRATION_FIELDS = ("bytes", "tokens", "a", "w", "residual_sum", "square_sum")  # as stored


class TokenCounter(Protocol):
    """Estimates the input size of a request and learns from what the provider reported."""

    def count(
        self,
        messages: Sequence[Message],
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Estimated input tokens of a request with these messages, system prompt (str or list of text blocks) and tool definitions."""
        ...

    def observe(
        self,
        messages: Sequence[Message],
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reported_input_tokens: int,
    ) -> None:
        """Learn from the provider-reported input size (input + cache writes + cache reads) of a request that sent exactly these."""
        ...


class _Snapshot(NamedTuple):
    calibration: _Calibration
    margin: float
    errors: tuple[tuple[float, float], ...]
    anchor: _Anchor | None
    first: _Anchor | None
    detached: tuple[int, str] | None = None


class CalibratedEstimator:
    """The default :class:`TokenCounter`: dependency-free, calibrated from reported usage.

    ``chars_per_token`` is the starting ratio (characters counted as UTF-8 bytes); 3.0 is
    conservative for English, code and JSON on Claude's tokenizer, which the recorded traces put
    at 3.0 to 3.6. ``safety_margin`` is the least relative padding of estimated (as opposed to
    reported) tokens; the padding grows, up to 30 %, with the recent underestimates of what
    the observations added (the size-weighted 90th percentile of the last 20). ``thinking``
    and ``max_image_tokens``: see the module docstring.

    Not thread-safe; use one per conversation.
    """

    def __init__(
        self,
        *,
        chars_per_token: float = 3.0,
        safety_margin: float = 0.1,
        thinking: ThinkingPolicy = "learn",
        max_image_tokens: int = MAX_IMAGE_TOKENS,
    ) -> None:
        if not _holds(lambda: chars_per_token > 0 and math.isfinite(chars_per_token)):
            raise ConfigurationError(
                f"chars_per_token must be a positive number, got {chars_per_token!r}"
            )
        if not _holds(lambda: 0 <= safety_margin <= _MAX_MARGIN):
            raise ConfigurationError(
                f"safety_margin must be a number in [0, {_MAX_MARGIN}], got {safety_margin!r}"
            )
        if thinking not in ("learn", "count", "ignore"):
            raise ConfigurationError(
                f"thinking must be 'learn', 'count' or 'ignore', got {thinking!r}"
            )
        if isinstance(max_image_tokens, bool) or not _holds(
            lambda: operator.index(max_image_tokens) >= 0
        ):
            raise ConfigurationError(
                f"max_image_tokens must be an integer >= 0, got {max_image_tokens!r}"
            )
        self._calibration = _Calibration(1.0 / chars_per_token, thinking)
        self._prior_ratio = 1.0 / chars_per_token
        self._min_margin = safety_margin
        self._margin = safety_margin
        self._errors: deque[tuple[float, float]] = deque(maxlen=_MARGIN_WINDOW)
        self._max_image_tokens = max_image_tokens
        self._cache: dict[int, tuple[Message, _Units]] = {}
        self._anchor: _Anchor | None = None
        self._first: _Anchor | None = None
        # A restored anchor knows its messages by count and digest only (see load_state); the
        # first request that starts with them gives it its messages back.
        self._detached: tuple[int, str] | None = None
        self._detached_memo: dict[tuple[int, ...], tuple[tuple[Message, ...], bool]] = {}
        self._digests = _Digests()  # each message dumped once while it stays the same object
        self._last_count: tuple[list[Message], _Units] | None = None
        self._system_parts: tuple[Any, ...] | None = None
        self._system_units = _NO_UNITS
        self._tools_parts: tuple[Any, ...] | None = None
        self._tools_units = 0

    @property
    def chars_per_token(self) -> float:
        """The calibrated ratio (central, before the margin) for text outside thinking."""
        return 1.0 / self._calibration.a

    @property
    def thinking_weight(self) -> float:
        """How much of the thinking text the provider is taken to count (0 to 1)."""
        return self._calibration.w

    @property
    def margin(self) -> float:
        """The relative padding currently added to estimated tokens."""
        return self._margin

    # ----------------------------------------------------------------------------- public API

    def count(
        self,
        messages: Sequence[Message],
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """Estimated input tokens of a request with these messages, system prompt and tools."""
        _check_sequence(messages)
        system_units, tools_units = self._request_units(system, tools)
        if self._anchored(messages):
            anchor = self._anchor
            assert anchor is not None
            added = self._units_of(messages, len(anchor.messages))
            self._prune(messages)
            text = added.text + system_units.text - anchor.system_units.text
            text += tools_units - anchor.tools_units
            images = added.images + system_units.images - anchor.system_units.images
            return max(0, anchor.reported + self._padded(text, added.thinking) + images)
        totals = self._totals(messages)
        self._prune(messages)
        text = totals.text + system_units.text + tools_units
        images = totals.images + system_units.images
        return self._unexplained() + self._padded(text, totals.thinking) + images

    def observe(
        self,
        messages: Sequence[Message],
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        reported_input_tokens: int,
    ) -> None:
        """Learn from the provider-reported input size of a request that sent exactly these.

        ``reported_input_tokens`` is input + cache writes + cache reads (Anthropic), or the
        prompt tokens (OpenAI). When the last observed request's messages start these, the
        difference calibrates the ratio; either way this request becomes the new anchor.
        """
        if not isinstance(reported_input_tokens, int) or isinstance(reported_input_tokens, bool):
            raise ConfigurationError(
                "reported_input_tokens: expected an int, "
                f"got {type(reported_input_tokens).__name__}"
            )
        if reported_input_tokens < 0:
            raise ConfigurationError(
                f"reported_input_tokens must be >= 0, got {reported_input_tokens}"
            )
        _check_sequence(messages)
        system_units, tools_units = self._request_units(system, tools)
        anchor = self._anchor
        if anchor is not None and self._anchored(messages):
            anchor = self._anchor
            assert anchor is not None
            added = self._units_of(messages, len(anchor.messages))
            totals = _summed(anchor.totals, added)
            text = added.text + system_units.text - anchor.system_units.text
            text += tools_units - anchor.tools_units
            images = added.images + system_units.images - anchor.system_units.images
            self._learn(text, added.thinking, reported_input_tokens - anchor.reported - images)
        else:
            totals = self._units_of(messages, 0)
        self._anchor = _Anchor(
            tuple(messages),
            totals,
            system_units,
            tools_units,
            reported_input_tokens,
        )
        self._detached = None
        self._detached_memo.clear()
        if self._first is None:
            self._first = self._anchor
        self._prune(())

    def least_tokens(
        self,
        messages: Sequence[Message],
        *,
        system: SystemPrompt | None = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """The fewest input tokens a provider can plausibly report for this request.

        Its text at the calibrated ratio (at most the starting one), without the margin, the thinking or the images (a
        provider may count those for less); what reported usage is checked against
        (see :mod:`windowkeeper.session._usage_trust`).
        """
        _check_sequence(messages)
        system_units, tools_units = self._request_units(system, tools)
        anchor = self._anchor
        if anchor is not None and self._anchored(messages):  # the usual case: report, then this
            anchor = self._anchor
            assert anchor is not None
            totals = _summed(anchor.totals, self._units_of(messages, len(anchor.messages)))
        else:
            totals = self._totals(messages)
        self._prune(messages)
        # never above the starting ratio: a denser tokenizer learnt from earlier reports must
        # not make an honest report look short
        ratio = min(self._calibration.a, self._prior_ratio)
        return math.floor(ratio * (totals.text + system_units.text + tools_units))

    def snapshot(self) -> object:
        """What it has learnt so far, for :meth:`restore` (a session's checkpoint keeps it)."""
        return _Snapshot(
            self._calibration.copy(),
            self._margin,
            tuple(self._errors),
            self._anchor,
            self._first,
            self._detached,
        )

    def restore(self, snapshot: object) -> None:
        """Forget what was learnt since ``snapshot`` (from :meth:`snapshot`) was taken."""
        if not isinstance(snapshot, _Snapshot):
            raise ConfigurationError(
                f"snapshot: expected a snapshot() of this estimator, got {type(snapshot).__name__}"
            )
        self._calibration = snapshot.calibration.copy()
        self._margin = snapshot.margin
        self._errors = deque(snapshot.errors, maxlen=_MARGIN_WINDOW)
        self._anchor = snapshot.anchor
        self._first = snapshot.first
        self._detached = snapshot.detached
        self._detached_memo.clear()

    def state_value(self) -> dict[str, Any]:
        """What it has learnt, as JSON, for :meth:`load_state` in another process.

        A session keeps it with its state, so a reopened session estimates as the one that was
        closed: the ratio, the thinking weight, the margin and its recent errors, and the last
        and first observed requests (the last by its number of messages and a digest of them).
        """
        calibration = self._calibration
        anchor = self._anchor
        detached = self._detached
        if anchor is not None and detached is None:
            detached = (len(anchor.messages), self._digests.of(anchor.messages))
        return {
            "version": _STATE_VERSION,
            "ratio": [getattr(calibration, name) for name in _CALIBRATION_FIELDS],
            "margin": self._margin,
            "errors": [list(error) for error in self._errors],
            "anchor": None if anchor is None else [*_anchor_value(anchor), *(detached or (0, ""))],
            "first": None if self._first is None else _anchor_value(self._first),
        }

    def load_state(self, value: JSONValue) -> None:
        """Resume from :meth:`state_value`; raises ``ValueError`` (naming the part) if unreadable."""
        if not isinstance(value, dict) or value.get("version") != _STATE_VERSION:
            raise ValueError("calibration: expected an object of version 1")
        ratio = _numbers(value.get("ratio"), 6, "calibration.ratio")
        margin = _numbers([value.get("margin")], 1, "calibration.margin")[0]
        errors = value.get("errors")
        if not isinstance(errors, list) or len(errors) > _MARGIN_WINDOW:
            raise ValueError(f"calibration.errors: expected at most {_MARGIN_WINDOW} pairs")
        pairs = [tuple(_numbers(e, 2, "calibration.errors[]")) for e in errors]
        if any(weight <= 0 for _, weight in pairs):  # a weight is a predicted size
            raise ValueError("calibration.errors[]: expected weights > 0")
        raw_anchor, raw_first = value.get("anchor"), value.get("first")
        anchor = None if raw_anchor is None else _read_anchor(raw_anchor, 9, "calibration.anchor")
        first = None if raw_first is None else _read_anchor(raw_first, 7, "calibration.first")
        if (
            ratio[0] <= 0
            or ratio[1] <= 0
            or ratio[2] <= 0
            or not 0 <= ratio[3] <= 1
            or ratio[5] <= 0
        ):
            raise ValueError("calibration.ratio: out of range")
        calibration = _Calibration(ratio[2], self._calibration.thinking)
        for name, number in zip(_CALIBRATION_FIELDS, ratio, strict=True):
            setattr(calibration, name, number)
        self._calibration = calibration
        self._margin = margin
        self._errors = deque(((e, w) for e, w in pairs), maxlen=_MARGIN_WINDOW)
        self._anchor = anchor[0] if anchor is not None else None
        self._detached = anchor[1] if anchor is not None else None
        self._first = first[0] if first is not None else None
        self._detached_memo.clear()

    def _anchored(self, messages: Sequence[Message]) -> bool:
        """Whether the last observed request's messages start ``messages``."""
        anchor = self._anchor
        if anchor is None:
            return False
        if self._detached is None:
            return _is_prefix(anchor.messages, messages)
        length, digest = self._detached
        if len(messages) < length:
            return False
        head = tuple(messages[:length])
        key = tuple(map(id, head))
        known = self._detached_memo.get(key)
        if known is None:
            if len(self._detached_memo) > 16:
                self._detached_memo.clear()
            known = (head, self._digests.of(head) == digest)
            self._detached_memo[key] = known
        if known[1]:
            self._anchor = anchor._replace(messages=head)
            self._detached = None
            self._detached_memo.clear()
        return known[1]

    # ------------------------------------------------------------------------------ internals

    def _padded(self, text: int, thinking: int) -> int:
        """Tokens of ``text`` and ``thinking`` bytes at the calibrated ratio, with the margin."""
        central = self._calibration.predict(text, thinking)
        factor = 1.0 + self._margin if central >= 0 else 1.0 - self._margin
        return math.ceil(central * factor)

    def _unexplained(self) -> int:
        """Tokens the visible content of a request does not explain (framing, a system prompt
        never shown to the counter); never negative.

        The smaller of what the first and the last observation leave unexplained: the last alone
        would also carry what its own content cost beyond the calibrated ratio (a huge dense tool
        output, say), and would go on charging it after truncation removed that content.
        """
        residuals = [
            self._residual(anchor) for anchor in (self._first, self._anchor) if anchor is not None
        ]
        return max(0, min(residuals)) if residuals else 0

    def _residual(self, anchor: _Anchor) -> int:
        text = anchor.totals.text + anchor.system_units.text + anchor.tools_units
        central = self._calibration.predict(text, anchor.totals.thinking)
        central += anchor.totals.images + anchor.system_units.images
        return math.floor(anchor.reported - central)

    def _learn(self, text: int, thinking: int, tokens: int) -> None:
        if text <= 0 or tokens <= 0:
            return  # nothing added (a retry), or content removed: no information on the ratio
        ratio = text / tokens  # bytes per token, outside thinking: reject what no text has
        if not 0.5 <= ratio <= 20:
            return
        calibration = self._calibration
        predicted = calibration.predict(text, thinking)
        self._errors.append((tokens / predicted - 1.0, predicted))
        calibration.add(text, thinking, tokens)
        upper = _weighted_quantile(self._errors, _MARGIN_QUANTILE)
        self._margin = min(_MAX_MARGIN, max(self._min_margin, upper))

    def _totals(self, messages: Sequence[Message]) -> _Units:
        """Summed units of all ``messages``; only those that replaced or extend the last call's
        when it shares its first messages (integers: the same sum as counting all again)."""
        last = self._last_count
        spans = replaced_spans(last[0], messages) if last is not None else None
        if last is None or spans is None:
            totals = self._units_of(messages, 0)
        else:  # the last count's, with the messages replaced since (a shrink's edits) swapped
            old, totals = last
            for a, b, c, d in spans:
                totals = _summed(totals, self._units_of(messages, c, d), self._units_of(old, a, b))
        if len(messages) > 1:  # a single message measured on its own is not a request to extend
            self._last_count = (list(messages), totals)
        return totals

    def _units_of(self, messages: Sequence[Message], start: int, stop: int | None = None) -> _Units:
        """Summed units of ``messages[start:stop]``, measuring each message once (cached by id)."""
        cache = self._cache
        text = thinking = images = 0
        for index in range(start, len(messages) if stop is None else stop):
            message = messages[index]
            entry = cache.get(id(message))
            if entry is None or entry[0] is not message:
                units = _message_units(message, f"messages[{index}]", self._max_image_tokens)
                cache[id(message)] = (message, units)
            else:
                units = entry[1]
            text += units.text
            thinking += units.thinking
            images += units.images
        return _Units(text, thinking, images)

    def _request_units(self, system: Any, tools: Any) -> tuple[_Units, int]:
        """Units of the system prompt and the tools, remeasured only when their parts changed."""
        system_parts = _parts(system)
        if not _same_parts(self._system_parts, system_parts):
            self._system_units = _system_units(system, self._max_image_tokens)
            self._system_parts = system_parts
        tools_parts = _parts(tools)
        if not _same_parts(self._tools_parts, tools_parts):
            self._tools_units = _tools_units(tools)
            self._tools_parts = tools_parts
        return self._system_units, self._tools_units

    def _prune(self, messages: Sequence[Message]) -> None:
        """Once the cache has grown, keep only the measurements of the anchor's messages, of the
        last whole count and of ``messages``: it holds messages alive, and callers may count many
        candidate requests (or single messages) in between."""
        anchored = self._anchor.messages if self._anchor is not None else ()
        counted = self._last_count[0] if self._last_count is not None else ()
        if len(self._cache) <= 2 * (len(anchored) + len(counted) + len(messages)) + 64:
            return
        keep = {id(message) for message in (*anchored, *counted, *messages)}
        self._cache = {key: entry for key, entry in self._cache.items() if key in keep}


def _holds(check: Callable[[], object]) -> bool:
    """Whether ``check()`` is true; False when the value it compares is not a number at all."""
    try:
        return bool(check())
    except TypeError:
        return False
