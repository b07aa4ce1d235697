"""What the session keeps with its state beside its decisions: its window and its calibration.

Both are written at each commit, on every backend, under their own keys of the state object,
so that older states (without them) still load and older readers ignore them:

- ``"window"``: ``[context_window, max_allowed_size]``, so that tools reading a session's own
  folder (``windowkeeper view``, ``check``) judge its requests by the window it used;
- ``"calibration"``: what the counter learnt, when it can say (``state_value()``, as
  :class:`~windowkeeper.CalibratedEstimator` does), read back with ``load_state(value)`` when
  the task is reopened, so a resumed session estimates as the one that was closed instead of
  starting again from its prior. A counter without these methods (a fixed ruler, a tokenizer)
  keeps nothing; a state without the key leaves the counter as it was made.
"""

from __future__ import annotations

from typing import Any

from .._errors import TaskFolderError
from ..core._window import ContextWindowInfo, context_window_info

__all__ = ["CALIBRATION", "WINDOW", "load_calibration", "stored_window", "with_extras"]

CALIBRATION = "calibration"
WINDOW = "window"


def with_extras(state: dict[str, Any], counter: Any, window: ContextWindowInfo) -> dict[str, Any]:
    """``state`` with the session's window and what ``counter`` learnt."""
    extras: dict[str, Any] = {WINDOW: [window.context_window, window.max_allowed_size]}
    export = getattr(counter, "state_value", None)
    if callable(export):
        extras[CALIBRATION] = export()
    return {**state, **extras}


def load_calibration(counter: Any, state: dict[str, Any] | None, where: str) -> None:
    """Give ``counter`` what the stored ``state`` says it learnt; unreadable -> TaskFolderError."""
    value = state.get(CALIBRATION) if isinstance(state, dict) else None
    load = getattr(counter, "load_state", None)
    if value is None or not callable(load):
        return
    try:
        load(value)
    except ValueError as error:
        raise TaskFolderError(f"{where}: unreadable session state: {error}") from None


def stored_window(state: dict[str, Any] | None) -> ContextWindowInfo | None:
    """The window a session stored with its state; None when it stored none (or not readably)."""
    value = state.get(WINDOW) if isinstance(state, dict) else None
    if not isinstance(value, list) or len(value) != 2:
        return None
    window = value[0]
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        return None
    info = context_window_info(window)
    limit = value[1]
    if isinstance(limit, int | float) and not isinstance(limit, bool) and 0 < limit <= window:
        return ContextWindowInfo(window, float(limit))
    return info
