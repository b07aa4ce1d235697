"""Token estimates of a request before it is sent, calibrated online from provider-reported usage.

The per-turn session API must know whether the next request fits the window *before* sending it,
but no tokenizer ships with the standard library, and Claude's is not public. So the estimator
measures text in UTF-8 bytes (equal to characters for ASCII; it keeps CJK and emoji from being
undercounted) and learns the bytes-per-token ratio from what the provider reports back.

What is counted, per message (message-level extra keys such as ``ts`` or ``metrics`` are not):

- string content, ``text`` blocks, ``tool_result`` contents (string or blocks), the ids that tie
  a ``tool_use`` to its ``tool_result``, a ``tool_use``'s name and its input serialized as JSON;
- ``thinking`` text and ``redacted_thinking`` data, kept apart (signatures are never counted).
  Whether a provider counts the thinking of earlier turns depends on the model: in the recorded
  traces Claude Sonnet 4.5 does not (its earlier thinking is stripped) and Claude Opus 4.5 does.
  By default (``thinking="learn"``) thinking starts counted in full, the conservative choice, and
  its weight (0 to 1) is then fitted from the observations; ``"count"`` and ``"ignore"`` fix it;
- images by their documented cost, ``width * height / 750`` tokens (long edge scaled down to
  1568 px) and at most ``max_image_tokens`` (1,600, the cost of an image the provider scaled
  down to about 1.15 megapixels), the size read from the PNG, JPEG, GIF or WebP header of base64
  data; ``max_image_tokens`` when the size cannot be read (a URL source, an unknown format);
- any other block as its JSON; a fixed overhead per message and per block;
- the Responses items a message or block carries (``responses_before``/``responses_after``:
  reasoning, compaction, hosted tools' items), as their JSON;
- the system prompt (a string or text blocks) and each tool definition as JSON.

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

import copy
import hashlib
import json
import math
import operator
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NamedTuple, Protocol

from .._errors import ConfigurationError, MalformedMessageError
from ..core._messages import Message, SystemPrompt, check_message, shared_prefix
from ..formats.responses import AFTER_NOTE, BEFORE_NOTE
from ._images import MAX_IMAGE_TOKENS, image_dimensions, image_tokens

__all__ = [
    "MAX_IMAGE_TOKENS",
    "CalibratedEstimator",
    "TokenCounter",
    "image_dimensions",
    "image_tokens",
]

_CARRIED_NOTES = (BEFORE_NOTE, AFTER_NOTE)
_MESSAGE_OVERHEAD = 12  # bytes-equivalent: role and message framing
_BLOCK_OVERHEAD = 12  # bytes-equivalent: block type and framing

# Calibration. Values chosen on the recorded traces (bench/estimator_accuracy.py), where the
# results are flat around them: decay 0.8-0.95, quantile 0.8-0.9 and window 10-40 all meet the
# targets.
_PRIOR_BYTES = 2000.0  # the starting ratio weighs like an observation of this many bytes
_DECAY = 0.9  # per observation, for the ratio
_MAX_OBSERVATION_BYTES = 16_384.0
_THINKING_PRIOR_TOKENS = 300.0  # "thinking counted" weighs like one such observation
_MARGIN_QUANTILE = 0.9
_MARGIN_WINDOW = 20
# One delta says the added text costs at most this many times fewer tokens than predicted: a
# delta also carries any change in how the anchor's request was reported (an anchor reported
# denser than the next report makes what was added look cheap), and a ratio learnt too cheap
# sends requests over the window. The dense side is not bounded (it errs safe).
_MAX_CHEAPER = 1.25
_MAX_MARGIN = 0.3
_STATE_VERSION = 1
_CALIBRATION_FIELDS = ("bytes", "tokens", "a", "w", "residual_sum", "square_sum")  # as stored

ThinkingPolicy = Literal["learn", "count", "ignore"]


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


# ------------------------------------------------------------------------------------ measuring


class _Units(NamedTuple):
    """What a message (or a request part) weighs: text and thinking bytes, image tokens."""

    text: int
    thinking: int
    images: int


_NO_UNITS = _Units(0, 0, 0)


def _utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _json_len(value: Any) -> int:
    return _utf8_len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=repr))


def _string_field(block: Mapping[str, Any], key: str, path: str) -> str:
    value = block.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedMessageError(
            f"{path}.{key}", f"expected a string, got {type(value).__name__}"
        )
    return value


def _carried(holder: Mapping[str, Any]) -> int:
    """Bytes of the Responses items a message or block carries (reasoning, hosted tools' items):
    they are sent with it, so they count."""
    total = 0
    for key in _CARRIED_NOTES:
        items = holder.get(key)
        if items:
            total += _json_len(items)
    return total


def _block_units(block: Mapping[str, Any], path: str, max_image_tokens: int) -> _Units:
    kind = block.get("type")
    text = _BLOCK_OVERHEAD + (_carried(block) if _CARRIED_NOTES[0] in block else 0)
    if kind == "text":
        return _Units(text + _utf8_len(_string_field(block, "text", path)), 0, 0)
    if kind == "thinking":
        return _Units(text, _utf8_len(_string_field(block, "thinking", path)), 0)
    if kind == "redacted_thinking":
        return _Units(text, _utf8_len(_string_field(block, "data", path)), 0)
    if kind in ("image", "image_url"):
        return _Units(text, 0, image_tokens(block, max_tokens=max_image_tokens))
    if kind == "tool_use":
        text += _utf8_len(_string_field(block, "id", path))
        text += _utf8_len(_string_field(block, "name", path)) + _json_len(block.get("input", {}))
        return _Units(text, 0, 0)
    if kind == "tool_result":
        text += _utf8_len(_string_field(block, "tool_use_id", path))
        content = block.get("content", "")
        if isinstance(content, str):
            return _Units(text + _utf8_len(content), 0, 0)
        if not isinstance(content, list):
            raise MalformedMessageError(
                f"{path}.content",
                f"expected a string or a list of blocks, got {type(content).__name__}",
            )
        thinking = images = 0
        for position, inner in enumerate(content):
            inner_path = f"{path}.content[{position}]"
            if not isinstance(inner, Mapping) or not isinstance(inner.get("type"), str):
                raise MalformedMessageError(
                    inner_path, "expected a block dict with a string 'type'"
                )
            units = _block_units(inner, inner_path, max_image_tokens)
            text += units.text
            thinking += units.thinking
            images += units.images
        return _Units(text, thinking, images)
    return _Units(text + _json_len(block), 0, 0)


def _message_units(message: Message, path: str, max_image_tokens: int) -> _Units:
    check_message(message, path)
    content = message["content"]
    overhead = _MESSAGE_OVERHEAD + _carried(message)
    if isinstance(content, str):
        return _Units(overhead + _utf8_len(content), 0, 0)
    text, thinking, images = overhead, 0, 0
    for position, block in enumerate(content):
        units = _block_units(block, f"{path}.content[{position}]", max_image_tokens)
        text += units.text
        thinking += units.thinking
        images += units.images
    return _Units(text, thinking, images)


def _system_units(system: Any, max_image_tokens: int) -> _Units:
    if system is None:
        return _NO_UNITS
    if isinstance(system, str):
        return _Units(_utf8_len(system), 0, 0)
    if isinstance(system, Sequence) and not isinstance(system, bytes | bytearray):
        text = images = 0
        for position, block in enumerate(system):
            if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
                raise ConfigurationError(
                    f"system[{position}]: expected a text block dict, got {type(block).__name__}"
                )
            units = _block_units(block, f"system[{position}]", max_image_tokens)
            text += units.text
            images += units.images
        return _Units(text, 0, images)
    raise ConfigurationError(
        f"system: expected None, a string or a list of text blocks, got {type(system).__name__}"
    )


def _tools_units(tools: Any) -> int:
    if tools is None:
        return 0
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes | bytearray):
        raise ConfigurationError(
            f"tools: expected a list of tool definitions, got {type(tools).__name__}"
        )
    total = 0
    for position, tool in enumerate(tools):
        if not isinstance(tool, Mapping):
            raise ConfigurationError(
                f"tools[{position}]: expected a tool definition dict, got {type(tool).__name__}"
            )
        total += _BLOCK_OVERHEAD + _json_len(dict(tool))
    return total


def _is_prefix(previous: tuple[Message, ...], messages: Sequence[Message]) -> bool:
    """Whether ``previous`` starts ``messages``: by identity (fast), then by equality."""
    if len(messages) < len(previous):
        return False
    if all(map(operator.is_, previous, messages)):
        return True
    return all(old is new or old == new for old, new in zip(previous, messages, strict=False))


# ---------------------------------------------------------------------------------- calibrating


class _Calibration:
    """tokens ≈ a * (text + w * thinking), fitted from the deltas between observations.

    ``a`` (tokens per byte) is a decayed ratio of sums: each observation makes the older ones
    weigh ``_DECAY`` times less, so it follows a conversation whose content changes; the prior
    weighs like ``_PRIOR_BYTES`` bytes read at the starting ratio, and no observation weighs
    more than ``_MAX_OBSERVATION_BYTES`` (one huge tool output must not set the ratio for long),
    and none counts for fewer than ``1 / _MAX_CHEAPER`` of the tokens ``a`` predicts for it.
    ``w`` (how much of the thinking the provider counts, 0 to 1) does not drift within a
    conversation, so it is a least-squares fit of what the text leaves unexplained, over all
    observations, starting at 1 (counted, the conservative side) with the weight of one
    observation of ``_THINKING_PRIOR_TOKENS`` thinking tokens.
    """

    def __init__(self, tokens_per_byte: float, thinking: ThinkingPolicy) -> None:
        self.thinking = thinking
        self.bytes = _PRIOR_BYTES
        self.tokens = _PRIOR_BYTES * tokens_per_byte
        self.a = tokens_per_byte
        self.w = 0.0 if thinking == "ignore" else 1.0
        self.residual_sum = _THINKING_PRIOR_TOKENS**2  # sum of x * r, x the thinking tokens
        self.square_sum = _THINKING_PRIOR_TOKENS**2  # sum of x * x

    def predict(self, text: float, thinking: float) -> float:
        return self.a * (text + self.w * thinking)

    def add(self, text: float, thinking: float, tokens: float) -> None:
        if thinking and self.thinking == "learn":
            x = self.a * thinking
            self.residual_sum += x * (tokens - self.a * text)
            self.square_sum += x * x
            self.w = min(1.0, max(0.0, self.residual_sum / self.square_sum))
        size = text + self.w * thinking
        weight = min(1.0, _MAX_OBSERVATION_BYTES / size) if size > 0 else 1.0
        tokens = max(tokens, self.a * size / _MAX_CHEAPER)  # the thinking fit saw it unbounded
        self.bytes = _DECAY * self.bytes + weight * size
        self.tokens = _DECAY * self.tokens + weight * tokens
        self.a = self.tokens / self.bytes


class _Anchor(NamedTuple):
    """The last observed request: what it sent and what the provider reported for it."""

    messages: tuple[Message, ...]
    totals: _Units  # of the messages
    system_units: _Units
    tools_units: int
    reported: int


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
            totals = _Units(
                anchor.totals.text + added.text,
                anchor.totals.thinking + added.thinking,
                anchor.totals.images + added.images,
            )
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
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> int:
        """The fewest input tokens a provider can plausibly report for this request.

        Its text at the calibrated ratio (at most the starting one), without the margin, the thinking or the images (a
        provider may count those for less); what reported usage is checked against
        (see :mod:`windowkeeper.session._usage_trust`).
        """
        _check_sequence(messages)
        system_units, tools_units = self._request_units(system, tools)
        totals = self._totals(messages)
        self._prune(messages)
        # never above the starting ratio: a denser tokenizer learnt from earlier reports must
        # not make an honest report look short
        ratio = min(self._calibration.a, self._prior_ratio)
        return math.floor(ratio * (totals.text + system_units.text + tools_units))

    def snapshot(self) -> object:
        """What it has learnt so far, for :meth:`restore` (a session's checkpoint keeps it)."""
        return _Snapshot(
            copy.copy(self._calibration),
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
        self._calibration = copy.copy(snapshot.calibration)
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

    def load_state(self, value: Any) -> None:
        """Resume from :meth:`state_value`; raises ``ValueError`` (naming the part) if unreadable."""
        if not isinstance(value, dict) or value.get("version") != _STATE_VERSION:
            raise ValueError("calibration: expected an object of version 1")
        ratio = _numbers(value.get("ratio"), 6, "calibration.ratio")
        margin = _numbers([value.get("margin")], 1, "calibration.margin")[0]
        errors = value.get("errors")
        if not isinstance(errors, list) or len(errors) > _MARGIN_WINDOW:
            raise ValueError(f"calibration.errors: expected at most {_MARGIN_WINDOW} pairs")
        pairs = [tuple(_numbers(e, 2, "calibration.errors[]")) for e in errors]
        raw_anchor, raw_first = value.get("anchor"), value.get("first")
        anchor = None if raw_anchor is None else _read_anchor(raw_anchor, 9, "calibration.anchor")
        first = None if raw_first is None else _read_anchor(raw_first, 7, "calibration.first")
        if ratio[0] <= 0 or ratio[2] <= 0 or not 0 <= ratio[3] <= 1 or ratio[5] <= 0:
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
        """Summed units of all ``messages``; only the new ones when they extend the last call's."""
        last = self._last_count
        if last is not None and shared_prefix(last[0], messages) == len(last[0]):
            added = self._units_of(messages, len(last[0]))
            totals = _Units(
                last[1].text + added.text,
                last[1].thinking + added.thinking,
                last[1].images + added.images,
            )
        else:
            totals = self._units_of(messages, 0)
        if len(messages) > 1:  # a single message measured on its own is not a request to extend
            self._last_count = (list(messages), totals)
        return totals

    def _units_of(self, messages: Sequence[Message], start: int) -> _Units:
        """Summed units of ``messages[start:]``, measuring each message once (cached by id)."""
        cache = self._cache
        text = thinking = images = 0
        for index in range(start, len(messages)):
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


class _Digests:
    """A digest of messages by value (what a restored anchor is recognised by), chained message
    by message so that a request sharing a prefix with the last one dumps only what is new.

    The prefix is shared by identity: messages are values, and a session hands the counter the
    same objects for the messages that did not change (a full dump per commit was several
    milliseconds on a 600-message request, more than the rest of the turn).
    """

    __slots__ = ("_chain", "_messages")

    def __init__(self) -> None:
        self._messages: list[Message] = []
        self._chain: list[bytes] = [b""]  # _chain[i]: the digest of the first i messages

    def of(self, messages: Sequence[Message]) -> str:
        """The hex digest of ``messages``."""
        known, chain = self._messages, self._chain
        shared, limit = 0, min(len(known), len(messages))
        while shared < limit and known[shared] is messages[shared]:
            shared += 1
        del known[shared:]
        del chain[shared + 1 :]
        for message in messages[shared:]:
            text = json.dumps(
                message, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=repr
            )
            chain.append(hashlib.sha256(chain[-1] + text.encode("utf-8", "surrogatepass")).digest())
            known.append(message)
        return chain[len(messages)].hex() if messages else hashlib.sha256(b"").hexdigest()


def _anchor_value(anchor: _Anchor) -> list[Any]:
    return [*anchor.totals, *anchor.system_units[::2], anchor.tools_units, anchor.reported]


def _numbers(value: Any, count: int, what: str) -> list[float]:
    if (
        not isinstance(value, list)
        or len(value) != count
        or not all(
            isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
            for v in value
        )
    ):
        raise ValueError(f"{what}: expected {count} finite numbers")
    return [float(v) for v in value]


def _read_anchor(value: Any, count: int, what: str) -> tuple[_Anchor, tuple[int, str] | None]:
    if not isinstance(value, list) or len(value) != count:
        raise ValueError(f"{what}: expected {count} values")
    counts = value[:7]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts):
        raise ValueError(f"{what}: expected counts >= 0")
    text, thinking, images, system_text, system_images, tools, reported = counts
    anchor = _Anchor(
        (), _Units(text, thinking, images), _Units(system_text, 0, system_images), tools, reported
    )
    if count == 7:
        return anchor, None
    length, digest = value[7:]
    if isinstance(length, bool) or not isinstance(length, int) or length < 0:
        raise ValueError(f"{what}: expected a message count")
    if not isinstance(digest, str) or len(digest) != 64:
        raise ValueError(f"{what}: expected a sha256 digest")
    return anchor, (length, digest)


def _weighted_quantile(samples: Sequence[tuple[float, float]], quantile: float) -> float:
    """The ``quantile`` of the values of (value, weight) pairs, each counted by its weight."""
    ranked = sorted(samples)
    target = quantile * sum(weight for _, weight in ranked)
    seen = 0.0
    for value, weight in ranked:
        seen += weight
        if seen >= target:
            return value
    return ranked[-1][0]


def _parts(value: Any) -> tuple[Any, ...] | None:
    """What a system prompt or tool list is made of, to notice a change by identity."""
    if value is None or isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return tuple(value)
    return None  # not a valid value: measuring it raises


def _same_parts(old: tuple[Any, ...] | None, new: tuple[Any, ...] | None) -> bool:
    return (
        old is not None
        and new is not None
        and len(old) == len(new)
        and all(map(operator.is_, old, new))
    )


def _holds(check: Callable[[], object]) -> bool:
    """Whether ``check()`` is true; False when the value it compares is not a number at all."""
    try:
        return bool(check())
    except TypeError:
        return False


def _check_sequence(messages: Any) -> None:
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes | bytearray):
        raise MalformedMessageError(
            "messages", f"expected a list of messages, got {type(messages).__name__}"
        )
