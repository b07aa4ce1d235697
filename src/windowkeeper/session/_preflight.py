"""The pre-flight's last word: a request the steps could not bring under the limit is refused."""

from __future__ import annotations

from .._errors import ContextOverflowError
from ..core._window import ContextWindowInfo

__all__ = ["check_fits"]


def check_fits(estimate: int, reserve: int, window: ContextWindowInfo) -> None:
    """Raise :class:`~windowkeeper.ContextOverflowError` when ``estimate`` is over the limit.

    ``estimate`` is the smallest request the steps reached, ``reserve`` the output tokens in it.
    """
    limit = window.max_allowed_size
    if estimate > limit:
        raise ContextOverflowError(
            f"the smallest request this session can send is about {estimate:,} tokens"
            f" (including {reserve:,} reserved for output), over the limit of"
            f" {limit:,} for a {window.context_window:,}-token window",
            estimated_tokens=estimate,
            limit=limit,
        )
