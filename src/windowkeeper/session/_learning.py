"""What a token counter has learnt, kept and restored around a change that may fail.

A counter may calibrate itself from reported usage (:class:`~windowkeeper.CalibratedEstimator`
does); one that offers ``snapshot()`` and ``restore(value)`` has it taken back when the change
that taught it is undone (a failed commit, a rollback). Other counters are left as they are.
"""

from __future__ import annotations

from ._tokens import TokenCounter

__all__ = ["restore_learnt", "snapshot_of"]


def snapshot_of(counter: TokenCounter, *, restorable: bool = False) -> object | None:
    """The counter's ``snapshot()``, or None when it has none (or, with ``restorable``, no
    ``restore`` to take it back with)."""
    snapshot = getattr(counter, "snapshot", None)
    if not callable(snapshot):
        return None
    if restorable and not callable(getattr(counter, "restore", None)):
        return None
    return snapshot()  # type: ignore[no-any-return]


def restore_learnt(counter: TokenCounter, learnt: object | None) -> None:
    """Give the counter back what it had learnt at ``learnt`` (when it can ``restore``)."""
    restore = getattr(counter, "restore", None)
    if learnt is not None and callable(restore):
        restore(learnt)
