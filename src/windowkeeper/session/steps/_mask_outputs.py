"""Masking: old tool outputs become a short placeholder before any turn is hidden."""

from __future__ import annotations

from ..._errors import ConfigurationError
from ._protocol import Action, Draft

__all__ = ["MaskOldOutputs"]


class MaskOldOutputs:
    """Mask tool outputs older than the last ``keep_recent`` (never the newest turn's), once.

    Runs only while the request is over its target: a masked block stays masked, so every
    later request is smaller for it and the cached prefix changes once, not every turn.
    """

    name = "mask-outputs"
    repeats = False

    def __init__(self, keep_recent: int = 2) -> None:
        if isinstance(keep_recent, bool) or not isinstance(keep_recent, int) or keep_recent < 0:
            raise ConfigurationError(f"keep_recent must be a non-negative int, got {keep_recent!r}")
        self.keep_recent = keep_recent

    def apply(self, draft: Draft) -> Action | None:
        masked = draft.mask_old_outputs(self.keep_recent)
        if not masked:
            return None
        return Action(self.name, messages=masked)
