"""The steps that shrink a request over its budget, in the order a session runs them.

``ContextSession(steps=...)`` takes a list of :class:`Step` objects; the default,
:func:`default_steps`, is duplicate reads, masking, hiding turns, clipping (with compaction:
duplicate reads, folding, masking, hiding, clipping). Each reports what it
did as an :class:`Action` (``Prepared.actions``). The summarize step, with the ledger it
builds, is loaded on the first use of its names (PEP 562 ``__getattr__``): only a session that
compacts needs it.
"""

from __future__ import annotations

from ..._lazy import lazy_names
from ._clip_blocks import ClipLargeBlocks
from ._duplicate_reads import ReplaceDuplicateReads
from ._hide_turns import HideOldTurns
from ._mask_outputs import MaskOldOutputs
from ._protocol import Action, Draft, Step, newest_turn
from ._runner import run_steps
from ._signal import SummaryNeeded

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._summarize import REFOLD, SummarizeTurns, fold_point, is_async_summarizer

_SUMMARIZE = frozenset({"REFOLD", "SummarizeTurns", "fold_point", "is_async_summarizer"})

__all__ = [
    "REFOLD",
    "Action",
    "ClipLargeBlocks",
    "Draft",
    "HideOldTurns",
    "MaskOldOutputs",
    "ReplaceDuplicateReads",
    "Step",
    "SummarizeTurns",
    "SummaryNeeded",
    "default_steps",
    "fold_point",
    "is_async_summarizer",
    "newest_turn",
    "run_steps",
]


_MASK_BEFORE_FOLD = False
"""Whether masking runs before a ``summarize`` step (else right after it; chosen by
``bench/_tuning.py`` on part of the corpus and reported on the rest). Masking and a fold both
change the request from its first tool output on, so both are written to the cache again; a
fold leaves a request of messages 0-1, the continuation and the newest turn, masking one that
still holds every turn, re-read on every request until the next shrink. Masking after the fold
shrinks what a fold could not (while summarizing pauses, on the request right after a fold)."""


def default_steps(
    mask_keep_recent: int | None = 2, *, summarize: SummarizeTurns | None = None
) -> list[Step]:
    """The remedies in their order; ``mask_keep_recent=None`` leaves masking out, and a
    ``summarize`` step folds turns before any is hidden, and before masking unless
    :data:`_MASK_BEFORE_FOLD`."""
    steps: list[Step] = [ReplaceDuplicateReads()]
    mask: list[Step] = [MaskOldOutputs(mask_keep_recent)] if mask_keep_recent is not None else []
    if summarize is None:
        steps += mask
    elif _MASK_BEFORE_FOLD:
        steps += [*mask, summarize]
    else:
        steps += [summarize, *mask]
    steps += [HideOldTurns(), ClipLargeBlocks()]
    return steps


__getattr__, __dir__ = lazy_names(__name__, "_summarize", _SUMMARIZE, __all__)
