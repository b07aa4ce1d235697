"""The estimator's fit: tokens from bytes, learnt from the deltas between observed requests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

__all__ = ["Calibration", "ThinkingPolicy", "weighted_quantile"]

# Calibration. Values chosen on the recorded traces (bench/estimator_accuracy.py), where the
# results are flat around them: decay 0.8-0.95, quantile 0.8-0.9 and window 10-40 all meet the
# targets.
_PRIOR_BYTES = 2000.0  # the starting ratio weighs like an observation of this many bytes
_DECAY = 0.9  # per observation, for the ratio
_MAX_OBSERVATION_BYTES = 16_384.0
# One delta says the added text costs at most this many times fewer tokens than predicted: a
# delta also carries any change in how the anchor's request was reported (an anchor reported
# denser than the next report makes what was added look cheap), and a ratio learnt too cheap
# sends requests over the window. The dense side is not bounded (it errs safe).
_MAX_CHEAPER = 1.25
_THINKING_PRIOR_TOKENS = 300.0  # "thinking counted" weighs like one such observation

ThinkingPolicy = Literal["learn", "count", "ignore"]


class Calibration:
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

    def copy(self) -> Calibration:
        """An independent copy (what a snapshot keeps), made without the copy module's walk."""
        twin = object.__new__(Calibration)
        twin.__dict__.update(self.__dict__)
        return twin

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


def weighted_quantile(samples: Sequence[tuple[float, float]], quantile: float) -> float:
    """The ``quantile`` of the values of (value, weight) pairs, each counted by its weight."""
    ranked = sorted(samples)
    target = quantile * sum(weight for _, weight in ranked)
    seen = 0.0
    for value, weight in ranked:
        seen += weight
        if seen >= target:
            return value
    return ranked[-1][0]
