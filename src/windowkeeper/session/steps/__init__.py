"""The steps that shrink a request over its budget, in the order a session runs them.

``ContextSession(steps=...)`` takes a list of :class:`Step` objects; the default,
:func:`default_steps`, is duplicate reads, masking, hiding turns, clipping. Each reports what it
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


def default_steps(
    mask_keep_recent: int | None = 2, *, summarize: SummarizeTurns | None = None
) -> list[Step]:
    """The remedies in their order; ``mask_keep_recent=None`` leaves masking out, and a
    ``summarize`` step folds turns before any is hidden."""
    steps: list[Step] = [ReplaceDuplicateReads()]
    if mask_keep_recent is not None:
        steps.append(MaskOldOutputs(mask_keep_recent))
    if summarize is not None:
        steps.append(summarize)
    steps += [HideOldTurns(), ClipLargeBlocks()]
    return steps


__getattr__, __dir__ = lazy_names(__name__, "_summarize", _SUMMARIZE, __all__)
