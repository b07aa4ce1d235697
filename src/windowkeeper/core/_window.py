"""A model's context window and the size a request may reach before history is truncated."""

from __future__ import annotations

from .._record import record

__all__ = ["DEFAULT_CONTEXT_WINDOW", "ContextWindowInfo", "as_window_info", "context_window_info"]

DEFAULT_CONTEXT_WINDOW = 128_000
"""The window assumed when a model reports none (or 0), as the original does."""

# The original's fixed buffers for the three common window sizes.
_KNOWN_LIMITS = {64_000: 37_000, 128_000: 98_000, 200_000: 160_000}


@record(frozen=True, slots=True)
class ContextWindowInfo:
    """A window and its ``max_allowed_size``, which may be fractional (32 768 -> 26 214.4)."""

    context_window: int
    max_allowed_size: float


def context_window_info(
    context_window: int | None, *, model_id: str = "", openai_compatible: bool = False
) -> ContextWindowInfo:
    """The original's ``getContextWindowInfo``.

    A missing or zero window means 128 000. ``openai_compatible=True`` with "deepseek" in the model
    id forces 128 000 (the original does this for its OpenAI-compatible handler). The limit is 37 000,
    98 000 or 160 000 for windows of 64 000, 128 000 and 200 000; otherwise the larger of
    ``window - 40 000`` and ``0.8 * window``.
    """
    window = context_window or DEFAULT_CONTEXT_WINDOW
    if openai_compatible and "deepseek" in model_id.lower():
        window = DEFAULT_CONTEXT_WINDOW
    known = _KNOWN_LIMITS.get(window)
    if known is not None:
        return ContextWindowInfo(window, known)
    return ContextWindowInfo(window, max(window - 40_000, window * 0.8))


def as_window_info(context_window: int | ContextWindowInfo | None) -> ContextWindowInfo:
    """A window given as tokens (or None: the default) or as a :class:`ContextWindowInfo` already.

    The one coercion every entry point that takes ``int | ContextWindowInfo`` uses.
    """
    if isinstance(context_window, ContextWindowInfo):
        return context_window
    return context_window_info(context_window)
